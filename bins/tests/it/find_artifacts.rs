//! `find_artifacts_for_commit` and `find_latest_artifacts` against a scripted GitHub API and
//! the in-process S3 server: pagination, runs without artifacts, fork runs in the external
//! bucket, rate limits, and the run-selection vectors of spec §12.3.

use crate::common::Launch as _;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rock_ci_test_support::{HttpServer, Reply, S3Server, assert_fails_with};

use crate::common::{assert_ok, text};

/// The commit of the tests: the API is asked about full SHAs only.
const SHA: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c";
/// A commit without runs.
const NO_RUNS: &str = "1234567890123456789012345678901234567890";

fn ok(out: &Output) -> String {
    assert_ok(out);
    text(&out.stdout)
}

/// A run object as the API returns it.
fn run(id: u64, created: &str, head: &str, status: &str, conclusion: Option<&str>) -> String {
    let conclusion = conclusion.map_or("null".to_owned(), |c| format!("\"{c}\""));
    format!(
        r#"{{"id": {id}, "head_sha": "sha{id}", "status": "{status}", "conclusion": {conclusion},
            "html_url": "https://github.com/ROCm/TheRock/actions/runs/{id}",
            "created_at": "{created}", "head_repository": {{"full_name": "{head}"}}}}"#
    )
}

/// A completed, successful run of `ROCm/TheRock`.
fn ok_run(id: u64) -> String {
    run(
        id,
        "2026-03-01T00:00:00Z",
        "ROCm/TheRock",
        "completed",
        Some("success"),
    )
}

fn runs_page(runs: &[String]) -> String {
    format!(
        r#"{{"total_count": {}, "workflow_runs": [{}]}}"#,
        runs.len(),
        runs.join(",")
    )
}

/// A scripted GitHub API: each path (with its query) has a list of replies, served in turn,
/// the last one repeated; a workflow's runs not scripted are none, anything else is a 404. `{api}` in a reply's `link` header is
/// replaced by the server's URL.
struct Api {
    server: HttpServer,
}

type Script = HashMap<String, (Vec<Reply>, AtomicUsize)>;

