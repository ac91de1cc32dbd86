//! Drop-in `find_artifacts_for_commit.py`: which workflow run of a commit (or which given run)
//! holds the artifacts of some artifact groups, and where they are in S3.

use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use rock_ci::find_artifacts::{FinderArgs, finder_main};
use run_finder::Finder;

/// Find CI artifacts for a given commit.
#[derive(Debug, Parser)]
#[command(
    version,
    args_override_self = true,
    group(ArgGroup::new("selector").args(["commit", "run_id"]).required(true)),
)]
struct Args {
    /// Git commit SHA to find artifacts for (the full SHA).
    #[arg(long, value_parser = rock_ci::parse_api_commit)]
    commit: Option<String>,
    /// Inspect one workflow run.
    #[arg(long, value_parser = rock_ci::parse_api_run_id)]
    run_id: Option<String>,
    #[command(flatten)]
    finder: FinderArgs,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    let finder_args = &args.finder;
    let lookup = finder_args.limits.over(github_actions::process_env);
    if let Err(err) = rock_ci::check_url_settings(&lookup) {
        return rock_ci::exit_code(Err(err));
    }
    let query = finder_args.query();
    let not_found = query.not_found(&match &args.run_id {
        Some(id) => format!("run {id}"),
        None => format!("commit {}", args.commit.as_deref().unwrap_or_default()),
    });
    finder_main(finder_args.json, &not_found, |mut log| async move {
        let mut finder = Finder::new(query, &lookup).await?;
        Ok(match (&args.run_id, &args.commit) {
            (Some(id), _) => finder.for_run(id, &mut log).await?,
            (None, Some(commit)) => finder.for_commit(commit, &mut log).await?,
            (None, None) => unreachable!("clap requires --commit or --run-id"),
        })
    })
}
