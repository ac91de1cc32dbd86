//! The release publishers against the store of [`Store`]: the in-process server, or SeaweedFS
//! when `scripts/e2e-seaweedfs` names it. The run is seeded through the S3 API as rock-ci's
//! uploads write it (content types, recorded digests, multipart sources above 8 MiB), so the
//! copies, the checks at the destination and the conditional writes run on a production
//! server's semantics too.

use crate::common::Launch as _;
use std::process::{Command, Output};

use rock_ci_test_support::{assert_fails_with, incompressible_bytes, sha256_hex};

use crate::common::assert_ok;
use crate::store::Store;

/// A number that differs from one test run to the next, so names never meet the objects of an
/// earlier run on a long-lived server.
fn nonce() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        % 1_000_000_000_000
}

fn run(store: &Store, tool: &str, args: &[&str]) -> Output {
    Command::new(crate::common::tool(tool))
        .args(args)
        .env_clear()
        .envs(store.aws_env())
        .run_output()
        .unwrap()
}

/// The files of a release run (relative to `{run}/`), named with `n`: a 9 MiB tarball, a wheel
/// and an sdist, a deb and an rpm with their repositories' index files.
fn run_files(n: u128) -> Vec<(String, Vec<u8>)> {
    vec![
        (
            format!("tarballs/therock-dist-linux-gfx94X-dcgpu-7.13.0.dev{n}.tar.gz"),
            incompressible_bytes(9 << 20, 1),
        ),
        (
            format!("python/rocm_sdk_core-7.13.0.dev{n}-py3-none-linux_x86_64.whl"),
            incompressible_bytes(300_000, 2),
        ),
        (
            format!("python/rocm-7.13.0.dev{n}.tar.gz"),
            incompressible_bytes(2_000, 3),
        ),
        (
            format!("packages/deb/pool/main/a/amdrocm-core_{n}_amd64.deb"),
            incompressible_bytes(50_000, 4),
        ),
        (
            "packages/deb/dists/stable/Release".to_owned(),
            b"Suite: stable\n".to_vec(),
        ),
        (
            format!("packages/rpm/x86_64/amdrocm-core-{n}-1.x86_64.rpm"),
            incompressible_bytes(40_000, 5),
        ),
        (
            "packages/rpm/repodata/repomd.xml".to_owned(),
            b"<repomd/>\n".to_vec(),
        ),
    ]
}

