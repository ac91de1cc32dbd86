//! `publish_rocm_to_release_buckets` on the in-process S3 server: the specification's vectors
//! (§1.5 R1–R13) with the plan-first fixes (nothing is copied when any source is missing or
//! unreadable), reruns and conflicts.

use crate::common::Launch as _;
use std::path::Path;
use std::process::{Command, Output};

use rock_ci_test_support::{S3Server, assert_fails_with, files_under};

use crate::common::{assert_ok, aws_env};

const TOOL: &str = "publish_rocm_to_release_buckets";

/// Fixture F of the specification, below `{run}/` (the directory marker left out).
const FIXTURE: [&str; 13] = [
    "tarballs/therock-dist-linux-gfx94X-dcgpu-7.13.0.tar.gz",
    "tarballs/therock-dist-linux-gfx94X-dcgpu-7.13.0.tar.gz.sha256sum",
    "tarballs/sub/nested.tar.gz",
    "python/rocm-7.13.0.tar.gz",
    "python/rocm_sdk_core-7.13.0-py3-none-linux_x86_64.whl",
    "python/rocm_sdk_device_gfx1100-7.13.0-py3-none-linux_x86_64.whl",
    "python/index.html",
    "python/gfx110X-all/rocm_sdk_libraries_gfx110X_all-7.13.0-py3-none-linux_x86_64.whl",
    "packages/deb/pool/main/a/amdrocm-core_8.0.0_amd64.deb",
    "packages/deb/dists/stable/Release",
    "packages/rpm/x86_64/amdrocm-core-8.0.0-1.x86_64.rpm",
    "packages/rpm/repodata/repomd.xml",
    "../123-linux/tarballs-old/x.tar.gz",
];

/// Stores `keys` (relative to `{bucket}/{run}/`) with their own names as contents.
fn seed(server: &S3Server, bucket: &str, run: &str, keys: &[&str]) {
    server.create_bucket(bucket);
    for key in keys {
        let path = server.root().join(bucket).join(run).join(key);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(&path, key).unwrap();
    }
}

fn run(server: &S3Server, args: &[&str]) -> Output {
    Command::new(crate::common::tool(TOOL))
        .args(args)
        .env_clear()
        .envs(aws_env(server))
        .run_output()
        .unwrap()
}

fn stored(server: &S3Server, bucket: &str) -> Vec<String> {
    let dir = server.root().join(bucket);
    if dir.is_dir() {
        files_under(&dir)
    } else {
        Vec::new()
    }
}

/// Today's UTC date, `YYYYMMDD`, counted out year by year and month by month from the
/// system clock (independently of the tool's own date arithmetic).
fn today() -> String {
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut days = secs / 86_400;
    let mut year = 1970;
    while days >= if leap(year) { 366 } else { 365 } {
        days -= if leap(year) { 366 } else { 365 };
        year += 1;
    }
    let february = if leap(year) { 29 } else { 28 };
    let mut month = 1;
    for length in [31, february, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] {
        if days < length {
            break;
        }
        days -= length;
        month += 1;
    }
    format!("{year:04}{month:02}{:02}", days + 1)
}

fn r1_keys(date: &str) -> Vec<String> {
    let mut keys: Vec<String> = [
        "v5/rocm/core/tarball/therock-dist-linux-gfx94X-dcgpu-7.13.0.tar.gz",
        "v5/rocm/core/tarball/sub/nested.tar.gz",
        "v5/rocm/core/whl-next/rocm/rocm-7.13.0.tar.gz",
        "v5/rocm/core/whl-next/rocm-sdk-core/rocm_sdk_core-7.13.0-py3-none-linux_x86_64.whl",
        "v5/rocm/core/whl-next/rocm-sdk-device-gfx1100/rocm_sdk_device_gfx1100-7.13.0-py3-none-linux_x86_64.whl",
        "v5/rocm/core/whl-next/rocm-sdk-libraries-gfx110x-all/rocm_sdk_libraries_gfx110X_all-7.13.0-py3-none-linux_x86_64.whl",
    ]
    .map(str::to_owned)
    .to_vec();
    for rel in [
        "deb/DATE-123/dists/stable/Release",
        "deb/DATE-123/pool/main/a/amdrocm-core_8.0.0_amd64.deb",
        "rpm/DATE-123/repodata/repomd.xml",
        "rpm/DATE-123/x86_64/amdrocm-core-8.0.0-1.x86_64.rpm",
    ] {
        keys.push(format!(
            "v5/rocm/core/packages/{}",
            rel.replace("DATE", date)
        ));
    }
    keys.sort();
    keys
}

