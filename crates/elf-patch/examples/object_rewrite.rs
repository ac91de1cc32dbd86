//! Does the corpus' edit (one more search-path entry, `DT_RPATH` kept where the file has only
//! that) with the `object` crate's ELF builder (`object-rewrite`, on `object::build::elf`) and
//! with elf-patch, on every ELF file under the given directories (default `/usr/lib` and
//! `/usr/bin`), and compares them: how many files each edits, the growth in bytes, the time per
//! file, whether the builder's result reads back with the planned search path and tag, and
//! whether it loads as an unpatched copy does (the corpus' check: `dlopen`, a run with the
//! flags the program names, or the loader trace).
//!
//!     cargo run --release -p rock-ci-elf-patch --example object_rewrite [DIR...]

#![allow(
    clippy::print_stdout,
    missing_docs,
    reason = "a measurement printed to the terminal"
)]

extern crate rock_ci_elf_patch as elf_patch;

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use elf_patch::Edit;
use support::PADDING;

/// One file's measurement.
enum Measure {
    Skip,
    /// elf-patch's growth and time; object's growth and time or its error; the load outcome of
    /// object's result.
    Done {
        ours: (i64, Duration),
        theirs: Result<(i64, Duration), String>,
        loads: Result<&'static str, String>,
    },
}

/// `s` with every `0x` number written `0x#`, so that errors group by kind.
fn hex_as_hash(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("0x") {
        out.push_str(&rest[..at + 2]);
        out.push('#');
        rest = rest[at + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out + rest
}

fn growth(before: &[u8], after: &[u8]) -> i64 {
    i64::try_from(after.len()).expect("size") - i64::try_from(before.len()).expect("size")
}

/// object's builder doing `edit`'s search-path change.
fn object_edit(data: &[u8], edit: &Edit) -> Result<Vec<u8>, String> {
    let mut rewriter = object_rewrite::Rewriter::read(data).map_err(|e| e.to_string())?;
    let mut options = object_rewrite::Options::default();
    options.elf.add_runpath = edit
        .add_rpath
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
    options.elf.use_rpath = edit.force_rpath;
    options.elf.use_runpath = !edit.force_rpath;
    rewriter.modify(options).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    rewriter.write(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

fn measure(file: &Path, work: &Path, loader: &Path) -> Measure {
    let Ok((kind, info, _, flags)) = support::eligible(file) else {
        return Measure::Skip;
    };
    let data = fs_err::read(file).expect("read");
    let mut edit = Edit::default();
    edit.add_rpath = vec![PADDING.into()];
    edit.force_rpath = info.rpath.is_some() && info.runpath.is_none();
    let start = Instant::now();
    let ours = elf_patch::patch(&data, &edit)
        .expect("elf-patch edits every eligible file of the corpus")
        .expect("a change");
    let ours = (growth(&data, &ours), start.elapsed());
    let start = Instant::now();
    let out = object_edit(&data, &edit);
    let elapsed = start.elapsed();
    let (theirs, loads) = match out {
        Err(e) => (Err(e), Err("not written".to_owned())),
        Ok(out) => {
            let want = elf_patch::combined_search_path(info.search_path(), None, &edit.add_rpath);
            let read = elf_patch::read_bytes(&out);
            let tag_ok = read.as_ref().is_ok_and(|i| {
                let (tagged, other) = if edit.force_rpath {
                    (&i.rpath, &i.runpath)
                } else {
                    (&i.runpath, &i.rpath)
                };
                tagged.as_deref() == Some(want.as_str()) && other.is_none()
            });
            let loads = if tag_ok {
                let (orig, new) = support::copies(file, work);
                fs_err::write(&new, &out).expect("write");
                let loads = support::compare(&orig, &new, kind, &flags, loader);
                let _ = fs_err::remove_file(&orig);
                let _ = fs_err::remove_file(&new);
                loads
            } else {
                Err(format!(
                    "reads back as {read:?}, not {want} with the planned tag"
                ))
            };
            (Ok((growth(&data, &out), elapsed)), loads)
        }
    };
    Measure::Done {
        ours,
        theirs,
        loads,
    }
}

fn main() {
    let dirs = support::dirs_of_args();
    let files = support::elf_files(&dirs);
    let work = tempfile::tempdir().expect("temp dir");
    let loader = support::build_loader(work.path());
    let results = support::parallel(&files, work.path(), |file, dir| measure(file, dir, &loader));
    let (mut edited, mut failed, mut loads_same) = (0usize, BTreeMap::new(), 0usize);
    let (mut ours_bytes, mut theirs_bytes) = (0i64, 0i64);
    let (mut ours_time, mut theirs_time) = (Duration::ZERO, Duration::ZERO);
    let (mut ours_sizes, mut theirs_sizes) = (Vec::new(), Vec::new());
    let mut bad_loads = Vec::new();
    for (file, m) in &results {
        let Measure::Done {
            ours,
            theirs,
            loads,
        } = m
        else {
            continue;
        };
        ours_time += ours.1;
        match theirs {
            Err(e) => *failed.entry(hex_as_hash(e)).or_insert(0) += 1,
            Ok(theirs) => {
                edited += 1;
                ours_bytes += ours.0;
                theirs_bytes += theirs.0;
                ours_sizes.push(ours.0);
                theirs_sizes.push(theirs.0);
                theirs_time += theirs.1;
                match loads {
                    Ok(_) => loads_same += 1,
                    Err(e) => bad_loads.push((file, e)),
                }
            }
        }
    }
    let total = edited + failed.values().sum::<usize>();
    let smaller = ours_sizes
        .iter()
        .zip(&theirs_sizes)
        .filter(|(o, t)| t < o)
        .count();
    let quantiles = |v: &mut Vec<i64>| {
        v.sort_unstable();
        let at = |q: usize| v.get(v.len() * q / 100).copied().unwrap_or(0);
        format!(
            "median {}, 90th percentile {}, largest {}",
            at(50),
            at(90),
            v.last().copied().unwrap_or(0)
        )
    };
    let per_file = |t: Duration, n: usize| {
        (t / u32::try_from(n.max(1)).expect("file count")).as_secs_f64() * 1e3
    };
    println!("eligible ELF files: {total} (elf-patch edits all {total})");
    println!(
        "object's builder: edited {edited} / {total}, failed {}; of the edited: {loads_same} load as the unpatched copy, {} do not",
        total - edited,
        bad_loads.len()
    );
    println!(
        "growth over the {edited} files object edited: elf-patch {ours_bytes} bytes ({}), object {theirs_bytes} bytes ({}); object's result is smaller for {smaller}",
        quantiles(&mut ours_sizes),
        quantiles(&mut theirs_sizes)
    );
    println!(
        "time per file: elf-patch {:.3} ms (all {total}), object {:.3} ms (the {edited} edited)",
        per_file(ours_time, total),
        per_file(theirs_time, edited)
    );
    for (why, n) in &failed {
        println!("  object failed {n}: {why}");
    }
    for (file, why) in bad_loads.iter().take(20) {
        println!("  object's result differs {}: {why}", file.display());
    }
}
