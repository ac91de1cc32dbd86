//! The S3 backend through the fault proxy in front of the in-process S3 server.

use rock_ci_test_support::s3::{ACCESS_KEY, SECRET_KEY};
use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule, S3Server};
use storage_backend::{
    ClientOptions, Credentials, S3Client, StorageBackend, StorageLocation, TransferOptions,
};

/// A server with bucket `bkt`, a proxy in front of it with `plan`, and a backend using the proxy.
async fn through_proxy(plan: FaultPlan) -> (S3Server, FaultProxy, StorageBackend) {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let proxy = FaultProxy::start(server.addr(), plan);
    let options = ClientOptions {
        region: Some("us-east-1".into()),
        endpoint_url: Some(proxy.endpoint()),
        credentials: Some(Credentials::new(
            ACCESS_KEY, SECRET_KEY, None, None, "proxy",
        )),
        max_attempts: 3,
        initial_backoff: std::time::Duration::from_millis(10),
        ..ClientOptions::default()
    };
    let client = S3Client::connect_with(&options, &|_| None).await;
    let backend = StorageBackend::s3(client, TransferOptions::default());
    (server, proxy, backend)
}

/// Uploads `data` as `bkt/key` and reads it back through the backend's client.
async fn round_trip(backend: &StorageBackend, key: &str, data: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    fs_err::write(&file, data).unwrap();
    let loc = StorageLocation::new("bkt", key);
    backend.upload_file(&file, &loc).await.unwrap();
    let StorageBackend::S3(s3) = backend else {
        unreachable!("an S3 backend")
    };
    s3.get_small(&loc)
        .await
        .unwrap()
        .expect("the object exists")
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| u8::try_from(i % 253).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_without_faults_is_transparent() {
    let (server, proxy, backend) = through_proxy(FaultPlan::new()).await;
    let original = data(3 << 20);
    assert_eq!(round_trip(&backend, "run/x.bin", &original).await, original);
    assert_eq!(
        fs_err::read(server.root().join("bkt/run/x.bin")).unwrap(),
        original
    );
    assert!(proxy.passed() >= 2, "{}", proxy.passed());
    assert_eq!(proxy.injected_total(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_503_on_the_first_put_is_retried() {
    let plan = FaultPlan::new().rule(Rule::new(Fault::Status503).method("PUT").first(1));
    let (server, proxy, backend) = through_proxy(plan).await;
    let original = data(100_000);
    assert_eq!(round_trip(&backend, "run/y.bin", &original).await, original);
    assert_eq!(proxy.injected(Fault::Status503), 1);
    assert_eq!(
        fs_err::read(server.root().join("bkt/run/y.bin")).unwrap(),
        original
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_truncated_download_is_an_error() {
    let plan = FaultPlan::new().rule(Rule::new(Fault::TruncatedBody).method("GET"));
    let (_server, proxy, backend) = through_proxy(plan).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("z.bin");
    fs_err::write(&file, data(50_000)).unwrap();
    let loc = StorageLocation::new("bkt", "run/z.bin");
    backend.upload_file(&file, &loc).await.unwrap();
    let StorageBackend::S3(s3) = &backend else {
        unreachable!("an S3 backend")
    };
    let got = s3.get_small(&loc).await;
    assert!(got.is_err(), "{got:?}");
    assert!(proxy.injected(Fault::TruncatedBody) >= 1);
}
