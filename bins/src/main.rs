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
        "usage: rock-ci TOOL [ARGS...]\n       rock-ci --list | --version\n       rock-ci --link-tools DIR\n\ntools: {}\n",
        names.join(", ")
    )
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // Called by a tool's name (a link, a copy): that tool, with the process's arguments.
    let invoked = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if let Some(main) = tool(invoked) {
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
                    let _ = writeln!(stderr, "rock-ci: --link-tools {}: {error}", dir.display());
                    ExitCode::FAILURE
                }
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

/// A symbolic link named after each tool in `dir` (created if missing), to this binary by its
/// absolute path. Each link is made under a temporary name and renamed over whatever had the
/// tool's name (an older link, a per-tool binary), so no tool is ever missing from `dir`.
fn link_tools(dir: &Path) -> std::io::Result<()> {
    let exe = std::env::current_exe()?.canonicalize()?;
    fs_err::create_dir_all(dir)?;
    for (name, _) in TOOLS {
        let target = dir.join(name);
        let temp = dir.join(format!(".{name}.{}.rock-ci-link", std::process::id()));
        let _ = fs_err::remove_file(&temp);
        fs_err::os::unix::fs::symlink(&exe, &temp)?;
        if let Err(error) = fs_err::rename(&temp, &target) {
            let _ = fs_err::remove_file(&temp);
            return Err(error);
        }
    }
    Ok(())
}
