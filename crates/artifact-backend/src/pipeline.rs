//! The fetch pipeline of the artifact tools: a run's archives listed, chosen, then each
//! downloaded and streamed through verification into place — unpacked, merged into one tree,
//! or kept as an archive — with a line per artifact as it completes and a closing summary.
//!
//! [`fetch`] is `fetch_artifacts` (a choice by artifact group, GPU targets and regexes);
//! [`crate::stages::fetch_stage`] is `artifact_manager fetch` (a choice by build stage). Both
//! open the run the same way and hand the chosen archives to the same transfer; they
//! differ only in their choice and in the wording of their lines.
//!
//! Lines go to a line sink over the caller's writer, one flush per line; byte progress goes to the
//! [`Reporter`] the caller's [`ReporterFactory`] makes once the totals are known.

use std::cell::RefCell;
use std::fmt::Display;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use artifacts::{Layout, TargetSelection};
use futures::StreamExt as _;
use regex::Regex;
use storage_backend::Reporter;
#[cfg(feature = "s3")]
use storage_backend::S3Client;
use workflow_outputs::{GithubRepository, Platform, WorkflowOutputRoot};

use crate::{ArtifactBackend, ArtifactEntry, Error, FlattenIndex, Unpacking, extract_dir_name};

/// Makes the progress reporter of a transfer of `files` archives of `bytes` bytes in all
/// (called once the choice is made).
pub type ReporterFactory = dyn Fn(usize, u64) -> Arc<dyn Reporter> + Send + Sync;

