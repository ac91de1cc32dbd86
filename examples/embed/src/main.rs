//! A tool outside the rock-ci workspace that embeds its libraries through their public API.
//!
//! `embed --layout-only RUN_ID` prints where run `RUN_ID`'s outputs live
//! (`rock-ci-workflow-outputs` only; the one mode built without the default `full` feature).
//!
//! `embed WORK_DIR` (feature `full`) does, in `WORK_DIR`, what an embedding CI tool would:
//! 1. computes the layout of run `EMBED_RUN_ID` (default 4242) of this machine's platform;
//! 2. builds a shared library with `cc` (`$CC`) and sets its RUNPATH and SONAME (elf-patch);
//! 3. pushes stage `embed` of its own `BUILD_TOPOLOGY.toml` (two artifacts, one holding the
//!    patched library) to the run's bucket, created first (artifact-backend, storage-backend);
//! 4. lists the run's artifacts and fetches both, each unpacked into `fetched/{name}`, with a
//!    progress callback of its own;
//! 5. writes one wheel of a package holding the library into `dist/` (py-packaging).
//!
//! S3 is the endpoint of `AWS_ENDPOINT_URL` with the credentials of the AWS variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`). Exits 1 with the error's chain on failure.

use std::process::ExitCode;

use workflow_outputs::{ForkEvidence, Platform, RunContext, WorkflowOutputRoot};

/// The layout of `run_id` on `platform`: its bucket and the keys a tool reads and writes.
fn layout(run_id: &str, platform: Platform) -> Result<WorkflowOutputRoot, workflow_outputs::Error> {
    let context = RunContext::from_env()?;
    let selection = context.select_bucket(ForkEvidence::NOT_A_FORK);
    let root = WorkflowOutputRoot::for_workflow_run(run_id, platform, &selection)?;
    println!("layout: run {run_id} of {}", context.repository);
    println!("layout: root {}", root.root().s3_uri());
    println!(
        "layout: artifact {}",
        root.artifact("embed-a_lib_generic.tar.zst").s3_uri()
    );
    println!("layout: logs {}", root.log_dir("generic").s3_uri());
    println!("layout: index {}", root.artifact_index().https_url());
    Ok(root)
}

/// Prints `err` and its sources, one per line.
fn report(err: &dyn std::error::Error) -> ExitCode {
    eprintln!("embed: error: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        eprintln!("  caused by: {cause}");
        source = cause.source();
    }
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, run_id] if flag == "--layout-only" => match layout(run_id, Platform::host()) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => report(&e),
        },
        #[cfg(feature = "full")]
        [work] if !work.starts_with('-') => match full::run(std::path::Path::new(work)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => report(&*e),
        },
        _ => {
            eprintln!("usage: embed --layout-only RUN_ID | embed WORK_DIR (feature `full`)");
            ExitCode::from(2)
        }
    }
}

#[cfg(feature = "full")]
mod full {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use artifact_backend::stages::{GivenRun, PushRequest, RunOptions, push};
    use artifact_backend::{ArtifactBackend, FlattenIndex};
    use build_topology::Checkout;
    use storage_backend::{ClientOptions, Reporter, S3Client, S3StorageBackend, TransferOptions};
    use workflow_outputs::{Platform, WorkflowOutputRoot};

    type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

    /// The stage, its group and its two artifacts.
    const TOPOLOGY: &str = r#"[metadata]
version = "2.0"
description = "The topology of the embedding example"

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

    /// The package of the wheel: the library as package data.
    const SETUP_PY: &str = r#"from setuptools import setup
setup(
    name="embed-demo",
    version="0.2.0",
    packages=["embed_demo"],
    include_package_data=True,
    options={"bdist_wheel": {"plat_name": "manylinux_2_17_x86_64"}},
)
"#;

    /// A progress callback: one line per finished transfer, bytes counted.
    #[derive(Default)]
    struct Progress {
        names: Mutex<Vec<(String, u64)>>,
        bytes: AtomicU64,
        done: AtomicUsize,
    }

    impl Reporter for Progress {
        fn on_transfer_start(&self, name: &str, size: u64) -> usize {
            let mut names = self
                .names
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            names.push((name.to_owned(), size));
            names.len() - 1
        }
        fn on_transfer_progress(&self, _id: usize, bytes: u64) {
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        fn on_transfer_complete(&self, id: usize) {
            self.done.fetch_add(1, Ordering::Relaxed);
            let names = self
                .names
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((name, size)) = names.get(id) {
                println!("progress: {name} complete ({size} bytes)");
            }
        }
    }

    fn write(path: &Path, content: &[u8]) -> Result<()> {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(path, content)?;
        Ok(())
    }

    /// `libembed.so`, built with `$CC` (else `cc`) with a RUNPATH and SONAME to replace.
    fn shared_library(dir: &Path) -> Result<PathBuf> {
        let source = dir.join("embed.c");
        write(&source, b"int embed_answer(void) { return 42; }\n")?;
        let lib = dir.join("libembed.so");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
        let status = std::process::Command::new(&cc)
            .args([
                "-shared",
                "-fPIC",
                "-Wl,-soname,libembed.so.0",
                "-Wl,-rpath,/opt/old/lib",
                "-o",
            ])
            .arg(&lib)
            .arg(&source)
            .status()
            .map_err(|e| format!("cannot run {cc}: {e}"))?;
        if !status.success() {
            return Err(format!("{cc} failed on {}: {status}", source.display()).into());
        }
        Ok(lib)
    }

