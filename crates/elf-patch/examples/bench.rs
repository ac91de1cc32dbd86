//! Benchmark: set the RPATH of N copies of a shared library in-process vs spawning `patchelf`
//! for the same edit, and vs the reference's per-file sequence (two `--add-rpath`, one
//! `--print-rpath`, one `--set-rpath --force-rpath`). Medians of the rounds, in one run.
//!
//!     cargo run --release -p elf-patch --example bench -- PATCHELF [COPIES] [ROUNDS] [LIBRARY]

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "a measurement printed to the terminal; times as floating point"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use elf_patch::Edit;

const ENTRIES: [&str; 2] = [
    "$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib",
    "$ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib",
];

fn copies(src: &Path, dir: &Path, n: usize) -> Vec<PathBuf> {
    let _ = fs_err::remove_dir_all(dir);
    fs_err::create_dir_all(dir).expect("bench dir");
    (0..n)
        .map(|i| {
            let p = dir.join(format!("lib{i}.so"));
            fs_err::copy(src, &p).expect("copy");
            p
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spawn(patchelf: &Path, args: &[&str], file: &Path) -> String {
    let out = Command::new(patchelf)
        .args(args)
        .arg(file)
        .output()
        .expect("patchelf");
    assert!(out.status.success(), "patchelf {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let patchelf = PathBuf::from(
        args.first()
            .expect("usage: bench PATCHELF [COPIES] [ROUNDS] [LIBRARY]"),
    );
    let n: usize = args.get(1).map_or(1000, |s| s.parse().expect("COPIES"));
    let rounds: usize = args.get(2).map_or(3, |s| s.parse().expect("ROUNDS"));
    let library = args.get(3).map(PathBuf::from).or_else(|| {
        [
            "/usr/lib/x86_64-linux-gnu/libz.so.1",
            "/lib/x86_64-linux-gnu/libz.so.1",
            "/usr/lib64/libz.so.1",
        ]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
    });
    let library =
        fs_err::canonicalize(library.expect("no libz.so.1 found: pass LIBRARY")).expect("library");
    let size = fs_err::metadata(&library).expect("library").len();
    let work = tempfile::tempdir().expect("temp dir");
    let edit = Edit {
        add_rpath: ENTRIES.iter().map(|s| (*s).to_owned()).collect(),
        force_rpath: true,
        ..Edit::default()
    };
    let data = fs_err::read(&library).expect("library");
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(elf_patch::patch(&data, &edit).expect("patch"));
    }
    let memory = start.elapsed().as_secs_f64();
    let (mut ours, mut single, mut sequence) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let files = copies(&library, &work.path().join("ours"), n);
        let start = Instant::now();
        for f in &files {
            elf_patch::patch_file(f, &edit).expect("patch");
        }
        ours.push(start.elapsed().as_secs_f64());
        let expected = elf_patch::read_file(&files[0]).expect("read").rpath;

        let files = copies(&library, &work.path().join("single"), n);
        let start = Instant::now();
        for f in &files {
            let existing = elf_patch::read_file(f).expect("read");
            let path =
                elf_patch::combined_search_path(existing.search_path(), None, &edit.add_rpath);
            spawn(&patchelf, &["--set-rpath", &path, "--force-rpath"], f);
        }
        single.push(start.elapsed().as_secs_f64());
        assert_eq!(
            elf_patch::read_file(&files[0]).expect("read").rpath,
            expected
        );

        let files = copies(&library, &work.path().join("sequence"), n);
        let start = Instant::now();
        for f in &files {
            for entry in ENTRIES {
                spawn(&patchelf, &["--add-rpath", entry], f);
            }
            let path = spawn(&patchelf, &["--print-rpath"], f);
            spawn(&patchelf, &["--set-rpath", &path, "--force-rpath"], f);
        }
        sequence.push(start.elapsed().as_secs_f64());
        assert_eq!(
            elf_patch::read_file(&files[0]).expect("read").rpath,
            expected
        );
    }
    let (o, s, q) = (
        median(ours.clone()),
        median(single.clone()),
        median(sequence.clone()),
    );
    println!(
        "{n} copies of {} ({size} bytes), {rounds} rounds, medians:",
        library.display()
    );
    println!(
        "  elf-patch, edit in memory only {memory:8.3} s  ({:.1} us/file)",
        memory / n as f64 * 1e6
    );
    println!(
        "  elf-patch in-process      {o:8.3} s  ({:.1} us/file)  {ours:.3?}",
        o / n as f64 * 1e6
    );
    println!(
        "  patchelf, one spawn/file  {s:8.3} s  ({:.1} us/file)  {single:.3?}  -> {:.0}x",
        s / n as f64 * 1e6,
        s / o
    );
    println!(
        "  patchelf, reference 4 spawns/file {q:8.3} s  ({:.1} us/file)  {sequence:.3?}  -> {:.0}x",
        q / n as f64 * 1e6,
        q / o
    );
}
