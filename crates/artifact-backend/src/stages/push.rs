//! `artifact_manager push` (spec §4.7): a stage's artifacts archived in-process and uploaded,
//! each as soon as it is written.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use artifacts::{ArtifactName, Compression};
use build_topology::Checkout;
use futures::StreamExt as _;

use super::{Lookup, RunOptions, joined, load_topology, unknown_stage};
use crate::pipeline::{Lines, TransferError};

/// A resolved `push` command line; [`PushRequest::new`] gives the defaults, the fields change
/// the rest.
#[derive(Clone)]
#[non_exhaustive]
pub struct PushRequest {
    /// The run and backend options.
    pub run: RunOptions,
    /// Where the topology is.
    pub checkout: Checkout,
    /// `--stage` (`all`: what every stage produces).
    pub stage: String,
    /// `--build-dir`.
    pub build_dir: PathBuf,
    /// The compression of archives written from directories.
    pub compression: Compression,
    /// Archives written at once.
    pub compress_concurrency: usize,
    /// Archives uploaded at once.
    pub upload_concurrency: usize,
}

impl PushRequest {
    /// Pushes what `stage` (`all`: every stage) of the topology in `checkout` produces from
    /// `{build_dir}/artifacts`: directories archived with zstd at its default level,
    /// [`crate::pipeline::default_compress_concurrency`] archives written and
    /// `run.concurrency` uploaded at once.
    pub fn new(
        run: RunOptions,
        checkout: Checkout,
        stage: impl Into<String>,
        build_dir: impl Into<PathBuf>,
    ) -> Self {
        let upload_concurrency = run.concurrency.max(1);
        PushRequest {
            run,
            checkout,
            stage: stage.into(),
            build_dir: build_dir.into(),
            compression: Compression::Zstd {
                level: artifacts::DEFAULT_ZSTD_LEVEL,
            },
            compress_concurrency: crate::pipeline::default_compress_concurrency(),
            upload_concurrency,
        }
    }
}

/// What one entry of `{build}/artifacts` becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Job {
    /// An exploded artifact directory to archive.
    Compress { dir: PathBuf, name: String },
    /// An archive uploaded as it is.
    Upload { path: PathBuf, key: String },
}

/// The jobs of `{build}/artifacts`' immediate children whose artifact name is in `produced`, by
/// key; a directory wins over an archive of the same key (which gives a warning line).
fn scan(
    artifacts_dir: &std::path::Path,
    produced: &std::collections::BTreeSet<String>,
    compression: Compression,
) -> Result<(BTreeMap<String, Job>, Vec<String>), TransferError> {
    let format = compression.format().ok_or(TransferError::Compression)?;
    let mut warnings = Vec::new();
    let mut jobs = BTreeMap::new();
    let mut archives = Vec::new();
    let mut children: Vec<_> = fs_err::read_dir(artifacts_dir)?
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|e| e.path())
        .collect();
    children.sort();
    for path in children {
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if path.is_dir() {
            if let Some(name) = ArtifactName::from_dir_name(&file_name)
                && produced.contains(name.name())
            {
                jobs.insert(
                    name.file_name(format),
                    Job::Compress {
                        dir: path,
                        name: file_name,
                    },
                );
            }
        } else if let Some(name) = ArtifactName::from_filename(&file_name)
            && produced.contains(name.name())
        {
            archives.push((file_name, path));
        }
    }
    for (key, path) in archives {
        if jobs.contains_key(&key) {
            warnings.push(format!(
                "  !! WARNING: both {} and the directory {} exist: uploading the archive written from the directory",
                path.display(),
                key.strip_suffix(format.extension())
                    .unwrap_or(&key)
            ));
            continue;
        }
        jobs.insert(key.clone(), Job::Upload { path, key });
    }
    Ok((jobs, warnings))
}