/// Why a fetch, push or copy failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// An include or exclude pattern is not a regular expression.
    #[error("Invalid {what} regex `{pattern}`")]
    InvalidRegex {
        /// `include` or `exclude`.
        what: &'static str,
        /// The pattern given.
        pattern: String,
        /// What is wrong with it.
        #[source]
        source: regex::Error,
    },
    /// The run's bucket could not be decided.
    #[cfg(feature = "s3")]
    #[error(transparent)]
    RunRoot(#[from] github_actions::RunRootError),
    /// The run's output root is not valid.
    #[error(transparent)]
    Layout(#[from] workflow_outputs::Error),
    /// The S3 client could not be made.
    #[error(transparent)]
    Client(#[from] storage_backend::Error),
    /// An artifact operation failed.
    #[error(transparent)]
    Artifact(#[from] Error),
    /// The checkout's topology or family table, or a request made of them.
    #[error(transparent)]
    Checkout(#[from] build_topology::CheckoutError),
    /// The topology has no such stage or set.
    #[error(transparent)]
    Topology(#[from] build_topology::Error),
    /// A local file operation failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The run's archives could not be listed (`fetch_artifacts`).
    #[error("Failed to list the run's artifacts")]
    ListRun(#[source] Error),
    /// The archives at `uri` could not be listed.
    #[error("Failed to list the artifacts at {uri}")]
    List {
        /// Where they were listed.
        uri: String,
        /// The cause.
        #[source]
        source: Error,
    },
    /// No archive of the run matches the artifact group and targets.
    #[error("No matching artifacts for {run_id} exist at '{uri}'")]
    NoMatch {
        /// The run.
        run_id: String,
        /// Where its archives were listed.
        uri: String,
    },
    /// The include and exclude patterns left no archive.
    #[error("Filtering artifacts for {run_id} resulted in an empty set")]
    FilteredEmpty {
        /// The run.
        run_id: String,
    },
    /// Some archives could not be fetched (`key: cause` each, sorted).
    #[error(
        "{} of the selected artifacts could not be fetched:\n  {}",
        .0.len(),
        .0.join("\n  ")
    )]
    Failed(Vec<String>),
    /// `--member` globs that matched no member of the chosen artifacts.
    #[error(
        "no member of the chosen artifacts matches --member {}: pass --allow-empty to accept that",
        .0.join(", --member ")
    )]
    NoMember(Vec<String>),
    /// The output directory cannot be written.
    #[error("Cannot write in {}", dir.display())]
    CannotWrite {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Archives are written with zstd or xz only.
    #[error("artifacts are zstd or xz")]
    Compression,
    /// A failure whose explanation is already written (the `ERROR:` lines).
    #[error("{0}")]
    Reported(String),
    /// The request itself is wrong (bad input found after parsing), e.g. no run id for S3.
    #[error("{0}")]
    Usage(String),
    /// A line could not be written.
    #[error("Failed to write the output")]
    Write(#[source] io::Error),
    /// The local staging directory to read from is not there.
    #[error("The local staging directory `{}` does not exist (or is not a directory)", .0.display())]
    NoStagingDir(PathBuf),
}

/// For a transfer that reads a local staging directory: that it is there, else the error
/// naming it (instead of a run that looks empty).
pub(crate) fn staging_to_read(dir: Option<&Path>) -> Result<(), TransferError> {
    match dir {
        Some(dir) if !dir.is_dir() => Err(TransferError::NoStagingDir(dir.to_path_buf())),
        _ => Ok(()),
    }
}

impl TransferError {
    /// Whether the request itself is wrong and nothing was attempted: a usage error.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Usage(_) => true,
            #[cfg(feature = "s3")]
            Self::RunRoot(e) => e.is_usage(),
            Self::Client(e) => e.is_usage(),
            _ => false,
        }
    }

    /// Whether the explanation is already written to the output (the `ERROR:` lines).
    pub fn is_reported(&self) -> bool {
        match self {
            Self::Reported(_) => true,
            Self::Checkout(e) => e.is_reported(),
            _ => false,
        }
    }
}

/// The error and its causes, `: `-joined.
pub(crate) fn chain_text(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The output of a transfer: whole lines, written and flushed one at a time from the
/// transfers of one task. A line that cannot be written (a closed pipe) stops no transfer;
/// the first such error is kept ([`Lines::take_error`]).
pub(crate) struct Lines<'a> {
    out: RefCell<&'a mut dyn Write>,
    error: RefCell<Option<io::Error>>,
}

impl<'a> Lines<'a> {
    /// Lines to `out`.
    pub(crate) fn new(out: &'a mut dyn Write) -> Self {
        Lines {
            out: RefCell::new(out),
            error: RefCell::new(None),
        }
    }

    /// Writes one line and flushes; an error is kept, not returned.
    pub(crate) fn line(&self, text: impl Display) {
        if let Err(e) = self.try_line(text) {
            self.error.borrow_mut().get_or_insert(e);
        }
    }

    /// Writes one line and flushes.
    pub(crate) fn try_line(&self, text: impl Display) -> io::Result<()> {
        let mut out = self.out.borrow_mut();
        writeln!(out, "{text}")?;
        out.flush()
    }

    /// The first error of [`Lines::line`] and [`Lines::writer`], if any.
    pub(crate) fn take_error(&self) -> Option<io::Error> {
        self.error.borrow_mut().take()
    }

    /// A writer for code that prints blocks of lines; its errors are kept as those of
    /// [`Lines::line`].
    pub(crate) fn writer(&self) -> LinesWriter<'_, 'a> {
        LinesWriter(self)
    }
}

/// [`Lines::writer`].
pub(crate) struct LinesWriter<'l, 'a>(&'l Lines<'a>);

impl Write for LinesWriter<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Err(e) = self.0.out.borrow_mut().write_all(buf) {
            self.0.error.borrow_mut().get_or_insert(e);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Err(e) = self.0.out.borrow_mut().flush() {
            self.0.error.borrow_mut().get_or_insert(e);
        }
        Ok(())
    }
}

/// The S3 client that reads a run's artifacts from a bucket in `region`: signed with the
/// default credential chain, unsigned when it finds none (public buckets), with connections
/// kept for `transfers` transfers of up to 8 parallel ranges each (0: the default pool).
#[cfg(feature = "s3")]
pub async fn reader_client(
    region: &str,
    transfers: usize,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<S3Client, storage_backend::Error> {
    let mut reading = storage_backend::ClientOptions::reading(region);
    if transfers != 0 {
        reading.max_idle_connections = transfers * 8;
    }
    S3Client::connect_with(&reading, lookup).await
}

impl FetchRequest {
    /// Fetches every artifact of run `run_id` of this machine's platform (of
    /// `GITHUB_REPOSITORY`, else `ROCm/TheRock`) into `output_dir`, each unpacked into a
    /// directory of its own: 10 downloads and [`default_extract_concurrency`] unpackings at
    /// once, unverifiable archives failing.
    pub fn new(run_id: impl Into<String>, output_dir: impl Into<PathBuf>) -> Self {
        FetchRequest {
            include: Vec::new(),
            exclude: Vec::new(),
            platform: Platform::host(),
            artifact_group: None,
            amdgpu_targets: Vec::new(),
            download_concurrency: 10,
            extract_concurrency: default_extract_concurrency(),
            run_github_repo: None,
            run_id: run_id.into(),
            output_dir: output_dir.into(),
            dry_run: false,
            mode: FetchMode::Extract,
            local_staging_dir: None,
            allow_unverified: false,
            members: Vec::new(),
            allow_empty: false,
        }
    }
}

/// Which run to read and how to find its bucket.
#[derive(Debug, Clone)]
pub struct RunSource {
    /// The run id.
    pub run_id: String,
    /// The platform.
    pub platform: Platform,
    /// The repository of the run (else `GITHUB_REPOSITORY`, else `ROCm/TheRock`).
    pub repository: Option<GithubRepository>,
    /// Read this local staging directory instead of S3.
    pub local_staging_dir: Option<PathBuf>,
    /// Ask the GitHub API about the run (fork detection); else this run's event decides.
    pub lookup_workflow_run: bool,
    /// Transfers at once (sizes the S3 connection pool).
    pub transfers: usize,
}

#[cfg(feature = "s3")]
/// Runs `f`, which blocks (the GitHub API), without holding up the async threads: on a
/// multi-thread runtime the thread hands its tasks over first.
fn blocking_in_place<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// The backend of `source` (spec §4.3, §12.2): the local staging directory, else S3 with the
/// run's bucket (the selection report written to `lines`).
pub(crate) async fn open_run(
    source: &RunSource,
    lookup: &dyn Fn(&str) -> Option<String>,
    lines: &Lines<'_>,
) -> Result<ArtifactBackend, TransferError> {
    if let Some(staging) = &source.local_staging_dir {
        let root =
            WorkflowOutputRoot::for_local(Some(&source.run_id), Some(source.platform), None)?;
        return Ok(ArtifactBackend::local(staging, root)?);
    }
    open_s3_run(source, lookup, lines).await
}

/// Without the `s3` feature, a run that is not in a local staging directory cannot be read.
#[cfg(not(feature = "s3"))]
#[expect(clippy::unused_async, reason = "the signature of the S3 build")]
async fn open_s3_run(
    source: &RunSource,
    _lookup: &dyn Fn(&str) -> Option<String>,
    _lines: &Lines<'_>,
) -> Result<ArtifactBackend, TransferError> {
    Err(TransferError::Client(storage_backend::Error::NoS3Support {
        target: format!("run {} ({})", source.run_id, source.platform),
    }))
}

/// The run of `source` on S3, in the bucket the run's facts select.
#[cfg(feature = "s3")]
async fn open_s3_run(
    source: &RunSource,
    lookup: &dyn Fn(&str) -> Option<String>,
    lines: &Lines<'_>,
) -> Result<ArtifactBackend, TransferError> {
    let request = github_actions::RunRequest {
        run_id: source.run_id.clone(),
        platform: source.platform,
        repository: source.repository.clone(),
        release_type: None,
        lookup_workflow_run: source.lookup_workflow_run,
    };
    let (root, selection) = blocking_in_place(|| {
        github_actions::resolve_run_root(&request, lookup, &mut lines.writer())
    })?;
    let client =
        reader_client(selection.config().region(), source.transfers.max(1), lookup).await?;
    Ok(ArtifactBackend::s3(client, root))
}

/// What a fetch does with each archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchMode {
    /// Keep the archives (`--no-extract`).
    Archives,
    /// Unpack each into a directory of its own (the default).
    Extract,
    /// Merge every artifact's files into the output directory (`--flatten`).
    Flatten,
    /// Merge the relpath trees into the output directory and mark each with
    /// `{relpath}.prebuilt` (`artifact_manager fetch --bootstrap`).
    Bootstrap,
}

impl FetchMode {
    /// The mode the fetch tools' flags select: `--no-extract` before `--bootstrap` before
    /// `--flatten`, else [`FetchMode::Extract`].
    pub fn from_flags(no_extract: bool, bootstrap: bool, flatten: bool) -> Self {
        if no_extract {
            FetchMode::Archives
        } else if bootstrap {
            FetchMode::Bootstrap
        } else if flatten {
            FetchMode::Flatten
        } else {
            FetchMode::Extract
        }
    }
}

/// A `fetch_artifacts` request, resolved; [`FetchRequest::new`] gives the defaults, the fields
/// change the rest.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FetchRequest {
    /// Regexes of which one must match (any, when empty).
    pub include: Vec<String>,
    /// Regexes of which none may match.
    pub exclude: Vec<String>,
    /// Platform of the run.
    pub platform: Platform,
    /// Artifact group (family).
    pub artifact_group: Option<String>,
    /// GPU targets.
    pub amdgpu_targets: Vec<String>,
    /// Artifacts downloaded at once.
    pub download_concurrency: usize,
    /// Artifacts unpacked at once.
    pub extract_concurrency: usize,
    /// Repository of the run.
    pub run_github_repo: Option<GithubRepository>,
    /// The run.
    pub run_id: String,
    /// Where to put the artifacts.
    pub output_dir: PathBuf,
    /// List, download nothing.
    pub dry_run: bool,
    /// Archives, extract or flatten.
    pub mode: FetchMode,
    /// Read from this local staging directory instead of S3.
    pub local_staging_dir: Option<PathBuf>,
    /// Use archives that cannot be verified instead of failing on them (`--allow-unverified`).
    pub allow_unverified: bool,
    /// Only the members these globs select (`--member`; all when empty): see
    /// [`ArtifactBackend::fetch_members`].
    pub members: Vec<String>,
    /// A `--member` glob that matches nothing is not an error (`--allow-empty`).
    pub allow_empty: bool,
}

