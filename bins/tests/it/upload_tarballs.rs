use std::path::Path;
use std::process::Output;

use rock_ci_test_support::{S3Server, assert_fails_with, files_under, sha256_hex};

use crate::common::{assert_ok, aws_env, borrowed, refusing_proxy, run_tool, text, write};

const MULTI: &str = "therock-dist-linux-multiarch-7.14.0.dev0+13caf791.tar.gz";
const FAMILY: &str = "therock-dist-linux-gfx94X-dcgpu-7.14.0.tar.gz";
const TESTS: &str = "therock-dist-linux-multiarch-tests-7.14.0.tar.gz";

fn run(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    run_tool(crate::common::tool("upload_tarballs"), args, env, cwd)
}

fn tarballs(dir: &Path) {
    for name in [MULTI, FAMILY, TESTS] {
        write(&dir.join(name), &format!("contents of {name}"));
    }
    write(&dir.join("nested/extra.tar.gz"), "nested");
    write(&dir.join("notes.txt"), "not a tarball");
}

// Spec §18.10 and §7: keys (nested tarballs keep their subpath), content types, sidecars, and
// the `tarball_urls` output with `+` encoded; a second upload to the same run adds to it.
#[test]
fn uploads_tarballs_with_sidecars_and_sets_the_url() {
    let server = S3Server::start();
    let bucket = "therock-dev-artifacts";
    server.create_bucket(bucket);
    let t = tempfile::tempdir().unwrap();
    tarballs(&t.path().join("tarballs"));
    let outputs = t.path().join("outputs");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.push(("GITHUB_OUTPUT", outputs.to_str().unwrap()));
    let args = [
        "--input-tarballs-dir",
        "tarballs",
        "--run-id",
        "27993936036",
        "--platform",
        "linux",
        "--release-type",
        "dev",
    ];
    let out = run(&args, &env, t.path());
    assert_ok(&out);
    let stored = server
        .root()
        .join(bucket)
        .join("27993936036-linux/tarballs");
    let mut expected = Vec::new();
    for name in [FAMILY, MULTI, TESTS, "nested/extra.tar.gz"] {
        expected.push(name.to_owned());
        expected.push(format!("{name}.sha256sum"));
    }
    expected.sort();
    assert_eq!(files_under(&stored), expected);
    let sha = sha256_hex(format!("contents of {MULTI}").as_bytes());
    assert_eq!(
        fs_err::read_to_string(stored.join(format!("{MULTI}.sha256sum"))).unwrap(),
        format!("{sha}  {MULTI}\n")
    );
    let key = format!("27993936036-linux/tarballs/{MULTI}");
    assert_eq!(
        server.content_type(bucket, &key).as_deref(),
        Some("application/gzip")
    );
    let url = "https://therock-dev-artifacts.s3.amazonaws.com/27993936036-linux/tarballs/therock-dist-linux-multiarch-7.14.0.dev0%2B13caf791.tar.gz";
    assert_eq!(
        fs_err::read_to_string(&outputs).unwrap(),
        format!("tarball_urls={{\"multiarch\": \"{url}\"}}\n")
    );
    let stdout = text(&out.stdout);
    for line in [
        "Found 3 tarballs in ",
        &format!("  {FAMILY} (0.0 MB)"),
        "Destination: s3://therock-dev-artifacts/27993936036-linux/tarballs",
        "Uploaded 4 files (0 unchanged), each with its .sha256sum sidecar",
    ] {
        assert!(stdout.contains(line), "{line} not in\n{stdout}");
    }
    // The reference's `gha_set_output` transcript: the JSON block, then an `OUTPUT` line.
    let value = format!("{{\"multiarch\": \"{url}\"}}");
    assert!(
        stdout.ends_with(&format!(
            "Setting github output:\n{{\n  \"tarball_urls\": {}\n}}\nOUTPUT tarball_urls={value}\n",
            serde_json::Value::from(value.as_str())
        )),
        "{stdout}"
    );
    // The input directory gets no sidecars.
    assert!(
        !t.path()
            .join(format!("tarballs/{MULTI}.sha256sum"))
            .exists()
    );

    // A second upload to the same run (another platform's job, say) adds to the prefix.
    let second = t.path().join("second");
    write(
        &second.join("therock-dist-linux-multiarch-7.15.0.tar.gz"),
        "v2",
    );
    let mut args2 = args;
    args2[1] = "second";
    assert_ok(&run(&args2, &env, t.path()));
    assert_eq!(files_under(&stored).len(), expected.len() + 2);
}

