//! `post_build_upload`: archives a build's ninja and ccache logs, uploads the logs and the
//! manifest of an artifact group, and links them from the job summary (spec §11).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use storage_backend::{Overwrite, Reporter, StorageBackend, TransferOptions};
use workflow_outputs::{ForkEvidence, Platform, RunContext, WorkflowOutputRoot};

use crate::logs::{MANIFEST_PATH, archive_failure, finish, log_dir, ninja_archive, upload_failed};
use crate::{Error, combine, steps};

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
}

impl Plan {
    /// Archives and uploads the logs of `artifact_group` in `build_dir` for the run in
    /// `GITHUB_RUN_ID` (set [`Plan::run_id`]): to S3, every object written, with
    /// [`storage_backend::DEFAULT_CONCURRENCY`] uploads at once, archive members stamped 0.
    pub fn new(artifact_group: impl Into<String>, build_dir: impl Into<PathBuf>) -> Self {
        Plan {
            artifact_group: artifact_group.into(),
            build_dir: build_dir.into(),
            upload: true,
            run_id: None,
            job_status: None,
            output_dir: None,
            dry_run: false,
            preflight: false,
            overwrite: Overwrite::Always,
            concurrency: storage_backend::DEFAULT_CONCURRENCY,
            mtime: 0,
        }
    }
}

/// Writes `{build}/logs/ninja_logs.tar.gz` from every `.ninja_log` of the build, printing the
/// reference's lines. Returns the number of files archived.
///
/// # Errors
/// The archive's error, or a failed write to `out`.
pub async fn archive_ninja_logs(
    build_dir: &Path,
    mtime: u64,
    out: &mut dyn Write,
) -> Result<usize, Error> {
    writeln!(
        out,
        "[*] Create ninja log archive from: {}",
        build_dir.display()
    )?;
    writeln!(out, "[*] Path glob: **/{}", artifacts::NINJA_LOG)?;
    let Some(archive) = ninja_archive(build_dir, mtime).await? else {
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
) -> Result<(), Error> {
    let Some(logs) = log_dir(&plan.build_dir, out)? else {
        return Ok(());
    };
    writeln!(out, "Uploading logs")?;
    let dest = root.log_dir(&plan.artifact_group);
    // Every upload is attempted; the error names each that failed.
    let mut failures = Vec::new();
    if let Err(e) = crate::upload_logs(backend, &logs, &dest, plan.output_dir.as_deref(), out).await
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
            Err(source) => failures.push(Error::Flattened { path, source }),
        }
    }
    combine(failures)
}

/// The job summary lines (spec §11.7). With `staging` (an `--output-dir` run, nothing
/// uploaded) each link is the staged file's absolute path instead of its S3 URL, and an index
/// page that was not staged is linked as its directory.
pub(crate) fn summary_lines(
    root: &WorkflowOutputRoot,
    group: &str,
    build_dir: &Path,
    job_status: Option<&str>,
    staging: Option<&Path>,
) -> Vec<String> {
    let link = |location: storage_location::StorageLocation| match staging
        .and_then(|dir| location.local_path(&std::path::absolute(dir).ok()?).ok())
    {
        Some(path) => {
            let shown = if path.file_name().is_some_and(|n| n == "index.html") && !path.exists() {
                path.parent().map_or(path.clone(), Path::to_path_buf)
            } else {
                path
            };
            // Angle brackets keep a path with spaces one link; `/` works on every platform.
            format!("<{}>", shown.to_string_lossy().replace('\\', "/"))
        }
        None => location.https_url(),
    };
    let mut lines = vec![format!("[Build Logs]({})", link(root.log_index(group)))];
    if build_dir
        .join("logs")
        .join("build_observability.html")
        .is_file()
    {
        lines.push(format!(
            "[Build Observability]({})",
            link(root.build_observability(group))
        ));
    }
    if job_status.is_none_or(|s| s.is_empty() || s == "success") {
        lines.push(format!("[Artifacts]({})", link(root.artifact_index())));
    }
    lines.push(format!(
        "[TheRock Manifest]({})",
        link(root.manifest(group))
    ));
    lines
}

/// Where and how a run uploads: the run's root and the backend.
struct Target {
    root: WorkflowOutputRoot,
    backend: StorageBackend,
}