/// Keeps the artifacts for `group`/`targets` (spec §12.2 step 5), or all archives when neither
/// is given.
pub(crate) fn select_by_target(
    all: &[ArtifactEntry],
    group: Option<&str>,
    targets: &[String],
) -> Vec<ArtifactEntry> {
    if group.is_none() && targets.is_empty() {
        return all.to_vec();
    }
    let selection = TargetSelection::new(group, targets.iter().map(String::as_str));
    all.iter()
        .filter(|e| e.name.as_ref().is_some_and(|n| selection.matches(n)))
        .cloned()
        .collect()
}

/// Applies the include/exclude regexes (unanchored search) to file names.
pub(crate) fn filter_by_regex(
    names: Vec<ArtifactEntry>,
    include: &[Regex],
    exclude: &[Regex],
) -> Vec<ArtifactEntry> {
    names
        .into_iter()
        .filter(|e| include.is_empty() || include.iter().any(|r| r.is_match(&e.file_name)))
        .filter(|e| !exclude.iter().any(|r| r.is_match(&e.file_name)))
        .collect()
}

pub(crate) fn compile(
    patterns: &[String],
    what: &'static str,
) -> Result<Vec<Regex>, TransferError> {
    patterns
        .iter()
        .map(|p| {
            Regex::new(p).map_err(|source| TransferError::InvalidRegex {
                what,
                pattern: p.clone(),
                source,
            })
        })
        .collect()
}

