//! Uploads, server-side copies and listings of CI outputs, to S3 or to a local staging
//! directory, with dry-run, bounded concurrency, multipart transfers and idempotent uploads.
//!
//! [`StorageBackend`] is a closed set: [`S3StorageBackend`] or [`LocalStorageBackend`]. Both
//! take [`StorageLocation`]s from `workflow-outputs` and report progress through a
//! [`Reporter`]. Every S3 client of the workspace comes from [`S3Client::connect`].
//! An uploading tool gets its backend from [`StorageBackend::for_upload`], proves the
//! destination writable with [`StorageBackend::preflight_upload`], and names destinations to
//! the user with [`shown`].
//! Large objects are read with [`S3StorageBackend::ranged_parts`] (parallel ranged GETs pinned
//! to the `ETag`, each resumed where its body broke off) and checked by a [`Verifier`]
//! (SHA-256, MD5 or multipart `ETag`); [`S3StorageBackend::read_verified`] hands such a read to
//! a blocking consumer as a [`std::io::Read`].
//!
//! Feature `s3` (default): the S3 backend and its client (the AWS SDK, hyper, rustls); without
//! it only the local staging directory exists and asking for S3 is [`Error::NoS3Support`]. The
//! async functions need a tokio runtime with `enable_all()`, multi-thread or current-thread.
//!
//! ```
//! use rock_ci_storage_backend::{StorageBackend, TransferOptions};
//! use storage_location::StorageLocation;
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let staging = tempfile::tempdir()?;
//! let src = tempfile::tempdir()?;
//! std::fs::write(src.path().join("build.log"), "ok")?;
//! let backend = StorageBackend::local(staging.path(), TransferOptions::default());
//! let report = backend
//!     .upload_directory(src.path(), &StorageLocation::new("b", "1-linux/logs/g"), &[], &[])
//!     .await?;
//! assert_eq!(report.transferred, 1);
//! assert!(staging.path().join("1-linux/logs/g/build.log").is_file());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

use file_tree::FileError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
pub use storage_location::StorageLocation;

#[cfg(feature = "s3")]
mod client;
mod content_type;
mod error;
mod local;
pub mod patterns;
mod ranged;
#[cfg(feature = "s3")]
mod s3;
mod upload;

#[cfg(feature = "s3")]
pub use aws_sdk_s3::config::Credentials;
#[cfg(feature = "s3")]
pub use client::{
    Anonymous, ClientOptions, DEFAULT_REGION, EnvVars, LimitOverrides, S3Client, endpoint_override,
    secret_values,
};
pub use content_type::{DEFAULT_CONTENT_TYPE, infer_content_type};
pub use error::{Error, S3ErrorKind, chain};
#[cfg(feature = "s3")]
pub use error::{HasStatus, classify};
pub use local::LocalStorageBackend;
pub use ranged::{
    DigestKind, Expected, RangePlan, Verification, Verified, VerifiedReader, Verifier,
};
#[cfg(feature = "s3")]
pub use s3::{
    ListedObject, ObjectBody, ObjectHead, RangeSink, S3StorageBackend, SINK_BATCH, WriteCondition,
};
pub use upload::shown;

/// The user metadata key under which uploads record the object's SHA-256 (hex).
pub const SHA256_METADATA_KEY: &str = "sha256";
/// The key (below the checked prefix) that an upload preflight writes and deletes.
pub const PREFLIGHT_PROBE_KEY: &str = ".rock-ci-preflight-probe";
/// Files transferred at once by default (the AWS CLI's default too).
pub const DEFAULT_CONCURRENCY: usize = 10;
/// Parts of one file transferred at once by default.
pub const DEFAULT_PART_CONCURRENCY: usize = 8;
/// Size above which uploads are multipart, and the default part size.
pub const DEFAULT_PART_SIZE: u64 = 8 << 20;

/// What to do when the destination already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overwrite {
    /// Replace it (the reference's behaviour).
    #[default]
    Always,
    /// Refuse; the batch error lists every key that already existed.
    Never,
    /// Skip it when its recorded SHA-256 (upload metadata or `.sha256sum` sidecar) equals the
    /// source's; replace it otherwise.
    IfDifferent,
}

