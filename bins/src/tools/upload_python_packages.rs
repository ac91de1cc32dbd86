//! Drop-in `upload_python_packages.py`: upload built wheels and sdists with the pages pip reads
//! (`--find-links` and a simple index), and export the URL for later jobs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use rock_ci::block_on;
use rock_ci::progress::Progress;
use run_uploads::python_packages::{Plan, run};

/// Upload Python packages to S3 or a local directory.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Directory of built packages (its `dist/` subdirectory when there is one).
    #[arg(long, value_parser = rock_ci::parse_path)]
    input_packages_dir: PathBuf,
    /// Artifact group (e.g. gfx94X-dcgpu); required unless --multiarch.
    #[arg(long, default_value = "")]
    artifact_group: String,
    /// Workflow run id.
    #[arg(long)]
    run_id: String,
    /// Upload to this bucket instead of the run's (no fork prefix); checked against S3's
    /// bucket naming rules.
    #[arg(long, value_parser = rock_ci::parse_bucket)]
    bucket: Option<String>,
    /// Multi-arch layout: no artifact group in the path; per-family indexes.
    #[arg(long)]
    multiarch: bool,
    #[command(flatten)]
    upload: rock_ci::uploads::UploadArgs,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

fn usage_error(message: &str) -> ! {
    clap::Error::raw(
        clap::error::ErrorKind::ArgumentConflict,
        format!("{message}\n"),
    )
    .exit()
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    if args.upload.output_dir.is_some() && args.bucket.is_some() {
        usage_error("--output-dir and --bucket are mutually exclusive");
    }
    let lookup = args.limits.over(github_actions::process_env);
    let mut plan = Plan::new(args.input_packages_dir, args.artifact_group, args.run_id);
    plan.bucket = args.bucket;
    plan.multiarch = args.multiarch;
    plan.options = args.upload.options();
    plan.output_dir = args.upload.output_dir;
    plan.preflight = args.upload.preflight;
    if let Err(e) = plan.check_group() {
        usage_error(&e.to_string());
    }
    let progress = Arc::new(Progress::for_stderr(args.log.quiet));
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    block_on(async { Ok(run(&plan, progress, &lookup, &mut stdout, &mut stderr).await?) })
}
