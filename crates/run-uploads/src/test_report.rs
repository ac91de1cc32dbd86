//! `upload_test_report_script`: writes an index page of a directory of HTML reports, uploads
//! the reports and the page to the run's `logs/{subfolder}/` (or the legacy
//! `--log-destination`), and links the page from the job summary (release-publishing spec §5).

use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use file_tree::{FileError, IndexEntry};
use storage_backend::{Reporter, StorageLocation, TransferOptions, blocking, shown};
use workflow_outputs::Platform;

use crate::{Error, steps};

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// The workflow run id.
    pub run_id: String,
    /// The folder below the run's `logs/` (checked by [`crate::check_key_path`]).
    pub subfolder: String,
    /// The directory of reports.
    pub report_path: PathBuf,
    /// The legacy destination below the run's root, instead of `logs/{subfolder}`.
    pub log_destination: Option<String>,
    /// The name of the index page (checked by [`crate::check_index_file_name`]).
    pub index_file_name: String,
    /// The platform of the run's prefix (the host's).
    pub platform: Platform,
    /// Local staging directory instead of S3.
    pub output_dir: Option<PathBuf>,
    /// Only check that the destination is reachable and writable.
    pub preflight: bool,
    /// Transfer options (dry run, overwrite, concurrency).
    pub options: TransferOptions,
}

impl Plan {
    /// Uploads the report `report_path` of run `run_id` into `subfolder` with its index page
    /// `index_file_name`: this machine's platform, to S3 with the default transfer options, no
    /// log destination.
    pub fn new(
        run_id: impl Into<String>,
        subfolder: impl Into<String>,
        report_path: impl Into<PathBuf>,
        index_file_name: impl Into<String>,
    ) -> Self {
        Plan {
            run_id: run_id.into(),
            subfolder: subfolder.into(),
            report_path: report_path.into(),
            log_destination: None,
            index_file_name: index_file_name.into(),
            platform: Platform::host(),
            output_dir: None,
            preflight: false,
            options: TransferOptions::default(),
        }
    }
}

/// The files that are reports: names ending in `.html` (case-sensitive, as the reference's
/// `--include '*.html'`).
const REPORT_SUFFIX: &str = ".html";

/// The summary line linking the index page at `index`.
pub(crate) fn summary_line(index: &StorageLocation) -> String {
    format!("[Report (S3)]({})", index.https_url())
}

/// A report below the report directory.
#[derive(Debug, Clone)]
struct Report {
    /// The file (a symlink is read through).
    path: PathBuf,
    /// Its row on the index page.
    entry: IndexEntry,
}

/// The first bytes of `path`, enough for [`file_tree::is_index_page`].
fn head(path: &Path) -> Result<Vec<u8>, FileError> {
    let mut buf = Vec::with_capacity(file_tree::MARKER_WINDOW);
    fs_err::File::open(path)
        .and_then(|f| {
            f.take(file_tree::MARKER_WINDOW as u64)
                .read_to_end(&mut buf)
        })
        .map_err(|e| FileError::read(path, e))?;
    Ok(buf)
}

/// Every `*.html` file below `dir` (regular files and links to them, at any depth; linked
/// directories not entered) but `index_name` at the top, in walk order; and apart, the index
/// pages an earlier run left under other names (neither listed nor uploaded).
fn reports_below(dir: &Path, index_name: &str) -> Result<(Vec<Report>, Vec<String>), FileError> {
    let entries = file_tree::walk(dir)?;
    let (mut reports, mut stale) = (Vec::new(), Vec::new());
    for e in entries {
        let relative = e.relative();
        if !(e.is_file || e.is_symlink_to_file)
            || !e.name().ends_with(REPORT_SUFFIX)
            || relative == index_name
        {
            continue;
        }
        if file_tree::is_index_page(&head(&e.path)?) {
            stale.push(relative);
            continue;
        }
        let entry = index_entry(&e.path, relative)?;
        reports.push(Report {
            path: e.path,
            entry,
        });
    }
    Ok((reports, stale))
}

/// The row of file `path` (`relative` to its page) on an index page: its size and time.
pub(crate) fn index_entry(path: &Path, relative: String) -> Result<IndexEntry, FileError> {
    let meta = fs_err::metadata(path).map_err(|err| FileError::read(path, err))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_secs()).ok());
    Ok(IndexEntry {
        path: relative,
        size: meta.len(),
        modified,
    })
}

/// Writes `page` as `index` (temporary name, then rename). Whatever has that name already
/// must be an index page an earlier run wrote: a report of that name is never replaced.
fn write_index(index: &Path, page: &str) -> Result<(), Error> {
    if index.symlink_metadata().is_ok() {
        let ours = index.is_file() && file_tree::is_index_page(&head(index)?);
        if !ours {
            return Err(Error::NotAnIndexPage(index.to_path_buf()));
        }
    }
    let dir = index.parent().unwrap_or(Path::new("."));
    let name = index.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp = file_tree::temp_file_in(dir, &name).map_err(|e| FileError::write(dir, e))?;
    tmp.write_all(page.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| FileError::write(index, e))?;
    tmp.persist(index)
        .map_err(|e| FileError::write(index, e.error))?;
    Ok(())
}

