//! `upload_test_report_script`: writes an index page of a directory of HTML reports, uploads
//! the reports and the page to the run's `logs/{subfolder}/` (or the legacy
//! `--log-destination`), and links the page from the job summary (release-publishing spec §5).

use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use file_tree::{FileError, IndexEntry};
use storage_backend::{StorageLocation, TransferOptions};
use workflow_outputs::Platform;

use crate::uploads::shown;
use crate::{RunRequest, resolve_run_root};

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workflow run id.
    pub run_id: String,
    /// The folder below the run's `logs/` (checked by [`check_key_path`]).
    pub subfolder: String,
    /// The directory of reports.
    pub report_path: PathBuf,
    /// The legacy destination below the run's root, instead of `logs/{subfolder}`.
    pub log_destination: Option<String>,
    /// The name of the index page (checked by [`check_index_file_name`]).
    pub index_file_name: String,
    /// The platform of the run's prefix (the host's).
    pub platform: Platform,
    /// Local staging directory instead of S3.
    pub output_dir: Option<PathBuf>,
    /// Only check that the destination is reachable and writable.
    pub preflight: bool,
    /// Transfer options (dry run, overwrite, concurrency).
    pub options: TransferOptions,
    /// No progress bars.
    pub quiet: bool,
}

/// The files that are reports: names ending in `.html` (case-sensitive, as the reference's
/// `--include '*.html'`).
const REPORT_SUFFIX: &str = ".html";

/// Checks a `/`-separated place below the run's root (`--subfolder`, `--log-destination`):
/// no empty, `.` or `..` component, no whitespace, `\` or control character. `what` names
/// the flag.
pub fn check_key_path(value: &str, what: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("{what} is empty"));
    }
    for component in value.split('/') {
        if component.is_empty() {
            return Err(format!(
                "{what} `{}` has an empty path component",
                value.escape_debug()
            ));
        }
        crate::uploads::check_key_component(component, what)?;
    }
    Ok(())
}

/// Checks `--index-file-name`: one plain file name (as [`crate::uploads::check_key_component`])
/// that the storage backend serves as `text/html` (`.html`, `.htm`, any case).
pub fn check_index_file_name(value: &str) -> Result<(), String> {
    const WHAT: &str = "--index-file-name";
    if value.is_empty() {
        return Err(format!("{WHAT} is empty"));
    }
    crate::uploads::check_key_component(value, WHAT)?;
    let content_type = storage_backend::infer_content_type(value);
    if content_type != "text/html" {
        return Err(format!(
            "{WHAT} `{value}` would be served as {content_type}, not text/html: give a name ending in `.html`"
        ));
    }
    Ok(())
}

/// The legacy `--log-destination` value: `None` when it is blank (as the reference), else the
/// value without surrounding whitespace and `/`, checked by [`check_key_path`].
pub fn log_destination(value: &str) -> Result<Option<String>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    let path = value.trim_matches('/');
    if path.is_empty() {
        return Err(format!(
            "--log-destination `{value}` names the run's root; give a folder below it"
        ));
    }
    check_key_path(path, "--log-destination")?;
    Ok(Some(path.to_owned()))
}

/// The summary line linking the index page at `index`.
pub fn summary_line(index: &StorageLocation) -> String {
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
fn head(path: &Path) -> anyhow::Result<Vec<u8>> {
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
fn reports_below(dir: &Path, index_name: &str) -> anyhow::Result<(Vec<Report>, Vec<String>)> {
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
        let meta = fs_err::metadata(&e.path).map_err(|err| FileError::read(&e.path, err))?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_secs()).ok());
        reports.push(Report {
            path: e.path,
            entry: IndexEntry {
                path: relative,
                size: meta.len(),
                modified,
            },
        });
    }
    Ok((reports, stale))
}

