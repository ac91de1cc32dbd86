//! Removing a tree that holds read-only directories.

use std::io;
use std::path::Path;

/// Removes the directory `path` and everything below it, as `rm -rf` does for its owner:
/// directories without write permission for their owner (a `0555` directory kept from an
/// archive, as `tar -x` keeps it) are made writable first, so that an ordinary user can
/// replace a tree they unpacked; on Windows, files and directories with the read-only
/// attribute. Symlinks are removed, never followed.
///
/// # Errors
/// The I/O error of the removal that still fails.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            for entry in walkdir::WalkDir::new(path).follow_links(false) {
                let Ok(entry) = entry else { continue };
                // Unix: a directory's write permission guards its entries. Windows: the
                // read-only attribute guards the file or directory that carries it.
                if entry.file_type().is_dir() || cfg!(not(unix)) {
                    let _ = make_owner_writable(entry.path());
                }
            }
            std::fs::remove_dir_all(path)
        }
        other => other,
    }
}

/// Removes the file (or symlink) `path`; on Windows one with the read-only attribute too (an
/// archive's 0444 file, as extracted there), whose attribute is cleared first when the removal
/// is refused. On Unix a file's own mode does not guard its removal.
///
/// # Errors
/// The I/O error of the removal that still fails.
pub fn remove_file(path: &Path) -> io::Result<()> {
    match fs_err::remove_file(path) {
        Err(e) if cfg!(not(unix)) && e.kind() == io::ErrorKind::PermissionDenied => {
            if make_owner_writable(path).is_err() {
                return Err(e);
            }
            fs_err::remove_file(path)
        }
        other => other,
    }
}

/// Renames `from` to `to`, replacing what is there; on Windows a file with the read-only
/// attribute there too (an earlier run's 0444 file, as extracted there), whose attribute is
/// cleared when the rename is refused.
///
/// # Errors
/// The I/O error of the rename that still fails.
pub fn rename_replacing(from: &Path, to: &Path) -> io::Result<()> {
    match fs_err::rename(from, to) {
        Err(e)
            if cfg!(not(unix))
                && e.kind() == io::ErrorKind::PermissionDenied
                && fs_err::symlink_metadata(to).is_ok_and(|m| m.permissions().readonly()) =>
        {
            if make_owner_writable(to).is_err() {
                return Err(e);
            }
            fs_err::rename(from, to)
        }
        other => other,
    }
}

/// Sets the modification time of the file or directory `path` (its access time left alone)
/// through a handle that needs no write access to its contents: a read-only file (0444, or
/// with the read-only attribute) gets its time too.
///
/// # Errors
/// The I/O error of opening `path` or of setting the time.
pub fn set_modified(path: &Path, mtime: std::time::SystemTime) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt as _;
        // FILE_WRITE_ATTRIBUTES; FILE_FLAG_BACKUP_SEMANTICS (needed to open a directory).
        options.access_mode(0x100).custom_flags(0x0200_0000);
    }
    options.open(path)?.set_modified(mtime)
}

/// Adds owner read, write and search permission to directory `dir`.
#[cfg(unix)]
fn make_owner_writable(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut permissions = std::fs::symlink_metadata(dir)?.permissions();
    permissions.set_mode(permissions.mode() | 0o700);
    std::fs::set_permissions(dir, permissions)
}

/// Clears the read-only attribute of `dir` (a file or a directory).
#[cfg(not(unix))]
fn make_owner_writable(dir: &Path) -> io::Result<()> {
    let mut permissions = std::fs::symlink_metadata(dir)?.permissions();
    permissions.set_readonly(false);
    std::fs::set_permissions(dir, permissions)
}

// Unix permission bits checked as an ordinary user (root drops to `nobody` in one thread with
// Linux's per-thread credentials).
#[cfg(all(test, target_os = "linux"))]
mod tests;
// Windows: the read-only attribute on files and directories instead.
#[cfg(all(test, windows))]
mod windows_tests;
