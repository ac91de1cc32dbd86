//! Writing an exploded artifact directory as an artifact archive (spec §8.3): the manifest
//! first, then every entry below each of its relpaths.

use file_tree::FileError;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::archive::{ArchiveWriter, Compression, Written};
use crate::{Error, MANIFEST_NAME};

/// What [`pack_artifact_dir`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    /// The archive, its SHA-256 and compressed size.
    pub archive: Written,
    /// Files below the directory once symlinks are followed (the manifest included).
    pub files: u64,
    /// Their total size in bytes.
    pub uncompressed_size: u64,
    /// Archive members written (the manifest, directories, files, links).
    pub members: u64,
}

/// The non-empty lines of an `artifact_manifest.txt`.
pub fn manifest_relpaths(text: &str) -> Vec<&str> {
    text.lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty())
        .collect()
}

/// Writes the exploded artifact `dir` (an `artifact_manifest.txt` and the relpath trees it
/// names) to the archive `dest`: the manifest is the first member, then for each relpath whose
/// directory exists every entry below it as `{relpath}/{subpath}`, parents before children,
/// names in byte order. Files keep their mode and mtime; symlinks are stored as links; a file
/// seen again through another hard link is stored as a hard link to the first. A relpath nested
/// in another adds nothing twice. `workers` as in [`ArchiveWriter::create_with_workers`]. The
/// archive appears at `dest` only when complete.
pub fn pack_artifact_dir(
    dir: &Path,
    dest: &Path,
    compression: Compression,
    workers: u32,
) -> Result<Packed, Error> {
    let manifest_path = dir.join(MANIFEST_NAME);
    let manifest =
        fs_err::read_to_string(&manifest_path).map_err(|e| FileError::read(&manifest_path, e))?;
    let mut writer = ArchiveWriter::create_with_workers(dest, compression, workers)?;
    writer.append_file_as(MANIFEST_NAME, &manifest_path)?;
    let mut members = 1;
    let mut added: HashSet<String> = HashSet::new();
    let mut inodes: HashMap<(u64, u64), String> = HashMap::new();
    for relpath in manifest_relpaths(&manifest) {
        let relpath = relpath.trim_end_matches('/');
        let root = dir.join(relpath);
        if !root.is_dir() {
            continue;
        }
        for entry in file_tree::Walk::new(&root).entries()? {
            let arcname = format!("{relpath}/{}", entry.relative());
            if !added.insert(arcname.clone()) {
                continue;
            }
            if entry.is_file
                && let Some(id) = hard_link_id(&entry.path)?
            {
                if let Some(first) = inodes.get(&id) {
                    writer.append_hard_link(&arcname, first, &entry.path)?;
                    members += 1;
                    continue;
                }
                inodes.insert(id, arcname.clone());
            }
            writer.append_file_as(&arcname, &entry.path)?;
            members += 1;
        }
    }
    let archive = writer.finish_written()?;
    let (files, uncompressed_size) = count_files(dir)?;
    Ok(Packed {
        archive,
        files,
        uncompressed_size,
        members,
    })
}

/// `(device, inode)` of a regular file with more than one link.
#[cfg(unix)]
fn hard_link_id(path: &Path) -> Result<Option<(u64, u64)>, Error> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = fs_err::symlink_metadata(path).map_err(|e| FileError::read(path, e))?;
    Ok((meta.nlink() > 1).then(|| (meta.dev(), meta.ino())))
}

#[cfg(not(unix))]
fn hard_link_id(_path: &Path) -> Result<Option<(u64, u64)>, Error> {
    Ok(None)
}

/// The files below `dir` once symlinks are followed, and their total size.
fn count_files(dir: &Path) -> Result<(u64, u64), Error> {
    let mut files = 0;
    let mut bytes = 0;
    for entry in file_tree::Walk::new(dir).follow_links(true).entries()? {
        if entry.is_file {
            files += 1;
            bytes += fs_err::metadata(&entry.path)
                .map_err(|e| FileError::read(&entry.path, e))?
                .len();
        }
    }
    Ok((files, bytes))
}

/// The archive an exploded artifact directory is written to: `{dir name}.tar.zst` (or `.tar.xz`)
/// in `cache_dir`.
pub fn archive_path_for(cache_dir: &Path, dir_name: &str, compression: Compression) -> PathBuf {
    let ext = compression
        .format()
        .map_or(".tar", crate::ArchiveFormat::extension);
    cache_dir.join(format!("{dir_name}{ext}"))
}
