//! A CI run's build artifacts in S3 or a local staging directory.
//!
//! [`ArtifactBackend`] lists the artifact archives at the top level of a run's prefix,
//! downloads one with verification against its `.sha256sum` sidecar, else the SHA-256 recorded
//! with the object at upload (written to a temporary file beside the destination and renamed
//! only once verified; an interrupted download resumes with a ranged GET; an archive with
//! neither is refused unless [`ArtifactBackend::allow_unverified`]), uploads one with its
//! sidecar, copies one between runs server-side, and
//! answers whether one exists without mistaking errors for absence.
//!
//! On top of it, [`pipeline`] is the one fetch pipeline of the artifact tools (open a run,
//! list, choose, stream through verification into place, one line per artifact, a summary),
//! and [`stages`] the stage transfers of `artifact_manager` (fetch through that pipeline,
//! push, copy).
//!
//! Feature `s3` (default): runs on S3 and the GitHub look-ups that choose their bucket; without
//! it a local staging directory works as with it and asking for S3 is
//! [`storage_backend::Error::NoS3Support`]. The async functions need a tokio runtime with
//! `enable_all()`, multi-thread or current-thread (the example below runs on the latter); the
//! README's "Features" and "Runtimes" say more.
//!
//! ```
//! use rock_ci_artifact_backend::ArtifactBackend;
//! use workflow_outputs::{Platform, WorkflowOutputRoot};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let staging = tempfile::tempdir()?;
//! let root = WorkflowOutputRoot::for_local(Some("42"), Some(Platform::Linux), None)?;
//! let backend = ArtifactBackend::local(staging.path(), root)?;
//! assert!(backend.list_artifacts(None).await?.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use artifacts::ArchiveFormat;
use storage_backend::NoReporter;

mod download;
mod env;
mod fetch;
mod members;
pub use members::MembersFetched;
pub mod pipeline;
pub mod stages;
mod tree_record;

// The crates whose types this crate's signatures take and return, so that a consumer needs
// this crate (and an async executor) only; the types met most often also at the root.
pub use artifacts::{self, ArtifactName, Layout};
pub use build_topology;
pub use file_tree::{self, FileError};
#[cfg(feature = "s3")]
pub use github_actions;
#[cfg(feature = "s3")]
pub use storage_backend::S3Client;
pub use storage_backend::{self, Reporter};
pub use storage_location::{self, StorageLocation};
pub use workflow_outputs::{self, Platform, WorkflowOutputRoot};

pub use env::{EnvVars, backend_from_env};
pub use fetch::{
    Fetched, FlattenIndex, PREBUILT_SUFFIX, UnpackSlots, Unpacking, VERIFIED_DIR, extract_dir_name,
    remove_stale_partials, verified_dir,
};