/// The run's root and the backend to upload with, when uploading.
async fn upload_target(
    plan: &Plan,
    reporter: Arc<dyn Reporter>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Target>, Error> {
    if !plan.upload {
        return Ok(None);
    }
    let run_id = plan.run_id.as_deref().unwrap_or_default();
    let fork = steps::is_pr_from_fork(lookup).await?;
    let selection = RunContext::from_lookup(lookup)?.select_bucket(ForkEvidence::Event {
        is_pr_from_fork: fork,
    });
    let root = WorkflowOutputRoot::for_workflow_run(run_id, Platform::host(), &selection)?;
    let mut options = TransferOptions::default();
    options.concurrency = plan.concurrency;
    options.overwrite = plan.overwrite;
    options.dry_run = plan.dry_run;
    let backend = StorageBackend::for_upload(
        plan.output_dir.as_deref(),
        options,
        selection.config().region(),
        reporter,
        lookup,
    )
    .await?;
    Ok(Some(Target { root, backend }))
}

/// Uploads the manifest; a missing one is an error naming its path.
async fn upload_manifest(
    backend: &StorageBackend,
    root: &WorkflowOutputRoot,
    plan: &Plan,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let path = plan.build_dir.join(file_tree::native_path(MANIFEST_PATH));
    if !path.is_file() {
        return Err(Error::NoManifest(path));
    }
    writeln!(out, "[INFO] Uploading manifest {}", path.display())?;
    backend
        .upload_file(&path, &root.manifest(&plan.artifact_group))
        .await
        .map_err(|source| Error::Manifest { path, source })?;
    Ok(())
}

/// Runs the whole job, printing its lines to `out`. Transfers report to `reporter`; after the
/// uploads (unless a dry run) `totals` gives the totals line from the time they took, the
/// retries and the files handed over and failed ([`StorageBackend::file_counts`]). Logs are uploaded and the summary written even when the manifest is missing; the
/// run then fails naming it.
///
/// # Errors
/// A missing build directory, a run id missing, a failed look-up or connection; else every
/// archive or upload that failed, listed by [`combine`].
pub async fn run(
    plan: &Plan,
    reporter: Arc<dyn Reporter>,
    totals: &dyn Fn(Duration, u64, (usize, usize)) -> String,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    if !plan.build_dir.is_dir() {
        return Err(Error::NoBuildDir(plan.build_dir.clone()));
    }
    if plan.upload && plan.run_id.is_none() {
        return Err(Error::NoRunId);
    }
    let target = upload_target(plan, reporter, lookup).await?;

    if plan.preflight {
        let Some(Target { root, backend }) = &target else {
            return Err(Error::PreflightWithoutUpload);
        };
        let line = backend
            .preflight_upload(&root.root(), plan.output_dir.as_deref())
            .await?;
        writeln!(out, "{line}")?;
        return Ok(());
    }

    // A log archive that cannot be written does not keep the logs from being uploaded.
    let mut failures = Vec::new();
    header(out, "Creating Ninja log archive", 26)?;
    if let Err(e) = archive_ninja_logs(&plan.build_dir, plan.mtime, out).await {
        failures.push(archive_failure("ninja", e, out)?);
    }
    header(out, "Creating ccache log archive", 27)?;
    if let Err(e) = crate::archive_ccache_logs(
        &plan.build_dir,
        plan.mtime,
        artifacts::CCACHE_ZSTD_LEVEL,
        out,
    )
    .await
    {
        failures.push(archive_failure("ccache", e, out)?);
    }
    let Some(Target { root, backend }) = target else {
        return combine(failures);
    };

    let started = Instant::now();
    header(out, "Upload log", 10)?;
    let logs = match upload_logs(&backend, &root, plan, out).await {
        Ok(()) => None,
        Err(e) => Some(upload_failed(&backend, e, out)?),
    };

    header(out, "Upload manifest", 16)?;
    let manifest = match upload_manifest(&backend, &root, plan, out).await {
        Ok(()) => None,
        Err(e) => Some(upload_failed(&backend, e, out)?),
    };
    if !plan.dry_run {
        writeln!(
            out,
            "{}",
            totals(started.elapsed(), backend.retries(), backend.file_counts())
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
        plan.output_dir.as_deref(),
    ) {
        writeln!(out, "Writing job summary:\n{line}")?;
        steps::append_step_summary(&line, lookup).await?;
    }

    failures.extend(logs);
    failures.extend(manifest);
    finish(&backend, failures)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use workflow_outputs::{Platform, WorkflowOutputRoot};

    use super::summary_lines;

    /// Uploading to S3, the links are the bucket's URLs (spec §18.9); staging locally, the
    /// staged paths, an index page that was not staged shown as its directory.
    #[test]
    fn summary_links_follow_where_the_files_went() {
        let root = WorkflowOutputRoot::new(
            "therock-ci-artifacts-external",
            workflow_outputs::ExternalRepo::parse("Fork-TheRock/").unwrap(),
            "12345",
            Platform::Linux,
        )
        .unwrap();
        let build = tempfile::tempdir().unwrap();
        assert_eq!(
            summary_lines(&root, "gfx94X-dcgpu", build.path(), Some("success"), None),
            [
                "[Build Logs](https://therock-ci-artifacts-external.s3.amazonaws.com/Fork-TheRock/12345-linux/logs/gfx94X-dcgpu/index.html)",
                "[Artifacts](https://therock-ci-artifacts-external.s3.amazonaws.com/Fork-TheRock/12345-linux/index.html)",
                "[TheRock Manifest](https://therock-ci-artifacts-external.s3.amazonaws.com/Fork-TheRock/12345-linux/manifests/gfx94X-dcgpu/therock_manifest.json)",
            ]
        );
        let staging = tempfile::tempdir().unwrap();
        let logs = staging
            .path()
            .join("Fork-TheRock/12345-linux/logs/gfx94X-dcgpu");
        fs_err::create_dir_all(&logs).unwrap();
        fs_err::write(logs.join("index.html"), "").unwrap();
        let shown = |p: &Path| p.to_string_lossy().replace('\\', "/");
        let run = staging.path().join("Fork-TheRock/12345-linux");
        assert_eq!(
            summary_lines(
                &root,
                "gfx94X-dcgpu",
                build.path(),
                None,
                Some(staging.path())
            ),
            [
                format!("[Build Logs](<{}>)", shown(&logs.join("index.html"))),
                format!("[Artifacts](<{}>)", shown(&run)),
                format!(
                    "[TheRock Manifest](<{}>)",
                    shown(&run.join("manifests/gfx94X-dcgpu/therock_manifest.json"))
                ),
            ]
        );
    }
}
