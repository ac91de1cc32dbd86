//! The stage-aware transfers of `artifact_manager` (spec §4): [`fetch_stage`] downloads and
//! unpacks what a stage consumes (through the one fetch pipeline of [`crate::pipeline`]),
//! [`push()`] archives and uploads what it produced, [`copy()`] re-uses an earlier run's stage
//! outputs server-side. Which artifacts a stage takes is `build_topology`'s.

mod copy;
mod members;
mod push;
mod tarballs;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use build_topology::{
    BuildTopology, Checkout, Targets, choose_files, parse_excluded_artifacts,
    parse_excluded_components, uncovered,
};
use workflow_outputs::{GithubRepository, Platform};

use crate::pipeline::{
    FetchMode, Lines, Plan, ReporterFactory, RunSource, Style, TransferError, open_run, transfer,
};
use crate::{ArtifactBackend, ArtifactEntry};

pub use copy::{CopyRequest, copy};
pub use members::{ArchiveMembers, ListMembersRequest, list_members};
pub use push::{PushRequest, push};
pub use tarballs::{
    BUILD_MANIFEST, BuiltTarball, EXCLUDED_ARTIFACTS, EXCLUDED_COMPONENTS, TarballsRequest,
    build_tarballs,
};

/// The environment as the tools read it (with the network-limit flags answered first).
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The run options every transfer takes (spec §4.2 backend options), resolved by
/// [`RunOptions::resolve`].
#[derive(Clone)]
#[non_exhaustive]
pub struct RunOptions {
    /// The run id (`--run-id`, `THEROCK_RUN_ID`, `GITHUB_RUN_ID`); `None` when none is set.
    pub run_id: Option<String>,
    /// The platform.
    pub platform: Platform,
    /// `--run-github-repo`.
    pub repository: Option<GithubRepository>,
    /// The local staging directory (`--local-staging-dir`, `THEROCK_LOCAL_STAGING_DIR`).
    pub local_staging_dir: Option<PathBuf>,
    /// Network limits as environment answers.
    pub env: Env,
    /// Transfers at once (sizes the S3 connection pool).
    pub concurrency: usize,
}

/// The run options as the command line gives them, before the environment fills them in
/// (`GivenRun::default()`: all from the environment).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GivenRun {
    /// `--run-id`.
    pub run_id: Option<String>,
    /// `--platform`.
    pub platform: Option<Platform>,
    /// `--run-github-repo`.
    pub repository: Option<GithubRepository>,
    /// `--local-staging-dir`.
    pub local_staging_dir: Option<PathBuf>,
}

impl RunOptions {
    /// Fills `given` in from `env` (spec §4.2): the run id from `THEROCK_RUN_ID`, else
    /// `GITHUB_RUN_ID`; the platform from `THEROCK_PLATFORM`, else this machine's; the
    /// staging directory from `THEROCK_LOCAL_STAGING_DIR`. `env` is kept for the clients.
    ///
    /// # Errors
    /// [`TransferError::Usage`]: a `THEROCK_PLATFORM` that names no platform, or an empty
    /// staging directory (flag or variable).
    pub fn resolve(given: GivenRun, env: Env, concurrency: usize) -> Result<Self, TransferError> {
        let run_id = given
            .run_id
            .or_else(|| env("THEROCK_RUN_ID"))
            .or_else(|| env("GITHUB_RUN_ID"));
        let platform = match (given.platform, env("THEROCK_PLATFORM")) {
            (Some(p), _) => p,
            (None, Some(p)) => p.parse().map_err(|e: workflow_outputs::Error| {
                TransferError::Usage(format!("THEROCK_PLATFORM: {e}"))
            })?,
            (None, None) => Platform::host(),
        };
        let local_staging_dir = match (given.local_staging_dir, env("THEROCK_LOCAL_STAGING_DIR")) {
            (Some(dir), _) if dir.as_os_str().is_empty() => {
                return Err(TransferError::Usage(
                    "--local-staging-dir is empty".to_owned(),
                ));
            }
            (Some(dir), _) => Some(dir),
            (None, Some(dir)) if dir.is_empty() => {
                return Err(TransferError::Usage(
                    "THEROCK_LOCAL_STAGING_DIR is set but empty: unset it for S3, or give a directory"
                        .to_owned(),
                ));
            }
            (None, dir) => dir.map(PathBuf::from),
        };
        Ok(RunOptions {
            run_id,
            platform,
            repository: given.repository,
            local_staging_dir,
            env,
            concurrency,
        })
    }
}

