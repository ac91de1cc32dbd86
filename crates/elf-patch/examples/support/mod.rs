//! What the corpus examples share: finding the ELF files, running children in a sandbox of
//! their own, and comparing a patched copy with an unpatched one without writing anywhere but
//! temporary directories.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use elf_patch::FileType;

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
pub(crate) const PADDING: &str = "$ORIGIN/../rock-ci-corpus/padding/entry/that/does/not/exist";

/// Directory names whose programs the system starts (generators, services, helpers, transport
/// methods), not a user: their arguments are output directories, sockets or protocol streams,
/// so they are never run, only loaded.
const SERVICE_DIRS: [&str; 10] = [
    "systemd",
    "udev",
    "dbus-1.0",
    "polkit-1",
    "openssh",
    "cups",
    "NetworkManager",
    "initramfs-tools",
    "kernel",
    "libexec",
];

/// How an executable was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// Run with the flags its bytes name.
    Flags,
    /// Loaded by the dynamic loader without running (`LD_TRACE_LOADED_OBJECTS`).
    Trace,
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

/// A command for `program` with an environment of its own: `PATH`, `LANG` and `extra` only.
pub(crate) fn command(program: &Path, extra: &[(&str, &str)]) -> Command {
    let mut c = Command::new(program);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C")
        .envs(extra.iter().copied());
    c
}

/// Runs `cmd` with a time limit in an empty temporary directory of its own (also its `HOME`
/// and `TMPDIR`, removed afterwards): (status or "timeout", stdout+stderr, the directory's path
/// written as `CWD`).
pub(crate) fn run(mut cmd: Command, limit: Duration) -> (String, String) {
    let Ok(home) = tempfile::Builder::new().prefix("rock-ci-corpus.").tempdir() else {
        return ("no temporary directory".into(), String::new());
    };
    let (status, text) = run_in(
        cmd.current_dir(home.path())
            .env("HOME", home.path())
            .env("TMPDIR", home.path()),
        limit,
    );
    (status, text.replace(&*home.path().to_string_lossy(), "CWD"))
}

fn run_in(cmd: &mut Command, limit: Duration) -> (String, String) {
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
pub(crate) type Run = (String, String);

/// The copies' directories, process ids, times and load addresses differ between the two
/// runs: numbers (`0x` and the hex digits after it included) read as `#`.
fn normalize(s: &str, p: &Path) -> String {
    let s = s.replace(&*p.parent().expect("in a dir").to_string_lossy(), "DIR");
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let hex = chars[i] == '0'
            && chars.get(i + 1) == Some(&'x')
            && chars.get(i + 2).is_some_and(char::is_ascii_hexdigit);
        if hex {
            i += 2;
            while chars.get(i).is_some_and(char::is_ascii_hexdigit) {
                i += 1;
            }
        } else if !chars[i].is_ascii_digit() {
            out.push(chars[i]);
            i += 1;
            continue;
        } else {
            i += 1;
        }
        if !out.ends_with('#') {
            out.push('#');
        }
    }
    out
}

/// Whether `file` lies in a generator or service directory (see [`SERVICE_DIRS`]).
fn service_program(file: &Path) -> bool {
    let dirs: Vec<String> = file
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    dirs.iter()
        .any(|d| d.ends_with("-generators") || SERVICE_DIRS.contains(&d.as_str()))
        || dirs
            .windows(2)
            .any(|w| matches!(w[0].as_str(), "apt" | "dpkg") && w[1] == "methods")
}

/// Whether the dynamic loader named by `PT_INTERP` is glibc's, which honours
/// `LD_TRACE_LOADED_OBJECTS` (another one would run the program).
fn glibc_loader(interpreter: Option<&str>) -> bool {
    interpreter
        .and_then(|i| Path::new(i).file_name())
        .is_some_and(|n| {
            let n = n.to_string_lossy();
            n.starts_with("ld-linux") || n.starts_with("ld64.so") || n.starts_with("ld.so")
        })
}

