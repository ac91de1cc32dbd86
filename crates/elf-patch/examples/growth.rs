//! Does the corpus' edit (one more search-path entry, `DT_RPATH` kept where the file has only
//! that) with elf-patch and with patchelf on a copy each of every ELF file under the given
//! directories (default `/usr/lib` and `/usr/bin`), and compares the results: growth in bytes
//! (median, mean, 90th percentile, largest, total) and what `eu-elflint --gnu-ld` says about
//! each result that it did not say about the original. A message of elf-patch's result that
//! neither the original nor patchelf's result has (numbers aside: patchelf renumbers sections)
//! is listed, and makes the exit status 1.
//!
//!     PATCHELF=target/tools/patchelf/bin/patchelf cargo run -p rock-ci-elf-patch --example growth [DIR...]

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "a measurement printed to the terminal; sizes averaged as floating point"
)]

extern crate rock_ci_elf_patch as elf_patch;

#[expect(
    dead_code,
    reason = "the corpus' loading helpers are not needed to measure growth"
)]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use elf_patch::Edit;
use rock_ci_test_support::elf::elflint;
use support::PADDING;

/// One file's measurement.
enum Measure {
    Skip,
    /// elf-patch failed on a file patchelf may or may not edit.
    OursFailed(String),
    /// patchelf failed; elf-patch's growth and new messages.
    TheirsFailed(String),
    Done(Box<Done>),
}

struct Done {
    ours: i64,
    theirs: i64,
    /// Messages of each result that the original does not have.
    ours_new: Vec<String>,
    theirs_new: Vec<String>,
    /// elf-patch's new messages that patchelf's result does not have either.
    unexplained: Vec<String>,
}