/// How a backend finds its run's bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// Ask the GitHub API about the run when it is not the current one (`GITHUB_RUN_ID`).
    UnlessCurrentRun,
    /// Always ask (the source of `copy`).
    Always,
    /// Never ask: this run's own event decides (what `push` and `copy` write).
    Never,
}

impl RunOptions {
    /// The run id; for S3 one must be set (a default of `local` would write into the real
    /// bucket), locally it defaults to `local`.
    fn run_id(&self) -> Result<String, TransferError> {
        match (&self.run_id, &self.local_staging_dir) {
            (Some(id), _) if !id.is_empty() => Ok(id.clone()),
            (_, Some(_)) => Ok(workflow_outputs::DEFAULT_LOCAL_RUN_ID.to_owned()),
            (Some(_), None) => Err(TransferError::Usage(
                "the run id is empty: pass --run-id (THEROCK_RUN_ID or GITHUB_RUN_ID is set but empty)"
                    .to_owned(),
            )),
            (None, None) => Err(TransferError::Usage(
                "a run id is needed for S3: pass --run-id or set THEROCK_RUN_ID / GITHUB_RUN_ID (the `local` run id is only for --local-staging-dir)"
                    .to_owned(),
            )),
        }
    }

    /// The backend of run `run_id` (spec §4.3), with repository `repository`.
    async fn backend(
        &self,
        run_id: &str,
        repository: Option<GithubRepository>,
        lookup: Lookup,
        lines: &Lines<'_>,
    ) -> Result<ArtifactBackend, TransferError> {
        let env = self.env.clone();
        let ask = match lookup {
            Lookup::Always => true,
            Lookup::Never => false,
            Lookup::UnlessCurrentRun => env("GITHUB_RUN_ID").as_deref() != Some(run_id),
        };
        let source = RunSource {
            run_id: run_id.to_owned(),
            platform: self.platform,
            repository,
            local_staging_dir: self.local_staging_dir.clone(),
            lookup_workflow_run: ask,
            transfers: self.concurrency,
        };
        open_run(&source, &|v| env(v), lines).await
    }
}

/// A resolved `artifact_manager fetch` command line; [`StageFetchRequest::new`] gives the
/// defaults, the fields change the rest.
#[derive(Clone)]
#[non_exhaustive]
pub struct StageFetchRequest {
    /// The run and backend options.
    pub run: RunOptions,
    /// Where the topology and family table are.
    pub checkout: Checkout,
    /// The target options.
    pub targets: Targets,
    /// `--stage` (`all`: every artifact of the topology).
    pub stage: String,
    /// `--output-dir`.
    pub output_dir: PathBuf,
    /// The mode: [`FetchMode::Extract`] unpacks into `{output}/artifacts/{name}/`,
    /// [`FetchMode::Archives`] keeps the archives in the download cache.
    pub mode: FetchMode,
    /// `--download-cache-dir`: a cache shared between invocations, never deleted.
    pub download_cache_dir: Option<PathBuf>,
    /// Artifacts transferred at once.
    pub download_concurrency: usize,
    /// Artifacts unpacked at once.
    pub extract_concurrency: usize,
    /// `--exclude-components`, as given.
    pub exclude_components: String,
    /// `--exclude-artifacts`, as given.
    pub exclude_artifacts: String,
    /// `--allow-empty`: finding no archive at all is not an error.
    pub allow_empty: bool,
    /// `--allow-unverified`: use archives that cannot be verified instead of failing on them.
    pub allow_unverified: bool,
    /// Only the members these globs select (`--member`; all when empty): see
    /// [`ArtifactBackend::fetch_members`].
    pub members: Vec<String>,
}

