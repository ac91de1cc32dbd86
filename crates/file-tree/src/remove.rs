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
