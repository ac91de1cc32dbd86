//! Integration tests of the artifact backends: a local staging directory and a real
//! S3-protocol server on 127.0.0.1, with the same expectations for both where they overlap.

extern crate rock_ci_artifact_backend as artifact_backend;

mod cache;
mod env;
mod faults;
mod fetch;
mod local;
mod members;
mod s3;

use std::path::Path;

use artifact_backend::ArtifactBackend;
use rock_ci_test_support::S3Server;
use rock_ci_test_support::s3::ACCESS_KEY;
use storage_backend::{Anonymous, ClientOptions, Credentials, S3Client};
use workflow_outputs::{Platform, WorkflowOutputRoot};

pub(crate) fn write(path: &Path, content: &[u8]) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

pub(crate) async fn client(server: &S3Server, secret: &str) -> S3Client {
    S3Client::connect_with(
        &{
            let mut client_options = ClientOptions::default();
            client_options.region = Some("us-east-1".into());
            client_options.endpoint_url = Some(server.endpoint());
            client_options.anonymous = Anonymous::Never;
            client_options.credentials =
                Some(Credentials::new(ACCESS_KEY, secret, None, None, "test"));
            client_options.max_attempts = 2;
            client_options
        },
        &|_| None,
    )
    .await
    .expect("S3 client")
}

/// The `ETag` of object `key`.
pub(crate) async fn etag(client: &S3Client, bucket: &str, key: &str) -> String {
    storage_backend::S3StorageBackend::new(
        client.clone(),
        storage_backend::TransferOptions::default(),
    )
    .head_object(&storage_backend::StorageLocation::new(bucket, key))
    .await
    .unwrap()
    .expect("the object exists")
    .etag
}

/// The local backend of run `{run}-linux` in the staging directory `dir`.
pub(crate) fn local(dir: &Path, run: &str) -> ArtifactBackend {
    ArtifactBackend::local(
        dir,
        WorkflowOutputRoot::for_local(Some(run), Some(Platform::Linux), None).unwrap(),
    )
    .unwrap()
}

pub(crate) fn root(bucket: &str, external: &str, run: &str) -> WorkflowOutputRoot {
    WorkflowOutputRoot::new(
        bucket,
        workflow_outputs::ExternalRepo::parse(external).unwrap(),
        run,
        Platform::Linux,
    )
    .unwrap()
}

/// The names in directory `dir`, sorted; none when it does not exist.
pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs_err::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

pub(crate) fn names(entries: &[artifact_backend::ArtifactEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.file_name.as_str()).collect()
}

// Spec §18.6, local backend.