// A run with a multipart tarball, wheels and both native repositories, published and checked
// object by object (bytes, content type, recorded digest); the rerun copies nothing.
#[test]
fn rocm_run_published_with_types_and_digests() {
    let store = Store::start();
    let (src, dst) = ("therock-dev-artifacts", "therock-repo-amd-dev-core");
    store.create_bucket(src);
    store.create_bucket(dst);
    let n = nonce();
    let run_id = format!("9{n}");
    let dir = tempfile::tempdir().unwrap();
    let files = run_files(n);
    for (i, (rel, data)) in files.iter().enumerate() {
        let name = rel.rsplit('/').next().unwrap();
        let path = dir.path().join(format!("{i}-{name}"));
        fs_err::write(&path, data).unwrap();
        store.upload(&path, src, &format!("{run_id}-linux/{rel}"));
    }
    // The date is named: a rerun after midnight would otherwise publish a second dated copy.
    let args = [
        "--date=20261207",
        "--run-id",
        run_id.as_str(),
        "--platform",
        "linux",
        "--release-type",
        "dev",
        "--kpack-split",
        "true",
        "--structured",
    ];
    let out = run(&store, "publish_rocm_to_release_buckets", &args);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let date = stderr
        .lines()
        .find_map(|l| l.strip_prefix("Native deb packages: "))
        .and_then(|l| l.rsplit("/deb/").next())
        .map_or_else(
            || panic!("no deb line in {stderr}"),
            |d| d.trim_end_matches('/').to_owned(),
        );
    assert_eq!(date, format!("20261207-{run_id}"));
    let destination = |rel: &str| -> String {
        let name = rel.rsplit('/').next().unwrap();
        if let Some(t) = rel.strip_prefix("tarballs/") {
            format!("v5/rocm/core/tarball/{t}")
        } else if name.starts_with("rocm_sdk_core") {
            format!("v5/rocm/core/whl-next/rocm-sdk-core/{name}")
        } else if name.starts_with("rocm-") {
            format!("v5/rocm/core/whl-next/rocm/{name}")
        } else {
            let (ty, rest) = rel
                .strip_prefix("packages/")
                .unwrap()
                .split_once('/')
                .unwrap();
            format!("v5/rocm/core/packages/{ty}/{date}/{rest}")
        }
    };
    for (rel, data) in &files {
        let key = destination(rel);
        let source = store.head(src, &format!("{run_id}-linux/{rel}")).unwrap();
        let copied = store
            .head(dst, &key)
            .unwrap_or_else(|| panic!("s3://{dst}/{key} was not published: {stderr}"));
        assert_eq!(copied.size, data.len() as u64, "{key}");
        assert_eq!(copied.content_type, source.content_type, "{key}");
        assert_eq!(
            copied.sha256.as_deref(),
            Some(sha256_hex(data).as_str()),
            "{key}"
        );
        if data.len() < 1 << 20 {
            assert_eq!(&store.read(dst, &key), data, "{key}");
        }
    }
    assert_eq!(
        store
            .head(dst, &destination(&files[0].0))
            .unwrap()
            .content_type
            .as_deref(),
        Some("application/gzip")
    );

    let out = run(&store, "publish_rocm_to_release_buckets", &args);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("7 objects were already published with the same content"),
        "{stderr}"
    );
}

// Two matrix jobs publish different bytes under one key of 9 MiB at the same moment: exactly
// one lands, the other fails naming the key, and the stored wheel is the winner's whole. A
// third job with the winner's bytes finds them published and succeeds.
#[test]
fn racing_publishers_of_a_large_wheel() {
    let store = Store::start();
    let bucket = "therock-repo-amd-dev-pytorch";
    store.create_bucket(bucket);
    let n = nonce();
    let name = format!("torch-2.10.0.dev{n}-cp312-cp312-linux_x86_64.whl");
    let key = format!("v5/rocm/pytorch/whl-next/torch/{name}");
    let jobs: Vec<(tempfile::TempDir, Vec<u8>)> = [11, 12]
        .into_iter()
        .map(|seed| {
            let dir = tempfile::tempdir().unwrap();
            let data = incompressible_bytes(9 << 20, seed);
            fs_err::write(dir.path().join(&name), &data).unwrap();
            (dir, data)
        })
        .collect();
    let children: Vec<_> = jobs
        .iter()
        .map(|(dir, _)| {
            Command::new(crate::common::tool("publish_pytorch_to_release_bucket"))
                .args([
                    &format!("--source-dir={}", dir.path().display()),
                    "--release-type=dev",
                    "--structured",
                ])
                .env_clear()
                .envs(store.aws_env())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .run_spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let winners: Vec<usize> = (0..2).filter(|&i| outs[i].status.success()).collect();
    assert_eq!(winners.len(), 1, "{outs:?}");
    let (winner, loser) = (winners[0], 1 - winners[0]);
    assert_fails_with(
        &outs[loser],
        1,
        &format!("s3://{bucket}/{key}"),
        "the loser",
    );
    let stored = store.head(bucket, &key).unwrap();
    assert_eq!(
        stored.sha256.as_deref(),
        Some(sha256_hex(&jobs[winner].1).as_str())
    );
    assert_eq!(stored.size, 9 << 20);

    let out = run(
        &store,
        "publish_pytorch_to_release_bucket",
        &[
            &format!("--source-dir={}", jobs[winner].0.path().display()),
            "--release-type=dev",
            "--structured",
        ],
    );
    assert_ok(&out);
}