/// How `file` is checked: the flags whose text its bytes hold, run one by one; none (a
/// program of a service directory, or one without that evidence) means the loader trace.
fn flags_of(file: &Path, data: &[u8]) -> Vec<&'static str> {
    if service_program(file) {
        return Vec::new();
    }
    ["--version", "--help"]
        .into_iter()
        .filter(|f| data.windows(f.len()).any(|w| w == f.as_bytes()))
        .collect()
}

/// Compares the copies `orig` and `patched` of one file: `dlopen` for a shared object; for an
/// executable a run with each of `flags`, or with none the loader trace. `Ok` says how they
/// agreed, `Err` how they differ.
pub(crate) fn compare(
    orig: &Path,
    new: &Path,
    kind: FileType,
    flags: &[&'static str],
    loader: &Path,
) -> Result<&'static str, String> {
    let name = orig.file_name().expect("a file").to_owned();
    // Runs `probe` on both copies. A difference is tried twice more, with a longer limit: a
    // loaded machine can push a slow `--help` past the first one, and some programs' output
    // varies from run to run (`groff --version` interleaves its subprograms' output). A broken
    // copy never matches.
    let compare = |probe: &dyn Fn(&Path, Duration) -> (String, String)| {
        let mut outcome: Result<String, (Run, Run)> = Err(Default::default());
        for limit in [5, 30, 30].map(Duration::from_secs) {
            let (a, b) = (probe(orig, limit), probe(new, limit));
            let (a, b) = ((a.0, normalize(&a.1, orig)), (b.0, normalize(&b.1, new)));
            outcome = if a == b { Ok(a.0) } else { Err((a, b)) };
            if outcome.is_ok() {
                break;
            }
        }
        outcome
    };
    let result = if kind == FileType::So {
        let load = |p: &Path, limit: Duration| {
            let mut c = command(loader, &[]);
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
    } else if flags.is_empty() {
        // What `ldd -r` asks of the loader: list and bind every library, run nothing.
        let trace = |p: &Path, limit: Duration| {
            let env = [
                ("LD_TRACE_LOADED_OBJECTS", "1"),
                ("LD_BIND_NOW", "1"),
                ("LD_WARN", "1"),
            ];
            run(command(p, &env), limit)
        };
        compare(&trace).map(|status| {
            if status == "Some(0)" {
                "loads the same (loader trace)"
            } else {
                "fails the loader trace the same way unpatched"
            }
        })
    } else {
        let exec = |arg: &'static str| {
            let name = name.clone();
            move |p: &Path, limit: Duration| {
                let mut c = command(p, &[]);
                std::os::unix::process::CommandExt::arg0(&mut c, &name);
                c.arg(arg);
                run(c, limit)
            }
        };
        let mut timed_out = false;
        flags
            .iter()
            .try_for_each(|f| {
                timed_out |= compare(&exec(f))? == "timeout";
                Ok(())
            })
            .map(|()| {
                if timed_out {
                    "runs the same with its flags (a run timed out both times)"
                } else {
                    "runs the same with its flags"
                }
            })
    };
    result.map_err(|(a, b)| {
        format!(
            "unpatched {} {:?} vs patched {} {:?}",
            a.0,
            a.1.chars().take(200).collect::<String>(),
            b.0,
            b.1.chars().take(200).collect::<String>()
        )
    })
}

/// The ELF files under `dirs`, sorted.
pub(crate) fn elf_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for d in dirs {
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
    files
}

/// The directories given on the command line, `/usr/lib` and `/usr/bin` by default.
pub(crate) fn dirs_of_args() -> Vec<PathBuf> {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        vec![PathBuf::from("/usr/lib"), PathBuf::from("/usr/bin")]
    } else {
        dirs
    }
}

/// Builds the `dlopen` helper in `work`.
pub(crate) fn build_loader(work: &Path) -> PathBuf {
    let src = work.join("loader.c");
    fs_err::write(&src, LOADER).expect("loader source");
    let loader = work.join("loader");
    let built = Command::new("cc")
        .current_dir(work)
        .arg(&src)
        .arg("-o")
        .arg(&loader)
        .arg("-ldl")
        .status()
        .expect("cc");
    assert!(built.success(), "cc failed to build the loader");
    loader
}