/// One artifact a fetch placed (downloaded, unpacked, or found in place from an earlier fetch).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FetchedArtifact {
    /// The archive's file name (`{name}_{component}_{family}.tar.{zst,xz}`).
    pub file_name: String,
    /// Its bytes as the fetch counted them in its totals line (0 for one found in place by
    /// `artifact_manager fetch`).
    pub bytes: u64,
}

/// Runs a `fetch_artifacts` request: lines to `out`, progress to the reporter `progress`
/// makes. Every selected artifact is attempted; if any could not be fetched or verified, the
/// error lists them all. Returns what was fetched, by file name (nothing for a dry run).
pub async fn fetch(
    request: &FetchRequest,
    lookup: &dyn Fn(&str) -> Option<String>,
    progress: &ReporterFactory,
    out: &mut dyn Write,
) -> Result<Vec<FetchedArtifact>, TransferError> {
    let lines = Lines::new(out);
    let w = TransferError::Write;
    members_usable(&request.members, request.mode)?;
    staging_to_read(request.local_staging_dir.as_deref())?;
    let include = compile(&request.include, "include")?;
    let exclude = compile(&request.exclude, "exclude")?;
    let source = RunSource {
        run_id: request.run_id.clone(),
        platform: request.platform,
        repository: request.run_github_repo.clone(),
        local_staging_dir: request.local_staging_dir.clone(),
        lookup_workflow_run: true,
        transfers: request.download_concurrency,
    };
    let backend = open_run(&source, lookup, &lines)
        .await?
        .allow_unverified(request.allow_unverified);
    let base_uri = backend.base_uri();
    lines
        .try_line(format!("Retrieving artifacts from '{base_uri}'"))
        .map_err(w)?;
    let all = backend
        .list_artifacts(None)
        .await
        .map_err(TransferError::ListRun)?;

    let group = request.artifact_group.as_deref();
    if group.is_none() && request.amdgpu_targets.is_empty() {
        lines
            .try_line("No artifact group or targets specified - downloading all artifacts")
            .map_err(w)?;
    } else {
        let families: Vec<String> =
            TargetSelection::new(group, request.amdgpu_targets.iter().map(String::as_str))
                .families()
                .map(|f| format!("'{f}'"))
                .collect();
        lines
            .try_line(format!(
                "Matching artifact target families: [{}]",
                families.join(", ")
            ))
            .map_err(w)?;
    }
    let available = select_by_target(&all, group, &request.amdgpu_targets);
    if available.is_empty() {
        return Err(TransferError::NoMatch {
            run_id: request.run_id.clone(),
            uri: base_uri,
        });
    }
    let selected = filter_by_regex(available, &include, &exclude);
    if selected.is_empty() {
        return Err(TransferError::FilteredEmpty {
            run_id: request.run_id.clone(),
        });
    }
    lines
        .try_line("\nFiltered artifacts to download:")
        .map_err(w)?;
    for e in &selected {
        lines
            .try_line(format!("  {base_uri}/{}", e.file_name))
            .map_err(w)?;
    }
    lines.try_line("").map_err(w)?;
    if request.dry_run {
        lines
            .try_line("Skipping downloads since --dry-run was set")
            .map_err(w)?;
        return Ok(Vec::new());
    }
    let bytes = selected.iter().map(|e| e.size).sum();
    let backend = backend.with_reporter(progress(selected.len(), bytes));
    let plan = Plan {
        backend: &backend,
        mode: request.mode,
        dest: request.output_dir.clone(),
        style: Style::Run,
        download_cache: None,
        download_concurrency: request.download_concurrency,
        extract_concurrency: request.extract_concurrency,
        members: Members::new(&request.members, request.allow_empty),
    };
    transfer(&plan, selected, &lines).await
}

