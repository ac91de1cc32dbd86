//! The launcher run under a tool's name beside a stand-in `rock-ci` that reports what it was
//! given: the tool name first, then every argument as given, and its exit code passed back.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;
use std::sync::Mutex;

/// Held by each test from writing its executables to running them: a child forked by one test
/// holds, until it execs, the write handles another test has open on a file it is about to run,
/// and running a file open for writing fails with "Text file busy".
static WRITE_THEN_RUN: Mutex<()> = Mutex::new(());

#[test]
fn runs_the_rock_ci_beside_it_as_the_tool() {
    let _serial = WRITE_THEN_RUN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let rock_ci = dir.path().join("rock-ci");
    fs_err::write(
        &rock_ci,
        "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done\necho\nexit 7\n",
    )
    .unwrap();
    fs_err::set_permissions(&rock_ci, std::fs::Permissions::from_mode(0o755)).unwrap();
    let launcher = dir.path().join("fetch_artifacts");
    fs_err::copy(env!("CARGO_BIN_EXE_rock-ci-launcher"), &launcher).unwrap();
    let out = Command::new(&launcher)
        .args(["--run-id", "12 34", ""])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[fetch_artifacts][--run-id][12 34][]\n"
    );
    assert_eq!(out.status.code(), Some(7));
}

#[test]
fn a_missing_rock_ci_is_a_clear_error() {
    let _serial = WRITE_THEN_RUN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let launcher = dir.path().join("artifact_manager");
    fs_err::copy(env!("CARGO_BIN_EXE_rock-ci-launcher"), &launcher).unwrap();
    let out = Command::new(&launcher)
        .arg("--help")
        .env_clear()
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot run rock-ci for artifact_manager"),
        "{stderr}"
    );
}
