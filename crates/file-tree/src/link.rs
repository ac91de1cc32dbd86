//! Symbolic and hard links put in place without a moment where the name is missing.

use std::io;
use std::path::Path;

use crate::FileError;

/// Makes `link` a symbolic link to `target`, replacing whatever had that name (an older link,
/// a file): the link is made under a temporary name beside `link`, then renamed over it, so
/// `link` is never missing. The directory of `link` is created when it is missing.
///
/// # Errors
/// A [`FileError`] naming the directory, the temporary link or `link` itself.
pub fn symlink_replacing(target: &Path, link: &Path) -> Result<(), FileError> {
    replacing(link, |temp| symlink(target, temp))
}

/// Makes `link` a hard link to the file `target` (another name of the same file: what Windows
/// allows without a privilege, where a symbolic link needs one), replacing whatever had that
/// name as [`symlink_replacing`] does. When the file system has no hard links (or `target` is
/// on another volume), `link` is a copy of `target`.
///
/// # Errors
/// A [`FileError`] naming the directory, the temporary link or `link` itself.
pub fn hard_link_replacing(target: &Path, link: &Path) -> Result<(), FileError> {
    replacing(link, |temp| {
        std::fs::hard_link(target, temp).or_else(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                Err(e)
            } else {
                std::fs::copy(target, temp).map(drop)
            }
        })
    })
}

/// Runs `make` on a new temporary name beside `link` (its directory created when missing),
/// then renames the temporary over `link`. The temporary's name is random, not the process id:
/// processes whose ids repeat (under another host or container sharing the directory, or
/// another Wine server) link at once without taking each other's temporaries.
fn replacing(link: &Path, make: impl Fn(&Path) -> io::Result<()>) -> Result<(), FileError> {
    let dir = link.parent().unwrap_or(Path::new("."));
    let name = link
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    fs_create_dir_all(dir).map_err(|e| FileError::write(dir, e))?;
    let temp = crate::temp::make_in(dir, &format!("{name}.link"), &make)
        .map_err(|e| FileError::write(dir.join(format!(".{name}.link.XXXXXX.partial")), e))?;
    rename(&temp, link).map_err(|e| FileError::write(link, e))?;
    // Removed when dropped, when still there: the rename failed, or did nothing (a rename of a
    // hard link over another name of the same file leaves both names).
    drop(temp);
    Ok(())
}

#[expect(
    clippy::disallowed_methods,
    reason = "the caller names the path in FileError"
)]
fn fs_create_dir_all(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[expect(
    clippy::disallowed_methods,
    reason = "the caller names the path in FileError"
)]
fn rename(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target, link)
}

#[cfg(test)]
mod tests;
