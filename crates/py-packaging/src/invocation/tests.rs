use super::*;

fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(dir.path().join(TEMPLATES)).unwrap();
    fs_err::write(
        dir.path().join("version.json"),
        r#"{"rocm-version": "7.13.0"}"#,
    )
    .unwrap();
    dir
}

#[test]
fn the_checkout_is_found_upwards_and_gives_the_defaults() {
    let dir = checkout();
    let sub = dir.path().join("a/b");
    fs_err::create_dir_all(&sub).unwrap();
    assert_eq!(find_therock(&sub).as_deref(), Some(dir.path()));
    let mut out = Vec::new();
    let resolved = Given::default()
        .resolve(|| Ok(sub.clone()), &mut out)
        .unwrap();
    assert_eq!(
        resolved,
        Resolved {
            templates_dir: dir.path().join(TEMPLATES),
            version: "7.13.0.dev0".to_owned(),
            linux_targets: None,
            windows_targets: None,
        }
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "::: Version not specified, choosing a default\n::: Version defaulting to 7.13.0.dev0\n"
    );
}

#[test]
fn what_is_given_needs_no_checkout() {
    let given = Given {
        templates_dir: Some(Path::new("/t")),
        version: "1.0",
        linux_families: Some(" ; "),
        ..Given::default()
    };
    let mut out = Vec::new();
    let resolved = given
        .resolve(|| Ok(PathBuf::from("/nonexistent")), &mut out)
        .unwrap();
    assert_eq!(resolved.templates_dir, Path::new("/t"));
    assert_eq!(resolved.version, "1.0");
    assert!(out.is_empty());
}

#[test]
fn missing_checkout_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = || Ok(dir.path().to_path_buf());
    let err = Given::default().resolve(cwd, &mut Vec::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no package templates: pass --templates-dir or --therock-dir, or run inside a TheRock checkout"
    );
    let given = Given {
        templates_dir: Some(Path::new("/t")),
        version: "1.0",
        linux_families: Some("gfx94X-dcgpu"),
        ..Given::default()
    };
    let err = given.resolve(cwd, &mut Vec::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--therock-dir is needed to read version.json and the GPU family table"
    );
}

#[test]
fn source_date_epoch_values() {
    assert_eq!(source_date_epoch(None).unwrap(), DEFAULT_EPOCH);
    assert_eq!(
        source_date_epoch(Some(" 1700000000\n")).unwrap(),
        1_700_000_000
    );
    let err = source_date_epoch(Some("soon")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "SOURCE_DATE_EPOCH=\"soon\" is not a number of seconds"
    );
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn timings_line_names_every_stage() {
    let line = timings_line(Duration::from_millis(1500));
    assert!(
        line.starts_with("timings: total 1.50s; populate "),
        "{line}"
    );
    assert!(line.contains(", sdist "), "{line}");
}
