//! End-to-end checks of the storage and artifact backends against an S3-protocol server
//! (`scripts/e2e-seaweedfs` runs them against SeaweedFS). Reads `ROCK_CI_S3_ENDPOINT`,
//! `ROCK_CI_S3_ACCESS_KEY`, `ROCK_CI_S3_SECRET_KEY` and `ROCK_CI_S3_PUBLIC_BUCKET`; the
//! credentials must be allowed to create buckets, and the public bucket must be anonymously
//! readable. Prints one line per check and exits 1 if any failed.

extern crate rock_ci_artifact_backend as artifact_backend;

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use artifact_backend::ArtifactBackend;
use storage_backend::{
    Anonymous, ClientOptions, Credentials, Direction, Error, Overwrite, S3Client, S3ErrorKind,
    S3StorageBackend, StorageBackend, StorageLocation, TransferOptions,
};
use workflow_outputs::{ExternalRepo, Platform, WorkflowOutputRoot};

type Check = Result<String, String>;

struct Env {
    endpoint: String,
    access: String,
    secret: String,
    public: String,
}

impl Env {
    fn options(&self, anonymous: Anonymous, secret: &str) -> ClientOptions {
        {
            let mut client_options = ClientOptions::default();
            client_options.region = Some("us-east-1".into());
            client_options.endpoint_url = Some(self.endpoint.clone());
            client_options.anonymous = anonymous;
            client_options.credentials = (anonymous != Anonymous::Always)
                .then(|| Credentials::new(&self.access, secret, None, None, "e2e"));
            client_options
        }
    }

    async fn client(&self) -> S3Client {
        S3Client::connect_with(&self.options(Anonymous::Never, &self.secret), &|_| None)
            .await
            .expect("S3 client")
    }
}

fn var(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from(i % 251).unwrap_or(0) ^ seed)
        .collect()
}

fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn ensure_bucket(client: &S3Client, bucket: &str) -> Result<(), String> {
    S3StorageBackend::new(client.clone(), TransferOptions::default())
        .create_bucket(bucket)
        .await
        .map_err(|e| storage_backend::chain(&e))
}

async fn many_small_files(env: &Env, dir: &Path) -> Check {
    let storage = StorageBackend::s3(env.client().await, TransferOptions::default());
    for i in 0..1200 {
        let sub = dir.join(format!("d{}", i % 7));
        fs_err::create_dir_all(&sub).map_err(fail)?;
        fs_err::write(sub.join(format!("f{i:04}.log")), bytes(100 + i, 3)).map_err(fail)?;
    }
    let dest = StorageLocation::new("rockci", "1-linux/logs/g");
    let up = storage
        .upload_directory(dir, &dest, &[], &[])
        .await
        .map_err(|e| storage_backend::chain(&e))?;
    let listed = storage.list_files(&dest, &[]).await.map_err(fail)?;
    let logs = storage
        .list_files(&dest, &["d3/*.log".into()])
        .await
        .map_err(fail)?;
    let copied = storage
        .copy_directory(
            &StorageLocation::new("rockci", "1-linux/logs/g/d3"),
            &StorageLocation::new("rockci-copy", "v3"),
            &[],
        )
        .await
        .map_err(|e| storage_backend::chain(&e))?;
    if up.transferred != 1200
        || listed.len() != 1200
        || logs.len() != 171
        || copied.transferred != 171
    {
        return Err(format!(
            "uploaded {} listed {} filtered {} copied {}",
            up.transferred,
            listed.len(),
            logs.len(),
            copied.transferred
        ));
    }
    Ok("1,200 files up, listed over 2 pages, filtered, copied server-side across buckets".into())
}

