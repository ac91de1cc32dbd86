//! Drop-in `publish_rocm_to_release_buckets.py`: publishes a ROCm release run (tarballs,
//! Python packages, deb and rpm repositories) from the artifacts bucket to the core product
//! repository (`therock-repo-amd-{stream}-core`) by server-side copies.

use std::process::ExitCode;
use std::sync::Arc;

use release_publish::rocm::{PythonMode, RunPublication, publish_run};
use rock_ci::progress::Progress;
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
    /// Date of the native package directories, `YYYYMMDD` (default: today's UTC date). A run
    /// republished on a later day gives its first day to land on the same keys.
    #[arg(long, value_parser = rock_ci::parse_yyyymmdd)]
    date: Option<String>,
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
    let mut publication = RunPublication::new(
        args.run_id,
        platform,
        args.release_type,
        PythonMode::of(args.structured.then_some(args.python_index), kpack_split),
    );
    publication.skip_native_packages = args.skip_native_packages;
    publication.asan = args.build_variant == "asan";
    publication.concurrency = args.copy_concurrency;
    publication.dry_run = args.dry_run;
    publication.date = args.date;
    let progress = Arc::new(Progress::for_stderr(args.log.quiet));
    let mut stdout = std::io::stdout();
    publish_run(&publication, progress, &lookup, &mut stdout, &mut log).await?;
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
