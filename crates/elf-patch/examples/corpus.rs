//! Patches a copy of every ELF file under the given directories (default `/usr/lib` and
//! `/usr/bin`) with a search path longer than its own, then checks that each copy behaves as an
//! unpatched copy does: shared objects are `dlopen`ed in a child process (same outcome, same
//! error text), executables are run with `--version` and `--help` (same exit status and
//! output). Prints `ok / total` and the reason of every skip or mismatch.
//!
//!     cargo run --release -p elf-patch --example corpus [DIR...]

#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use elf_patch::{Edit, FileType};

const LOADER: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("error: %s\n", dlerror()); return 1; }
    printf("loaded\n");
    return 0;
}
"#;

/// The padding entry: a directory that does not exist, so resolution cannot change.
const PADDING: &str = "$ORIGIN/../rock-ci-corpus/padding/entry/that/does/not/exist";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok(&'static str),
    Skip(String),
    Mismatch(String),
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let path = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}

/// Runs `cmd` with a time limit: (status or "timeout", stdout+stderr).
fn run(mut cmd: Command, limit: Duration) -> (String, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let Ok(mut child) = cmd.spawn() else {
        return ("spawn failed".into(), String::new());
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return ("timeout".into(), String::new());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return (format!("wait failed: {e}"), String::new()),
        }
    }
    let out = child.wait_with_output().expect("collect output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (format!("{:?}", out.status.code()), text)
}

/// A run's status and normalized output.
type Run = (String, String);

/// The copies' directories, process ids and times differ between the two runs.
fn normalize(s: &str, p: &Path) -> String {
    let s = s.replace(&*p.parent().expect("in a dir").to_string_lossy(), "DIR");
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('#') {
            out.push('#');
        }
    }
    out
}

/// The file's dynamic facts, or why it is skipped.
fn eligible(file: &Path) -> Result<(FileType, elf_patch::DynamicInfo), Outcome> {
    let kind = match elf_patch::file_type(file) {
        Ok(k @ (FileType::So | FileType::Exe)) => k,
        Ok(_) => return Err(Outcome::Skip("not an executable or shared object".into())),
        Err(e) => return Err(Outcome::Skip(format!("unreadable: {e}"))),
    };
    let info = match elf_patch::read_file(file) {
        Ok(i) => i,
        Err(e) => return Err(Outcome::Skip(format!("unreadable ELF: {e}"))),
    };
    let Ok(data) = fs_err::read(file) else {
        return Err(Outcome::Skip("unreadable".into()));
    };
    match elf_patch::Elf::parse(&data) {
        Ok(e) if !e.is_dynamic() => {
            return Err(Outcome::Skip(
                "statically linked (no dynamic section)".into(),
            ));
        }
        Ok(e) if !e.has_string_table() => {
            return Err(Outcome::Skip(
                "dynamic section without contents (a separate debug-info file)".into(),
            ));
        }
        Ok(_) => {}
        Err(e) => return Err(Outcome::Skip(format!("unreadable ELF: {e}"))),
    }
    Ok((kind, info))
}

