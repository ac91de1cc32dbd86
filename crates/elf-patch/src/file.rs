//! Reading an input and writing a result without ever leaving neither: regular files only,
//! the new image complete in memory before anything is written, then a temporary file renamed
//! over the destination (keeping its mode, owner, group and extended attributes) or, where that
//! is not possible, the destination rewritten in place.
//!
//! On Windows there are no owners, groups, extended attributes or mode bits to keep: a replaced
//! file keeps its read-only attribute, and a file is the same as another when its volume and
//! file index are.

#[cfg(unix)]
use std::fs::File;
use std::fs::{Metadata, OpenOptions, Permissions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::Error;

/// What a non-regular file is, for the error.
#[cfg(not(unix))]
fn kind(meta: &Metadata) -> &'static str {
    if meta.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// What a non-regular file is, for the error.
#[cfg(unix)]
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

pub(crate) fn refuse_irregular(path: &Path, meta: &Metadata) -> Result<(), Error> {
    if meta.is_file() {
        Ok(())
    } else {
        Err(Error::NotRegular {
            path: path.to_path_buf(),
            kind: kind(meta),
        })
    }
}

/// The contents and metadata of the regular file at `path` (a symlink is followed). Anything
/// else (a FIFO, a device, a directory) is refused before it is opened.
#[expect(
    clippy::disallowed_methods,
    reason = "std's errors: the path goes into `Error::Io` once, fs_err would name it again in the cause"
)]
pub(crate) fn read_regular(path: &Path) -> Result<(Vec<u8>, Metadata), Error> {
    let io = |e| Error::io(path, e);
    // std's own calls: the error names the path once, and std's file reads the size it knows
    // in one call (fs-err's wrapper grows its reads from 8 KiB, four calls for a 121 KB
    // library).
    refuse_irregular(path, &std::fs::metadata(path).map_err(io)?)?;
    let mut file = std::fs::File::open(path).map_err(io)?;
    // The path may have been replaced between the two looks: check what was opened.
    let meta = file.metadata().map_err(io)?;
    refuse_irregular(path, &meta)?;
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut data).map_err(io)?;
    Ok((data, meta))
}

/// Where a write to `path` lands: symlinks followed to their end, a dangling one to the path it
/// names (which the write creates), as `open(2)` with `O_CREAT` would.
pub(crate) fn write_target(path: &Path) -> Result<PathBuf, Error> {
    // Linux's limit on links followed in one lookup.
    const MAX_LINKS: usize = 40;
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let text = std::fs::read_link(&current).map_err(|e| Error::io(path, e))?;
                // Relative link text is taken from the link's own directory.
                current = match current.parent() {
                    Some(dir) => dir.join(text),
                    None => text,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    #[cfg(unix)]
    let too_many = rustix::io::Errno::LOOP.into();
    #[cfg(not(unix))]
    let too_many = std::io::Error::other("too many levels of symbolic links");
    Err(Error::io(path, too_many))
}

/// Refuses a file this user may not write (`access(2)`, `W_OK`: the mode bits, ACLs, a
/// read-only mount), as patchelf's opening it for writing does, even where the directory would
/// let a new file be renamed over it. A running program (`ETXTBSY`) may be replaced.
#[cfg(unix)]
fn check_writable(path: &Path, _meta: &Metadata) -> Result<(), Error> {
    match rustix::fs::access(path, rustix::fs::Access::WRITE_OK) {
        Ok(()) | Err(rustix::io::Errno::TXTBSY) => Ok(()),
        Err(e) => Err(Error::io(path, e.into())),
    }
}

/// Refuses a file with the read-only attribute, which Windows would not let be replaced.
#[cfg(not(unix))]
fn check_writable(path: &Path, meta: &Metadata) -> Result<(), Error> {
    if meta.permissions().readonly() {
        Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "the file is read-only",
            ),
        ))
    } else {
        Ok(())
    }
}

/// Whether `a` (with metadata `a_meta`) and `b` (`b_meta`) are the same file: the same device
/// and inode.
#[cfg(unix)]
pub(crate) fn same_file(_a: &Path, a_meta: &Metadata, _b: &Path, b_meta: &Metadata) -> bool {
    a_meta.dev() == b_meta.dev() && a_meta.ino() == b_meta.ino()
}