async fn multipart_and_verified_download(env: &Env, dir: &Path) -> Check {
    let client = env.client().await;
    let data = bytes(40 << 20, 9);
    let src = dir.join("big_lib_generic.tar.zst");
    fs_err::write(&src, &data).map_err(fail)?;
    let root = WorkflowOutputRoot::new("rockci", ExternalRepo::NONE, "2", Platform::Linux)
        .map_err(fail)?;
    let artifacts = ArtifactBackend::s3(client.clone(), root.clone());
    let sha = artifacts
        .upload_artifact(&src, "big_lib_generic.tar.zst")
        .await
        .map_err(|e| storage_backend::chain(&e))?;
    let storage = StorageBackend::s3(client.clone(), {
        let mut transfer_options = TransferOptions::default();
        transfer_options.multipart_copy_threshold = 5 << 20;
        transfer_options.part_size = 5 << 20;
        transfer_options
    });
    storage
        .copy_file(
            &root.artifact("big_lib_generic.tar.zst"),
            &StorageLocation::new("rockci-copy", "3-linux/big_lib_generic.tar.zst"),
        )
        .await
        .map_err(|e| storage_backend::chain(&e))?;
    storage
        .copy_file(
            &root.artifact("big_lib_generic.tar.zst.sha256sum"),
            &StorageLocation::new("rockci-copy", "3-linux/big_lib_generic.tar.zst.sha256sum"),
        )
        .await
        .map_err(fail)?;
    let copy_root =
        WorkflowOutputRoot::new("rockci-copy", ExternalRepo::NONE, "3", Platform::Linux)
            .map_err(fail)?;
    let got = ArtifactBackend::s3(client, copy_root)
        .download_artifact(
            "big_lib_generic.tar.zst",
            &dir.join("out/big_lib_generic.tar.zst"),
        )
        .await
        .map_err(|e| storage_backend::chain(&e))?;
    if got.sha256 != sha || !got.verified {
        return Err(format!(
            "digest {} vs {sha}, verified {}",
            got.sha256, got.verified
        ));
    }
    // Resume: keep the first 10 MiB as a partial download of the same object version.
    let head = S3StorageBackend::new(env.client().await, TransferOptions::default())
        .head_object(&StorageLocation::new(
            "rockci",
            "2-linux/big_lib_generic.tar.zst",
        ))
        .await
        .map_err(fail)?
        .ok_or("the uploaded object is missing")?;
    let resume_dir = dir.join("resume");
    fs_err::create_dir_all(&resume_dir).map_err(fail)?;
    fs_err::write(
        resume_dir.join(".big_lib_generic.tar.zst.partial"),
        &data[..10 << 20],
    )
    .map_err(fail)?;
    fs_err::write(
        resume_dir.join(".big_lib_generic.tar.zst.partial.etag"),
        head.etag,
    )
    .map_err(fail)?;
    let got = artifacts
        .download_artifact(
            "big_lib_generic.tar.zst",
            &resume_dir.join("big_lib_generic.tar.zst"),
        )
        .await
        .map_err(|e| storage_backend::chain(&e))?;
    if got.resumed != 10 << 20 || got.sha256 != sha {
        return Err(format!("resumed {} digest {}", got.resumed, got.sha256));
    }
    Ok("40 MiB multipart upload, multipart copy, verified download, resumed download".into())
}

async fn overwrite_modes(env: &Env, dir: &Path) -> Check {
    let client = env.client().await;
    let f = dir.join("w.whl");
    fs_err::write(&f, b"wheel").map_err(fail)?;
    let dest = StorageLocation::new("rockci", "py/w.whl");
    let with = |overwrite| {
        StorageBackend::s3(client.clone(), {
            let mut transfer_options = TransferOptions::default();
            transfer_options.overwrite = overwrite;
            transfer_options
        })
    };
    with(Overwrite::Always)
        .upload_file(&f, &dest)
        .await
        .map_err(fail)?;
    match with(Overwrite::Never).upload_file(&f, &dest).await {
        Err(Error::AlreadyExists(_)) => {}
        other => return Err(format!("Never: {other:?}")),
    }
    let skipped = with(Overwrite::IfDifferent)
        .upload_files(vec![(f.clone(), dest.clone())])
        .await
        .map_err(fail)?;
    if skipped.skipped != 1 {
        return Err(format!("IfDifferent: {skipped:?}"));
    }
    Ok("overwrite never refuses, if-different skips an unchanged object".into())
}

