//! Symbolic links put in place without a moment where the name is missing.

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
    let dir = link.parent().unwrap_or(Path::new("."));
    let name = link
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    fs_create_dir_all(dir).map_err(|e| FileError::write(dir, e))?;
    let temp = dir.join(format!(".{name}.{}.link.partial", std::process::id()));
    let _ = remove_file(&temp);
    symlink(target, &temp).map_err(|e| FileError::write(&temp, e))?;
    if let Err(e) = rename(&temp, link) {
        let _ = remove_file(&temp);
        return Err(FileError::write(link, e));
    }
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
fn remove_file(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)
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
