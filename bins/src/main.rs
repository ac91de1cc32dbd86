//! `rock-ci`: every S3 and packaging tool in one binary, for the Python wheel (one copy of the
//! S3 client instead of one per tool). `rock-ci TOOL ARGS...` runs TOOL as if it had been
//! called by its own name, and so does a link or copy of this binary named after a tool;
//! `rock-ci --list` prints the tool names, and `rock-ci --link-tools DIR` puts a link per tool
//! in DIR (what `cargo install` users run once to have every tool on PATH by its own name).

use std::ffi::OsString;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

mod tools;

use tools::{TOOLS, tool};

fn usage() -> String {
    let names: Vec<&str> = TOOLS.iter().map(|(n, _)| *n).collect();
    format!(
        "usage: rock-ci TOOL [ARGS...]\n       rock-ci --list | --version\n       rock-ci --link-tools DIR\n       rock-ci --check-args TOOL [ARGS...]\n\ntools: {}\n",
        names.join(", ")
    )
}

fn main() -> ExitCode {
    return_large_blocks_to_the_system();
    let args: Vec<OsString> = std::env::args_os().collect();
    // Called by a tool's name (a link, a copy): that tool, with the process's arguments.
    let invoked = args
        .first()
        .and_then(|a| invoked_name(Path::new(a)))
        .unwrap_or_default();
    if let Some(main) = tool(invoked) {
        // Named in usage lines as called, without the `.exe` a Windows argv[0] has.
        let mut own = vec![OsString::from(invoked)];
        own.extend(args.iter().skip(1).cloned());
        rock_ci::set_invocation(own);
        return main();
    }
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let Some(first) = args.get(1) else {
        let _ = write!(stderr, "{}", usage());
        return ExitCode::from(2);
    };
    match first.to_str().unwrap_or_default() {
        "--list" => {
            for (name, _) in TOOLS {
                let _ = writeln!(stdout, "{name}");
            }
            ExitCode::SUCCESS
        }
        "-V" | "--version" => {
            let _ = writeln!(stdout, "rock-ci {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        "--link-tools" => {
            let [_, _, dir] = &args[..] else {
                let _ = write!(
                    stderr,
                    "rock-ci: --link-tools takes one directory\n{}",
                    usage()
                );
                return ExitCode::from(2);
            };
            match link_tools(Path::new(dir)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    let mut message = error.to_string();
                    let mut cause = error.source();
                    while let Some(c) = cause {
                        message = format!("{message}: {c}");
                        cause = c.source();
                    }
                    let _ = writeln!(stderr, "rock-ci: --link-tools {}: {message}", dir.display());
                    ExitCode::FAILURE
                }
            }
        }
        // The command line parsed as TOOL parses it, without running the tool: exit 0, or
        // the usage error (exit 2).
        "--check-args" => {
            if let Some(main) = args.get(2).and_then(|name| tool(name.to_str()?)) {
                drop((stdout, stderr));
                rock_ci::set_check_only();
                rock_ci::set_invocation(args[2..].to_vec());
                main()
            } else {
                let _ = write!(
                    stderr,
                    "rock-ci: --check-args takes a tool's name first\n{}",
                    usage()
                );
                ExitCode::from(2)
            }
        }
        "-h" | "--help" => {
            let _ = write!(stdout, "{}", usage());
            ExitCode::SUCCESS
        }
        name => {
            if let Some(main) = tool(name) {
                drop((stdout, stderr));
                rock_ci::set_invocation(args[1..].to_vec());
                return main();
            }
            let _ = write!(stderr, "rock-ci: unknown tool {name:?}\n{}", usage());
            ExitCode::from(2)
        }
    }
}

/// Makes glibc give every block of 2 MiB and more its own mapping, returned to the system when
/// freed. By default glibc raises that threshold to the largest block freed so far (up to
/// 32 MiB) and serves later blocks of that size from its per-thread heaps, where freed memory
/// stays resident, scattered over one heap per thread: a tool whose large buffers come and go
/// on several threads (zstd frames, gzip blocks, ranged GET bodies, wheel entries) then holds
/// far more than it uses. Peaks with the default and with this (docs/benchmarks.md, medians):
/// `artifact_manager push` 238 → 107 MiB, `build_tarballs` of tiny files 231 → 99 MiB,
/// `build_python_packages` 126 → 60 MiB; none of them slower.
fn return_large_blocks_to_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(
        unsafe_code,
        reason = "mallopt only sets an allocator parameter, before the tool starts its threads"
    )]
    // SAFETY: `mallopt` takes plain integers; it is called before the tool starts any thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 2 << 20);
    }
}

/// The name this binary was called by: the file name of `argv[0]`, on Windows without its
/// `.exe` (any case).
fn invoked_name(argv0: &Path) -> Option<&str> {
    let name = argv0.file_name()?.to_str()?;
    if cfg!(windows)
        && let Some(stem) = name
            .len()
            .checked_sub(4)
            .filter(|&i| name.is_char_boundary(i) && name[i..].eq_ignore_ascii_case(".exe"))
    {
        return Some(&name[..stem]);
    }
    Some(name)
}

/// A link named after each tool in `dir` (created if missing), each put in place of whatever
/// had the tool's name (an older link, a per-tool binary) without the name ever missing: on
/// Unix a symbolic link to this binary by its absolute path; on Windows, where symbolic links
/// need a privilege and programs are found by their `.exe`, a hard link `TOOL.exe` (a copy
/// where the file system has no hard links).
fn link_tools(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?.canonicalize()?;
    for (name, _) in TOOLS {
        #[cfg(not(windows))]
        file_tree::symlink_replacing(&exe, &dir.join(name))?;
        #[cfg(windows)]
        file_tree::hard_link_replacing(&exe, &dir.join(format!("{name}.exe")))?;
    }
    Ok(())
}
