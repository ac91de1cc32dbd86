//! The flags `find_artifacts_for_commit` and `find_latest_artifacts` share (spec §9), and
//! their one way of running a search. The search and its output are [`run_finder`]'s.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use run_finder::{ArtifactRunInfo, Query};
use workflow_outputs::{GithubRepository, Platform};

/// The options both finders take.
#[derive(Debug, Clone, clap::Args)]
pub struct FinderArgs {
    /// Repository in `owner/repo` form.
    #[arg(long, default_value = "ROCm/TheRock", value_parser = parse_github_repository)]
    pub repo: GithubRepository,
    /// Workflow file that produces the artifacts.
    #[arg(long, default_value = "multi_arch_ci.yml")]
    pub workflow: String,
    /// Platform of the runs [default: this machine's].
    #[arg(long, value_parser = crate::parse_platform)]
    pub platform: Option<Platform>,
    /// Artifact group(s), e.g. gfx94X-dcgpu gfx120X-all.
    #[arg(long, num_args = 1.., required = true, action = clap::ArgAction::Set)]
    pub artifact_group: Vec<String>,
    /// A GPU target that may appear in per-target artifacts (repeatable; only with one
    /// artifact group).
    #[arg(long, action = clap::ArgAction::Append)]
    pub amdgpu_target: Vec<String>,
    /// Regex that must match the file name of some selected artifact (repeatable).
    #[arg(long, action = clap::ArgAction::Append)]
    pub require_artifact: Vec<String>,
    /// All groups must be found in one workflow run.
    #[arg(long)]
    pub require_single_run: bool,
    /// Inspect only runs with status `completed` and conclusion `success`.
    #[arg(long)]
    pub require_successful_run: bool,
    /// Print the results as JSON on stdout (progress goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// A TheRock checkout, for the GPU family table (`cmake/therock_amdgpu_targets.cmake`)
    /// [default: `$THEROCK_DIR`, else the working directory or a parent holding
    /// `BUILD_TOPOLOGY.toml`].
    #[arg(long, env = "THEROCK_DIR")]
    pub therock_dir: Option<PathBuf>,
    /// Time limits and attempts of the requests.
    #[command(flatten)]
    pub limits: crate::NetworkLimits,
}

fn parse_github_repository(s: &str) -> Result<GithubRepository, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

impl FinderArgs {
    /// The platform searched: `--platform`, else this machine's.
    pub fn platform(&self) -> Platform {
        self.platform.unwrap_or_else(Platform::host)
    }

    /// The search these flags ask for.
    pub fn query(&self) -> Query {
        let mut query = Query::new(self.repo.clone(), self.workflow.clone(), self.platform());
        query.artifact_groups.clone_from(&self.artifact_group);
        query.amdgpu_targets.clone_from(&self.amdgpu_target);
        query.required_artifacts.clone_from(&self.require_artifact);
        query.require_single_run = self.require_single_run;
        query.require_successful_run = self.require_successful_run;
        query.therock_dir.clone_from(&self.therock_dir);
        query
    }
}

/// Runs a finder's search on a runtime and prints its outcome with
/// [`run_finder::tool::print_outcome`] (`not_found` when nothing matched); the exit code is
/// [`crate::finder_exit_code`]'s. `search` gets the progress writer (stderr: stdout carries
/// only the results).
pub fn finder_main<F>(
    json: bool,
    not_found: &str,
    search: impl FnOnce(Box<dyn Write>) -> F,
) -> ExitCode
where
    F: std::future::Future<Output = anyhow::Result<Vec<ArtifactRunInfo>>>,
{
    let log: Box<dyn Write> = Box::new(std::io::stderr());
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to start the async runtime")
        .and_then(|runtime| runtime.block_on(search(log)));
    crate::finder_exit_code(result.and_then(|results| {
        let mut stdout = std::io::stdout().lock();
        run_finder::tool::print_outcome(
            &results,
            json,
            not_found,
            &mut stdout,
            &mut std::io::stderr(),
        )
        .map_err(anyhow::Error::from)
    }))
}