/// The date the tests name with `--date` (one test leaves it to today's).
const DATE: &str = "20260722";

const R1: [&str; 10] = [
    "--date=20260722",
    "--run-id",
    "123",
    "--platform",
    "linux",
    "--release-type",
    "dev",
    "--kpack-split",
    "true",
    "--structured",
];

// R1, then a rerun that copies nothing.
#[test]
fn r1_structured_publication_and_rerun() {
    let server = S3Server::start();
    seed(&server, "therock-dev-artifacts", "123-linux", &FIXTURE);
    server.create_bucket("therock-repo-amd-dev-core");
    let date = DATE;
    let out = run(&server, &R1);
    assert_ok(&out);
    assert_eq!(stored(&server, "therock-repo-amd-dev-core"), r1_keys(date));
    let dst = server.root().join("therock-repo-amd-dev-core");
    assert_eq!(
        fs_err::read_to_string(dst.join(
            "v5/rocm/core/whl-next/rocm-sdk-libraries-gfx110x-all/rocm_sdk_libraries_gfx110X_all-7.13.0-py3-none-linux_x86_64.whl"
        ))
        .unwrap(),
        "python/gfx110X-all/rocm_sdk_libraries_gfx110X_all-7.13.0-py3-none-linux_x86_64.whl"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in [
        "Tarballs: s3://therock-dev-artifacts/123-linux/tarballs -> s3://therock-repo-amd-dev-core/v5/rocm/core/tarball\n",
        "Copied 2 tarballs\n",
        "Python package: s3://therock-dev-artifacts/123-linux/python/rocm-7.13.0.tar.gz -> s3://therock-repo-amd-dev-core/v5/rocm/core/whl-next/rocm/rocm-7.13.0.tar.gz\n",
        "Copied 4 python package files (structured)\n",
        "Copied 2 files for deb packages\n",
        "Copied 2 files for rpm packages\n",
    ] {
        assert!(stderr.contains(line), "{line} not in {stderr}");
    }

    let out = run(&server, &R1);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("10 objects were already published with the same content"),
        "{stderr}"
    );
    // The phases count what they copied, not what they planned.
    assert!(
        stderr.contains("Copied 0 tarballs (2 more already in place with the same content)\n"),
        "{stderr}"
    );
    assert_eq!(stored(&server, "therock-repo-amd-dev-core"), r1_keys(date));
}

// Without `--date` the native repositories are dated today (UTC); a rerun on a later day
// that names the first day's date lands on the same keys and copies nothing.
#[test]
fn the_native_package_date_is_today_unless_named() {
    let server = S3Server::start();
    seed(&server, "therock-dev-artifacts", "123-linux", &FIXTURE);
    server.create_bucket("therock-repo-amd-dev-core");
    let before = today();
    let out = run(&server, &R1[1..]);
    let after = today();
    assert_ok(&out);
    let keys = stored(&server, "therock-repo-amd-dev-core");
    let date = [before, after]
        .into_iter()
        .find(|d| keys == r1_keys(d))
        .unwrap_or_else(|| panic!("not dated today: {keys:?}"));
    let mut args = R1[1..].to_vec();
    let named = format!("--date={date}");
    args.push(&named);
    let out = run(&server, &args);
    assert_ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("10 objects were already published with the same content"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stored(&server, "therock-repo-amd-dev-core"), r1_keys(&date));

    // Another day is another directory beside the first.
    let out = run(&server, &R1);
    assert_ok(&out);
    let keys = stored(&server, "therock-repo-amd-dev-core");
    for key in r1_keys(DATE).iter().chain(&r1_keys(&date)) {
        assert!(keys.contains(key), "{key} not in {keys:?}");
    }
}

