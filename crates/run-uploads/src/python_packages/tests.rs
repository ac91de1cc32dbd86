use super::*;

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
