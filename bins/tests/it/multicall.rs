//! The `rock-ci` binary: each tool by subcommand and by the name it runs as (a link made by
//! `rock-ci --link-tools`, or the wheel's launcher), with the same answers either way.

use crate::common::Launch as _;
use std::env::consts::EXE_SUFFIX;
use std::path::Path;
use std::process::{Command, Output};

const ROCK_CI: &str = env!("CARGO_BIN_EXE_rock-ci");

/// Every tool of the multi-call binary.
const TOOLS: &[&str] = &[
    "artifact_manager",
    "build_python_packages",
    "build_tarballs",
    "ci_layout",
    "fetch_artifacts",
    "find_artifacts_for_commit",
    "find_latest_artifacts",
    "install_rocm_from_artifacts",
    "post_build_upload",
    "post_stage_upload",
    "publish_jax_to_release_bucket",
    "publish_pytorch_to_release_bucket",
    "publish_rocm_to_release_buckets",
    "upload_package_repo",
    "upload_python_packages",
    "upload_tarballs",
    "upload_test_report_script",
    "write_artifacts_bucket_info",
    "write_product_release_bucket_info",
];

/// Runs `program`. A program copied by this test process may be briefly "busy" (`ETXTBSY`)
/// while a child forked by another test still holds the copy's write handle: tried again.
fn run(program: &Path, args: &[&str]) -> Output {
    let mut tries = 0;
    loop {
        match Command::new(program).args(args).env_clear().run_output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            result => return result.unwrap(),
        }
    }
}

/// Exit code, stdout and stderr, with the program's own path replaced by its name.
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
    assert_eq!(listed, TOOLS);
}