/// Tuning of transfers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransferOptions {
    /// Files transferred at once.
    pub concurrency: usize,
    /// Uploads larger than this are multipart.
    pub multipart_threshold: u64,
    /// Preferred part size (raised when a file would need more than 10,000 parts).
    pub part_size: u64,
    /// Parts of one file transferred at once.
    pub part_concurrency: usize,
    /// Copies larger than this are multipart (at most 5 GiB, the `CopyObject` limit).
    pub multipart_copy_threshold: u64,
    /// Existing destinations.
    pub overwrite: Overwrite,
    /// Plan only: print each action to the dry-run sink, transfer nothing.
    pub dry_run: bool,
}

impl Default for TransferOptions {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            multipart_threshold: DEFAULT_PART_SIZE,
            part_size: DEFAULT_PART_SIZE,
            part_concurrency: DEFAULT_PART_CONCURRENCY,
            multipart_copy_threshold: 5 << 30,
            overwrite: Overwrite::Always,
            dry_run: false,
        }
    }
}

/// Receives byte-level progress of transfers (the binaries draw it as progress bars).
pub trait Reporter: Send + Sync {
    /// A transfer of `size` bytes to `name` starts; returns an id for the other calls.
    fn on_transfer_start(&self, name: &str, size: u64) -> usize;
    /// `bytes` more bytes of transfer `id` are done.
    fn on_transfer_progress(&self, id: usize, bytes: u64);
    /// Transfer `id` finished.
    fn on_transfer_complete(&self, id: usize);
}

/// A [`Reporter`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReporter;

impl Reporter for NoReporter {
    fn on_transfer_start(&self, _: &str, _: u64) -> usize {
        0
    }
    fn on_transfer_progress(&self, _: usize, _: u64) {}
    fn on_transfer_complete(&self, _: usize) {}
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Transferred.
    Transferred,
    /// Left alone: the destination already had the same content ([`Overwrite::IfDifferent`]).
    Skipped,
    /// Dry run: only printed.
    Planned,
}

/// Counts of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TransferReport {
    /// Files transferred (or planned, in a dry run).
    pub transferred: usize,
    /// Files skipped as unchanged.
    pub skipped: usize,
}

impl TransferReport {
    /// Files handled in all.
    pub fn total(&self) -> usize {
        self.transferred + self.skipped
    }
}

/// Which direction a [`StorageBackend::preflight`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Credentials present, the bucket there, and writing proved: a probe object
    /// ([`PREFLIGHT_PROBE_KEY`] below the location) is written and deleted.
    Upload,
    /// The prefix can be listed (signed or anonymously).
    Download,
}

type DryRunSink = Arc<Mutex<Box<dyn Write + Send>>>;

/// State shared by both backends.
#[derive(Clone)]
pub(crate) struct Common {
    pub(crate) options: TransferOptions,
    pub(crate) reporter: Arc<dyn Reporter>,
    dry_run_sink: DryRunSink,
    /// Files handed to this backend and its clones to transfer, and how many of them failed.
    files: Arc<[std::sync::atomic::AtomicUsize; 2]>,
}

impl Common {
    fn new(options: TransferOptions) -> Self {
        Self {
            options,
            reporter: Arc::new(NoReporter),
            dry_run_sink: Arc::new(Mutex::new(Box::new(std::io::stdout()))),
            files: Arc::default(),
        }
    }

    /// Counts a file handed over to transfer, and whether it failed.
    fn count_file<T, E>(&self, result: &Result<T, E>) {
        use std::sync::atomic::Ordering::Relaxed;
        self.files[0].fetch_add(1, Relaxed);
        if result.is_err() {
            self.files[1].fetch_add(1, Relaxed);
        }
    }

    /// In a dry run, prints `line` to the sink and returns true.
    pub(crate) fn dry_run_line(&self, line: &str) -> bool {
        if self.options.dry_run {
            let mut sink = self
                .dry_run_sink
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Err(e) = writeln!(sink, "{line}").and_then(|()| sink.flush()) {
                tracing::warn!("Failed to print a dry-run line: {e}");
            }
        }
        self.options.dry_run
    }
}

/// Runs blocking work off the async threads, re-raising its panics.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => panic!("blocking task cancelled: {e}"),
        },
    }
}

