//! Which backend the environment selects.

use std::collections::HashMap;

use artifact_backend::{ArtifactBackend, backend_from_env};
use workflow_outputs::{ForkEvidence, Platform};

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| map.get(k).cloned()
}

// Spec §18.6: create_backend_from_env.
#[tokio::test(flavor = "multi_thread")]
async fn backend_from_env_vectors() {
    let t = tempfile::tempdir().unwrap();
    let staging = t.path().to_str().unwrap();
    let no_fork = ForkEvidence::Event {
        is_pr_from_fork: false,
    };
    let b = backend_from_env(
        None,
        None,
        None,
        no_fork,
        &env(&[
            ("THEROCK_LOCAL_STAGING_DIR", staging),
            ("THEROCK_RUN_ID", "env-run-id"),
            ("THEROCK_PLATFORM", "windows"),
        ]),
    )
    .await
    .unwrap();
    assert!(matches!(b, ArtifactBackend::Local(_)));
    assert!(
        b.base_uri().ends_with("env-run-id-windows"),
        "{}",
        b.base_uri()
    );
    let b = backend_from_env(
        Some("override-run"),
        None,
        Some(Platform::Darwin),
        no_fork,
        &env(&[("THEROCK_LOCAL_STAGING_DIR", staging)]),
    )
    .await
    .unwrap();
    assert!(b.base_uri().ends_with("override-run-darwin"));
    let err = backend_from_env(
        None,
        None,
        None,
        no_fork,
        &env(&[
            ("THEROCK_LOCAL_STAGING_DIR", staging),
            ("THEROCK_PLATFORM", "solaris"),
        ]),
    )
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("platform='solaris'"), "{err}");

    let s3_env = [
        ("THEROCK_RUN_ID", "s3-run-id"),
        ("GITHUB_REPOSITORY", "SomeUser/TheRock"),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
    ];
    let b = backend_from_env(
        None,
        Some("ROCm/TheRock".parse().unwrap()),
        Some(Platform::Linux),
        no_fork,
        &env(&s3_env),
    )
    .await
    .unwrap();
    assert!(matches!(b, ArtifactBackend::S3(_)));
    assert_eq!(b.root().bucket(), "therock-ci-artifacts");
    assert_eq!(b.root().prefix(), "s3-run-id-linux");
    let b = backend_from_env(None, None, Some(Platform::Linux), no_fork, &env(&s3_env))
        .await
        .unwrap();
    assert_eq!(
        b.base_uri(),
        "s3://therock-ci-artifacts-external/SomeUser-TheRock/s3-run-id-linux"
    );
    let b = backend_from_env(
        None,
        None,
        Some(Platform::Linux),
        no_fork,
        &env(&[
            ("GITHUB_RUN_ID", "555"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ]),
    )
    .await
    .unwrap();
    assert_eq!(b.root().run_id(), "555");
}