// A publication cut short by a failing copy: every other package is still copied, the native
// repositories' index files are not (they would name a package that is missing), and the
// error names the failed object. The rerun completes it, copying only what is missing, and
// the index files go last, after every package.
#[test]
fn a_half_finished_publication_completes_on_rerun_with_indexes_last() {
    use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule};
    use std::sync::{Arc, Mutex};
    let server = S3Server::start();
    seed(&server, "therock-dev-artifacts", "123-linux", &FIXTURE);
    server.create_bucket("therock-repo-amd-dev-core");
    let date = DATE;
    // Every copy request in the order it reached the server (its destination key).
    let copies = Arc::new(Mutex::new(Vec::<String>::new()));
    let proxy = |broken: Option<&'static str>| {
        let copies = copies.clone();
        let record = Rule::new(Fault::Status500).when(move |head| {
            if head.method == "PUT" && head.header("x-amz-copy-source").is_some() {
                copies.lock().unwrap().push(head.path.clone());
            }
            false
        });
        let mut plan = FaultPlan::new().rule(record);
        if let Some(key) = broken {
            plan = plan.rule(
                Rule::new(Fault::Status500)
                    .method("PUT")
                    .path_contains(key)
                    .when(|head| head.header("x-amz-copy-source").is_some()),
            );
        }
        FaultProxy::start(server.addr(), plan)
    };
    let run_via = |proxy: &FaultProxy| {
        let mut env = aws_env(&server);
        for (k, v) in &mut env {
            if *k == "AWS_ENDPOINT_URL" {
                *v = proxy.endpoint();
            }
        }
        let mut args = R1.to_vec();
        args.extend(["--max-attempts", "1"]);
        Command::new(crate::common::tool(TOOL))
            .args(&args)
            .env_clear()
            .envs(env)
            .run_output()
            .unwrap()
    };
    let is_index = |key: &str| key.contains("/dists/") || key.contains("/repodata/");

    let broken = proxy(Some("amdrocm-core_8.0.0_amd64.deb"));
    let out = run_via(&broken);
    assert_fails_with(&out, 1, "amdrocm-core_8.0.0_amd64.deb", "a failed copy");
    let left: Vec<String> = r1_keys(date)
        .into_iter()
        .filter(|k| !k.contains("amdrocm-core_8.0.0_amd64.deb") && !is_index(&format!("/{k}")))
        .collect();
    assert_eq!(stored(&server, "therock-repo-amd-dev-core"), left);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Copied 2 tarballs\n"), "{stderr}");
    assert!(!stderr.contains("files for deb packages"), "{stderr}");
    drop(broken);

    copies.lock().unwrap().clear();
    let fixed = proxy(None);
    let out = run_via(&fixed);
    assert_ok(&out);
    assert_eq!(stored(&server, "therock-repo-amd-dev-core"), r1_keys(date));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("7 objects were already published with the same content"),
        "{stderr}"
    );
    let order = copies.lock().unwrap().clone();
    assert_eq!(order.len(), 3, "{order:?}");
    assert!(
        order[0].contains("amdrocm-core_8.0.0_amd64.deb?"),
        "{order:?}"
    );
    assert!(order[1..].iter().all(|k| is_index(k)), "{order:?}");
}