/// Errors of artifact operations; each names the artifact or file at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The artifact does not exist.
    #[error("Artifact `{0}` not found")]
    NotFound(String),
    /// The source file of an upload does not exist.
    #[error("Source artifact `{}` not found", .0.display())]
    MissingSource(PathBuf),
    /// The local staging directory a listing reads does not exist (a run with no artifacts
    /// there is an empty listing; a staging directory that is not there is this).
    #[error("The local staging directory `{}` does not exist", .0.display())]
    MissingStagingDir(PathBuf),
    /// The downloaded or uploaded bytes do not have the SHA-256 recorded for them.
    #[error(
        "Checksum mismatch for `{location}`: {recorded_in} says {expected}, the content is {actual}"
    )]
    ChecksumMismatch {
        /// The artifact.
        location: String,
        /// Where `expected` was recorded: the `.sha256sum` sidecar (named), the object's
        /// metadata, or the source file.
        recorded_in: String,
        /// The digest recorded.
        expected: String,
        /// Of the content.
        actual: String,
    },
    /// A sidecar without a digest.
    #[error("Invalid sha256sum file `{0}`: expected a 64-digit hex digest first")]
    InvalidSidecar(String),
    /// An archive with neither a `.sha256sum` sidecar nor a SHA-256 recorded with the object,
    /// refused because unverified archives are not allowed
    /// ([`ArtifactBackend::allow_unverified`]).
    #[error(
        "`{0}` cannot be verified: it has no .sha256sum sidecar and no SHA-256 recorded with it (an upload that stopped half-way?); pass --allow-unverified to use it anyway"
    )]
    Unverifiable(String),
    /// Copy between different kinds of backends.
    #[error("Cannot copy from a {from} backend to a {to} backend")]
    IncompatibleBackends {
        /// Kind of the source.
        from: &'static str,
        /// Kind of the destination.
        to: &'static str,
    },
    /// A local read or write failed.
    #[error(transparent)]
    File(#[from] file_tree::FileError),
    /// A download ended before the object's end.
    #[error("Received {received} of {expected} bytes of `{location}`")]
    Truncated {
        /// The object (and range).
        location: String,
        /// Bytes received.
        received: u64,
        /// Bytes expected.
        expected: u64,
    },
    /// Two artifacts put different content at the same path of a flattened output.
    #[error("`{}` is in both `{first}` and `{second}` with different content", path.display())]
    FlattenConflict {
        /// The path relative to the output directory.
        path: PathBuf,
        /// The artifact that put it there first.
        first: String,
        /// The artifact that conflicts.
        second: String,
    },
    /// An archive could not be read or was refused.
    #[error(transparent)]
    Artifacts(#[from] artifacts::Error),
    /// A storage operation failed.
    #[error(transparent)]
    Storage(#[from] storage_backend::Error),
    /// The member index of an archive is damaged or not the one recorded for it.
    #[error("The member index of `{archive}` cannot be used")]
    MemberIndex {
        /// The archive.
        archive: String,
        /// Why.
        #[source]
        source: artifacts::member_index::IndexError,
    },
    /// An invalid layout input.
    #[error(transparent)]
    Layout(#[from] workflow_outputs::Error),
}

impl Error {
    /// Whether the bytes of a transfer arrived damaged or incomplete, so that fetching them
    /// again may succeed: a digest that does not match, a sidecar that does not parse, a body
    /// cut short, a transient storage failure, or an archive that could not be read (decoded)
    /// while it streamed in.
    pub fn arrived_damaged(&self) -> bool {
        match self {
            Error::ChecksumMismatch { .. }
            | Error::Truncated { .. }
            | Error::InvalidSidecar(_)
            | Error::Artifacts(artifacts::Error::ArchiveRead { .. }) => true,
            Error::Storage(e) => e
                .s3_kind()
                .is_some_and(storage_backend::S3ErrorKind::is_transient),
            Error::File(f) | Error::Artifacts(artifacts::Error::File(f)) => {
                f.op == file_tree::FileOp::Read
            }
            _ => false,
        }
    }

    /// Whether bytes arrived whole but wrong: a digest that does not match, or an archive that
    /// does not decode (a read of its stream that failed).
    pub fn is_wrong_content(&self) -> bool {
        match self {
            Error::ChecksumMismatch { .. }
            | Error::Artifacts(artifacts::Error::ArchiveRead { .. }) => true,
            Error::File(f) | Error::Artifacts(artifacts::Error::File(f)) => {
                f.op == file_tree::FileOp::Read
            }
            _ => false,
        }
    }

    #[cfg(feature = "s3")]
    /// An S3 failure about `location`, with "not found" as [`Error::NotFound`].
    fn from_s3(err: storage_backend::Error, location: &StorageLocation) -> Self {
        if err.s3_kind() == Some(storage_backend::S3ErrorKind::NotFound) {
            Error::NotFound(location.s3_uri())
        } else {
            err.into()
        }
    }
}

/// One artifact archive of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactEntry {
    /// The archive's file name (its key below the run prefix).
    pub file_name: String,
    /// The parsed name, when it is `{name}_{component}_{target_family}`.
    pub name: Option<ArtifactName>,
    /// The archive format.
    pub format: ArchiveFormat,
    /// Size in bytes.
    pub size: u64,
}

/// The result of a download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// Where the artifact now is.
    pub path: PathBuf,
    /// Its SHA-256 (hex).
    pub sha256: String,
    /// Whether a sidecar existed and matched.
    pub verified: bool,
    /// Bytes fetched now (less than the size after a resume).
    pub fetched: u64,
    /// Bytes reused from an earlier partial download.
    pub resumed: u64,
}

/// Where a run's artifacts are.
#[derive(Clone)]
pub enum ArtifactBackend {
    /// In S3, below the run's prefix.
    #[cfg(feature = "s3")]
    S3(S3Artifacts),
    /// In a local staging directory, below `{staging}/{prefix}`.
    Local(LocalArtifacts),
}

impl std::fmt::Debug for ArtifactBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.fmt(f),
            ArtifactBackend::Local(b) => b.fmt(f),
        }
    }
}