#[test]
fn release_type_platform_and_local_staging() {
    let t = tempfile::tempdir().unwrap();
    write(
        &t.path()
            .join("in/therock-dist-windows-multiarch-7.13.0.tar.gz"),
        "w",
    );
    let outputs = t.path().join("outputs");
    // `--release-type=` reads RELEASE_TYPE.
    let env = [
        ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
        ("RELEASE_TYPE", "nightly"),
    ];
    let out = run(
        &[
            "--input-tarballs-dir",
            "in",
            "--run-id",
            "42",
            "--platform",
            "windows",
            "--release-type=",
            "--output-dir",
            "staging",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    assert_eq!(
        files_under(&t.path().join("staging")),
        [
            "42-windows/tarballs/therock-dist-windows-multiarch-7.13.0.tar.gz",
            "42-windows/tarballs/therock-dist-windows-multiarch-7.13.0.tar.gz.sha256sum"
        ]
    );
    assert!(
        fs_err::read_to_string(&outputs)
            .unwrap()
            .contains("https://therock-nightly-artifacts.s3.amazonaws.com/42-windows/tarballs/"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn errors_leave_nothing_uploaded() {
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("fam/").join(FAMILY), "x");
    write(&t.path().join("bad/").join(MULTI), "x");
    write(
        &t.path().join("bad/").join(format!("{MULTI}.sha256sum")),
        &format!("{}  {MULTI}\n", "0".repeat(64)),
    );
    fs_err::create_dir_all(t.path().join("empty")).unwrap();
    type Case<'a> = (&'a [&'a str], i32, &'a str);
    let cases: &[Case<'_>] = &[
        (
            &["--input-tarballs-dir", "nope", "--run-id", "1"],
            1,
            "Tarballs directory not found: `nope`",
        ),
        (
            &["--input-tarballs-dir", "empty", "--run-id", "1"],
            1,
            "No .tar.gz files found in",
        ),
        (
            &[
                "--input-tarballs-dir",
                "fam",
                "--run-id",
                "1",
                "--platform",
                "linux",
            ],
            1,
            "No multiarch tarball in",
        ),
        (
            &[
                "--input-tarballs-dir",
                "bad",
                "--run-id",
                "1",
                "--platform",
                "linux",
            ],
            1,
            "does not match its sidecar",
        ),
        (
            &[
                "--input-tarballs-dir",
                "fam",
                "--run-id",
                "1",
                "--platform",
                "darwin",
            ],
            2,
            "invalid choice: `darwin`",
        ),
        (
            &[
                "--input-tarballs-dir",
                "fam",
                "--run-id",
                "1",
                "--release-type",
                "x",
            ],
            2,
            "--release-type",
        ),
        (&["--run-id", "1"], 2, "--input-tarballs-dir"),
    ];
    for (args, code, message) in cases {
        let mut args = args.to_vec();
        args.extend(["--output-dir", "staging"]);
        assert_fails_with(
            &run(&args, &[], t.path()),
            *code,
            message,
            &format!("{args:?}"),
        );
    }
    assert!(!t.path().join("staging").exists());
}

/// A tarball the server refuses: the error names it and no sidecar goes up (a sidecar never
/// vouches for a file that is not there).
#[test]
fn a_refused_tarball_uploads_no_sidecar() {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let (_proxy, env) = refusing_proxy(&server, "gfx94X");
    let t = tempfile::tempdir().unwrap();
    tarballs(&t.path().join("tarballs"));
    let env = borrowed(&env);
    let out = run(
        &[
            "--input-tarballs-dir",
            "tarballs",
            "--run-id",
            "8",
            "--platform",
            "linux",
        ],
        &env,
        t.path(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("8-linux/tarballs/{FAMILY}")), "{err}");
    assert!(err.contains("no sidecar was uploaded"), "{err}");
    let stored = server.root().join("therock-ci-artifacts/8-linux/tarballs");
    assert!(stored.join(MULTI).is_file());
    assert!(
        !files_under(&stored)
            .iter()
            .any(|f| f.ends_with(".sha256sum"))
    );
}
