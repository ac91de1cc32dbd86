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
