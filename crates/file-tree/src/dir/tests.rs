use super::*;

#[test]
fn existing_dirs_are_absolute_and_missing_ones_named() {
    let t = tempfile::tempdir().unwrap();
    let dir = existing_dir(t.path(), "Report directory").unwrap();
    assert!(dir.is_absolute());
    fs_err::write(t.path().join("f"), "x").unwrap();
    for missing in [t.path().join("nope"), t.path().join("f")] {
        let err = existing_dir(&missing, "Tarballs directory").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Tarballs directory not found: `{}`", missing.display())
        );
    }
}
