use std::path::{Path, PathBuf};
use std::process::Output;

use rock_ci_test_support::{
    Fault, FaultPlan, FaultProxy, Rule, S3Server, assert_fails_with, files_under,
};

use crate::common::{HOST_PLATFORM, assert_ok, borrowed, native, run_tool, text, write};

fn run(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    run_tool(crate::common::tool("post_stage_upload"), args, env, cwd)
}

/// A stage's build dir: logs (raw ccache logs among them), ninja logs at two depths and the
/// manifest.
fn stage_build(root: &Path) -> PathBuf {
    let build = root.join("build");
    for (rel, content) in [
        ("logs/rocBLAS_build.log", "build log"),
        ("logs/rocBLAS_configure.log", "configure log"),
        ("logs/ccache/ccache.log", "ccache log"),
        ("logs/ccache/ccache_stats.log", "stats"),
        (".ninja_log", "# ninja log v6\n1\t2\t0\ta.o\tabc\n"),
        (
            "compiler/llvm/build/.ninja_log",
            "# ninja log v6\n3\t4\t0\tb.o\tdef\n",
        ),
        ("base/aux-overlay/build/therock_manifest.json", "{}"),
    ] {
        write(&build.join(rel), content);
    }
    build
}

fn members(archive: &Path) -> Vec<String> {
    let data = fs_err::read(archive).unwrap();
    let reader: Box<dyn std::io::Read> = if archive.extension().unwrap() == "gz" {
        Box::new(flate2::read::GzDecoder::new(&data[..]))
    } else {
        Box::new(zstd::stream::read::Decoder::new(&data[..]).unwrap())
    };
    tar::Archive::new(reader)
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect()
}

// Spec §18.10: a per-arch stage's keys; raw ccache logs stay local, their archive goes up;
// the manifest only with `compiler-runtime`.
#[test]
fn per_arch_stage_logs_go_to_stage_and_family() {
    let t = tempfile::tempdir().unwrap();
    let build = stage_build(t.path());
    let out = run(
        &[
            "--run-id",
            "12345",
            "--platform",
            "linux",
            "--stage",
            "math-libs",
            "--amdgpu-family",
            "gfx1151",
            "--output-dir",
            "staging",
        ],
        &[],
        t.path(),
    );
    assert_ok(&out);
    assert_eq!(
        files_under(&t.path().join("staging")),
        [
            "12345-linux/logs/math-libs/gfx1151/ccache_logs.tar.zst",
            "12345-linux/logs/math-libs/gfx1151/ninja_logs.tar.gz",
            "12345-linux/logs/math-libs/gfx1151/rocBLAS_build.log",
            "12345-linux/logs/math-libs/gfx1151/rocBLAS_configure.log",
        ]
    );
    assert_eq!(
        members(&build.join("logs/ninja_logs.tar.gz")),
        [".ninja_log", "compiler/llvm/build/.ninja_log"]
    );
    assert_eq!(
        members(&build.join("logs/ccache_logs.tar.zst")),
        ["ccache.log", "ccache_stats.log"]
    );
    // The sources stay.
    assert!(build.join("logs/ccache/ccache.log").is_file());
    let stdout = text(&out.stdout);
    for line in [
        "Creating log archives for stage 'math-libs'".to_owned(),
        format!("[+] Archived: {}", native("compiler/llvm/build/.ninja_log")),
        format!(
            "[INFO] Created ninja log archive: {} (2 files)",
            native("build/logs/ninja_logs.tar.gz")
        ),
        "[+] Archived ccache log: ccache_stats.log".to_owned(),
        "[INFO] Created ccache_logs.tar.zst (0MB from 2 files)".to_owned(),
        format!(
            "[INFO] Uploaded 4 log files to {} (0 unchanged)",
            native("staging/12345-linux/logs/math-libs/gfx1151")
        ),
    ] {
        assert!(stdout.contains(&line), "{line} not in\n{stdout}");
    }
    // The bucket resolution goes to stderr.
    assert!(text(&out.stderr).contains("  bucket: therock-ci-artifacts"));

    // compiler-runtime, no family: no family directory, and the manifest at the run's root;
    // the host's platform without the flag.
    let out = run(
        &[
            "--run-id",
            "12345",
            "--stage",
            "compiler-runtime",
            "--amdgpu-family=",
            "--output-dir",
            "staging2",
        ],
        &[],
        t.path(),
    );
    assert_ok(&out);
    let staged = files_under(&t.path().join(format!("staging2/12345-{HOST_PLATFORM}")));
    assert!(staged.contains(&"logs/compiler-runtime/rocBLAS_build.log".to_owned()));
    assert!(staged.contains(&"manifests/therock_manifest.json".to_owned()));
    assert_eq!(staged.len(), 5, "{staged:?}");
}