impl StageFetchRequest {
    /// Fetches what `stage` (`all`: every artifact) of the topology in `checkout` consumes
    /// into `output_dir`: every target of the checkout, unpacked into
    /// `{output_dir}/artifacts/{name}/`, no download cache, `run.concurrency` downloads and
    /// [`crate::pipeline::default_extract_concurrency`] unpackings at once, nothing excluded,
    /// finding no archive and unverifiable archives failing.
    pub fn new(
        run: RunOptions,
        checkout: Checkout,
        stage: impl Into<String>,
        output_dir: impl Into<PathBuf>,
    ) -> Self {
        let download_concurrency = run.concurrency.max(1);
        StageFetchRequest {
            run,
            checkout,
            targets: Targets::default(),
            stage: stage.into(),
            output_dir: output_dir.into(),
            mode: FetchMode::Extract,
            download_cache_dir: None,
            download_concurrency,
            extract_concurrency: crate::pipeline::default_extract_concurrency(),
            exclude_components: String::new(),
            exclude_artifacts: String::new(),
            allow_empty: false,
            allow_unverified: false,
            members: Vec::new(),
        }
    }
}

/// `s` sorted and `", "`-joined.
fn joined<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let sorted: BTreeSet<&str> = items.into_iter().collect();
    sorted.into_iter().collect::<Vec<_>>().join(", ")
}

/// The archive file names of a listing.
fn file_names(entries: &[ArtifactEntry]) -> Vec<String> {
    entries.iter().map(|e| e.file_name.clone()).collect()
}

/// The checkout's topology, read off the async threads.
async fn load_topology(checkout: &Checkout) -> Result<BuildTopology, TransferError> {
    let checkout = checkout.clone();
    Ok(storage_backend::blocking(move || checkout.load_topology()).await?)
}

/// Writes the unknown-stage lines and returns the failure.
fn unknown_stage(topology: &BuildTopology, stage: &str, lines: &Lines<'_>) -> TransferError {
    build_topology::unknown_stage(topology, stage, &mut lines.writer()).into()
}

/// The run `run_id` of `run` to read from, and its archives: the staging directory checked,
/// the backend opened (the run looked up unless it is this one), the archives listed, with the
/// `Using backend:` and `Found N artifacts in backend` lines.
async fn read_run(
    run: &RunOptions,
    run_id: &str,
    lines: &Lines<'_>,
) -> Result<(ArtifactBackend, Vec<ArtifactEntry>), TransferError> {
    crate::pipeline::staging_to_read(run.local_staging_dir.as_deref())?;
    let backend = run
        .backend(
            run_id,
            run.repository.clone(),
            Lookup::UnlessCurrentRun,
            lines,
        )
        .await?;
    let base_uri = backend.base_uri();
    lines.line(format!("Using backend: {base_uri}"));
    let listed = backend
        .list_artifacts(None)
        .await
        .map_err(|source| TransferError::List {
            uri: base_uri,
            source,
        })?;
    lines.line(format!("Found {} artifacts in backend", listed.len()));
    Ok((backend, listed))
}

/// Runs `artifact_manager fetch`: lines to `out`, progress to the reporter `progress` makes.
/// Returns what was fetched (or found in place), by file name: nothing when the stage wants
/// nothing or nothing matched (with `allow_empty`).
pub async fn fetch_stage(
    request: &StageFetchRequest,
    progress: &ReporterFactory,
    out: &mut dyn Write,
) -> Result<Vec<crate::pipeline::FetchedArtifact>, TransferError> {
    let lines = Lines::new(out);
    crate::pipeline::members_usable(&request.members, request.mode)?;
    let topology = load_topology(&request.checkout).await?;
    let Some(inbound) = inbound(&topology, &request.stage, &lines)? else {
        return Ok(Vec::new());
    };
    // Both exclusion lists are checked before anything is listed or created.
    let excluded_components = parse_excluded_components(&request.exclude_components)?;
    let excluded_artifacts = parse_excluded_artifacts(&request.exclude_artifacts, &topology)?;
    let targets = request
        .targets
        .resolve(&request.checkout, &mut lines.writer())?;
    let mut wanted = inbound;
    if !excluded_artifacts.is_empty() {
        lines.line(format!(
            "Excluding artifacts: {}",
            joined(excluded_artifacts.iter().map(String::as_str))
        ));
        wanted.retain(|a| !excluded_artifacts.contains(*a));
        if wanted.is_empty() {
            lines.line("No artifacts remain after exclusions");
            return Ok(Vec::new());
        }
    }
    let run_id = request.run.run_id()?;
    let (backend, listed) = read_run(&request.run, &run_id, &lines).await?;
    let base_uri = backend.base_uri();
    if !excluded_components.is_empty() {
        lines.line(format!(
            "Excluding artifact components: {}",
            joined(excluded_components.iter().map(String::as_str))
        ));
    }
    let chosen = choose_files(
        &wanted,
        &targets,
        &file_names(&listed),
        &excluded_components,
    );
    if chosen.is_empty() {
        lines.line("No matching artifacts found to download");
        if request.allow_empty {
            return Ok(Vec::new());
        }
        let root = backend.root();
        let message = format!(
            "no archive of the {} requested artifacts for targets [{}] in run {run_id}: bucket '{}', prefix '{}/' ({} archives there); pass --allow-empty if that is expected",
            wanted.len(),
            targets.join(", "),
            root.bucket(),
            root.prefix(),
            listed.len()
        );
        lines.line(format!("ERROR: {message}"));
        return Err(TransferError::Reported(message));
    }
    let missing = uncovered(&wanted, &chosen);
    if !missing.is_empty() {
        lines.line(format!(
            "WARNING: {} requested artifacts have no archive for targets [{}] at {base_uri}: {}",
            missing.len(),
            targets.join(", "),
            missing.join(", ")
        ));
    }
    fetch_chosen(request, backend, &listed, &chosen, progress, &lines).await
}

