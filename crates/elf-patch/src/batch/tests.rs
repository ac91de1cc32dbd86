use std::path::Path;

use rock_ci_test_support::elf::cc;

use super::*;

fn library(dir: &Path) -> PathBuf {
    cc(
        dir,
        "libx.so.1",
        "int x(void) { return 1; }\n",
        &[
            "-shared",
            "-fPIC",
            "-Wl,-soname,libx.so.1",
            "-Wl,-rpath,/opt/a",
        ],
    )
}

#[test]
fn prints_the_values_before_the_edit() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let print = Print {
        soname: true,
        rpath: true,
        needed: true,
        ..Print::default()
    };
    let edit = Edit {
        set_soname: Some("liby.so.1".to_owned()),
        ..Edit::default()
    };
    let mut out = Vec::new();
    run_files(std::slice::from_ref(&lib), print, &edit, None, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("libx.so.1\n/opt/a\n"), "{text}");
    assert_eq!(
        read_file(&lib).unwrap().soname.as_deref(),
        Some("liby.so.1")
    );

    // A library has no interpreter: an error naming the file, nothing printed.
    let mut out = Vec::new();
    let interpreter = Print {
        interpreter: true,
        soname: true,
        ..Print::default()
    };
    let err = print_values(&lib, interpreter, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: no program interpreter", lib.display())
    );
    assert!(out.is_empty());
}

#[test]
fn every_file_is_attempted() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let (a, b) = (dir.path().join("missing-a"), dir.path().join("missing-b"));
    let print = Print {
        soname: true,
        ..Print::default()
    };
    let mut out = Vec::new();
    let err = run_files(
        &[a.clone(), lib, b.clone()],
        print,
        &Edit::default(),
        None,
        &mut out,
    )
    .unwrap_err();
    assert_eq!(String::from_utf8(out).unwrap(), "libx.so.1\n");
    let text = err.to_string();
    assert!(text.starts_with("2 files failed:\n  "), "{text}");
    assert!(text.contains(&a.display().to_string()), "{text}");
    assert!(text.contains(&format!("\n  {}", b.display())), "{text}");

    // One failure is that file's own error.
    let err = run_files(
        std::slice::from_ref(&a),
        print,
        &Edit::default(),
        None,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert!(err.to_string().starts_with(&a.display().to_string()));
}

#[test]
fn allowed_prefixes_split_on_colons() {
    assert_eq!(Edit::prefixes_of("/opt/a::/usr:"), ["/opt/a", "/usr"]);
    assert!(Edit::prefixes_of("").is_empty());
}
