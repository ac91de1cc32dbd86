//! Integration tests of the artifact backends: a local staging directory and a real
//! S3-protocol server on 127.0.0.1, with the same expectations for both where they overlap.

mod fetch;

use std::collections::HashMap;
use std::path::Path;

use artifact_backend::{ArtifactBackend, Error, backend_from_env};
use rock_ci_test_support::S3Server;
use rock_ci_test_support::s3::{ACCESS_KEY, SECRET_KEY};
use storage_backend::{Anonymous, ClientOptions, Credentials, S3Client};
use workflow_outputs::{ForkEvidence, Platform, WorkflowOutputRoot};

pub(crate) fn write(path: &Path, content: &[u8]) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

fn sha(data: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(data))
}

pub(crate) async fn client(server: &S3Server, secret: &str) -> S3Client {
    S3Client::connect_with(
        &ClientOptions {
            region: Some("us-east-1".into()),
            endpoint_url: Some(server.endpoint()),
            anonymous: Anonymous::Never,
            credentials: Some(Credentials::new(ACCESS_KEY, secret, None, None, "test")),
            max_attempts: 2,
            ..ClientOptions::default()
        },
        &|_| None,
    )
    .await
}

/// The local backend of run `{run}-linux` in the staging directory `dir`.
pub(crate) fn local(dir: &Path, run: &str) -> ArtifactBackend {
    ArtifactBackend::local(
        dir,
        WorkflowOutputRoot::for_local(Some(run), Some(Platform::Linux), None).unwrap(),
    )
    .unwrap()
}

pub(crate) fn root(bucket: &str, external: &str, run: &str) -> WorkflowOutputRoot {
    WorkflowOutputRoot::new(bucket, external, run, Platform::Linux).unwrap()
}

fn names(entries: &[artifact_backend::ArtifactEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.file_name.as_str()).collect()
}

// Spec §18.6, local backend.
#[tokio::test]
async fn local_backend_vectors() {
    let t = tempfile::tempdir().unwrap();
    let r =
        WorkflowOutputRoot::for_local(Some("test-run-123"), Some(Platform::Linux), None).unwrap();
    let b = ArtifactBackend::local(t.path(), r).unwrap();
    let base = t.path().join("test-run-123-linux");
    assert_eq!(b.base_uri(), base.display().to_string());
    assert!(base.is_dir());
    assert!(b.list_artifacts(None).await.unwrap().is_empty());
    for f in [
        "blas_lib_gfx94X.tar.zst",
        "blas_dev_gfx94X.tar.xz",
        "fft_lib_generic.tar.zst",
        "blas_lib_gfx94X.tar.zst.sha256sum",
        "README.txt",
    ] {
        write(&base.join(f), b"x");
    }
    write(&base.join("logs/nested_lib_generic.tar.zst"), b"x");
    assert_eq!(
        names(&b.list_artifacts(None).await.unwrap()),
        [
            "blas_dev_gfx94X.tar.xz",
            "blas_lib_gfx94X.tar.zst",
            "fft_lib_generic.tar.zst"
        ]
    );
    assert_eq!(b.list_artifacts(Some("blas")).await.unwrap().len(), 2);
    assert_eq!(
        names(&b.list_artifacts(Some("fft")).await.unwrap()),
        ["fft_lib_generic.tar.zst"]
    );
    assert!(
        b.list_artifacts(Some("nonexistent"))
            .await
            .unwrap()
            .is_empty()
    );

    // Upload with a matching sidecar, then download it back.
    let src = t.path().join("source/test_artifact.tar.xz");
    let content = b"test artifact content xz";
    write(&src, content);
    write(
        &t.path().join("source/test_artifact.tar.xz.sha256sum"),
        format!("{}  test_artifact.tar.xz\n", sha(content)).as_bytes(),
    );
    b.upload_artifact(&src, "test_artifact.tar.xz")
        .await
        .unwrap();
    assert!(b.artifact_exists("test_artifact.tar.xz").await.unwrap());
    assert!(base.join("test_artifact.tar.xz.sha256sum").is_file());
    let dest = t.path().join("dest/downloaded.tar.xz");
    let got = b
        .download_artifact("test_artifact.tar.xz", &dest)
        .await
        .unwrap();
    assert!(got.verified);
    assert_eq!(fs_err::read(&dest).unwrap(), content);
    assert!(
        t.path()
            .join("dest/test_artifact.tar.xz.sha256sum")
            .is_file()
    );

    // Missing things.
    let err = b
        .download_artifact("nonexistent.tar.xz", &t.path().join("dest/n.tar.xz"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    let err = b
        .upload_artifact(&t.path().join("nope.tar.xz"), "nope.tar.xz")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::MissingSource(_)), "{err:?}");
    assert!(!b.artifact_exists("exists.tar.zst").await.unwrap());
    write(&base.join("exists.tar.zst"), b"");
    assert!(b.artifact_exists("exists.tar.zst").await.unwrap());

    // A sidecar that does not match the source: nothing uploaded.
    let bad = t.path().join("source/bad_lib_generic.tar.zst");
    write(&bad, b"content");
    write(
        &t.path().join("source/bad_lib_generic.tar.zst.sha256sum"),
        format!("{}\n", sha(b"other")).as_bytes(),
    );
    let err = b
        .upload_artifact(&bad, "bad_lib_generic.tar.zst")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
    assert!(!base.join("bad_lib_generic.tar.zst").exists());
}