fn check(file: &Path, work: &Path, loader: &Path) -> Outcome {
    let (kind, info) = match eligible(file) {
        Ok(v) => v,
        Err(skip) => return skip,
    };
    let name = file.file_name().expect("a file").to_owned();
    let (orig_dir, new_dir) = (work.join("orig"), work.join("patched"));
    let (orig, new) = (orig_dir.join(&name), new_dir.join(&name));
    for d in [&orig_dir, &new_dir] {
        fs_err::create_dir_all(d).expect("work dir");
    }
    fs_err::copy(file, &orig).expect("copy");
    fs_err::copy(file, &new).expect("copy");
    let existing = info.search_path().map(str::to_owned);
    let edit = Edit {
        add_rpath: vec![PADDING.into()],
        force_rpath: info.rpath.is_some() && info.runpath.is_none(),
        ..Edit::default()
    };
    if let Err(e) = elf_patch::patch_file(&new, &edit) {
        return Outcome::Mismatch(format!("patch failed: {e}"));
    }
    let after = elf_patch::read_file(&new).map(|i| i.search_path().map(str::to_owned));
    let want = elf_patch::combined_search_path(existing.as_deref(), None, &edit.add_rpath);
    if after.as_ref().ok().and_then(Option::as_deref) != Some(want.as_str()) {
        return Outcome::Mismatch(format!("search path reads {after:?}, not {want}"));
    }
    // Runs `probe` on both copies. A difference is tried twice more, with a longer limit: a
    // loaded machine can push a slow `--help` past the first one, and some programs' output
    // varies from run to run (`groff --version` interleaves its subprograms' output). A broken
    // copy never matches.
    let compare = |probe: &dyn Fn(&Path, Duration) -> (String, String)| {
        let mut outcome: Result<String, (Run, Run)> = Err(Default::default());
        for limit in [5, 30, 30].map(Duration::from_secs) {
            let (a, b) = (probe(&orig, limit), probe(&new, limit));
            let (a, b) = ((a.0, normalize(&a.1, &orig)), (b.0, normalize(&b.1, &new)));
            outcome = if a == b { Ok(a.0) } else { Err((a, b)) };
            if outcome.is_ok() {
                break;
            }
        }
        outcome
    };
    let result = if kind == FileType::So {
        let load = |p: &Path, limit: Duration| {
            let mut c = Command::new(loader);
            c.arg(p);
            run(c, limit)
        };
        compare(&load).map(|status| {
            if status == "Some(0)" {
                "loads"
            } else {
                "fails to load the same way unpatched"
            }
        })
    } else {
        let exec = |arg: &'static str| {
            let name = name.clone();
            move |p: &Path, limit: Duration| {
                let mut c = Command::new(p);
                std::os::unix::process::CommandExt::arg0(&mut c, &name);
                c.arg(arg)
                    .env_clear()
                    .env("PATH", "/usr/bin:/bin")
                    .env("LANG", "C");
                run(c, limit)
            }
        };
        compare(&exec("--version"))
            .and_then(|a| Ok((a, compare(&exec("--help"))?)))
            .map(|(a, b)| {
                if a == "timeout" || b == "timeout" {
                    "runs the same (a run timed out both times)"
                } else {
                    "runs the same"
                }
            })
    };
    let _ = fs_err::remove_file(&orig);
    let _ = fs_err::remove_file(&new);
    match result {
        Ok(how) => Outcome::Ok(how),
        Err((a, b)) => Outcome::Mismatch(format!(
            "unpatched {} {:?} vs patched {} {:?}",
            a.0,
            a.1.chars().take(200).collect::<String>(),
            b.0,
            b.1.chars().take(200).collect::<String>()
        )),
    }
}

fn main() {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let dirs = if dirs.is_empty() {
        vec![PathBuf::from("/usr/lib"), PathBuf::from("/usr/bin")]
    } else {
        dirs
    };
    let mut files = Vec::new();
    for d in &dirs {
        walk(d, &mut files);
    }
    files.retain(|f| {
        let mut head = [0u8; 4];
        fs_err::File::open(f)
            .and_then(|mut h| std::io::Read::read_exact(&mut h, &mut head))
            .is_ok()
            && elf_patch::is_elf(&head)
    });
    files.sort();
    let work = tempfile::tempdir().expect("temp dir");
    let src = work.path().join("loader.c");
    fs_err::write(&src, LOADER).expect("loader source");
    let loader = work.path().join("loader");
    let built = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&loader)
        .arg("-ldl")
        .status()
        .expect("cc");
    assert!(built.success(), "cc failed to build the loader");

    let start = Instant::now();
    let next = Mutex::new(0usize);
    let results = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    std::thread::scope(|s| {
        for w in 0..workers {
            let (files, next, results, work) = (&files, &next, &results, work.path());
            let loader = &loader;
            s.spawn(move || {
                let dir = work.join(format!("w{w}"));
                loop {
                    let i = {
                        let mut n = next.lock().expect("lock");
                        *n += 1;
                        *n - 1
                    };
                    let Some(file) = files.get(i) else { break };
                    let outcome = check(file, &dir, loader);
                    results.lock().expect("lock").push((file.clone(), outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("lock");
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let (mut ok, mut skipped, mut bad) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
    for (file, outcome) in &results {
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