impl Api {
    fn start(script: Vec<(&str, Vec<Reply>)>) -> Self {
        let script: Script = script
            .into_iter()
            .map(|(p, r)| (p.to_owned(), (r, AtomicUsize::new(0))))
            .collect();
        let url: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
        let base = url.clone();
        let server = HttpServer::start(move |req| {
            let Some((replies, served)) = script.get(&req.path) else {
                if req.path.contains("/actions/workflows/") {
                    return Reply::json(200, r#"{"total_count": 0, "workflow_runs": []}"#);
                }
                return Reply::json(404, r#"{"message": "Not Found"}"#);
            };
            let i = served.fetch_add(1, Ordering::SeqCst).min(replies.len() - 1);
            match replies[i].clone() {
                Reply::Response {
                    status,
                    headers,
                    body,
                } => Reply::Response {
                    status,
                    headers: headers
                        .into_iter()
                        .map(|(n, v)| (n, v.replace("{api}", base.get().unwrap())))
                        .collect(),
                    body,
                },
                other @ Reply::Close => other,
            }
        });
        url.set(server.url()).unwrap();
        Self { server }
    }

    fn paths(&self) -> Vec<String> {
        self.server.requests().into_iter().map(|r| r.path).collect()
    }
}

fn runs_path(sha: &str) -> String {
    format!(
        "/repos/ROCm/TheRock/actions/workflows/multi_arch_ci.yml/runs?head_sha={sha}&sort=created&direction=desc&per_page=100"
    )
}

struct Fixture {
    s3: S3Server,
    work: tempfile::TempDir,
    s3_requests: Arc<Mutex<u64>>,
}

impl Fixture {
    fn new() -> Self {
        let s3 = S3Server::start();
        s3.create_bucket("therock-ci-artifacts");
        s3.create_bucket("therock-ci-artifacts-external");
        let work = tempfile::tempdir().unwrap();
        let cmake = work.path().join("therock/cmake");
        fs_err::create_dir_all(&cmake).unwrap();
        fs_err::write(
            cmake.join("therock_amdgpu_targets.cmake"),
            "therock_add_amdgpu_target(gfx942 \"MI300\" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)\n\
             therock_add_amdgpu_target(gfx1100 \"RX 7900\" FAMILY gfx110X-all)\n\
             therock_add_amdgpu_target(gfx1201 \"RX 9070\" FAMILY gfx120X-all)\n",
        )
        .unwrap();
        Self {
            s3,
            work,
            s3_requests: Arc::new(Mutex::new(0)),
        }
    }

    /// Stores archives (and their sidecars) under `{bucket}/{prefix}/`.
    fn artifacts(&self, bucket: &str, prefix: &str, names: &[&str]) {
        let dir = self.s3.root().join(bucket).join(prefix);
        fs_err::create_dir_all(&dir).unwrap();
        for name in names {
            fs_err::write(dir.join(name), name.as_bytes()).unwrap();
            fs_err::write(
                dir.join(format!("{name}.sha256sum")),
                format!("{}  {name}\n", "0".repeat(64)),
            )
            .unwrap();
        }
    }

    fn therock(&self) -> PathBuf {
        self.work.path().join("therock")
    }

    fn command(&self, tool: &str, api: &Api, args: &[&str]) -> Output {
        *self.s3_requests.lock().unwrap() = self.s3.requests();
        Command::new(tool)
            .args(["--platform", "linux"])
            .args(args)
            .env_clear()
            .env("GITHUB_API_URL", api.server.url())
            .env("GITHUB_TOKEN", "t")
            .env("THEROCK_DIR", self.therock())
            .envs(self.s3.aws_env())
            .current_dir(self.work.path())
            .run_output()
            .unwrap()
    }

    fn commit(&self, api: &Api, args: &[&str]) -> Output {
        self.command(crate::common::tool("find_artifacts_for_commit"), api, args)
    }

    fn latest(&self, api: &Api, args: &[&str]) -> Output {
        self.command(crate::common::tool("find_latest_artifacts"), api, args)
    }

    /// S3 requests made by the last command.
    fn s3_requests_since(&self) -> u64 {
        self.s3.requests() - *self.s3_requests.lock().unwrap()
    }
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&ok(out)).unwrap()
}

fn field<'a>(v: &'a serde_json::Value, i: usize, key: &str) -> &'a serde_json::Value {
    &v["results"][i][key]
}

#[test]
fn runs_on_a_second_page_are_inspected_after_a_run_without_artifacts() {
    let f = Fixture::new();
    // Run 300 (newest) has nothing yet; run 100, on the second page, has the group.
    f.artifacts(
        "therock-ci-artifacts",
        "100-linux",
        &[
            "base_lib_generic.tar.zst",
            "blas_lib_gfx942.tar.zst",
            "blas_lib_gfx1100.tar.zst",
            "README.md",
        ],
    );
    let page1 = runs_page(&[run(
        300,
        "2026-03-03T00:00:00Z",
        "ROCm/TheRock",
        "completed",
        Some("failure"),
    )]);
    let page2 = runs_page(&[ok_run(100)]);
    let api = Api::start(vec![
        (
            &runs_path(SHA),
            vec![Reply::json(200, &page1).with_header(
                "link",
                "<{api}/page2>; rel=\"next\", <{api}/page2>; rel=\"last\"",
            )],
        ),
        ("/page2", vec![Reply::json(200, &page2)]),
    ]);
    let out = f.commit(&api, &["--commit", SHA, "--artifact-group", "gfx94X-dcgpu"]);
    let stdout = ok(&out);
    assert_eq!(api.paths(), [runs_path(SHA), "/page2".to_owned()]);
    // The bucket blocks of both inspected runs on stderr; the one result on stdout.
    assert_eq!(
        text(&out.stderr)
            .matches("Retrieving bucket info for workflow run...")
            .count(),
        2
    );
    assert_eq!(
        stdout,
        "Artifact info:
  Git repository:      ROCm/TheRock
  Git commit:          0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c
  Git commit URL:      https://github.com/ROCm/TheRock/commit/0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c
  Platform:            linux
  Artifact group:      gfx94X-dcgpu
  Workflow name:       multi_arch_ci.yml
  Workflow run ID:     100
  Workflow run URL:    https://github.com/ROCm/TheRock/actions/runs/100
  Workflow run status: completed (success)
  S3 Bucket:           therock-ci-artifacts
  S3 Path:             100-linux/
  S3 Index:            https://therock-ci-artifacts.s3.amazonaws.com/100-linux/index.html
  Artifact count:      2
  Artifacts:
    base_lib_generic.tar.zst
    blas_lib_gfx942.tar.zst

"
    );
}

