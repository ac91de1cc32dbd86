//! Transfers through injected server faults.

use artifact_backend::ArtifactBackend;
use rock_ci_test_support::S3Server;
use rock_ci_test_support::s3::{ACCESS_KEY, SECRET_KEY};
use storage_backend::{ClientOptions, Credentials, S3Client};

use crate::{root, write};

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
    let c = retrying_client(server.endpoint(), 5).await;
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

/// A backend of run 44 in bucket `bkt` of `server`, reached through a fault proxy with `plan`.
async fn through_proxy(
    server: &S3Server,
    plan: rock_ci_test_support::FaultPlan,
) -> (rock_ci_test_support::FaultProxy, ArtifactBackend) {
    let proxy = rock_ci_test_support::FaultProxy::start(server.addr(), plan);
    let c = retrying_client(proxy.endpoint(), 3).await;
    (proxy, ArtifactBackend::s3(c, root("bkt", "", "44")))
}

/// A client of `endpoint` with `attempts` per request and short backoffs.
async fn retrying_client(endpoint: String, attempts: u32) -> S3Client {
    S3Client::connect_with(
        &{
            let mut client_options = ClientOptions::default();
            client_options.region = Some("us-east-1".into());
            client_options.endpoint_url = Some(endpoint);
            client_options.credentials =
                Some(Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "test"));
            client_options.max_attempts = attempts;
            client_options.initial_backoff = std::time::Duration::from_millis(10);
            client_options
        },
        &|_| None,
    )
    .await
    .expect("S3 client")
}

/// Fetches `core_lib_generic.tar.zst` of `b` extracted into `out`.
async fn fetch_core(
    b: &ArtifactBackend,
    out: &std::path::Path,
) -> Result<artifact_backend::Fetched, artifact_backend::Error> {
    b.fetch_extracted(
        "core_lib_generic.tar.zst",
        out,
        artifacts::Layout::Full,
        std::sync::Arc::default(),
    )
    .await
}

/// Bytes damaged on the way (flipped bits under a matching length): the digest (or the
/// archive's own checksum) catches it, the artifact is fetched again and arrives whole; when
/// every GET is damaged, the fetch fails and nothing of it is left.
#[tokio::test(flavor = "multi_thread")]
async fn damaged_bytes_are_fetched_again_and_never_accepted() {
    use rock_ci_test_support::{Fault, FaultPlan, Rule};
    let server = S3Server::start();
    server.create_bucket("bkt");
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("up/core_lib_generic.tar.zst");
    let noise: String = (0..200_000u32)
        .map(|i| char::from(b'a' + u8::try_from(i.wrapping_mul(2_654_435_761) % 26).unwrap()))
        .collect();
    fs_err::create_dir_all(src.parent().unwrap()).unwrap();
    rock_ci_test_support::write_artifact(
        &src,
        artifacts::Compression::Zstd { level: 3 },
        "core/stage",
        &[("lib/libcore.so", &noise)],
    );
    let (_clean, uploader) = through_proxy(&server, FaultPlan::new()).await;
    uploader
        .upload_artifact(&src, "core_lib_generic.tar.zst")
        .await
        .unwrap();

    let archive_gets = || {
        Rule::new(Fault::BitFlip)
            .method("GET")
            .path_contains("core_lib_generic.tar.zst")
            .when(|head| !head.path.contains("sha256sum"))
    };
    // The first GET of the archive is damaged: fetched again, verified, whole.
    let (proxy, b) = through_proxy(&server, FaultPlan::new().rule(archive_gets().first(1))).await;
    let out = t.path().join("out");
    let got = fetch_core(&b, &out).await.unwrap();
    assert!(got.verified);
    assert_eq!(proxy.injected(Fault::BitFlip), 1);
    let file = out.join("core_lib_generic/core/stage/lib/libcore.so");
    assert!(fs_err::read_to_string(&file).unwrap() == noise);

    // The first read of the sidecar is cut short by a server announcing the short length:
    // the sidecar does not parse, and the artifact is fetched again.
    let plan = FaultPlan::new().rule(
        Rule::new(Fault::ShortBodyMatchingLength)
            .method("GET")
            .path_contains("sha256sum")
            .first(1),
    );
    let (proxy, b) = through_proxy(&server, plan).await;
    let got = fetch_core(&b, &t.path().join("out-sidecar")).await.unwrap();
    assert!(got.verified);
    assert_eq!(proxy.injected(Fault::ShortBodyMatchingLength), 1);

    // Every GET of the archive is damaged: an error after fetching it again once (the same
    // wrong bytes twice are not asked for a third time), and nothing at the destination.
    let (proxy, b) = through_proxy(&server, FaultPlan::new().rule(archive_gets())).await;
    let out = t.path().join("out2");
    let err = fetch_core(&b, &out).await.unwrap_err();
    assert!(err.arrived_damaged(), "{err:?}");
    assert_eq!(proxy.injected(Fault::BitFlip), 2, "fetched again once");
    assert_eq!(crate::names_in(&out), Vec::<String>::new());
    // The same for a download of the archive itself.
    let err = b
        .download_artifact(
            "core_lib_generic.tar.zst",
            &t.path().join("dl/core_lib_generic.tar.zst"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, artifact_backend::Error::ChecksumMismatch { .. }),
        "{err:?}"
    );
    assert_eq!(crate::names_in(&t.path().join("dl")), Vec::<String>::new());
}

