//! The S3 server of the tests that also run against a production S3-protocol server:
//! in-process, or the one `ROCK_CI_S3_ENDPOINT` names (`scripts/e2e-seaweedfs` runs SeaweedFS).

#[cfg(unix)]
use rock_ci_test_support::HttpServer;
use rock_ci_test_support::S3Server;

/// The S3 server of a test: in-process, or the one `ROCK_CI_S3_ENDPOINT` names (with
/// `ROCK_CI_S3_ACCESS_KEY` / `ROCK_CI_S3_SECRET_KEY`; `scripts/e2e-seaweedfs` runs SeaweedFS).
pub(crate) enum Store {
    InProcess(S3Server),
    External {
        endpoint: String,
        access: String,
        secret: String,
    },
}

impl Store {
    pub(crate) fn start() -> Self {
        match std::env::var("ROCK_CI_S3_ENDPOINT") {
            Ok(endpoint) if !endpoint.is_empty() => Store::External {
                endpoint,
                access: std::env::var("ROCK_CI_S3_ACCESS_KEY").unwrap_or_default(),
                secret: std::env::var("ROCK_CI_S3_SECRET_KEY").unwrap_or_default(),
            },
            _ => Store::InProcess(S3Server::start()),
        }
    }

    pub(crate) fn aws_env(&self) -> Vec<(&'static str, String)> {
        match self {
            Store::InProcess(server) => server.aws_env().to_vec(),
            Store::External {
                endpoint,
                access,
                secret,
            } => vec![
                ("AWS_ENDPOINT_URL", endpoint.clone()),
                ("AWS_ACCESS_KEY_ID", access.clone()),
                ("AWS_SECRET_ACCESS_KEY", secret.clone()),
                ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
            ],
        }
    }

    /// Runs `f` with a storage client of this server.
    pub(crate) fn with_storage<T>(
        &self,
        f: impl AsyncFnOnce(&storage_backend::S3StorageBackend) -> T,
    ) -> T {
        let env: Vec<(&str, String)> = self.aws_env();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let lookup = |var: &str| env.iter().find(|(k, _)| *k == var).map(|(_, v)| v.clone());
            let var = |name: &str| lookup(name).unwrap_or_default();
            let client = storage_backend::S3Client::connect_with(
                &{
                    let mut client_options = storage_backend::ClientOptions::default();
                    client_options.region = Some("us-east-1".to_owned());
                    client_options.endpoint_url = Some(var("AWS_ENDPOINT_URL"));
                    client_options.credentials = Some(storage_backend::Credentials::new(
                        var("AWS_ACCESS_KEY_ID"),
                        var("AWS_SECRET_ACCESS_KEY"),
                        None,
                        None,
                        "test",
                    ));
                    client_options
                },
                &lookup,
            )
            .await
            .expect("S3 client");
            let storage = storage_backend::S3StorageBackend::new(
                client,
                storage_backend::TransferOptions::default(),
            );
            f(&storage).await
        })
    }

    /// Requests the in-process server received so far (`None` for an external server).
    pub(crate) fn requests(&self) -> Option<u64> {
        match self {
            Store::InProcess(server) => Some(server.requests()),
            Store::External { .. } => None,
        }
    }

    /// The server's address (for a proxy in front of it).
    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        match self {
            Store::InProcess(server) => server.addr(),
            Store::External { endpoint, .. } => endpoint
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .parse()
                .expect("an http://host:port endpoint"),
        }
    }

    pub(crate) fn create_bucket(&self, bucket: &str) {
        self.with_storage(async |s| s.create_bucket(bucket).await.unwrap());
    }

    /// The keys directly below `{bucket}/{prefix}/`, sorted.
    pub(crate) fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let listed = self.with_storage(async |s| {
            s.list_prefix(bucket, &format!("{prefix}/"), true)
                .await
                .unwrap()
        });
        let mut keys: Vec<String> = listed
            .into_iter()
            .map(|o| o.key.rsplit('/').next().unwrap_or_default().to_owned())
            .collect();
        keys.sort();
        keys
    }

    // Used by the CI run, which runs on Linux only.
    #[cfg(unix)]
    /// Whether this is an external server (`ROCK_CI_S3_ENDPOINT`).
    pub(crate) fn is_external(&self) -> bool {
        matches!(self, Store::External { .. })
    }

    // Used by the CI run, which runs on Linux only.
    #[cfg(unix)]
    /// Every key of `bucket`, sorted.
    pub(crate) fn all_keys(&self, bucket: &str) -> Vec<String> {
        let listed = self.with_storage(async |s| s.list_prefix(bucket, "", false).await.unwrap());
        let mut keys: Vec<String> = listed.into_iter().map(|o| o.key).collect();
        keys.sort();
        keys
    }

    // Used by the CI run, which runs on Linux only.
    #[cfg(unix)]
    /// The HTTP base URL under which `{base}/{bucket}/{key}` serves objects without
    /// credentials, as a bucket's public website does: the external server itself (it must
    /// grant anonymous reads of the buckets read so), or a file server over the in-process
    /// server's storage (returned too, to keep it running).
    pub(crate) fn public_http(&self) -> (String, Option<HttpServer>) {
        match self {
            Store::InProcess(server) => {
                let files = HttpServer::serve_dir(server.root());
                (files.url(), Some(files))
            }
            Store::External { endpoint, .. } => (endpoint.trim_end_matches('/').to_owned(), None),
        }
    }

    /// Deletes `{bucket}/{key}`.
    pub(crate) fn delete(&self, bucket: &str, key: &str) {
        self.with_storage(async |s| {
            s.client()
                .sdk()
                .delete_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
                .unwrap();
        });
    }

    /// Writes `data` as `{bucket}/{key}` as another tool would: no sidecar, and `sha256` as
    /// the recorded digest only when given.
    pub(crate) fn put_raw(&self, bucket: &str, key: &str, data: Vec<u8>, sha256: Option<&str>) {
        self.with_storage(async |s| {
            s.client()
                .sdk()
                .put_object()
                .bucket(bucket)
                .key(key)
                .set_metadata(sha256.map(|sha| {
                    std::collections::HashMap::from([(
                        storage_backend::SHA256_METADATA_KEY.to_owned(),
                        sha.to_owned(),
                    )])
                }))
                .body(data.into())
                .send()
                .await
                .unwrap();
        });
    }

    /// The bytes of `{bucket}/{key}`.
    pub(crate) fn read(&self, bucket: &str, key: &str) -> Vec<u8> {
        let loc = storage_backend::StorageLocation::new(bucket, key);
        self.with_storage(async |s| s.get_small(&loc).await.unwrap())
            .unwrap_or_else(|| panic!("s3://{bucket}/{key} exists"))
    }

    /// Uploads the file `path` as `{bucket}/{key}` as rock-ci's uploads do: its content type
    /// from its name, its SHA-256 in the metadata, in parts above 8 MiB.
    pub(crate) fn upload(&self, path: &std::path::Path, bucket: &str, key: &str) {
        let loc = storage_backend::StorageLocation::new(bucket, key);
        self.with_storage(async |s| {
            storage_backend::StorageBackend::S3(s.clone())
                .upload_file(path, &loc)
                .await
                .unwrap()
        });
    }

    /// The HEAD of `{bucket}/{key}`, if there is such an object.
    pub(crate) fn head(&self, bucket: &str, key: &str) -> Option<storage_backend::ObjectHead> {
        let loc = storage_backend::StorageLocation::new(bucket, key);
        self.with_storage(async |s| s.head_object(&loc).await.unwrap())
    }
}
