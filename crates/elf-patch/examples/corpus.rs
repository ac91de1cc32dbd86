//! Patches a copy of every ELF file under the given directories (default `/usr/lib` and
//! `/usr/bin`) with a search path longer than its own, then checks that each copy behaves as an
//! unpatched copy does: shared objects are `dlopen`ed in a child process (same outcome, same
//! error text); executables whose own bytes hold the text `--version` or `--help` (a usage
//! string: evidence that they take it as a flag) are run with it (same exit status and output);
//! every other executable, and every program of a generator or service directory, is only
//! loaded: the dynamic loader lists and binds its libraries (`LD_TRACE_LOADED_OBJECTS`, as
//! `ldd -r` does) without running its code. Every child runs in an empty temporary directory of
//! its own, which is also its `HOME` and `TMPDIR`, removed afterwards. Prints `ok / total`, how
//! many executables were run with flags and how many checked by the loader trace, and the reason
//! of every skip or mismatch.
//!
//!     cargo run --release -p rock-ci-elf-patch --example corpus [DIR...]

#![allow(
    clippy::print_stdout,
    missing_docs,
    reason = "a check that reports on the terminal"
)]

extern crate rock_ci_elf_patch as elf_patch;

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use elf_patch::{Edit, FileType};
use support::{Method, PADDING};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok(&'static str),
    Skip(String),
    Mismatch(String),
}

/// Checks one file: the outcome, and for an executable how it was checked.
fn check(file: &Path, work: &Path, loader: &Path) -> (Outcome, Option<Method>) {
    let (kind, info, method, flags) = match support::eligible(file) {
        Ok(v) => v,
        Err(why) => return (Outcome::Skip(why), None),
    };
    (
        check_copies(file, work, loader, kind, &info, &flags),
        method,
    )
}

/// Patches a copy and compares it with an unpatched one: `dlopen` for a shared object, a run
/// with each of `flags` or (none) the loader trace for an executable.
fn check_copies(
    file: &Path,
    work: &Path,
    loader: &Path,
    kind: FileType,
    info: &elf_patch::DynamicInfo,
    flags: &[&'static str],
) -> Outcome {
    let (orig, new) = support::copies(file, work);
    let existing = info.search_path().map(str::to_owned);
    let mut edit = Edit::default();
    edit.add_rpath = vec![PADDING.into()];
    edit.force_rpath = info.rpath.is_some() && info.runpath.is_none();
    if let Err(e) = elf_patch::patch_file(&new, &edit) {
        return Outcome::Mismatch(format!("patch failed: {}", e.report()));
    }
    let after = elf_patch::read_file(&new).map(|i| i.search_path().map(str::to_owned));
    let want = elf_patch::combined_search_path(existing.as_deref(), None, &edit.add_rpath);
    if after.as_ref().ok().and_then(Option::as_deref) != Some(want.as_str()) {
        return Outcome::Mismatch(format!("search path reads {after:?}, not {want}"));
    }
    let result = support::compare(&orig, &new, kind, flags, loader);
    let _ = fs_err::remove_file(&orig);
    let _ = fs_err::remove_file(&new);
    match result {
        Ok(how) => Outcome::Ok(how),
        Err(why) => Outcome::Mismatch(why),
    }
}

fn main() {
    let dirs = support::dirs_of_args();
    let files = support::elf_files(&dirs);
    let work = tempfile::tempdir().expect("temp dir");
    let loader = support::build_loader(work.path());
    let start = Instant::now();
    let results = support::parallel(&files, work.path(), |file, dir| check(file, dir, &loader));
    report(&dirs, &results, start);
}

/// Prints the summary; exits with status 1 on any mismatch.
fn report(dirs: &[PathBuf], results: &[(PathBuf, (Outcome, Option<Method>))], start: Instant) {
    let (mut ok, mut skipped, mut bad) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
    let (mut with_flags, mut traced) = (0, 0);
    for (file, (outcome, method)) in results {
        match method {
            Some(Method::Flags) => with_flags += 1,
            Some(Method::Trace) => traced += 1,
            None => {}
        }
        match outcome {
            Outcome::Ok(how) => *ok.entry(*how).or_insert(0) += 1,
            Outcome::Skip(why) => skipped
                .entry(why.clone())
                .or_insert_with(Vec::new)
                .push(file),
            Outcome::Mismatch(why) => bad.push((file, why)),
        }
    }
    let patched = results.len() - skipped.values().map(Vec::len).sum::<usize>();
    let good: usize = ok.values().sum();
    println!(
        "ELF files under {}: {}; patched and checked: {patched}; ok: {good} / {patched} ({:.1} s)",
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        results.len(),
        start.elapsed().as_secs_f64()
    );
    for (how, n) in &ok {
        println!("  ok: {n} {how}");
    }
    println!(
        "  executables: {with_flags} run with --version/--help, {traced} checked by loader trace"
    );
    for (why, files) in &skipped {
        println!(
            "  skipped {}: {why} (e.g. {})",
            files.len(),
            files[0].display()
        );
    }
    for (file, why) in &bad {
        println!("  MISMATCH {}: {why}", file.display());
    }
    if !bad.is_empty() {
        std::process::exit(1);
    }
}