// Spec §18.10: a fork's root and the windows platform from the flag.
#[test]
fn fork_root_and_platform_flag() {
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("build/logs/build.log"), "x");
    let out = run(
        &[
            "--run-id",
            "12345",
            "--platform",
            "windows",
            "--stage",
            "math-libs",
            "--amdgpu-family",
            "gfx1151",
            "--output-dir",
            "staging",
        ],
        &[("GITHUB_REPOSITORY", "Fork/TheRock")],
        t.path(),
    );
    assert_ok(&out);
    assert_eq!(
        files_under(&t.path().join("staging")),
        ["Fork-TheRock/12345-windows/logs/math-libs/gfx1151/build.log"]
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("[INFO] No .ninja_log files found. Skipping archive."),
        "{stdout}"
    );
}

/// A log directory that is there but cannot be looked at (a symlink loop here; permissions
/// as another user) fails naming it, instead of being skipped as "not found".
#[cfg(unix)]
#[test]
fn an_unreadable_log_dir_is_an_error_naming_it() {
    let t = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(t.path().join("build")).unwrap();
    std::os::unix::fs::symlink("logs", t.path().join("build/logs")).unwrap();
    for bin in ["post_stage_upload", "post_build_upload"] {
        let args: &[&str] = if bin == "post_stage_upload" {
            &["--stage", "foundation", "--output-dir", "staging"]
        } else {
            &[
                "--artifact-group",
                "gfx94X-dcgpu",
                "--upload",
                "--run-id",
                "7",
                "--output-dir",
                "staging",
            ]
        };
        let out = run_tool(
            crate::common::tool(bin),
            args,
            &[("GITHUB_RUN_ID", "7")],
            t.path(),
        );
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{bin}: {said}");
        assert!(said.contains("build/logs"), "{bin}: {said}");
        assert!(!said.contains("Log directory"), "{bin}: {said}");
    }
}

/// A staged (`--output-dir`) upload that fails names the staged path, not an `s3://` key.
#[cfg(unix)]
#[test]
fn a_failed_staged_upload_names_the_staged_path() {
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("build/logs/a.log"), "log");
    // A directory where the log would be staged.
    fs_err::create_dir_all(t.path().join("staging/7-linux/logs/foundation/a.log")).unwrap();
    let out = run(
        &["--stage", "foundation", "--output-dir", "staging"],
        &[("GITHUB_RUN_ID", "7")],
        t.path(),
    );
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("  staging/7-linux/logs/foundation/a.log: "),
        "{said}"
    );
    assert!(!said.contains("s3://"), "{said}");
}

#[test]
fn nothing_to_do_and_usage_errors() {
    let t = tempfile::tempdir().unwrap();
    // A build dir without ninja logs or a logs dir: `logs/` is not created.
    fs_err::create_dir_all(t.path().join("build/sub")).unwrap();
    let out = run(
        &["--stage", "foundation", "--output-dir", "staging"],
        &[("GITHUB_RUN_ID", "7")],
        t.path(),
    );
    assert_ok(&out);
    assert!(!t.path().join("build/logs").exists());
    assert!(!t.path().join("staging").exists());
    assert!(text(&out.stdout).contains("Skipping upload."));
    // A missing build dir is fine (the job may have been cancelled before building).
    let out = run(
        &[
            "--run-id",
            "1",
            "--stage",
            "x",
            "--build-dir",
            "/nonexistent/path",
        ],
        &[],
        t.path(),
    );
    assert_ok(&out);
    assert!(
        text(&out.stdout).contains(&format!(
            "[INFO] Build directory not found: {}.",
            native("/nonexistent/path")
        )),
        "{}",
        text(&out.stdout)
    );

    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case<'_>] = &[
        (
            &["--stage", "x"],
            &[],
            "--run-id is required (or set $GITHUB_RUN_ID)",
        ),
        (
            &["--stage", "x"],
            &[("GITHUB_RUN_ID", "")],
            "--run-id is required",
        ),
        (&["--run-id", "1"], &[], "--stage"),
        (
            &["--run-id", "1", "--stage", "../x"],
            &[],
            "stage `../x` contains `/`",
        ),
        (
            &["--run-id", "1", "--stage", "s", "--amdgpu-family", ".."],
            &[],
            "family `..` is not a name",
        ),
        (
            &["--run-id", "1", "--stage", ""],
            &[],
            "the stage name is empty",
        ),
        (
            &["--run-id", "1", "--stage", "s", "--platform", "solaris"],
            &[],
            "solaris",
        ),
        (
            &["--run-id", "1", "--stage", "s", "--compression-level", "99"],
            &[],
            "99",
        ),
        (
            &["--run-id", "1", "--st", "s", "--o", "x"],
            &[],
            "ambiguous option: --o could match --output-dir, --overwrite",
        ),
    ];
    for (args, env, message) in cases {
        assert_fails_with(&run(args, env, t.path()), 2, message, &format!("{args:?}"));
    }
}