/// `s` with every run of digits (hex after `0x` included) written `#`.
fn numbers_as_hash(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_digit() {
            let hex = rest.starts_with("0x");
            let skip = if hex { 2 } else { 0 };
            let end = rest[skip..]
                .find(|c: char| !(c.is_ascii_hexdigit() && (hex || c.is_ascii_digit())))
                .map_or(rest.len(), |e| e + skip);
            out.push('#');
            rest = &rest[end..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn size(p: &Path) -> i64 {
    i64::try_from(fs_err::metadata(p).expect("stat").len()).expect("size")
}

fn measure(file: &Path, work: &Path, patchelf: &Path) -> Measure {
    let Ok((_, info, _, _)) = support::eligible(file) else {
        return Measure::Skip;
    };
    let mut edit = Edit::default();
    edit.add_rpath = vec![PADDING.into()];
    edit.force_rpath = info.rpath.is_some() && info.runpath.is_none();
    let name = file.file_name().expect("a file");
    let [orig, ours, theirs] = ["orig", "ours", "theirs"].map(|d| {
        let dir = work.join(d);
        fs_err::create_dir_all(&dir).expect("work dir");
        let p = dir.join(name);
        fs_err::copy(file, &p).expect("copy");
        p
    });
    let result = compare(&orig, &ours, &theirs, patchelf, &edit);
    for p in [&orig, &ours, &theirs] {
        let _ = fs_err::remove_file(p);
    }
    result
}

fn compare(orig: &Path, ours: &Path, theirs: &Path, patchelf: &Path, edit: &Edit) -> Measure {
    if let Err(e) = elf_patch::patch_file(ours, edit) {
        return Measure::OursFailed(e.to_string());
    }
    let mut cmd = Command::new(patchelf);
    cmd.arg("--add-rpath").arg(PADDING);
    if edit.force_rpath {
        cmd.arg("--force-rpath");
    }
    let out = cmd.arg(theirs).output().expect("patchelf runs");
    if !out.status.success() {
        return Measure::TheirsFailed(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    let before = elflint(orig);
    let (after_ours, after_theirs) = (elflint(ours), elflint(theirs));
    let theirs_all: BTreeSet<String> = after_theirs.iter().map(|l| numbers_as_hash(l)).collect();
    let ours_new: Vec<String> = after_ours.difference(&before).cloned().collect();
    let unexplained = ours_new
        .iter()
        .filter(|l| !theirs_all.contains(&numbers_as_hash(l)))
        .cloned()
        .collect();
    Measure::Done(Box::new(Done {
        ours: size(ours) - size(orig),
        theirs: size(theirs) - size(orig),
        ours_new,
        theirs_new: after_theirs.difference(&before).cloned().collect(),
        unexplained,
    }))
}

fn stats(mut v: Vec<i64>) -> String {
    v.sort_unstable();
    let total: i64 = v.iter().sum();
    let at = |q: usize| v[(v.len() - 1) * q / 100];
    format!(
        "median {} B, mean {:.0} B, 90th percentile {} B, largest {} B, total {:.1} MB",
        at(50),
        total as f64 / v.len() as f64,
        at(90),
        v.last().copied().unwrap_or(0),
        total as f64 / 1e6
    )
}

fn main() {
    let patchelf = PathBuf::from(
        std::env::var_os("PATCHELF").expect("PATCHELF names the patchelf to compare with"),
    );
    let dirs = support::dirs_of_args();
    let files = support::elf_files(&dirs);
    let work = tempfile::tempdir().expect("temp dir");
    let start = Instant::now();
    let results = support::parallel(&files, work.path(), |file, dir| {
        measure(file, dir, &patchelf)
    });
    if !report(&results, start) {
        std::process::exit(1);
    }
}

/// Prints the comparison; whether elf-patch edited every file and added no unexplained message.
fn report(results: &[(PathBuf, Measure)], start: Instant) -> bool {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut largest: Vec<(i64, i64, &Path)> = Vec::new();
    let (mut ours_files, mut theirs_files, mut ours_lines, mut theirs_lines) = (0, 0, 0, 0);
    let mut kinds: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut unexplained = Vec::new();
    let mut failures = Vec::new();
    let mut theirs_failed = Vec::new();
    for (file, m) in results {
        match m {
            Measure::Skip => {}
            Measure::OursFailed(e) => failures.push(format!("{}: {e}", file.display())),
            Measure::TheirsFailed(e) => theirs_failed.push(format!("{}: {e}", file.display())),
            Measure::Done(d) => {
                ours.push(d.ours);
                theirs.push(d.theirs);
                largest.push((d.ours, d.theirs, file));
                ours_files += usize::from(!d.ours_new.is_empty());
                theirs_files += usize::from(!d.theirs_new.is_empty());
                ours_lines += d.ours_new.len();
                theirs_lines += d.theirs_new.len();
                for l in &d.ours_new {
                    kinds.entry(numbers_as_hash(l)).or_default().0 += 1;
                }
                for l in &d.theirs_new {
                    kinds.entry(numbers_as_hash(l)).or_default().1 += 1;
                }
                unexplained.extend(
                    d.unexplained
                        .iter()
                        .map(|l| format!("{}: {l}", file.display())),
                );
            }
        }
    }
    println!(
        "files edited by both tools: {} ({:.1} s); patchelf failed on {}, elf-patch on {}",
        ours.len(),
        start.elapsed().as_secs_f64(),
        theirs_failed.len(),
        failures.len()
    );
    println!("growth, elf-patch: {}", stats(ours));
    println!("growth, patchelf:  {}", stats(theirs));
    largest.sort_unstable_by_key(|(o, _, _)| std::cmp::Reverse(*o));
    for (o, t, file) in largest.iter().take(5) {
        println!(
            "  largest growth: elf-patch {o} B, patchelf {t} B: {}",
            file.display()
        );
    }
    println!(
        "eu-elflint messages the original does not have: elf-patch {ours_lines} on {ours_files} files, patchelf {theirs_lines} on {theirs_files} files"
    );
    // Every kind elf-patch's results have, and patchelf's ten most frequent.
    let mut by_count: Vec<(&String, &(usize, usize))> = kinds.iter().collect();
    by_count.sort_by_key(|(_, (o, t))| std::cmp::Reverse((*o, *t)));
    let shown: Vec<_> = by_count
        .iter()
        .enumerate()
        .filter(|(i, (_, (o, _)))| *o > 0 || *i < 10)
        .map(|(_, k)| *k)
        .collect();
    for (kind, (o, t)) in &shown {
        println!("  elf-patch {o:>5}, patchelf {t:>5}: {kind}");
    }
    if shown.len() < kinds.len() {
        println!(
            "  ({} more kinds, in patchelf's results only)",
            kinds.len() - shown.len()
        );
    }
    for l in theirs_failed.iter().take(10) {
        println!("  patchelf failed: {l}");
    }
    println!(
        "elf-patch's new messages that patchelf's result does not have: {}",
        unexplained.len()
    );
    for l in unexplained.iter().chain(&failures) {
        println!("  {l}");
    }
    unexplained.is_empty() && failures.is_empty()
}