/// How the lines of a transfer read, and what its summary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `fetch_artifacts`: largest archives first; lines name sizes and destinations; failures
    /// end in [`TransferError::Failed`].
    Run,
    /// `artifact_manager fetch`: archives in name order; a `Downloaded … extracted …` line;
    /// failures end in an `ERROR:` line.
    Stage,
}

/// A transfer of chosen archives.
pub(crate) struct Plan<'a> {
    /// Where the archives come from.
    pub(crate) backend: &'a ArtifactBackend,
    /// What becomes of them.
    pub(crate) mode: FetchMode,
    /// The output directory (archives: the directory they are kept in).
    pub(crate) dest: PathBuf,
    /// The wording.
    pub(crate) style: Style,
    /// A download cache every archive goes through (kept for the next fetch), with the
    /// backend that reads it.
    pub(crate) download_cache: Option<(PathBuf, ArtifactBackend)>,
    /// Archives transferred at once.
    pub(crate) download_concurrency: usize,
    /// Archives unpacked at once.
    pub(crate) extract_concurrency: usize,
    /// The members chosen (`--member`), if any.
    pub(crate) members: Members,
}

/// `--member` with a fetch that keeps archives or bootstraps is a usage error.
pub(crate) fn members_usable(members: &[String], mode: FetchMode) -> Result<(), TransferError> {
    if !members.is_empty() && matches!(mode, FetchMode::Archives | FetchMode::Bootstrap) {
        return Err(TransferError::Usage(
            "--member takes members out of archives: it goes with extracted or flattened fetches, not --no-extract or --bootstrap".to_owned(),
        ));
    }
    Ok(())
}

/// The `--member` globs of a fetch and those that matched something so far.
pub(crate) struct Members {
    globs: Vec<String>,
    allow_empty: bool,
    matched: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Members {
    pub(crate) fn new(globs: &[String], allow_empty: bool) -> Self {
        Members {
            globs: globs.to_vec(),
            allow_empty,
            matched: std::sync::Mutex::default(),
        }
    }

    /// Whether members are chosen at all.
    fn any(&self) -> bool {
        !self.globs.is_empty()
    }

    /// Notes which globs matched in one archive (all but `unmatched`).
    fn note(&self, unmatched: &[String]) {
        let mut matched = self
            .matched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        matched.extend(
            self.globs
                .iter()
                .filter(|g| !unmatched.contains(g))
                .cloned(),
        );
    }

    /// The globs that matched in no archive (none with `--allow-empty`).
    fn unmatched(&self) -> Vec<String> {
        if self.allow_empty {
            return Vec::new();
        }
        let matched = self
            .matched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.globs
            .iter()
            .filter(|g| !matched.contains(*g))
            .cloned()
            .collect()
    }
}

/// What became of one artifact: its line and the bytes it counts for in the totals.
pub(crate) struct Outcome {
    pub(crate) line: String,
    pub(crate) bytes: u64,
}

/// How archives share the unpacking threads.
struct Slots<'s> {
    /// One permit per archive unpacked at once.
    unpack: &'s crate::UnpackSlots,
    /// Where archives wait for a permit.
    spool: &'s Path,
    /// Decompress on a thread of its own.
    decoder_thread: bool,
    /// Threads for the frames of a multi-frame archive ([`Unpacking::frame_workers`]).
    frame_workers: usize,
}

