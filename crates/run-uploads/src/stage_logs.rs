//! `post_stage_upload`: archives the ninja and ccache logs of one multi-arch build stage and
//! uploads the stage's logs to `logs/{stage}/{family}` (and, for `compiler-runtime`, the build
//! manifest). Everything that can be uploaded is; the run then fails naming what could not.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use storage_backend::{Reporter, StorageBackend, TransferOptions};
use workflow_outputs::{Platform, WorkflowOutputRoot};

use crate::logs::{MANIFEST_PATH, archive_failure, finish, log_dir, ninja_archive, upload_failed};
use crate::{Error, steps};

/// The one stage whose job uploads the build manifest.
pub const MANIFEST_STAGE: &str = "compiler-runtime";

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// The workflow run id.
    pub run_id: String,
    /// The platform of the output paths.
    pub platform: Platform,
    /// The build stage (`compiler-runtime`, `math-libs`, ...).
    pub stage: String,
    /// The GPU family of a per-arch stage, empty for generic stages.
    pub amdgpu_family: String,
    /// The build directory.
    pub build_dir: PathBuf,
    /// zstd level of the ccache archive.
    pub compression_level: i32,
    /// Local staging directory instead of S3.
    pub output_dir: Option<PathBuf>,
    /// Only check that the destination is reachable and writable.
    pub preflight: bool,
    /// Transfer options (dry run, overwrite, concurrency).
    pub options: TransferOptions,
    /// mtime of archive members (`SOURCE_DATE_EPOCH`, else 0).
    pub mtime: u64,
}

impl Plan {
    /// Uploads the logs of stage `stage` for `amdgpu_family` in `build_dir` to run `run_id` on
    /// `platform`: to S3 with the default transfer options, the ccache archive at
    /// [`artifacts::CCACHE_ZSTD_LEVEL`], archive members stamped 0.
    pub fn new(
        run_id: impl Into<String>,
        platform: Platform,
        stage: impl Into<String>,
        amdgpu_family: impl Into<String>,
        build_dir: impl Into<PathBuf>,
    ) -> Self {
        Plan {
            run_id: run_id.into(),
            platform,
            stage: stage.into(),
            amdgpu_family: amdgpu_family.into(),
            build_dir: build_dir.into(),
            compression_level: artifacts::CCACHE_ZSTD_LEVEL,
            output_dir: None,
            preflight: false,
            options: TransferOptions::default(),
            mtime: 0,
        }
    }
}

/// Writes `{build}/logs/ninja_logs.tar.gz` from every `.ninja_log` of the build (names relative
/// to the build dir), printing the reference's lines. Returns the number of files archived.
///
/// # Errors
/// The archive's error, or a failed write to `out`.
pub async fn archive_ninja_logs(
    build_dir: &Path,
    mtime: u64,
    out: &mut dyn Write,
) -> Result<usize, Error> {
    let Some(archive) = ninja_archive(build_dir, mtime).await? else {
        writeln!(out, "[INFO] No .ninja_log files found. Skipping archive.")?;
        return Ok(0);
    };
    for source in &archive.sources {
        let arcname = source.strip_prefix(build_dir).unwrap_or(source);
        writeln!(out, "[+] Archived: {}", arcname.display())?;
    }
    writeln!(
        out,
        "[INFO] Created ninja log archive: {} ({} files)",
        archive.path.display(),
        archive.sources.len()
    )?;
    Ok(archive.sources.len())
}

/// Uploads the build manifest to `{prefix}/manifests/therock_manifest.json` when there is one.
async fn upload_manifest(
    backend: &StorageBackend,
    root: &WorkflowOutputRoot,
    plan: &Plan,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let path = plan.build_dir.join(file_tree::native_path(MANIFEST_PATH));
    if !path.is_file() {
        writeln!(
            out,
            "[INFO] No therock_manifest.json found. Skipping upload."
        )?;
        return Ok(());
    }
    writeln!(out, "[INFO] Uploading manifest {}", path.display())?;
    backend
        .upload_file(&path, &root.manifest_root())
        .await
        .map_err(|source| Error::Manifest { path, source })?;
    Ok(())
}

/// Runs the whole job: its lines to `out`, the bucket resolution to `log`, transfers reported
/// to `reporter`. A missing build directory is not an error (the job may have been cancelled
/// before building).
///
/// # Errors
/// A failed look-up or connection, a failed preflight; else every archive or upload that
/// failed, listed by [`crate::error::combine`].
pub async fn run(
    plan: &Plan,
    reporter: Arc<dyn Reporter>,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), Error> {
    if !plan.build_dir.is_dir() {
        writeln!(
            out,
            "[INFO] Build directory not found: {}. Nothing to upload (job may have been cancelled before building).",
            plan.build_dir.display()
        )?;
        return Ok(());
    }
    let (root, selection) =
        steps::current_run_root(&plan.run_id, plan.platform, None, lookup, log).await?;
    let output_dir = plan.output_dir.as_deref();
    let run_root = root.root();
    let preflight = plan.preflight.then_some(&run_root);
    let backend = steps::backend_or_preflight(
        output_dir,
        plan.options,
        selection.config().region(),
        reporter,
        lookup,
        preflight,
        out,
    )
    .await?;
    let Some(backend) = backend else {
        return Ok(());
    };

    // An archive that cannot be written does not keep the logs from being uploaded.
    let mut failures = Vec::new();
    writeln!(out, "Creating log archives for stage '{}'", plan.stage)?;
    if let Err(e) = archive_ninja_logs(&plan.build_dir, plan.mtime, out).await {
        failures.push(archive_failure("ninja", e, out)?);
    }
    if let Err(e) =
        crate::archive_ccache_logs(&plan.build_dir, plan.mtime, plan.compression_level, out).await
    {
        failures.push(archive_failure("ccache", e, out)?);
    }
    if let Some(logs) = log_dir(&plan.build_dir, out)? {
        let dest = root.log_stage_dir(&plan.stage, &plan.amdgpu_family);
        if let Err(e) = crate::upload_logs(&backend, &logs, &dest, output_dir, out).await {
            failures.push(upload_failed(&backend, e, out)?);
        }
    }
    if plan.stage == MANIFEST_STAGE
        && let Err(e) = upload_manifest(&backend, &root, plan, out).await
    {
        failures.push(upload_failed(&backend, e, out)?);
    }
    finish(&backend, failures)
}