/// A dry run prints every planned upload and stages nothing; the archives are still written
/// (as the reference does).
#[test]
fn dry_run() {
    let t = tempfile::tempdir().unwrap();
    stage_build(t.path());
    let out = run(
        &[
            "--run-id",
            "3",
            "--stage",
            "compiler-runtime",
            "--output-dir",
            "staging",
            "--dry-run",
        ],
        &[],
        t.path(),
    );
    assert_ok(&out);
    let stdout = text(&out.stdout);
    let planned = stdout
        .lines()
        .filter(|l| l.starts_with("[DRY RUN] "))
        .count();
    // Two logs, two archives, the manifest.
    assert_eq!(planned, 5, "{stdout}");
    assert!(!t.path().join("staging").exists());
    assert!(t.path().join("build/logs/ninja_logs.tar.gz").is_file());
}

/// On S3, with content types; a log the server refuses is named, the rest (the manifest
/// too) still goes up; an archive that cannot be written is named, and the logs still go up.
#[test]
fn s3_uploads_what_it_can_and_names_what_it_could_not() {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let t = tempfile::tempdir().unwrap();
    stage_build(t.path());
    let aws = crate::common::aws_env(&server);
    let env = borrowed(&aws);
    let args = ["--run-id", "55", "--stage", "compiler-runtime"];
    let out = run(&args, &env, t.path());
    assert_ok(&out);
    let bucket = "therock-ci-artifacts";
    // The keys of runs 55 and 56 on the host's platform.
    let key = |run: u32, rel: &str| format!("{run}-{HOST_PLATFORM}/{rel}");
    for (rel, content_type) in [
        ("logs/compiler-runtime/rocBLAS_build.log", "text/plain"),
        (
            "logs/compiler-runtime/ninja_logs.tar.gz",
            "application/gzip",
        ),
        (
            "logs/compiler-runtime/ccache_logs.tar.zst",
            "application/zstd",
        ),
        ("manifests/therock_manifest.json", "application/json"),
    ] {
        let key = key(55, rel);
        assert_eq!(
            server.content_type(bucket, &key).as_deref(),
            Some(content_type),
            "{key}"
        );
    }
    assert!(
        !server
            .root()
            .join(bucket)
            .join(key(55, "logs/compiler-runtime/ccache"))
            .exists()
    );

    // Through a proxy that refuses one log every time, with the ccache archive's place taken
    // by a directory.
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Status500)
                .method("PUT")
                .path_contains("rocBLAS_configure.log"),
        ),
    );
    let endpoint = proxy.endpoint();
    let mut env = env.clone();
    env.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
    env.extend([
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("ROCK_CI_MAX_ATTEMPTS", "2"),
    ]);
    let build = t.path().join("build");
    fs_err::remove_file(build.join("logs/ccache_logs.tar.zst")).unwrap();
    fs_err::create_dir_all(build.join("logs/ccache_logs.tar.zst/x")).unwrap();
    write(&build.join("logs/late.log"), "late");
    fs_err::remove_file(
        server
            .root()
            .join(bucket)
            .join(key(55, "manifests/therock_manifest.json")),
    )
    .unwrap();
    let out = run(
        &["--run-id", "56", "--stage", "compiler-runtime"],
        &env,
        t.path(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&key(56, "logs/compiler-runtime/rocBLAS_configure.log")),
        "{err}"
    );
    assert!(err.contains("Failed to archive the ccache logs"), "{err}");
    let stored = server.root().join(bucket).join(key(56, ""));
    for rel in [
        "logs/compiler-runtime/late.log",
        "logs/compiler-runtime/rocBLAS_build.log",
        "logs/compiler-runtime/ninja_logs.tar.gz",
        "manifests/therock_manifest.json",
    ] {
        assert!(stored.join(rel).is_file(), "{rel} was not uploaded: {err}");
    }
    assert!(
        !stored
            .join("logs/compiler-runtime/rocBLAS_configure.log")
            .exists()
    );
}

