//! Drop-in `upload_test_report_script.py`: write an index page of a directory of HTML reports,
//! upload the reports and the page to the run's `logs/{subfolder}/`, and link the page from
//! the job summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use rock_ci::block_on;
use rock_ci::progress::Progress;
use run_uploads::test_report::{Plan, run};
use run_uploads::{KeyError, check_index_file_name, check_key_path, log_destination};

fn subfolder(s: &str) -> Result<String, KeyError> {
    check_key_path(s, "--subfolder").map(|()| s.to_owned())
}

fn index_file_name(s: &str) -> Result<String, KeyError> {
    check_index_file_name(s).map(|()| s.to_owned())
}

/// `None` (blank) is kept apart from a missing flag by the outer `Option`.
fn destination(s: &str) -> Result<Destination, KeyError> {
    log_destination(s).map(Destination)
}

#[derive(Debug, Clone)]
struct Destination(Option<String>);

/// Upload HTML test reports to the CI run's logs in S3, with an index page.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Workflow run id.
    #[arg(long)]
    run_id: String,
    /// Folder below the run's `logs/`, e.g. `manifest-diff` or `gfx950-dcgpu`.
    #[arg(long, value_parser = subfolder)]
    subfolder: String,
    /// Directory of HTML reports (a missing one: nothing to upload, exit 0).
    #[arg(long, value_parser = rock_ci::parse_path)]
    report_path: PathBuf,
    /// Legacy: upload to this folder below the run's root instead of `logs/{subfolder}`
    /// (blank: not given).
    #[arg(long, value_parser = destination)]
    log_destination: Option<Destination>,
    /// File name of the generated index page, e.g. `index.html`.
    #[arg(long, value_parser = index_file_name)]
    index_file_name: String,
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
    let mut plan = Plan::new(
        args.run_id,
        args.subfolder,
        args.report_path,
        args.index_file_name,
    );
    plan.log_destination = args.log_destination.and_then(|d| d.0);
    plan.options = args.upload.options();
    plan.output_dir = args.upload.output_dir;
    plan.preflight = args.upload.preflight;
    let progress = Arc::new(Progress::for_stderr(args.log.quiet));
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    block_on(async { Ok(run(&plan, progress, &lookup, &mut stdout, &mut stderr).await?) })
}
