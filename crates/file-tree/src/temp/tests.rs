use std::os::unix::fs::PermissionsExt as _;

/// The process umask, read back from a file created with 0666.
fn umask_mode(dir: &std::path::Path) -> u32 {
    let probe = dir.join("probe");
    fs_err::write(&probe, "").unwrap();
    let mode = fs_err::metadata(&probe).unwrap().permissions().mode() & 0o777;
    fs_err::remove_file(probe).unwrap();
    mode
}

#[test]
fn modes_are_those_of_a_plain_create() {
    let dir = tempfile::tempdir().unwrap();
    let file_mode = umask_mode(dir.path());
    let file = super::temp_file_in(dir.path(), "a.tar.zst").unwrap();
    let name = file
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with(".a.tar.zst.") && name.ends_with(".partial"),
        "{name}"
    );
    let mode = file.as_file().metadata().unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, file_mode);
    assert_ne!(mode, 0o600, "owner-only, as tempfile's default");
    let sub = super::temp_dir_in(dir.path(), "a").unwrap();
    let mode = fs_err::metadata(sub.path()).unwrap().permissions().mode() & 0o777;
    // 0777 less the umask: the read and write bits of a file, and searchable.
    assert_eq!(mode & 0o666, file_mode);
    assert_eq!(mode & 0o100, 0o100);
}