/// Runs 200 (newer, attempt 2) and 100 of commit `SHA`, with the groups given.
fn two_runs(
    f: &Fixture,
    in_200: &[&str],
    in_100: &[&str],
    status_200: (&str, Option<&str>),
) -> Api {
    f.artifacts("therock-ci-artifacts", "200-linux", in_200);
    f.artifacts("therock-ci-artifacts", "100-linux", in_100);
    let page = runs_page(&[
        ok_run(100),
        run(
            200,
            "2026-03-02T00:00:00Z",
            "ROCm/TheRock",
            status_200.0,
            status_200.1,
        ),
    ]);
    Api::start(vec![(&runs_path(SHA), vec![Reply::json(200, &page)])])
}

const GROUPS: [&str; 4] = ["--artifact-group", "gfx110X-all", "gfx120X-all", "--json"];

#[test]
fn groups_accumulate_across_runs_newest_first() {
    let f = Fixture::new();
    let api = two_runs(
        &f,
        &["blas_lib_gfx120X-all.tar.zst"],
        &["blas_lib_gfx110X-all.tar.zst", "blas_lib_gfx1201.tar.zst"],
        ("completed", Some("success")),
    );
    let out = f.commit(&api, &[&["--commit", SHA][..], &GROUPS].concat());
    let v = json(&out);
    assert_eq!(v["status"], "found");
    assert_eq!(field(&v, 0, "artifact_group"), "gfx110X-all");
    assert_eq!(field(&v, 0, "workflow_run_id"), "100");
    assert_eq!(field(&v, 1, "artifact_group"), "gfx120X-all");
    assert_eq!(field(&v, 1, "workflow_run_id"), "200");
    assert_eq!(
        field(&v, 1, "artifact_filenames"),
        &serde_json::json!(["blas_lib_gfx120X-all.tar.zst"])
    );
    let keys: Vec<&String> = v["results"][0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "amdgpu_targets",
            "artifact_filenames",
            "artifact_group",
            "external_repo",
            "git_commit_sha",
            "git_commit_url",
            "github_repository_name",
            "missing_required_artifact_patterns",
            "platform",
            "required_artifact_patterns",
            "s3_bucket",
            "s3_index_url",
            "s3_path",
            "s3_uri",
            "workflow_file_name",
            "workflow_run_conclusion",
            "workflow_run_html_url",
            "workflow_run_id",
            "workflow_run_status"
        ]
    );
    // With --json the progress goes to stderr and stdout is the document alone.
    assert!(text(&out.stderr).contains("  bucket: therock-ci-artifacts"));
    assert!(
        text(&out.stdout).starts_with("{\n  \"results\": [\n    {\n      \"amdgpu_targets\": [],")
    );

    // Both runs hold the group: the newer one wins.
    let out = f.commit(
        &api,
        &["--commit", SHA, "--artifact-group", "gfx120X-all", "--json"],
    );
    assert_eq!(field(&json(&out), 0, "workflow_run_id"), "200");
}

#[test]
fn single_run_mode_takes_the_run_holding_every_group() {
    let f = Fixture::new();
    let api = two_runs(
        &f,
        &["blas_lib_gfx110X-all.tar.zst"],
        &[
            "blas_lib_gfx110X-all.tar.zst",
            "blas_lib_gfx120X-all.tar.zst",
        ],
        ("completed", Some("success")),
    );
    let out = f.commit(
        &api,
        &[&["--commit", SHA, "--require-single-run"][..], &GROUPS].concat(),
    );
    let v = json(&out);
    assert_eq!(field(&v, 0, "workflow_run_id"), "100");
    assert_eq!(field(&v, 1, "workflow_run_id"), "100");
}

