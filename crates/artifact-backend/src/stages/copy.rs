//! `artifact_manager copy` (spec §4.8): an earlier run's stage outputs copied server-side into
//! this run.

use std::collections::BTreeSet;
use std::io::Write;

use build_topology::{Checkout, Targets, choose_files};
use futures::StreamExt as _;
use workflow_outputs::GithubRepository;

use super::{Lookup, RunOptions, file_names, joined, load_topology, unknown_stage};
use crate::ArtifactBackend;
use crate::pipeline::{Lines, TransferError};

/// A resolved `copy` command line; [`CopyRequest::new`] gives the defaults, the fields change
/// the rest.
#[derive(Clone)]
#[non_exhaustive]
pub struct CopyRequest {
    /// The destination run and backend options.
    pub run: RunOptions,
    /// Where the topology and family table are.
    pub checkout: Checkout,
    /// The target options.
    pub targets: Targets,
    /// `--stage`, comma-separated.
    pub stages: String,
    /// `--source-run-id`.
    pub source_run_id: String,
    /// `--source-repository` (else `GITHUB_REPOSITORY`, else `ROCm/TheRock`).
    pub source_repository: Option<GithubRepository>,
    /// Copies at once.
    pub concurrency: usize,
    /// List, copy nothing.
    pub dry_run: bool,
    /// `--allow-empty`: finding no archive at all is not an error.
    pub allow_empty: bool,
}

impl CopyRequest {
    /// Copies what `stages` (comma-separated) of the topology in `checkout` produced in run
    /// `source_run_id` (of `GITHUB_REPOSITORY`, else `ROCm/TheRock`) into the run of `run`:
    /// every target, `run.concurrency` copies at once, finding no archive failing.
    pub fn new(
        run: RunOptions,
        checkout: Checkout,
        stages: impl Into<String>,
        source_run_id: impl Into<String>,
    ) -> Self {
        let concurrency = run.concurrency.max(1);
        CopyRequest {
            run,
            checkout,
            targets: Targets::default(),
            stages: stages.into(),
            source_run_id: source_run_id.into(),
            source_repository: None,
            concurrency,
            dry_run: false,
            allow_empty: false,
        }
    }
}

/// Runs `artifact_manager copy`: lines to `out`.
pub async fn copy(request: &CopyRequest, out: &mut dyn Write) -> Result<(), TransferError> {
    let lines = &Lines::new(out);
    let topology = load_topology(&request.checkout).await?;
    let stages: Vec<&str> = request
        .stages
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if stages.is_empty() {
        return Err(TransferError::Usage("--stage names no stage".to_owned()));
    }
    let mut produced: BTreeSet<&str> = BTreeSet::new();
    for stage in &stages {
        if topology.stage(stage).is_err() {
            return Err(unknown_stage(&topology, stage, lines));
        }
    }
    for stage in &stages {
        let own = topology.produced_artifacts(stage)?;
        lines.line(format!(
            "Stage '{stage}' produces {} artifacts: {}",
            own.len(),
            joined(own.iter().copied())
        ));
        produced.extend(own);
    }
    if produced.is_empty() {
        lines.line("Specified stages produce no artifacts");
        return Ok(());
    }
    let targets = request
        .targets
        .resolve(&request.checkout, &mut lines.writer())?;
    let source = request
        .run
        .backend(
            &request.source_run_id,
            request.source_repository.clone(),
            Lookup::Always,
            lines,
        )
        .await?;
    let dest_run = request.run.run_id()?;
    let dest = request
        .run
        .backend(
            &dest_run,
            request.run.repository.clone(),
            Lookup::Never,
            lines,
        )
        .await?;
    lines.line(format!("Source: {}", source.base_uri()));
    lines.line(format!("Dest:   {}", dest.base_uri()));
    let listed = source
        .list_artifacts(None)
        .await
        .map_err(|e| TransferError::List {
            uri: source.base_uri(),
            source: e,
        })?;
    lines.line(format!("Found {} artifacts in source", listed.len()));
    let chosen = choose_files(&produced, &targets, &file_names(&listed), &BTreeSet::new());
    if chosen.is_empty() {
        lines.line("No matching artifacts found to copy");
        if request.allow_empty {
            return Ok(());
        }
        let root = source.root();
        let message = format!(
            "no archive of stages {} for targets [{}] in run {}: bucket '{}', prefix '{}/' ({} archives there); pass --allow-empty if that is expected",
            stages.join(", "),
            targets.join(", "),
            request.source_run_id,
            root.bucket(),
            root.prefix(),
            listed.len()
        );
        lines.line(format!("ERROR: {message}"));
        return Err(TransferError::Reported(message));
    }
    if request.dry_run {
        lines.line(format!("\nDry run: would copy {} artifacts:", chosen.len()));
        for key in &chosen {
            lines.line(format!("  {key}"));
        }
        return Ok(());
    }
    copy_all(&source, &dest, chosen, request.concurrency, lines).await
}

/// Copies `chosen` from `source` to `dest`, `concurrency` at once, then the summary lines.
async fn copy_all(
    source: &ArtifactBackend,
    dest: &ArtifactBackend,
    chosen: Vec<String>,
    concurrency: usize,
    lines: &Lines<'_>,
) -> Result<(), TransferError> {
    lines.line(format!("\nCopying {} artifacts...", chosen.len()));
    let total = chosen.len();
    let mut results = futures::stream::iter(chosen)
        .map(|key| async move {
            lines.line(format!("  ++ Copying {key}"));
            let result = dest.copy_artifact(&key, source).await;
            if let Err(e) = &result {
                lines.line(format!("  !! Failed to copy {key}: {e:#}"));
            }
            (key, result)
        })
        .buffer_unordered(concurrency.max(1));
    let mut failures = Vec::new();
    while let Some((key, result)) = results.next().await {
        if result.is_err() {
            failures.push(key);
        }
    }
    lines.line(format!(
        "\nCopied {}/{total} artifacts",
        total - failures.len()
    ));
    if failures.is_empty() {
        return Ok(());
    }
    failures.sort();
    lines.line(format!(
        "ERROR: {} artifacts failed to copy:",
        failures.len()
    ));
    for key in &failures {
        lines.line(format!("  - {key}"));
    }
    Err(TransferError::Reported(format!(
        "{} artifacts failed to copy",
        failures.len()
    )))
}