#[test]
fn each_tool_by_subcommand_and_by_name_answers_as_itself() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        Path::new(ROCK_CI),
        &["--link-tools", dir.path().to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Read once: a debug build of rock-ci.exe is over 100 MB.
    let rock_ci = if cfg!(windows) {
        fs_err::read(ROCK_CI).unwrap()
    } else {
        Vec::new()
    };
    let rock_ci = &rock_ci;
    // One thread per tool: 108 processes in all, each slow to start under Wine.
    std::thread::scope(|threads| {
        for name in TOOLS {
            let dir = dir.path();
            threads.spawn(move || {
                let link = dir.join(format!("{name}{EXE_SUFFIX}"));
                if cfg!(windows) {
                    // A hard link to rock-ci.exe, or a copy where the file system has none.
                    assert_eq!(fs_err::read(&link).unwrap(), *rock_ci, "{}", link.display());
                } else {
                    assert_eq!(
                        fs_err::read_link(&link).unwrap(),
                        Path::new(ROCK_CI).canonicalize().unwrap()
                    );
                }
                for args in [&["--help"][..], &["--version"], &["--no-such-flag"]] {
                    let by_name = run(&link, args);
                    let shown_by_name = shown(&by_name, &link, name);
                    let mut sub = vec![*name];
                    sub.extend_from_slice(args);
                    let by_sub = run(Path::new(ROCK_CI), &sub);
                    assert_eq!(
                        shown(&by_sub, Path::new(ROCK_CI), name),
                        shown_by_name,
                        "rock-ci {name} {args:?} and {name} {args:?}"
                    );
                    let (code, stdout, stderr) = shown_by_name;
                    match args[0] {
                        "--help" => {
                            assert_eq!(code, Some(0), "{name} --help: {stderr}");
                            assert!(
                                stdout.contains(&format!("sage: {name}")),
                                "{name} --help names another program:\n{stdout}"
                            );
                        }
                        // The reference's `--version VALUE` is the version of the packages
                        // it builds.
                        "--version" if *name == "build_python_packages" => {
                            assert_eq!(code, Some(2), "{name} --version without a value");
                            assert!(stderr.contains("--version <VERSION>"), "{stderr}");
                        }
                        "--version" => {
                            assert_eq!(code, Some(0), "{name} --version: {stderr}");
                            assert_eq!(
                                stdout,
                                format!("{name} {}\n", env!("CARGO_PKG_VERSION")),
                                "{name} --version names another program"
                            );
                        }
                        _ => {
                            assert_eq!(code, Some(2), "{name} --no-such-flag");
                            assert!(stderr.contains("--no-such-flag"), "{name}: {stderr}");
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn link_tools_replaces_what_had_a_tool_name_and_leaves_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join(format!("fetch_artifacts{EXE_SUFFIX}"));
    fs_err::write(&stale, "an older per-tool binary").unwrap();
    let other = dir.path().join("s5cmd");
    fs_err::write(&other, "not ours").unwrap();
    let out = run(
        Path::new(ROCK_CI),
        &["--link-tools", dir.path().to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if cfg!(windows) {
        assert_eq!(
            fs_err::read(&stale).unwrap(),
            fs_err::read(ROCK_CI).unwrap()
        );
    } else {
        assert!(stale.symlink_metadata().unwrap().file_type().is_symlink());
    }
    assert_eq!(fs_err::read_to_string(&other).unwrap(), "not ours");
    let mut names: Vec<String> = fs_err::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want: Vec<String> = TOOLS.iter().map(|n| format!("{n}{EXE_SUFFIX}")).collect();
    want.push("s5cmd".to_owned());
    want.sort();
    assert_eq!(names, want, "no temporary names are left behind");

    let usage = run(Path::new(ROCK_CI), &["--link-tools"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("--link-tools takes one directory"));
    let blocked = dir.path().join("s5cmd").join("sub");
    let failed = run(
        Path::new(ROCK_CI),
        &["--link-tools", blocked.to_str().unwrap()],
    );
    assert_eq!(failed.status.code(), Some(1));
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(err.contains(blocked.to_str().unwrap()), "{err}");
}

#[test]
fn abbreviated_flags_work_through_the_subcommand() {
    let full = run(
        Path::new(ROCK_CI),
        &["ci_layout", "--run-id", "7", "--platform", "linux", "-q"],
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
    assert!(!full.stdout.is_empty());
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

/// The wheel's launcher of `name`.
#[cfg(unix)]
fn launcher(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("wheel-data/scripts")
        .join(name)
}

// The manylinux wheel's launchers are sh scripts, run by /bin/sh and through symlinks.
#[cfg(unix)]
#[test]
fn the_wheel_has_one_launcher_per_tool_and_nothing_else() {
    let scripts = launcher("");
    let mut found: Vec<String> = fs_err::read_dir(&scripts)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    found.sort();
    assert_eq!(found, TOOLS);
    let first = fs_err::read_to_string(launcher(TOOLS[0])).unwrap();
    for name in TOOLS {
        let path = launcher(name);
        let text = fs_err::read_to_string(&path).unwrap();
        assert!(text.starts_with("#!/bin/sh\n"), "{}", path.display());
        // The same script but for the tool's name.
        assert_eq!(
            text.replace(name, "TOOL"),
            first.replace(TOOLS[0], "TOOL"),
            "{}",
            path.display()
        );
        let mode = std::os::unix::fs::PermissionsExt::mode(&path.metadata().unwrap().permissions());
        assert_eq!(mode & 0o111, 0o111, "{} is not executable", path.display());
    }
}

// The manylinux wheel's launchers are sh scripts, run by /bin/sh and through symlinks.
#[cfg(unix)]
#[test]
fn a_launcher_runs_its_tool_however_it_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("venv/bin");
    fs_err::create_dir_all(&bin).unwrap();
    fs_err::copy(ROCK_CI, bin.join("rock-ci")).unwrap();
    let installed = bin.join("ci_layout");
    fs_err::copy(launcher("ci_layout"), &installed).unwrap();
    // Linked from another directory (as pipx and users link tools into ~/.local/bin), by an
    // absolute and by a relative link, and a link to that link.
    let home_bin = dir.path().join("home/bin");
    fs_err::create_dir_all(&home_bin).unwrap();
    std::os::unix::fs::symlink(&installed, home_bin.join("ci_layout")).unwrap();
    std::os::unix::fs::symlink("../../venv/bin/ci_layout", home_bin.join("relative")).unwrap();
    std::os::unix::fs::symlink("relative", home_bin.join("chained")).unwrap();
    let args = ["--run-id", "7", "--platform", "linux", "-q"];
    let mut sub = vec!["ci_layout"];
    sub.extend_from_slice(&args);
    let own = run(Path::new(ROCK_CI), &sub);
    assert!(own.status.success());
    assert!(!own.stdout.is_empty());
    let sh = |script: &str, cwd: &Path| {
        Command::new("/bin/sh")
            .arg(script)
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .run_output()
            .unwrap()
    };
    let runs = [
        ("the launcher", run(&installed, &args)),
        ("a link to it", run(&home_bin.join("ci_layout"), &args)),
        ("a relative link", run(&home_bin.join("relative"), &args)),
        ("a link to a link", run(&home_bin.join("chained"), &args)),
        ("sh ci_layout", sh("ci_layout", &bin)),
        (
            "sh with its path",
            sh(installed.to_str().unwrap(), dir.path()),
        ),
        ("sh with a link", sh("chained", &home_bin)),
    ];
    for (how, via) in runs {
        assert_eq!(
            via.status.code(),
            Some(0),
            "{how}: {}",
            String::from_utf8_lossy(&via.stderr)
        );
        assert_eq!(via.stdout, own.stdout, "{how}");
    }
}