// R2 (ASAN), R3 (prerelease, `TRUE`, whl index, fixed native prefix), R4 (Windows).
#[test]
fn r2_r3_r4_variants() {
    let server = S3Server::start();
    seed(&server, "therock-dev-artifacts", "123-linux", &FIXTURE);
    server.create_bucket("therock-repo-amd-dev-core");
    let mut args = R1.to_vec();
    args.extend(["--build-variant", "asan"]);
    let out = run(&server, &args);
    assert_ok(&out);
    let date = DATE;
    assert_eq!(
        stored(&server, "therock-repo-amd-dev-core"),
        [
            format!("v5/rocm/core/packages-asan/deb/{date}-123/dists/stable/Release"),
            format!(
                "v5/rocm/core/packages-asan/deb/{date}-123/pool/main/a/amdrocm-core_8.0.0_amd64.deb"
            ),
            format!("v5/rocm/core/packages-asan/rpm/{date}-123/repodata/repomd.xml"),
            format!(
                "v5/rocm/core/packages-asan/rpm/{date}-123/x86_64/amdrocm-core-8.0.0-1.x86_64.rpm"
            ),
            "v5/rocm/core/tarball-asan/sub/nested.tar.gz".to_owned(),
            "v5/rocm/core/tarball-asan/therock-dist-linux-gfx94X-dcgpu-7.13.0.tar.gz".to_owned(),
        ]
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "Copied 2 tarballs\nSkipping python packages for ASAN build variant\nNative deb packages: "
    ));

    seed(
        &server,
        "therock-prerelease-artifacts",
        "123-linux",
        &FIXTURE,
    );
    server.create_bucket("therock-repo-amd-rc-core");
    let out = run(
        &server,
        &[
            "--run-id=123",
            "--platform=linux",
            "--release-type=prerelease",
            "--kpack-split=TRUE",
            "--structured",
            "--python-index=whl",
        ],
    );
    assert_ok(&out);
    let rc = stored(&server, "therock-repo-amd-rc-core");
    for key in [
        "v5/rocm/core/whl/rocm/rocm-7.13.0.tar.gz",
        "v5/rocm/core/packages/deb/dists/stable/Release",
        "v5/rocm/core/packages/rpm/repodata/repomd.xml",
        "v5/rocm/core/tarball/sub/nested.tar.gz",
    ] {
        assert!(rc.contains(&key.to_owned()), "{key} not in {rc:?}");
    }
    assert_eq!(rc.len(), 10);

    seed(
        &server,
        "therock-nightly-artifacts",
        "777-windows",
        &[
            "tarballs/therock-dist-windows-gfx1151-7.13.0.tar.gz",
            "python/rocm_sdk_core-7.13.0-py3-none-win_amd64.whl",
            "python/rocm-7.13.0.tar.gz",
        ],
    );
    server.create_bucket("therock-repo-amd-bkc-core");
    let out = run(
        &server,
        &[
            "--run-id",
            "777",
            "--platform",
            "windows",
            "--release-type",
            "nightly-bkc",
            "--kpack-split",
            "true",
            "--structured",
        ],
    );
    assert_ok(&out);
    assert_eq!(
        stored(&server, "therock-repo-amd-bkc-core"),
        [
            "v5/rocm/core/tarball/therock-dist-windows-gfx1151-7.13.0.tar.gz",
            "v5/rocm/core/whl-next/rocm-sdk-core/rocm_sdk_core-7.13.0-py3-none-win_amd64.whl",
            "v5/rocm/core/whl-next/rocm/rocm-7.13.0.tar.gz",
        ]
    );
}

// R5 (legacy per-family) and R6 (legacy kpack-split).
#[test]
fn r5_r6_legacy_python_buckets() {
    let server = S3Server::start();
    seed(&server, "therock-dev-artifacts", "123-linux", &FIXTURE);
    server.create_bucket("therock-repo-amd-dev-core");
    server.create_bucket("therock-repo-amd-bkc-core");
    server.create_bucket("therock-dev-python");
    let base = [
        "--run-id",
        "123",
        "--platform",
        "linux",
        "--skip-native-packages",
    ];
    let mut args = base.to_vec();
    args.extend(["--release-type", "dev"]);
    assert_ok(&run(&server, &args));
    let python = [
        "gfx110X-all/rocm_sdk_libraries_gfx110X_all-7.13.0-py3-none-linux_x86_64.whl",
        "rocm-7.13.0.tar.gz",
        "rocm_sdk_core-7.13.0-py3-none-linux_x86_64.whl",
        "rocm_sdk_device_gfx1100-7.13.0-py3-none-linux_x86_64.whl",
    ];
    let mut expected: Vec<String> = ["v3/whl", "v3/whl-staging"]
        .iter()
        .flat_map(|p| python.iter().map(move |f| format!("{p}/{f}")))
        .collect();
    expected.sort();
    assert_eq!(stored(&server, "therock-dev-python"), expected);
    assert_eq!(stored(&server, "therock-repo-amd-dev-core").len(), 2);

    let mut args = base.to_vec();
    args.extend(["--release-type", "dev-bkc", "--kpack-split", "true"]);
    assert_ok(&run(&server, &args));
    let v4: Vec<String> = stored(&server, "therock-dev-python")
        .into_iter()
        .filter(|k| k.starts_with("v4/"))
        .collect();
    assert_eq!(v4, python.map(|f| format!("v4/whl/{f}")));
    assert_eq!(stored(&server, "therock-repo-amd-bkc-core").len(), 2);
}