/// A file to check: its kind, dynamic facts, and for an executable how it is checked and the
/// flags it is run with.
pub(crate) type Eligible = (
    FileType,
    elf_patch::DynamicInfo,
    Option<Method>,
    Vec<&'static str>,
);

/// The file's kind, dynamic facts and how it is checked, or why it is skipped.
pub(crate) fn eligible(file: &Path) -> Result<Eligible, String> {
    let kind = match elf_patch::file_type(file) {
        Ok(k @ (FileType::So | FileType::Exe)) => k,
        Ok(_) => return Err("not an executable or shared object".into()),
        Err(e) => return Err(format!("unreadable: {}", e.report())),
    };
    let info = match elf_patch::read_file(file) {
        Ok(i) => i,
        Err(e) => return Err(format!("unreadable ELF: {}", e.report())),
    };
    let Ok(data) = fs_err::read(file) else {
        return Err("unreadable".into());
    };
    match elf_patch::Elf::parse(&data) {
        Ok(e) if !e.is_dynamic() => {
            return Err("statically linked (no dynamic section)".into());
        }
        Ok(e) if !e.has_string_table() => {
            return Err("dynamic section without contents (a separate debug-info file)".into());
        }
        Ok(_) => {}
        Err(e) => return Err(format!("unreadable ELF: {e}")),
    }
    let (method, flags) = match method_of(file, kind, info.interpreter.as_deref(), &data)? {
        Some((method, flags)) => (Some(method), flags),
        None => (None, Vec::new()),
    };
    Ok((kind, info, method, flags))
}

/// Two copies of `file` in `work`: (unpatched, to patch), in directories of their own.
pub(crate) fn copies(file: &Path, work: &Path) -> (PathBuf, PathBuf) {
    let name = file.file_name().expect("a file");
    let (orig_dir, new_dir) = (work.join("orig"), work.join("patched"));
    let (orig, new) = (orig_dir.join(name), new_dir.join(name));
    for d in [&orig_dir, &new_dir] {
        fs_err::create_dir_all(d).expect("work dir");
    }
    fs_err::copy(file, &orig).expect("copy");
    fs_err::copy(file, &new).expect("copy");
    (orig, new)
}

/// How an executable is checked: `Ok(None)` for a shared object, else the method and the
/// flags to run it with (none for the loader trace), or why it cannot be checked.
fn method_of(
    file: &Path,
    kind: FileType,
    interpreter: Option<&str>,
    data: &[u8],
) -> Result<Option<(Method, Vec<&'static str>)>, String> {
    if kind != FileType::Exe {
        return Ok(None);
    }
    let flags = flags_of(file, data);
    if !flags.is_empty() {
        return Ok(Some((Method::Flags, flags)));
    }
    if glibc_loader(interpreter) {
        Ok(Some((Method::Trace, flags)))
    } else {
        Err(
            "not run (no evidence it takes --version/--help) and no glibc loader to trace it"
                .into(),
        )
    }
}

/// Applies `check` to every file on all cores, each worker with a directory of its own under
/// `work`; the results in the order of `files`.
pub(crate) fn parallel<T: Send>(
    files: &[PathBuf],
    work: &Path,
    check: impl Fn(&Path, &Path) -> T + Sync,
) -> Vec<(PathBuf, T)> {
    let next = Mutex::new(0usize);
    let results = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    std::thread::scope(|s| {
        for w in 0..workers {
            let (next, results, check) = (&next, &results, &check);
            s.spawn(move || {
                let dir = work.join(format!("w{w}"));
                loop {
                    let i = {
                        let mut n = next.lock().expect("lock");
                        *n += 1;
                        *n - 1
                    };
                    let Some(file) = files.get(i) else { break };
                    let result = check(file, &dir);
                    results.lock().expect("lock").push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("lock");
    results.sort_by_key(|r| r.0);
    results
        .into_iter()
        .map(|(i, r)| (files[i].clone(), r))
        .collect()
}
