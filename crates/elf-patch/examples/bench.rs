//! Benchmark: set the RPATH of N copies of a shared library in-process vs spawning `patchelf`
//! for the same edit, and vs the reference's per-file sequence (two `--add-rpath`, one
//! `--print-rpath`, one `--set-rpath --force-rpath`). With `ELF_PATCH` naming an `elf-patch`
//! binary, that binary is also spawned once per file with patchelf's arguments. Medians of the
//! rounds, in one run.
//!
//!     [ELF_PATCH=BIN] cargo run --release -p rock-ci-elf-patch --example bench -- PATCHELF [COPIES] [ROUNDS] [LIBRARY]

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "a measurement printed to the terminal; times as floating point"
)]

extern crate rock_ci_elf_patch as elf_patch;

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

fn spawn(program: &Path, args: &[&str], file: &Path) -> String {
    let out = Command::new(program)
        .args(args)
        .arg(file)
        .output()
        .expect("spawn");
    assert!(
        out.status.success(),
        "{} {args:?}: {out:?}",
        program.display()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Times `f` on fresh copies of `library` in `dir` (removed afterwards, so that a large
/// library's copies never pile up); checks the first copy's RPATH reads `expected` when given.
fn timed(
    library: &Path,
    dir: &Path,
    n: usize,
    expected: Option<&Option<String>>,
    f: impl Fn(&Path),
) -> (f64, Option<String>) {
    let files = copies(library, dir, n);
    let start = Instant::now();
    for file in &files {
        f(file);
    }
    let took = start.elapsed().as_secs_f64();
    let rpath = elf_patch::read_file(&files[0]).expect("read").rpath;
    if let Some(e) = expected {
        assert_eq!(&rpath, e, "{}", dir.display());
    }
    let _ = fs_err::remove_dir_all(dir);
    (took, rpath)
}

/// patchelf's one-call form of the edit: `--set-rpath` with the combined path.
fn set_args(file: &Path, edit: &Edit) -> String {
    let existing = elf_patch::read_file(file).expect("read");
    elf_patch::combined_search_path(existing.search_path(), None, &edit.add_rpath)
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
    let mut edit = Edit::default();
    edit.add_rpath = ENTRIES.iter().map(|s| (*s).to_owned()).collect();
    edit.force_rpath = true;
    let data = fs_err::read(&library).expect("library");
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(elf_patch::patch(&data, &edit).expect("patch"));
    }
    let memory = start.elapsed().as_secs_f64();
    let elf_patch_bin = std::env::var_os("ELF_PATCH").map(PathBuf::from);
    let (mut ours, mut single, mut sequence, mut spawned) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (t, expected) = timed(&library, &work.path().join("ours"), n, None, |f| {
            elf_patch::patch_file(f, &edit).expect("patch");
        });
        ours.push(t);
        let expected = Some(&expected);
        single.push(
            timed(&library, &work.path().join("single"), n, expected, |f| {
                let path = set_args(f, &edit);
                spawn(&patchelf, &["--set-rpath", &path, "--force-rpath"], f);
            })
            .0,
        );
        if let Some(bin) = &elf_patch_bin {
            spawned.push(
                timed(&library, &work.path().join("spawned"), n, expected, |f| {
                    let path = set_args(f, &edit);
                    spawn(bin, &["--set-rpath", &path, "--force-rpath"], f);
                })
                .0,
            );
        }
        sequence.push(
            timed(&library, &work.path().join("sequence"), n, expected, |f| {
                for entry in ENTRIES {
                    spawn(&patchelf, &["--add-rpath", entry], f);
                }
                let path = spawn(&patchelf, &["--print-rpath"], f);
                spawn(&patchelf, &["--set-rpath", &path, "--force-rpath"], f);
            })
            .0,
        );
    }
    println!(
        "{n} copies of {} ({size} bytes), {rounds} rounds, medians:",
        library.display()
    );
    println!(
        "  elf-patch, edit in memory only {memory:8.3} s  ({:.1} us/file)",
        memory / n as f64 * 1e6
    );
    report(
        n,
        &ours,
        &single,
        elf_patch_bin.as_deref().map(|b| (b, &spawned[..])),
        &sequence,
    );
}

/// Prints the medians of each way and how they compare.
fn report(
    n: usize,
    ours: &[f64],
    single: &[f64],
    spawned: Option<(&Path, &[f64])>,
    sequence: &[f64],
) {
    let per_file = |t: f64| t / n as f64 * 1e6;
    let (inproc, one) = (median(ours.to_vec()), median(single.to_vec()));
    println!(
        "  elf-patch in-process      {inproc:8.3} s  ({:.1} us/file)  {ours:.3?}",
        per_file(inproc)
    );
    println!(
        "  patchelf, one spawn/file  {one:8.3} s  ({:.1} us/file)  {single:.3?}  -> {:.0}x",
        per_file(one),
        one / inproc
    );
    if let Some((bin, spawned)) = spawned {
        let t = median(spawned.to_vec());
        println!(
            "  elf-patch, one spawn/file {t:8.3} s  ({:.1} us/file)  {spawned:.3?}  -> {:.2}x patchelf's time ({})",
            per_file(t),
            t / one,
            bin.display()
        );
    }
    let four = median(sequence.to_vec());
    println!(
        "  patchelf, reference 4 spawns/file {four:8.3} s  ({:.1} us/file)  {sequence:.3?}  -> {:.0}x",
        per_file(four),
        four / inproc
    );
}