/// The closing line of a transfer tool: `{verb} {done} of {total} {noun} ({MiB}) in {s} s
/// ({MiB/s}), {retries}`, the same for fetches and uploads.
pub fn totals_line(
    verb: &str,
    (done, total): (usize, usize),
    noun: &str,
    bytes: u64,
    wall: std::time::Duration,
    retries: u64,
) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "sizes and rates for display, to a tenth"
    )]
    let mib = bytes as f64 / 1_048_576.0;
    let secs = wall.as_secs_f64();
    let rate = if secs > 0.0 { mib / secs } else { 0.0 };
    let retry_text = match retries {
        1 => "1 retry".to_owned(),
        n => format!("{n} retries"),
    };
    format!(
        "{verb} {done} of {total} {noun} ({mib:.1} MiB) in {secs:.1} s ({rate:.1} MiB/s), {retry_text}"
    )
}

/// The lowercase hex SHA-256 of a file, read in 1 MiB blocks.
pub async fn sha256_file(path: &Path) -> Result<String, Error> {
    let path = path.to_path_buf();
    blocking(move || {
        use sha2::Digest as _;
        use std::io::Read as _;
        let read_err = |source| Error::from(FileError::read(&path, source));
        let mut file = fs_err::File::open(&path).map_err(read_err)?;
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0; 1 << 20];
        loop {
            let n = file.read(&mut buf).map_err(read_err)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        Ok(hex::encode(hasher.finalize()))
    })
    .await
}

/// The digest in `.sha256sum` text: its first whitespace-separated token, if it is 64 hex
/// digits (lowercased).
pub fn parse_sha256sum(text: &str) -> Option<String> {
    let token = text.split_whitespace().next()?;
    (token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| token.to_ascii_lowercase())
}

/// The size of a regular source file; a missing one is [`Error::MissingSource`].
pub(crate) async fn source_size(source: &Path) -> Result<u64, Error> {
    match tokio::fs::metadata(source).await {
        Ok(m) if m.is_file() => Ok(m.len()),
        Ok(_) => Err(Error::MissingSource(source.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::MissingSource(source.to_path_buf()))
        }
        Err(source_err) => Err(Error::from(FileError::read(source, source_err))),
    }
}

/// Where outputs are written: S3 or a local staging directory.
#[derive(Clone)]
pub enum StorageBackend {
    /// S3 or an S3-compatible server.
    #[cfg(feature = "s3")]
    S3(S3StorageBackend),
    /// A local staging directory.
    Local(LocalStorageBackend),
}

impl StorageBackend {
    /// An S3 backend.
    #[cfg(feature = "s3")]
    pub fn s3(client: S3Client, options: TransferOptions) -> Self {
        #[cfg(feature = "s3")]
        StorageBackend::S3(S3StorageBackend::new(client, options))
    }

    /// A local backend rooted at `staging_dir`.
    pub fn local(staging_dir: impl Into<PathBuf>, options: TransferOptions) -> Self {
        StorageBackend::Local(LocalStorageBackend::new(staging_dir, options))
    }