/// The closing line of a fetch: artifacts, bytes, wall time, throughput and retries.
pub(crate) fn fetched_totals_line(
    done: usize,
    total: usize,
    bytes: u64,
    wall: std::time::Duration,
    retries: u64,
) -> String {
    storage_backend::totals_line("Fetched", (done, total), "artifacts", bytes, wall, retries)
}

/// Where archives waiting for an unpacking slot wait, downloaded (removed when done).
async fn spool_dir(dest: &Path, style: Style) -> Result<tempfile::TempDir, TransferError> {
    let dir = dest.to_path_buf();
    let spool =
        storage_backend::blocking(move || file_tree::temp_dir_in(&dir, "download-spool")).await;
    match (spool, style) {
        (Ok(spool), _) => Ok(spool),
        (Err(e), Style::Run) => Err(TransferError::Io(e)),
        (Err(source), Style::Stage) => Err(TransferError::CannotWrite {
            dir: dest.to_path_buf(),
            source,
        }),
    }
}

/// Fetches `entries` into the plan's destination, one line per artifact as it completes,
/// then the summary; every failure is named.
pub(crate) async fn transfer(
    plan: &Plan<'_>,
    mut entries: Vec<ArtifactEntry>,
    lines: &Lines<'_>,
) -> Result<Vec<FetchedArtifact>, TransferError> {
    let dest = plan.dest.clone();
    {
        let dest = dest.clone();
        storage_backend::blocking(move || fs_err::create_dir_all(&dest)).await?;
    }
    {
        let dest = dest.clone();
        storage_backend::blocking(move || crate::remove_stale_partials(&dest)).await?;
    }
    let unpack = crate::UnpackSlots::new(plan.extract_concurrency);
    let spool = spool_dir(&dest, plan.style).await?;
    let index = Arc::new(FlattenIndex::default());
    // With cores to spare, each archive is decompressed on a thread of its own.
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let at_once = plan.extract_concurrency.max(1).min(entries.len().max(1));
    let decoder_thread = at_once * 2 <= cores;
    // The cores shared by the archives unpacked at once.
    let frame_workers = (cores / at_once).max(1);
    let started = std::time::Instant::now();
    let total = entries.len();
    if plan.style == Style::Run {
        // Largest first: the longest transfers start at once instead of ending the run alone.
        entries.sort_by(|a, b| {
            b.size
                .cmp(&a.size)
                .then_with(|| a.file_name.cmp(&b.file_name))
        });
    }
    let slots = Slots {
        unpack: &unpack,
        spool: spool.path(),
        decoder_thread,
        frame_workers,
    };
    let (fetched, mut failures) = run_all(plan, entries, &slots, &index, lines).await;
    let no_member = if failures.is_empty() {
        plan.members.unmatched()
    } else {
        Vec::new()
    };
    let (done, bytes) = (fetched.len(), fetched.iter().map(|f| f.bytes).sum::<u64>());
    if plan.mode == FetchMode::Bootstrap && failures.is_empty() {
        let (dest, index) = (dest.clone(), index.clone());
        storage_backend::blocking(move || index.write_prebuilt_markers(&dest)).await?;
    }
    let totals = fetched_totals_line(
        done,
        total,
        bytes,
        started.elapsed(),
        plan.backend.retries(),
    );
    failures.sort();
    match plan.style {
        Style::Run => {
            lines.line(totals);
            if !failures.is_empty() {
                return Err(TransferError::Failed(failures));
            }
            if !no_member.is_empty() {
                return Err(TransferError::NoMember(no_member));
            }
            lines
                .take_error()
                .map_or(Ok(fetched), |e| Err(TransferError::Write(e)))
        }
        Style::Stage => {
            let extracted = if plan.mode == FetchMode::Archives {
                0
            } else {
                done
            };
            lines.line(format!(
                "\nDownloaded {done} artifacts, extracted {extracted}"
            ));
            lines.line(totals);
            if !no_member.is_empty() {
                let message = TransferError::NoMember(no_member).to_string();
                lines.line(format!("ERROR: {message}"));
                return Err(TransferError::Reported(message));
            }
            if failures.is_empty() {
                return Ok(fetched);
            }
            let message = format!(
                "Only fetched {done}/{total} artifacts - {} failed: {}",
                failures.len(),
                failures.join(", ")
            );
            lines.line(format!("ERROR: {message}"));
            Err(TransferError::Reported(message))
        }
    }
}

