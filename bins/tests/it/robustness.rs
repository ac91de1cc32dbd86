//! The tools on networks that misbehave: an endpoint that accepts connections and never
//! answers, and a server that refuses some uploads.

use crate::common::Launch as _;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule, S3Server, black_hole};

use crate::common::HOST_PLATFORM;

/// A binary, its arguments and its environment.
type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, String)>);

/// Short limits, so that a silent endpoint fails in seconds.
const LIMITS: [(&str, &str); 3] = [
    ("ROCK_CI_READ_TIMEOUT", "1"),
    ("ROCK_CI_OPERATION_TIMEOUT", "2"),
    ("ROCK_CI_MAX_ATTEMPTS", "2"),
];

fn run(bin: &str, args: &[&str], env: &[(&str, String)], cwd: &Path) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(bin)
        .args(args)
        .env_clear()
        .envs(LIMITS)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(cwd)
        .run_output()
        .unwrap();
    (out, started.elapsed())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `post_build_upload`'s arguments for an upload of `build/` as run 5, then `extra`.
fn upload(extra: &[&'static str]) -> Vec<&'static str> {
    let mut args = vec![
        "--artifact-group",
        "gfx94X-dcgpu",
        "--build-dir",
        "build",
        "--run-id",
        "5",
        "--upload",
    ];
    args.extend_from_slice(extra);
    args
}

/// The tools' runs against the silent `endpoint`, with the S3 environment `aws`.
fn silent_endpoint_cases(endpoint: &str, aws: &[(&'static str, String)]) -> Vec<Case<'static>> {
    vec![
        (
            crate::common::tool("fetch_artifacts"),
            vec![
                "--run-id",
                "5",
                "--platform",
                "linux",
                "--output-dir",
                "out",
            ],
            // The run look-up goes to the silent endpoint too.
            [("GITHUB_API_URL", endpoint.to_owned())]
                .into_iter()
                .chain(aws.iter().cloned())
                .collect(),
        ),
        (
            crate::common::tool("post_build_upload"),
            upload(&[]),
            aws.to_vec(),
        ),
        (
            crate::common::tool("post_build_upload"),
            upload(&["--preflight"]),
            aws.to_vec(),
        ),
        // The flags win over the environment.
        (
            crate::common::tool("post_build_upload"),
            upload(&[
                "--preflight",
                "--read-timeout",
                "1",
                "--operation-timeout",
                "2",
            ]),
            aws.iter()
                .cloned()
                .chain([
                    ("ROCK_CI_READ_TIMEOUT", "600".to_owned()),
                    ("ROCK_CI_OPERATION_TIMEOUT", "600".to_owned()),
                ])
                .collect(),
        ),
        (
            crate::common::tool("ci_layout"),
            vec![
                "--run-id",
                "5",
                "--platform",
                "linux",
                "--lookup-workflow-run",
            ],
            vec![("GITHUB_API_URL", endpoint.to_owned())],
        ),
    ]
}

/// Every tool that talks to a network exits 1 within its limits when the endpoint never
/// answers, and says which endpoint and which limit.
#[test]
fn a_silent_endpoint_fails_every_tool_within_its_limits() {
    let hole = black_hole();
    let endpoint = format!("http://{hole}");
    let t = tempfile::tempdir().unwrap();
    let aws = [
        ("AWS_ENDPOINT_URL", endpoint.clone()),
        ("AWS_ACCESS_KEY_ID", "k".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "s".to_owned()),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
    ];
    fs_err::create_dir_all(t.path().join("build/logs")).unwrap();
    fs_err::write(t.path().join("build/logs/build.log"), "log").unwrap();
    let cases = silent_endpoint_cases(&endpoint, &aws);
    for (bin, args, env) in cases {
        let (out, took) = run(bin, &args, &env, t.path());
        let err = text(&out.stderr);
        let name = Path::new(bin).file_name().unwrap().to_string_lossy();
        assert_eq!(out.status.code(), Some(1), "{name} {args:?}: {err}");
        assert!(
            took < Duration::from_secs(30),
            "{name} {args:?} took {took:?}"
        );
        assert!(err.contains(&hole.to_string()), "{name} {args:?}: {err}");
        assert!(
            err.contains("timed out") || err.contains("within 2 s"),
            "{name} {args:?}: {err}"
        );
    }
}

/// A log file the server refuses every time: the other logs, the flattened profile summaries
/// and the manifest still go up, and the error names the one that did not.
#[test]
fn a_refused_upload_is_named_and_the_rest_still_go_up() {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Status500)
                .method("PUT")
                .path_contains("build.log"),
        ),
    );
    let t = tempfile::tempdir().unwrap();
    let build = t.path().join("build");
    for (rel, content) in [
        ("logs/build.log", "build log"),
        ("logs/other.log", "other log"),
        ("logs/therock-build-prof/comp-summary.md", "# prof"),
        ("base/aux-overlay/build/therock_manifest.json", "{}"),
    ] {
        fs_err::create_dir_all(build.join(rel).parent().unwrap()).unwrap();
        fs_err::write(build.join(rel), content).unwrap();
    }
    let env = [
        ("AWS_ENDPOINT_URL", proxy.endpoint()),
        (
            "AWS_ACCESS_KEY_ID",
            rock_ci_test_support::s3::ACCESS_KEY.to_owned(),
        ),
        (
            "AWS_SECRET_ACCESS_KEY",
            rock_ci_test_support::s3::SECRET_KEY.to_owned(),
        ),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ("ROCK_CI_MAX_ATTEMPTS", "2".to_owned()),
    ];
    let started = Instant::now();
    let out = Command::new(crate::common::tool("post_build_upload"))
        .args([
            "--artifact-group",
            "g",
            "--build-dir",
            "build",
            "--run-id",
            "6",
            "--upload",
        ])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(t.path())
        .run_output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(started.elapsed() < Duration::from_mins(1));
    assert!(err.contains("logs/g/build.log"), "{err}");
    assert!(err.contains("++ Retry 1/1"), "retries are logged: {err}");
    let stored = server
        .root()
        .join(format!("therock-ci-artifacts/6-{HOST_PLATFORM}"));
    for rel in [
        "logs/g/other.log",
        "logs/g/therock-build-prof/comp-summary.md",
        "logs/g/comp-summary.md",
        "manifests/g/therock_manifest.json",
    ] {
        assert!(stored.join(rel).is_file(), "{rel} was not uploaded: {err}");
    }
    assert!(!stored.join("logs/g/build.log").exists());
    assert!(proxy.injected(Fault::Status500) >= 2);
}

/// Uploads through a proxy that answers some PUTs with 503 and resets others: each retry is
/// logged as `++ Retry i/N for LOCATION: reason` at the default level, and the closing totals
/// line counts them, as a fetch does.
#[test]
fn upload_retries_are_logged_and_counted() {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new()
            .rule(Rule::new(Fault::Status503).method("PUT").every(3))
            .rule(Rule::new(Fault::ResetBeforeHeaders).method("PUT").every(4)),
    );
    let t = tempfile::tempdir().unwrap();
    let build = t.path().join("build");
    for i in 0..12 {
        let rel = format!("logs/part{i:02}.log");
        fs_err::create_dir_all(build.join(&rel).parent().unwrap()).unwrap();
        fs_err::write(build.join(rel), format!("log {i}")).unwrap();
    }
    let manifest = build.join("base/aux-overlay/build/therock_manifest.json");
    fs_err::create_dir_all(manifest.parent().unwrap()).unwrap();
    fs_err::write(&manifest, "{}").unwrap();
    let env = crate::common::through_proxy(&server, &proxy, None);
    let out = Command::new(crate::common::tool("post_build_upload"))
        .args(upload(&[]))
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(t.path())
        .run_output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let injected = proxy.injected_total();
    assert!(injected >= 4, "only {injected} faults");
    let retries = stderr.lines().filter(|l| l.contains("++ Retry ")).count() as u64;
    assert_eq!(retries, injected, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "++ Retry 1/4 for s3://therock-ci-artifacts/5-{HOST_PLATFORM}/"
        )),
        "{stderr}"
    );
    let totals = stdout
        .lines()
        .find(|l| l.starts_with("Uploaded 13 of 13 files ("))
        .unwrap_or_else(|| panic!("no totals line: {stdout}"));
    assert!(
        totals.ends_with(&format!(" MiB/s), {injected} retries")),
        "{totals}"
    );
}

