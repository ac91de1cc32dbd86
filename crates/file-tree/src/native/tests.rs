use super::*;

#[test]
fn verbatim_prefixes_of_ordinary_paths_are_dropped() {
    for (given, shown) in [
        (r"\\?\C:\Users\x\rocm", r"C:\Users\x\rocm"),
        (r"\\?\UNC\server\share\x", r"\\server\share\x"),
        // Not an ordinary drive path: kept as it is.
        (r"\\?\GLOBALROOT\Device\x", r"\\?\GLOBALROOT\Device\x"),
        (r"\\?\C:", r"\\?\C:"),
        ("/home/x/rocm", "/home/x/rocm"),
        (r"C:\x", r"C:\x"),
    ] {
        assert_eq!(
            without_verbatim_prefix(PathBuf::from(given)),
            PathBuf::from(shown),
            "{given}"
        );
    }
}

#[test]
fn resolved_paths_exist_and_are_absolute() {
    let t = tempfile::tempdir().unwrap();
    fs_err::create_dir(t.path().join("d")).unwrap();
    let p = resolved(&t.path().join("d").join("..").join("d")).unwrap();
    assert!(p.is_absolute() && p.is_dir(), "{}", p.display());
    assert!(!p.to_string_lossy().starts_with(r"\\?\"), "{}", p.display());
    assert!(resolved(&t.path().join("nope")).is_err());
}

#[test]
fn native_paths_use_the_system_separator() {
    let p = native_path("B:/build").join("logs");
    if cfg!(windows) {
        assert_eq!(p.to_str().unwrap(), r"B:\build\logs");
        assert_eq!(native_path("a/b/c"), PathBuf::from(r"a\b\c"));
    } else {
        assert_eq!(p.to_str().unwrap(), "B:/build/logs");
        assert_eq!(native_path("a/b/c"), PathBuf::from("a/b/c"));
    }
}
