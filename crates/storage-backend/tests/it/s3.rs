use rock_ci_test_support::s3::{ACCESS_KEY, SECRET_KEY};
use rock_ci_test_support::{S3Server, S3ServerOptions};
use storage_backend::{
    Anonymous, ClientOptions, Credentials, Direction, Error, Overwrite, S3Client, S3ErrorKind,
    StorageBackend, StorageLocation, TransferOptions,
};

use crate::{Captured, write_tree};

fn options(endpoint: String, anonymous: Anonymous, secret: &str) -> ClientOptions {
    let mut client_options = ClientOptions::default();
    client_options.region = Some("us-east-1".into());
    client_options.endpoint_url = Some(endpoint);
    client_options.anonymous = anonymous;
    client_options.credentials = (anonymous != Anonymous::Always)
        .then(|| Credentials::new(ACCESS_KEY, secret, None, None, "test"));
    client_options.max_attempts = 5;
    client_options.initial_backoff = std::time::Duration::from_millis(20);
    client_options
}

/// A backend of a client built from `options` alone (no environment).
async fn backend_with(options: &ClientOptions, transfer: TransferOptions) -> StorageBackend {
    StorageBackend::s3(
        S3Client::connect_with(options, &|_| None)
            .await
            .expect("S3 client"),
        transfer,
    )
}

async fn backend(server: &S3Server, transfer: TransferOptions) -> StorageBackend {
    backend_with(
        &options(server.endpoint(), Anonymous::Never, SECRET_KEY),
        transfer,
    )
    .await
}

/// The content type of an object and the SHA-256 the backend recorded for it.
async fn head(b: &StorageBackend, bucket: &str, key: &str) -> (Option<String>, Option<String>) {
    let StorageBackend::S3(s3) = b else {
        unreachable!()
    };
    let head = s3
        .client()
        .sdk()
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    let sha = s3.stored_sha256(&loc(bucket, key)).await.unwrap();
    (head.content_type().map(str::to_owned), sha)
}

fn loc(bucket: &str, key: &str) -> StorageLocation {
    StorageLocation::new(bucket, key)
}

/// The bytes of an object as the server stored them.
fn stored(server: &S3Server, bucket: &str, key: &str) -> Vec<u8> {
    fs_err::read(server.root().join(bucket).join(key)).unwrap()
}