    /// The reference's factory: a staging dir gives a local backend, else S3 with a client from
    /// the default chain (signed; no anonymous fallback for writes).
    ///
    /// # Errors
    /// As [`S3Client::connect`]; [`Error::NoS3Support`] without a directory when the `s3`
    /// feature is off.
    #[cfg_attr(
        not(feature = "s3"),
        expect(clippy::unused_async, reason = "it awaits S3 in the s3 build")
    )]
    pub async fn create(
        staging_dir: Option<&Path>,
        options: TransferOptions,
    ) -> Result<Self, Error> {
        if let Some(dir) = staging_dir {
            return Ok(Self::local(dir, options));
        }
        #[cfg(feature = "s3")]
        {
            let client_options = ClientOptions {
                max_idle_connections: options.concurrency * options.part_concurrency,
                ..ClientOptions::default()
            };
            Ok(Self::S3(
                S3StorageBackend::new(S3Client::connect(&client_options).await?, options)
                    .giving_up_when_unreachable(),
            ))
        }
        #[cfg(not(feature = "s3"))]
        {
            let _ = options;
            Err(Error::NoS3Support {
                target: "S3 (no staging directory given)".to_owned(),
            })
        }
    }

    /// The endpoint and why it was given up on, once an S3 backend that gives up on an
    /// unreachable endpoint ([`S3StorageBackend::giving_up_when_unreachable`]) did.
    pub fn unreachable(&self) -> Option<(&str, &str)> {
        match self {
            #[cfg(feature = "s3")]
            StorageBackend::S3(b) => b.unreachable().map(|cause| (b.client().endpoint(), cause)),
            StorageBackend::Local(_) => None,
        }
    }

    fn common(&self) -> &Common {
        match self {
            #[cfg(feature = "s3")]
            StorageBackend::S3(b) => &b.common,
            StorageBackend::Local(b) => &b.common,
        }
    }

    fn common_mut(&mut self) -> &mut Common {
        match self {
            #[cfg(feature = "s3")]
            StorageBackend::S3(b) => &mut b.common,
            StorageBackend::Local(b) => &mut b.common,
        }
    }

    /// Reports progress to `reporter`.
    #[must_use]
    pub fn with_reporter(mut self, reporter: Arc<dyn Reporter>) -> Self {
        self.common_mut().reporter = reporter;
        self
    }

    /// Prints dry-run lines to `sink` instead of stdout.
    #[must_use]
    pub fn with_dry_run_sink(mut self, sink: Box<dyn Write + Send>) -> Self {
        self.common_mut().dry_run_sink = Arc::new(Mutex::new(sink));
        self
    }

    /// Requests retried so far by this backend's S3 client and its clones (none locally).
    pub fn retries(&self) -> u64 {
        match self {
            #[cfg(feature = "s3")]
            StorageBackend::S3(b) => b.client().retries(),
            StorageBackend::Local(_) => 0,
        }
    }

    /// The transfer options.
    pub fn options(&self) -> &TransferOptions {
        &self.common().options
    }

    /// Uploads one file, with the content type of its name.
    pub async fn upload_file(
        &self,
        source: &Path,
        dest: &StorageLocation,
    ) -> Result<Outcome, Error> {
        self.upload_file_hashed(source, dest, None).await
    }

    /// [`StorageBackend::upload_file`] of a file whose SHA-256 the caller already computed
    /// (`Some`): it is recorded as is, the file is not read an extra time to hash it.
    pub async fn upload_file_hashed(
        &self,
        source: &Path,
        dest: &StorageLocation,
        sha256: Option<String>,
    ) -> Result<Outcome, Error> {
        self.upload_file_recording(source, dest, sha256, &[]).await
    }

    /// [`StorageBackend::upload_file_hashed`] recording `extra` (key, value) pairs beside the
    /// SHA-256 in the object's metadata on S3 (a local staging directory keeps no metadata).
    pub async fn upload_file_recording(
        &self,
        source: &Path,
        dest: &StorageLocation,
        #[cfg_attr(
            not(feature = "s3"),
            expect(unused_variables, reason = "S3 records it")
        )]
        sha256: Option<String>,
        #[cfg_attr(
            not(feature = "s3"),
            expect(unused_variables, reason = "S3 records it")
        )]
        extra: &[(&str, &str)],
    ) -> Result<Outcome, Error> {
        let result = match self.not_started("upload", dest) {
            Some(e) => Err(e),
            None => match self {
                #[cfg(feature = "s3")]
                StorageBackend::S3(b) => b.upload_file(source, dest, sha256, extra).await,
                StorageBackend::Local(b) => b.upload_file(source, dest).await,
            },
        };
        self.common().count_file(&result);
        result
    }

    /// Once the endpoint is given up on, the error of a transfer to `dest` that is not
    /// started.
    #[cfg_attr(
        not(feature = "s3"),
        expect(unused_variables, reason = "local transfers start")
    )]
    fn not_started(&self, op: &'static str, dest: &StorageLocation) -> Option<Error> {
        match self {
            #[cfg(feature = "s3")]
            StorageBackend::S3(b) => b.not_started(op, &dest.to_string()),
            StorageBackend::Local(_) => None,
        }
    }

    /// The files handed to this backend and its clones to transfer so far, and how many of
    /// them failed (not started once the endpoint was given up on included): what a closing
    /// count line says, agreeing with [`StorageBackend::gave_up`].
    pub fn file_counts(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let files = &self.common().files;
        (files[0].load(Relaxed), files[1].load(Relaxed))
    }

    /// Once the endpoint is given up on ([`StorageBackend::unreachable`]), the one error of
    /// the run: the endpoint, the cause, and how many of the files handed to this backend and
    /// its clones were not transferred.
    pub fn gave_up(&self, op: &'static str) -> Option<Error> {
        use std::sync::atomic::Ordering::Relaxed;
        let (endpoint, cause) = self.unreachable()?;
        let files = &self.common().files;
        Some(Error::Unreachable {
            endpoint: endpoint.to_owned(),
            cause: cause.to_owned(),
            op,
            failed: files[1].load(Relaxed),
            total: files[0].load(Relaxed),
        })
    }

    /// Copies one object (server-side on S3; across buckets too).
    pub async fn copy_file(
        &self,
        src: &StorageLocation,
        dst: &StorageLocation,
    ) -> Result<Outcome, Error> {
        let result = match self.not_started("copy", dst) {
            Some(e) => Err(e),
            None => match self {
                #[cfg(feature = "s3")]
                StorageBackend::S3(b) => b.copy_file(src, dst).await,
                StorageBackend::Local(b) => b.copy_file(src, dst).await,
            },
        };
        self.common().count_file(&result);
        result
    }

    /// The files below `location` whose path relative to it matches one of `include`
    /// (all when empty): fnmatch on S3 (spec §5.2, in key order), rglob locally (§5.1, sorted).
    pub async fn list_files(
        &self,
        location: &StorageLocation,
        include: &[String],
    ) -> Result<Vec<StorageLocation>, Error> {
        match self {
            #[cfg(feature = "s3")]
            StorageBackend::S3(b) => b.list_files(location, include).await,
            StorageBackend::Local(b) => b.list_files(location, include).await,
        }
    }

    /// Checks before real work that `location` can be written to or read from; the error's
    /// [`S3ErrorKind`] tells an unreachable endpoint, bad credentials and a missing bucket apart.
    #[cfg_attr(
        not(feature = "s3"),
        expect(clippy::unused_async, reason = "it awaits S3 in the s3 build")
    )]
    pub async fn preflight(
        &self,
        direction: Direction,
        location: &StorageLocation,
    ) -> Result<(), Error> {
        match self {
            #[cfg(feature = "s3")]
            StorageBackend::S3(b) => b.preflight(direction, location).await,
            StorageBackend::Local(b) => b.preflight(direction, location),
        }
    }

    /// How messages name `location`: its `s3://` URI, or for a local staging directory the
    /// path it is staged at.
    fn shown(&self, location: &StorageLocation) -> String {
        match self {
            StorageBackend::Local(b) => location
                .local_path(b.staging_dir())
                .map_or_else(|_| location.to_string(), |path| path.display().to_string()),
            #[cfg(feature = "s3")]
            StorageBackend::S3(_) => location.to_string(),
        }
    }

    /// Files in flight: the configured concurrency, or one at a time in a dry run so that the
    /// plan prints in order.
    fn batch_concurrency(&self) -> usize {
        if self.options().dry_run {
            1
        } else {
            self.options().concurrency.max(1)
        }
    }

    /// Uploads files with bounded concurrency. Every file is attempted; if any fails, the
    /// error lists every failed destination.
    pub async fn upload_files(
        &self,
        files: Vec<(PathBuf, StorageLocation)>,
    ) -> Result<TransferReport, Error> {
        self.batch("upload", files, |src, dst| async move {
            self.upload_file(&src, &dst).await
        })
        .await
    }

    /// Copies objects with bounded concurrency; failures as in [`StorageBackend::upload_files`].
    pub async fn copy_files(
        &self,
        pairs: Vec<(StorageLocation, StorageLocation)>,
    ) -> Result<TransferReport, Error> {
        self.batch("copy", pairs, |src, dst| async move {
            self.copy_file(&src, &dst).await
        })
        .await
    }

    /// Runs `transfer` on every `(source, destination)` pair with bounded concurrency and
    /// counts the outcomes; every failure is kept, named by its destination.
    async fn batch<S, F, Fut>(
        &self,
        op: &'static str,
        pairs: Vec<(S, StorageLocation)>,
        transfer: F,
    ) -> Result<TransferReport, Error>
    where
        F: Fn(S, StorageLocation) -> Fut,
        Fut: std::future::Future<Output = Result<Outcome, Error>>,
    {
        let total = pairs.len();
        let transfer = &transfer;
        let results: Vec<(String, Result<Outcome, Error>)> = futures::stream::iter(pairs)
            .map(|(src, dst)| async move { (self.shown(&dst), transfer(src, dst).await) })
            .buffer_unordered(self.batch_concurrency())
            .collect()
            .await;
        let unreachable = self
            .unreachable()
            .map(|(endpoint, cause)| (endpoint.to_owned(), cause.to_owned()));
        batch_report(op, total, results, unreachable)
    }

    /// Uploads the regular files below `source_dir` (symlinks skipped, symlinked directories
    /// not entered; `.*.partial` leftovers of an interrupted write never) that match one of `include` (all when empty) and none of `exclude`, with
    /// rglob semantics (spec §5.1), to `dest/{relative path}`.
    pub async fn upload_directory(
        &self,
        source_dir: &Path,
        dest: &StorageLocation,
        include: &[String],
        exclude: &[String],
    ) -> Result<TransferReport, Error> {
        if !source_dir.is_dir() {
            return Err(Error::MissingSourceDir(source_dir.to_path_buf()));
        }
        let (root, include, exclude) =
            (source_dir.to_path_buf(), include.to_vec(), exclude.to_vec());
        let mut files = blocking(move || {
            let entries = patterns::walk(&root)
                .map_err(|source| Error::from(FileError::read(&root, source)))?;
            Ok::<_, Error>(
                select(&entries, &include, &exclude)
                    .into_iter()
                    .filter(|e| e.is_file && !e.is_symlink && !is_leftover(e.name()))
                    .map(|e| (e.path.clone(), e.components.clone()))
                    .collect::<Vec<_>>(),
            )
        })
        .await?;
        files.sort_by(|a, b| patterns::cmp_components(&a.1, &b.1));
        tracing::info!(
            "upload_directory: {} -> {}/{} ({} files)",
            source_dir.display(),
            dest.bucket(),
            dest.relative_path(),
            files.len()
        );
        let files = files
            .into_iter()
            .map(|(path, comps)| {
                let rel = comps.join("/");
                tracing::debug!("  {rel}");
                (path, dest.join(&rel))
            })
            .collect();
        self.upload_files(files).await
    }

    /// Copies every object below `source` matching one of `include` (all when empty) to the
    /// same relative path below `dest`.
    pub async fn copy_directory(
        &self,
        source: &StorageLocation,
        dest: &StorageLocation,
        include: &[String],
    ) -> Result<TransferReport, Error> {
        let files = self.list_files(source, include).await?;
        let src_prefix =
            if source.relative_path().ends_with('/') || source.relative_path().is_empty() {
                source.relative_path().to_owned()
            } else {
                format!("{}/", source.relative_path())
            };
        tracing::info!(
            "copy_directory: {} -> {}/{} ({} files)",
            source.s3_uri(),
            dest.bucket(),
            dest.relative_path(),
            files.len()
        );
        let pairs = files
            .into_iter()
            .map(|f| {
                let rel = f
                    .relative_path()
                    .strip_prefix(&src_prefix)
                    .unwrap_or(f.relative_path())
                    .to_owned();
                let target = dest.join(&rel);
                (f, target)
            })
            .collect();
        self.copy_files(pairs).await
    }
}

