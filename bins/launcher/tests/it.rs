//! The launcher run under a tool's name beside a stand-in `rock-ci` that reports what it was
//! given: the tool name first, then every argument as given, and its exit code passed back.
//! The stand-in is this test program itself, copied as `rock-ci` (`rock-ci.exe` on Windows):
//! started under that name it prints its arguments and exits with 7, so the tests run as they
//! are on every system, with no shell script (Windows, where the launcher ships, has none).

#![expect(
    clippy::print_stdout,
    reason = "the stand-in prints what it was given; the runner prints its results"
)]

use std::path::Path;
use std::process::{Command, ExitCode};

const EXE: &str = std::env::consts::EXE_SUFFIX;

fn main() -> ExitCode {
    let me = std::env::current_exe().unwrap();
    if me.file_stem().is_some_and(|s| s == "rock-ci") {
        for arg in std::env::args().skip(1) {
            print!("[{arg}]");
        }
        println!();
        return ExitCode::from(7);
    }
    let tests: [(&str, fn()); 2] = [
        (
            "runs_the_rock_ci_beside_it_as_the_tool",
            runs_the_rock_ci_beside_it_as_the_tool,
        ),
        (
            "a_missing_rock_ci_is_a_clear_error",
            a_missing_rock_ci_is_a_clear_error,
        ),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut ran = 0;
    for (name, test) in tests {
        if filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())) {
            test();
            println!("test {name} ... ok");
            ran += 1;
        }
    }
    println!("\ntest result: ok. {ran} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n");
    ExitCode::SUCCESS
}

/// Copies the launcher into `dir` as `tool`.
fn launcher_as(dir: &Path, tool: &str) -> std::path::PathBuf {
    let launcher = dir.join(format!("{tool}{EXE}"));
    fs_err::copy(env!("CARGO_BIN_EXE_rock-ci-launcher"), &launcher).unwrap();
    launcher
}

fn runs_the_rock_ci_beside_it_as_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::copy(
        std::env::current_exe().unwrap(),
        dir.path().join(format!("rock-ci{EXE}")),
    )
    .unwrap();
    let launcher = launcher_as(dir.path(), "fetch_artifacts");
    let out = Command::new(&launcher)
        .args(["--run-id", "12 34", "", "a\"b", "c\\"])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "[fetch_artifacts][--run-id][12 34][][a\"b][c\\]"
    );
    assert_eq!(out.status.code(), Some(7));
}

fn a_missing_rock_ci_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = launcher_as(dir.path(), "artifact_manager");
    let out = Command::new(&launcher)
        .arg("--help")
        .env_clear()
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot run rock-ci{EXE} for artifact_manager")),
        "{stderr}"
    );
}
