//! A small S3 transfer driver over the library, for benchmarks and end-to-end checks.
//!
//! ```text
//! transfer upload-dir DIR BUCKET PREFIX     upload every file below DIR
//! transfer upload FILE BUCKET KEY           upload one file (multipart above 8 MiB)
//! transfer download BUCKET PREFIX KEY DEST  download artifact KEY of run PREFIX, verified
//! ```
//! The endpoint and credentials come from the standard `AWS_*` variables.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use artifact_backend::ArtifactBackend;
use storage_backend::{ClientOptions, S3Client, StorageBackend, StorageLocation, TransferOptions};
use workflow_outputs::{Platform, WorkflowOutputRoot};

async fn run(args: &[String]) -> Result<String, Box<dyn std::error::Error>> {
    let client = S3Client::connect(&ClientOptions::default()).await;
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
            let root = WorkflowOutputRoot::new(bucket, "", run_id, Platform::Linux)?;
            let got = ArtifactBackend::s3(client, root).download_artifact(key, Path::new(dest)).await?;
            Ok(format!("downloaded {} bytes, sha256 {}, verified {}", got.fetched, got.sha256, got.verified))
        }
        _ => Err("usage: transfer upload-dir DIR BUCKET PREFIX | upload FILE BUCKET KEY | download BUCKET RUN_ID KEY DEST".into()),
    }
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