/// A password in the endpoint URL, the secret key and a GitHub token appear in no output of
/// an upload and a fetch at any log level, `-vvv` included (where the S3 SDK traces its
/// configuration, request spans and signing).
#[test]
fn secrets_stay_out_of_every_log_level() {
    const PASSWORD: &str = "Pw-s3cr3t-8431";
    const TOKEN: &str = "ghp_t0ken-5512";
    let server = S3Server::start();
    let t = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(t.path().join("build/logs")).unwrap();
    fs_err::write(t.path().join("build/logs/build.log"), "log").unwrap();
    let mut env: Vec<(&str, String)> = server.aws_env().to_vec();
    env.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
    let endpoint = server
        .endpoint()
        .replace("://", &format!("://rockuser:{PASSWORD}@"));
    env.push(("AWS_ENDPOINT_URL", endpoint));
    env.push(("GITHUB_TOKEN", TOKEN.to_owned()));
    let secret_key = server.aws_env()[2].1.clone();
    for level in ["-v", "-vv", "-vvv"] {
        let cases: [(&str, Vec<&str>); 2] = [
            (crate::common::tool("post_build_upload"), upload(&[level])),
            (
                crate::common::tool("fetch_artifacts"),
                vec![
                    "--run-id",
                    "5",
                    "--platform",
                    "linux",
                    "--output-dir",
                    "out",
                    level,
                ],
            ),
        ];
        for (bin, args) in cases {
            let (out, _) = run(bin, &args, &env, t.path());
            let all = text(&out.stdout) + &text(&out.stderr);
            let name = Path::new(bin).file_name().unwrap().to_string_lossy();
            assert!(all.lines().count() > 5, "{name} {level} logged: {all}");
            for secret in [PASSWORD, TOKEN, secret_key.as_str()] {
                let shown = all.lines().filter(|l| l.contains(secret)).count();
                assert_eq!(shown, 0, "{name} {level} printed {secret} {shown} times");
            }
        }
    }
}

