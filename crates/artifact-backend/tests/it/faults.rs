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
