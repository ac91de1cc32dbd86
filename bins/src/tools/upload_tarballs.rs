//! Drop-in `upload_tarballs.py`: upload release tarballs (with `.sha256sum` sidecars) to the
//! run's `tarballs/` prefix and export the multi-arch tarball's URL.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use rock_ci::block_on;
use rock_ci::progress::Progress;
use run_uploads::tarballs::{Plan, run};
use workflow_outputs::{Platform, ReleaseType};

fn tarball_platform(s: &str) -> Result<Platform, String> {
    match s {
        "linux" => Ok(Platform::Linux),
        "windows" => Ok(Platform::Windows),
        _ => Err(format!(
            "invalid choice: `{s}` (choose from `linux`, `windows`)"
        )),
    }
}

/// An empty `--release-type` reads `RELEASE_TYPE`, as the reference.
fn release_type(s: &str) -> Result<Option<ReleaseType>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    rock_ci::parse_release_type(s).map(Some)
}

/// Upload tarballs to S3.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Directory holding the `.tar.gz` tarballs.
    #[arg(long, value_parser = rock_ci::parse_path)]
    input_tarballs_dir: PathBuf,
    /// Workflow run id.
    #[arg(long)]
    run_id: String,
    /// Platform (`linux` or `windows`) [default: the host's].
    #[arg(long, value_parser = tarball_platform)]
    platform: Option<Platform>,
    /// Release type selecting the bucket; empty reads `$RELEASE_TYPE`.
    #[arg(long, default_value = "ci")]
    release_type: String,
    #[command(flatten)]
    upload: rock_ci::uploads::UploadArgs,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    let lookup = args.limits.over(github_actions::process_env);
    let release_type = release_type(&args.release_type).unwrap_or_else(|e| {
        clap::Error::raw(
            clap::error::ErrorKind::InvalidValue,
            format!("argument --release-type: {e}\n"),
        )
        .exit()
    });
    let mut plan = Plan::new(
        args.input_tarballs_dir,
        args.run_id,
        args.platform.unwrap_or_else(Platform::host),
    );
    plan.release_type = release_type;
    plan.options = args.upload.options();
    plan.output_dir = args.upload.output_dir;
    plan.preflight = args.upload.preflight;
    let progress = Arc::new(Progress::for_stderr(args.log.quiet));
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    block_on(async { Ok(run(&plan, progress, &lookup, &mut stdout, &mut stderr).await?) })
}