#[cfg(feature = "s3")]
impl std::fmt::Debug for S3Artifacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Artifacts")
            .field("root", &self.root.root().s3_uri())
            .field("endpoint", &self.client.endpoint())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for LocalArtifacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalArtifacts")
            .field("base_path", &self.base_path)
            .field("allow_unverified", &self.allow_unverified)
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

/// The S3 side of [`ArtifactBackend`].
#[cfg(feature = "s3")]
#[derive(Clone)]
pub struct S3Artifacts {
    /// Slots of ranged GETs across every download to a file of this backend and its clones.
    range_slots: Arc<tokio::sync::Semaphore>,
    /// Slots of ranged GETs across every streamed fetch (into an unpacker) of this backend and
    /// its clones: a separate budget, so that neither kind can starve the other.
    stream_slots: Arc<tokio::sync::Semaphore>,
    client: S3Client,
    /// The uploads of this backend and its clones: they give up on the endpoint together once
    /// it proves unreachable.
    uploads: Arc<storage_backend::S3StorageBackend>,
    root: WorkflowOutputRoot,
    reporter: Arc<dyn Reporter>,
    allow_unverified: bool,
    records: Option<PathBuf>,
}

#[cfg(feature = "s3")]
impl S3Artifacts {
    /// The storage operations (HEAD, small GETs) on this client.
    fn storage(&self) -> storage_backend::S3StorageBackend {
        storage_backend::S3StorageBackend::new(
            self.client.clone(),
            storage_backend::TransferOptions::default(),
        )
    }
}

/// The local side of [`ArtifactBackend`].
#[derive(Clone)]
pub struct LocalArtifacts {
    base_path: PathBuf,
    /// The staging directory `base_path` is below (`None`: a directory of archives itself).
    staging_dir: Option<PathBuf>,
    root: WorkflowOutputRoot,
    reporter: Arc<dyn Reporter>,
    allow_unverified: bool,
    records: Option<PathBuf>,
}

/// The archives of `archives` without a sidecar, and the sidecars of `sidecars` (named by
/// their archive) without an archive.
fn unpaired<'a>(
    archives: &'a [ArtifactEntry],
    sidecars: &'a std::collections::BTreeSet<String>,
) -> (Vec<&'a str>, Vec<&'a str>) {
    let names: std::collections::BTreeSet<&str> =
        archives.iter().map(|e| e.file_name.as_str()).collect();
    let unverifiable = names
        .iter()
        .copied()
        .filter(|n| !sidecars.contains(*n))
        .collect();
    let orphans = sidecars
        .iter()
        .map(String::as_str)
        .filter(|n| !names.contains(n))
        .collect();
    (unverifiable, orphans)
}

/// Whether `file_name` is an artifact archive (not a sidecar) kept by `name_filter`
/// (file names starting with `{filter}_`).
fn keep(file_name: &str, name_filter: Option<&str>) -> Option<ArchiveFormat> {
    let format = ArchiveFormat::from_file_name(file_name)?;
    match name_filter {
        Some(f) if !file_name.starts_with(&format!("{f}_")) => None,
        _ => Some(format),
    }
}

fn sidecar_key(key: &str) -> String {
    format!("{key}.sha256sum")
}