// R7, R11: usage errors before any S3 access.
#[test]
fn r7_r11_usage_errors() {
    let server = S3Server::start();
    let out = run(
        &server,
        &[
            "--run-id",
            "123",
            "--platform",
            "linux",
            "--release-type",
            "dev",
            "--structured",
        ],
    );
    assert_fails_with(
        &out,
        2,
        "--structured requires --kpack-split true (multi-arch only)",
        "R7",
    );
    assert!(out.stdout.is_empty());
    let out = run(&server, &["--run-id", "123", "--release-type", "release"]);
    assert_fails_with(&out, 2, "'release'", "R11");
    let out = run(
        &server,
        &[
            "--run-id",
            "123",
            "--release-type",
            "dev",
            "--platform",
            "darwin",
        ],
    );
    assert_fails_with(&out, 2, "'darwin'", "platform");
    for bad in ["20260230", "2026-07-22", "today", ""] {
        let mut args = R1[1..].to_vec();
        let date = format!("--date={bad}");
        args.push(&date);
        let out = run(&server, &args);
        assert_fails_with(
            &out,
            2,
            &format!("{bad:?} is not a calendar date written YYYYMMDD"),
            "date",
        );
    }
    assert_eq!(server.requests(), 0);
}

/// Seeds `keys` into a fresh server's dev artifacts bucket for run 123, runs R1 with `extra`,
/// and returns the server and the output.
fn r1_with(keys: &[&str], extra: &[&str]) -> (S3Server, Output) {
    let server = S3Server::start();
    seed(&server, "therock-dev-artifacts", "123-linux", keys);
    server.create_bucket("therock-repo-amd-dev-core");
    let mut args = R1.to_vec();
    args.extend(extra);
    let out = run(&server, &args);
    (server, out)
}

// R8, R9, R10, R12: every source is listed and every name checked before the first copy, so
// these publish nothing at all (the reference copied what came before the failure).
#[test]
fn r8_r9_r10_r12_fail_before_any_copy() {
    let (server, out) = r1_with(&["python/rocm-7.13.0.tar.gz"], &[]);
    assert_fails_with(
        &out,
        1,
        "No tarballs found at s3://therock-dev-artifacts/123-linux/tarballs",
        "R8",
    );
    assert!(stored(&server, "therock-repo-amd-dev-core").is_empty());

    let (server, out) = r1_with(
        &[
            "tarballs/t.tar.gz",
            "python/amd-torch-device-gfx942-2.10.0-py3-none-linux_x86_64.whl",
        ],
        &[],
    );
    assert_fails_with(
        &out,
        1,
        "Cannot parse wheel filename 'amd-torch-device-gfx942-2.10.0-py3-none-linux_x86_64.whl'",
        "R9",
    );
    assert!(stored(&server, "therock-repo-amd-dev-core").is_empty());

    let (server, out) = r1_with(
        &[
            "tarballs/t.tar.gz",
            "python/rocm-7.13.0.tar.gz",
            "packages/deb/pool/x.deb",
        ],
        &[],
    );
    assert_fails_with(
        &out,
        1,
        "No rpm packages found at s3://therock-dev-artifacts/123-linux/packages/rpm",
        "R10",
    );
    assert!(stored(&server, "therock-repo-amd-dev-core").is_empty());

    let (server, out) = r1_with(
        &[
            "tarballs/t.tar.gz",
            "python/a/rocm-7.13.0.tar.gz",
            "python/b/rocm-7.13.0.tar.gz",
        ],
        &["--skip-native-packages"],
    );
    assert_fails_with(
        &out,
        1,
        "s3://therock-dev-artifacts/123-linux/python/a/rocm-7.13.0.tar.gz",
        "R12",
    );
    assert_fails_with(
        &out,
        1,
        "s3://therock-dev-artifacts/123-linux/python/b/rocm-7.13.0.tar.gz",
        "R12",
    );
    assert!(stored(&server, "therock-repo-amd-dev-core").is_empty());
}

