//! Reading an input and writing a result without ever leaving neither: regular files only,
//! the new image complete in memory before anything is written, then a temporary file renamed
//! over the destination (keeping its mode, owner, group and extended attributes) or, where that
//! is not possible, the destination rewritten in place.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{FileExt as _, FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::Error;

/// What a non-regular file is, for the error.
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
pub(crate) fn read_regular(path: &Path) -> Result<(Vec<u8>, Metadata), Error> {
    let io = |e| Error::io(path, e);
    refuse_irregular(path, &fs_err::metadata(path).map_err(io)?)?;
    let file = fs_err::File::open(path).map_err(io)?;
    // The path may have been replaced between the two looks: check what was opened.
    let meta = file.metadata().map_err(io)?;
    refuse_irregular(path, &meta)?;
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // std's own file reads the size it knows in one call (fs-err's wrapper grows its reads from
    // 8 KiB, four calls for a 121 KB library).
    file.file().read_to_end(&mut data).map_err(io)?;
    Ok((data, meta))
}

/// Where a write to `path` lands: symlinks followed to their end, a dangling one to the path it
/// names (which the write creates), as `open(2)` with `O_CREAT` would.
pub(crate) fn write_target(path: &Path) -> Result<PathBuf, Error> {
    // Linux's limit on links followed in one lookup.
    const MAX_LINKS: usize = 40;
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs_err::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let text = fs_err::read_link(&current).map_err(|e| Error::io(path, e))?;
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
    Err(Error::io(path, rustix::io::Errno::LOOP.into()))
}

/// Refuses a file this user may not write (`access(2)`, `W_OK`: the mode bits, ACLs, a
/// read-only mount), as patchelf's opening it for writing does, even where the directory would
/// let a new file be renamed over it. A running program (`ETXTBSY`) may be replaced.
fn check_writable(path: &Path) -> Result<(), Error> {
    match rustix::fs::access(path, rustix::fs::Access::WRITE_OK) {
        Ok(()) | Err(rustix::io::Errno::TXTBSY) => Ok(()),
        Err(e) => Err(Error::io(path, e.into())),
    }
}

/// Whether `a` and `b` are the same file.
pub(crate) fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Makes the file at `dest` hold `new`. `old` is what it holds now (empty when unknown);
/// `existing` is its metadata (`None` when there is no such file yet: it is created with mode
/// `new_mode`, owned by this user). An existing file this user may not write is refused. A
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
    new_mode: u32,
) -> Result<(), Error> {
    if existing.is_some() {
        check_writable(dest)?;
    }
    match by_rename(dest, new, existing, new_mode) {
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
    new_mode: u32,
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
    let mode = match existing {
        Some(keep) => {
            // In this order: a change of owner clears file capabilities, so the attributes
            // follow it; the mode comes last because a change of owner may clear set-user-ID
            // bits.
            let own = file.metadata()?;
            if (own.uid(), own.gid()) != (keep.uid(), keep.gid()) {
                std::os::unix::fs::fchown(file, Some(keep.uid()), Some(keep.gid()))?;
            }
            copy_xattrs(dest, file)?;
            keep.mode()
        }
        None => new_mode,
    };
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
    temp.persist(dest).map_err(|e| e.error)?;
    Ok(())
}

/// Copies the extended attributes of `from` (ACLs, security labels, user attributes) to `to`.
/// A file system without extended attributes has none to copy.
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
            file.write_all_at(&new[start..end], start as u64)?;
        }
    }
    if new.len() < old.len() || old.is_empty() {
        file.set_len(new.len() as u64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