/// A URL setting that does not parse, or a run id that is no number, is a usage error at once:
/// exit 2, the setting named, no request and no retry.
#[test]
fn malformed_urls_and_run_ids_are_usage_errors_before_any_request() {
    let t = tempfile::tempdir().unwrap();
    let hole = black_hole();
    let aws = [
        ("AWS_ENDPOINT_URL", format!("http://{hole}")),
        ("AWS_ACCESS_KEY_ID", "k".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "s".to_owned()),
    ];
    let with = |extra: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
        aws.iter()
            .cloned()
            .chain(extra.iter().map(|(k, v)| (*k, (*v).to_owned())))
            .collect()
    };
    let cases: Vec<(Case<'_>, &str)> = vec![
        (
            (
                crate::common::tool("find_latest_artifacts"),
                vec!["--artifact-group", "gfx94X-dcgpu"],
                with(&[("GITHUB_API_URL", "not-a-url")]),
            ),
            "GITHUB_API_URL",
        ),
        (
            (
                crate::common::tool("fetch_artifacts"),
                vec!["--run-id", "1/../2", "--output-dir", "out"],
                with(&[]),
            ),
            "1/../2",
        ),
        (
            (
                crate::common::tool("find_artifacts_for_commit"),
                vec!["--run-id", "12a"],
                with(&[]),
            ),
            "12a",
        ),
        (
            (
                crate::common::tool("fetch_artifacts"),
                vec!["--run-id", "5", "--output-dir", "out"],
                vec![
                    ("AWS_ENDPOINT_URL", "localhost:9000".to_owned()),
                    ("GITHUB_API_URL", format!("http://{hole}")),
                ],
            ),
            "AWS_ENDPOINT_URL",
        ),
    ];
    for ((bin, args, env), named) in cases {
        let (out, took) = run(bin, &args, &env, t.path());
        let err = text(&out.stderr);
        let name = Path::new(bin).file_name().unwrap().to_string_lossy();
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {err}");
        assert!(err.contains(named), "{name} {args:?}: {err}");
        assert!(!err.contains("++ Retry"), "{name} {args:?}: {err}");
        assert!(
            took < Duration::from_secs(5),
            "{name} {args:?} took {took:?}"
        );
    }
}