// R13: the plan printed, nothing copied.
#[test]
fn r13_dry_run_copies_nothing() {
    let (server, out) = r1_with(&FIXTURE, &["--dry-run"]);
    assert_ok(&out);
    assert!(stored(&server, "therock-repo-amd-dev-core").is_empty());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 10, "{stdout}");
    assert!(
        stdout.contains("[DRY RUN] copy s3://therock-dev-artifacts/123-linux/tarballs/sub/nested.tar.gz -> s3://therock-repo-amd-dev-core/v5/rocm/core/tarball/sub/nested.tar.gz\n"),
        "{stdout}"
    );
}

// A dry run without credentials: the plan is made from an unsigned listing where the
// artifacts bucket allows it (the public CI buckets); where it does not, one error says that
// the listing needs read access, and nothing is written either way.
#[test]
fn dry_run_without_credentials() {
    let public = S3Server::start_with(rock_ci_test_support::S3ServerOptions {
        anonymous: true,
        ..Default::default()
    });
    let private = S3Server::start();
    for server in [&public, &private] {
        seed(server, "therock-dev-artifacts", "123-linux", &FIXTURE);
        server.create_bucket("therock-repo-amd-dev-core");
    }
    let mut args = R1.to_vec();
    args.push("--dry-run");
    let no_credentials = |server: &S3Server| {
        Command::new(crate::common::tool(TOOL))
            .args(&args)
            .env_clear()
            .env("AWS_ENDPOINT_URL", server.endpoint())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .run_output()
            .unwrap()
    };
    let out = no_credentials(&public);
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 10, "{stdout}");
    assert!(
        stdout.contains("[DRY RUN] copy s3://therock-dev-artifacts/123-linux/tarballs/sub/nested.tar.gz -> s3://therock-repo-amd-dev-core/v5/rocm/core/tarball/sub/nested.tar.gz\n"),
        "{stdout}"
    );
    assert!(stored(&public, "therock-repo-amd-dev-core").is_empty());

    let out = no_credentials(&private);
    assert_fails_with(
        &out,
        1,
        "lists the run's sources in therock-dev-artifacts, which needs read access",
        "no read access",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert!(stored(&private, "therock-repo-amd-dev-core").is_empty());
}

// Another object under a tarball's or package's key is not replaced; a native repository's
// index file is (it changes from run to run).
#[test]
fn different_published_files_are_not_replaced() {
    let server = S3Server::start();
    seed(&server, "therock-dev-artifacts", "123-linux", &FIXTURE);
    seed(
        &server,
        "therock-repo-amd-dev-core",
        "v5/rocm/core",
        &["tarball/sub/nested.tar.gz"],
    );
    let nested = server
        .root()
        .join("therock-repo-amd-dev-core/v5/rocm/core/tarball/sub/nested.tar.gz");
    fs_err::write(&nested, "other bytes").unwrap();
    let out = run(&server, &R1);
    assert_fails_with(
        &out,
        1,
        "s3://therock-repo-amd-dev-core/v5/rocm/core/tarball/sub/nested.tar.gz",
        "conflict",
    );
    assert_eq!(fs_err::read_to_string(&nested).unwrap(), "other bytes");

    fs_err::remove_file(&nested).unwrap();
    let date = DATE;
    let release = Path::new("therock-repo-amd-dev-core/v5/rocm/core/packages/deb")
        .join(format!("{date}-123/dists/stable/Release"));
    let release = server.root().join(release);
    fs_err::create_dir_all(release.parent().unwrap()).unwrap();
    fs_err::write(&release, "an older index").unwrap();
    assert_ok(&run(&server, &R1));
    assert_eq!(
        fs_err::read_to_string(&release).unwrap(),
        "packages/deb/dists/stable/Release"
    );
}

