use super::*;

#[test]
fn the_group_fits_the_layout() {
    let mut plan = Plan {
        packages_dir: PathBuf::new(),
        artifact_group: String::new(),
        run_id: "5".to_owned(),
        bucket: None,
        multiarch: false,
        output_dir: None,
        options: TransferOptions::default(),
        preflight: false,
    };
    assert_eq!(
        plan.check_group().unwrap_err().to_string(),
        "--artifact-group is required for single-arch builds"
    );
    plan.artifact_group = "a/b".to_owned();
    assert!(matches!(
        plan.check_group(),
        Err(KeyError::BadCharacter { .. })
    ));
    plan.multiarch = true;
    assert_eq!(plan.check_group(), Ok(()));
    plan.multiarch = false;
    plan.artifact_group = "gfx94X-dcgpu".to_owned();
    assert_eq!(plan.check_group(), Ok(()));
}

#[test]
fn a_missing_packages_directory_stops_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        packages_dir: dir.path().join("missing"),
        artifact_group: "gfx94X-dcgpu".to_owned(),
        run_id: "5".to_owned(),
        bucket: None,
        multiarch: false,
        output_dir: None,
        options: TransferOptions::default(),
        preflight: false,
    };
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let reporter = Arc::new(storage_backend::NoReporter);
    let err = crate::package_repo::poll_ready(run(&plan, reporter, &|_| None, &mut out, &mut log))
        .unwrap_err();
    assert!(matches!(err, Error::Dir(_)), "{err}");
    assert!(
        err.to_string().starts_with("Packages root directory"),
        "{err}"
    );
    assert!(out.is_empty() && log.is_empty());
}
