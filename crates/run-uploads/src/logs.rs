//! What the build and stage jobs share: the log directory, its upload, the log archives and
//! the archive time.

use std::io::Write;
use std::path::{Path, PathBuf};

use artifacts::LogArchive;
use storage_backend::{StorageBackend, blocking, shown};
use storage_location::StorageLocation;

use crate::Error;

/// Where the manifest is, relative to the build dir (`/`-separated: joined through
/// [`file_tree::native_path`]).
pub const MANIFEST_PATH: &str = "base/aux-overlay/build/therock_manifest.json";

/// The mtime of archive members: `SOURCE_DATE_EPOCH` when it is a number, else 0.
pub fn source_date_epoch(lookup: &dyn Fn(&str) -> Option<String>) -> u64 {
    lookup("SOURCE_DATE_EPOCH")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `{build}/logs` when it is a directory; when it is not there, prints the reference's
/// `[INFO] Log directory … not found. Skipping upload.` and gives `None`.
///
/// # Errors
/// A log directory that is there but cannot be looked at (permissions, a file in the way),
/// named: its logs would otherwise be skipped as if there were none. Or when `out` cannot be
/// written.
pub fn log_dir(build_dir: &Path, out: &mut dyn Write) -> Result<Option<PathBuf>, Error> {
    let logs = build_dir.join("logs");
    match fs_err::metadata(&logs) {
        Ok(meta) if meta.is_dir() => return Ok(Some(logs)),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(file_tree::FileError::read(&logs, e).into());
        }
        _ => {}
    }
    writeln!(
        out,
        "[INFO] Log directory {} not found. Skipping upload.",
        logs.display()
    )?;
    Ok(None)
}

/// Uploads the log directory `logs` to `dest`, all but anything under a directory named
/// `ccache` (those logs go up as their archive), printing
/// `[INFO] Uploaded {n} log files to {dest} ({m} unchanged)` with `dest` as
/// [`shown`] with `output_dir`.
///
/// # Errors
/// [`Error::Logs`] naming the directory, or a failed write to `out`.
pub async fn upload_logs(
    backend: &StorageBackend,
    logs: &Path,
    dest: &StorageLocation,
    output_dir: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let report = backend
        .upload_directory(logs, dest, &[], &["ccache/**/*".to_owned()])
        .await
        .map_err(|source| Error::Logs {
            logs: logs.to_path_buf(),
            source,
        })?;
    writeln!(
        out,
        "[INFO] Uploaded {} log files to {} ({} unchanged)",
        report.transferred,
        shown(output_dir, dest),
        report.skipped
    )?;
    Ok(())
}

/// Writes `{build}/logs/ninja_logs.tar.gz` from every `.ninja_log` of the build, on the
/// blocking pool; `None` when there is none.
pub(crate) async fn ninja_archive(
    build_dir: &Path,
    mtime: u64,
) -> Result<Option<LogArchive>, Error> {
    let build_dir = build_dir.to_path_buf();
    Ok(blocking(move || artifacts::archive_ninja_logs(&build_dir, mtime)).await?)
}

/// Writes `{build}/logs/ccache_logs.tar.zst` (zstd `level`) from the files directly in
/// `{build}/logs/ccache/`, printing the reference's lines; nothing when there are none.
/// Returns the number of files archived.
///
/// # Errors
/// The archive's error, or a failed write to `out`.
pub async fn archive_ccache_logs(
    build_dir: &Path,
    mtime: u64,
    level: i32,
    out: &mut dyn Write,
) -> Result<usize, Error> {
    let dir = build_dir.to_path_buf();
    let archive = blocking(move || artifacts::archive_ccache_logs(&dir, mtime, level)).await?;
    let Some(archive) = archive else {
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

/// Prints `[ERROR] {err}` with its causes to `out` and gives `err`.
pub(crate) fn reported(err: Error, out: &mut dyn Write) -> Result<Error, Error> {
    writeln!(out, "[ERROR] {}", crate::error::full(&err))?;
    Ok(err)
}

/// Prints a failed upload step as [`reported`] does, unless `backend` gave up on an
/// unreachable endpoint: the run then ends with that one error ([`finish`]).
pub(crate) fn upload_failed(
    backend: &StorageBackend,
    err: Error,
    out: &mut dyn Write,
) -> Result<Error, Error> {
    if backend.unreachable().is_some() {
        return Ok(err);
    }
    reported(err, out)
}

/// The job's result from its `failures`, listed by [`crate::combine`]; when `backend` gave
/// up on an unreachable endpoint, its failed uploads are the one error that says so, with
/// how many files were not uploaded (the other failures are still listed).
pub(crate) fn finish(backend: &StorageBackend, failures: Vec<Error>) -> Result<(), Error> {
    let Some(gave_up) = backend.gave_up("upload") else {
        return crate::combine(failures);
    };
    let mut kept: Vec<Error> = failures
        .into_iter()
        .filter(|e| {
            !matches!(
                e,
                Error::Logs { .. } | Error::Flattened { .. } | Error::Manifest { .. }
            )
        })
        .collect();
    kept.push(Error::Storage(gave_up));
    crate::combine(kept)
}

/// [`Error::LogArchive`] of `what` (`ninja`, `ccache`) caused by `err`, after printing `err`
/// as `[ERROR] …` to `out`.
pub(crate) fn archive_failure(
    what: &'static str,
    err: Error,
    out: &mut dyn Write,
) -> Result<Error, Error> {
    let err = reported(err, out)?;
    Ok(Error::LogArchive {
        what,
        source: Box::new(err),
    })
}
