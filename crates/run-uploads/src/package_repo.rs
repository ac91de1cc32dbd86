//! `upload_package_repo`: publishes a directory of built `.deb` or `.rpm` packages as an APT
//! or YUM/DNF repository in the run's S3 prefix (package-index's `repo` module merges it with
//! the repository already there), uploads the packaging logs, and sets the step outputs and
//! summary.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use package_index::repo::{self, PkgType};
use storage_backend::{Reporter, StorageBackend};
use workflow_outputs::Platform;

use file_tree::FileError;

use crate::{Error, steps, upload_logs};

/// A publication of a package repository.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// The package format.
    pub pkg_type: PkgType,
    /// The current run.
    pub run_id: String,
    /// The directory of built packages (and its `logs/`).
    pub package_dir: PathBuf,
}

impl Plan {
    /// Publishes the `pkg_type` packages of `package_dir` for run `run_id`.
    pub fn new(
        pkg_type: PkgType,
        run_id: impl Into<String>,
        package_dir: impl Into<PathBuf>,
    ) -> Self {
        Plan {
            pkg_type,
            run_id: run_id.into(),
            package_dir: package_dir.into(),
        }
    }
}

/// Publishes the repository, progress to `out`, the bucket resolution and the messages of the
/// index tools to `log`; sets `package_repository_url` (and `packaging_logs_url` when logs
/// were uploaded) and appends the install instructions to the job summary. The job type of
/// the upload is `$RELEASE_TYPE` (default `ci`).
///
/// # Errors
/// A missing package directory, the run root, package-index's errors, the upload, and the
/// step files.
pub async fn run(
    plan: &Plan,
    reporter: Arc<dyn Reporter>,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), Error> {
    let pkg_type = plan.pkg_type;
    let dir = file_tree::existing_dir(&plan.package_dir, "Package directory")?;
    let (root, selection) =
        steps::current_run_root(&plan.run_id, Platform::Linux, None, lookup, log).await?;
    let location = root.native_linux_packages(pkg_type.name());
    let url = repo::install_url(&location, pkg_type);
    let job_type = lookup("RELEASE_TYPE").unwrap_or_else(|| "ci".to_owned());

    let prepared = repo::prepare(&dir, pkg_type, location, out, log).await?;
    let region = selection.config().region();
    let options = repo::transfer_options();
    let backend = StorageBackend::for_upload(None, options, region, reporter, lookup).await?;
    repo::publish(&backend, &prepared, &job_type, out, log).await?;

    writeln!(out, "Package repository URL: {url}")?;
    github_actions::set_outputs_with(&[("package_repository_url", &url)], lookup)?;
    let mut logs_url = None;
    if let Some(logs) = repo::log_dir(&dir, out)? {
        let dest = root.native_linux_packages_log_dir(pkg_type.name());
        upload_logs(&backend, &logs, &dest, None, out).await?;
        // The page the summary and `packaging_logs_url` link to.
        let index = root.native_linux_packages_log_index(pkg_type.name());
        // Written beside the packages under a temporary name, off the async threads.
        let staged = {
            let (logs, dir) = (logs.clone(), dir.clone());
            storage_backend::blocking(move || -> Result<_, FileError> {
                let page = logs_index_page(&logs, pkg_type.name())?;
                let staged = file_tree::temp_file_in(&dir, ".logs-index")
                    .map_err(|e| FileError::write(&dir, e))?;
                fs_err::write(staged.path(), page)
                    .map_err(|e| FileError::write(staged.path(), e))?;
                Ok(staged)
            })
            .await?
        };
        backend
            .upload_file(staged.path(), &index)
            .await
            .map_err(|source| Error::Logs {
                logs: logs.clone(),
                source,
            })?;
        let url = index.https_url();
        writeln!(out, "Packaging logs uploaded to: {url}")?;
        github_actions::set_outputs_with(&[("packaging_logs_url", &url)], lookup)?;
        logs_url = Some(url);
    }
    github_actions::append_step_summary_with(
        &repo::summary(pkg_type, &url, logs_url.as_deref()),
        lookup,
    )?;
    Ok(())
}

/// The index page of the packaging logs below `logs`: every file, with its size and time.
fn logs_index_page(logs: &std::path::Path, pkg_type: &str) -> Result<String, FileError> {
    let mut entries = Vec::new();
    for e in file_tree::walk(logs)? {
        if (e.is_file || e.is_symlink_to_file) && e.name() != "index.html" {
            entries.push(crate::test_report::index_entry(&e.path, e.relative())?);
        }
    }
    Ok(file_tree::index_page(
        &format!("{pkg_type} packaging logs"),
        &entries,
    ))
}

#[cfg(test)]
/// Polls `future` to completion on this thread (it must not need a runtime).
pub(crate) fn poll_ready<F: std::future::Future>(future: F) -> F::Output {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[cfg(test)]
mod tests;
