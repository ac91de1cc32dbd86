//! `artifact_manager fetch` (spec §4.6): the artifacts a stage consumes, streamed through
//! verification and unpacking into the build tree.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use artifact_backend::{ArtifactBackend, FlattenIndex, Unpacking, extract_dir_name};
use artifacts::Layout;
use futures::StreamExt as _;

use super::{
    Checkout, Lines, Lookup, Reported, RunOptions, Targets, choose_files, file_names, joined,
    parse_excluded_artifacts, parse_excluded_components, uncovered, unknown_stage,
};

/// What `fetch` does with each archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchMode {
    /// Unpack each into `{output}/artifacts/{name}/` (the default).
    Extract,
    /// Merge every artifact's files into `{output}/` with relpaths stripped (`--flatten`).
    Flatten,
    /// Merge the relpath trees into `{output}/` and mark each with `{relpath}.prebuilt`
    /// (`--bootstrap`).
    Bootstrap,
    /// Keep the archives in the download cache (`--no-extract`).
    Archives,
}

/// A resolved `fetch` command line.
#[derive(Clone)]
pub struct FetchRequest {
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
    /// The mode.
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
    /// No progress bars.
    pub quiet: bool,
}

/// Runs `fetch`.
pub async fn fetch(request: &FetchRequest, lines: &Lines) -> anyhow::Result<()> {
    let topology = request.checkout.load_topology()?;
    let Some(inbound) = inbound(&topology, &request.stage, lines)? else {
        return Ok(());
    };
    // Both exclusion lists are checked before anything is listed or created.
    let excluded_components = parse_excluded_components(&request.exclude_components)?;
    let excluded_artifacts = parse_excluded_artifacts(&request.exclude_artifacts, &topology)?;
    let targets = request.targets.resolve(&request.checkout, lines)?;
    let mut wanted = inbound;
    if !excluded_artifacts.is_empty() {
        lines.line(format!(
            "Excluding artifacts: {}",
            joined(excluded_artifacts.iter().map(String::as_str))
        ));
        wanted.retain(|a| !excluded_artifacts.contains(*a));
        if wanted.is_empty() {
            lines.line("No artifacts remain after exclusions");
            return Ok(());
        }
    }
    let run_id = request.run.run_id()?;
    let backend = request
        .run
        .backend(
            &run_id,
            request.run.repository.clone(),
            Lookup::UnlessCurrentRun,
            lines,
        )
        .await?;
    let base_uri = backend.base_uri();
    lines.line(format!("Using backend: {base_uri}"));
    let listed = backend
        .list_artifacts(None)
        .await
        .with_context(|| format!("Failed to list the artifacts at {base_uri}"))?;
    lines.line(format!("Found {} artifacts in backend", listed.len()));
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
            return Ok(());
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
        return Err(Reported(message).into());
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
    lines.line(format!("\nDownloading {} artifacts...", chosen.len()));
    let bytes = listed
        .iter()
        .filter(|e| chosen.contains(&e.file_name))
        .map(|e| e.size)
        .sum();
    let backend = backend
        .with_reporter(Arc::new(
            crate::progress::Progress::for_stderr(request.quiet).with_totals(chosen.len(), bytes),
        ))
        .allow_unverified(request.allow_unverified)
        .record_verified_in(records_dir(request));
    transfer(request, &backend, chosen, lines).await
}

/// Where verified extracted copies are recorded: beside the output directory
/// (`{parent}/.{name}.rock-ci-fetch`), which holds only `artifacts/` as the reference's does.
fn records_dir(request: &FetchRequest) -> Option<PathBuf> {
    artifact_backend::verified_dir(&request.output_dir)
}

/// The artifacts `fetch --stage {stage}` wants, with the plan line printed; `None` when the
/// stage has none.
fn inbound<'a>(
    topology: &'a build_topology::BuildTopology,
    stage: &str,
    lines: &Lines,
) -> anyhow::Result<Option<BTreeSet<&'a str>>> {
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

