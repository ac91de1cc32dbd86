//! Removing a tree that holds read-only directories.

use std::io;
use std::path::Path;

/// Removes the directory `path` and everything below it, as `rm -rf` does for its owner:
/// directories without write permission for their owner (a `0555` directory kept from an
/// archive, as `tar -x` keeps it) are made writable first, so that an ordinary user can
/// replace a tree they unpacked. Symlinks are removed, never followed.
///
/// # Errors
/// The I/O error of the removal that still fails.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            for entry in walkdir::WalkDir::new(path).follow_links(false) {
                let Ok(entry) = entry else { continue };
                if entry.file_type().is_dir() {
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

/// Clears the read-only attribute of directory `dir`.
#[cfg(not(unix))]
fn make_owner_writable(dir: &Path) -> io::Result<()> {
    let mut permissions = std::fs::symlink_metadata(dir)?.permissions();
    permissions.set_readonly(false);
    std::fs::set_permissions(dir, permissions)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::remove_tree;
    use std::os::unix::fs::PermissionsExt as _;

    /// A tree with read-only directories, made and removed by an ordinary user: as root the
    /// check runs in a thread whose own user is `nobody` (65534), since root passes every
    /// permission check.
    #[test]
    fn read_only_directories_are_removed_by_their_owner() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("owned");
        fs_err::create_dir(&base).unwrap();
        let root = rustix::process::geteuid().is_root();
        if root {
            std::os::unix::fs::chown(&base, Some(65534), Some(65534)).unwrap();
            fs_err::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let base2 = base.clone();
        std::thread::spawn(move || {
            if root {
                // This thread only: the others keep root.
                let nobody = rustix::process::Uid::from_raw(65534);
                rustix::thread::set_thread_res_uid(nobody, nobody, nobody).unwrap();
            }
            let tree = base2.join("tree");
            fs_err::create_dir_all(tree.join("ro/inner")).unwrap();
            fs_err::write(tree.join("ro/inner/f"), "x").unwrap();
            fs_err::write(tree.join("ro/g"), "y").unwrap();
            std::os::unix::fs::symlink("/", tree.join("ro/link")).unwrap();
            for dir in ["ro/inner", "ro"] {
                fs_err::set_permissions(tree.join(dir), std::fs::Permissions::from_mode(0o555))
                    .unwrap();
            }
            let plain = std::fs::remove_dir_all(&tree).unwrap_err();
            assert_eq!(plain.kind(), std::io::ErrorKind::PermissionDenied);
            remove_tree(&tree).unwrap();
            assert!(!tree.exists());
        })
        .join()
        .unwrap();
    }
}
