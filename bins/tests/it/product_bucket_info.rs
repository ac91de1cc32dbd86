//! `write_product_release_bucket_info`: the step outputs of every product package repository
//! (5 release types × 3 products), and the refusals.

use crate::common::Launch as _;
use std::process::Output;

use rock_ci_test_support::assert_fails_with;

/// Runs the tool with `args` and exactly `env`, plus `GITHUB_OUTPUT` in a fresh directory;
/// returns the output and the outputs file's content.
fn run(args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("outputs");
    let out = std::process::Command::new(crate::common::tool("write_product_release_bucket_info"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .env("GITHUB_OUTPUT", &outputs)
        .run_output()
        .unwrap();
    let written = fs_err::read_to_string(&outputs).unwrap_or_default();
    (out, written)
}

/// Release type and the stream of its product buckets and index (spec §0.1).
const STREAMS: [(&str, &str); 5] = [
    ("dev", "dev"),
    ("dev-bkc", "bkc"),
    ("nightly", "nightly"),
    ("nightly-bkc", "bkc"),
    ("prerelease", "rc"),
];

#[test]
fn writes_bucket_role_region_and_index_for_every_release_type_and_product() {
    let mut cases = 0;
    for (release_type, stream) in STREAMS {
        for product in ["core", "pytorch", "jax"] {
            // Neither the repository nor an event changes a product bucket.
            let env = [
                ("GITHUB_REPOSITORY", "someone/fork"),
                ("RELEASE_TYPE", "bogus"),
            ];
            let (out, written) = run(
                &["--release-type", release_type, "--product", product],
                &env,
            );
            let what = format!("{release_type} {product}");
            assert!(
                out.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let bucket = format!("therock-repo-amd-{stream}-{product}");
            let arn = format!("arn:aws:iam::324352301041:role/therock-repo-{stream}-{product}");
            let url = format!("https://{stream}.repo.amd.com/rocm/whl-next/");
            assert_eq!(
                written,
                format!(
                    "bucket={bucket}\niam_role={arn}\naws_region=us-east-2\npackage_index_url={url}\n"
                ),
                "{what}"
            );
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                format!(
                    "Setting github output:\n{{\n  \"bucket\": \"{bucket}\",\n  \"iam_role\": \"{arn}\",\n  \"aws_region\": \"us-east-2\",\n  \"package_index_url\": \"{url}\"\n}}\nOUTPUT bucket={bucket}\nOUTPUT iam_role={arn}\nOUTPUT aws_region=us-east-2\nOUTPUT package_index_url={url}\n"
                ),
                "{what}"
            );
            cases += 1;
        }
    }
    assert_eq!(cases, 15);
}

#[test]
fn dev_core_is_byte_exact_and_appends() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("outputs");
    fs_err::write(&outputs, "earlier=1\n").unwrap();
    let out = std::process::Command::new(crate::common::tool("write_product_release_bucket_info"))
        .args(["--release=dev", "--product", "pytorch", "--product=core"])
        .env_clear()
        .env("GITHUB_OUTPUT", &outputs)
        .run_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs_err::read_to_string(&outputs).unwrap(),
        "earlier=1\nbucket=therock-repo-amd-dev-core\niam_role=arn:aws:iam::324352301041:role/therock-repo-dev-core\naws_region=us-east-2\npackage_index_url=https://dev.repo.amd.com/rocm/whl-next/\n"
    );
}

#[test]
fn bad_arguments_are_usage_errors_and_write_nothing() {
    let cases: [(&[&str], &str); 5] = [
        (&["--release-type", "ci", "--product", "core"], "'ci'"),
        (
            &["--release-type", "release", "--product", "core"],
            "'release'",
        ),
        (
            &["--release-type", "dev", "--product", "python"],
            "'python'",
        ),
        (&["--release-type", "dev"], "--product"),
        (&["--product", "core"], "--release-type"),
    ];
    for (args, needle) in cases {
        let (out, written) = run(args, &[]);
        assert_fails_with(&out, 2, needle, &format!("{args:?}"));
        assert_eq!(written, "", "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn without_github_output_it_warns_and_succeeds() {
    let out = std::process::Command::new(crate::common::tool("write_product_release_bucket_info"))
        .args(["--release-type", "nightly", "--product", "jax"])
        .env_clear()
        .run_output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("Warning: GITHUB_OUTPUT env var not set"),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("Setting github output:\n"), "{stdout}");
    assert!(!stdout.contains("OUTPUT "), "{stdout}");
}
