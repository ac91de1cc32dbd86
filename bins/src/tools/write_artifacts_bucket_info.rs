//! Drop-in `write_artifacts_bucket_info.py`: writes the artifacts bucket of the current run, the
//! IAM role to assume for writing to it and its region as the step outputs `bucket`,
//! `iam_role` and `aws_region` (what `configure_aws_artifacts_credentials` reads).

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser;
use workflow_outputs::ReleaseType;

/// Determine the IAM role ARN and region of the artifacts S3 bucket.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Release type used to select the artifacts bucket.
    #[arg(long, default_value = "ci")]
    release_type: String,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

fn run(args: &Args) -> anyhow::Result<()> {
    let lookup = github_actions::process_env;
    // Checked here rather than by the parser: a bad value fails the step (exit 1), as in the
    // reference, and the workflow input is passed through verbatim.
    let release_type: ReleaseType = args
        .release_type
        .parse()
        .with_context(|| format!("Invalid `--release-type` `{}`", args.release_type))?;
    let mut log: Box<dyn std::io::Write> = if args.log.quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stderr().lock())
    };
    let selection =
        github_actions::select_run_bucket(None, Some(release_type), None, &lookup, &mut log)?;
    drop(log);
    let outputs = selection.config().access_outputs()?;
    let outputs = outputs.each_ref().map(|(k, v)| (*k, v.as_str()));
    let mut stdout = std::io::stdout().lock();
    github_actions::report_outputs(&outputs, &lookup, &mut stdout, Some(&mut std::io::stderr()))?;
    Ok(())
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    rock_ci::exit_code(run(&args))
}