/// Zero where a count or limit must be positive is a usage error in every tool (exit 2, the
/// flag named), before anything runs.
#[test]
fn zero_counts_and_limits_are_usage_errors() {
    let t = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str]); 12] = [
        ("upload_python_packages", &["--upload-concurrency", "0"]),
        ("upload_python_packages", &["--max-attempts", "0"]),
        ("post_stage_upload", &["--upload-concurrency", "0"]),
        ("post_build_upload", &["--upload-concurrency", "0"]),
        (
            "fetch_artifacts",
            &["--run-id", "5", "--download-concurrency", "0"],
        ),
        (
            "fetch_artifacts",
            &["--run-id", "5", "--extract-concurrency", "0"],
        ),
        ("fetch_artifacts", &["--run-id", "5", "--read-timeout", "0"]),
        (
            "install_rocm_from_artifacts",
            &["--run-id", "5", "--download-concurrency", "0"],
        ),
        ("upload_tarballs", &["--connect-timeout", "0"]),
        ("upload_package_repo", &["--operation-timeout", "0"]),
        (
            "artifact_manager",
            &["fetch", "--run-id", "5", "--download-concurrency", "0"],
        ),
        ("find_latest_artifacts", &["--max-commits", "0"]),
    ];
    for (name, args) in cases {
        let (out, _) = run(crate::common::tool(name), args, &[], t.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {err}");
        let flag = args
            .iter()
            .find(|a| a.starts_with("--") && **a != "--run-id")
            .unwrap();
        assert!(err.contains(flag), "{name} {args:?}: {err}");
    }
    assert!(
        fs_err::read_dir(t.path()).unwrap().next().is_none(),
        "nothing written"
    );
}

