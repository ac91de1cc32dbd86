//! Drop-in `find_latest_artifacts.py`: the newest commit of a branch (or the commit of a ref, or
//! one run) whose workflow runs hold the artifacts of every requested artifact group.

use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use rock_ci::find_artifacts::{FinderArgs, finder_main};
use run_finder::{Finder, LatestSource};

/// Find CI artifacts by branch history, exact ref, or workflow run id.
#[derive(Debug, Parser)]
#[command(
    version,
    args_override_self = true,
    group(ArgGroup::new("selector").args(["branch", "git_ref", "run_id"])),
)]
struct Args {
    /// Most recent commits of the branch to search.
    #[arg(long, default_value_t = 50, value_parser = rock_ci::positive::<u32>())]
    max_commits: u32,
    /// Branch whose recent commits are searched [default: main].
    #[arg(long)]
    branch: Option<String>,
    /// Resolve one branch, tag or commit and inspect only that commit.
    #[arg(long = "ref", id = "git_ref")]
    git_ref: Option<String>,
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
    // `-v` prints the search progress, as in the reference; logging stays at warnings
    // unless repeated.
    let verbose = args.log.verbose > 0;
    rock_ci::Verbosity {
        verbose: args.log.verbose.saturating_sub(1),
        quiet: args.log.quiet,
    }
    .init_logging();
    let finder_args = &args.finder;
    let lookup = finder_args.limits.over(github_actions::process_env);
    if let Err(err) = rock_ci::check_url_settings(&lookup) {
        return rock_ci::exit_code(Err(err));
    }
    let source = match (&args.run_id, &args.git_ref) {
        (Some(id), _) => LatestSource::Run(id.clone()),
        (None, Some(r)) => LatestSource::Ref(r.clone()),
        (None, None) => LatestSource::Branch {
            branch: args.branch.clone().unwrap_or_else(|| "main".to_owned()),
            max_commits: args.max_commits as usize,
        },
    };
    let not_found = source.not_found(&finder_args.repo);
    finder_main(finder_args.json, &not_found, |mut log| async move {
        let mut finder = Finder::new(finder_args.query(), &lookup).await?;
        let mut progress = std::io::stderr();
        Ok(finder
            .latest(&source, verbose, &mut log, &mut progress)
            .await?)
    })
}
