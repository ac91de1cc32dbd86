//! A tool launcher: run as `{tool}` (its file name without extension), it runs `rock-ci {tool}`
//! with its own arguments, standard streams and environment, and exits with rock-ci's exit code.
//! It looks for rock-ci beside itself (through any link to it), else on `PATH`. The Windows
//! wheel ships one copy of it per tool, where the Linux wheel ships a `sh` launcher.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The rock-ci executable's file name on this system.
const ROCK_CI: &str = if cfg!(windows) {
    "rock-ci.exe"
} else {
    "rock-ci"
};

/// The tool a launcher at `exe` stands for: its file name without the extension.
fn tool_of(exe: &Path) -> Option<OsString> {
    exe.file_stem().map(std::ffi::OsStr::to_os_string)
}

/// The rock-ci beside the launcher at `exe` when there is one, else `rock-ci` (found on
/// `PATH` by the system).
fn rock_ci_for(exe: &Path) -> PathBuf {
    let beside = exe.with_file_name(ROCK_CI);
    if beside.is_file() {
        beside
    } else {
        PathBuf::from(ROCK_CI)
    }
}

fn main() -> ExitCode {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize().or(Ok(p)))
        .unwrap_or_else(|_| PathBuf::from(std::env::args_os().next().unwrap_or_default()));
    let Some(tool) = tool_of(&exe) else {
        let _ = writeln!(
            std::io::stderr(),
            "error: cannot tell which tool {} stands for",
            exe.display()
        );
        return ExitCode::from(2);
    };
    let rock_ci = rock_ci_for(&exe);
    match Command::new(&rock_ci)
        .arg(&tool)
        .args(std::env::args_os().skip(1))
        .status()
    {
        // A status without a code (a signal on unix), or one that does not fit an exit code
        // here (a Windows crash status), is a failure.
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1))),
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "error: cannot run {} for {}: {e}",
                rock_ci.display(),
                tool.to_string_lossy()
            );
            ExitCode::from(127)
        }
    }
}

#[cfg(test)]
mod tests;
