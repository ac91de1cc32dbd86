//! The S3 backend on a real S3-protocol server: listings, verified and resumed downloads,
//! copies across buckets.

use artifact_backend::{ArtifactBackend, Error};
use rock_ci_test_support::S3Server;
use rock_ci_test_support::s3::SECRET_KEY;
use rock_ci_test_support::sha256_hex as sha;
use workflow_outputs::WorkflowOutputRoot;

use crate::{client, etag, local, names, root, write};

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

    // A sidecar without its archive: the listing is asked for once more (a key damaged on
    // the way would otherwise drop an artifact), then the same answer stands.
    let c = client(&server, SECRET_KEY).await;
    let again = ArtifactBackend::s3(c.clone(), root("test-bucket", "external/", "test-run-456"));
    write(
        &bucket.join("external/test-run-456-linux/gone_lib_generic.tar.zst.sha256sum"),
        b"x",
    );
    assert_eq!(again.list_artifacts(None).await.unwrap(), listed);
    assert_eq!(c.retries(), 1);
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
    let etag = etag(
        &client(&server, SECRET_KEY).await,
        "bkt",
        "7-linux/core_lib_generic.tar.zst",
    )
    .await;
    write(
        &t.path().join("resume/.core_lib_generic.tar.zst.partial"),
        &content[..1_000_000],
    );
    write(
        &t.path()
            .join("resume/.core_lib_generic.tar.zst.partial.etag"),
        etag.as_bytes(),
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

    // A corrupt partial file is never trusted: the whole fails verification, the partial file
    // is discarded, and the artifact is fetched again from scratch (one retry, counted).
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
        etag.as_bytes(),
    );
    let c = client(&server, SECRET_KEY).await;
    let fresh = ArtifactBackend::s3(c.clone(), root("bkt", "", "7"));
    let got = fresh
        .download_artifact("core_lib_generic.tar.zst", &dest3)
        .await
        .unwrap();
    assert_eq!((got.resumed, got.verified), (0, true));
    assert!(fs_err::read(&dest3).unwrap() == content);
    assert_eq!(c.retries(), 1);
    assert_eq!(
        crate::names_in(&t.path().join("corrupt")),
        [
            "core_lib_generic.tar.zst",
            "core_lib_generic.tar.zst.sha256sum"
        ]
    );

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
    let etag = etag(&c, "bkt", "43-linux/big_lib_generic.tar.zst").await;
    write(
        &t.path().join("r/.big_lib_generic.tar.zst.partial"),
        &big[..(10 << 20) + 5],
    );
    write(
        &t.path().join("r/.big_lib_generic.tar.zst.partial.etag"),
        etag.as_bytes(),
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

    // Ranges finish out of order: a partial file can hold bytes past its complete prefix (here
    // garbage, as a range cut off by a kill would leave) and a hole. Only the recorded prefix
    // is trusted; the rest is fetched again, and the record goes with the partial file.
    let mut ragged = big[..(6 << 20) + 3].to_vec();
    ragged.resize(20 << 20, 0);
    ragged[(12 << 20)..(16 << 20)].fill(0xAB);
    write(
        &t.path().join("s/.big_lib_generic.tar.zst.partial"),
        &ragged,
    );
    write(
        &t.path().join("s/.big_lib_generic.tar.zst.partial.etag"),
        etag.as_bytes(),
    );
    write(
        &t.path().join("s/.big_lib_generic.tar.zst.partial.prefix"),
        format!("{}\n", (6 << 20) + 3).as_bytes(),
    );
    let got = b
        .download_artifact(
            "big_lib_generic.tar.zst",
            &t.path().join("s/big_lib_generic.tar.zst"),
        )
        .await
        .unwrap();
    assert_eq!(got.resumed, (6 << 20) + 3);
    assert_eq!(got.fetched, big.len() as u64 - got.resumed);
    assert!(got.verified);
    assert_eq!(fs_err::read(&got.path).unwrap(), big);
    assert_eq!(
        crate::names_in(&t.path().join("s")),
        [
            "big_lib_generic.tar.zst",
            "big_lib_generic.tar.zst.sha256sum"
        ]
    );
    assert_eq!(c.retries(), 0);
}
