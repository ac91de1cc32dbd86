//! `post_build_upload`: archives a build's ninja and ccache logs, uploads the logs and the
//! manifest of an artifact group, and links them from the job summary (spec §11).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use storage_backend::{Overwrite, StorageBackend, TransferOptions};
use workflow_outputs::{ForkEvidence, Platform, RunContext, WorkflowOutputRoot};

/// Where the manifest is, relative to the build dir.
pub const MANIFEST_PATH: &str = "base/aux-overlay/build/therock_manifest.json";

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
#[expect(clippy::struct_excessive_bools, reason = "resolved command-line flags")]
pub struct Plan {
    /// The artifact group.
    pub artifact_group: String,
    /// The build directory.
    pub build_dir: PathBuf,
    /// Upload (else only archive the logs).
    pub upload: bool,
    /// The workflow run id (required when uploading).
    pub run_id: Option<String>,
    /// The job status (`success`, `failure`, ...).
    pub job_status: Option<String>,
    /// Local staging directory instead of S3.
    pub output_dir: Option<PathBuf>,
    /// Print the plan, change nothing remote.
    pub dry_run: bool,
    /// Only check that the destination is reachable and writable.
    pub preflight: bool,
    /// Existing objects.
    pub overwrite: Overwrite,
    /// Files uploaded at once.
    pub concurrency: usize,
    /// mtime of archive members (`SOURCE_DATE_EPOCH`, else 0).
    pub mtime: u64,
    /// No progress bars.
    pub quiet: bool,
}

/// Writes `{build}/logs/ninja_logs.tar.gz` from every `.ninja_log` of the build, printing the
/// reference's lines. Returns the number of files archived.
pub fn archive_ninja_logs(
    build_dir: &Path,
    mtime: u64,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    writeln!(
        out,
        "[*] Create ninja log archive from: {}",
        build_dir.display()
    )?;
    writeln!(out, "[*] Path glob: **/{}", artifacts::NINJA_LOG)?;
    let Some(archive) = artifacts::archive_ninja_logs(build_dir, mtime)? else {
        writeln!(out, "No ninja log files found to archive... Skipping")?;
        return Ok(0);
    };
    if archive.replaced {
        writeln!(
            out,
            "NOTE: Archive exists, replacing it: {}",
            archive.path.display()
        )?;
    }
    writeln!(out, "[+] Create archive: {}", archive.path.display())?;
    for source in &archive.sources {
        writeln!(out, "[+]  Add: {}", source.display())?;
    }
    writeln!(out, "[*] Files Added: {}", archive.sources.len())?;
    Ok(archive.sources.len())
}

/// Writes `{build}/logs/ccache_logs.tar.zst` (zstd `level`) from the files directly in
/// `{build}/logs/ccache/`, printing the reference's lines; nothing when there are none.
pub fn archive_ccache_logs(
    build_dir: &Path,
    mtime: u64,
    level: i32,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    let Some(archive) = artifacts::archive_ccache_logs(build_dir, mtime, level)? else {
        return Ok(0);
    };
    for source in &archive.sources {
        let name = source.file_name().unwrap_or_default().to_string_lossy();
        writeln!(out, "[+] Archived ccache log: {name}")?;
    }
    writeln!(
        out,
        "[INFO] Created ccache_logs.tar.zst ({}MB from {} files)",
        archive.archive_bytes / 1_048_576,
        archive.sources.len()
    )?;
    Ok(archive.sources.len())
}

fn header(out: &mut dyn Write, title: &str, underline: usize) -> std::io::Result<()> {
    writeln!(out, "{title}")?;
    writeln!(out, "{}", "-".repeat(underline))
}

/// Uploads `{build}/logs` (all but anything under a `ccache` directory) to the group's log dir,
/// plus flattened copies of the build profile summaries.
async fn upload_logs(
    backend: &StorageBackend,
    root: &WorkflowOutputRoot,
    plan: &Plan,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let Some(logs) = crate::uploads::log_dir(&plan.build_dir, out)? else {
        return Ok(());
    };
    writeln!(out, "Uploading logs")?;
    let dest = root.log_dir(&plan.artifact_group);
    // Every upload is attempted; the error names each that failed.
    let mut failures = Vec::new();
    if let Err(e) =
        crate::uploads::upload_logs(backend, &logs, &dest, plan.output_dir.as_deref(), out).await
    {
        failures.push(e);
    }
    let prof = logs.join("therock-build-prof");
    for name in ["comp-summary.html", "comp-summary.md"] {
        let path = prof.join(name);
        if !path.is_file() {
            continue;
        }
        match backend
            .upload_file(&path, &root.log_file(&plan.artifact_group, name))
            .await
        {
            Ok(_) => writeln!(out, "[INFO] Uploaded {} (flattened)", path.display())?,
            Err(e) => failures.push(
                anyhow::Error::new(e)
                    .context(format!("Failed to upload `{}` (flattened)", path.display())),
            ),
        }
    }
    crate::uploads::combine(failures)
}

/// The job summary lines (spec §11.7).
pub fn summary_lines(
    root: &WorkflowOutputRoot,
    group: &str,
    build_dir: &Path,
    job_status: Option<&str>,
) -> Vec<String> {
    let mut lines = vec![format!(
        "[Build Logs]({})",
        root.log_index(group).https_url()
    )];
    if build_dir
        .join("logs")
        .join("build_observability.html")
        .is_file()
    {
        lines.push(format!(
            "[Build Observability]({})",
            root.build_observability(group).https_url()
        ));
    }
    if job_status.is_none_or(|s| s.is_empty() || s == "success") {
        lines.push(format!(
            "[Artifacts]({})",
            root.artifact_index().https_url()
        ));
    }
    lines.push(format!(
        "[TheRock Manifest]({})",
        root.manifest(group).https_url()
    ));
    lines
}

