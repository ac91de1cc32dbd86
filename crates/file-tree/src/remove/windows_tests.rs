use super::remove_tree;

/// A tree whose files and directories carry the read-only attribute (as an archive extracted
/// on Windows leaves files that were 0444 or 0555) is removed whole.
#[test]
fn read_only_files_and_directories_are_removed() {
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("tree");
    fs_err::create_dir_all(tree.join("ro/inner")).unwrap();
    fs_err::write(tree.join("ro/inner/f"), "x").unwrap();
    fs_err::write(tree.join("ro/g"), "y").unwrap();
    for path in ["ro/inner/f", "ro/g", "ro/inner", "ro"] {
        let path = tree.join(path);
        let mut permissions = fs_err::metadata(&path).unwrap().permissions();
        permissions.set_readonly(true);
        fs_err::set_permissions(&path, permissions).unwrap();
    }
    remove_tree(&tree).unwrap();
    assert!(!tree.exists());
}