#[tokio::test]
async fn local_download_with_bad_sidecar_leaves_nothing() {
    let t = tempfile::tempdir().unwrap();
    let r = WorkflowOutputRoot::for_local(Some("1"), Some(Platform::Linux), None).unwrap();
    let b = ArtifactBackend::local(t.path(), r).unwrap();
    let base = t.path().join("1-linux");
    write(&base.join("a_lib_generic.tar.zst"), b"real bytes");
    write(
        &base.join("a_lib_generic.tar.zst.sha256sum"),
        format!("{}\n", sha(b"other bytes")).as_bytes(),
    );
    let dest = t.path().join("out/a_lib_generic.tar.zst");
    let err = b
        .download_artifact("a_lib_generic.tar.zst", &dest)
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("Checksum mismatch for "),
        "{err}"
    );
    assert!(!dest.exists());
    assert_eq!(fs_err::read_dir(t.path().join("out")).unwrap().count(), 0);
    write(&base.join("b_lib_generic.tar.zst.sha256sum"), b"");
    write(&base.join("b_lib_generic.tar.zst"), b"x");
    let err = b
        .download_artifact("b_lib_generic.tar.zst", &t.path().join("out/b.tar.zst"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidSidecar(_)), "{err:?}");
}

#[tokio::test]
async fn local_copy_between_runs() {
    let t = tempfile::tempdir().unwrap();
    let src = local(t.path(), "source-run");
    let dst = local(t.path(), "dest-run");
    write(
        &t.path().join("source-run-linux/test_lib_generic.tar.zst"),
        b"test content",
    );
    write(
        &t.path()
            .join("source-run-linux/test_lib_generic.tar.zst.sha256sum"),
        b"s\n",
    );
    write(
        &t.path().join("source-run-linux/other_lib_generic.tar.zst"),
        b"other",
    );
    dst.copy_artifact("test_lib_generic.tar.zst", &src)
        .await
        .unwrap();
    assert_eq!(
        fs_err::read(t.path().join("dest-run-linux/test_lib_generic.tar.zst")).unwrap(),
        b"test content"
    );
    assert!(
        t.path()
            .join("dest-run-linux/test_lib_generic.tar.zst.sha256sum")
            .is_file()
    );
    dst.copy_artifact("other_lib_generic.tar.zst", &src)
        .await
        .unwrap();
    assert!(
        !t.path()
            .join("dest-run-linux/other_lib_generic.tar.zst.sha256sum")
            .exists()
    );
    let err = dst
        .copy_artifact("missing.tar.zst", &src)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_listing_is_exact_and_matches_local() {
    let server = S3Server::start();
    server.create_bucket("test-bucket");
    let b = ArtifactBackend::s3(
        client(&server, SECRET_KEY).await,
        root("test-bucket", "external/", "test-run-456"),
    );
    assert_eq!(b.base_uri(), "s3://test-bucket/external/test-run-456-linux");
    let bucket = server.root().join("test-bucket");
    let files = [
        "external/test-run-456-linux/blas_lib_gfx94X.tar.zst",
        "external/test-run-456-linux/blas_dev_gfx94X.tar.xz",
        "external/test-run-456-linux/blas_lib_gfx94X.tar.zst.sha256sum",
        "external/test-run-456-linux/python/wheel_lib_generic.tar.xz",
        "external/test-run-456-linux/logs/g/ninja_lib_generic.tar.zst",
        "external/test-run-4567-linux/sibling_lib_generic.tar.zst",
    ];
    for f in files {
        write(&bucket.join(f), b"x");
    }
    let listed = b.list_artifacts(None).await.unwrap();
    assert_eq!(
        names(&listed),
        ["blas_dev_gfx94X.tar.xz", "blas_lib_gfx94X.tar.zst"]
    );
    assert_eq!(listed[0].size, 1);
    assert_eq!(listed[1].name.as_ref().unwrap().target_family(), "gfx94X");
    assert_eq!(
        names(&b.list_artifacts(Some("blas")).await.unwrap()).len(),
        2
    );

    // The same tree as a local staging dir gives the same answer.
    let t = tempfile::tempdir().unwrap();
    for f in files {
        write(&t.path().join(f.strip_prefix("external/").unwrap()), b"x");
    }
    let local = local(t.path(), "test-run-456");
    assert_eq!(local.list_artifacts(None).await.unwrap(), listed);
}

#[tokio::test(flavor = "multi_thread")]
#[expect(clippy::too_many_lines, reason = "one scenario, step by step")]
async fn s3_upload_download_verify_and_resume() {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let t = tempfile::tempdir().unwrap();
    let b = ArtifactBackend::s3(client(&server, SECRET_KEY).await, root("bkt", "", "7"));
    let content: Vec<u8> = (0..3_000_000u32)
        .map(|i| u8::try_from(i % 253).unwrap())
        .collect();
    let src = t.path().join("src/core_lib_generic.tar.zst");
    write(&src, &content);
    let digest = b
        .upload_artifact(&src, "core_lib_generic.tar.zst")
        .await
        .unwrap();
    assert_eq!(digest, sha(&content));
    let stored = server.root().join("bkt/7-linux");
    assert_eq!(
        fs_err::read(stored.join("core_lib_generic.tar.zst")).unwrap(),
        content
    );
    assert_eq!(
        fs_err::read_to_string(stored.join("core_lib_generic.tar.zst.sha256sum")).unwrap(),
        format!("{digest}  core_lib_generic.tar.zst\n")
    );
    assert!(b.artifact_exists("core_lib_generic.tar.zst").await.unwrap());
    assert!(!b.artifact_exists("nope.tar.zst").await.unwrap());

    // Plain download, verified.
    let dest = t.path().join("out/core_lib_generic.tar.zst");
    let got = b
        .download_artifact("core_lib_generic.tar.zst", &dest)
        .await
        .unwrap();
    assert!(got.verified);
    assert_eq!((got.fetched, got.resumed), (content.len() as u64, 0));
    assert_eq!(fs_err::read(&dest).unwrap(), content);
    assert!(
        t.path()
            .join("out/core_lib_generic.tar.zst.sha256sum")
            .is_file()
    );

    // An interrupted download: the first third is in the partial file. The re-run fetches only
    // the rest and verifies the whole.
    let dest2 = t.path().join("resume/core_lib_generic.tar.zst");
    let head = S3Client::sdk(&client(&server, SECRET_KEY).await)
        .head_object()
        .bucket("bkt")
        .key("7-linux/core_lib_generic.tar.zst")
        .send()
        .await
        .unwrap();
    write(
        &t.path().join("resume/.core_lib_generic.tar.zst.partial"),
        &content[..1_000_000],
    );
    write(
        &t.path()
            .join("resume/.core_lib_generic.tar.zst.partial.etag"),
        head.e_tag().unwrap().as_bytes(),
    );
    let got = b
        .download_artifact("core_lib_generic.tar.zst", &dest2)
        .await
        .unwrap();
    assert_eq!((got.resumed, got.fetched), (1_000_000, 2_000_000));
    assert!(got.verified);
    assert_eq!(fs_err::read(&dest2).unwrap(), content);
    let mut left: Vec<_> = fs_err::read_dir(t.path().join("resume"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "core_lib_generic.tar.zst",
            "core_lib_generic.tar.zst.sha256sum"
        ]
    );

    // A corrupt partial file is never trusted: the whole fails verification, nothing is left.
    let dest3 = t.path().join("corrupt/core_lib_generic.tar.zst");
    let mut bad = content[..1_000_000].to_vec();
    bad[500] ^= 0xff;
    write(
        &t.path().join("corrupt/.core_lib_generic.tar.zst.partial"),
        &bad,
    );
    write(
        &t.path()
            .join("corrupt/.core_lib_generic.tar.zst.partial.etag"),
        head.e_tag().unwrap().as_bytes(),
    );
    let err = b
        .download_artifact("core_lib_generic.tar.zst", &dest3)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
    assert_eq!(
        fs_err::read_dir(t.path().join("corrupt")).unwrap().count(),
        0
    );
    // ...and the re-run after it succeeds from scratch.
    let got = b
        .download_artifact("core_lib_generic.tar.zst", &dest3)
        .await
        .unwrap();
    assert_eq!(got.resumed, 0);

    // A partial file of another object version (different ETag) is discarded.
    let dest4 = t.path().join("stale/core_lib_generic.tar.zst");
    write(
        &t.path().join("stale/.core_lib_generic.tar.zst.partial"),
        &bad,
    );
    write(
        &t.path()
            .join("stale/.core_lib_generic.tar.zst.partial.etag"),
        b"\"old-etag\"",
    );
    let got = b
        .download_artifact("core_lib_generic.tar.zst", &dest4)
        .await
        .unwrap();
    assert_eq!(got.resumed, 0);
    assert_eq!(fs_err::read(&dest4).unwrap(), content);
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_corrupted_object_leaves_nothing() {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let b = ArtifactBackend::s3(client(&server, SECRET_KEY).await, root("bkt", "", "9"));
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("x_lib_generic.tar.xz");
    write(&src, b"original");
    b.upload_artifact(&src, "x_lib_generic.tar.xz")
        .await
        .unwrap();
    // Corrupt the stored object behind the server's back.
    write(
        &server.root().join("bkt/9-linux/x_lib_generic.tar.xz"),
        b"tampered",
    );
    let dest = t.path().join("out/x_lib_generic.tar.xz");
    let err = b
        .download_artifact("x_lib_generic.tar.xz", &dest)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("s3://bkt/9-linux/x_lib_generic.tar.xz"),
        "{err}"
    );
    assert!(!dest.exists());
    assert_eq!(fs_err::read_dir(t.path().join("out")).unwrap().count(), 0);
    let err = b
        .download_artifact("missing.tar.xz", &dest)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_exists_is_an_error_when_it_cannot_ask() {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let wrong = ArtifactBackend::s3(client(&server, "wrong-secret").await, root("bkt", "", "1"));
    let err = wrong.artifact_exists("a.tar.zst").await.unwrap_err();
    assert!(
        matches!(&err, Error::Storage(e) if e.s3_kind() == Some(storage_backend::S3ErrorKind::Auth)),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_copy_across_buckets_with_sidecar() {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    server.create_bucket("therock-ci-artifacts-external");
    let c = client(&server, SECRET_KEY).await;
    let src = ArtifactBackend::s3(c.clone(), root("therock-ci-artifacts", "", "source-run"));
    let dst = ArtifactBackend::s3(
        c,
        root(
            "therock-ci-artifacts-external",
            "ROCm-rocm-libraries/",
            "dest-run",
        ),
    );
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("artifact_lib_generic.tar.zst");
    write(&file, b"payload");
    src.upload_artifact(&file, "artifact_lib_generic.tar.zst")
        .await
        .unwrap();
    dst.copy_artifact("artifact_lib_generic.tar.zst", &src)
        .await
        .unwrap();
    let out = server
        .root()
        .join("therock-ci-artifacts-external/ROCm-rocm-libraries/dest-run-linux");
    assert_eq!(
        fs_err::read(out.join("artifact_lib_generic.tar.zst")).unwrap(),
        b"payload"
    );
    assert!(out.join("artifact_lib_generic.tar.zst.sha256sum").is_file());
    // Without a sidecar at the source: only the artifact.
    fs_err::remove_file(
        server
            .root()
            .join("therock-ci-artifacts/source-run-linux/artifact_lib_generic.tar.zst.sha256sum"),
    )
    .unwrap();
    let dst2 = ArtifactBackend::s3(
        client(&server, SECRET_KEY).await,
        root("therock-ci-artifacts", "", "dest-2"),
    );
    dst2.copy_artifact("artifact_lib_generic.tar.zst", &src)
        .await
        .unwrap();
    let out2 = server.root().join("therock-ci-artifacts/dest-2-linux");
    assert!(out2.join("artifact_lib_generic.tar.zst").is_file());
    assert!(!out2.join("artifact_lib_generic.tar.zst.sha256sum").exists());
    // Mixed kinds refuse.
    let local = ArtifactBackend::local(
        t.path(),
        WorkflowOutputRoot::for_local(None, None, None).unwrap(),
    )
    .unwrap();
    let err = dst
        .copy_artifact("artifact_lib_generic.tar.zst", &local)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot copy from a local backend to a S3 backend"
    );
    let err = local
        .copy_artifact("artifact_lib_generic.tar.zst", &dst)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::IncompatibleBackends { .. }));
}

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| map.get(k).cloned()
}