/// Where and how a run uploads: the run's root, the backend, and the progress reporter that
/// counts the transfers for the totals line.
struct Target {
    root: WorkflowOutputRoot,
    backend: StorageBackend,
    progress: std::sync::Arc<crate::progress::Progress>,
}

/// The run's root and the backend to upload with, when uploading.
async fn upload_target(
    plan: &Plan,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<Target>> {
    if !plan.upload {
        return Ok(None);
    }
    let run_id = plan.run_id.as_deref().unwrap_or_default();
    let fork = github_actions::is_pr_from_fork_with(lookup)
        .context("Cannot tell whether this run is a pull request from a fork")?;
    let selection = RunContext::from_lookup(lookup)?.select_bucket(ForkEvidence::Event {
        is_pr_from_fork: fork,
    });
    let root = WorkflowOutputRoot::for_workflow_run(run_id, Platform::host(), &selection)?;
    let options = TransferOptions {
        concurrency: plan.concurrency,
        overwrite: plan.overwrite,
        dry_run: plan.dry_run,
        ..TransferOptions::default()
    };
    let progress = std::sync::Arc::new(crate::progress::Progress::for_stderr(plan.quiet));
    let backend = crate::uploads::backend_reporting(
        plan.output_dir.as_deref(),
        options,
        selection.config().region(),
        progress.clone(),
        lookup,
    )
    .await?;
    Ok(Some(Target {
        root,
        backend,
        progress,
    }))
}

/// Uploads the manifest; a missing one is an error naming its path.
async fn upload_manifest(
    backend: &StorageBackend,
    root: &WorkflowOutputRoot,
    plan: &Plan,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let path = plan.build_dir.join(MANIFEST_PATH);
    if !path.is_file() {
        bail!("therock_manifest.json not found at `{}`", path.display());
    }
    writeln!(out, "[INFO] Uploading manifest {}", path.display())?;
    backend
        .upload_file(&path, &root.manifest(&plan.artifact_group))
        .await
        .with_context(|| format!("Failed to upload the manifest `{}`", path.display()))?;
    Ok(())
}

/// Runs the whole job. Progress goes to `out`. Logs are uploaded and the summary written even
/// when the manifest is missing; the run then fails naming it.
pub async fn run(
    plan: &Plan,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if !plan.build_dir.is_dir() {
        bail!(
            "Build directory `{}` not found. Skipping upload! This can be due to the CI job being cancelled before the build was started.",
            plan.build_dir.display()
        );
    }
    if plan.upload && plan.run_id.is_none() {
        bail!("when --upload is true, --run-id must also be set");
    }
    let target = upload_target(plan, lookup).await?;

    if plan.preflight {
        let Some(Target { root, backend, .. }) = &target else {
            bail!("--preflight needs --upload and --run-id");
        };
        crate::uploads::preflight(backend, &root.root(), plan.output_dir.as_deref(), out).await?;
        return Ok(());
    }

    // A log archive that cannot be written does not keep the logs from being uploaded.
    let mut failures = Vec::new();
    header(out, "Creating Ninja log archive", 26)?;
    if let Err(e) = archive_ninja_logs(&plan.build_dir, plan.mtime, out) {
        writeln!(out, "[ERROR] {e:#}")?;
        failures.push(e.context("Failed to archive the ninja logs"));
    }
    header(out, "Creating ccache log archive", 27)?;
    if let Err(e) = archive_ccache_logs(
        &plan.build_dir,
        plan.mtime,
        artifacts::CCACHE_ZSTD_LEVEL,
        out,
    ) {
        writeln!(out, "[ERROR] {e:#}")?;
        failures.push(e.context("Failed to archive the ccache logs"));
    }
    let Some(Target {
        root,
        backend,
        progress,
    }) = target
    else {
        return crate::uploads::combine(failures);
    };

    let started = std::time::Instant::now();
    header(out, "Upload log", 10)?;
    let logs = upload_logs(&backend, &root, plan, out).await;
    if let Err(e) = &logs {
        writeln!(out, "[ERROR] {e:#}")?;
    }

    header(out, "Upload manifest", 16)?;
    let manifest = upload_manifest(&backend, &root, plan, out).await;
    if let Err(e) = &manifest {
        writeln!(out, "[ERROR] {e:#}")?;
    }
    if !plan.dry_run {
        let tally = progress.tally();
        writeln!(
            out,
            "{}",
            crate::progress::totals_line(
                "Uploaded",
                (tally.finished, tally.started),
                "files",
                tally.bytes,
                started.elapsed(),
                backend.retries(),
            )
        )?;
    }

    header(out, "Write github actions build summary", 20)?;
    writeln!(out, "Adding links to job summary for {}", root.prefix())?;
    if !plan
        .build_dir
        .join("logs")
        .join("build_observability.html")
        .is_file()
    {
        writeln!(out, "[INFO] Build Observability: Not generated")?;
    }
    for line in summary_lines(
        &root,
        &plan.artifact_group,
        &plan.build_dir,
        plan.job_status.as_deref(),
    ) {
        writeln!(out, "Writing job summary:\n{line}")?;
        github_actions::append_step_summary_with(&line, lookup)?;
    }

    failures.extend(logs.err());
    failures.extend(manifest.err());
    crate::uploads::combine(failures)
}
