//! `fetch_artifacts`: selects a CI run's artifacts by group, GPU targets and regexes, then
//! downloads them, streaming each through verification and unpacking (spec §12).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use artifact_backend::{ArtifactBackend, ArtifactEntry, FlattenIndex, Unpacking, extract_dir_name};
use artifacts::{Layout, TargetSelection};
use futures::StreamExt as _;
use regex::Regex;
use workflow_outputs::{GithubRepository, Platform, WorkflowOutputRoot};

/// What to do with each downloaded archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Keep the archives (`--no-extract`).
    Archives,
    /// Unpack each into `{output}/{name}/` (default, `--extract`).
    Extract,
    /// Merge all into `{output}/` (`--flatten`).
    Flatten,
}

/// The resolved request.
#[derive(Debug, Clone)]
pub struct Request {
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
    pub mode: Mode,
    /// Read from this local staging directory instead of S3.
    pub local_staging_dir: Option<PathBuf>,
    /// Use archives that cannot be verified instead of failing on them (`--allow-unverified`).
    pub allow_unverified: bool,
    /// No progress bars.
    pub quiet: bool,
}

/// Keeps the artifacts for `group`/`targets` (spec §12.2 step 5), or all archives when neither
/// is given.
pub fn select_by_target(
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
pub fn filter_by_regex(
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

fn compile(patterns: &[String], what: &str) -> anyhow::Result<Vec<Regex>> {
    patterns
        .iter()
        .map(|p| Regex::new(p).with_context(|| format!("Invalid {what} regex `{p}`")))
        .collect()
}

async fn backend(
    request: &Request,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ArtifactBackend> {
    if let Some(staging) = &request.local_staging_dir {
        let root =
            WorkflowOutputRoot::for_local(Some(&request.run_id), Some(request.platform), None)?;
        return Ok(
            ArtifactBackend::local(staging, root)?.allow_unverified(request.allow_unverified)
        );
    }
    let run = crate::RunRequest {
        run_id: request.run_id.clone(),
        platform: request.platform,
        repository: request.run_github_repo.clone(),
        release_type: None,
        lookup_workflow_run: true,
    };
    let (root, selection) = crate::resolve_run_root(&run, lookup, out)?;
    let client = crate::artifact_reader(
        selection.config().region(),
        request.download_concurrency.max(1),
        lookup,
    )
    .await?;
    Ok(ArtifactBackend::s3(client, root).allow_unverified(request.allow_unverified))
}

/// Runs the fetch. Progress goes to `out`. Every selected artifact is attempted; if any could
/// not be fetched or verified, the error lists them all.
pub async fn run(
    request: &Request,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let include = compile(&request.include, "include")?;
    let exclude = compile(&request.exclude, "exclude")?;
    let backend = backend(request, lookup, out).await?;
    let base_uri = backend.base_uri();
    writeln!(out, "Retrieving artifacts from '{base_uri}'")?;
    let all = backend
        .list_artifacts(None)
        .await
        .context("Failed to list the run's artifacts")?;

    let group = request.artifact_group.as_deref();
    if group.is_none() && request.amdgpu_targets.is_empty() {
        writeln!(
            out,
            "No artifact group or targets specified - downloading all artifacts"
        )?;
    } else {
        let families: Vec<String> =
            TargetSelection::new(group, request.amdgpu_targets.iter().map(String::as_str))
                .families()
                .map(|f| format!("'{f}'"))
                .collect();
        writeln!(
            out,
            "Matching artifact target families: [{}]",
            families.join(", ")
        )?;
    }
    let available = select_by_target(&all, group, &request.amdgpu_targets);
    if available.is_empty() {
        bail!(
            "No matching artifacts for {} exist at '{base_uri}'",
            request.run_id
        );
    }
    let selected = filter_by_regex(available, &include, &exclude);
    if selected.is_empty() {
        bail!(
            "Filtering artifacts for {} resulted in an empty set",
            request.run_id
        );
    }
    writeln!(out, "\nFiltered artifacts to download:")?;
    for e in &selected {
        writeln!(out, "  {base_uri}/{}", e.file_name)?;
    }
    writeln!(out)?;
    if request.dry_run {
        writeln!(out, "Skipping downloads since --dry-run was set")?;
        return Ok(());
    }
    let bytes = selected.iter().map(|e| e.size).sum();
    let backend = backend.with_reporter(Arc::new(
        crate::progress::Progress::for_stderr(request.quiet).with_totals(selected.len(), bytes),
    ));

    fetch_selected(&backend, selected, request, out).await
}

/// Fetches `selected` into the output directory, printing each artifact's line as it is done
/// and a closing totals line; every failure is listed in the error.
async fn fetch_selected(
    backend: &ArtifactBackend,
    selected: Vec<ArtifactEntry>,
    request: &Request,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    fs_err::create_dir_all(&request.output_dir)?;
    let output_dir = request.output_dir.clone();
    storage_backend::blocking(move || artifact_backend::remove_stale_partials(&output_dir)).await?;
    let decode = Arc::new(tokio::sync::Semaphore::new(
        request.extract_concurrency.max(1),
    ));
    // Archives waiting for an unpacking slot wait here, downloaded (removed when done).
    let spool = {
        let dir = request.output_dir.clone();
        storage_backend::blocking(move || file_tree::temp_dir_in(&dir, "download-spool")).await?
    };
    let index = Arc::new(FlattenIndex::default());
    // With cores to spare, each archive is decompressed on a thread of its own.
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let decoder_thread = request.extract_concurrency.max(1).min(selected.len()) * 2 <= cores;
    let started = std::time::Instant::now();
    let total = selected.len();
    // Largest first: the longest transfers start at once instead of ending the run alone.
    let mut selected = selected;
    selected.sort_by(|a, b| {
        b.size
            .cmp(&a.size)
            .then_with(|| a.file_name.cmp(&b.file_name))
    });
    let mut results = futures::stream::iter(selected)
        .map(|entry| {
            let (decode, index) = (decode.clone(), index.clone());
            let spool = spool.path().to_path_buf();
            async move {
                let key = entry.file_name.clone();
                let slots = (decode, spool.as_path(), decoder_thread);
                let result = fetch_one(backend, &entry, request, slots, index).await;
                (key, entry.size, result)
            }
        })
        .buffer_unordered(request.download_concurrency.max(1));

    // Each artifact's line as soon as it is done; the failures again at the end. A line that
    // cannot be written (a closed pipe) stops no fetch.
    let mut failures = Vec::new();
    let mut write_error = None;
    let (mut done, mut bytes) = (0usize, 0u64);
    while let Some((key, size, result)) = results.next().await {
        let line = match result {
            Ok(line) => {
                done += 1;
                bytes += size;
                line
            }
            Err(e) => {
                failures.push(format!("{key}: {e:#}"));
                format!("  !! Failed {key}: {e:#}")
            }
        };
        if let Err(e) = writeln!(out, "{line}") {
            write_error.get_or_insert(e);
        }
    }
    let line = totals_line(done, total, bytes, started.elapsed(), backend.retries());
    if let Err(e) = writeln!(out, "{line}") {
        write_error.get_or_insert(e);
    }
    if failures.is_empty() {
        write_error.map_or(Ok(()), |e| Err(e.into()))
    } else {
        failures.sort();
        bail!(
            "{} of the selected artifacts could not be fetched:\n  {}",
            failures.len(),
            failures.join("\n  ")
        )
    }
}

/// The closing line: artifacts, bytes, wall time, throughput and retries.
pub fn totals_line(
    done: usize,
    total: usize,
    bytes: u64,
    wall: std::time::Duration,
    retries: u64,
) -> String {
    crate::progress::totals_line("Fetched", (done, total), "artifacts", bytes, wall, retries)
}

/// Fetches one artifact; `slots` are the unpacking permits, the directory where archives wait
/// for one, and whether to decompress on a thread of its own.
async fn fetch_one(
    backend: &ArtifactBackend,
    entry: &ArtifactEntry,
    request: &Request,
    slots: (Arc<tokio::sync::Semaphore>, &std::path::Path, bool),
    index: Arc<FlattenIndex>,
) -> anyhow::Result<String> {
    let (decode, spool, decoder_thread) = slots;
    let key = &entry.file_name;
    let mb = |b: u64| format!("{}.{} MiB", b / 1_048_576, (b % 1_048_576) * 10 / 1_048_576);
    let check = |verified: bool| {
        if verified {
            "sha256 verified"
        } else {
            "not verified: no sidecar or recorded SHA-256 (--allow-unverified)"
        }
    };
    if request.mode == Mode::Archives {
        let dest = request.output_dir.join(key);
        // The sidecar is only worth a request when there is a file it could vouch for.
        if dest.is_file()
            && let Some(sha) = backend.expected_sha256(key).await?
            && storage_backend::sha256_file(&dest).await? == sha
        {
            return Ok(format!("  == Cached {key} (sha256 verified)"));
        }
        let got = backend.download_artifact(key, &dest).await?;
        return Ok(format!(
            "  ++ Downloaded {key} ({}, {})",
            mb(got.fetched + got.resumed),
            check(got.verified)
        ));
    }
    let layout = if request.mode == Mode::Extract {
        Layout::Full
    } else {
        Layout::Flatten
    };
    let dir_name = extract_dir_name(key);
    if layout == Layout::Full
        && backend
            .extracted_is_current(key, &request.output_dir)
            .await?
    {
        return Ok(format!(
            "  == Cached '{key}' in '{dir_name}' (sha256 verified earlier)"
        ));
    }
    let got = backend
        .fetch_extracted_limited(
            key,
            &request.output_dir,
            Unpacking {
                layout,
                decoder_thread,
            },
            index,
            &decode,
            spool,
        )
        .await?;
    let (verb, dest) = if layout == Layout::Full {
        ("Extracted", dir_name.to_owned())
    } else {
        ("Flattened", request.output_dir.display().to_string())
    };
    Ok(format!(
        "  ++ {verb} '{key}' to '{dest}' ({}, {} files, {})",
        mb(got.bytes),
        got.extracted.files,
        check(got.verified)
    ))
}

/// Parses `--amdgpu-targets`: comma-separated, trimmed, empties dropped.
pub fn parse_targets(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn totals_line_names_artifacts_bytes_time_rate_and_retries() {
        let line = super::totals_line(15, 16, 3 << 20, std::time::Duration::from_secs(2), 1);
        assert_eq!(
            line,
            "Fetched 15 of 16 artifacts (3.0 MiB) in 2.0 s (1.5 MiB/s), 1 retry"
        );
        let line = super::totals_line(0, 0, 0, std::time::Duration::ZERO, 4);
        assert_eq!(
            line,
            "Fetched 0 of 0 artifacts (0.0 MiB) in 0.0 s (0.0 MiB/s), 4 retries"
        );
    }
}