// Spec §18.6: create_backend_from_env.
#[tokio::test(flavor = "multi_thread")]
async fn backend_from_env_vectors() {
    let t = tempfile::tempdir().unwrap();
    let staging = t.path().to_str().unwrap();
    let no_fork = ForkEvidence::Event {
        is_pr_from_fork: false,
    };
    let b = backend_from_env(
        None,
        None,
        None,
        no_fork,
        &env(&[
            ("THEROCK_LOCAL_STAGING_DIR", staging),
            ("THEROCK_RUN_ID", "env-run-id"),
            ("THEROCK_PLATFORM", "windows"),
        ]),
    )
    .await
    .unwrap();
    assert!(matches!(b, ArtifactBackend::Local(_)));
    assert!(
        b.base_uri().ends_with("env-run-id-windows"),
        "{}",
        b.base_uri()
    );
    let b = backend_from_env(
        Some("override-run"),
        None,
        Some(Platform::Darwin),
        no_fork,
        &env(&[("THEROCK_LOCAL_STAGING_DIR", staging)]),
    )
    .await
    .unwrap();
    assert!(b.base_uri().ends_with("override-run-darwin"));
    let err = backend_from_env(
        None,
        None,
        None,
        no_fork,
        &env(&[
            ("THEROCK_LOCAL_STAGING_DIR", staging),
            ("THEROCK_PLATFORM", "solaris"),
        ]),
    )
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("platform='solaris'"), "{err}");

    let s3_env = [
        ("THEROCK_RUN_ID", "s3-run-id"),
        ("GITHUB_REPOSITORY", "SomeUser/TheRock"),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
    ];
    let b = backend_from_env(
        None,
        Some("ROCm/TheRock".parse().unwrap()),
        Some(Platform::Linux),
        no_fork,
        &env(&s3_env),
    )
    .await
    .unwrap();
    assert!(matches!(b, ArtifactBackend::S3(_)));
    assert_eq!(b.root().bucket(), "therock-ci-artifacts");
    assert_eq!(b.root().prefix(), "s3-run-id-linux");
    let b = backend_from_env(None, None, Some(Platform::Linux), no_fork, &env(&s3_env))
        .await
        .unwrap();
    assert_eq!(
        b.base_uri(),
        "s3://therock-ci-artifacts-external/SomeUser-TheRock/s3-run-id-linux"
    );
    let b = backend_from_env(
        None,
        None,
        Some(Platform::Linux),
        no_fork,
        &env(&[
            ("GITHUB_RUN_ID", "555"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ]),
    )
    .await
    .unwrap();
    assert_eq!(b.root().run_id(), "555");
}

