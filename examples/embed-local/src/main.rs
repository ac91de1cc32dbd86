//! A tool outside the rock-ci workspace that depends on `rock-ci-artifact-backend` alone, built
//! without its `s3` feature: everything happens in a local staging directory.
//!
//! `embed-local WORK_DIR`, on a current-thread tokio runtime:
//! 1. pushes stage `embed` of its own `BUILD_TOPOLOGY.toml` (two artifacts) from
//!    `WORK_DIR/build` into the staging directory `WORK_DIR/staging` as run 4243;
//! 2. lists the run's artifacts and fetches both into `WORK_DIR/fetched/{name}`, with a
//!    progress callback of its own;
//! 3. asks for the same run on S3 and prints the error this build gives (no S3 support).
//!
//! Exits 1 with the error's chain on failure.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use artifact_backend::build_topology::Checkout;
use artifact_backend::pipeline::TransferError;
use artifact_backend::stages::{Env, GivenRun, PushRequest, RunOptions, push};
use artifact_backend::storage_backend::{Error as StorageError, Reporter};
use artifact_backend::{ArtifactBackend, FlattenIndex, Layout, Platform, WorkflowOutputRoot};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const RUN_ID: &str = "4243";

/// The stage, its group and its two artifacts.
const TOPOLOGY: &str = r#"[metadata]
version = "2.0"
description = "The topology of the local embedding example"

[build_stages.embed]
artifact_groups = ["embed-group"]

[artifact_groups.embed-group]
artifact_group_deps = []

[artifacts.embed-a]
artifact_group = "embed-group"
artifact_deps = []

[artifacts.embed-b]
artifact_group = "embed-group"
artifact_deps = []
"#;

/// Counts the bytes of every transfer and prints each one that starts.
#[derive(Default)]
struct Progress {
    bytes: AtomicU64,
}

impl Reporter for Progress {
    fn on_transfer_start(&self, name: &str, size: u64) -> usize {
        println!("progress: {name} ({size} bytes)");
        0
    }
    fn on_transfer_progress(&self, _: usize, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    fn on_transfer_complete(&self, _: usize) {}
}

fn write(path: &Path, content: &[u8]) -> Result<()> {
    std::fs::create_dir_all(path.parent().ok_or("a path with a parent")?)?;
    std::fs::write(path, content)?;
    Ok(())
}

/// The run's options, staged in `staging` (or on S3 when `None`).
fn run_options(staging: Option<&Path>) -> Result<RunOptions> {
    let mut given = GivenRun::default();
    given.run_id = Some(RUN_ID.to_owned());
    given.platform = Some(Platform::Linux);
    given.local_staging_dir = staging.map(Path::to_path_buf);
    let env: Env = Arc::new(|_: &str| None);
    Ok(RunOptions::resolve(given, env, 2)?)
}

async fn run(work: &Path) -> Result<()> {
    // 1. The build tree of two artifacts, pushed into the staging directory.
    let checkout_dir = work.join("therock");
    write(
        &checkout_dir.join(artifact_backend::build_topology::TOPOLOGY_FILE_NAME),
        TOPOLOGY.as_bytes(),
    )?;
    let build = work.join("build");
    for (dir, name, content) in [
        ("embed-a_lib_generic", "lib/libembed.txt", &b"embed-a\n"[..]),
        ("embed-b_lib_generic", "share/readme.txt", &b"embed-b\n"[..]),
    ] {
        let root = build.join("artifacts").join(dir);
        write(&root.join("artifact_manifest.txt"), b"embed\n")?;
        write(&root.join("embed").join(name), content)?;
    }
    let staging = work.join("staging");
    let checkout = Checkout {
        therock_dir: Some(checkout_dir),
        ..Checkout::default()
    };
    let request = PushRequest::new(
        run_options(Some(&staging))?,
        checkout.clone(),
        "embed",
        &build,
    );
    let mut lines = Vec::new();
    push(&request, &mut lines).await?;
    print!("{}", String::from_utf8_lossy(&lines));

    // 2. Listed and fetched back, with progress.
    let root = WorkflowOutputRoot::for_local(Some(RUN_ID), Some(Platform::Linux), None)?;
    let progress = Arc::new(Progress::default());
    let backend = ArtifactBackend::local(&staging, root)?.with_reporter(progress.clone());
    let listed = backend.list_artifacts(None).await?;
    let names: Vec<&str> = listed.iter().map(|e| e.file_name.as_str()).collect();
    println!("listed: {}", names.join(" "));
    if listed.len() != 2 {
        return Err(format!("expected the 2 pushed artifacts, listed {}", listed.len()).into());
    }
    let index = Arc::new(FlattenIndex::default());
    for entry in &listed {
        let fetched = backend
            .fetch_extracted(
                &entry.file_name,
                &work.join("fetched"),
                Layout::Full,
                index.clone(),
            )
            .await?;
        println!("fetched: {} sha256 {}", fetched.key, fetched.sha256);
    }
    println!("progress: {} bytes", progress.bytes.load(Ordering::Relaxed));

    // 3. The same run on S3: this build has no S3 client.
    let request = PushRequest::new(run_options(None)?, checkout, "embed", &build);
    match push(&request, &mut Vec::new()).await {
        Ok(()) => Err("a push to S3 succeeded in a build without S3 support".into()),
        // The errors' types are reachable through artifact-backend alone.
        Err(TransferError::Client(StorageError::NoS3Support { target })) => {
            println!("without s3: no S3 support for {target}");
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

fn main() -> ExitCode {
    let Some(work) = std::env::args_os().nth(1) else {
        eprintln!("usage: embed-local WORK_DIR");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("embed-local: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(Path::new(&work))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("embed-local: error: {err}");
            let mut source = err.source();
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}
