use super::*;

#[test]
fn a_missing_package_directory_stops_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        pkg_type: PkgType::Deb,
        run_id: "5".to_owned(),
        package_dir: dir.path().join("missing"),
    };
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let err = poll_ready(run(
        &plan,
        Arc::new(storage_backend::NoReporter),
        &|_| None,
        &mut out,
        &mut log,
    ))
    .unwrap_err();
    assert!(matches!(err, Error::Dir(_)), "{err}");
    assert!(err.to_string().starts_with("Package directory"), "{err}");
    assert!(out.is_empty() && log.is_empty());
}
