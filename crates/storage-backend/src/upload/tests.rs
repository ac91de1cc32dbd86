use super::*;

#[test]
fn shown_is_the_staged_path_or_the_uri() {
    let location = StorageLocation::new("b", "1-linux/logs/g");
    assert_eq!(shown(None, &location), "s3://b/1-linux/logs/g");
    assert_eq!(
        shown(Some(Path::new("/stage")), &location),
        // Joined a component at a time (`\\` between them on Windows).
        Path::new("/stage")
            .join("1-linux")
            .join("logs")
            .join("g")
            .display()
            .to_string()
    );
}

#[tokio::test]
async fn preflight_of_a_staging_dir() {
    let staging = tempfile::tempdir().unwrap();
    let backend = StorageBackend::for_upload(
        Some(staging.path()),
        TransferOptions::default(),
        "us-east-2",
        Arc::new(crate::NoReporter),
        &|_| None,
    )
    .await
    .unwrap();
    let root = StorageLocation::new("b", "1-linux");
    let line = backend
        .preflight_upload(&root, Some(staging.path()))
        .await
        .unwrap();
    assert_eq!(
        line,
        format!(
            "[INFO] Preflight ok: {} is reachable and writable",
            shown(Some(staging.path()), &root)
        )
    );
}
