use super::*;

fn manifest_failure(name: &str) -> Error {
    Error::Manifest {
        path: PathBuf::from(name),
        source: storage_backend::Error::MissingSource(PathBuf::from(name)),
    }
}

#[test]
fn combined_failures_list_each_with_its_causes() {
    assert!(combine(Vec::new()).is_ok());
    let one = combine(vec![manifest_failure("m.json")]).unwrap_err();
    assert!(matches!(one, Error::Manifest { .. }));
    assert_eq!(
        full(&one),
        "Failed to upload the manifest `m.json`: Source file `m.json` not found"
    );
    let several = combine(vec![
        Error::NoManifest(PathBuf::from("b/m.json")),
        manifest_failure("x"),
    ])
    .unwrap_err();
    assert_eq!(
        several.to_string(),
        "therock_manifest.json not found at `b/m.json`\nFailed to upload the manifest `x`: Source file `x` not found"
    );
    assert!(std::error::Error::source(&several).is_none());
    assert!(!several.is_usage());
}

#[test]
fn usage_and_closed_pipes() {
    let endpoint = Error::Storage(storage_backend::Error::InvalidEndpoint {
        var: "AWS_ENDPOINT_URL",
        value: "nope".to_owned(),
    });
    assert!(endpoint.is_usage());
    assert!(!Error::NoRunId.is_usage());
    let pipe = || Error::Output(io::Error::from(io::ErrorKind::BrokenPipe));
    assert!(pipe().is_broken_pipe());
    assert!(Error::Several(vec![Error::NoRunId, pipe()]).is_broken_pipe());
    assert!(!Error::NoRunId.is_broken_pipe());
}
