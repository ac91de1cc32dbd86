use crate::common::Launch as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rock_ci_test_support::{S3Server, assert_fails_with, files_under};

use crate::common::{HOST_PLATFORM, native};

const GROUP: &str = "gfx94X-dcgpu";

fn write(path: &Path, content: &str) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

/// A build dir with logs, ninja logs at two depths, ccache logs, a profile and a manifest.
fn build_tree(root: &Path) -> PathBuf {
    let build = root.join("build");
    for (rel, content) in [
        ("logs/build.log", "build log"),
        ("logs/index.html", "<html/>"),
        ("logs/ccache/ccache.log", "ccache log"),
        ("logs/ccache/stats.txt", "stats"),
        (
            "logs/therock-build-prof/comp-summary.html",
            "<html>prof</html>",
        ),
        ("logs/therock-build-prof/comp-summary.md", "# prof"),
        (".ninja_log", "# ninja log v6\n1\t2\t0\ta.o\tabc\n"),
        (
            "compiler/llvm/build/.ninja_log",
            "# ninja log v6\n3\t4\t0\tb.o\tdef\n",
        ),
        (
            "base/aux-overlay/build/therock_manifest.json",
            "{\"manifest\": true}",
        ),
    ] {
        write(&build.join(rel), content);
    }
    build
}