fn pattern_bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from(i % 251).unwrap() ^ seed)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn upload_sets_content_type_and_sha256() {
    let server = S3Server::start();
    server.create_bucket("my-bucket");
    let src = tempfile::tempdir().unwrap();
    write_tree(
        src.path(),
        &[("build.log", "log line\n"), ("index.html", "<html/>")],
    );
    let b = backend(&server, TransferOptions::default()).await;
    b.upload_file(
        &src.path().join("build.log"),
        &loc("my-bucket", "run-1/logs/build.log"),
    )
    .await
    .unwrap();
    b.upload_file(
        &src.path().join("index.html"),
        &loc("my-bucket", "run-1/index.html"),
    )
    .await
    .unwrap();
    let sha = storage_backend::sha256_file(&src.path().join("build.log"))
        .await
        .unwrap();
    assert_eq!(
        head(&b, "my-bucket", "run-1/logs/build.log").await,
        (Some("text/plain".to_owned()), Some(sha))
    );
    assert_eq!(
        head(&b, "my-bucket", "run-1/index.html").await.0.as_deref(),
        Some("text/html")
    );
    assert_eq!(
        stored(&server, "my-bucket", "run-1/logs/build.log"),
        b"log line\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn multipart_upload_and_copy_round_trip() {
    let server = S3Server::start();
    server.create_bucket("src");
    server.create_bucket("dst");
    let src = tempfile::tempdir().unwrap();
    let data = pattern_bytes(11 * 1024 * 1024 + 12345, 7);
    fs_err::write(src.path().join("big.tar.zst"), &data).unwrap();
    let transfer = {
        let mut transfer_options = TransferOptions::default();
        transfer_options.multipart_threshold = 5 << 20;
        transfer_options.part_size = 5 << 20;
        transfer_options.multipart_copy_threshold = 5 << 20;
        transfer_options
    };
    let b = backend(&server, transfer).await;
    b.upload_file(
        &src.path().join("big.tar.zst"),
        &loc("src", "run/big.tar.zst"),
    )
    .await
    .unwrap();
    assert_eq!(stored(&server, "src", "run/big.tar.zst"), data);
    // Server-side multipart copy across buckets keeps bytes, type and the recorded digest.
    b.copy_file(
        &loc("src", "run/big.tar.zst"),
        &loc("dst", "release/big.tar.zst"),
    )
    .await
    .unwrap();
    assert_eq!(stored(&server, "dst", "release/big.tar.zst"), data);
    let sha = storage_backend::sha256_file(&src.path().join("big.tar.zst"))
        .await
        .unwrap();
    assert_eq!(
        head(&b, "dst", "release/big.tar.zst").await,
        (Some("application/zstd".to_owned()), Some(sha))
    );
    // A small copy in the same bucket, with a key S3 would misread unencoded.
    b.upload_file(
        &src.path().join("big.tar.zst"),
        &loc("src", "run/rocm 7.0+abc.whl"),
    )
    .await
    .unwrap();
    b.copy_file(
        &loc("src", "run/rocm 7.0+abc.whl"),
        &loc("src", "release/rocm 7.0+abc.whl"),
    )
    .await
    .unwrap();
    assert_eq!(stored(&server, "src", "release/rocm 7.0+abc.whl"), data);
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_paginates_and_filters() {
    let server = S3Server::start();
    server.create_bucket("bucket");
    let mut files: Vec<(String, String)> = (0..1105)
        .map(|i| (format!("run-1/tarballs/f{i:04}.tar.gz"), i.to_string()))
        .collect();
    files.push(("run-1/tarballs/index.html".into(), "i".into()));
    files.push(("run-1/tarballs/sub/nested.tar.gz".into(), "n".into()));
    files.push(("run-10/tarballs/sibling.tar.gz".into(), "s".into()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    write_tree(&server.root().join("bucket"), &refs);
    let b = backend(&server, TransferOptions::default()).await;
    let all = b
        .list_files(&loc("bucket", "run-1/tarballs"), &[])
        .await
        .unwrap();
    assert_eq!(all.len(), 1107);
    let gz = b
        .list_files(&loc("bucket", "run-1/tarballs"), &["*.tar.gz".to_owned()])
        .await
        .unwrap();
    assert_eq!(gz.len(), 1106);
    assert!(
        gz.iter()
            .any(|l| l.relative_path() == "run-1/tarballs/sub/nested.tar.gz")
    );
    assert!(!gz.iter().any(|l| l.relative_path().contains("sibling")));
    assert_eq!(gz[0].relative_path(), "run-1/tarballs/f0000.tar.gz");
    assert!(
        b.list_files(&loc("bucket", "run-2"), &[])
            .await
            .unwrap()
            .is_empty()
    );

    // copy_directory keeps relative paths below the source.
    let report = b
        .copy_directory(
            &loc("bucket", "run-1/tarballs/sub"),
            &loc("bucket", "v3"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(report.transferred, 1);
    assert_eq!(stored(&server, "bucket", "v3/nested.tar.gz"), b"n");
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_failures_name_every_key() {
    let server = S3Server::start();
    server.create_bucket("bucket");
    let src = tempfile::tempdir().unwrap();
    write_tree(src.path(), &[("good.log", "g")]);
    let b = backend(&server, TransferOptions::default()).await;
    let err = b
        .upload_files(vec![
            (src.path().join("good.log"), loc("bucket", "run-1/good.log")),
            (src.path().join("bad.log"), loc("bucket", "run-1/bad.log")),
            (
                src.path().join("elsewhere.log"),
                loc("bucket", "run-1/elsewhere.log"),
            ),
        ])
        .await
        .unwrap_err();
    let Error::Batch {
        failures, total, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*total, 3);
    assert_eq!(failures.len(), 2);
    assert!(
        failures
            .iter()
            .all(|(_, e)| matches!(e, Error::MissingSource(_)))
    );
    let text = err.to_string();
    assert!(
        text.contains("bad.log") && text.contains("elsewhere.log"),
        "{text}"
    );
    assert_eq!(stored(&server, "bucket", "run-1/good.log"), b"g");

    let err = b
        .copy_files(vec![(
            loc("bucket", "v3/missing.tar.gz"),
            loc("bucket", "v4/x.tar.gz"),
        )])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("s3://bucket/v3/missing.tar.gz"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn overwrite_never_and_if_different() {
    let server = S3Server::start();
    server.create_bucket("bucket");
    let src = tempfile::tempdir().unwrap();
    write_tree(src.path(), &[("a.whl", "wheel"), ("b.whl", "other")]);
    let always = backend(&server, TransferOptions::default()).await;
    always
        .upload_file(&src.path().join("a.whl"), &loc("bucket", "py/a.whl"))
        .await
        .unwrap();

    let never = backend(&server, {
        let mut transfer_options = TransferOptions::default();
        transfer_options.overwrite = Overwrite::Never;
        transfer_options
    })
    .await;
    let err = never
        .upload_files(vec![
            (src.path().join("b.whl"), loc("bucket", "py/a.whl")),
            (src.path().join("b.whl"), loc("bucket", "py/b.whl")),
        ])
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("`s3://bucket/py/a.whl` already exists"),
        "{err}"
    );
    assert_eq!(stored(&server, "bucket", "py/a.whl"), b"wheel");
    assert_eq!(stored(&server, "bucket", "py/b.whl"), b"other");

    let if_different = backend(&server, {
        let mut transfer_options = TransferOptions::default();
        transfer_options.overwrite = Overwrite::IfDifferent;
        transfer_options
    })
    .await;
    let report = if_different
        .upload_files(vec![(src.path().join("a.whl"), loc("bucket", "py/a.whl"))])
        .await
        .unwrap();
    assert_eq!((report.transferred, report.skipped), (0, 1));
    let report = if_different
        .upload_files(vec![(src.path().join("b.whl"), loc("bucket", "py/a.whl"))])
        .await
        .unwrap();
    assert_eq!((report.transferred, report.skipped), (1, 0));
    assert_eq!(stored(&server, "bucket", "py/a.whl"), b"other");

    // An object uploaded by another tool, with only a `.sha256sum` sidecar, counts as the same.
    let sha = storage_backend::sha256_file(&src.path().join("a.whl"))
        .await
        .unwrap();
    write_tree(
        &server.root().join("bucket"),
        &[
            ("ext/a.whl", "wheel"),
            ("ext/a.whl.sha256sum", &format!("{sha}  a.whl\n")),
        ],
    );
    let report = if_different
        .upload_files(vec![(src.path().join("a.whl"), loc("bucket", "ext/a.whl"))])
        .await
        .unwrap();
    assert_eq!(report.skipped, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_makes_no_request() {
    let server = S3Server::start();
    server.create_bucket("bucket");
    let src = tempfile::tempdir().unwrap();
    write_tree(src.path(), &[("a.log", "a"), ("b.html", "b")]);
    let sink = Captured::default();
    let b = backend(&server, {
        let mut transfer_options = TransferOptions::default();
        transfer_options.dry_run = true;
        transfer_options
    })
    .await
    .with_dry_run_sink(Box::new(sink.clone()));
    let before = server.requests();
    let report = b
        .upload_directory(src.path(), &loc("bucket", "run-1/logs"), &[], &[])
        .await
        .unwrap();
    assert_eq!(report.transferred, 2);
    b.copy_file(&loc("bucket", "x"), &loc("bucket", "y"))
        .await
        .unwrap();
    assert_eq!(server.requests(), before);
    assert_eq!(
        sink.text(),
        format!(
            "[DRY RUN] {} -> s3://bucket/run-1/logs/a.log (text/plain)\n[DRY RUN] {} -> s3://bucket/run-1/logs/b.html (text/html)\n[DRY RUN] copy s3://bucket/x -> s3://bucket/y\n",
            src.path().join("a.log").display(),
            src.path().join("b.html").display()
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn preflight_tells_failures_apart() {
    let server = S3Server::start();
    server.create_bucket("bucket");
    let run = loc("bucket", "123-linux");
    let good = backend(&server, TransferOptions::default()).await;
    good.preflight(Direction::Upload, &run).await.unwrap();
    good.preflight(Direction::Download, &run).await.unwrap();

    let missing = good
        .preflight(Direction::Download, &loc("nope", "123-linux"))
        .await
        .unwrap_err();
    assert_eq!(
        missing.s3_kind(),
        Some(S3ErrorKind::NoSuchBucket),
        "{missing:?}"
    );
    let missing = good
        .preflight(Direction::Upload, &loc("nope", "123-linux"))
        .await
        .unwrap_err();
    assert_eq!(
        missing.s3_kind(),
        Some(S3ErrorKind::NoSuchBucket),
        "{missing:?}"
    );

    let wrong = backend_with(
        &options(server.endpoint(), Anonymous::Never, "wrong-secret"),
        TransferOptions::default(),
    )
    .await;
    for direction in [Direction::Upload, Direction::Download] {
        let err = wrong.preflight(direction, &run).await.unwrap_err();
        assert_eq!(
            err.s3_kind(),
            Some(S3ErrorKind::Auth),
            "{direction:?}: {err:?}"
        );
    }

    let anonymous = backend_with(
        &options(server.endpoint(), Anonymous::Always, SECRET_KEY),
        TransferOptions::default(),
    )
    .await;
    let err = anonymous
        .preflight(Direction::Upload, &run)
        .await
        .unwrap_err();
    assert_eq!(err.s3_kind(), Some(S3ErrorKind::Auth));
    assert!(
        storage_backend::chain(&err).contains("no AWS credentials"),
        "{err}"
    );

    // Nothing listens on a port the server just released.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let mut opts = options(dead, Anonymous::Never, SECRET_KEY);
    opts.max_attempts = 1;
    let unreachable = backend_with(&opts, TransferOptions::default()).await;
    let err = unreachable
        .preflight(Direction::Download, &run)
        .await
        .unwrap_err();
    assert_eq!(err.s3_kind(), Some(S3ErrorKind::Unreachable), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn anonymous_reads_of_a_public_server() {
    let server = S3Server::start_with(S3ServerOptions {
        anonymous: true,
        ..Default::default()
    });
    server.create_bucket("public");
    write_tree(
        &server.root().join("public"),
        &[("1-linux/a_b_generic.tar.zst", "x")],
    );
    // No credentials anywhere: the client goes unsigned.
    let env = |var: &str| match var {
        "AWS_ENDPOINT_URL" => Some(server.endpoint()),
        _ => None,
    };
    let client = S3Client::connect_with(
        &{
            let mut client_options = ClientOptions::default();
            client_options.region = Some("us-east-1".into());
            client_options.anonymous = Anonymous::Always;
            client_options
        },
        &env,
    )
    .await
    .expect("S3 client");
    assert!(!client.is_signed());
    assert_eq!(client.endpoint_url(), Some(server.endpoint().as_str()));
    let b = StorageBackend::s3(client, TransferOptions::default());
    let listed = b.list_files(&loc("public", "1-linux"), &[]).await.unwrap();
    assert_eq!(listed.len(), 1);
    b.preflight(Direction::Download, &loc("public", "1-linux"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_faults_are_retried_to_correct_bytes() {
    let server = S3Server::start_with(S3ServerOptions {
        fault_every: Some(10),
        ..Default::default()
    });
    server.create_bucket("bucket");
    let src = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for i in 0..200 {
        let name = format!("f{i:03}.bin");
        fs_err::write(
            src.path().join(&name),
            pattern_bytes(1000 + i * 37, u8::try_from(i % 256).unwrap()),
        )
        .unwrap();
        files.push((
            src.path().join(&name),
            loc("bucket", &format!("run/{name}")),
        ));
    }
    let b = backend(&server, TransferOptions::default()).await;
    let report = b.upload_files(files).await.unwrap();
    assert_eq!(report.transferred, 200);
    assert!(server.faults() >= 20, "only {} faults", server.faults());
    for i in 0..200usize {
        assert_eq!(
            stored(&server, "bucket", &format!("run/f{i:03}.bin")),
            pattern_bytes(1000 + i * 37, u8::try_from(i % 256).unwrap())
        );
    }
    let listed = b.list_files(&loc("bucket", "run"), &[]).await.unwrap();
    assert_eq!(listed.len(), 200);
}

/// An endpoint that accepts connections and never answers: every kind of request fails
/// within the client's limits, with a message naming the endpoint and the limit.
#[tokio::test(flavor = "multi_thread")]
async fn a_silent_endpoint_fails_within_the_limits() {
    let addr = rock_ci_test_support::black_hole();
    let mut opts = options(format!("http://{addr}"), Anonymous::Never, SECRET_KEY);
    opts.read_timeout = std::time::Duration::from_millis(300);
    opts.operation_timeout = std::time::Duration::from_secs(2);
    opts.initial_backoff = std::time::Duration::from_millis(10);
    // Enough attempts of 300 ms that the 2 s deadline ends them, not the last attempt.
    opts.max_attempts = 10;
    let client = storage_backend::S3Client::connect_with(&opts, &|_| None)
        .await
        .expect("S3 client");
    let s3 = storage_backend::S3StorageBackend::new(client.clone(), TransferOptions::default());
    let backend = StorageBackend::S3(s3.clone());
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("a.log");
    fs_err::write(&file, "x").unwrap();
    let target = loc("bkt", "run/a.log");
    let started = std::time::Instant::now();
    let errors = vec![
        s3.head_object(&target).await.unwrap_err(),
        s3.list_prefix("bkt", "run/", true).await.unwrap_err(),
        s3.read_range(&target, (0, 9), "", &|_| {})
            .await
            .unwrap_err(),
        backend.upload_file(&file, &target).await.unwrap_err(),
        backend
            .preflight(Direction::Upload, &loc("bkt", "run"))
            .await
            .unwrap_err(),
    ];
    // Five requests of at most about two seconds each, not minutes.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    for err in &errors {
        let text = storage_backend::chain(err);
        assert_eq!(err.s3_kind(), Some(S3ErrorKind::Unreachable), "{text}");
        assert!(text.contains(&format!("http://{addr}")), "{text}");
        assert!(text.contains("within 2 s"), "{text}");
    }
}

/// Conditional writes: `Absent` creates once, `Matches` replaces only the version read, and a
/// lost race is a `Conflict` that leaves the object as the winner wrote it.
#[tokio::test(flavor = "multi_thread")]
async fn conditional_writes_detect_other_writers() {
    use storage_backend::WriteCondition;
    let server = S3Server::start();
    server.create_bucket("repos");
    let b = backend(&server, TransferOptions::default()).await;
    let StorageBackend::S3(s3) = &b else {
        unreachable!()
    };
    let index = loc("repos", "repo/index");
    s3.put_bytes_if(b"one".to_vec(), &index, &WriteCondition::Absent)
        .await
        .unwrap();
    let err = s3
        .put_bytes_if(b"two".to_vec(), &index, &WriteCondition::Absent)
        .await
        .unwrap_err();
    assert_eq!(err.s3_kind(), Some(S3ErrorKind::Conflict), "{err}");
    let first = s3.head_object(&index).await.unwrap().unwrap().etag;
    // Someone else replaces it: a write conditioned on the version read first is refused.
    s3.put_bytes(b"other".to_vec(), &index).await.unwrap();
    let err = s3
        .put_bytes_if(
            b"mine".to_vec(),
            &index,
            &WriteCondition::Matches(first.clone()),
        )
        .await
        .unwrap_err();
    assert_eq!(err.s3_kind(), Some(S3ErrorKind::Conflict), "{err}");
    assert!(err.to_string().contains("changed by someone else"), "{err}");
    assert_eq!(stored(&server, "repos", "repo/index"), b"other");
    // Conditioned on the current version, it lands.
    let current = s3.head_object(&index).await.unwrap().unwrap().etag;
    assert_ne!(current, first);
    s3.put_bytes_if(b"mine".to_vec(), &index, &WriteCondition::Matches(current))
        .await
        .unwrap();
    assert_eq!(stored(&server, "repos", "repo/index"), b"mine");
}

/// A conditional upload of a file sent in parts: the completion carries the condition, so a
/// key created by someone else while the parts were going up is a `Conflict`, the winner's
/// object stays, and the parts are aborted; on an absent key it lands whole with its digest.
#[tokio::test(flavor = "multi_thread")]
async fn conditional_multipart_uploads_detect_other_writers() {
    use storage_backend::WriteCondition;
    let server = S3Server::start();
    server.create_bucket("wheels");
    let dir = tempfile::tempdir().unwrap();
    let data = pattern_bytes(11 * 1024 * 1024 + 77, 3);
    let file = dir.path().join("big.whl");
    fs_err::write(&file, &data).unwrap();
    let transfer = {
        let mut transfer_options = TransferOptions::default();
        transfer_options.multipart_threshold = 5 << 20;
        transfer_options.part_size = 5 << 20;
        transfer_options
    };
    let b = backend(&server, transfer).await;
    let StorageBackend::S3(s3) = &b else {
        unreachable!()
    };
    let taken = loc("wheels", "v5/taken.whl");
    s3.put_bytes(b"the winner".to_vec(), &taken).await.unwrap();
    let err = s3
        .upload_file_if(&file, &taken, None, &WriteCondition::Absent)
        .await
        .unwrap_err();
    assert_eq!(err.s3_kind(), Some(S3ErrorKind::Conflict), "{err}");
    assert_eq!(stored(&server, "wheels", "v5/taken.whl"), b"the winner");
    let free = loc("wheels", "v5/free.whl");
    let sha = rock_ci_test_support::sha256_hex(&data);
    s3.upload_file_if(&file, &free, Some(sha.clone()), &WriteCondition::Absent)
        .await
        .unwrap();
    assert_eq!(stored(&server, "wheels", "v5/free.whl"), data);
    let head = s3.head_object(&free).await.unwrap().unwrap();
    assert_eq!(head.sha256.as_deref(), Some(sha.as_str()));
}

#[tokio::test(flavor = "multi_thread")]
async fn content_sha256_hashes_an_object_without_a_recorded_digest() {
    use sha2::Digest as _;
    let server = S3Server::start();
    let b = backend(&server, TransferOptions::default()).await;
    let StorageBackend::S3(s3) = &b else {
        unreachable!()
    };
    // As another tool leaves it: no sha256 metadata. Larger than one 8 MiB range, with a
    // short last range.
    let big = pattern_bytes((8 << 20) + 5, 3);
    for (key, bytes) in [("big", big), ("empty", Vec::new())] {
        server.seed_object("my-bucket", key, &bytes, None, &[]);
        let head = s3
            .head_object(&loc("my-bucket", key))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(head.sha256, None, "{key}");
        assert_eq!(
            s3.content_sha256(&loc("my-bucket", key), &head)
                .await
                .unwrap(),
            hex::encode(sha2::Sha256::digest(&bytes)),
            "{key}"
        );
    }
}
