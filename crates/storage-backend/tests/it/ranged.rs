//! The verified ranged reader against the in-process S3 server, through the fault proxy.

use std::io::Read as _;

use rock_ci_test_support::s3::{ACCESS_KEY, SECRET_KEY};
use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule, S3Server};
use storage_backend::{
    ClientOptions, Credentials, Error, Expected, RangePlan, S3Client, S3StorageBackend,
    StorageLocation, TransferOptions, Verification,
};

const KEY: &str = "v4/tarball/object.bin";

/// A server holding `data` as `bkt/{KEY}`, a proxy in front of it with `plan`, and a backend
/// using the proxy.
async fn serving(data: &[u8], plan: FaultPlan) -> (S3Server, FaultProxy, S3StorageBackend) {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let path = server.root().join("bkt").join(KEY);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, data).unwrap();
    let proxy = FaultProxy::start(server.addr(), plan);
    let options = {
        let mut client_options = ClientOptions::default();
        client_options.region = Some("us-east-1".into());
        client_options.endpoint_url = Some(proxy.endpoint());
        client_options.credentials = Some(Credentials::new(
            ACCESS_KEY, SECRET_KEY, None, None, "proxy",
        ));
        client_options.max_attempts = 3;
        client_options.initial_backoff = std::time::Duration::from_millis(10);
        client_options
    };
    let client = S3Client::connect_with(&options, &|_| None)
        .await
        .expect("S3 client");
    (
        server,
        proxy,
        S3StorageBackend::new(client, TransferOptions::default()),
    )
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| u8::try_from(i % 253).unwrap()).collect()
}

fn plan(budget: Option<usize>) -> RangePlan {
    RangePlan {
        range_size: 1 << 20,
        in_flight: 3,
        budget: budget.map(|n| std::sync::Arc::new(tokio::sync::Semaphore::new(n))),
    }
}

/// Reads the whole object through `read_verified` against `expected`.
async fn read_all(
    storage: &S3StorageBackend,
    expected: Option<Expected>,
) -> Result<Result<(Vec<u8>, storage_backend::Verified), Error>, Error> {
    let loc = StorageLocation::new("bkt", KEY);
    let head = storage.head_object(&loc).await.unwrap().expect("stored");
    let expected = expected
        .unwrap_or_else(|| Expected::for_object(head.sha256, &head.etag, head.size, 8 << 20));
    storage
        .read_verified(
            &loc,
            (head.size, &head.etag),
            expected,
            plan(Some(2)),
            |reader| {
                let mut all = Vec::new();
                reader
                    .read_to_end(&mut all)
                    .map_err(|e| Error::from(file_tree::FileError::read(KEY, e)))?;
                Ok::<_, Error>(all)
            },
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_cut_short_are_resumed_and_the_whole_is_verified() {
    let original = data(3 << 20);
    let plan = FaultPlan::new().rule(
        Rule::new(Fault::TruncatedBody)
            .method("GET")
            .path_contains("object")
            .first(2),
    );
    let (_server, proxy, storage) = serving(&original, plan).await;
    let (got, verified) = read_all(&storage, None).await.unwrap().unwrap();
    assert!(got == original, "{} bytes", got.len());
    assert_eq!(verified.verification, Verification::Md5);
    assert_eq!(proxy.injected(Fault::TruncatedBody), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn ranges_come_in_order_within_the_budget() {
    use futures::StreamExt as _;
    let original = data((5 << 20) + 17);
    let (_server, _proxy, storage) = serving(&original, FaultPlan::new()).await;
    let loc = StorageLocation::new("bkt", KEY);
    let head = storage.head_object(&loc).await.unwrap().unwrap();
    let parts: Vec<_> = storage
        .ranged_parts(&loc, (1000, head.size), &head.etag, plan(Some(1)), &|_| {})
        .collect()
        .await;
    assert_eq!(parts.len(), 5);
    let got: Vec<u8> = parts
        .into_iter()
        .flat_map(|p| p.unwrap().concat())
        .collect();
    assert!(got == original[1000..], "{} bytes", got.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_digest_is_an_error_naming_the_key() {
    let original = data(2 << 20);
    let (_server, _proxy, storage) = serving(&original, FaultPlan::new()).await;
    let err = read_all(&storage, Some(Expected::Sha256("0".repeat(64))))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::DigestMismatch { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with(&format!("SHA-256 mismatch for `s3://bkt/{KEY}`")),
        "{err}"
    );
    let err = read_all(&storage, Some(Expected::Md5("0".repeat(32))))
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains(KEY), "{err}");
}