#[test]
fn successful_run_mode_skips_a_queued_run_without_listing_it() {
    let f = Fixture::new();
    let api = two_runs(
        &f,
        &["blas_lib_gfx94X-dcgpu.tar.zst"],
        &["blas_lib_gfx94X-dcgpu.tar.zst"],
        ("queued", None),
    );
    let out = f.commit(
        &api,
        &[
            "--commit",
            SHA,
            "--artifact-group",
            "gfx94X-dcgpu",
            "--require-successful-run",
            "--json",
        ],
    );
    let v = json(&out);
    assert_eq!(field(&v, 0, "workflow_run_id"), "100");
    assert_eq!(
        text(&out.stderr).matches("Retrieving bucket info").count(),
        1
    );
    assert_eq!(f.s3_requests_since(), 1, "one listing, of run 100");

    // Without the flag the queued run counts once it holds an archive of the group.
    let out = f.commit(
        &api,
        &[
            "--commit",
            SHA,
            "--artifact-group",
            "gfx94X-dcgpu",
            "--json",
        ],
    );
    let v = json(&out);
    assert_eq!(field(&v, 0, "workflow_run_id"), "200");
    assert_eq!(field(&v, 0, "workflow_run_status"), "queued");
    assert_eq!(
        field(&v, 0, "workflow_run_conclusion"),
        &serde_json::Value::Null
    );
}

#[test]
fn a_fork_run_is_read_from_the_external_bucket() {
    let f = Fixture::new();
    f.artifacts(
        "therock-ci-artifacts-external",
        "ROCm-TheRock/777-linux",
        &["base_lib_generic.tar.zst", "blas_lib_gfx942.tar.zst"],
    );
    // The same run id in the main bucket must not be what is found.
    f.artifacts(
        "therock-ci-artifacts",
        "777-linux",
        &["other_lib_gfx942.tar.zst"],
    );
    let api = Api::start(vec![(
        "/repos/ROCm/TheRock/actions/runs/777",
        vec![Reply::json(
            200,
            &run(
                777,
                "2026-03-01T00:00:00Z",
                "someone/TheRock",
                "completed",
                Some("success"),
            ),
        )],
    )]);
    let out = f.commit(
        &api,
        &[
            "--run-id",
            "777",
            "--artifact-group",
            "gfx94X-dcgpu",
            "--amdgpu-target",
            "gfx942",
            "--json",
        ],
    );
    let v = json(&out);
    assert_eq!(field(&v, 0, "s3_bucket"), "therock-ci-artifacts-external");
    assert_eq!(field(&v, 0, "external_repo"), "ROCm-TheRock/");
    assert_eq!(
        field(&v, 0, "s3_uri"),
        "s3://therock-ci-artifacts-external/ROCm-TheRock/777-linux/"
    );
    assert_eq!(field(&v, 0, "git_commit_sha"), "sha777");
    assert_eq!(
        field(&v, 0, "amdgpu_targets"),
        &serde_json::json!(["gfx942"])
    );
    assert_eq!(
        field(&v, 0, "artifact_filenames"),
        &serde_json::json!(["base_lib_generic.tar.zst", "blas_lib_gfx942.tar.zst"])
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("  head_github_repository: someone/TheRock"),
        "{stderr}"
    );
    assert!(stderr.contains("  is_pr_from_fork: True"), "{stderr}");
    // The run was asked for once: the bucket block reuses it.
    assert_eq!(api.paths().len(), 1);
}

