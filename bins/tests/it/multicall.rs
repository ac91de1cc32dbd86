//! The `rock-ci` binary the wheel ships: each tool by subcommand and by the name it runs as,
//! with the same output as the tool's own binary.

use std::path::Path;
use std::process::{Command, Output};

const ROCK_CI: &str = env!("CARGO_BIN_EXE_rock-ci");

/// Every tool of the multi-call binary, with its own binary (built with the default features).
const TOOLS: &[(&str, &str)] = &[
    ("artifact_manager", env!("CARGO_BIN_EXE_artifact_manager")),
    (
        "build_python_packages",
        env!("CARGO_BIN_EXE_build_python_packages"),
    ),
    ("ci_layout", env!("CARGO_BIN_EXE_ci_layout")),
    ("fetch_artifacts", env!("CARGO_BIN_EXE_fetch_artifacts")),
    (
        "find_artifacts_for_commit",
        env!("CARGO_BIN_EXE_find_artifacts_for_commit"),
    ),
    (
        "find_latest_artifacts",
        env!("CARGO_BIN_EXE_find_latest_artifacts"),
    ),
    (
        "install_rocm_from_artifacts",
        env!("CARGO_BIN_EXE_install_rocm_from_artifacts"),
    ),
    ("post_build_upload", env!("CARGO_BIN_EXE_post_build_upload")),
    ("post_stage_upload", env!("CARGO_BIN_EXE_post_stage_upload")),
    (
        "upload_package_repo",
        env!("CARGO_BIN_EXE_upload_package_repo"),
    ),
    (
        "upload_python_packages",
        env!("CARGO_BIN_EXE_upload_python_packages"),
    ),
    ("upload_tarballs", env!("CARGO_BIN_EXE_upload_tarballs")),
    (
        "write_artifacts_bucket_info",
        env!("CARGO_BIN_EXE_write_artifacts_bucket_info"),
    ),
];

fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env_clear()
        .output()
        .unwrap()
}

/// stdout and stderr, with the program's own path replaced by its name.
fn shown(out: &Output, program: &Path, name: &str) -> (Option<i32>, String, String) {
    let text = |b: &[u8]| String::from_utf8_lossy(b).replace(program.to_str().unwrap(), name);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn lists_exactly_the_tools() {
    let out = run(Path::new(ROCK_CI), &["--list"]);
    assert!(out.status.success());
    let listed: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let want: Vec<&str> = TOOLS.iter().map(|(n, _)| *n).collect();
    assert_eq!(listed, want);
}

#[test]
fn each_tool_by_subcommand_and_by_name_answers_as_its_own_binary() {
    let dir = tempfile::tempdir().unwrap();
    for (name, own) in TOOLS {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(ROCK_CI, &link).unwrap();
        for args in [&["--help"][..], &["--version"], &["--no-such-flag"]] {
            let own_out = run(Path::new(own), args);
            let want = shown(&own_out, Path::new(own), name);
            let by_name = run(&link, args);
            assert_eq!(
                shown(&by_name, &link, name),
                want,
                "{name} {args:?} run by name"
            );
            let mut sub = vec![*name];
            sub.extend_from_slice(args);
            let by_sub = run(Path::new(ROCK_CI), &sub);
            assert_eq!(
                shown(&by_sub, Path::new(ROCK_CI), name),
                want,
                "rock-ci {name} {args:?}"
            );
        }
    }
}

#[test]
fn abbreviated_flags_work_through_the_subcommand() {
    let full = run(
        Path::new(env!("CARGO_BIN_EXE_ci_layout")),
        &["--run-id", "7", "--platform", "linux", "-q"],
    );
    let abbreviated = run(
        Path::new(ROCK_CI),
        &["ci_layout", "--run-i", "7", "--plat", "linux", "-q"],
    );
    assert!(
        full.status.success(),
        "{}",
        String::from_utf8_lossy(&full.stderr)
    );
    assert_eq!(abbreviated.status.code(), Some(0));
    assert_eq!(abbreviated.stdout, full.stdout);
}

#[test]
fn unknown_tool_and_no_tool_are_usage_errors() {
    let out = run(Path::new(ROCK_CI), &["fetch_artefacts"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown tool \"fetch_artefacts\""), "{err}");
    assert!(err.contains("fetch_artifacts"), "{err}");
    let out = run(Path::new(ROCK_CI), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("usage: rock-ci TOOL"));
}

#[test]
fn the_wheel_has_one_launcher_per_tool_and_nothing_else() {
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("wheel-data/scripts");
    let mut found: Vec<String> = fs_err::read_dir(&scripts)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    found.sort();
    let want: Vec<&str> = TOOLS.iter().map(|(n, _)| *n).collect();
    assert_eq!(found, want);
    for (name, _) in TOOLS {
        let path = scripts.join(name);
        let text = fs_err::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!("#!/bin/sh\nexec \"${{0%/*}}/rock-ci\" {name} \"$@\"\n"),
            "{}",
            path.display()
        );
        let mode = std::os::unix::fs::PermissionsExt::mode(&path.metadata().unwrap().permissions());
        assert_eq!(mode & 0o111, 0o111, "{} is not executable", path.display());
    }
}

#[test]
fn a_launcher_runs_its_tool_from_the_directory_it_is_in() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::copy(ROCK_CI, dir.path().join("rock-ci")).unwrap();
    let launcher = dir.path().join("ci_layout");
    fs_err::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("wheel-data/scripts/ci_layout"),
        &launcher,
    )
    .unwrap();
    let args = ["--run-id", "7", "--platform", "linux", "-q"];
    let via = run(&launcher, &args);
    let own = run(Path::new(env!("CARGO_BIN_EXE_ci_layout")), &args);
    assert!(own.status.success());
    assert_eq!(
        via.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&via.stderr)
    );
    assert_eq!(via.stdout, own.stdout);
}
