//! The output root and artifacts bucket of a workflow run, as the reference's
//! `from_workflow_run` and `get_artifacts_bucket_config_for_workflow_run` decide them: the
//! repository and release type from the caller or the environment, the fork evidence from the
//! GitHub API or the current run's event payload, the decision itself from
//! [`workflow_outputs::RunContext::select_bucket`].

use std::io::{self, Write};

use workflow_outputs::{
    BucketSelection, ForkEvidence, GithubRepository, Platform, ReleaseType, RunContext,
    WorkflowOutputRoot,
};

use crate::api::{ApiError, GithubClient, WorkflowRun};
use crate::event::{EventError, is_pr_from_fork_with};

/// Why the bucket or output root of a run could not be decided.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunRootError {
    /// The repository, release type or run id is not valid (given or from the environment).
    #[error(transparent)]
    Outputs(#[from] workflow_outputs::Error),
    /// The GitHub API could not tell about the run (or a URL setting is malformed).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The current run's event payload could not be read.
    #[error("Cannot tell whether this run is a pull request from a fork")]
    Event(#[source] EventError),
    /// The report of the selection could not be written.
    #[error("Failed to write the bucket selection report")]
    Report(#[source] io::Error),
}

impl RunRootError {
    /// Whether the request was refused because of what the caller gave (a malformed URL
    /// setting or run id), before anything was asked: a usage error.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Api(e) if e.is_usage())
    }
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

/// Where the fork evidence of a bucket selection comes from.
#[derive(Debug, Clone, Copy)]
pub enum RunFacts<'a> {
    /// The API, for this run id.
    Lookup(&'a str),
    /// A run fetched earlier (its head repository is the evidence; nothing is asked).
    Known(&'a WorkflowRun),
    /// The current run's event payload.
    Event,
}

/// Resolves the output root of a run as the reference's `from_workflow_run` does: repository
/// and release type from the request or the environment, fork evidence from the GitHub API
/// (when asked) or the event payload. The selection report goes to `log` (stderr in the
/// tools). Blocks on the API when `request.lookup_workflow_run`.
///
/// # Errors
/// [`RunRootError`]: invalid inputs, a failed look-up, an unreadable event payload.
pub fn resolve_run_root(
    request: &RunRequest,
    lookup: &dyn Fn(&str) -> Option<String>,
    log: &mut dyn Write,
) -> Result<(WorkflowOutputRoot, BucketSelection), RunRootError> {
    let selection = select_run_bucket(
        request.repository.clone(),
        request.release_type,
        request
            .lookup_workflow_run
            .then_some(request.run_id.as_str()),
        lookup,
        log,
    )?;
    let root = WorkflowOutputRoot::for_workflow_run(&request.run_id, request.platform, &selection)?;
    Ok((root, selection))
}

/// Selects the artifacts bucket of a run as the reference's
/// `get_artifacts_bucket_config_for_workflow_run` does, printing the same block to `log`:
/// repository and release type given or else from the environment (an explicit release type
/// leaves `RELEASE_TYPE` unread), fork evidence from the GitHub API for `workflow_run_id`, or
/// else from the current run's event payload.
///
/// # Errors
/// As [`resolve_run_root`].
pub fn select_run_bucket(
    repository: Option<GithubRepository>,
    release_type: Option<ReleaseType>,
    workflow_run_id: Option<&str>,
    lookup: &dyn Fn(&str) -> Option<String>,
    log: &mut dyn Write,
) -> Result<BucketSelection, RunRootError> {
    let facts = match workflow_run_id {
        Some(id) => RunFacts::Lookup(id),
        None => RunFacts::Event,
    };
    select_bucket(repository, release_type, facts, lookup, log)
}

/// As [`select_run_bucket`] for a run already fetched from the API (`workflow_run=` of the
/// reference): its head repository is the fork evidence, no request is made.
///
/// # Errors
/// As [`resolve_run_root`] (no API error).
pub fn select_bucket_for_run(
    repository: Option<GithubRepository>,
    release_type: Option<ReleaseType>,
    run: &WorkflowRun,
    lookup: &dyn Fn(&str) -> Option<String>,
    log: &mut dyn Write,
) -> Result<BucketSelection, RunRootError> {
    select_bucket(repository, release_type, RunFacts::Known(run), lookup, log)
}

/// Selects the artifacts bucket of a run with the fork evidence of `facts`, writing the
/// reference's report block to `log`:
///
/// ```text
/// Retrieving bucket info for workflow run...
///   github_repository: ROCm/TheRock
///   release_type: ci
///   workflow_run_id: 12345                (with a run)
///   head_github_repository: someone/TheRock (with a run)
///   is_pr_from_fork: True
///   bucket: therock-ci-artifacts-external
///   Fork PR detected, skipping OIDC (using runner base credentials)
/// ```
///
/// # Errors
/// As [`resolve_run_root`].
pub fn select_bucket(
    repository: Option<GithubRepository>,
    release_type: Option<ReleaseType>,
    facts: RunFacts<'_>,
    lookup: &dyn Fn(&str) -> Option<String>,
    log: &mut dyn Write,
) -> Result<BucketSelection, RunRootError> {
    let env = |var: &str| {
        if var == workflow_outputs::EnvVars::RELEASE_TYPE && release_type.is_some() {
            None
        } else {
            lookup(var)
        }
    };
    let ctx = RunContext::from_lookup(env)?.with_overrides(repository, release_type);
    report(
        log,
        &[
            "Retrieving bucket info for workflow run...".to_owned(),
            format!("  github_repository: {}", ctx.repository),
            format!("  release_type: {}", ctx.release_type),
        ],
    )?;
    let fetched;
    let run = match facts {
        RunFacts::Lookup(run_id) => {
            let client = GithubClient::from_lookup(lookup)?;
            fetched = client.workflow_run(ctx.repository.as_str(), run_id)?;
            Some(&fetched)
        }
        RunFacts::Known(run) => Some(run),
        RunFacts::Event => None,
    };
    let fork = if let Some(run) = run {
        let head = run
            .head_repository_full_name()
            .unwrap_or("(none: deleted fork)");
        report(
            log,
            &[
                format!("  workflow_run_id: {}", run.id),
                format!("  head_github_repository: {head}"),
            ],
        )?;
        ForkEvidence::WorkflowRun {
            head_repository: run.head_repository_full_name(),
        }
    } else {
        ForkEvidence::Event {
            is_pr_from_fork: is_pr_from_fork_with(lookup).map_err(RunRootError::Event)?,
        }
    };
    let selection = ctx.select_bucket(fork);
    let is_fork = selection.is_pr_from_fork();
    let mut lines = vec![
        format!(
            "  is_pr_from_fork: {}",
            if is_fork { "True" } else { "False" }
        ),
        format!("  bucket: {}", selection.config().name()),
    ];
    if is_fork {
        lines.push("  Fork PR detected, skipping OIDC (using runner base credentials)".to_owned());
    }
    report(log, &lines)?;
    Ok(selection)
}

/// Writes `lines` to `log`, one per line.
fn report(log: &mut dyn Write, lines: &[String]) -> Result<(), RunRootError> {
    lines
        .iter()
        .try_for_each(|line| writeln!(log, "{line}"))
        .map_err(RunRootError::Report)
}
