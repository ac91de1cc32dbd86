//! Drop-in `post_stage_upload.py`: archive the ninja and ccache logs of one multi-arch build
//! stage and upload the stage's logs (and, for `compiler-runtime`, the build manifest).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use rock_ci::block_on;
use rock_ci::progress::Progress;
use run_uploads::check_key_component;
use run_uploads::stage_logs::{Plan, run};
use workflow_outputs::Platform;

fn stage_name(s: &str) -> Result<String, run_uploads::KeyError> {
    run_uploads::check_stage_name(s).map(|()| s.to_owned())
}

fn family_name(s: &str) -> Result<String, run_uploads::KeyError> {
    check_key_component(s, "family").map(|()| s.to_owned())
}

/// Upload the logs of a multi-arch build stage to the CI run's S3 prefix.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Workflow run id [default: `$GITHUB_RUN_ID`].
    #[arg(long)]
    run_id: Option<String>,
    /// Platform of the output paths [default: the host's].
    #[arg(long, value_parser = rock_ci::parse_platform)]
    platform: Option<Platform>,
    /// Build stage (`compiler-runtime`, `math-libs`, ...).
    #[arg(long, value_parser = stage_name)]
    stage: String,
    /// Build directory.
    #[arg(long, env = "BUILD_DIR", default_value = "build", value_parser = rock_ci::parse_path)]
    build_dir: PathBuf,
    /// GPU family of a per-arch stage (`gfx1151`); empty for generic stages.
    #[arg(long, default_value = "", value_parser = family_name)]
    amdgpu_family: String,
    /// zstd level of the ccache archive [default: 3].
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-131_072..=22))]
    compression_level: Option<i32>,
    #[command(flatten)]
    topology: rock_ci::TopologyArgs,
    #[command(flatten)]
    upload: rock_ci::uploads::UploadArgs,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

/// Exits with a usage error when the topology does not define `stage`. Without a topology to
/// ask (none named, none in the working directory or its parents), the stage is used as given,
/// as the reference does, with a warning.
fn check_stage(topology: &rock_ci::TopologyArgs, stage: &str) {
    let usage = |message: String| -> ! {
        clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{message}\n")).exit()
    };
    match topology.checkout().load_topology() {
        Ok(t) => {
            if let Err(e) = t.stage(stage) {
                usage(format!("invalid value '{stage}' for '--stage': {e}"));
            }
        }
        Err(build_topology::CheckoutError::NoCheckout(dir)) if !topology.is_given() => {
            tracing::warn!(
                "--stage '{stage}' not checked: no {} in {} or its parents (pass --topology or --therock-dir to check it)",
                build_topology::TOPOLOGY_FILE_NAME,
                dir.display()
            );
        }
        Err(e) => usage(format!("cannot check --stage '{stage}': {e:#}")),
    }
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    let lookup = args.limits.over(github_actions::process_env);
    let Some(run_id) = args
        .run_id
        .filter(|id| !id.is_empty())
        .or_else(|| lookup("GITHUB_RUN_ID").filter(|id| !id.is_empty()))
    else {
        clap::Error::raw(
            clap::error::ErrorKind::MissingRequiredArgument,
            "--run-id is required (or set $GITHUB_RUN_ID)\n",
        )
        .exit();
    };
    check_stage(&args.topology, &args.stage);
    let mtime = run_uploads::source_date_epoch(&lookup);
    let mut plan = Plan::new(
        run_id,
        args.platform.unwrap_or_else(Platform::host),
        args.stage,
        args.amdgpu_family,
        args.build_dir,
    );
    plan.compression_level = args
        .compression_level
        .unwrap_or(artifacts::CCACHE_ZSTD_LEVEL);
    plan.options = args.upload.options();
    plan.output_dir = args.upload.output_dir;
    plan.preflight = args.upload.preflight;
    plan.mtime = mtime;
    let progress = Arc::new(Progress::for_stderr(args.log.quiet));
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    block_on(async { Ok(run(&plan, progress, &lookup, &mut stdout, &mut stderr).await?) })
}
