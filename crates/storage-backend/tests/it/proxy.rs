//! The S3 backend through the fault proxy in front of the in-process S3 server.

use rock_ci_test_support::s3::{ACCESS_KEY, SECRET_KEY};
use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule, S3Server};
use storage_backend::{
    ClientOptions, Credentials, Error, S3Client, StorageBackend, StorageLocation, TransferOptions,
};

/// A server with bucket `bkt`, a proxy in front of it with `plan`, and a backend using the proxy.
async fn through_proxy(plan: FaultPlan) -> (S3Server, FaultProxy, StorageBackend) {
    let server = S3Server::start();
    server.create_bucket("bkt");
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

/// A [`storage_backend::RangeSink`] that keeps every write: (offset, bytes).
#[derive(Default)]
struct Gathered(std::sync::Mutex<Vec<(u64, Vec<u8>)>>);

impl storage_backend::RangeSink for Gathered {
    async fn write(&self, offset: u64, pieces: Vec<bytes::Bytes>) -> Result<(), Error> {
        self.0.lock().unwrap().push((offset, pieces.concat()));
        Ok(())
    }
}

/// Each fault kind, injected into the first two requests of each kind of operation: the
/// operation still gives the exact bytes (or listing), the faults happened, and the retries
/// were counted. Ranged GETs and whole-object reads resume from the byte the broken body
/// reached (into a sink too).
#[tokio::test(flavor = "multi_thread")]
#[expect(
    clippy::too_many_lines,
    reason = "one table of fault kinds by operation, each check spelled out"
)]
async fn every_fault_kind_on_every_operation_is_retried() {
    let kinds = [
        Fault::Status500,
        Fault::Status503,
        Fault::ResetBeforeHeaders,
        Fault::ResetMidBody,
        Fault::TruncatedBody,
        Fault::ShortBodyMatchingLength,
    ];
    let original = data(3 << 20);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    fs_err::write(&file, &original).unwrap();
    let small = dir.path().join("small.log");
    fs_err::write(&small, &original[..5000]).unwrap();
    for kind in kinds {
        for (method, what) in [
            ("GET", "ranged GET"),
            ("GET", "ranged GET to a sink"),
            ("GET", "whole GET"),
            ("PUT", "upload"),
            ("PUT", "multipart part"),
            ("GET", "listing"),
            ("HEAD", "HEAD"),
        ] {
            // Faults in a body need a body: responses to HEAD and PUT have none.
            let body_fault = matches!(
                kind,
                Fault::ResetMidBody | Fault::TruncatedBody | Fault::ShortBodyMatchingLength
            );
            if body_fault && method != "GET" {
                continue;
            }
            // A whole-object read has no length to check a lying server against: the callers
            // that know the size read ranges ([`read_range`]), and a short sidecar fails to
            // parse.
            if kind == Fault::ShortBodyMatchingLength && what == "whole GET" {
                continue;
            }
            // Faults on the data requests only, not on the set-up.
            let plan = FaultPlan::new().rule(
                Rule::new(kind)
                    .method(method)
                    .path_contains("target")
                    .first(2),
            );
            let (server, proxy, backend) = through_proxy(plan).await;
            let StorageBackend::S3(s3) = &backend else {
                unreachable!("an S3 backend")
            };
            let setup = StorageLocation::new("bkt", "run/setup/data.bin");
            let target = StorageLocation::new("bkt", "run/target/data.bin");
            let case = format!("{kind:?} on {what}");
            match what {
                "ranged GET" | "ranged GET to a sink" | "whole GET" | "HEAD" | "listing" => {
                    backend.upload_file(&file, &setup).await.unwrap();
                    fs_err::create_dir_all(server.root().join("bkt/run/target")).unwrap();
                    fs_err::copy(
                        server.root().join("bkt/run/setup/data.bin"),
                        server.root().join("bkt/run/target/data.bin"),
                    )
                    .unwrap();
                }
                _ => {}
            }
            match what {
                "ranged GET" => {
                    let told = std::sync::atomic::AtomicU64::new(0);
                    let on_bytes = |n| {
                        told.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                    };
                    let got = s3
                        .read_range(&target, (1000, 2_000_999), "", &on_bytes)
                        .await;
                    let got = got.unwrap_or_else(|e| panic!("{case}: {e:?}")).concat();
                    assert!(
                        got == original[1000..2_001_000],
                        "{case}: {} bytes",
                        got.len()
                    );
                    // Progress counts each byte once, retries and resumes included.
                    assert_eq!(told.into_inner(), 2_000_000, "{case}");
                }
                "ranged GET to a sink" => {
                    let told = std::sync::atomic::AtomicU64::new(0);
                    let on_bytes = |n| {
                        told.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                    };
                    let sink = Gathered::default();
                    let got = s3
                        .read_range_to(&target, (1000, 2_000_999), "", &on_bytes, &sink)
                        .await;
                    got.unwrap_or_else(|e| panic!("{case}: {e:?}"));
                    let writes = sink.0.into_inner().unwrap();
                    // In order, each at the offset where the one before ended, none larger
                    // than a batch and a piece: the range is handed on as it arrives, never
                    // held whole.
                    let mut at = 1000;
                    let mut got = Vec::new();
                    for (offset, bytes) in &writes {
                        assert_eq!(*offset, at, "{case}");
                        assert!(
                            bytes.len() <= storage_backend::SINK_BATCH + (1 << 20),
                            "{case}"
                        );
                        at += bytes.len() as u64;
                        got.extend_from_slice(bytes);
                    }
                    // How many depends on how the body's pieces arrive (a loopback may hand
                    // over 700 kB at once): two at least, each under the 2 MB range.
                    assert!(writes.len() >= 2, "{case}: {} writes", writes.len());
                    assert!(
                        got == original[1000..2_001_000],
                        "{case}: {} bytes",
                        got.len()
                    );
                    assert_eq!(told.into_inner(), 2_000_000, "{case}");
                }
                "whole GET" => {
                    let got = s3.get_small(&target).await;
                    let got = got
                        .unwrap_or_else(|e| panic!("{case}: {e:?}"))
                        .unwrap_or_default();
                    assert!(got == original, "{case}: {} bytes", got.len());
                }
                "upload" => {
                    let target = StorageLocation::new("bkt", "run/target/small.log");
                    let got = backend.upload_file(&small, &target).await;
                    got.unwrap_or_else(|e| panic!("{case}: {e:?}"));
                    let stored = fs_err::read(server.root().join("bkt/run/target/small.log"));
                    assert!(stored.unwrap() == original[..5000], "{case}");
                }
                "multipart part" => {
                    let multipart = StorageBackend::S3(storage_backend::S3StorageBackend::new(
                        s3.client().clone(),
                        {
                            let mut transfer_options = TransferOptions::default();
                            transfer_options.multipart_threshold = 1 << 20;
                            transfer_options.part_size = 1 << 20;
                            transfer_options
                        },
                    ));
                    let got = multipart.upload_file(&file, &target).await;
                    got.unwrap_or_else(|e| panic!("{case}: {e:?}"));
                    let stored = fs_err::read(server.root().join("bkt/run/target/data.bin"));
                    assert!(stored.unwrap() == original, "{case}");
                }
                "listing" => {
                    let got = s3.list_prefix("bkt", "run/target/", true).await;
                    let got = got.unwrap_or_else(|e| panic!("{case}: {e:?}"));
                    let keys: Vec<&str> = got.iter().map(|o| o.key.as_str()).collect();
                    assert_eq!(keys, ["run/target/data.bin"], "{case}");
                }
                _ => {
                    let got = s3.head_object(&target).await;
                    let got = got.unwrap_or_else(|e| panic!("{case}: {e:?}"));
                    assert_eq!(got.map(|h| h.size), Some(original.len() as u64), "{case}");
                }
            }
            assert!(proxy.injected(kind) >= 1, "{case}: no fault was injected");
        }
    }
}

