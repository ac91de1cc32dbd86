//! Shared glue of the rock-ci command-line tools: logging set-up, exit codes, and the
//! resolution of a run's output root from flags, environment and the GitHub API.
//!
//! The binaries in `src/bin/` parse flags and call into the library crates; what two of them
//! need lives here.

pub mod fetch_artifacts;
pub mod post_build_upload;
pub mod progress;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use github_actions::GithubClient;
use workflow_outputs::{
    BucketSelection, ForkEvidence, GithubRepository, Platform, ReleaseType, RunContext,
    WorkflowOutputRoot,
};

/// The logging flags every tool takes.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Verbosity {
    /// More logging (repeat for more).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

impl Verbosity {
    /// Installs the stderr log subscriber: `RUST_LOG` if set, else `warn` raised by each
    /// `-v` and lowered to `error` by `-q`.
    pub fn init_logging(self) {
        let level = match (self.quiet, self.verbose) {
            (true, _) => "error",
            (false, 0) => "warn",
            (false, 1) => "info",
            (false, 2) => "debug",
            _ => "trace",
        };
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(progress::LogWriter)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_target(false)
            .without_time()
            .try_init();
    }
}

/// Turns the result of a tool's `run` into its exit code: 0 on success, 1 on failure with the
/// error chain on stderr. A closed stdout (`| head`) is not a failure.
pub fn exit_code(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let broken_pipe = err.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a tool's async body on a multi-thread runtime; its result becomes the exit code as in
/// [`exit_code`].
pub fn block_on(body: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => exit_code(runtime.block_on(body)),
        Err(e) => exit_code(Err(
            anyhow::Error::new(e).context("Failed to start the async runtime")
        )),
    }
}

/// Parses a [`Platform`] for clap, with the allowed values in the error.
pub fn parse_platform(s: &str) -> Result<Platform, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// Parses a [`ReleaseType`] for clap.
pub fn parse_release_type(s: &str) -> Result<ReleaseType, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// Parses a [`GithubRepository`] for clap.
pub fn parse_repository(s: &str) -> Result<GithubRepository, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// What identifies a run whose output root is wanted.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The workflow run id.
    pub run_id: String,
    /// The platform.
    pub platform: Platform,
    /// The repository (else `GITHUB_REPOSITORY`, else `ROCm/TheRock`).
    pub repository: Option<GithubRepository>,
    /// The release type (else `RELEASE_TYPE`, else `ci`).
    pub release_type: Option<ReleaseType>,
    /// Ask the GitHub API about the run (fork detection of another run); otherwise the
    /// current run's event payload decides.
    pub lookup_workflow_run: bool,
}

/// Resolves the output root of a run as the reference's `from_workflow_run` does: repository
/// and release type from the request or the environment, fork evidence from the GitHub API
/// (when asked) or the event payload. Progress lines go to `log` (stderr in the tools).
pub fn resolve_run_root(
    request: &RunRequest,
    lookup: &dyn Fn(&str) -> Option<String>,
    log: &mut dyn Write,
) -> anyhow::Result<(WorkflowOutputRoot, BucketSelection)> {
    let ctx = RunContext::from_lookup(lookup)?
        .with_overrides(request.repository.clone(), request.release_type);
    writeln!(log, "Retrieving bucket info for workflow run...")?;
    writeln!(log, "  github_repository: {}", ctx.repository)?;
    writeln!(log, "  release_type: {}", ctx.release_type)?;
    let run;
    let fork = if request.lookup_workflow_run {
        let client = GithubClient::from_lookup(lookup);
        run = client.workflow_run(ctx.repository.as_str(), &request.run_id)?;
        writeln!(log, "  workflow_run_id: {}", run.id)?;
        writeln!(
            log,
            "  head_github_repository: {}",
            run.head_repository_full_name()
                .unwrap_or("(none: deleted fork)")
        )?;
        ForkEvidence::WorkflowRun {
            head_repository: run.head_repository_full_name(),
        }
    } else {
        ForkEvidence::Event {
            is_pr_from_fork: github_actions::is_pr_from_fork_with(lookup)
                .context("Cannot tell whether this run is a pull request from a fork")?,
        }
    };
    let selection = ctx.select_bucket(fork);
    writeln!(
        log,
        "  is_pr_from_fork: {}",
        if selection.is_pr_from_fork() {
            "True"
        } else {
            "False"
        }
    )?;
    writeln!(log, "  bucket: {}", selection.config().name())?;
    if selection.is_pr_from_fork() {
        writeln!(
            log,
            "  Fork PR detected, skipping OIDC (using runner base credentials)"
        )?;
    }
    let root = WorkflowOutputRoot::for_workflow_run(&request.run_id, request.platform, &selection)?;
    Ok((root, selection))
}
