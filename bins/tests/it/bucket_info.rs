//! `write_artifacts_bucket_info`: the step outputs of the artifacts bucket for every release
//! type, base and external repositories, forks and not.

use crate::common::Launch as _;
use std::process::Output;

use rock_ci_test_support::assert_fails_with;

const RELEASE_TYPES: [&str; 6] = [
    "ci",
    "dev",
    "dev-bkc",
    "nightly",
    "nightly-bkc",
    "prerelease",
];

/// Runs the tool with `args` and exactly `env`, plus `GITHUB_OUTPUT` in a fresh directory;
/// returns the output and the outputs file's content.
fn run(args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("outputs");
    let out = std::process::Command::new(crate::common::tool("write_artifacts_bucket_info"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .env("GITHUB_OUTPUT", &outputs)
        .run_output()
        .unwrap();
    let written = fs_err::read_to_string(&outputs).unwrap_or_default();
    (out, written)
}

/// The bucket and role the specification's bucket table gives.
fn expected(release_type: &str, repo: &str, fork: bool) -> (String, String) {
    let (bucket, role) = match release_type {
        "ci" if fork || repo != "ROCm/TheRock" => {
            ("therock-ci-artifacts-external", "therock-ci-external")
        }
        "ci" => ("therock-ci-artifacts", "therock-ci"),
        "dev" | "dev-bkc" => ("therock-dev-artifacts", "therock-dev"),
        "nightly" | "nightly-bkc" => ("therock-nightly-artifacts", "therock-nightly"),
        "prerelease" => ("therock-prerelease-artifacts", "therock-prerelease"),
        other => panic!("no release type {other}"),
    };
    // A fork PR never gets the write role: it runs on the runner's own credentials.
    let arn = if fork {
        String::new()
    } else {
        format!("arn:aws:iam::692859939525:role/{role}")
    };
    (bucket.to_owned(), arn)
}

#[test]
fn writes_bucket_role_and_region_for_every_release_type_repo_and_fork_state() {
    let event_dir = tempfile::tempdir().unwrap();
    let fork_event = event_dir.path().join("fork.json");
    fs_err::write(
        &fork_event,
        r#"{"pull_request": {"head": {"repo": {"fork": true}}}}"#,
    )
    .unwrap();
    let base_event = event_dir.path().join("base.json");
    fs_err::write(
        &base_event,
        r#"{"pull_request": {"head": {"repo": {"fork": false}}}}"#,
    )
    .unwrap();
    let mut cases = 0;
    for release_type in RELEASE_TYPES {
        for repo in ["ROCm/TheRock", "ROCm/rocm-libraries"] {
            for fork in [false, true] {
                let event = if fork { &fork_event } else { &base_event };
                let event = event.to_str().unwrap();
                let env = [
                    ("GITHUB_REPOSITORY", repo),
                    ("GITHUB_EVENT_NAME", "pull_request"),
                    ("GITHUB_EVENT_PATH", event),
                    // Ignored: the flag's value (default `ci`) is what counts.
                    ("RELEASE_TYPE", "bogus"),
                ];
                let (out, written) = run(&["--release-type", release_type], &env);
                let what = format!("{release_type} {repo} fork={fork}");
                assert!(
                    out.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let (bucket, arn) = expected(release_type, repo, fork);
                assert_eq!(
                    written,
                    format!("bucket={bucket}\niam_role={arn}\naws_region=us-east-2\n"),
                    "{what}"
                );
                let stdout = String::from_utf8(out.stdout).unwrap();
                assert_eq!(
                    stdout,
                    format!(
                        "Setting github output:\n{{\n  \"bucket\": \"{bucket}\",\n  \"iam_role\": \"{arn}\",\n  \"aws_region\": \"us-east-2\"\n}}\nOUTPUT bucket={bucket}\nOUTPUT iam_role={arn}\nOUTPUT aws_region=us-east-2\n"
                    ),
                    "{what}"
                );
                let stderr = String::from_utf8(out.stderr).unwrap();
                let fork_word = if fork { "True" } else { "False" };
                assert!(
                    stderr.contains(&format!(
                        "  github_repository: {repo}\n  release_type: {release_type}\n  is_pr_from_fork: {fork_word}\n  bucket: {bucket}\n"
                    )),
                    "{what}: {stderr}"
                );
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 24);
}

#[test]
fn defaults_to_ci_outside_a_pull_request_and_appends() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("outputs");
    fs_err::write(&outputs, "earlier=1\n").unwrap();
    let out = std::process::Command::new(crate::common::tool("write_artifacts_bucket_info"))
        .env_clear()
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_EVENT_NAME", "push")
        .run_output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        fs_err::read_to_string(&outputs).unwrap(),
        "earlier=1\nbucket=therock-ci-artifacts\niam_role=arn:aws:iam::692859939525:role/therock-ci\naws_region=us-east-2\n"
    );
}

#[test]
fn a_bad_release_type_fails_and_writes_nothing() {
    for bad in ["bogus", "", "release"] {
        let (out, written) = run(&["--release-type", bad], &[]);
        assert_fails_with(&out, 1, &format!("Invalid `--release-type` `{bad}`"), bad);
        assert_eq!(written, "", "{bad}");
    }
    // A payload that cannot be read is an error, not "not a fork".
    let (out, written) = run(
        &[],
        &[
            ("GITHUB_EVENT_NAME", "pull_request"),
            ("GITHUB_EVENT_PATH", "/nonexistent/event.json"),
        ],
    );
    assert_fails_with(&out, 1, "/nonexistent/event.json", "missing payload");
    assert_eq!(written, "");
}

#[test]
fn without_github_output_it_warns_and_succeeds() {
    let out = std::process::Command::new(crate::common::tool("write_artifacts_bucket_info"))
        .env_clear()
        .run_output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("Warning: GITHUB_OUTPUT env var not set"),
        "{stderr}"
    );
    assert!(!String::from_utf8(out.stdout).unwrap().contains("OUTPUT "));
}