use patterns::select;

/// Whether `name` is a temporary `.{name}.XXXXXX.partial` (or `.{name}.partial`) file that a
/// killed write left: never uploaded.
fn is_leftover(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".partial")
}

/// The counts of a batch, or its error: [`Error::Unreachable`] with the files not
/// transferred when the endpoint was given up on (`unreachable`: the endpoint and the
/// cause), else [`Error::Batch`] with every failure.
fn batch_report(
    op: &'static str,
    total: usize,
    results: Vec<(String, Result<Outcome, Error>)>,
    unreachable: Option<(String, String)>,
) -> Result<TransferReport, Error> {
    let mut report = TransferReport::default();
    let mut failures = Vec::new();
    for (location, result) in results {
        match result {
            Ok(Outcome::Transferred | Outcome::Planned) => report.transferred += 1,
            Ok(Outcome::Skipped) => report.skipped += 1,
            Err(e) => failures.push((location, e)),
        }
    }
    if failures.is_empty() {
        Ok(report)
    } else if let Some((endpoint, cause)) = unreachable {
        Err(Error::Unreachable {
            endpoint,
            cause,
            op,
            failed: failures.len(),
            total,
        })
    } else {
        failures.sort_by(|a, b| a.0.cmp(&b.0));
        Err(Error::Batch {
            op,
            total,
            failures,
        })
    }
}

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
