use crate::common::Launch as _;
use std::path::Path;
use std::process::{Command, Output};

use rock_ci_test_support::{HttpServer, Reply};

use crate::common::native;

/// Runs `ci_layout` with exactly `env` as its environment.
fn ci_layout(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(crate::common::tool("ci_layout"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .run_output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn line<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(name).filter(|rest| rest.starts_with(' ')))
        .map_or_else(|| panic!("no `{name}` in\n{text}"), str::trim)
}

#[test]
fn prints_the_layout_of_a_run() {
    let out = ci_layout(
        &[
            "--run-id",
            "12345",
            "--platform",
            "linux",
            "--artifact-group",
            "gfx94X-dcgpu",
            "--stage",
            "math-libs",
            "--family",
            "gfx1151",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let cases = [
        ("root", "s3://therock-ci-artifacts/12345-linux"),
        (
            "log_dir",
            "s3://therock-ci-artifacts/12345-linux/logs/gfx94X-dcgpu",
        ),
        (
            "ninja_logs",
            "s3://therock-ci-artifacts/12345-linux/logs/gfx94X-dcgpu/ninja_logs.tar.gz",
        ),
        (
            "manifest",
            "s3://therock-ci-artifacts/12345-linux/manifests/gfx94X-dcgpu/therock_manifest.json",
        ),
        (
            "python_packages",
            "s3://therock-ci-artifacts/12345-linux/python/gfx94X-dcgpu",
        ),
        (
            "native_packages_rpm_log_index",
            "s3://therock-ci-artifacts/12345-linux/logs/packaging/rpm/index.html",
        ),
        (
            "log_stage_dir",
            "s3://therock-ci-artifacts/12345-linux/logs/math-libs/gfx1151",
        ),
    ];
    for (name, uri) in cases {
        assert_eq!(line(&text, name), uri);
    }
    assert_eq!(text.lines().count(), 22);
    // Progress goes to stderr, data to stdout.
    assert!(stderr(&out).contains("  bucket: therock-ci-artifacts"));
    assert!(!text.contains("Retrieving"));
}

#[test]
fn fork_event_selects_the_external_bucket_and_writes_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let event = dir.path().join("event.json");
    fs_err::write(
        &event,
        r#"{"pull_request":{"head":{"repo":{"fork":true}}}}"#,
    )
    .unwrap();
    let output = dir.path().join("output");
    let summary = dir.path().join("summary.md");
    let out = ci_layout(
        &["--platform", "windows", "--format", "json"],
        &[
            ("GITHUB_RUN_ID", "777"),
            ("GITHUB_REPOSITORY", "ROCm/TheRock"),
            ("GITHUB_EVENT_NAME", "pull_request"),
            ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
            ("GITHUB_OUTPUT", output.to_str().unwrap()),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["bucket"], "therock-ci-artifacts-external");
    assert_eq!(doc["prefix"], "ROCm-TheRock/777-windows");
    assert_eq!(doc["is_pr_from_fork"], true);
    assert_eq!(doc["write_access_iam_role"], serde_json::Value::Null);
    assert_eq!(
        doc["locations"]["manifest"]["location"],
        "s3://therock-ci-artifacts-external/ROCm-TheRock/777-windows/manifests/generic/therock_manifest.json"
    );
    assert_eq!(
        fs_err::read_to_string(&output).unwrap(),
        "bucket=therock-ci-artifacts-external\nprefix=ROCm-TheRock/777-windows\n\
         s3_root=s3://therock-ci-artifacts-external/ROCm-TheRock/777-windows\n\
         https_root=https://therock-ci-artifacts-external.s3.amazonaws.com/ROCm-TheRock/777-windows\n"
    );
    let summary = fs_err::read_to_string(&summary).unwrap();
    assert!(
        summary.starts_with("### CI outputs of run 777\n"),
        "{summary}"
    );
    assert!(stderr(&out).contains("Fork PR detected, skipping OIDC"));
}

#[test]
fn local_staging_dir_prints_local_paths() {
    let out = ci_layout(
        &["--platform", "linux", "--run-id", "test-42"],
        &[("THEROCK_LOCAL_STAGING_DIR", "/tmp/staging")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // The staging directory as given, with native separators (`\tmp\staging` on Windows).
    assert_eq!(
        line(&stdout(&out), "root"),
        native("/tmp/staging/test-42-linux")
    );
    assert_eq!(
        line(&stdout(&out), "log_index"),
        native("/tmp/staging/test-42-linux/logs/generic/index.html")
    );
}

#[test]
fn workflow_run_lookup_uses_the_api_once() {
    let server = HttpServer::start(|_| {
        Reply::json(
            200,
            r#"{"id": 99999, "head_repository": {"full_name": "SomeUser/TheRock"}}"#,
        )
    });
    let url = server.url();
    let out = ci_layout(
        &[
            "--run-id",
            "99999",
            "--platform",
            "linux",
            "--lookup-workflow-run",
            "--run-github-repo",
            "ROCm/TheRock",
        ],
        &[("GITHUB_API_URL", &url), ("GITHUB_TOKEN", "x")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        line(&stdout(&out), "root"),
        "s3://therock-ci-artifacts-external/ROCm-TheRock/99999-linux"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/repos/ROCm/TheRock/actions/runs/99999");
    assert!(stderr(&out).contains("  head_github_repository: SomeUser/TheRock"));
}

#[test]
fn workflow_run_not_found_fails_with_the_hint() {
    let server = HttpServer::start(|_| Reply::json(404, r#"{"message":"Not Found"}"#));
    let url = server.url();
    let out = ci_layout(
        &[
            "--run-id",
            "5",
            "--platform",
            "linux",
            "--lookup-workflow-run",
        ],
        &[("GITHUB_API_URL", &url)],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("https://github.com/ROCm/TheRock/actions/runs/5"),
        "{err}"
    );
    assert!(err.contains("--run-github-repo"), "{err}");
    assert!(stdout(&out).is_empty());
}

/// Bad input: a clear error naming the bad value, a non-zero exit, and nothing written.
#[test]
fn bad_input_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output");
    let summary = dir.path().join("summary.md");
    let unreadable = dir.path().join("event-dir");
    fs_err::create_dir(&unreadable).unwrap();
    let out_env = [
        ("GITHUB_OUTPUT", output.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    let missing = dir.path().join("missing.json");
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, i32, String);
    let cases: Vec<Case<'_>> = vec![
        (vec![], vec![("GITHUB_REPOSITORY", "foo")], 1, "GitHub repository `foo` is invalid".into()),
        (vec![], vec![("RELEASE_TYPE", "weekly")], 1, "release_type='weekly' is invalid, expected one of [ci, dev, dev-bkc, nightly, nightly-bkc, prerelease]".into()),
        (
            vec![],
            vec![("GITHUB_EVENT_NAME", "pull_request"), ("GITHUB_EVENT_PATH", missing.to_str().unwrap())],
            1,
            format!("GITHUB_EVENT_PATH is set to `{}` but no such file exists", missing.display()),
        ),
        (
            vec![],
            vec![("GITHUB_EVENT_NAME", "pull_request"), ("GITHUB_EVENT_PATH", unreadable.to_str().unwrap())],
            1,
            format!("Failed to read the event payload `{}`", unreadable.display()),
        ),
        (vec!["--platform", "solaris"], vec![], 2, "platform='solaris' is invalid, expected one of [darwin, linux, windows]".into()),
        (vec!["--run-github-repo", "a/b/c"], vec![], 2, "GitHub repository `a/b/c` is invalid".into()),
        (vec!["--run-id", "1/2"], vec![], 1, "Run id `1/2` is invalid".into()),
    ];
    for (args, env, code, message) in cases {
        let mut env = env;
        env.extend(out_env);
        let out = ci_layout(&args, &env);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?} {env:?}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(&message),
            "{message}\nnot in\n{}",
            stderr(&out)
        );
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
        assert!(!Path::new(&output).exists());
        assert!(!Path::new(&summary).exists());
    }
}

/// Long options abbreviate as with `argparse`; `--run-github-repo=` (an unset workflow input)
/// falls back to `GITHUB_REPOSITORY`, then `ROCm/TheRock`; `-q` keeps the layout and drops the
/// bucket block.
#[test]
fn abbreviations_empty_repository_and_quiet() {
    let out = ci_layout(
        &[
            "--run-i",
            "7",
            "--pl=linux",
            "--art",
            "g",
            "--run-github-repo=",
        ],
        &[("GITHUB_REPOSITORY", "someone/TheRock")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(
        line(&text, "root"),
        "s3://therock-ci-artifacts-external/someone-TheRock/7-linux"
    );
    assert_eq!(
        line(&text, "log_dir"),
        "s3://therock-ci-artifacts-external/someone-TheRock/7-linux/logs/g"
    );

    let out = ci_layout(
        &["--run-id", "7", "--platform", "linux", "--run-github-repo="],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        line(&stdout(&out), "root"),
        "s3://therock-ci-artifacts/7-linux"
    );
    assert!(stderr(&out).contains("  github_repository: ROCm/TheRock"));

    let out = ci_layout(&["--r", "7"], &[]);
    rock_ci_test_support::assert_fails_with(
        &out,
        2,
        "ambiguous option: --r could match --run-id, --run-github-repo, --release-type",
        "--r",
    );
    assert!(stdout(&out).is_empty());

    let out = ci_layout(&["--run-id", "7", "--platform", "linux", "-q"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        line(&stdout(&out), "root"),
        "s3://therock-ci-artifacts/7-linux"
    );
    assert_eq!(stderr(&out), "");
}