#[test]
fn a_rate_limit_is_waited_out() {
    let f = Fixture::new();
    f.artifacts(
        "therock-ci-artifacts",
        "100-linux",
        &["blas_lib_gfx942.tar.zst"],
    );
    let page = runs_page(&[ok_run(100)]);
    for limited in [
        Reply::json(429, r#"{"message": "slow down"}"#).with_header("retry-after", "0"),
        Reply::json(
            403,
            r#"{"message": "API rate limit exceeded for 127.0.0.1"}"#,
        )
        .with_header("retry-after", "0"),
        Reply::json(403, r#"{"message": "API rate limit exceeded"}"#)
            .with_header("x-ratelimit-remaining", "0")
            .with_header("x-ratelimit-reset", "0"),
    ] {
        let api = Api::start(vec![(
            &runs_path(SHA),
            vec![limited.clone(), Reply::json(200, &page)],
        )]);
        let out = f.commit(
            &api,
            &[
                "--commit",
                SHA,
                "--artifact-group",
                "gfx94X-dcgpu",
                "--json",
            ],
        );
        assert_eq!(
            field(&json(&out), 0, "workflow_run_id"),
            "100",
            "{limited:?}"
        );
        assert_eq!(api.paths().len(), 2);
        assert!(
            text(&out.stderr).contains("rate limit"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_rate_limit_that_does_not_reset_soon_is_an_error() {
    let f = Fixture::new();
    let api = Api::start(vec![(
        &runs_path(SHA),
        vec![
            Reply::json(403, r#"{"message": "API rate limit exceeded"}"#)
                .with_header("retry-after", "100000"),
        ],
    )]);
    let out = f.commit(&api, &["--commit", SHA, "--artifact-group", "gfx94X-dcgpu"]);
    assert_fails_with(
        &out,
        2,
        "Error: GitHub API rate limit exceeded for",
        "rate limit",
    );
}

#[test]
fn nothing_found_or_a_failed_look_up() {
    let f = Fixture::new();
    f.artifacts(
        "therock-ci-artifacts",
        "100-linux",
        &["base_lib_generic.tar.zst"],
    );
    let page = runs_page(&[ok_run(100)]);
    let api = Api::start(vec![
        (&runs_path(SHA), vec![Reply::json(200, &page)]),
        (
            &runs_path(NO_RUNS),
            vec![Reply::json(200, r#"{"workflow_runs": []}"#)],
        ),
    ]);
    // Only generic archives: the group is not there.
    let out = f.commit(
        &api,
        &[
            "--commit",
            SHA,
            "--artifact-group",
            "gfx94X-dcgpu",
            "gfx94X-dcgpu",
        ],
    );
    assert_fails_with(
        &out,
        1,
        "No matching artifacts found for commit 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c (platform=linux, artifact_group=['gfx94X-dcgpu', 'gfx94X-dcgpu'])\n",
        "generic only",
    );
    let out = f.commit(&api, &["--run-id", "5", "--artifact-group", "generic"]);
    assert_fails_with(
        &out,
        2,
        "Error: Resource not found (404) for http://",
        "unknown run",
    );
    assert!(!text(&out.stderr).contains("--run-github-repo"));
    let out = f.commit(&api, &["--commit", NO_RUNS, "--artifact-group", "generic"]);
    assert_fails_with(
        &out,
        1,
        &format!("No matching artifacts found for commit {NO_RUNS}"),
        "no runs",
    );
    // The generic group needs no target-specific archive.
    let out = f.commit(
        &api,
        &["--commit", SHA, "--artifact-group", "generic", "--json"],
    );
    assert_eq!(
        field(&json(&out), 0, "artifact_filenames"),
        &serde_json::json!(["base_lib_generic.tar.zst"])
    );
    assert_eq!(field(&json(&out), 0, "workflow_run_id"), "100");
}

#[test]
fn bad_requests_fail_before_any_request() {
    let f = Fixture::new();
    let api = Api::start(vec![]);
    let before = api.paths().len();
    // Not a full SHA: the API would match nothing; refused before any request.
    for bad in ["zzzz", "0f1e2d3", &SHA[1..], &format!("{SHA}0")] {
        let out = f.commit(&api, &["--commit", bad, "--artifact-group", "a"]);
        assert_fails_with(
            &out,
            2,
            &format!("Invalid commit \"{bad}\": give the commit's full SHA"),
            bad,
        );
    }
    let out = f.commit(
        &api,
        &[
            "--commit",
            SHA,
            "--artifact-group",
            "a",
            "b",
            "--amdgpu-target",
            "gfx942",
        ],
    );
    assert_fails_with(
        &out,
        2,
        "Error: Explicit AMDGPU targets may be used only with one artifact group",
        "targets with two groups",
    );
    let out = f.commit(
        &api,
        &[
            "--commit",
            SHA,
            "--artifact-group",
            "a",
            "--require-artifact",
            "(",
        ],
    );
    assert_fails_with(
        &out,
        2,
        "Error: Invalid --require-artifact `(`",
        "bad regex",
    );
    let out = Command::new(crate::common::tool("find_artifacts_for_commit"))
        .args(["--commit", SHA, "--artifact-group", "a"])
        .env_clear()
        .env("GITHUB_API_URL", api.server.url())
        .env("THEROCK_DIR", f.work.path().join("nowhere"))
        .run_output()
        .unwrap();
    assert_fails_with(
        &out,
        2,
        "Error: Cannot read the GPU family table: pass --therock-dir DIR (a TheRock checkout) or set THEROCK_DIR: AMDGPU targets cmake file not found: ",
        "no family table",
    );
    assert_eq!(api.paths().len(), before);
    let out = f.commit(&api, &["--artifact-group", "a"]);
    assert_fails_with(
        &out,
        2,
        "--commit <COMMIT>|--run-id <RUN_ID>",
        "no selector",
    );
}

fn commits(shas: &[&str]) -> String {
    let items: Vec<String> = shas
        .iter()
        .map(|s| format!(r#"{{"sha": "{s}"}}"#))
        .collect();
    format!("[{}]", items.join(","))
}

fn commit_runs(api: &mut Vec<(String, Vec<Reply>)>, sha: &str, runs: &[String]) {
    api.push((runs_path(sha), vec![Reply::json(200, &runs_page(runs))]));
}

fn start(script: &[(String, Vec<Reply>)]) -> Api {
    Api::start(
        script
            .iter()
            .map(|(p, r)| (p.as_str(), r.clone()))
            .collect(),
    )
}

#[test]
fn latest_walks_the_branch_to_the_newest_commit_with_every_group() {
    let f = Fixture::new();
    // newest: no runs; middle: one of the two groups; oldest: both.
    f.artifacts(
        "therock-ci-artifacts",
        "20-linux",
        &["blas_lib_gfx1100.tar.zst"],
    );
    f.artifacts(
        "therock-ci-artifacts",
        "10-linux",
        &["blas_lib_gfx1100.tar.zst", "blas_lib_gfx120X-all.tar.zst"],
    );
    let mut script = vec![(
        "/repos/ROCm/TheRock/commits?sha=release%2Fx&per_page=3".to_owned(),
        vec![Reply::json(
            200,
            &commits(&["c3333333aa", "c2222222bb", "c1111111cc"]),
        )],
    )];
    commit_runs(&mut script, "c3333333aa", &[]);
    commit_runs(&mut script, "c2222222bb", &[ok_run(20)]);
    commit_runs(&mut script, "c1111111cc", &[ok_run(10)]);
    let api = start(&script);
    let out = f.latest(
        &api,
        &[
            "--branch",
            "release/x",
            "--max-commits",
            "3",
            "-v",
            "--json",
            "--artifact-group",
            "gfx110X-all",
            "gfx120X-all",
        ],
    );
    let v = json(&out);
    assert_eq!(field(&v, 0, "workflow_run_id"), "10");
    assert_eq!(field(&v, 1, "workflow_run_id"), "10");
    assert_eq!(field(&v, 0, "git_commit_sha"), "c1111111cc");
    let stderr = text(&out.stderr);
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("Searching") || l.starts_with("  [") || l.starts_with("    "))
        .collect();
    assert_eq!(
        progress,
        [
            "Searching 3 commit(s) from branch release/x in ROCm/TheRock for 2 group(s): gfx110X-all, gfx120X-all...",
            "  [1/3] Checking c3333333...",
            "    No artifacts found",
            "  [2/3] Checking c2222222...",
            "    Partial: found gfx110X-all (need all 2)",
            "  [3/3] Checking c1111111...",
            "    Found all 2 group(s): run(s) 10",
        ]
    );
}

#[test]
fn latest_by_ref_and_by_run() {
    let f = Fixture::new();
    f.artifacts(
        "therock-ci-artifacts",
        "42-linux",
        &["blas_lib_gfx942.tar.zst"],
    );
    let one = ok_run(42);
    let mut script = vec![
        (
            "/repos/ROCm/TheRock/commits/feature%2Fbranch".to_owned(),
            vec![Reply::json(200, r#"{"sha": "resolved-sha", "commit": {}}"#)],
        ),
        (
            "/repos/ROCm/TheRock/actions/runs/42".to_owned(),
            vec![Reply::json(200, &one)],
        ),
    ];
    commit_runs(&mut script, "resolved-sha", std::slice::from_ref(&one));
    let api = start(&script);
    let out = f.latest(
        &api,
        &[
            "--ref",
            "feature/branch",
            "--artifact-group",
            "gfx94X-dcgpu",
            "--json",
        ],
    );
    assert_eq!(field(&json(&out), 0, "git_commit_sha"), "resolved-sha");
    assert_eq!(
        api.paths(),
        [
            "/repos/ROCm/TheRock/commits/feature%2Fbranch".to_owned(),
            runs_path("resolved-sha")
        ]
    );
    let out = f.latest(
        &api,
        &[
            "--run-id",
            "42",
            "--artifact-group",
            "gfx94X-dcgpu",
            "--json",
        ],
    );
    assert_eq!(field(&json(&out), 0, "git_commit_sha"), "sha42");
    assert_eq!(
        api.paths().last().unwrap(),
        "/repos/ROCm/TheRock/actions/runs/42"
    );
    let out = f.latest(&api, &["--run-id", "42", "--artifact-group", "gfx110X-all"]);
    assert_fails_with(
        &out,
        1,
        "No matching artifacts found for workflow run 42\n",
        "other group",
    );
    let out = f.latest(
        &api,
        &["--run-id", "42", "--ref", "x", "--artifact-group", "a"],
    );
    assert_fails_with(&out, 2, "cannot be used with", "ref and run id");
}

#[test]
fn latest_pages_through_more_than_a_hundred_commits() {
    let f = Fixture::new();
    let page = |from: usize, n: usize| {
        let shas: Vec<String> = (from..from + n).map(|i| format!("{i:040}")).collect();
        commits(&shas.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let api = Api::start(vec![
        (
            "/repos/ROCm/TheRock/commits?sha=main&per_page=100",
            vec![
                Reply::json(200, &page(0, 100))
                    .with_header("link", "<{api}/commits-page-2>; rel=\"next\""),
            ],
        ),
        ("/commits-page-2", vec![Reply::json(200, &page(100, 100))]),
    ]);
    let out = f.latest(
        &api,
        &[
            "--max-commits",
            "120",
            "-v",
            "--artifact-group",
            "gfx94X-dcgpu",
        ],
    );
    assert_fails_with(
        &out,
        1,
        "No matching artifacts found for last 120 commits on ROCm/TheRock/main\n",
        "no runs",
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("Searching 120 commit(s) from branch main"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  [120/120] Checking 00000000..."),
        "{stderr}"
    );
    // Two pages of commits, then one runs query per commit.
    assert_eq!(api.paths().len(), 122);
}

#[test]
fn latest_prefers_the_newer_commit_and_never_combines_commits() {
    let f = Fixture::new();
    f.artifacts(
        "therock-ci-artifacts",
        "2-linux",
        &["blas_lib_gfx1100.tar.zst"],
    );
    f.artifacts(
        "therock-ci-artifacts",
        "1-linux",
        &["blas_lib_gfx1201.tar.zst", "blas_lib_gfx1100.tar.zst"],
    );
    let mut script = vec![(
        "/repos/ROCm/TheRock/commits?sha=main&per_page=50".to_owned(),
        vec![Reply::json(200, &commits(&["newer", "older"]))],
    )];
    commit_runs(&mut script, "newer", &[ok_run(2)]);
    commit_runs(&mut script, "older", &[ok_run(1)]);
    let api = start(&script);
    // Both commits have the group: the newer one.
    let out = f.latest(&api, &["--artifact-group", "gfx110X-all", "--json"]);
    assert_eq!(field(&json(&out), 0, "git_commit_sha"), "newer");
    // One group per commit, alternating: never put together from two commits.
    fs_err::remove_file(
        f.s3.root()
            .join("therock-ci-artifacts/1-linux/blas_lib_gfx1100.tar.zst"),
    )
    .unwrap();
    fs_err::remove_file(
        f.s3.root()
            .join("therock-ci-artifacts/1-linux/blas_lib_gfx1100.tar.zst.sha256sum"),
    )
    .unwrap();
    let out = f.latest(&api, &["--artifact-group", "gfx110X-all", "gfx120X-all"]);
    assert_fails_with(
        &out,
        1,
        "No matching artifacts found for last 50 commits on ROCm/TheRock/main\n",
        "alternating groups",
    );
}