/// With the default limits, an endpoint that refuses connections fails an upload within 15 s
/// (5 attempts, 0.5 s doubling backoff), each retry logged, and the error names the endpoint.
#[test]
fn a_refused_endpoint_fails_within_15_s_with_default_limits() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let t = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(t.path().join("build/logs")).unwrap();
    fs_err::write(t.path().join("build/logs/build.log"), "log").unwrap();
    let started = Instant::now();
    let out = Command::new(crate::common::tool("post_build_upload"))
        .args(upload(&[]))
        .env_clear()
        .envs([
            ("AWS_ENDPOINT_URL", endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", "k"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ])
        .current_dir(t.path())
        .run_output()
        .unwrap();
    let took = started.elapsed();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(15), "took {took:?}: {err}");
    assert!(err.contains(&endpoint), "{err}");
    assert!(err.contains("++ Retry 4/4 for "), "{err}");
    assert!(!err.contains("++ Retry 5/"), "{err}");
    assert_each_cause_once(&err);
}

/// A build dir of `logs` log files and a manifest.
fn many_logs(root: &Path, logs: usize) {
    let build = root.join("build");
    fs_err::create_dir_all(build.join("logs")).unwrap();
    for i in 0..logs {
        fs_err::write(
            build.join(format!("logs/part{i:03}.log")),
            format!("log {i}"),
        )
        .unwrap();
    }
    let manifest = build.join("base/aux-overlay/build/therock_manifest.json");
    fs_err::create_dir_all(manifest.parent().unwrap()).unwrap();
    fs_err::write(&manifest, "{}").unwrap();
}

/// Both log uploading tools on `endpoint` (with `limits` added to the environment) over a
/// build of 60 logs: each exits 1 in less than `bound`, with one error line naming the
/// endpoint, `cause` and every file as not uploaded, and retries only for the files that
/// were in flight when the endpoint was given up on (10 at a time), none per file.
fn dead_endpoint_fails_the_run_once(
    endpoint: &str,
    limits: &[(&'static str, &'static str)],
    cause: &str,
    bound: Duration,
) {
    let t = tempfile::tempdir().unwrap();
    many_logs(t.path(), 60);
    let attempts: usize = limits
        .iter()
        .find(|(k, _)| *k == "ROCK_CI_MAX_ATTEMPTS")
        .map_or(5, |(_, v)| v.parse().unwrap());
    let stage = [
        "--run-id",
        "5",
        "--stage",
        "math-libs",
        "--build-dir",
        "build",
    ];
    // post_build_upload also hands over the manifest.
    for (bin, args, files) in [
        ("post_build_upload", upload(&[]), 61),
        ("post_stage_upload", stage.to_vec(), 60),
    ] {
        let started = Instant::now();
        let out = Command::new(crate::common::tool(bin))
            .args(&args)
            .env_clear()
            .envs([
                ("AWS_ENDPOINT_URL", endpoint),
                ("AWS_ACCESS_KEY_ID", "k"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("AWS_EC2_METADATA_DISABLED", "true"),
            ])
            .envs(limits.iter().copied())
            .current_dir(t.path())
            .run_output()
            .unwrap();
        let took = started.elapsed();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{bin}: {stdout}\n{stderr}");
        assert!(took < bound, "{bin} took {took:?}: {stderr}");
        let errors: Vec<&str> = stdout
            .lines()
            .chain(stderr.lines())
            .filter(|l| !l.contains("++ Retry ") && l.to_lowercase().contains("error"))
            .collect();
        let expected = format!("endpoint {endpoint} unreachable (");
        let count = format!("): {files} of {files} files not uploaded");
        assert!(
            matches!(errors[..], [line] if line.contains(&expected) && line.contains(cause) && line.ends_with(&count)),
            "{bin}: {errors:#?}"
        );
        let retries = stderr.lines().filter(|l| l.contains("++ Retry ")).count();
        assert!(
            retries <= 10 * (attempts - 1),
            "{bin}: {retries} retries: {stderr}"
        );
        assert!(!stdout.contains("part059.log"), "{bin}: {stdout}");
        if bin == "post_build_upload" {
            // The count line agrees with the error: every file, none uploaded.
            assert!(
                stdout.contains(&format!("Uploaded 0 of {files} files (")),
                "{bin}: {stdout}"
            );
        }
    }
}

/// An endpoint that refuses every connection: the uploads of a whole build give up within
/// about the time of one request's retries (7.5 s with the default limits, as a fetch), not
/// once per file.
#[test]
fn a_refused_endpoint_fails_a_whole_upload_run_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    dead_endpoint_fails_the_run_once(
        &format!("http://127.0.0.1:{port}"),
        &[],
        "refused",
        Duration::from_secs(30),
    );
}

/// An endpoint that accepts connections and never answers: the uploads give up once the
/// first requests have used up their time (4 s here), not once per file.
#[test]
fn a_silent_endpoint_fails_a_whole_upload_run_once() {
    let hole = black_hole();
    dead_endpoint_fails_the_run_once(
        &format!("http://{hole}"),
        &[
            ("ROCK_CI_READ_TIMEOUT", "1"),
            ("ROCK_CI_OPERATION_TIMEOUT", "4"),
        ],
        "within 4 s",
        Duration::from_secs(16),
    );
}

/// A checkout in `dir` whose stage `compiler-runtime` produces one artifact holding `content`,
/// built in `dir/build`.
fn stage_producing(dir: &Path, content: &str) {
    // A stage that produces one artifact of the same size (stored, not compressed: random).
    fs_err::write(
        dir.join("BUILD_TOPOLOGY.toml"),
        "[build_stages.compiler-runtime]\ndescription = \"x\"\nartifact_groups = [\"g\"]\n\
         [artifact_groups.g]\n[artifacts.core]\nartifact_group = \"g\"\n",
    )
    .unwrap();
    let artifact = dir.join("build/artifacts/core_lib_generic");
    fs_err::create_dir_all(artifact.join("core/stage/lib")).unwrap();
    fs_err::write(artifact.join("artifact_manifest.txt"), "core/stage\n").unwrap();
    fs_err::write(artifact.join("core/stage/lib/big.so"), content).unwrap();
}

/// A single-request upload of 5 MiB to an endpoint that never answers gives up once the
/// operation timeout has passed, not after the time its body would take at the slowest
/// expected rate (80 s more here): every uploading tool, each naming the endpoint;
/// `artifact_manager push` in one error with the count of artifacts not uploaded.
#[test]
fn a_silent_endpoint_gives_up_a_body_upload_after_the_operation_timeout() {
    let hole = black_hole();
    let endpoint = format!("http://{hole}");
    let t = tempfile::tempdir().unwrap();
    let big = rock_ci_test_support::incompressible_text(5 << 20, 3);
    fs_err::create_dir_all(t.path().join("build/logs")).unwrap();
    fs_err::write(t.path().join("build/logs/big.log"), &big).unwrap();
    fs_err::create_dir_all(t.path().join("tarballs")).unwrap();
    fs_err::write(
        t.path()
            .join("tarballs/therock-dist-linux-multiarch-7.0.tar.gz"),
        &big,
    )
    .unwrap();
    fs_err::create_dir_all(t.path().join("reports")).unwrap();
    fs_err::write(t.path().join("reports/big.html"), &big).unwrap();
    stage_producing(t.path(), &big);
    let cases: [(&str, Vec<&str>); 4] = [
        (
            "artifact_manager",
            vec![
                "push",
                "--run-id",
                "1300002",
                "--stage",
                "compiler-runtime",
                "--build-dir",
                "build",
                "--platform",
                "linux",
            ],
        ),
        ("post_build_upload", upload(&[])),
        (
            "upload_tarballs",
            vec![
                "--input-tarballs-dir",
                "tarballs",
                "--run-id",
                "5",
                "--platform",
                "linux",
            ],
        ),
        (
            "upload_test_report_script",
            vec![
                "--run-id",
                "5",
                "--subfolder",
                "r",
                "--report-path",
                "reports",
                "--index-file-name",
                "index.html",
            ],
        ),
    ];
    for (bin, args) in cases {
        let started = Instant::now();
        let out = Command::new(crate::common::tool(bin))
            .args(&args)
            .env_clear()
            .envs([
                ("AWS_ENDPOINT_URL", endpoint.as_str()),
                ("AWS_ACCESS_KEY_ID", "k"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("AWS_EC2_METADATA_DISABLED", "true"),
                ("GITHUB_REPOSITORY", "ROCm/TheRock"),
                ("ROCK_CI_READ_TIMEOUT", "1"),
                ("ROCK_CI_OPERATION_TIMEOUT", "3"),
            ])
            .current_dir(t.path())
            .run_output()
            .unwrap();
        let took = started.elapsed();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bin}: {stderr}");
        // 5 attempts of 1 s and their backoff (7.5 s) would take 12.5 s.
        assert!(
            took < Duration::from_secs(10),
            "{bin} took {took:?}: {stderr}"
        );
        let said = format!("{stderr}{}", text(&out.stdout));
        assert!(said.contains(&hole.to_string()), "{bin}: {said}");
        if bin == "artifact_manager" {
            // One error for the run, naming the endpoint and what did not go up.
            let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("ERROR")).collect();
            assert!(
                matches!(errors[..], [line] if line.contains(&format!("endpoint {endpoint} unreachable (")) && line.ends_with("1 of 1 artifacts not uploaded")),
                "{said}"
            );
            assert!(!said.contains("!! Failed to upload"), "{said}");
        }
    }
}

