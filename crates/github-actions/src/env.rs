/// The environment variables this crate reads.
pub struct EnvVars;

impl EnvVars {
    /// The event that triggered the run (`pull_request`, `push`, ...).
    pub const GITHUB_EVENT_NAME: &'static str = "GITHUB_EVENT_NAME";
    /// Path of the event payload JSON.
    pub const GITHUB_EVENT_PATH: &'static str = "GITHUB_EVENT_PATH";
    /// Token for the REST API (`Authorization: Bearer`).
    pub const GITHUB_TOKEN: &'static str = "GITHUB_TOKEN";
    /// Token for the REST API when [`Self::GITHUB_TOKEN`] is unset (the `gh` CLI's variable).
    pub const GH_TOKEN: &'static str = "GH_TOKEN";
    /// Base URL of the REST API; default `https://api.github.com` (GitHub Enterprise Server
    /// sets it).
    pub const GITHUB_API_URL: &'static str = "GITHUB_API_URL";
    /// Base URL of the web UI, for links to runs; default `https://github.com`.
    pub const GITHUB_SERVER_URL: &'static str = "GITHUB_SERVER_URL";
    /// File the step summary (markdown) is appended to.
    pub const GITHUB_STEP_SUMMARY: &'static str = "GITHUB_STEP_SUMMARY";
    /// Runner temp dir; the step summary is mirrored to `$RUNNER_TEMP/job_summary.md`.
    pub const RUNNER_TEMP: &'static str = "RUNNER_TEMP";
    /// File step outputs are appended to.
    pub const GITHUB_OUTPUT: &'static str = "GITHUB_OUTPUT";
    /// Seconds to wait for the next bytes of a response (the same variable sets S3 reads).
    pub const ROCK_CI_READ_TIMEOUT: &'static str = "ROCK_CI_READ_TIMEOUT";
    /// Seconds after which no request is retried any more, and the longest one attempt may
    /// take (the same variable sets the S3 deadline).
    pub const ROCK_CI_OPERATION_TIMEOUT: &'static str = "ROCK_CI_OPERATION_TIMEOUT";
    /// Seconds to wait for a connection (the same variable sets S3 connections).
    pub const ROCK_CI_CONNECT_TIMEOUT: &'static str = "ROCK_CI_CONNECT_TIMEOUT";
    /// Attempts per request, the first included (the same variable sets S3 requests).
    pub const ROCK_CI_MAX_ATTEMPTS: &'static str = "ROCK_CI_MAX_ATTEMPTS";
}

/// Reads a variable; unset, empty and non-UTF-8 values are all `None`.
pub(crate) fn non_empty(lookup: &dyn Fn(&str) -> Option<String>, var: &str) -> Option<String> {
    lookup(var).filter(|v| !v.is_empty())
}

/// The values of the GitHub environment that logs must not show: the API tokens, and the
/// `user:password` of the API and server URLs (see [`storage_location::url_secrets`]).
pub fn secret_values(lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let urls = [EnvVars::GITHUB_API_URL, EnvVars::GITHUB_SERVER_URL]
        .into_iter()
        .filter_map(lookup);
    [EnvVars::GITHUB_TOKEN, EnvVars::GH_TOKEN]
        .into_iter()
        .filter_map(lookup)
        .chain(urls.flat_map(|url| storage_location::url_secrets(&url)))
        .collect()
}

/// `lookup`'s answers for `vars`, owned, for work moved to a blocking thread pool.
pub fn captured(
    lookup: &dyn Fn(&str) -> Option<String>,
    vars: &[&'static str],
) -> impl Fn(&str) -> Option<String> + Send + 'static {
    let values: Vec<(&'static str, Option<String>)> =
        vars.iter().map(|var| (*var, lookup(var))).collect();
    move |var: &str| {
        values
            .iter()
            .find(|(name, _)| *name == var)
            .and_then(|(_, value)| value.clone())
    }
}

/// The variables [`crate::resolve_run_root`] reads for a run it does not look up on the API
/// (`lookup_workflow_run` false): the repository, the release type and the event.
pub const CURRENT_RUN_ROOT_VARS: [&str; 4] = [
    workflow_outputs::EnvVars::GITHUB_REPOSITORY,
    workflow_outputs::EnvVars::RELEASE_TYPE,
    EnvVars::GITHUB_EVENT_NAME,
    EnvVars::GITHUB_EVENT_PATH,
];

/// Looks variables up in the process environment.
pub fn process_env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}
