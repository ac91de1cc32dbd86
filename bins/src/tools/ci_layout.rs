//! Prints the full output layout of a CI run: every S3 location the upload and fetch tools
//! use, for the given run, platform and artifact group.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use github_actions::{LayoutRequest, RunRequest};
use rock_ci::{RepositoryArg, exit_code, parse_platform, parse_release_type, parse_repository};
use workflow_outputs::{Platform, ReleaseType};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Print where a CI run's outputs live (artifacts, logs, manifests, packages, tarballs).
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Workflow run id.
    #[arg(long, env = "GITHUB_RUN_ID", default_value = "local")]
    run_id: String,
    /// Platform of the run [default: this machine's].
    #[arg(long, value_parser = parse_platform)]
    platform: Option<Platform>,
    /// Artifact group (CI matrix variant) whose logs and manifests to show.
    #[arg(long, env = "ARTIFACT_GROUP", default_value = "generic")]
    artifact_group: String,
    /// Multi-arch stage whose log directory to show too.
    #[arg(long)]
    stage: Option<String>,
    /// GPU family of the stage's log directory.
    #[arg(long, default_value = "", requires = "stage")]
    family: String,
    /// Repository of the run [default: `$GITHUB_REPOSITORY`, else `ROCm/TheRock`].
    #[arg(long, value_parser = parse_repository)]
    run_github_repo: Option<RepositoryArg>,
    /// Release type [default: `$RELEASE_TYPE`, else `ci`].
    #[arg(long, value_parser = parse_release_type)]
    release_type: Option<ReleaseType>,
    /// Ask the GitHub API about the run (needed for another run's fork status).
    #[arg(long)]
    lookup_workflow_run: bool,
    /// Show the layout in a local staging directory instead of S3 (bucket `local`).
    #[arg(long, env = "THEROCK_LOCAL_STAGING_DIR", value_parser = non_empty_path)]
    local_staging_dir: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

fn non_empty_path(s: &str) -> Result<PathBuf, String> {
    if s.is_empty() {
        Err("the path is empty".to_owned())
    } else {
        Ok(file_tree::native_path(s))
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    // `-q`: the bucket block is informational; the layout itself is still printed.
    let mut log: Box<dyn std::io::Write> = if args.log.quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stderr().lock())
    };
    let request = LayoutRequest {
        run: RunRequest {
            run_id: args.run_id.clone(),
            platform: args.platform.unwrap_or_else(Platform::host),
            repository: args.run_github_repo.clone().and_then(|r| r.0),
            release_type: args.release_type,
            lookup_workflow_run: args.lookup_workflow_run,
        },
        local_staging_dir: args.local_staging_dir.as_deref(),
        artifact_group: &args.artifact_group,
        stage: args.stage.as_deref().map(|s| (s, args.family.as_str())),
        json: matches!(args.format, Format::Json),
    };
    let mut stdout = std::io::stdout().lock();
    github_actions::write_layout(
        &request,
        &github_actions::process_env,
        &mut log,
        &mut stdout,
    )?;
    Ok(())
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    exit_code(run(&args))
}