/// A build dir on another drive than the working directory's, as TheRock's Windows jobs have
/// it (`B:\build`), given with `\` and as bash passes it (`B:/build`): the ninja logs and the
/// ccache logs below the build dir's `logs/ccache` are archived there and go up with the logs.
#[cfg(windows)]
#[test]
fn a_build_dir_on_another_drive() {
    let drive = crate::common::dir_on_drive_b("post-stage-");
    let build = stage_build(drive.path());
    let server = S3Server::start();
    let bucket = "therock-ci-artifacts";
    server.create_bucket(bucket);
    let aws = crate::common::aws_env(&server);
    let env = borrowed(&aws);
    let cwd = tempfile::tempdir().unwrap();
    let windows = build.to_str().unwrap().to_owned();
    let bash = windows.replace('\\', "/");
    assert!(
        windows.starts_with(r"B:\") && bash.starts_with("B:/"),
        "{windows}"
    );
    for (run_id, flag) in [("71", &windows), ("72", &bash)] {
        let out = run(
            &[
                "--run-id",
                run_id,
                "--stage",
                "math-libs",
                "--amdgpu-family",
                "gfx1151",
                "--build-dir",
                flag,
            ],
            &env,
            cwd.path(),
        );
        assert_ok(&out);
        let stdout = text(&out.stdout);
        for line in [
            format!(
                "[INFO] Created ninja log archive: {windows}\\logs\\ninja_logs.tar.gz (2 files)"
            ),
            r"[+] Archived: compiler\llvm\build\.ninja_log".to_owned(),
            "[+] Archived ccache log: ccache_stats.log".to_owned(),
            "[INFO] Created ccache_logs.tar.zst (0MB from 2 files)".to_owned(),
        ] {
            assert!(stdout.contains(&line), "{flag}: {line} not in\n{stdout}");
        }
        let stored = server
            .root()
            .join(bucket)
            .join(format!("{run_id}-windows/logs/math-libs/gfx1151"));
        assert_eq!(
            files_under(&stored),
            [
                "ccache_logs.tar.zst",
                "ninja_logs.tar.gz",
                "rocBLAS_build.log",
                "rocBLAS_configure.log",
            ],
            "{flag}"
        );
        assert_eq!(
            members(&stored.join("ccache_logs.tar.zst")),
            ["ccache.log", "ccache_stats.log"]
        );
        assert_eq!(
            members(&stored.join("ninja_logs.tar.gz")),
            [".ninja_log", "compiler/llvm/build/.ninja_log"]
        );
        assert_eq!(
            server
                .content_type(
                    bucket,
                    &format!("{run_id}-windows/logs/math-libs/gfx1151/ccache_logs.tar.zst")
                )
                .as_deref(),
            Some("application/zstd")
        );
    }
    // Nothing was written in the working directory.
    assert!(files_under(cwd.path()).is_empty());
}

// A stage the topology does not define is a usage error naming the defined ones; nothing is
// archived or uploaded. Without a topology to ask, the stage is used as given, with a warning.
#[test]
fn unknown_stage_is_a_usage_error_when_the_topology_is_found() {
    let t = tempfile::tempdir().unwrap();
    let build = stage_build(t.path());
    write(
        &t.path().join("BUILD_TOPOLOGY.toml"),
        crate::artifact_manager::TOPOLOGY,
    );
    let args = |stage: &'static str| {
        [
            "--run-id",
            "12345",
            "--platform",
            "linux",
            "--stage",
            stage,
            "--output-dir",
            "staging",
        ]
    };
    let out = run(&args("bogus"), &[], t.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("'bogus'") && stderr.contains("foundation, libs, consumers"),
        "{stderr}"
    );
    assert!(!t.path().join("staging").exists());
    assert!(!build.join("logs/ninja_logs.tar.gz").exists());

    assert_ok(&run(&args("libs"), &[], t.path()));
    assert!(t.path().join("staging/12345-linux/logs/libs").is_dir());

    // A topology named explicitly must load.
    let mut missing = args("libs").to_vec();
    missing.extend(["--therock-dir", "no-checkout"]);
    let out = run(&missing, &[], t.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no-checkout"),
        "{}",
        text(&out.stderr)
    );

    // None found from the working directory: the reference's behaviour, with a warning.
    fs_err::remove_file(t.path().join("BUILD_TOPOLOGY.toml")).unwrap();
    let out = run(&args("bogus"), &[], t.path());
    assert_ok(&out);
    assert!(
        text(&out.stderr).contains("--stage 'bogus' not checked"),
        "{}",
        text(&out.stderr)
    );
}

/// An output directory that is a file: every log fails for that one reason, which the error
/// gives once, with the count and the first names, not a line per file.
#[test]
fn one_cause_of_many_failures_is_told_once() {
    let t = tempfile::tempdir().unwrap();
    for i in 0..40 {
        write(&t.path().join(format!("build/logs/part{i:02}.log")), "log");
    }
    write(&t.path().join("staging"), "a file, not a directory");
    let out = run(
        &[
            "--run-id",
            "5",
            "--stage",
            "math-libs",
            "--output-dir",
            "staging",
        ],
        &[],
        t.path(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for shown in [&stdout, &stderr] {
        assert!(shown.contains("Failed to upload 40/40 files:"), "{shown}");
        let lines: Vec<&str> = shown.lines().filter(|l| l.contains("part")).collect();
        assert!(
            matches!(lines[..], [line] if line.starts_with("  40 files (`") && line.contains("part02.log` and 37 more): ")),
            "{lines:#?}"
        );
    }
}