/// Whether `a` and `b` are the same file: the same volume and file index (std's metadata does
/// not carry them on Windows, so both are opened).
#[cfg(not(unix))]
pub(crate) fn same_file(a: &Path, _a_meta: &Metadata, b: &Path, _b_meta: &Metadata) -> bool {
    same_file::is_same_file(a, b).unwrap_or(false)
}

/// The permissions a file written for `like` gets: its mode bits (without the file type) on
/// unix, its read-only attribute elsewhere.
fn permissions_of(like: &Metadata) -> Permissions {
    #[cfg(unix)]
    return Permissions::from_mode(like.mode() & 0o7777);
    #[cfg(not(unix))]
    return like.permissions();
}

/// Makes the file at `dest` hold `new`. `old` is what it holds now (empty when unknown);
/// `existing` is its metadata (`None` when there is no such file yet: it is created with the
/// mode of `input`, the metadata of the file read, owned by this user). An existing file this user may not write is refused. A
/// temporary file beside `dest` is written, given the existing file's owner, group, extended
/// attributes and mode, and renamed over `dest`. When any of that is refused (a read-only
/// directory, an owner this user cannot give), `dest` is rewritten in place instead: the bytes
/// past its current end first, so that a full disk fails before any existing byte changes, then
/// only the blocks that differ.
pub(crate) fn replace(
    dest: &Path,
    old: &[u8],
    new: &[u8],
    existing: Option<&Metadata>,
    input: &Metadata,
) -> Result<(), Error> {
    if let Some(meta) = existing {
        check_writable(dest, meta)?;
    }
    match by_rename(dest, new, existing, input) {
        Ok(()) => Ok(()),
        Err(renaming) if existing.is_some() => in_place(dest, old, new).map_err(|e| {
            Error::io(
                dest,
                std::io::Error::new(
                    e.kind(),
                    format!("{e} (writing in place; a new file beside it failed: {renaming})"),
                ),
            )
        }),
        Err(e) => Err(Error::io(dest, e)),
    }
}

fn by_rename(
    dest: &Path,
    new: &[u8],
    existing: Option<&Metadata>,
    input: &Metadata,
) -> std::io::Result<()> {
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = dest
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".elf-patch")
        .tempfile_in(dir)?;
    temp.write_all(new)?;
    let file = temp.as_file();
    // In this order: a change of owner clears file capabilities, so the attributes follow it;
    // the mode comes last because a change of owner may clear set-user-ID bits.
    #[cfg(unix)]
    if let Some(keep) = existing {
        let own = file.metadata()?;
        if (own.uid(), own.gid()) != (keep.uid(), keep.gid()) {
            std::os::unix::fs::fchown(file, Some(keep.uid()), Some(keep.gid()))?;
        }
        copy_xattrs(dest, file)?;
    }
    file.set_permissions(permissions_of(existing.unwrap_or(input)))?;
    temp.persist(dest).map_err(|e| e.error)?;
    Ok(())
}

/// Copies the extended attributes of `from` (ACLs, security labels, user attributes) to `to`.
/// A file system without extended attributes has none to copy.
#[cfg(unix)]
fn copy_xattrs(from: &Path, to: &File) -> std::io::Result<()> {
    use xattr::FileExt as _;
    let names = match xattr::list(from) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => return Ok(()),
        Err(e) => return Err(e),
    };
    for name in names {
        if let Some(value) = xattr::get(from, &name)? {
            to.set_xattr(&name, &value)?;
        }
    }
    Ok(())
}

/// Rewrites `dest` (holding `old`) to hold `new` through the same inode.
fn in_place(dest: &Path, old: &[u8], new: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new().write(true).open(dest)?;
    let common = old.len().min(new.len());
    if new.len() > old.len() {
        file.seek(SeekFrom::Start(old.len() as u64))?;
        if let Err(e) = file.write_all(&new[old.len()..]) {
            let _ = file.set_len(old.len() as u64);
            return Err(e);
        }
    }
    const BLOCK: usize = 4096;
    for start in (0..common).step_by(BLOCK) {
        let end = (start + BLOCK).min(common);
        if old[start..end] != new[start..end] {
            file.seek(SeekFrom::Start(start as u64))?;
            file.write_all(&new[start..end])?;
        }
    }
    if new.len() < old.len() || old.is_empty() {
        file.set_len(new.len() as u64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