/// Fetches every entry, `download_concurrency` at once, each line written as it completes;
/// returns (the artifacts done, the failures).
async fn run_all(
    plan: &Plan<'_>,
    entries: Vec<ArtifactEntry>,
    slots: &Slots<'_>,
    index: &Arc<FlattenIndex>,
    lines: &Lines<'_>,
) -> (Vec<FetchedArtifact>, Vec<String>) {
    let mut results = futures::stream::iter(entries)
        .map(|entry| {
            let index = index.clone();
            async move {
                let result = fetch_one(plan, &entry, slots, index).await;
                (entry.file_name, result)
            }
        })
        .buffer_unordered(plan.download_concurrency.max(1));

    // Each artifact's line as soon as it is done; the failures again at the end.
    let mut failures = Vec::new();
    let mut done = Vec::new();
    while let Some((key, result)) = results.next().await {
        match result {
            Ok(outcome) => {
                lines.line(outcome.line);
                done.push(FetchedArtifact {
                    file_name: key,
                    bytes: outcome.bytes,
                });
            }
            Err(e) => {
                let cause = chain_text(&e);
                match plan.style {
                    Style::Run => {
                        lines.line(format!("  !! Failed {key}: {cause}"));
                        failures.push(format!("{key}: {cause}"));
                    }
                    Style::Stage => {
                        lines.line(format!("  !! Failed to fetch {key}: {cause}"));
                        failures.push(key);
                    }
                }
            }
        }
    }
    done.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    (done, failures)
}

/// `{b}` bytes as MiB to a tenth.
fn mib(b: u64) -> String {
    format!("{}.{} MiB", b / 1_048_576, (b % 1_048_576) * 10 / 1_048_576)
}

/// How an archive was checked.
fn check(verified: bool) -> &'static str {
    if verified {
        "sha256 verified"
    } else {
        "not verified: no sidecar or recorded SHA-256 (--allow-unverified)"
    }
}

/// The `--member` members of artifact `key`, and its line.
async fn fetch_chosen_members(
    plan: &Plan<'_>,
    key: &str,
    flatten: Option<Arc<FlattenIndex>>,
) -> Result<Outcome, Error> {
    let got = plan
        .backend
        .fetch_members(key, &plan.members.globs, &plan.dest, flatten)
        .await?;
    plan.members.note(&got.unmatched);
    let how = if got.indexed {
        format!(
            "{} of {} frames, {}",
            got.frames.0,
            got.frames.1,
            mib(got.bytes)
        )
    } else {
        format!("no member index: the whole archive, {}", mib(got.bytes))
    };
    let line = if got.members == 0 {
        format!("  -- No member of '{key}' matches")
    } else {
        format!("  ++ {} members of '{key}' ({how})", got.members)
    };
    Ok(Outcome {
        line,
        bytes: got.bytes,
    })
}