/// Conditional writes as the release publishers use them: `If-None-Match: *` on a single
/// `PutObject` and on the completion of a multipart upload, refused on a taken key.
async fn conditional_writes(env: &Env, dir: &Path) -> Check {
    use storage_backend::WriteCondition;
    let s3 = S3StorageBackend::new(env.client().await, {
        let mut transfer_options = TransferOptions::default();
        transfer_options.multipart_threshold = 5 << 20;
        transfer_options.part_size = 5 << 20;
        transfer_options
    });
    let big = dir.join("big.whl");
    let data = bytes(11 << 20, 9);
    fs_err::write(&big, &data).map_err(fail)?;
    let base = format!("cond/{}", std::process::id());
    let taken = StorageLocation::new("rockci", format!("{base}/taken.whl"));
    s3.put_bytes(b"first".to_vec(), &taken)
        .await
        .map_err(fail)?;
    let conflict = |r: Result<storage_backend::Outcome, Error>, what: &str| match r {
        Err(e) if e.s3_kind() == Some(S3ErrorKind::Conflict) => Ok(()),
        other => Err(format!("{what} on a taken key: {other:?}")),
    };
    conflict(
        s3.put_bytes_if(b"second".to_vec(), &taken, &WriteCondition::Absent)
            .await,
        "conditional put",
    )?;
    conflict(
        s3.upload_file_if(&big, &taken, None, &WriteCondition::Absent)
            .await,
        "conditional multipart upload",
    )?;
    let kept = s3.get_small(&taken).await.map_err(fail)?;
    if kept.as_deref() != Some(b"first".as_slice()) {
        return Err(format!("the taken key was changed: {kept:?}"));
    }
    let free = StorageLocation::new("rockci", format!("{base}/free.whl"));
    s3.upload_file_if(&big, &free, None, &WriteCondition::Absent)
        .await
        .map_err(fail)?;
    let head = s3.head_object(&free).await.map_err(fail)?;
    if head.as_ref().map(|h| h.size) != Some(data.len() as u64) {
        return Err(format!("the free key holds {head:?}"));
    }
    Ok("If-None-Match refused on a taken key for a put and a multipart completion; a free key written".into())
}