/// A server that always cuts listings short (announcing the short length, so the XML still
/// parses up to where it was cut): the listing is an error, never fewer keys.
#[tokio::test(flavor = "multi_thread")]
async fn a_listing_always_cut_short_is_an_error_not_fewer_keys() {
    let plan = FaultPlan::new().rule(
        Rule::new(Fault::ShortBodyMatchingLength)
            .method("GET")
            .path_contains("list-type"),
    );
    let (server, proxy, backend) = through_proxy(plan).await;
    for i in 0..40 {
        let path = server.root().join(format!("bkt/run/k{i:02}.tar.zst"));
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, "x").unwrap();
    }
    let StorageBackend::S3(s3) = &backend else {
        unreachable!("an S3 backend")
    };
    let err = s3.list_prefix("bkt", "run/", true).await.unwrap_err();
    assert_eq!(
        err.s3_kind(),
        Some(storage_backend::S3ErrorKind::BadResponse),
        "{err:?}"
    );
    assert!(proxy.injected(Fault::ShortBodyMatchingLength) >= 2);
}

/// A server that answers every request with 503: each operation makes exactly
/// `max_attempts` requests (3 here), neither more (no second retry layer inside the S3
/// client) nor fewer, then fails naming the object.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_always_answers_503_gets_max_attempts_requests_per_operation() {
    let (_server, proxy, backend) =
        through_proxy(FaultPlan::new().rule(Rule::new(Fault::Status503))).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.bin");
    fs_err::write(&file, data(1000)).unwrap();
    let loc = StorageLocation::new("bkt", "run/always-503.bin");
    let err = backend.upload_file(&file, &loc).await.unwrap_err();
    assert!(err.to_string().contains("run/always-503.bin"), "{err}");
    assert_eq!(proxy.injected(Fault::Status503), 3, "upload");
    let StorageBackend::S3(s3) = &backend else {
        unreachable!("an S3 backend")
    };
    assert_eq!(s3.client().retries(), 2);
    assert!(s3.get_small(&loc).await.is_err());
    assert_eq!(proxy.injected(Fault::Status503), 6, "upload, then a GET");
    assert_eq!(s3.client().retries(), 4);
}

/// A port nothing listens on: every operation is tried `max_attempts` times (3 here: two
/// retries counted), then fails naming the object and the endpoint.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_port_gets_max_attempts_per_operation() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let options = {
        let mut client_options = ClientOptions::default();
        client_options.region = Some("us-east-1".into());
        client_options.endpoint_url = Some(format!("http://127.0.0.1:{port}"));
        client_options.credentials = Some(Credentials::new("k", "s", None, None, "refused"));
        client_options.max_attempts = 3;
        client_options.initial_backoff = std::time::Duration::from_millis(10);
        client_options
    };
    let client = S3Client::connect_with(&options, &|_| None).await.unwrap();
    let backend = StorageBackend::s3(client, TransferOptions::default());
    let StorageBackend::S3(s3) = &backend else {
        unreachable!("an S3 backend")
    };
    let loc = StorageLocation::new("bkt", "run/refused.bin");
    let err = s3.get_small(&loc).await.unwrap_err();
    let text = storage_backend::chain(&err);
    assert!(
        text.contains("run/refused.bin")
            && text.contains("unreachable")
            && text.contains(&format!("http://127.0.0.1:{port}")),
        "{text}"
    );
    assert_eq!(s3.client().retries(), 2);
}