impl ArtifactBackend {
    /// Artifacts of `root` in S3.
    #[cfg(feature = "s3")]
    pub fn s3(client: S3Client, root: WorkflowOutputRoot) -> Self {
        ArtifactBackend::S3(S3Artifacts {
            range_slots: Arc::new(tokio::sync::Semaphore::new(download::RANGE_BUDGET)),
            stream_slots: Arc::new(tokio::sync::Semaphore::new(download::STREAM_RANGE_BUDGET)),
            uploads: Arc::new(
                storage_backend::S3StorageBackend::new(
                    client.clone(),
                    storage_backend::TransferOptions::default(),
                )
                .giving_up_when_unreachable(),
            ),
            client,
            root,
            reporter: Arc::new(NoReporter),
            allow_unverified: false,
            records: None,
        })
    }

    /// Artifacts of `root` below `staging_dir/{prefix}` (created by the first upload; reading
    /// creates nothing).
    pub fn local(staging_dir: &Path, root: WorkflowOutputRoot) -> Result<Self, Error> {
        let base_path = root
            .root()
            .local_path(staging_dir)
            .map_err(storage_backend::Error::from)?;
        Ok(ArtifactBackend::Local(LocalArtifacts {
            base_path,
            staging_dir: Some(staging_dir.to_path_buf()),
            root,
            reporter: Arc::new(NoReporter),
            allow_unverified: false,
            records: None,
        }))
    }

    /// Artifacts of `root` kept directly in `dir` (`{dir}/{key}` and `{dir}/{key}.sha256sum`),
    /// e.g. a download cache read back for unpacking.
    pub fn local_dir(dir: &Path, root: WorkflowOutputRoot) -> Self {
        ArtifactBackend::Local(LocalArtifacts {
            base_path: dir.to_path_buf(),
            staging_dir: None,
            root,
            reporter: Arc::new(NoReporter),
            allow_unverified: false,
            records: None,
        })
    }