/// The report directory made absolute; `None` when it does not exist (said on `log`): a
/// report generator may finish without a report, which is not a failure.
async fn report_dir(report_path: &Path, log: &mut dyn Write) -> Result<Option<PathBuf>, Error> {
    let path = report_path.to_path_buf();
    let found = blocking(move || match fs_err::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::File(FileError::read(&path, e))),
        Ok(m) if !m.is_dir() => Err(Error::ReportPathNotDir(path)),
        Ok(_) => Ok(Some(file_tree::existing_dir(&path, "Report directory")?)),
    })
    .await?;
    if found.is_none() {
        writeln!(
            log,
            "ERROR: --report-path `{}` does not exist: skipping upload (no index, no job summary)",
            report_path.display()
        )?;
    }
    Ok(found)
}

/// Lists the reports below `dir` and prints them to `out`, then writes the index page listing
/// them as `dir/{index_name}`. Returns what to upload: each report with its path relative to
/// `dir`, and the page.
async fn build_index(
    dir: &Path,
    index_name: &str,
    out: &mut dyn Write,
) -> Result<(Vec<(PathBuf, String)>, PathBuf), Error> {
    writeln!(out, "Index file to be created: {index_name}")?;
    let (reports, stale) = {
        let (dir, index_name) = (dir.to_path_buf(), index_name.to_owned());
        blocking(move || reports_below(&dir, &index_name)).await?
    };
    writeln!(
        out,
        "Found {} HTML reports in {}:",
        reports.len(),
        dir.display()
    )?;
    for report in &reports {
        writeln!(out, "  {}", report.entry.path)?;
    }
    for name in &stale {
        writeln!(
            out,
            "Left out {name}: an index page written by an earlier run"
        )?;
    }
    let title = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let entries: Vec<IndexEntry> = reports.iter().map(|r| r.entry.clone()).collect();
    let index_path = dir.join(index_name);
    let page = file_tree::index_page(&title, &entries);
    {
        let index_path = index_path.clone();
        blocking(move || write_index(&index_path, &page)).await?;
    }
    writeln!(out, "Wrote the index {}", index_path.display())?;
    let files = reports
        .into_iter()
        .map(|r| (r.path, r.entry.path))
        .collect();
    Ok((files, index_path))
}

/// Runs the whole job: its lines to `out`; the bucket resolution and the note of a missing
/// report directory to `log`; transfers reported to `reporter`.
///
/// # Errors
/// A report path that is no directory, a name taken by something that is no index page, a
/// failed look-up, connection, preflight, upload or job summary.
pub async fn run(
    plan: &Plan,
    reporter: Arc<dyn Reporter>,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), Error> {
    // Checked first, so nothing else (the bucket resolution) can fail a step with no report.
    let Some(dir) = report_dir(&plan.report_path, log).await? else {
        return Ok(());
    };
    let (root, selection) =
        steps::current_run_root(&plan.run_id, plan.platform, None, lookup, log).await?;
    let dest = match &plan.log_destination {
        Some(path) => root.location(path),
        None => root.log_dir(&plan.subfolder),
    };
    let output_dir = plan.output_dir.as_deref();
    let preflight = plan.preflight.then_some(&dest);
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

    let (reports, index_path) = build_index(&dir, &plan.index_file_name, out).await?;
    let dest_shown = shown(output_dir, &dest);
    writeln!(
        out,
        "Uploading HTML reports from {} to {dest_shown}",
        dir.display()
    )?;
    let files = reports
        .into_iter()
        .map(|(path, relative)| (path, dest.join(&relative)))
        .collect();
    let uploaded = backend.upload_files(files).await.map_err(Error::Reports)?;
    // Last, so the page never links a report that is not there yet.
    let index_location = dest.join(&plan.index_file_name);
    let index_upload = backend
        .upload_files(vec![(index_path, index_location.clone())])
        .await
        .map_err(Error::IndexPage)?;
    writeln!(
        out,
        "Uploaded {} files ({} unchanged) to {dest_shown}",
        uploaded.transferred + index_upload.transferred,
        uploaded.skipped + index_upload.skipped
    )?;

    let line = summary_line(&index_location);
    if output_dir.is_some() {
        writeln!(
            out,
            "Staged the index at {}; no job summary for a local staging directory",
            shown(output_dir, &index_location)
        )?;
    } else if plan.options.dry_run {
        writeln!(out, "[DRY RUN] Would write the job summary:\n{line}")?;
    } else {
        writeln!(out, "Writing job summary:\n{line}")?;
        steps::append_step_summary(&line, lookup).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