async fn access_and_preflight(env: &Env) -> Check {
    let good = StorageBackend::s3(env.client().await, TransferOptions::default());
    let run = StorageLocation::new("rockci", "1-linux");
    good.preflight(Direction::Upload, &run)
        .await
        .map_err(|e| storage_backend::chain(&e))?;
    good.preflight(Direction::Download, &run)
        .await
        .map_err(|e| storage_backend::chain(&e))?;
    let kind = |r: Result<(), Error>| r.err().and_then(|e| e.s3_kind());
    let missing = kind(
        good.preflight(
            Direction::Download,
            &StorageLocation::new("rockci-missing", "1-linux"),
        )
        .await,
    );
    let wrong = StorageBackend::s3(
        S3Client::connect_with(&env.options(Anonymous::Never, "wrong-secret"), &|_| None)
            .await
            .expect("S3 client"),
        TransferOptions::default(),
    );
    let auth = kind(wrong.preflight(Direction::Upload, &run).await);
    // Read-only credentials may list, but an upload preflight must prove writing and fail.
    let mut readonly = env.options(Anonymous::Never, "");
    readonly.credentials = Some(Credentials::new(
        var("ROCK_CI_S3_READONLY_ACCESS_KEY", "rockci-e2e-readonly"),
        var(
            "ROCK_CI_S3_READONLY_SECRET_KEY",
            "rockci-e2e-readonly-secret-0123",
        ),
        None,
        None,
        "e2e",
    ));
    let readonly = StorageBackend::s3(
        S3Client::connect_with(&readonly, &|_| None)
            .await
            .expect("S3 client"),
        TransferOptions::default(),
    );
    readonly
        .preflight(Direction::Download, &run)
        .await
        .map_err(|e| {
            format!(
                "read-only download preflight: {}",
                storage_backend::chain(&e)
            )
        })?;
    let readonly_upload = kind(readonly.preflight(Direction::Upload, &run).await);
    let anonymous_client = S3Client::connect_with(&env.options(Anonymous::Always, ""), &|_| None)
        .await
        .expect("S3 client");
    let anonymous = StorageBackend::s3(anonymous_client.clone(), TransferOptions::default());
    let private = kind(anonymous.preflight(Direction::Download, &run).await);
    let public = ArtifactBackend::s3(
        anonymous_client,
        WorkflowOutputRoot::new(&env.public, ExternalRepo::NONE, "5", Platform::Linux)
            .map_err(fail)?,
    )
    .list_artifacts(None)
    .await
    .map_err(|e| storage_backend::chain(&e))?;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(fail)?
        .local_addr()
        .map_err(fail)?;
    let mut opts = env.options(Anonymous::Never, &env.secret);
    opts.endpoint_url = Some(format!("http://{closed}"));
    opts.max_attempts = 1;
    let down = StorageBackend::s3(
        S3Client::connect_with(&opts, &|_| None)
            .await
            .expect("S3 client"),
        TransferOptions::default(),
    );
    let unreachable = kind(down.preflight(Direction::Download, &run).await);
    let expected = (
        Some(S3ErrorKind::NoSuchBucket),
        Some(S3ErrorKind::Auth),
        Some(S3ErrorKind::Auth),
        Some(S3ErrorKind::Auth),
        1,
        Some(S3ErrorKind::Unreachable),
    );
    let got = (
        missing,
        auth,
        readonly_upload,
        private,
        public.len(),
        unreachable,
    );
    if got != expected {
        return Err(format!("got {got:?}, expected {expected:?}"));
    }
    Ok("preflight: ok, missing bucket, bad secret, read-only upload, anonymous on private, unreachable told apart; anonymous read of the public bucket".into())
}

async fn run(env: &Env) -> bool {
    let client = env.client().await;
    for bucket in ["rockci", "rockci-copy", env.public.as_str()] {
        if let Err(e) = ensure_bucket(&client, bucket).await {
            let _ = writeln!(std::io::stdout(), "FAIL setup: {e}");
            return false;
        }
    }
    let public_file =
        std::env::temp_dir().join(format!("rockci-e2e-{}.tar.zst", std::process::id()));
    let _ = fs_err::write(&public_file, b"public");
    let _ = StorageBackend::s3(client, TransferOptions::default())
        .upload_file(
            &public_file,
            &StorageLocation::new(&env.public, "5-linux/pub_lib_generic.tar.zst"),
        )
        .await;
    let _ = fs_err::remove_file(&public_file);

    let dir = tempfile::tempdir().expect("tempdir");
    let results = [
        (
            "many small files",
            many_small_files(env, &dir.path().join("small")).await,
        ),
        (
            "multipart and verified download",
            multipart_and_verified_download(env, dir.path()).await,
        ),
        ("overwrite modes", overwrite_modes(env, dir.path()).await),
        (
            "conditional writes",
            conditional_writes(env, dir.path()).await,
        ),
        ("access and preflight", access_and_preflight(env).await),
    ];
    let mut ok = true;
    let mut out = std::io::stdout().lock();
    for (name, result) in results {
        match result {
            Ok(detail) => {
                let _ = writeln!(out, "ok   {name}: {detail}");
            }
            Err(e) => {
                ok = false;
                let _ = writeln!(out, "FAIL {name}: {e}");
            }
        }
    }
    ok
}

fn main() -> ExitCode {
    let env = Env {
        endpoint: var("ROCK_CI_S3_ENDPOINT", "http://127.0.0.1:8333"),
        access: var("ROCK_CI_S3_ACCESS_KEY", "rockci-e2e-access"),
        secret: var("ROCK_CI_S3_SECRET_KEY", "rockci-e2e-secret-0123456789"),
        public: var("ROCK_CI_S3_PUBLIC_BUCKET", "public"),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if runtime.block_on(run(&env)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