    /// Sets the library's RUNPATH and SONAME and reads them back.
    fn patch(lib: &Path) -> Result<()> {
        let mut edit = elf_patch::Edit::default();
        edit.set_rpath = Some("$ORIGIN/../lib".to_owned());
        edit.set_soname = Some("libembed.so.1".to_owned());
        elf_patch::patch_file(lib, &edit)?;
        let info = elf_patch::read_file(lib)?;
        println!(
            "elf: {} soname {:?} runpath {:?}",
            lib.display(),
            info.soname,
            info.runpath
        );
        Ok(())
    }

    /// An exploded artifact directory `{build}/artifacts/{dir}`: its manifest and files under
    /// relpath `embed`.
    fn exploded(build: &Path, dir: &str, files: &[(&str, &[u8])]) -> Result<()> {
        let root = build.join("artifacts").join(dir);
        write(&root.join("artifact_manifest.txt"), b"embed\n")?;
        for (name, content) in files {
            write(&root.join("embed").join(name), content)?;
        }
        Ok(())
    }

    /// A client of the environment's S3 endpoint and credentials.
    async fn client() -> Result<S3Client> {
        let lookup = |var: &str| std::env::var(var).ok();
        Ok(S3Client::connect_with(&ClientOptions::reading("us-east-1"), &lookup).await?)
    }

    /// Pushes stage `embed` of the example's topology: `embed-a` holding `library`, `embed-b`.
    async fn push_stage(
        work: &Path,
        run_id: &str,
        platform: Platform,
        library: &[u8],
    ) -> Result<()> {
        let checkout_dir = work.join("therock");
        write(
            &checkout_dir.join(build_topology::TOPOLOGY_FILE_NAME),
            TOPOLOGY.as_bytes(),
        )?;
        let build = work.join("build");
        exploded(
            &build,
            "embed-a_lib_generic",
            &[("lib/libembed.so", library)],
        )?;
        exploded(
            &build,
            "embed-b_lib_generic",
            &[("share/readme.txt", b"embed-b\n")],
        )?;
        let mut given = GivenRun::default();
        given.run_id = Some(run_id.to_owned());
        given.platform = Some(platform);
        let env: artifact_backend::stages::Env = Arc::new(|var: &str| std::env::var(var).ok());
        let run = RunOptions::resolve(given, env, 2)?;
        let checkout = Checkout {
            therock_dir: Some(checkout_dir),
            ..Checkout::default()
        };
        let request = PushRequest::new(run, checkout, "embed", &build);
        let mut lines = Vec::new();
        push(&request, &mut lines).await?;
        print!("{}", String::from_utf8_lossy(&lines));
        Ok(())
    }

    /// Lists the run's artifacts and fetches both into `{work}/fetched`, reporting to
    /// `progress`.
    async fn fetch_both(
        work: &Path,
        root: &WorkflowOutputRoot,
        progress: Arc<Progress>,
    ) -> Result<()> {
        let backend = ArtifactBackend::s3(client().await?, root.clone()).with_reporter(progress);
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
                    artifacts::Layout::Full,
                    index.clone(),
                )
                .await?;
            println!("fetched: {} sha256 {}", fetched.key, fetched.sha256);
        }
        Ok(())
    }

    /// One wheel of a package holding `library`, in `{work}/dist`.
    fn wheel(work: &Path, library: &[u8]) -> Result<PathBuf> {
        let package = work.join("wheel-src");
        write(&package.join("setup.py"), SETUP_PY.as_bytes())?;
        write(&package.join("embed_demo/__init__.py"), b"")?;
        write(&package.join("embed_demo/lib/libembed.so"), library)?;
        let options = py_packaging::WheelOptions::default();
        Ok(py_packaging::build_wheel(
            &package,
            &work.join("dist"),
            &options,
        )?)
    }

    pub(crate) fn run(work: &Path) -> Result<()> {
        let run_id = std::env::var("EMBED_RUN_ID").unwrap_or_else(|_| "4242".to_owned());
        let platform = Platform::host();
        let root = super::layout(&run_id, platform)?;

        let lib = shared_library(&work.join("elf"))?;
        patch(&lib)?;
        let library = fs_err::read(&lib)?;

        let runtime = tokio::runtime::Runtime::new()?;
        let progress = Arc::new(Progress::default());
        runtime.block_on(async {
            // The run's bucket, then the stage pushed into it and fetched back.
            S3StorageBackend::new(client().await?, TransferOptions::default())
                .create_bucket(root.bucket())
                .await?;
            push_stage(work, &run_id, platform, &library).await?;
            fetch_both(work, &root, progress.clone()).await
        })?;
        println!(
            "progress: {} transfers, {} bytes",
            progress.done.load(Ordering::Relaxed),
            progress.bytes.load(Ordering::Relaxed)
        );

        println!("wheel: {}", wheel(work, &library)?.display());
        Ok(())
    }
}