/// An archive that does not decode although its bytes are the ones its sidecar records (the
/// object itself is broken, nothing on the way): fetched again once, not at every attempt,
/// and the error names the archive.
#[tokio::test(flavor = "multi_thread")]
async fn an_archive_that_never_decodes_is_fetched_again_once() {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("up/core_lib_generic.tar.zst");
    write(&src, &b"not a zstd frame at all ".repeat(4000));
    let c = retrying_client(server.endpoint(), 5).await;
    let b = ArtifactBackend::s3(c, root("bkt", "", "45"));
    b.upload_artifact(&src, "core_lib_generic.tar.zst")
        .await
        .unwrap();
    let before = b.retries();
    let err = fetch_core(&b, &t.path().join("out")).await.unwrap_err();
    assert!(err.is_wrong_content(), "{err:?}");
    assert_eq!(b.retries() - before, 1, "fetched again once: {err}");
    let text = format!("{err:#}");
    assert!(text.contains("core_lib_generic.tar.zst"), "{text}");
    assert_eq!(crate::names_in(&t.path().join("out")), Vec::<String>::new());
}

/// A complete download whose digest does not match is fetched again once, not at every
/// attempt, and the error says where the digest it was checked against is recorded: the
/// sidecar, named, or (without one) the object's metadata.
#[tokio::test(flavor = "multi_thread")]
async fn a_mismatch_is_fetched_again_once_and_names_where_its_digest_is_recorded() {
    use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule};
    let server = S3Server::start();
    server.create_bucket("bkt");
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("up/core_lib_generic.tar.zst");
    write(&src, &vec![7u8; 50_000]);
    let (_clean, uploader) = through_proxy(&server, FaultPlan::new()).await;
    uploader
        .upload_artifact(&src, "core_lib_generic.tar.zst")
        .await
        .unwrap();
    // Without a sidecar: only the SHA-256 in the object's metadata.
    let bare = uploader.location("bare_lib_generic.tar.zst");
    storage_backend::StorageBackend::s3(
        retrying_client(server.endpoint(), 1).await,
        storage_backend::TransferOptions::default(),
    )
    .upload_file(&src, &bare)
    .await
    .unwrap();

    for (key, recorded_in) in [
        (
            "core_lib_generic.tar.zst",
            format!(
                "the sidecar `{}` says ",
                uploader.location("core_lib_generic.tar.zst.sha256sum")
            ),
        ),
        (
            "bare_lib_generic.tar.zst",
            "the object's metadata `sha256` (it has no .sha256sum sidecar) says ".to_owned(),
        ),
    ] {
        let proxy = FaultProxy::start(
            server.addr(),
            FaultPlan::new().rule(
                Rule::new(Fault::BitFlip)
                    .method("GET")
                    .path_contains(key)
                    .when(|head| !head.path.contains("sha256sum")),
            ),
        );
        let b = ArtifactBackend::s3(
            retrying_client(proxy.endpoint(), 5).await,
            root("bkt", "", "44"),
        );
        let err = b
            .download_artifact(key, &t.path().join("dl").join(key))
            .await
            .unwrap_err();
        assert!(
            matches!(err, artifact_backend::Error::ChecksumMismatch { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains(&recorded_in), "{err}");
        assert_eq!(proxy.injected(Fault::BitFlip), 2, "{key}: {err}");
    }
}
