//! The build-log archives uploaded beside a build's logs: every `.ninja_log` of a build tree
//! as `logs/ninja_logs.tar.gz`, and the ccache logs as `logs/ccache_logs.tar.zst`.

use std::path::{Path, PathBuf};

use file_tree::FileError;

use crate::{ArchiveWriter, Compression, Error};

/// Name of the ninja log files collected into the ninja archive.
pub const NINJA_LOG: &str = ".ninja_log";
/// The ninja archive, relative to the build directory (`/`-separated, as are the two below;
/// joined through [`file_tree::native_path`], so that Windows shows `build\logs\...`).
pub const NINJA_LOGS_ARCHIVE: &str = "logs/ninja_logs.tar.gz";
/// The directory of ccache logs, relative to the build directory.
pub const CCACHE_LOGS_DIR: &str = "logs/ccache";
/// The ccache archive, relative to the build directory.
pub const CCACHE_LOGS_ARCHIVE: &str = "logs/ccache_logs.tar.zst";
/// The zstd level of the ccache archive unless another is asked for.
pub const CCACHE_ZSTD_LEVEL: i32 = 3;

/// A log archive that was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogArchive {
    /// Where it is.
    pub path: PathBuf,
    /// The files archived, in archive order.
    pub sources: Vec<PathBuf>,
    /// Whether an earlier archive at [`LogArchive::path`] was replaced.
    pub replaced: bool,
    /// Bytes of the files archived.
    pub input_bytes: u64,
    /// Bytes of the archive.
    pub archive_bytes: u64,
}

/// Every `.ninja_log` below `build_dir`, relative to it (`/`-separated), sorted component by
/// component; symlinks (to files or directories) are not followed.
pub fn find_ninja_logs(build_dir: &Path) -> Result<Vec<String>, Error> {
    let mut found: Vec<file_tree::Entry> = file_tree::walk(build_dir)?
        .into_iter()
        .filter(|e| e.is_file && !e.is_symlink && e.name() == NINJA_LOG)
        .collect();
    found.sort_by(|a, b| file_tree::cmp_components(&a.components, &b.components));
    Ok(found.iter().map(file_tree::Entry::relative).collect())
}

/// Writes [`NINJA_LOGS_ARCHIVE`] from every `.ninja_log` of the build (member names relative
/// to the build directory, sorted, metadata normalized with member mtime `mtime`), atomically.
/// `None` when the build has no ninja log (nothing is written then).
pub fn archive_ninja_logs(build_dir: &Path, mtime: u64) -> Result<Option<LogArchive>, Error> {
    let logs = find_ninja_logs(build_dir)?;
    if logs.is_empty() {
        return Ok(None);
    }
    let members: Vec<(String, PathBuf)> = logs
        .into_iter()
        .map(|rel| {
            let path = build_dir.join(file_tree::native_path(&rel));
            (rel, path)
        })
        .collect();
    write_log_archive(
        &build_dir.join(file_tree::native_path(NINJA_LOGS_ARCHIVE)),
        Compression::Gzip { level: 9 },
        &members,
        mtime,
    )
    .map(Some)
}

/// Writes [`CCACHE_LOGS_ARCHIVE`] from the files directly in [`CCACHE_LOGS_DIR`] (sorted by
/// name, member name = file name; a symlink is stored as a symlink), compressed with zstd at
/// `level` (see [`CCACHE_ZSTD_LEVEL`]), atomically. `None` when there is no such directory or
/// no file in it.
pub fn archive_ccache_logs(
    build_dir: &Path,
    mtime: u64,
    level: i32,
) -> Result<Option<LogArchive>, Error> {
    let dir = build_dir.join(file_tree::native_path(CCACHE_LOGS_DIR));
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut members: Vec<(String, PathBuf)> = file_tree::list(&dir)?
        .into_iter()
        .filter(|e| e.is_file || e.is_symlink_to_file)
        .map(|e| (e.name().to_owned(), e.path))
        .collect();
    if members.is_empty() {
        return Ok(None);
    }
    members.sort();
    write_log_archive(
        &build_dir.join(file_tree::native_path(CCACHE_LOGS_ARCHIVE)),
        Compression::Zstd { level },
        &members,
        mtime,
    )
    .map(Some)
}

fn write_log_archive(
    dest: &Path,
    compression: Compression,
    members: &[(String, PathBuf)],
    mtime: u64,
) -> Result<LogArchive, Error> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir).map_err(|e| FileError::write(dir, e))?;
    let replaced = fs_err::symlink_metadata(dest).is_ok();
    let mut writer = ArchiveWriter::create(dest, compression)?;
    let mut input_bytes = 0;
    for (name, path) in members {
        input_bytes += fs_err::metadata(path)
            .map_err(|e| FileError::read(path, e))?
            .len();
        writer.append_normalized(name, path, mtime)?;
    }
    let path = writer.finish()?;
    let archive_bytes = fs_err::metadata(&path)
        .map_err(|e| FileError::read(&path, e))?
        .len();
    Ok(LogArchive {
        path,
        sources: members.iter().map(|(_, p)| p.clone()).collect(),
        replaced,
        input_bytes,
        archive_bytes,
    })
}