/// Fetches the `chosen` archives of `listed` into the request's destination.
async fn fetch_chosen(
    request: &StageFetchRequest,
    backend: ArtifactBackend,
    listed: &[ArtifactEntry],
    chosen: &[String],
    progress: &ReporterFactory,
    lines: &Lines<'_>,
) -> Result<Vec<crate::pipeline::FetchedArtifact>, TransferError> {
    lines.line(format!("\nDownloading {} artifacts...", chosen.len()));
    // The chosen archives in their (name) order, with their listed sizes.
    let entries: Vec<ArtifactEntry> = chosen
        .iter()
        .filter_map(|key| listed.iter().find(|e| &e.file_name == key).cloned())
        .collect();
    let bytes = entries.iter().map(|e| e.size).sum();
    let records = crate::verified_dir(&request.output_dir);
    let backend = backend
        .with_reporter(progress(chosen.len(), bytes))
        .allow_unverified(request.allow_unverified)
        .record_verified_in(records.clone());
    let dest = match request.mode {
        FetchMode::Extract => request.output_dir.join("artifacts"),
        FetchMode::Flatten | FetchMode::Bootstrap => request.output_dir.clone(),
        FetchMode::Archives => request
            .download_cache_dir
            .clone()
            .unwrap_or_else(|| request.output_dir.join(".download_cache")),
    };
    let download_cache = request.download_cache_dir.as_ref().map(|cache| {
        let cached = ArtifactBackend::local_dir(cache, backend.root().clone())
            .allow_unverified(request.allow_unverified)
            .record_verified_in(records);
        (cache.clone(), cached)
    });
    let plan = Plan {
        backend: &backend,
        mode: request.mode,
        dest,
        style: Style::Stage,
        download_cache,
        download_concurrency: request.download_concurrency,
        extract_concurrency: request.extract_concurrency,
        members: crate::pipeline::Members::new(&request.members, request.allow_empty),
    };
    transfer(&plan, entries, lines).await
}

/// The artifacts `fetch --stage {stage}` wants, with the plan line written; `None` when the
/// stage has none.
fn inbound<'a>(
    topology: &'a BuildTopology,
    stage: &str,
    lines: &Lines<'_>,
) -> Result<Option<BTreeSet<&'a str>>, TransferError> {
    if stage == build_topology::ALL_STAGES {
        let all = topology.artifacts_to_fetch(stage)?;
        lines.line(format!("Fetching all {} artifacts", all.len()));
        return Ok(Some(all));
    }
    if topology.stage(stage).is_err() {
        return Err(unknown_stage(topology, stage, lines));
    }
    let inbound = topology.inbound_artifacts(stage)?;
    if inbound.is_empty() {
        lines.line(format!("Stage '{stage}' has no inbound artifacts"));
        return Ok(None);
    }
    lines.line(format!(
        "Stage '{stage}' needs {} artifacts: {}",
        inbound.len(),
        joined(inbound.iter().copied())
    ));
    Ok(Some(inbound))
}

#[cfg(test)]
mod tests;
