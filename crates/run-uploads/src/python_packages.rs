//! `upload_python_packages`: uploads built wheels and sdists with the pages pip reads
//! (package-index's `python` module) to the run's Python package prefix, or a named bucket,
//! and sets the step outputs and summary that name the index.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use package_index::python;
use storage_backend::{Reporter, TransferOptions};
use workflow_outputs::{Platform, WorkflowOutputRoot};

use crate::{Error, KeyError, check_key_component, steps};

/// An upload of Python packages.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// The directory of built packages (its `dist/` subdirectory when there is one).
    pub packages_dir: PathBuf,
    /// The artifact group (single-arch; unused with `multiarch`).
    pub artifact_group: String,
    /// The current run.
    pub run_id: String,
    /// Upload to this bucket (no fork prefix, this machine's platform) instead of the run's.
    pub bucket: Option<String>,
    /// Multi-arch layout: no group in the path; per-family pages or none.
    pub multiarch: bool,
    /// Stage into this local directory instead of S3 (no step outputs then).
    pub output_dir: Option<PathBuf>,
    /// Transfer options (a dry run uploads nothing).
    pub options: TransferOptions,
    /// Only prove that the destination can be written.
    pub preflight: bool,
}

impl Plan {
    /// Uploads the packages of `packages_dir` built for `artifact_group` to run `run_id`: the
    /// run's own bucket, one index per family, to S3 with the default transfer options.
    pub fn new(
        packages_dir: impl Into<PathBuf>,
        artifact_group: impl Into<String>,
        run_id: impl Into<String>,
    ) -> Self {
        Plan {
            packages_dir: packages_dir.into(),
            artifact_group: artifact_group.into(),
            run_id: run_id.into(),
            bucket: None,
            multiarch: false,
            output_dir: None,
            options: TransferOptions::default(),
            preflight: false,
        }
    }
}

impl Plan {
    /// Checks the artifact group against the layout before anything else: a single-arch
    /// upload needs one that can be a key component; a multi-arch one has no group in its
    /// paths (a group given anyway is logged as unused).
    ///
    /// # Errors
    /// [`KeyError::NoArtifactGroup`], or the group's [`check_key_component`] error.
    pub fn check_group(&self) -> Result<(), KeyError> {
        if self.multiarch {
            if !self.artifact_group.is_empty() {
                tracing::warn!(
                    "--artifact-group {} is not used with --multiarch: the multi-arch layout has no group in its paths",
                    self.artifact_group
                );
            }
            return Ok(());
        }
        if self.artifact_group.is_empty() {
            return Err(KeyError::NoArtifactGroup);
        }
        check_key_component(&self.artifact_group, "artifact group")
    }
}

/// Uploads the packages and their pages: progress to `out`, the bucket resolution to `log`;
/// then the step outputs and summary (not with a staging directory) and `[INFO] Done!`.
///
/// # Errors
/// A missing packages directory, the run root, package-index's errors, the backend, and the
/// step files.
pub async fn run(
    plan: &Plan,
    reporter: Arc<dyn Reporter>,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), Error> {
    let output_dir = plan.output_dir.as_deref();
    let pages = python::Plan {
        packages_dir: file_tree::existing_dir(&plan.packages_dir, "Packages root directory")?,
        artifact_group: plan.artifact_group.clone(),
        run_id: plan.run_id.clone(),
        multiarch: plan.multiarch,
        output_dir: plan.output_dir.clone(),
        dry_run: plan.options.dry_run,
    };
    pages.print(out)?;

    // The named bucket (no fork prefix, host platform), else the run's.
    let (root, region) = if let Some(bucket) = &plan.bucket {
        let root = WorkflowOutputRoot::new(
            bucket.clone(),
            workflow_outputs::ExternalRepo::NONE,
            &plan.run_id,
            Platform::host(),
        )?;
        (root, storage_backend::DEFAULT_REGION.to_owned())
    } else {
        let (root, selection) =
            steps::current_run_root(&plan.run_id, Platform::host(), None, lookup, log).await?;
        (root, selection.config().region().to_owned())
    };
    let group = if plan.multiarch {
        ""
    } else {
        &plan.artifact_group
    };
    let location = root.python_packages(group);
    let preflight = plan.preflight.then_some(&location);
    let backend = steps::backend_or_preflight(
        output_dir,
        plan.options,
        &region,
        reporter,
        lookup,
        preflight,
        out,
    )
    .await?;
    let Some(backend) = backend else {
        return Ok(());
    };
    let shown = storage_backend::shown(output_dir, &location);
    let layout = python::publish(&backend, &pages, &location, &shown, out).await?;
    if output_dir.is_none() {
        let dry_run = plan.options.dry_run;
        python::set_outputs(&location, &layout, Platform::host(), dry_run, lookup, out)?;
    }
    writeln!(out)?;
    writeln!(out, "[INFO] Done!")?;
    Ok(())
}

#[cfg(test)]
mod tests;