// Copies keep the source's content type and metadata (its recorded SHA-256 included), and the
// digest is checked at the destination.
#[test]
fn copies_keep_content_type_and_metadata() {
    let server = S3Server::start();
    server.create_bucket("therock-repo-amd-dev-core");
    let wheel = b"wheel bytes";
    let sha = rock_ci_test_support::sha256_hex(wheel);
    let src = "therock-dev-artifacts";
    server.seed_object(
        src,
        "123-windows/python/rocm_sdk_core-7.13.0-py3-none-win_amd64.whl",
        wheel,
        Some("application/zip"),
        &[("sha256", &sha)],
    );
    server.seed_object(
        src,
        "123-windows/tarballs/t.tar.gz",
        b"tarball",
        Some("application/gzip"),
        &[],
    );
    let out = run(
        &server,
        &[
            "--run-id=123",
            "--platform=windows",
            "--release-type=dev",
            "--kpack-split=true",
            "--structured",
        ],
    );
    assert_ok(&out);
    let dst = "therock-repo-amd-dev-core";
    let key = "v5/rocm/core/whl-next/rocm-sdk-core/rocm_sdk_core-7.13.0-py3-none-win_amd64.whl";
    assert_eq!(
        server.content_type(dst, key).as_deref(),
        Some("application/zip")
    );
    assert_eq!(
        server
            .content_type(dst, "v5/rocm/core/tarball/t.tar.gz")
            .as_deref(),
        Some("application/gzip")
    );
    let records: Vec<String> = fs_err::read_dir(server.root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".metadata.json"))
        .map(|p| fs_err::read_to_string(p).unwrap())
        .collect();
    assert_eq!(
        records.iter().filter(|r| r.contains(&sha)).count(),
        2,
        "{records:?}"
    );
}

// A published object whose `ETag` cannot tell (uploaded in parts, no recorded SHA-256) is
// compared by its bytes: the same bytes are left as they are, other bytes of the same size are
// a conflict naming both digests.
#[test]
fn a_published_file_uploaded_in_parts_is_compared_by_its_bytes() {
    let server = S3Server::start();
    seed(&server, "therock-dev-artifacts", "123-linux", &FIXTURE);
    let (bucket, key) = (
        "therock-repo-amd-dev-core",
        "v5/rocm/core/tarball/sub/nested.tar.gz",
    );
    let same = b"tarballs/sub/nested.tar.gz";
    server.seed_object(bucket, key, same, Some("application/x-other"), &[]);
    server.set_etag(bucket, key, "0123456789abcdef0123456789abcdef-2");
    assert_ok(&run(&server, &R1));
    // Not copied again: the other tool's content type is still there.
    assert_eq!(
        server.content_type(bucket, key).as_deref(),
        Some("application/x-other")
    );

    let other = b"tarballs/sub/NESTED.tar.gz";
    server.seed_object(bucket, key, other, None, &[]);
    server.set_etag(bucket, key, "0123456789abcdef0123456789abcdef-2");
    let out = run(&server, &R1);
    assert_fails_with(
        &out,
        1,
        &format!("s3://{bucket}/{key}"),
        &format!(
            "{} bytes of sha256 {}",
            other.len(),
            rock_ci_test_support::sha256_hex(other)
        ),
    );
    assert_eq!(
        fs_err::read(server.root().join(bucket).join(key)).unwrap(),
        other
    );
}
