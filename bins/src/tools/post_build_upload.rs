//! Drop-in `post_build_upload.py`: archive the ninja and ccache logs of a build, upload the
//! logs and manifest of an artifact group, and link them from the job summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{ArgAction, Parser, ValueEnum};
use rock_ci::block_on;
use rock_ci::progress::Progress;
use run_uploads::build_logs::{Plan, run};
use storage_backend::Overwrite;
use storage_backend::totals_line;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OverwriteArg {
    Always,
    Never,
    IfDifferent,
}

/// Upload the logs and manifest of a build to the CI run's S3 prefix.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
#[expect(clippy::struct_excessive_bools, reason = "command-line flags")]
struct Args {
    /// Artifact group (CI matrix variant), e.g. gfx94X-dcgpu.
    #[arg(long, env = "ARTIFACT_GROUP")]
    artifact_group: String,
    /// Build directory.
    #[arg(long, env = "BUILD_DIR", default_value = "build", value_parser = rock_ci::parse_path)]
    build_dir: PathBuf,
    /// Upload [default: `$CI` as a boolean, else false].
    #[arg(long, overrides_with = "no_upload", action = ArgAction::SetTrue)]
    upload: bool,
    /// Only archive the logs.
    #[arg(long, overrides_with = "upload", action = ArgAction::SetTrue)]
    no_upload: bool,
    /// Workflow run id (needed when uploading).
    #[arg(long, env = "GITHUB_RUN_ID")]
    run_id: Option<String>,
    /// Status of the build job (`success`, `failure`, ...).
    #[arg(long)]
    job_status: Option<String>,
    /// Stage into this local directory instead of S3.
    #[arg(long, value_parser = rock_ci::parse_path)]
    output_dir: Option<PathBuf>,
    /// Print every planned upload, upload nothing.
    #[arg(long)]
    dry_run: bool,
    /// Check that the destination is reachable and writable, then exit.
    #[arg(long)]
    preflight: bool,
    /// What to do with objects that already exist.
    #[arg(long, value_enum, default_value = "always")]
    overwrite: OverwriteArg,
    /// Files uploaded at once.
    #[arg(long, default_value_t = storage_backend::DEFAULT_CONCURRENCY, value_parser = rock_ci::positive::<usize>())]
    upload_concurrency: usize,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    let lookup = args.limits.over(github_actions::process_env);
    let upload = if args.upload {
        true
    } else if args.no_upload {
        false
    } else {
        match github_actions::str2bool(&lookup("CI").unwrap_or_default()) {
            Ok(b) => b,
            Err(e) => clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid `CI` environment variable: {e}\n"),
            )
            .exit(),
        }
    };
    if upload && args.run_id.is_none() {
        clap::Error::raw(
            clap::error::ErrorKind::MissingRequiredArgument,
            "when --upload is true, --run-id must also be set\n",
        )
        .exit();
    }
    let mtime = run_uploads::source_date_epoch(&lookup);
    let mut plan = Plan::new(args.artifact_group, args.build_dir);
    plan.upload = upload;
    plan.run_id = args.run_id;
    plan.job_status = args.job_status;
    plan.output_dir = args.output_dir;
    plan.dry_run = args.dry_run;
    plan.preflight = args.preflight;
    plan.overwrite = match args.overwrite {
        OverwriteArg::Always => Overwrite::Always,
        OverwriteArg::Never => Overwrite::Never,
        OverwriteArg::IfDifferent => Overwrite::IfDifferent,
    };
    plan.concurrency = args.upload_concurrency.max(1);
    plan.mtime = mtime;
    let progress = Arc::new(Progress::for_stderr(args.log.quiet));
    // One count of what went up and one of what did not, agreeing with the error lines: every
    // file handed over, the failed and never started ones included.
    let totals = |wall, retries, (handed, failed): (usize, usize)| {
        let tally = progress.tally();
        totals_line(
            "Uploaded",
            (handed - failed, handed),
            "files",
            tally.bytes,
            wall,
            retries,
        )
    };
    let mut stdout = std::io::stdout().lock();
    block_on(async { Ok(run(&plan, progress.clone(), &totals, &lookup, &mut stdout).await?) })
}