/// Runs `artifact_manager push`: lines to `out`.
pub async fn push(request: &PushRequest, out: &mut dyn Write) -> Result<(), TransferError> {
    let lines = &Lines::new(out);
    let topology = load_topology(&request.checkout).await?;
    let produced = if request.stage == build_topology::ALL_STAGES {
        let all = topology.artifacts_to_push(&request.stage)?;
        lines.line(format!(
            "All stages produced {} artifacts: {}",
            all.len(),
            joined(all.iter().copied())
        ));
        all
    } else {
        if topology.stage(&request.stage).is_err() {
            return Err(unknown_stage(&topology, &request.stage, lines));
        }
        let produced = topology.produced_artifacts(&request.stage)?;
        if produced.is_empty() {
            lines.line(format!("Stage '{}' produces no artifacts", request.stage));
            return Ok(());
        }
        lines.line(format!(
            "Stage '{}' produces {} artifacts: {}",
            request.stage,
            produced.len(),
            joined(produced.iter().copied())
        ));
        produced
    };
    let run_id = request.run.run_id()?;
    let backend = request
        .run
        .backend(
            &run_id,
            request.run.repository.clone(),
            Lookup::Never,
            lines,
        )
        .await?;
    lines.line(format!("Using backend: {}", backend.base_uri()));
    let artifacts_dir = request.build_dir.join("artifacts");
    if let Some(message) = unreadable_dir(&artifacts_dir) {
        lines.line(format!("ERROR: {message}"));
        return Err(TransferError::Reported(message));
    }
    let (jobs, warnings) = {
        let produced = produced.iter().map(|p| (*p).to_owned()).collect();
        let compression = request.compression;
        storage_backend::blocking(move || scan(&artifacts_dir, &produced, compression)).await?
    };
    for warning in warnings {
        lines.line(warning);
    }
    if jobs.is_empty() {
        lines.line("No matching artifacts found to push");
        return Ok(());
    }
    let compress_count = jobs
        .values()
        .filter(|j| matches!(j, Job::Compress { .. }))
        .count();
    lines.line(format!(
        "\nProcessing {} artifacts ({compress_count} to compress, {} pre-compressed)...",
        jobs.len(),
        jobs.len() - compress_count
    ));
    let cache = request.build_dir.join(".upload_cache");
    {
        let cache = cache.clone();
        storage_backend::blocking(move || fs_err::create_dir_all(&cache)).await?;
    }
    let total = jobs.len();
    let started = std::time::Instant::now();
    let (compressed, (uploaded, bytes), failures) =
        run_jobs(request, &backend, jobs, &cache, compress_count, lines).await;
    lines.line(format!(
        "\nCompressed {compressed} artifacts, uploaded {uploaded}"
    ));
    lines.line(storage_backend::totals_line(
        "Uploaded",
        (uploaded, total),
        "artifacts",
        bytes,
        started.elapsed(),
        backend.retries(),
    ));
    if failures.is_empty() {
        // Kept after a failure: the archives written so far are there for a look or a rerun.
        storage_backend::blocking(move || fs_err::remove_dir_all(&cache)).await?;
        return Ok(());
    }
    let message = failure_message(&backend, uploaded, total, &failures);
    lines.line(format!("ERROR: {message}"));
    Err(TransferError::Reported(message))
}