/// Connections reset before any answer now and then, among answered requests: each is
/// retried, and every file goes up; the endpoint is not given up on.
#[test]
fn flaky_connections_among_answers_are_retried_to_a_complete_upload() {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().seed(7).rule(
            Rule::new(Fault::ResetBeforeHeaders)
                .method("PUT")
                .probability(0.3),
        ),
    );
    let t = tempfile::tempdir().unwrap();
    many_logs(t.path(), 60);
    let env = crate::common::through_proxy(&server, &proxy, None);
    let out = Command::new(crate::common::tool("post_build_upload"))
        .args(upload(&[]))
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(t.path())
        .run_output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(proxy.injected(Fault::ResetBeforeHeaders) >= 5, "{stderr}");
    assert!(
        stdout.contains("Uploaded 61 of 61 files ("),
        "{stdout}\n{stderr}"
    );
}

/// No cause is said twice in the error (the S3 client wraps a refused connection in two layers
/// that both call themselves `dispatch failure`; the GitHub client's retry summary was repeated
/// by the error that wraps it).
fn assert_each_cause_once(stderr: &str) {
    let error: String = stderr
        .lines()
        .skip_while(|l| !l.starts_with("error: "))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!error.is_empty(), "{stderr}");
    let mut seen = std::collections::BTreeSet::new();
    for cause in error.split(": ").flat_map(|c| c.split('\n')) {
        let cause = cause.trim();
        assert!(
            cause.is_empty() || seen.insert(cause),
            "`{cause}` twice in {error}"
        );
    }
}