/// Writes `page` as `index` (temporary name, then rename). Whatever has that name already
/// must be an index page an earlier run wrote: a report of that name is never replaced.
fn write_index(index: &Path, page: &str) -> anyhow::Result<()> {
    if index.symlink_metadata().is_ok() {
        let ours = index.is_file() && file_tree::is_index_page(&head(index)?);
        if !ours {
            bail!(
                "`{}` exists and is not an index page written by this tool; give another --index-file-name",
                index.display()
            );
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
fn report_dir(report_path: &Path, log: &mut dyn Write) -> anyhow::Result<Option<PathBuf>> {
    match fs_err::metadata(report_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            writeln!(
                log,
                "ERROR: --report-path `{}` does not exist: skipping upload (no index, no job summary)",
                report_path.display()
            )?;
            Ok(None)
        }
        Err(e) => Err(FileError::read(report_path, e).into()),
        Ok(m) if !m.is_dir() => bail!(
            "--report-path `{}` is not a directory; nothing was uploaded",
            report_path.display()
        ),
        Ok(_) => Ok(Some(crate::uploads::existing_dir(
            report_path,
            "Report directory",
        )?)),
    }
}

/// Lists the reports below `dir`, writes the index page listing them as `dir/{index_name}`,
/// and returns what to upload: each report with its path relative to `dir`, and the page.
fn build_index(
    dir: &Path,
    index_name: &str,
    out: &mut dyn Write,
) -> anyhow::Result<(Vec<(PathBuf, String)>, PathBuf)> {
    writeln!(out, "Index file to be created: {index_name}")?;
    let (reports, stale) = reports_below(dir, index_name)?;
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
    write_index(&index_path, &file_tree::index_page(&title, &entries))?;
    writeln!(out, "Wrote the index {}", index_path.display())?;
    let files = reports
        .into_iter()
        .map(|r| (r.path, r.entry.path))
        .collect();
    Ok((files, index_path))
}

/// Runs the whole job: progress to `out`; the bucket resolution and the note of a missing
/// report directory to `log`.
pub async fn run(
    plan: &Plan,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> anyhow::Result<()> {
    // Checked first, so nothing else (the bucket resolution) can fail a step with no report.
    let Some(dir) = report_dir(&plan.report_path, log)? else {
        return Ok(());
    };
    let request = RunRequest {
        run_id: plan.run_id.clone(),
        platform: plan.platform,
        repository: None,
        release_type: None,
        lookup_workflow_run: false,
    };
    let (root, selection) = resolve_run_root(&request, lookup, log)?;
    let dest = match &plan.log_destination {
        Some(path) => root.location(path),
        None => root.log_dir(&plan.subfolder),
    };
    let output_dir = plan.output_dir.as_deref();
    let backend = crate::uploads::backend(
        output_dir,
        plan.options,
        selection.config().region(),
        plan.quiet,
        lookup,
    )
    .await?;
    if plan.preflight {
        return crate::uploads::preflight(&backend, &dest, output_dir, out).await;
    }

    let (reports, index_path) = build_index(&dir, &plan.index_file_name, out)?;
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
    let uploaded = backend
        .upload_files(files)
        .await
        .context("Failed to upload the reports; the index was not uploaded")?;
    // Last, so the page never links a report that is not there yet.
    let index = dest.join(&plan.index_file_name);
    let index_upload = backend
        .upload_files(vec![(index_path, index.clone())])
        .await
        .context("Failed to upload the index page")?;
    writeln!(
        out,
        "Uploaded {} files ({} unchanged) to {dest_shown}",
        uploaded.transferred + index_upload.transferred,
        uploaded.skipped + index_upload.skipped
    )?;

    let line = summary_line(&index);
    if output_dir.is_some() {
        writeln!(
            out,
            "Staged the index at {}; no job summary for a local staging directory",
            shown(output_dir, &index)
        )?;
    } else if plan.options.dry_run {
        writeln!(out, "[DRY RUN] Would write the job summary:\n{line}")?;
    } else {
        writeln!(out, "Writing job summary:\n{line}")?;
        github_actions::append_step_summary_with(&line, lookup)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_checks() {
        for ok in ["manifest-diff", "gfx950-dcgpu", "gfx950-dcgpu/rccl", "a.b"] {
            assert_eq!(check_key_path(ok, "--subfolder"), Ok(()), "{ok}");
        }
        for (bad, message) in [
            ("", "--subfolder is empty"),
            ("a//b", "--subfolder `a//b` has an empty path component"),
            ("a/", "--subfolder `a/` has an empty path component"),
            ("../x", "--subfolder `..` is not a name"),
            ("a b", "--subfolder `a b` contains ` `"),
        ] {
            let err = check_key_path(bad, "--subfolder").unwrap_err();
            assert!(err.starts_with(message), "{bad:?}: {err}");
        }
        for ok in [
            "index.html",
            "Index.HTML",
            "index_rccl_test_report.html",
            "i.htm",
        ] {
            assert_eq!(check_index_file_name(ok), Ok(()), "{ok}");
        }
        for (bad, message) in [
            ("", "--index-file-name is empty"),
            (
                "a/index.html",
                "--index-file-name `a/index.html` contains `/`",
            ),
            ("..", "--index-file-name `..` is not a name"),
            (
                "index.txt",
                "--index-file-name `index.txt` would be served as text/plain, not text/html",
            ),
            (
                "index",
                "--index-file-name `index` would be served as application/octet-stream",
            ),
        ] {
            let err = check_index_file_name(bad).unwrap_err();
            assert!(err.starts_with(message), "{bad:?}: {err}");
        }
    }

    // Spec §5.3 step 3 and §5.6 U5, U6: blank is absent, the `/`s at the ends go.
    #[test]
    fn log_destinations() {
        assert_eq!(log_destination(""), Ok(None));
        assert_eq!(log_destination("   "), Ok(None));
        assert_eq!(
            log_destination(" /logs/gfx950-dcgpu/rccl/ "),
            Ok(Some("logs/gfx950-dcgpu/rccl".to_owned()))
        );
        assert!(
            log_destination("/")
                .unwrap_err()
                .contains("names the run's root")
        );
        assert!(
            log_destination("logs/../x")
                .unwrap_err()
                .contains("`..` is not a name")
        );
    }

    #[test]
    fn summary() {
        let index = StorageLocation::new(
            "therock-ci-artifacts",
            "12345-linux/logs/manifest-diff/index.html",
        );
        assert_eq!(
            summary_line(&index),
            "[Report (S3)](https://therock-ci-artifacts.s3.amazonaws.com/12345-linux/logs/manifest-diff/index.html)"
        );
    }

    // The reports are the `*.html` files at any depth, links to files included; what the
    // index lists is exactly what is uploaded.
    #[test]
    fn reports_and_stale_index_pages() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        for (name, text) in [
            ("TheRockReport.html", "abc"),
            ("sub/n.html", "n"),
            ("big.html.gz", "gz"),
            ("X.HTML", "upper"),
            ("skip.txt", "t"),
            ("index.html", "old"),
        ] {
            let path = d.join(name);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            fs_err::write(&path, text).unwrap();
        }
        fs_err::create_dir_all(d.join("dir.html")).unwrap();
        fs_err::write(d.join("old.html"), file_tree::index_page("x", &[])).unwrap();
        fs_err::os::unix::fs::symlink("TheRockReport.html", d.join("link.html")).unwrap();
        fs_err::os::unix::fs::symlink("sub", d.join("linked-dir")).unwrap();
        let (reports, stale) = reports_below(d, "index.html").unwrap();
        let listed: Vec<(&str, u64)> = reports
            .iter()
            .map(|r| (r.entry.path.as_str(), r.entry.size))
            .collect();
        assert_eq!(
            listed,
            [
                ("TheRockReport.html", 3),
                ("link.html", 3),
                ("sub/n.html", 1)
            ]
        );
        assert_eq!(stale, ["old.html"]);
    }
}