    /// Reports byte-level progress of transfers to `reporter`.
    #[must_use]
    pub fn with_reporter(mut self, reporter: Arc<dyn Reporter>) -> Self {
        match &mut self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.reporter = reporter,
            ArtifactBackend::Local(b) => b.reporter = reporter,
        }
        self
    }

    /// Whether an archive with neither a `.sha256sum` sidecar nor a SHA-256 recorded with the
    /// object is fetched (unverified, reported as such) instead of refused with
    /// [`Error::Unverifiable`] (the default).
    #[must_use]
    pub fn allow_unverified(mut self, allow: bool) -> Self {
        match &mut self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.allow_unverified = allow,
            ArtifactBackend::Local(b) => b.allow_unverified = allow,
        }
        self
    }

    /// Records verified extracted copies in `dir` (see [`verified_dir`]) instead of beside
    /// each output directory: a tool whose output directory holds the artifacts' directory
    /// (`{output}/artifacts`) keeps its records beside `{output}`, out of the user's tree.
    #[must_use]
    pub fn record_verified_in(mut self, dir: Option<PathBuf>) -> Self {
        match &mut self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.records = dir,
            ArtifactBackend::Local(b) => b.records = dir,
        }
        self
    }

    /// Where the verified copies extracted into `output_dir` are recorded.
    fn records_dir(&self, output_dir: &Path) -> Option<PathBuf> {
        let set = match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => &b.records,
            ArtifactBackend::Local(b) => &b.records,
        };
        set.clone().or_else(|| verified_dir(output_dir))
    }

    fn allows_unverified(&self) -> bool {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.allow_unverified,
            ArtifactBackend::Local(b) => b.allow_unverified,
        }
    }

    /// The endpoint and why uploads gave up on it, once they did: the endpoint proved
    /// unreachable (every request of the run refused, or without a byte of answer, for as long
    /// as one request's retries take); the uploads after that fail at once.
    pub fn unreachable(&self) -> Option<(&str, &str)> {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b
                .uploads
                .unreachable()
                .map(|cause| (b.client.endpoint(), cause)),
            ArtifactBackend::Local(_) => None,
        }
    }

    /// Transfers retried so far (by this backend's S3 client and its clones; none locally).
    pub fn retries(&self) -> u64 {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.client.retries(),
            ArtifactBackend::Local(_) => 0,
        }
    }

    /// The run's root.
    pub fn root(&self) -> &WorkflowOutputRoot {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => &b.root,
            ArtifactBackend::Local(b) => &b.root,
        }
    }

    /// Where `key` is, as a user would look for it: its `s3://` URI, or its path in a local
    /// staging directory (what errors and lines about an artifact name).
    pub fn shown_location(&self, key: &str) -> String {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.root.artifact(key).s3_uri(),
            ArtifactBackend::Local(b) => b.base_path.join(key).display().to_string(),
        }
    }

    /// `s3://{bucket}/{prefix}` or the local base directory.
    pub fn base_uri(&self) -> String {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.root.root().s3_uri(),
            ArtifactBackend::Local(b) => b.base_path.display().to_string(),
        }
    }

    fn is_local(&self) -> bool {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(_) => false,
            ArtifactBackend::Local(_) => true,
        }
    }

    #[cfg(feature = "s3")]
    fn kind(&self) -> &'static str {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(_) => "S3",
            ArtifactBackend::Local(_) => "local",
        }
    }

    /// The artifact archives at the top level of the run's prefix, sorted by file name.
    /// Sidecars, other files and anything in subdirectories (`logs/`, `python/`, ...) are not
    /// artifacts; neither are keys of sibling runs sharing the prefix's text.
    ///
    /// An S3 listing in which a sidecar has no archive is asked for once more (a key damaged
    /// on the way would otherwise drop an artifact silently); what remains unpaired is
    /// reported as a warning naming the files.
    ///
    /// In a local staging directory, a run with nothing staged lists as empty, and a staging
    /// directory that does not exist is [`Error::MissingStagingDir`].
    pub async fn list_artifacts(
        &self,
        name_filter: Option<&str>,
    ) -> Result<Vec<ArtifactEntry>, Error> {
        #[cfg_attr(not(feature = "s3"), expect(unused_mut, reason = "S3 lists again"))]
        let (mut out, mut sidecars) = self.list_once(name_filter).await?;
        #[cfg(feature = "s3")]
        if let ArtifactBackend::S3(b) = self
            && !unpaired(&out, &sidecars).1.is_empty()
        {
            b.client.count_retry();
            tracing::warn!(
                "++ Retry 1/1 for the listing of {}: a .sha256sum sidecar has no archive",
                self.base_uri()
            );
            (out, sidecars) = self.list_once(name_filter).await?;
        }
        self.report_unpaired(&out, &sidecars);
        Ok(out)
    }

    /// One listing: the archives, sorted, and the archive names that have a sidecar.
    async fn list_once(
        &self,
        name_filter: Option<&str>,
    ) -> Result<(Vec<ArtifactEntry>, std::collections::BTreeSet<String>), Error> {
        let mut out = Vec::new();
        let mut sidecars = std::collections::BTreeSet::new();
        let mut push = |file_name: &str, size: u64| {
            if let Some(archive) = file_name.strip_suffix(".sha256sum")
                && keep(archive, name_filter).is_some()
            {
                sidecars.insert(archive.to_owned());
            }
            if let Some(format) = keep(file_name, name_filter) {
                out.push(ArtifactEntry {
                    file_name: file_name.to_owned(),
                    name: ArtifactName::from_filename(file_name),
                    format,
                    size,
                });
            }
        };
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => {
                let prefix = format!("{}/", b.root.prefix());
                for object in b
                    .storage()
                    .list_prefix(b.root.bucket(), &prefix, true)
                    .await?
                {
                    if let Some(rel) = object.key.strip_prefix(&prefix)
                        && !rel.contains('/')
                    {
                        push(rel, object.size);
                    }
                }
            }
            ArtifactBackend::Local(b) => {
                let (base, staging) = (b.base_path.clone(), b.staging_dir.clone());
                let files = storage_backend::blocking(move || {
                    match staging {
                        Some(dir) if !base.is_dir() && !dir.is_dir() => {
                            return Err(Error::MissingStagingDir(dir));
                        }
                        _ => {}
                    }
                    Ok(local_files(&base)?)
                })
                .await?;
                for (name, size) in files {
                    push(&name, size);
                }
            }
        }
        out.sort_by(|a, b| a.file_name.cmp(&b.file_name));
        Ok((out, sidecars))
    }

    /// Warns about archives listed without their `.sha256sum` sidecar and sidecars without
    /// their archive: a sign of an upload that stopped half-way, or of a listing that did.
    fn report_unpaired(
        &self,
        archives: &[ArtifactEntry],
        sidecars: &std::collections::BTreeSet<String>,
    ) {
        let (unverifiable, orphans) = unpaired(archives, sidecars);
        if !unverifiable.is_empty() && unverifiable.len() < archives.len() {
            tracing::warn!(
                "{} of {} archives at {} have no .sha256sum sidecar: {}",
                unverifiable.len(),
                archives.len(),
                self.base_uri(),
                unverifiable.join(", ")
            );
        }
        if !orphans.is_empty() {
            tracing::warn!(
                "{} .sha256sum sidecars at {} have no archive: {}",
                orphans.len(),
                self.base_uri(),
                orphans.join(", ")
            );
        }
    }

    /// Whether artifact `key` exists. Only a definite "not found" is `false`; failures to ask
    /// (auth, network, throttling) are errors.
    #[cfg_attr(
        not(feature = "s3"),
        expect(clippy::unused_async, reason = "it awaits S3 in the s3 build")
    )]
    pub async fn artifact_exists(&self, key: &str) -> Result<bool, Error> {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => Ok(b
                .storage()
                .head_object(&b.root.artifact(key))
                .await?
                .is_some()),
            ArtifactBackend::Local(b) => Ok(b.base_path.join(key).is_file()),
        }
    }

    /// Uploads `source` as artifact `key` with its sidecar `{key}.sha256sum`. An existing
    /// `{source}.sha256sum` must match the file (else nothing is uploaded); without one, the
    /// sidecar is computed.
    pub async fn upload_artifact(&self, source: &Path, key: &str) -> Result<String, Error> {
        self.upload_artifact_hashed(source, key, None).await
    }

    /// [`ArtifactBackend::upload_artifact`] of an archive whose SHA-256 the caller computed as
    /// it wrote it (`Some`): the file is not read again to hash it.
    pub async fn upload_artifact_hashed(
        &self,
        source: &Path,
        key: &str,
        sha256: Option<String>,
    ) -> Result<String, Error> {
        self.upload_artifact_indexed(source, key, sha256, None)
            .await
    }

    /// [`ArtifactBackend::upload_artifact_hashed`] of a `.tar.zst` with a member index
    /// (`artifacts::member_index`) whose frame has SHA-256 `member_index_sha256`: on S3 that
    /// digest is recorded in the object's metadata
    /// (`artifacts::member_index::INDEX_SHA256_METADATA_KEY`), where a reader of single
    /// members checks the index against it.
    pub async fn upload_artifact_indexed(
        &self,
        source: &Path,
        key: &str,
        sha256: Option<String>,
        #[cfg_attr(
            not(feature = "s3"),
            expect(unused_variables, reason = "S3 records it")
        )]
        member_index_sha256: Option<&str>,
    ) -> Result<String, Error> {
        if !source.is_file() {
            return Err(Error::MissingSource(source.to_path_buf()));
        }
        let sha = match sha256 {
            Some(sha) => sha,
            None => storage_backend::sha256_file(source).await?,
        };
        let local_sidecar = PathBuf::from(format!("{}.sha256sum", source.display()));
        if local_sidecar.is_file() {
            let path = local_sidecar.clone();
            let text = storage_backend::blocking(move || {
                fs_err::read_to_string(&path).map_err(|e| FileError::read(&path, e))
            })
            .await?;
            let expected = storage_backend::parse_sha256sum(&text)
                .ok_or_else(|| Error::InvalidSidecar(local_sidecar.display().to_string()))?;
            if expected != sha {
                return Err(Error::ChecksumMismatch {
                    location: source.display().to_string(),
                    recorded_in: format!("the sidecar `{}`", local_sidecar.display()),
                    expected,
                    actual: sha,
                });
            }
        }
        let sidecar_text = format!("{sha}  {key}\n");
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => {
                let backend = storage_backend::StorageBackend::S3((*b.uploads).clone())
                    .with_reporter(b.reporter.clone());
                let extra: Vec<(&str, &str)> = member_index_sha256
                    .map(|index| (artifacts::member_index::INDEX_SHA256_METADATA_KEY, index))
                    .into_iter()
                    .collect();
                backend
                    .upload_file_recording(source, &b.root.artifact(key), Some(sha.clone()), &extra)
                    .await?;
                b.uploads
                    .put_bytes(
                        sidecar_text.into_bytes(),
                        &b.root.artifact(&sidecar_key(key)),
                    )
                    .await?;
            }
            ArtifactBackend::Local(b) => {
                // The sidecar first: a staging directory has no object metadata to carry the
                // digest, so an archive must never appear there without its sidecar (an
                // upload stopped in between leaves a sidecar without its archive, which the
                // listing reports).
                fs_err::create_dir_all(&b.base_path)
                    .map_err(|e| FileError::write(&b.base_path, e))?;
                download::write_atomic(
                    &b.base_path.join(sidecar_key(key)),
                    sidecar_text.as_bytes(),
                )?;
                download::copy_verified(
                    source,
                    &b.base_path.join(key),
                    Some(download::Recorded {
                        sha256: sha.clone(),
                        source: format!("the source `{}`", source.display()),
                    }),
                )
                .await?;
            }
        }
        Ok(sha)
    }

    /// Copies artifact `key` (and its sidecar, when the source has one) from `source`'s run to
    /// this one: server-side within S3 (across buckets too), by file locally.
    pub async fn copy_artifact(&self, key: &str, source: &ArtifactBackend) -> Result<(), Error> {
        match (self, source) {
            #[cfg(feature = "s3")]
            (ArtifactBackend::S3(dst), ArtifactBackend::S3(src)) => {
                let backend = storage_backend::StorageBackend::s3(
                    dst.client.clone(),
                    storage_backend::TransferOptions::default(),
                );
                let from = src.root.artifact(key);
                if !source.artifact_exists(key).await? {
                    return Err(Error::NotFound(from.s3_uri()));
                }
                backend.copy_file(&from, &dst.root.artifact(key)).await?;
                if source.artifact_exists(&sidecar_key(key)).await? {
                    backend
                        .copy_file(
                            &src.root.artifact(&sidecar_key(key)),
                            &dst.root.artifact(&sidecar_key(key)),
                        )
                        .await?;
                }
                Ok(())
            }
            (ArtifactBackend::Local(dst), ArtifactBackend::Local(src)) => {
                let from = src.base_path.join(key);
                if !from.is_file() {
                    return Err(Error::NotFound(from.display().to_string()));
                }
                // The sidecar before the archive, as an upload writes them.
                let sidecar = src.base_path.join(sidecar_key(key));
                if sidecar.is_file() {
                    download::copy_verified(&sidecar, &dst.base_path.join(sidecar_key(key)), None)
                        .await?;
                }
                download::copy_verified(&from, &dst.base_path.join(key), None).await?;
                Ok(())
            }
            #[cfg(feature = "s3")]
            _ => Err(Error::IncompatibleBackends {
                from: source.kind(),
                to: self.kind(),
            }),
        }
    }

    /// The location of artifact `key`.
    pub fn location(&self, key: &str) -> StorageLocation {
        self.root().artifact(key)
    }
}

/// The plain files directly in `base` with their sizes (none when `base` is no directory).
fn local_files(base: &Path) -> Result<Vec<(String, u64)>, FileError> {
    let mut files = Vec::new();
    if !base.is_dir() {
        return Ok(files);
    }
    for entry in fs_err::read_dir(base).map_err(|e| FileError::read(base, e))? {
        let entry = entry.map_err(|e| FileError::read(base, e))?;
        let meta = fs_err::metadata(entry.path()).map_err(|e| FileError::read(entry.path(), e))?;
        if meta.is_file() {
            files.push((entry.file_name().to_string_lossy().into_owned(), meta.len()));
        }
    }
    Ok(files)
}

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