/// A GitHub API that refuses connections: the error says each cause once.
#[test]
fn an_unreachable_api_is_told_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = tempfile::tempdir().unwrap();
    let out = Command::new(crate::common::tool("fetch_artifacts"))
        .args([
            "--run-id",
            "1",
            "--platform",
            "linux",
            "--artifact-group",
            "gfx94X-dcgpu",
            "--output-dir",
            "o",
            "--max-attempts",
            "2",
        ])
        .env_clear()
        .env("GITHUB_API_URL", format!("http://127.0.0.1:{port}"))
        .current_dir(t.path())
        .run_output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("after 2 attempt(s)"), "{err}");
    assert_each_cause_once(&err);
}

/// A `--local-staging-dir` that is not there is named as such by every tool that reads one,
/// instead of reading as a run without artifacts.
#[test]
fn a_missing_staging_dir_is_named() {
    let t = tempfile::tempdir().unwrap();
    fs_err::write(
        t.path().join("BUILD_TOPOLOGY.toml"),
        "[build_stages.s]\ndescription = \"x\"\nartifact_groups = [\"g\"]\n[artifact_groups.g]\n[artifacts.core]\nartifact_group = \"g\"\n",
    )
    .unwrap();
    let missing = t.path().join("no-such-staging");
    let missing_arg = missing.to_str().unwrap();
    let cases: [(&str, Vec<&str>); 3] = [
        (
            "fetch_artifacts",
            vec![
                "--run-id",
                "5",
                "--output-dir",
                "out",
                "--local-staging-dir",
                missing_arg,
            ],
        ),
        (
            "artifact_manager",
            vec![
                "fetch",
                "--run-id",
                "5",
                "--stage",
                "all",
                "--output-dir",
                "out",
                "--local-staging-dir",
                missing_arg,
            ],
        ),
        (
            "build_tarballs",
            vec![
                "--run-id",
                "5",
                "--dist-amdgpu-families",
                "gfx94X-dcgpu",
                "--package-version",
                "1.0",
                "--output-dir",
                "tarballs",
                "--local-staging-dir",
                missing_arg,
            ],
        ),
    ];
    for (bin, args) in cases {
        let (out, _) = run(crate::common::tool(bin), &args, &[], t.path());
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{bin}: {said}");
        assert!(
            said.contains(&format!(
                "The local staging directory `{}` does not exist",
                missing.display()
            )),
            "{bin}: {said}"
        );
        assert!(!said.contains("No matching artifacts"), "{bin}: {said}");
    }
}
