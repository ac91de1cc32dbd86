//! Drop-in `publish_rocm_to_release_buckets.py`: publishes a ROCm release run (tarballs,
//! Python packages, deb and rpm repositories) from the artifacts bucket to the core product
//! repository (`therock-repo-amd-{stream}-core`) by server-side copies.

use std::io::Write as _;
use std::process::ExitCode;

use release_publish::rocm::{PythonMode, RocmRelease};
use storage_backend::{StorageBackend, TransferOptions};
use workflow_outputs::{Platform, PythonIndex, ReleaseType};

/// Publish a ROCm release run to the core release bucket.
#[derive(Debug, clap::Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Workflow run id whose outputs are published.
    #[arg(long)]
    run_id: String,
    /// Platform of the run (default: this machine's).
    #[arg(long, value_parser = ["linux", "windows"])]
    platform: Option<String>,
    /// Release type; selects the source and destination buckets.
    #[arg(long, value_parser = rock_ci::parse_publishing_release_type)]
    release_type: ReleaseType,
    /// Whether the run made a kpack-split (multi-arch) build; true only for `true` in any case.
    #[arg(long, default_value = "false")]
    kpack_split: String,
    /// Product-local layout of the Python packages (needs --kpack-split true).
    #[arg(long)]
    structured: bool,
    /// Python index of the structured layout.
    #[arg(long, default_value = "whl-next", value_parser = rock_ci::parse_python_index)]
    python_index: PythonIndex,
    /// Do not publish the deb and rpm repositories.
    #[arg(long)]
    skip_native_packages: bool,
    /// List the sources and print every planned copy; copy nothing.
    #[arg(long)]
    dry_run: bool,
    /// Build variant.
    #[arg(long, default_value = "release", value_parser = ["release", "asan"])]
    build_variant: String,
    /// Objects copied at once.
    #[arg(long, default_value_t = storage_backend::DEFAULT_CONCURRENCY, value_parser = rock_ci::positive::<usize>())]
    copy_concurrency: usize,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

async fn run(args: Args) -> anyhow::Result<()> {
    let lookup = args.limits.over(github_actions::process_env);
    let platform = match &args.platform {
        Some(p) => rock_ci::parse_platform(p).map_err(anyhow::Error::msg)?,
        None => Platform::host(),
    };
    let kpack_split = args.kpack_split.eq_ignore_ascii_case("true");
    let mut log: Box<dyn std::io::Write> = if args.log.quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stderr())
    };
    let request = rock_ci::RunRequest {
        run_id: args.run_id.clone(),
        platform,
        repository: None,
        release_type: Some(args.release_type),
        lookup_workflow_run: false,
    };
    let (run, _) = rock_ci::resolve_run_root(&request, &lookup, &mut log)?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let release = RocmRelease {
        release_type: args.release_type,
        run,
        python: if args.structured {
            PythonMode::Structured(args.python_index)
        } else if kpack_split {
            PythonMode::LegacyKpackSplit
        } else {
            PythonMode::LegacyPerFamily
        },
        native_packages: platform == Platform::Linux && !args.skip_native_packages,
        asan: args.build_variant == "asan",
        date: file_tree::utc_date_stamp(secs).unwrap_or_default(),
    };
    let destination = release.destination()?;
    let options = TransferOptions {
        concurrency: args.copy_concurrency,
        ..TransferOptions::default()
    };
    let backend =
        rock_ci::uploads::backend(None, options, destination.region(), args.log.quiet, &lookup)
            .await?;
    let StorageBackend::S3(s3) = backend else {
        unreachable!("no staging directory was given");
    };
    let plan = release.plan(&s3).await?;
    let mut stdout = std::io::stdout();
    let dry_run: Option<&mut dyn std::io::Write> = if args.dry_run {
        Some(&mut stdout)
    } else {
        None
    };
    let report =
        release_publish::rocm::copy(&s3, &plan, args.copy_concurrency, dry_run, &mut log).await?;
    if report.unchanged > 0 {
        writeln!(
            log,
            "{} objects were already published with the same content and left as they were",
            report.unchanged
        )?;
    }
    Ok(())
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    if args.structured && !args.kpack_split.eq_ignore_ascii_case("true") {
        clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            "--structured requires --kpack-split true (multi-arch only)\n",
        )
        .exit();
    }
    rock_ci::block_on(run(args))
}
