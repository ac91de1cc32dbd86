//! A real S3-protocol server (s3s + s3s-fs) on `127.0.0.1:0`, over a temporary directory.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;

use crate::server_thread::ServerThread;

/// The access key the server accepts.
pub const ACCESS_KEY: &str = "rockci-test-access";
/// The secret key the server accepts.
pub const SECRET_KEY: &str = "rockci-test-secret-key-0123456789";

/// Options of [`S3Server::start_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct S3ServerOptions {
    /// Accept unsigned requests (no authentication at all).
    pub anonymous: bool,
    /// Fail every `n`-th request: odd failures answer `503 SlowDown`, even ones reset the
    /// connection.
    pub fault_every: Option<u64>,
}

/// The server; stops when dropped.
pub struct S3Server {
    // Stops the server before the directory goes.
    _thread: ServerThread,
    addr: SocketAddr,
    root: tempfile::TempDir,
    requests: Arc<AtomicU64>,
    faults: Arc<AtomicU64>,
}

impl S3Server {
    /// A server requiring [`ACCESS_KEY`]/[`SECRET_KEY`] signatures.
    pub fn start() -> Self {
        Self::start_with(S3ServerOptions::default())
    }

    /// A server with `options`.
    pub fn start_with(options: S3ServerOptions) -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let fs = s3s_fs::FileSystem::new(root.path()).expect("s3s-fs");
        let mut builder = S3ServiceBuilder::new(fs);
        if !options.anonymous {
            builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        }
        let service = builder.build();
        let requests = Arc::new(AtomicU64::new(0));
        let faults = Arc::new(AtomicU64::new(0));
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("addr");
        let (req_count, fault_count) = (requests.clone(), faults.clone());
        let thread = ServerThread::spawn(2, move |mut rx| async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
            let http = ConnBuilder::new(TokioExecutor::new());
            loop {
                let socket = tokio::select! {
                    res = listener.accept() => match res { Ok((s, _)) => s, Err(_) => continue },
                    _ = &mut rx => break,
                };
                let service = service.clone();
                let (req_count, fault_count) = (req_count.clone(), fault_count.clone());
                let svc = hyper::service::service_fn(
                    move |req: http::Request<hyper::body::Incoming>| {
                        let service = service.clone();
                        let n = req_count.fetch_add(1, Ordering::SeqCst) + 1;
                        let fault = options.fault_every.filter(|every| n % every == 0);
                        let fault_count = fault_count.clone();
                        async move {
                            if fault.is_some() {
                                let k = fault_count.fetch_add(1, Ordering::SeqCst);
                                if k % 2 == 0 {
                                    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>injected</Message></Error>";
                                    return Ok(http::Response::builder()
                                        .status(503)
                                        .header("content-type", "application/xml")
                                        .body(s3s::Body::from(body.to_owned()))
                                        .expect("response"));
                                }
                                return Err(s3s::HttpError::new(
                                    "injected connection reset".into(),
                                ));
                            }
                            hyper::service::Service::call(&service, req).await
                        }
                    },
                );
                let conn = http
                    .serve_connection(TokioIo::new(socket), svc)
                    .into_owned();
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
        });
        Self {
            _thread: thread,
            addr,
            root,
            requests,
            faults,
        }
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:{port}`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The environment that points a command's AWS client at this server with the keys it
    /// accepts, in this order: `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, and `AWS_EC2_METADATA_DISABLED` (no probe of an instance
    /// metadata service).
    pub fn aws_env(&self) -> [(&'static str, String); 4] {
        [
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ]
    }

    /// The directory the server stores buckets in (one subdirectory per bucket).
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Creates a bucket.
    pub fn create_bucket(&self, name: &str) {
        fs_err::create_dir_all(self.root.path().join(name)).expect("create bucket");
    }

    /// The `Content-Type` the server stored for an object, from its metadata record; `None`
    /// when the object has none (or does not exist).
    pub fn content_type(&self, bucket: &str, key: &str) -> Option<String> {
        use base64::Engine as _;
        let encode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let record = self.root.path().join(format!(
            ".bucket-{}.object-{}.metadata.json",
            encode(bucket),
            encode(key)
        ));
        let text = fs_err::read_to_string(record).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).expect("a metadata record");
        value
            .get("content_type")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    }

    /// Stores an object directly, as an upload with `content_type` and the user metadata
    /// `metadata` would have (creating the bucket when needed).
    pub fn seed_object(
        &self,
        bucket: &str,
        key: &str,
        data: &[u8],
        content_type: Option<&str>,
        metadata: &[(&str, &str)],
    ) {
        use base64::Engine as _;
        let encode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let path = self.root.path().join(bucket).join(key);
        fs_err::create_dir_all(path.parent().expect("a key")).expect("create the key's directory");
        fs_err::write(&path, data).expect("write the object");
        let mut record = serde_json::Map::new();
        if !metadata.is_empty() {
            let user: serde_json::Map<String, serde_json::Value> = metadata
                .iter()
                .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
                .collect();
            record.insert("user_metadata".into(), user.into());
        }
        if let Some(ct) = content_type {
            record.insert("content_type".into(), ct.into());
        }
        let record_path = self.root.path().join(format!(
            ".bucket-{}.object-{}.metadata.json",
            encode(bucket),
            encode(key)
        ));
        fs_err::write(record_path, serde_json::Value::Object(record).to_string())
            .expect("write the metadata record");
    }

    /// Makes the server answer `etag` as the `ETag` of an object stored already, as it does for
    /// one uploaded in parts (`"{md5 of the parts' md5s}-{parts}"`), whatever its bytes.
    pub fn set_etag(&self, bucket: &str, key: &str, etag: &str) {
        use base64::Engine as _;
        let encode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let path = self.root.path().join(format!(
            ".bucket-{}.object-{}.internal.json",
            encode(bucket),
            encode(key)
        ));
        let mut info: serde_json::Map<String, serde_json::Value> = fs_err::read_to_string(&path)
            .ok()
            .map(|text| serde_json::from_str(&text).expect("an internal record"))
            .unwrap_or_default();
        info.insert("e_tag".into(), etag.into());
        fs_err::write(path, serde_json::Value::Object(info).to_string())
            .expect("write the internal record");
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Faults injected so far.
    pub fn faults(&self) -> u64 {
        self.faults.load(Ordering::SeqCst)
    }
}