/// 10% of requests fail (503 or a reset connection): 200 artifacts go up and come down intact,
/// and a 40 MiB artifact comes down as parallel ranged GETs, then resumes from a partial file.
#[tokio::test(flavor = "multi_thread")]
async fn s3_transfers_survive_injected_faults() {
    use rock_ci_test_support::S3ServerOptions;
    let server = S3Server::start_with(S3ServerOptions {
        fault_every: Some(10),
        ..Default::default()
    });
    server.create_bucket("bkt");
    let c = S3Client::connect_with(
        &ClientOptions {
            region: Some("us-east-1".into()),
            endpoint_url: Some(server.endpoint()),
            credentials: Some(Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "test")),
            max_attempts: 5,
            initial_backoff: std::time::Duration::from_millis(20),
            ..ClientOptions::default()
        },
        &|_| None,
    )
    .await;
    let b = ArtifactBackend::s3(c, root("bkt", "", "42"));
    let t = tempfile::tempdir().unwrap();
    let content = |i: usize| -> Vec<u8> {
        (0..2000 + i * 13)
            .map(|j| u8::try_from((i * 7 + j) % 251).unwrap())
            .collect()
    };
    for i in 0..200 {
        let src = t.path().join(format!("up/a{i:03}_lib_generic.tar.zst"));
        write(&src, &content(i));
        b.upload_artifact(&src, &format!("a{i:03}_lib_generic.tar.zst"))
            .await
            .unwrap();
    }
    assert_eq!(b.list_artifacts(None).await.unwrap().len(), 200);
    for i in 0..200 {
        let key = format!("a{i:03}_lib_generic.tar.zst");
        let got = b
            .download_artifact(&key, &t.path().join("down").join(&key))
            .await
            .unwrap();
        assert!(got.verified);
        assert_eq!(fs_err::read(&got.path).unwrap(), content(i));
    }

    let big: Vec<u8> = (0..40u32 << 20)
        .map(|i| u8::try_from(i % 241).unwrap())
        .collect();
    write(&t.path().join("up/big_lib_generic.tar.zst"), &big);
    b.upload_artifact(
        &t.path().join("up/big_lib_generic.tar.zst"),
        "big_lib_generic.tar.zst",
    )
    .await
    .unwrap();
    let got = b
        .download_artifact(
            "big_lib_generic.tar.zst",
            &t.path().join("big/big_lib_generic.tar.zst"),
        )
        .await
        .unwrap();
    assert!(got.verified);
    assert_eq!(fs_err::read(&got.path).unwrap(), big);
    assert!(server.faults() >= 40, "only {} faults", server.faults());
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_large_download_resumes_in_parallel_ranges() {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let c = client(&server, SECRET_KEY).await;
    let b = ArtifactBackend::s3(c.clone(), root("bkt", "", "43"));
    let t = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..(40u32 << 20) + 777)
        .map(|i| u8::try_from(i % 239).unwrap())
        .collect();
    write(&t.path().join("up/big_lib_generic.tar.zst"), &big);
    b.upload_artifact(
        &t.path().join("up/big_lib_generic.tar.zst"),
        "big_lib_generic.tar.zst",
    )
    .await
    .unwrap();
    let head = c
        .sdk()
        .head_object()
        .bucket("bkt")
        .key("43-linux/big_lib_generic.tar.zst")
        .send()
        .await
        .unwrap();
    write(
        &t.path().join("r/.big_lib_generic.tar.zst.partial"),
        &big[..(10 << 20) + 5],
    );
    write(
        &t.path().join("r/.big_lib_generic.tar.zst.partial.etag"),
        head.e_tag().unwrap().as_bytes(),
    );
    let got = b
        .download_artifact(
            "big_lib_generic.tar.zst",
            &t.path().join("r/big_lib_generic.tar.zst"),
        )
        .await
        .unwrap();
    assert_eq!(got.resumed, (10 << 20) + 5);
    assert_eq!(got.fetched, big.len() as u64 - got.resumed);
    assert!(got.verified);
    assert_eq!(fs_err::read(&got.path).unwrap(), big);
}
