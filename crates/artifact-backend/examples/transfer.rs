//! A small S3 transfer driver over the library, for benchmarks and end-to-end checks.
//!
//! ```text
//! transfer upload-dir DIR BUCKET PREFIX     upload every file below DIR
//! transfer upload FILE BUCKET KEY           upload one file (multipart above 8 MiB)
//! transfer download BUCKET PREFIX KEY DEST  download artifact KEY of run PREFIX, verified
//! transfer get-all BUCKET PREFIX N          GET every object below PREFIX, N at a time,
//!                                           bodies counted and dropped (a network bound)
//! ```
//! The endpoint and credentials come from the standard `AWS_*` variables.

extern crate rock_ci_artifact_backend as artifact_backend;

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use artifact_backend::ArtifactBackend;
use storage_backend::{
    ClientOptions, S3Client, S3StorageBackend, StorageBackend, StorageLocation, TransferOptions,
};
use workflow_outputs::{Platform, WorkflowOutputRoot};

async fn run(args: &[String]) -> Result<String, Box<dyn std::error::Error>> {
    let client = S3Client::connect(&ClientOptions::default()).await?;
    let storage = StorageBackend::s3(client.clone(), TransferOptions::default());
    match args {
        [cmd, dir, bucket, prefix] if cmd == "upload-dir" => {
            let report = storage
                .upload_directory(Path::new(dir), &StorageLocation::new(bucket, prefix), &[], &[])
                .await?;
            Ok(format!("uploaded {} files", report.transferred))
        }
        [cmd, file, bucket, key] if cmd == "upload" => {
            storage.upload_file(Path::new(file), &StorageLocation::new(bucket, key)).await?;
            Ok(format!("uploaded {file}"))
        }
        [cmd, bucket, run_id, key, dest] if cmd == "download" => {
            let root = WorkflowOutputRoot::new(bucket, workflow_outputs::ExternalRepo::NONE, run_id, Platform::Linux)?;
            let got = ArtifactBackend::s3(client, root).download_artifact(key, Path::new(dest)).await?;
            Ok(format!("downloaded {} bytes, sha256 {}, verified {}", got.fetched, got.sha256, got.verified))
        }
        [cmd, bucket, prefix, n] if cmd == "get-all" => get_all(&client, bucket, prefix, n.parse()?).await,
        _ => Err("usage: transfer upload-dir DIR BUCKET PREFIX | upload FILE BUCKET KEY | download BUCKET RUN_ID KEY DEST | get-all BUCKET PREFIX N".into()),
    }
}

/// GETs every object below `prefix`, `n` at a time; the bodies are read and dropped.
async fn get_all(
    client: &S3Client,
    bucket: &str,
    prefix: &str,
    n: usize,
) -> Result<String, Box<dyn std::error::Error>> {
    use futures::{StreamExt as _, TryStreamExt as _};
    let storage = S3StorageBackend::new(client.clone(), TransferOptions::default());
    let objects = storage.list_prefix(bucket, prefix, false).await?;
    let count = objects.len();
    let storage = &storage;
    let bytes: Vec<u64> = futures::stream::iter(objects)
        .map(|object| async move {
            let loc = StorageLocation::new(bucket, object.key);
            let mut body = storage.get(&loc, None, None).await?;
            let mut total = 0u64;
            while let Some(chunk) = body.next_chunk().await? {
                total += chunk.len() as u64;
            }
            Ok::<_, Box<dyn std::error::Error>>(total)
        })
        .buffer_unordered(n.max(1))
        .try_collect()
        .await?;
    Ok(format!(
        "got {count} objects, {} bytes",
        bytes.iter().sum::<u64>()
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match runtime.block_on(run(&args)) {
        Ok(line) => {
            let _ = writeln!(std::io::stdout(), "{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "error: {}",
                storage_backend::chain(e.as_ref())
            );
            ExitCode::FAILURE
        }
    }
}