/// What is wrong with the artifacts directory `dir`, if anything: missing, not a directory,
/// or not readable (permission denied, a file where a directory should be), said as it is.
fn unreadable_dir(dir: &std::path::Path) -> Option<String> {
    match fs_err::metadata(dir) {
        Ok(meta) if meta.is_dir() => None,
        Ok(_) => Some(format!("Not a directory: {}", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(format!("Artifacts directory not found: {}", dir.display()))
        }
        Err(e) => Some(format!("Cannot read the artifacts directory: {e}")),
    }
}

/// The closing error of a push that left `failures` (of `total`; `uploaded` went up): once the
/// endpoint was given up on, one error for the run, as the other uploaders give (the endpoint,
/// what the requests met, how many artifacts did not go up); else the artifacts that failed.
fn failure_message(
    backend: &crate::ArtifactBackend,
    uploaded: usize,
    total: usize,
    failures: &[String],
) -> String {
    match backend.unreachable() {
        Some((endpoint, cause)) => format!(
            "endpoint {endpoint} unreachable ({cause}): {} of {total} artifacts not uploaded",
            failures.len()
        ),
        None => format!(
            "Only uploaded {uploaded}/{total} artifacts - {} failed: {}",
            failures.len(),
            failures.join(", ")
        ),
    }
}

/// Compresses (a few at a time, each zstd on several threads) and uploads (as each archive is
/// ready); returns (compressed, (uploaded, their bytes), failed keys sorted).
async fn run_jobs(
    request: &PushRequest,
    backend: &crate::ArtifactBackend,
    jobs: BTreeMap<String, Job>,
    cache: &std::path::Path,
    compress_count: usize,
    lines: &Lines<'_>,
) -> (usize, (usize, u64), Vec<String>) {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let parallel = request
        .compress_concurrency
        .max(1)
        .min(compress_count.max(1));
    let workers = u32::try_from((cores / parallel).max(1)).unwrap_or(1);
    let compress_permits = Arc::new(tokio::sync::Semaphore::new(parallel));
    let mut compressed = 0;
    let mut uploaded = 0;
    let mut bytes = 0;
    let mut failures = Vec::new();
    // Pre-compressed archives first, then the directories.
    let mut ordered: Vec<(String, Job)> = jobs.into_iter().collect();
    ordered.sort_by_key(|(key, job)| (matches!(job, Job::Compress { .. }), key.clone()));
    let mut results = futures::stream::iter(ordered)
        .map(|(key, job)| {
            let permits = compress_permits.clone();
            async move {
                let (path, was_compressed, sha, index_sha) = match job {
                    // An archive made elsewhere: its member index's digest, when it has one.
                    Job::Upload { path, .. } => {
                        let at = path.clone();
                        let index = storage_backend::blocking(move || {
                            artifacts::member_index::read_from_file(&at).ok().flatten()
                        })
                        .await;
                        (path, false, None, index.map(|(_, sha)| sha))
                    }
                    Job::Compress { dir, name } => {
                        let _permit = permits.acquire_owned().await;
                        let dest = cache.join(&key);
                        lines.line(format!("  ++ Compressing {name}"));
                        let compression = request.compression;
                        let packed = storage_backend::blocking(move || {
                            artifacts::pack_artifact_dir(&dir, &dest, compression, workers)
                        })
                        .await;
                        match packed {
                            Ok(p) => {
                                lines.line(format!(
                                    "  ++ Compressed {name} (files={}, uncompressed_size={} bytes) -> {key} (compressed_size={} bytes, sha256={})",
                                    p.files, p.uncompressed_size, p.archive.size, p.archive.sha256
                                ));
                                (
                                    p.archive.path,
                                    true,
                                    Some(p.archive.sha256),
                                    p.archive.member_index_sha256,
                                )
                            }
                            Err(e) => {
                                lines.line(format!("  !! Failed to compress {name}: {e:#}"));
                                return (key, false, 0, false);
                            }
                        }
                    }
                };
                let size = {
                    let path = path.clone();
                    storage_backend::blocking(move || fs_err::metadata(&path).map_or(0, |m| m.len()))
                        .await
                };
                lines.line(format!("  ++ Uploading {key} (compressed_size={size} bytes)"));
                let result = backend
                    .upload_artifact_indexed(&path, &key, sha, index_sha.as_deref())
                    .await;
                match &result {
                    Ok(sha) => lines.line(format!(
                        "  ++ Uploaded {key} and {key}.sha256sum (sha256={sha})"
                    )),
                    // Once the endpoint is given up on, the closing error says it for all.
                    Err(_) if backend.unreachable().is_some() => {}
                    Err(e) => lines.line(format!("  !! Failed to upload {key}: {e:#}")),
                }
                (key, was_compressed, size, result.is_ok())
            }
        })
        .buffer_unordered(request.upload_concurrency.max(1) + parallel);
    while let Some((key, was_compressed, size, ok)) = results.next().await {
        if was_compressed {
            compressed += 1;
        }
        if ok {
            uploaded += 1;
            bytes += size;
        } else {
            failures.push(key);
        }
    }
    failures.sort();
    (compressed, (uploaded, bytes), failures)
}