fn run(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    Command::new(crate::common::tool("post_build_upload"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .current_dir(cwd)
        .run_output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The step summary [`stage_run`] writes below `dir`.
fn summary_path(dir: &Path) -> PathBuf {
    dir.join("summary.md")
}

/// Uploads the build below `dir` as run 12345 into `dir/staging`, reporting `job_status`, with
/// the step summary at [`summary_path`] and `env` added.
fn stage_run(dir: &Path, job_status: &str, env: &[(&str, &str)]) -> Output {
    let summary = summary_path(dir);
    let mut env = env.to_vec();
    env.push(("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()));
    run(
        &[
            "--artifact-group",
            GROUP,
            "--upload",
            "--run-id",
            "12345",
            "--output-dir",
            "staging",
            "--job-status",
            job_status,
        ],
        &env,
        dir,
    )
}

// Spec §18.9: the layout in a local staging dir.
#[test]
fn uploads_logs_and_manifest_to_the_group_layout() {
    let t = tempfile::tempdir().unwrap();
    build_tree(t.path());
    write(
        &t.path().join("build/logs/build_observability.html"),
        "<html>obs</html>",
    );
    let out = stage_run(t.path(), "success", &[]);
    let summary = summary_path(t.path());
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let staged = files_under(&t.path().join(format!("staging/12345-{HOST_PLATFORM}")));
    let logs = format!("logs/{GROUP}");
    let expected = [
        format!("{logs}/build.log"),
        format!("{logs}/build_observability.html"),
        format!("{logs}/ccache_logs.tar.zst"),
        format!("{logs}/comp-summary.html"),
        format!("{logs}/comp-summary.md"),
        format!("{logs}/index.html"),
        format!("{logs}/ninja_logs.tar.gz"),
        format!("{logs}/therock-build-prof/comp-summary.html"),
        format!("{logs}/therock-build-prof/comp-summary.md"),
        format!("manifests/{GROUP}/therock_manifest.json"),
    ];
    assert_eq!(staged, expected);

    // The ninja archive: arcnames relative to the build dir, sorted.
    let gz = fs_err::read(t.path().join("build/logs/ninja_logs.tar.gz")).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&gz[..]));
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert_eq!(names, [".ninja_log", "compiler/llvm/build/.ninja_log"]);
    // The ccache archive: the files of logs/ccache, sorted, by name.
    let zst = fs_err::read(t.path().join("build/logs/ccache_logs.tar.zst")).unwrap();
    let mut archive = tar::Archive::new(zstd::stream::read::Decoder::new(&zst[..]).unwrap());
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert_eq!(names, ["ccache.log", "stats.txt"]);

    // Staged locally: the links are the staged files (the run's index page was not staged:
    // its directory).
    let base = std::path::absolute(t.path().join(format!("staging/12345-{HOST_PLATFORM}")))
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/");
    assert_eq!(
        fs_err::read_to_string(&summary).unwrap(),
        format!(
            "[Build Logs](<{base}/logs/{GROUP}/index.html>)\n\n[Build Observability](<{base}/logs/{GROUP}/build_observability.html>)\n\n[Artifacts](<{base}>)\n\n[TheRock Manifest](<{base}/manifests/{GROUP}/therock_manifest.json>)\n\n"
        )
    );
    let stdout = text(&out.stdout);
    for line in [
        "Creating Ninja log archive",
        "[*] Files Added: 2",
        "Upload log",
        "Upload manifest",
        "[INFO] Uploaded",
        "(flattened)",
    ] {
        assert!(stdout.contains(line), "{line} not in\n{stdout}");
    }
}

// Spec §18.9: the summary cases. The runs stage into a local directory (`--output-dir`), so
// the links are the staged files' paths (an index page that was not staged: its directory),
// never URLs of a bucket that received nothing.
#[test]
fn summary_lines_follow_status_and_observability() {
    type Case<'a> = (
        bool,
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: &[Case<'_>] = &[
        (
            false,
            "success",
            &[],
            &[
                "staging/RUN/logs/gfx94X-dcgpu/index.html>)",
                "staging/RUN>)",
                "staging/RUN/manifests/gfx94X-dcgpu/therock_manifest.json>)",
            ],
            &["build_observability", "https://", "RUN/index.html"],
        ),
        (
            true,
            "failure",
            &[],
            &[
                "staging/RUN/logs/gfx94X-dcgpu/build_observability.html>)",
                "therock_manifest.json",
            ],
            &["[Artifacts]", "index-gfx94X-dcgpu.html", "https://"],
        ),
        (
            false,
            "success",
            &[("GITHUB_REPOSITORY", "Fork/TheRock")],
            &["staging/Fork-TheRock/RUN"],
            &["https://"],
        ),
    ];
    // `RUN` in the cases stands for the run's directory.
    let run_dir = format!("12345-{HOST_PLATFORM}");
    let run_dir = |s: &str| s.replace("RUN", &run_dir);
    for (observability, status, env, present, absent) in cases {
        let t = tempfile::tempdir().unwrap();
        build_tree(t.path());
        if *observability {
            write(&t.path().join("build/logs/build_observability.html"), "x");
        }
        let out = stage_run(t.path(), status, env);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let summary = fs_err::read_to_string(summary_path(t.path())).unwrap();
        let lines: Vec<&str> = summary.split("\n\n").filter(|l| !l.is_empty()).collect();
        assert_eq!(
            lines.len(),
            3 + usize::from(*observability && *status == "success"),
            "{summary}"
        );
        for p in present.iter().map(|p| run_dir(p)) {
            assert!(summary.contains(&p), "{p} not in {summary}");
        }
        for a in absent.iter().map(|a| run_dir(a)) {
            assert!(!summary.contains(&a), "{a} in {summary}");
        }
        // Every link is an absolute path below the staging directory that exists.
        for line in &lines {
            let path = line
                .split_once("](<")
                .and_then(|(_, rest)| rest.strip_suffix(">)"))
                .unwrap_or_else(|| panic!("not a local link: {line}"));
            assert!(Path::new(path).is_absolute(), "{line}");
            assert!(Path::new(path).exists(), "{line}");
        }
        if env.iter().any(|(k, _)| *k == "GITHUB_REPOSITORY") {
            assert!(
                lines
                    .iter()
                    .all(|l| l.contains(&run_dir("staging/Fork-TheRock/RUN"))),
                "{summary}"
            );
        }
    }
}

#[test]
fn missing_manifest_still_uploads_logs_and_writes_the_summary() {
    let t = tempfile::tempdir().unwrap();
    let build = build_tree(t.path());
    fs_err::remove_file(build.join("base/aux-overlay/build/therock_manifest.json")).unwrap();
    let out = stage_run(t.path(), "failure", &[]);
    assert_eq!(out.status.code(), Some(1));
    let manifest = native("build/base/aux-overlay/build/therock_manifest.json");
    assert!(
        text(&out.stderr).contains(&format!("therock_manifest.json not found at `{manifest}`")),
        "{}",
        text(&out.stderr)
    );
    assert!(
        t.path()
            .join(format!(
                "staging/12345-{HOST_PLATFORM}/logs/gfx94X-dcgpu/build.log"
            ))
            .is_file()
    );
    assert!(
        fs_err::read_to_string(summary_path(t.path()))
            .unwrap()
            .contains("[Build Logs](")
    );
}

#[test]
fn no_logs_dir_is_fine() {
    let t = tempfile::tempdir().unwrap();
    write(
        &t.path()
            .join("build/base/aux-overlay/build/therock_manifest.json"),
        "{}",
    );
    let out = run(
        &[
            "--artifact-group",
            GROUP,
            "--upload",
            "--run-id",
            "1",
            "--output-dir",
            "staging",
        ],
        &[],
        t.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Skipping upload."));
    assert_eq!(
        files_under(&t.path().join("staging")),
        [format!(
            "1-{HOST_PLATFORM}/manifests/{GROUP}/therock_manifest.json"
        )]
    );
}

#[test]
fn dry_run_prints_every_upload_and_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    build_tree(t.path());
    let out = run(
        &[
            "--artifact-group",
            GROUP,
            "--upload",
            "--run-id",
            "9",
            "--output-dir",
            "staging",
            "--dry-run",
        ],
        &[],
        t.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let planned: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("[DRY RUN] "))
        .collect();
    // 4 log files + ninja and ccache archives, 2 flattened copies, the manifest.
    assert_eq!(planned.len(), 9, "{stdout}");
    let manifest = native(&format!(
        "staging/9-{HOST_PLATFORM}/manifests/gfx94X-dcgpu/therock_manifest.json"
    ));
    assert!(planned.iter().any(|l| l.ends_with(&manifest)), "{stdout}");
    assert!(!t.path().join("staging").exists());
    // The paths below the build dir as the reference's pathlib prints them (one kind of
    // separator on every system).
    for line in [
        format!(
            "[+] Create archive: {}\n",
            native("build/logs/ninja_logs.tar.gz")
        ),
        format!(
            "[+]  Add: {}\n",
            native("build/compiler/llvm/build/.ninja_log")
        ),
        format!(
            "[DRY RUN] {} -> ",
            native("build/base/aux-overlay/build/therock_manifest.json")
        ),
    ] {
        assert!(stdout.contains(&line), "{line} not in\n{stdout}");
    }
}

#[test]
fn archives_are_reproducible_and_no_upload_only_archives() {
    let t = tempfile::tempdir().unwrap();
    build_tree(t.path());
    let out = run(
        &["--artifact-group", GROUP, "--no-upload"],
        &[("CI", "true")],
        t.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = fs_err::read(t.path().join("build/logs/ninja_logs.tar.gz")).unwrap();
    let first_ccache = fs_err::read(t.path().join("build/logs/ccache_logs.tar.zst")).unwrap();
    let out = run(
        &[
            "--artifact-group",
            GROUP,
            "--build-dir",
            t.path().join("build").to_str().unwrap(),
        ],
        &[],
        t.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        fs_err::read(t.path().join("build/logs/ninja_logs.tar.gz")).unwrap(),
        first
    );
    assert_eq!(
        fs_err::read(t.path().join("build/logs/ccache_logs.tar.zst")).unwrap(),
        first_ccache
    );
    assert!(!t.path().join("staging").exists());
    // The archives get the mode a plain create gives (not a temporary file's 0600).
    let plain = t.path().join("plain");
    fs_err::write(&plain, "").unwrap();
    let mode = crate::common::permission_bits;
    for archive in ["ninja_logs.tar.gz", "ccache_logs.tar.zst"] {
        let path = t.path().join("build/logs").join(archive);
        assert_eq!(mode(&path), mode(&plain), "{archive}");
    }
}

#[test]
fn usage_errors() {
    let t = tempfile::tempdir().unwrap();
    build_tree(t.path());
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], i32, &'a str);
    let cases: &[Case<'_>] = &[
        (
            &["--artifact-group", GROUP, "--upload"],
            &[],
            2,
            "when --upload is true, --run-id must also be set",
        ),
        (
            &["--artifact-group", GROUP],
            &[("CI", "maybe")],
            2,
            "invalid `CI` environment variable",
        ),
        (&[], &[], 2, "--artifact-group"),
        (
            &["--artifact-group", GROUP, "--build-dir", "nope"],
            &[],
            1,
            "Build directory `nope` not found",
        ),
    ];
    for (args, env, code, message) in cases {
        let out = run(args, env, t.path());
        assert_fails_with(&out, *code, message, &format!("{args:?}"));
    }
    // ARTIFACT_GROUP from the environment is honoured.
    let out = run(&["--no-upload"], &[("ARTIFACT_GROUP", GROUP)], t.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn uploads_to_s3_with_content_types() {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let t = tempfile::tempdir().unwrap();
    build_tree(t.path());
    let aws = server.aws_env();
    let mut env: Vec<(&str, &str)> = aws.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend([("CI", "true"), ("GITHUB_RUN_ID", "777")]);
    let out = run(&["--artifact-group", GROUP, "--preflight"], &env, t.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Preflight ok"));
    let out = run(&["--artifact-group", GROUP], &env, t.path());
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let stored = server
        .root()
        .join(format!("therock-ci-artifacts/777-{HOST_PLATFORM}"));
    assert_eq!(
        fs_err::read_to_string(stored.join(format!("logs/{GROUP}/build.log"))).unwrap(),
        "build log"
    );
    assert!(
        stored
            .join(format!("manifests/{GROUP}/therock_manifest.json"))
            .is_file()
    );
    assert!(
        !stored
            .join(format!("logs/{GROUP}/ccache/ccache.log"))
            .exists()
    );
    // Re-running with --overwrite never refuses and names the existing keys.
    let out = run(
        &["--artifact-group", GROUP, "--overwrite", "never"],
        &env,
        t.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("already exists"),
        "{}",
        text(&out.stderr)
    );
    // ...and if-different skips everything unchanged.
    let out = run(
        &["--artifact-group", GROUP, "--overwrite", "if-different"],
        &env,
        t.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("(6 unchanged)"),
        "{}",
        text(&out.stdout)
    );
    // A wrong secret fails the preflight as an auth error.
    let bad: Vec<(&str, &str)> = env
        .iter()
        .map(|&(k, v)| {
            (
                k,
                if k == "AWS_SECRET_ACCESS_KEY" {
                    "wrong"
                } else {
                    v
                },
            )
        })
        .collect();
    let out = run(&["--artifact-group", GROUP, "--preflight"], &bad, t.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("access denied or bad credentials"),
        "{}",
        text(&out.stderr)
    );
}

/// Long options abbreviate as with `argparse`; uploads into a local staging directory name
/// its path, not an S3 URI.
#[test]
fn abbreviated_flags_and_local_staging_paths() {
    let t = tempfile::tempdir().unwrap();
    build_tree(t.path());
    let summary = summary_path(t.path());
    let out = run(
        &[
            "--art",
            GROUP,
            "--b=build",
            "--upload",
            "--run-i",
            "12345",
            "--out",
            "staging",
        ],
        &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())],
        t.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        t.path()
            .join(format!(
                "staging/12345-{HOST_PLATFORM}/manifests/{GROUP}/therock_manifest.json"
            ))
            .is_file()
    );
    let stdout = text(&out.stdout);
    let logs = native(&format!("staging/12345-{HOST_PLATFORM}/logs/{GROUP}"));
    assert!(
        stdout.contains(&format!("log files to {logs} (")),
        "{stdout}"
    );
    assert!(!stdout.contains("s3://"), "{stdout}");

    let out = run(&["--art", GROUP, "--o", "x"], &[], t.path());
    assert_fails_with(
        &out,
        2,
        "ambiguous option: --o could match --output-dir, --overwrite",
        "--o",
    );
}

/// A build dir on another drive than the working directory's, as TheRock's Windows jobs have
/// it (`B:\build`), given with `\` and as bash passes it (`B:/build`): the ninja logs and the
/// ccache logs below the build dir's `logs/ccache` are archived there and go up with the logs
/// and the manifest.
#[cfg(windows)]
#[test]
fn a_build_dir_on_another_drive() {
    let drive = crate::common::dir_on_drive_b("post-build-");
    let build = build_tree(drive.path());
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let aws = server.aws_env();
    let env: Vec<(&str, &str)> = aws.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let cwd = tempfile::tempdir().unwrap();
    let windows = build.to_str().unwrap().to_owned();
    let bash = windows.replace('\\', "/");
    assert!(
        windows.starts_with(r"B:\") && bash.starts_with("B:/"),
        "{windows}"
    );
    for (run_id, flag) in [("81", &windows), ("82", &bash)] {
        let out = run(
            &[
                "--artifact-group",
                GROUP,
                "--build-dir",
                flag,
                "--run-id",
                run_id,
                "--upload",
            ],
            &env,
            cwd.path(),
        );
        assert!(
            out.status.success(),
            "{flag}: {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        let stdout = text(&out.stdout);
        for line in [
            format!("[+] Create archive: {windows}\\logs\\ninja_logs.tar.gz"),
            format!("[+]  Add: {windows}\\compiler\\llvm\\build\\.ninja_log"),
            "[+] Archived ccache log: stats.txt".to_owned(),
            "[INFO] Created ccache_logs.tar.zst (0MB from 2 files)".to_owned(),
            format!(
                "[INFO] Uploading manifest {windows}\\base\\aux-overlay\\build\\therock_manifest.json"
            ),
        ] {
            assert!(stdout.contains(&line), "{flag}: {line} not in\n{stdout}");
        }
        let stored = server
            .root()
            .join(format!("therock-ci-artifacts/{run_id}-windows"));
        let logs = format!("logs/{GROUP}");
        assert_eq!(
            files_under(&stored),
            [
                format!("{logs}/build.log"),
                format!("{logs}/ccache_logs.tar.zst"),
                format!("{logs}/comp-summary.html"),
                format!("{logs}/comp-summary.md"),
                format!("{logs}/index.html"),
                format!("{logs}/ninja_logs.tar.gz"),
                format!("{logs}/therock-build-prof/comp-summary.html"),
                format!("{logs}/therock-build-prof/comp-summary.md"),
                format!("manifests/{GROUP}/therock_manifest.json"),
            ],
            "{flag}"
        );
        assert_eq!(
            fs_err::read(stored.join(format!("{logs}/ccache_logs.tar.zst"))).unwrap(),
            fs_err::read(build.join(r"logs\ccache_logs.tar.zst")).unwrap()
        );
    }
    // Nothing was written in the working directory.
    assert!(files_under(cwd.path()).is_empty());
}