/// Fetches `chosen`, one line per artifact as it completes, then the totals.
async fn transfer(
    request: &FetchRequest,
    backend: &ArtifactBackend,
    chosen: Vec<String>,
    lines: &Lines,
) -> anyhow::Result<()> {
    let dest = match request.mode {
        FetchMode::Extract => request.output_dir.join("artifacts"),
        FetchMode::Flatten | FetchMode::Bootstrap => request.output_dir.clone(),
        FetchMode::Archives => request
            .download_cache_dir
            .clone()
            .unwrap_or_else(|| request.output_dir.join(".download_cache")),
    };
    fs_err::create_dir_all(&dest)?;
    {
        let dest = dest.clone();
        storage_backend::blocking(move || artifact_backend::remove_stale_partials(&dest)).await?;
    }
    let unpack = Arc::new(tokio::sync::Semaphore::new(
        request.extract_concurrency.max(1),
    ));
    // Archives waiting for an unpacking slot wait here, downloaded (removed when done).
    let spool = {
        let dir = dest.clone();
        storage_backend::blocking(move || file_tree::temp_dir_in(&dir, "download-spool"))
            .await
            .with_context(|| format!("Cannot write in {}", dest.display()))?
    };
    let index = Arc::new(FlattenIndex::default());
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let decoder_thread = request.extract_concurrency.max(1).min(chosen.len()) * 2 <= cores;
    let total = chosen.len();
    let started = std::time::Instant::now();
    let mut results = futures::stream::iter(chosen)
        .map(|key| {
            let (unpack, index, dest) = (unpack.clone(), index.clone(), dest.clone());
            let spool = spool.path().to_path_buf();
            async move {
                let slots = Slots {
                    unpack,
                    spool,
                    decoder_thread,
                };
                let result = fetch_one(request, backend, &key, &dest, slots, index).await;
                (key, result)
            }
        })
        .buffer_unordered(request.download_concurrency.max(1));
    let mut failures = Vec::new();
    let mut bytes = 0;
    while let Some((key, result)) = results.next().await {
        match result {
            Ok((line, size)) => {
                bytes += size;
                lines.line(line);
            }
            Err(e) => {
                lines.line(format!("  !! Failed to fetch {key}: {e:#}"));
                failures.push(key);
            }
        }
    }
    let done = total - failures.len();
    if request.mode == FetchMode::Bootstrap && failures.is_empty() {
        let dest = dest.clone();
        let index = index.clone();
        storage_backend::blocking(move || index.write_prebuilt_markers(&dest)).await?;
    }
    let extracted = if request.mode == FetchMode::Archives {
        0
    } else {
        done
    };
    lines.line(format!(
        "\nDownloaded {done} artifacts, extracted {extracted}"
    ));
    lines.line(crate::fetch_artifacts::totals_line(
        done,
        total,
        bytes,
        started.elapsed(),
        backend.retries(),
    ));
    if failures.is_empty() {
        return Ok(());
    }
    failures.sort();
    let message = format!(
        "Only fetched {done}/{total} artifacts - {} failed: {}",
        failures.len(),
        failures.join(", ")
    );
    lines.line(format!("ERROR: {message}"));
    Err(Reported(message).into())
}

/// How archives share the unpacking threads.
struct Slots {
    /// One permit per archive unpacked at once.
    unpack: Arc<tokio::sync::Semaphore>,
    /// Where archives wait for a permit.
    spool: PathBuf,
    /// Decompress on a thread of its own.
    decoder_thread: bool,
}

/// One artifact: `(line, compressed bytes)`.
async fn fetch_one(
    request: &FetchRequest,
    backend: &ArtifactBackend,
    key: &str,
    dest: &Path,
    slots: Slots,
    index: Arc<FlattenIndex>,
) -> anyhow::Result<(String, u64)> {
    if request.mode == FetchMode::Archives {
        return download_cached(backend, key, dest).await;
    }
    let layout = match request.mode {
        FetchMode::Flatten => Layout::Flatten,
        FetchMode::Bootstrap => Layout::Bootstrap,
        FetchMode::Extract | FetchMode::Archives => Layout::Full,
    };
    if layout == Layout::Full && backend.extracted_is_current(key, dest).await? {
        return Ok((
            format!(
                "  == Cached {key} in {} (sha256 verified earlier)",
                extract_dir_name(key)
            ),
            0,
        ));
    }
    // With a shared download cache, the archive goes through it (kept for the next fetch).
    let (source, cached_line) = match &request.download_cache_dir {
        Some(cache) => {
            let (line, _) = download_cached(backend, key, cache).await?;
            let cached = ArtifactBackend::local_dir(cache, backend.root().clone())
                .allow_unverified(request.allow_unverified)
                .record_verified_in(records_dir(request));
            (Some(cached), Some(line))
        }
        None => (None, None),
    };
    let unpacking = Unpacking {
        layout,
        decoder_thread: slots.decoder_thread,
    };
    let got = match &source {
        Some(cached) => {
            let _permit = slots.unpack.acquire_owned().await?;
            cached.fetch_extracted(key, dest, unpacking, index).await?
        }
        None => {
            backend
                .fetch_extracted_limited(key, dest, unpacking, index, &slots.unpack, &slots.spool)
                .await?
        }
    };
    let verb = match request.mode {
        FetchMode::Flatten => "Flattened",
        FetchMode::Bootstrap => "Bootstrapped",
        FetchMode::Extract | FetchMode::Archives => "Extracted",
    };
    let check = if got.verified {
        "sha256 verified"
    } else {
        "not verified: no sidecar or recorded SHA-256 (--allow-unverified)"
    };
    let mut line = format!("  ++ {verb} {key} ({} files, {check})", got.extracted.files);
    if let Some(cached) = cached_line {
        line = format!("{cached}\n{line}");
    }
    Ok((line, got.bytes))
}

/// Downloads `key` into `dir` unless a copy the sidecar vouches for is already there.
async fn download_cached(
    backend: &ArtifactBackend,
    key: &str,
    dir: &Path,
) -> anyhow::Result<(String, u64)> {
    let path = dir.join(key);
    if path.is_file() {
        let sidecar = dir.join(format!("{key}.sha256sum"));
        let recorded = fs_err::read_to_string(&sidecar)
            .ok()
            .and_then(|t| storage_backend::parse_sha256sum(&t));
        if let Some(sha) = recorded
            && storage_backend::sha256_file(&path).await? == sha
        {
            return Ok((format!("  == Cached {key} (sha256 verified)"), 0));
        }
    }
    let got = backend.download_artifact(key, &path).await?;
    let check = if got.verified {
        "sha256 verified"
    } else {
        "not verified: no sidecar or recorded SHA-256 (--allow-unverified)"
    };
    Ok((
        format!("  ++ Downloaded {key} ({check})"),
        got.fetched + got.resumed,
    ))
}