/// Fetches one artifact.
async fn fetch_one(
    plan: &Plan<'_>,
    entry: &ArtifactEntry,
    slots: &Slots<'_>,
    index: Arc<FlattenIndex>,
) -> Result<Outcome, Error> {
    let (backend, dest) = (plan.backend, plan.dest.as_path());
    let key = &entry.file_name;
    if plan.mode == FetchMode::Archives {
        return match plan.style {
            Style::Run => download_verified(backend, entry, dest).await,
            Style::Stage => download_cached(backend, key, dest).await,
        };
    }
    let layout = match plan.mode {
        FetchMode::Flatten => Layout::Flatten,
        FetchMode::Bootstrap => Layout::Bootstrap,
        FetchMode::Extract | FetchMode::Archives => Layout::Full,
    };
    let dir_name = extract_dir_name(key);
    if plan.members.any() {
        let flatten = (layout == Layout::Flatten).then(|| index.clone());
        return fetch_chosen_members(plan, key, flatten).await;
    }
    if layout == Layout::Full && backend.extracted_is_current(key, dest).await? {
        return Ok(match plan.style {
            Style::Run => Outcome {
                line: format!("  == Cached '{key}' in '{dir_name}' (sha256 verified earlier)"),
                bytes: entry.size,
            },
            Style::Stage => Outcome {
                line: format!("  == Cached {key} in {dir_name} (sha256 verified earlier)"),
                bytes: 0,
            },
        });
    }
    let unpacking = Unpacking {
        layout,
        decoder_thread: slots.decoder_thread,
        frame_workers: slots.frame_workers,
    };
    // With a shared download cache, the archive goes through it (kept for the next fetch).
    let (got, cached_line) = if let Some((cache, cached)) = &plan.download_cache {
        let downloaded = download_cached(backend, key, cache).await?;
        let _permit = slots.unpack.acquire().await;
        let got = cached.fetch_extracted(key, dest, unpacking, index).await?;
        (got, Some(downloaded.line))
    } else {
        let got = backend
            .fetch_extracted_limited(key, dest, unpacking, index, slots.unpack, slots.spool)
            .await?;
        (got, None)
    };
    let verb = match plan.mode {
        FetchMode::Flatten => "Flattened",
        FetchMode::Bootstrap => "Bootstrapped",
        FetchMode::Extract | FetchMode::Archives => "Extracted",
    };
    Ok(match plan.style {
        Style::Run => {
            let to = if layout == Layout::Full {
                dir_name.to_owned()
            } else {
                dest.display().to_string()
            };
            Outcome {
                line: format!(
                    "  ++ {verb} '{key}' to '{to}' ({}, {} files, {})",
                    mib(got.bytes),
                    got.extracted.files,
                    check(got.verified)
                ),
                bytes: entry.size,
            }
        }
        Style::Stage => {
            let mut line = format!(
                "  ++ {verb} {key} ({} files, {})",
                got.extracted.files,
                check(got.verified)
            );
            if let Some(cached) = cached_line {
                line = format!("{cached}\n{line}");
            }
            Outcome {
                line,
                bytes: got.bytes,
            }
        }
    })
}

/// `fetch_artifacts --no-extract`: downloads the archive into `dir` unless the copy there
/// has the digest the run's sidecar (or recorded SHA-256) gives.
async fn download_verified(
    backend: &ArtifactBackend,
    entry: &ArtifactEntry,
    dir: &Path,
) -> Result<Outcome, Error> {
    let key = &entry.file_name;
    let dest = dir.join(key);
    // The sidecar is only worth a request when there is a file it could vouch for.
    if dest.is_file()
        && let Some(sha) = backend.expected_sha256(key).await?
        && storage_backend::sha256_file(&dest).await? == sha
    {
        return Ok(Outcome {
            line: format!("  == Cached {key} (sha256 verified)"),
            bytes: entry.size,
        });
    }
    let got = backend.download_artifact(key, &dest).await?;
    Ok(Outcome {
        line: format!(
            "  ++ Downloaded {key} ({}, {})",
            mib(got.fetched + got.resumed),
            check(got.verified)
        ),
        bytes: entry.size,
    })
}

/// Downloads `key` into `dir` unless a copy its local sidecar vouches for is already there.
pub(crate) async fn download_cached(
    backend: &ArtifactBackend,
    key: &str,
    dir: &Path,
) -> Result<Outcome, Error> {
    let path = dir.join(key);
    if path.is_file() {
        let sidecar = dir.join(format!("{key}.sha256sum"));
        let recorded = storage_backend::blocking(move || fs_err::read_to_string(&sidecar))
            .await
            .ok()
            .and_then(|t| storage_backend::parse_sha256sum(&t));
        if let Some(sha) = recorded
            && storage_backend::sha256_file(&path).await? == sha
        {
            return Ok(Outcome {
                line: format!("  == Cached {key} (sha256 verified)"),
                bytes: 0,
            });
        }
    }
    let got = backend.download_artifact(key, &path).await?;
    Ok(Outcome {
        line: format!("  ++ Downloaded {key} ({})", check(got.verified)),
        bytes: got.fetched + got.resumed,
    })
}

/// The default number of archives unpacked at once: the number of cores (2 when it cannot be
/// told).
pub fn default_extract_concurrency() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
}

/// The default number of archives written at once by a push: half the cores, at least 1
/// (each compresses on the cores left).
pub fn default_compress_concurrency() -> usize {
    default_extract_concurrency().div_ceil(2)
}

#[cfg(test)]
mod tests;
