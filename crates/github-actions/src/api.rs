use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use storage_location::redact_url;

use crate::env::{EnvVars, non_empty, process_env};

/// The public GitHub REST API.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The public GitHub web UI.
pub const DEFAULT_SERVER_URL: &str = "https://github.com";
/// Responses larger than this are refused.
const MAX_RESPONSE_BYTES: u64 = 64 << 20;

/// A failed REST request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// Rate limited, and the limit does not reset within the policy's patience.
    #[error(
        "GitHub API rate limit exceeded for {url} ({detail}). Authenticate with `gh auth login` or set GITHUB_TOKEN to increase limits. See https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api"
    )]
    RateLimited {
        /// The URL requested.
        url: String,
        /// Attempts made and when the limit resets.
        detail: String,
    },
    /// 401 or 403 for another reason than a rate limit.
    #[error(
        "Access denied ({status}) for {url}. Check that the token has the necessary permissions (e.g. `repo`, `workflow`)"
    )]
    Forbidden {
        /// The URL requested.
        url: String,
        /// 401 or 403.
        status: u16,
    },
    /// 404.
    #[error(
        "Resource not found (404) for {url}. Verify the repository, workflow, or run ID exists"
    )]
    NotFound {
        /// The URL requested.
        url: String,
    },
    /// Any other HTTP error, after retries for server errors.
    #[error("HTTP {status} error for {url} after {attempts} attempt(s): {body}")]
    Http {
        /// The URL requested.
        url: String,
        /// The status code.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// The start of the response body.
        body: String,
    },
    /// The request could not be made or the response not read, after retries.
    #[error("Network error for {url} after {attempts} attempt(s)")]
    Network {
        /// The URL requested.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The cause (its text with credentials in URLs redacted).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server's TLS certificate is not signed by an authority the client trusts (not
    /// retried: asking again gets the same certificate).
    #[error(
        "The certificate of {url} is not trusted ({detail}): point SSL_CERT_FILE at a PEM file \
         with the authority that signed it"
    )]
    UntrustedCertificate {
        /// The URL requested.
        url: String,
        /// What the TLS library found wrong.
        detail: String,
    },
    /// The body could not be read.
    #[error("Failed to read the response from {url}")]
    Body {
        /// The URL requested.
        url: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The body is not the JSON expected.
    #[error("Invalid JSON response from {url}")]
    InvalidJson {
        /// The URL requested.
        url: String,
        /// The cause (with line and column).
        #[source]
        source: serde_json::Error,
    },
    /// A URL setting is not an `http://` or `https://` URL with a host; no request is made.
    #[error("{var} is not an http(s) URL with a host: {value:?}")]
    InvalidUrl {
        /// The variable (or flag) the URL came from.
        var: &'static str,
        /// The value, credentials shown as `***`.
        value: String,
    },
    /// A workflow run id is not a number; no request is made.
    #[error("Invalid workflow run id {value:?}: a GitHub run id is a number (digits only)")]
    InvalidRunId {
        /// The value given.
        value: String,
    },
    /// A commit is not a full SHA; no request is made.
    #[error(
        "Invalid commit {value:?}: give the commit's full SHA (40 hexadecimal digits, or 64 for a SHA-256 repository); the API matches runs by their full head SHA only"
    )]
    InvalidCommit {
        /// The value given.
        value: String,
    },
    /// A workflow run could not be fetched.
    #[error(
        "Failed to query workflow run {run_id} in repository {repository}: {run_url}\n  {source}\nHint: Did you mean to specify a different repository with --run-github-repo?"
    )]
    WorkflowRun {
        /// The repository asked.
        repository: String,
        /// The run id asked.
        run_id: String,
        /// The run's web page.
        run_url: String,
        /// What failed (shown in the message, so not exposed as the source).
        source: Box<ApiError>,
    },
}

/// How requests are retried: server errors (5xx), network errors and rate limits are
/// retried with exponential backoff and jitter; a rate limit waits for its reset time when
/// the server says it (`retry-after`, `x-ratelimit-reset`), up to `max_rate_limit_wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Delay before the first retry; doubled for each further one.
    pub base_delay: Duration,
    /// Upper bound of one backoff delay.
    pub max_delay: Duration,
    /// The longest wait for a rate limit to reset; longer waits fail at once.
    pub max_rate_limit_wait: Duration,
    /// No network or server-error retry starts later than this after the first attempt: an
    /// endpoint that never answers fails within it (plus one attempt's time limit).
    pub give_up_after: Duration,
    /// Longest wait for a connection.
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of a response.
    pub read_timeout: Duration,
    /// Longest one attempt may take.
    pub attempt_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_rate_limit_wait: Duration::from_mins(5),
            give_up_after: Duration::from_secs(40),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(20),
            attempt_timeout: Duration::from_mins(1),
        }
    }
}

/// What was wrong with the server's certificate, when `err` is a handshake that failed on it.
fn untrusted_certificate(err: &ureq::Error) -> Option<String> {
    let tls = match err {
        ureq::Error::Rustls(e) => Some(e),
        ureq::Error::Io(e) => e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()),
        _ => None,
    }?;
    match tls {
        rustls::Error::InvalidCertificate(why) => Some(format!("{why:?}")),
        _ => None,
    }
}

/// The certificate authorities the API client trusts: the system's, as the S3 client trusts
/// them (`SSL_CERT_FILE` and `SSL_CERT_DIR` choose others), else, on a system without any, the
/// bundled Mozilla set. Read once per process.
fn root_certs() -> ureq::tls::RootCerts {
    static ROOTS: std::sync::OnceLock<ureq::tls::RootCerts> = std::sync::OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let native = rustls_native_certs::load_native_certs();
            if native.certs.is_empty() {
                tracing::debug!("No system certificate authorities: using the bundled set");
                ureq::tls::RootCerts::WebPki
            } else {
                native
                    .certs
                    .iter()
                    .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
                    .into()
            }
        })
        .clone()
}

impl RetryPolicy {
    /// An HTTP agent with this policy's time limits.
    fn agent(&self) -> ureq::Agent {
        // rustls with ring, the provider the S3 client links too: one TLS stack.
        let tls = ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::Rustls)
            .root_certs(root_certs())
            .unversioned_rustls_crypto_provider(std::sync::Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .build();
        ureq::Agent::config_builder()
            .tls_config(tls)
            // Error statuses come back as responses: their headers say how long to wait.
            .http_status_as_error(false)
            .timeout_connect(Some(self.connect_timeout))
            .timeout_per_read(Some(self.read_timeout))
            .timeout_global(Some(self.attempt_timeout))
            .user_agent(concat!("rock-ci/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent()
    }

    fn backoff(&self, retry: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(1u32 << retry.min(16))
            .min(self.max_delay);
        // Up to 25% jitter, from the clock: retries of parallel jobs spread out.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        exp + exp.mul_f64(f64::from(nanos % 1000) / 4000.0)
    }
}

/// A workflow run, as the REST API returns it (the fields the tools use).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkflowRun {
    /// The run id.
    pub id: u64,
    /// The repository the run's head commit comes from; `None` when the fork was deleted.
    #[serde(default)]
    pub head_repository: Option<HeadRepository>,
    /// The head commit.
    #[serde(default)]
    pub head_sha: Option<String>,
    /// `queued`, `in_progress`, `completed`, ...
    #[serde(default)]
    pub status: Option<String>,
    /// `success`, `failure`, ... once completed.
    #[serde(default)]
    pub conclusion: Option<String>,
    /// The run's web page.
    #[serde(default)]
    pub html_url: Option<String>,
    /// Creation time (RFC 3339).
    #[serde(default)]
    pub created_at: Option<String>,
}

/// The head repository of a run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HeadRepository {
    /// `owner/name`.
    pub full_name: String,
}

impl WorkflowRun {
    /// `head_repository.full_name`, if the run has a head repository.
    pub fn head_repository_full_name(&self) -> Option<&str> {
        self.head_repository.as_ref().map(|r| r.full_name.as_str())
    }
}

#[derive(Deserialize)]
struct CommitRef {
    sha: String,
}

#[derive(Deserialize)]
struct WorkflowRuns {
    #[serde(default)]
    workflow_runs: Vec<WorkflowRun>,
}

/// A client of the GitHub REST API.
#[derive(Debug, Clone)]
pub struct GithubClient {
    api_url: String,
    server_url: String,
    token: Option<String>,
    retry: RetryPolicy,
    agent: ureq::Agent,
}

enum Attempt {
    /// The body and the `rel="next"` URL of the `Link` header, if any.
    Done(Vec<u8>, Option<String>),
    Retry {
        wait: Duration,
        error: ApiError,
    },
    Fail(ApiError),
}

impl ApiError {
    /// Whether the request was refused before it was sent because of what the caller gave
    /// (a malformed URL setting or run id): a usage error, not a failure of the API.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::InvalidUrl { .. } | Self::InvalidRunId { .. } | Self::InvalidCommit { .. }
        )
    }
}

/// Checks that `run_id` is a GitHub workflow run id (ASCII digits), before it becomes part of
/// a request path.
///
/// # Errors
/// [`ApiError::InvalidRunId`] naming the value.
pub fn check_run_id(run_id: &str) -> Result<(), ApiError> {
    if !run_id.is_empty() && run_id.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(ApiError::InvalidRunId {
            value: run_id.to_owned(),
        })
    }
}

/// Checks that `sha` is a full commit SHA (40 or 64 hexadecimal digits) before it becomes part
/// of a request: the runs API matches `head_sha` exactly, so anything else finds nothing.
///
/// # Errors
/// [`ApiError::InvalidCommit`] naming the value.
pub fn check_commit_sha(sha: &str) -> Result<(), ApiError> {
    if matches!(sha.len(), 40 | 64) && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(ApiError::InvalidCommit {
            value: sha.to_owned(),
        })
    }
}

/// Checks that `value` of `var` is an `http://` or `https://` URL with a host.
fn check_http_url(var: &'static str, value: &str) -> Result<(), ApiError> {
    if storage_location::is_http_url(value) {
        Ok(())
    } else {
        Err(ApiError::InvalidUrl {
            var,
            value: redact_url(value),
        })
    }
}

impl GithubClient {
    /// A client of the API at `api_url`, without a token, with the default retry policy.
    pub fn new(api_url: &str) -> Self {
        let retry = RetryPolicy::default();
        let agent = retry.agent();
        Self {
            api_url: api_url.trim_end_matches('/').to_owned(),
            server_url: DEFAULT_SERVER_URL.to_owned(),
            token: None,
            retry,
            agent,
        }
    }

    /// A client configured from [`EnvVars::GITHUB_API_URL`], [`EnvVars::GITHUB_SERVER_URL`]
    /// and the token in [`EnvVars::GITHUB_TOKEN`] or [`EnvVars::GH_TOKEN`].
    ///
    /// # Errors
    /// [`ApiError::InvalidUrl`] when either URL variable is set to something that is not an
    /// http(s) URL with a host.
    pub fn from_env() -> Result<Self, ApiError> {
        Self::from_lookup(&process_env)
    }

    /// As [`GithubClient::from_env`], reading variables through `lookup`.
    ///
    /// # Errors
    /// As [`GithubClient::from_env`].
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, ApiError> {
        let api_url = non_empty(lookup, EnvVars::GITHUB_API_URL);
        if let Some(url) = &api_url {
            check_http_url(EnvVars::GITHUB_API_URL, url)?;
        }
        let mut client = Self::new(api_url.as_deref().unwrap_or(DEFAULT_API_URL));
        if let Some(server) = non_empty(lookup, EnvVars::GITHUB_SERVER_URL) {
            check_http_url(EnvVars::GITHUB_SERVER_URL, &server)?;
            client = client.with_server_url(&server);
        }
        client.token = non_empty(lookup, EnvVars::GITHUB_TOKEN)
            .or_else(|| non_empty(lookup, EnvVars::GH_TOKEN));
        let seconds = |var| {
            non_empty(lookup, var)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|n| Duration::from_secs(n.max(1)))
        };
        let mut policy = client.retry;
        if let Some(read) = seconds(EnvVars::ROCK_CI_READ_TIMEOUT) {
            policy.read_timeout = read;
        }
        if let Some(limit) = seconds(EnvVars::ROCK_CI_OPERATION_TIMEOUT) {
            policy.give_up_after = limit;
            policy.attempt_timeout = limit;
        }
        if let Some(connect) = seconds(EnvVars::ROCK_CI_CONNECT_TIMEOUT) {
            policy.connect_timeout = connect;
        }
        if let Some(attempts) = non_empty(lookup, EnvVars::ROCK_CI_MAX_ATTEMPTS)
            .and_then(|v| v.trim().parse::<u32>().ok())
        {
            policy.max_attempts = attempts.max(1);
        }
        Ok(client.with_retry_policy(policy))
    }

    /// Uses `token` as a bearer token.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into()).filter(|t| !t.is_empty());
        self
    }

    /// Links to runs point at `server_url` instead of `https://github.com`.
    #[must_use]
    pub fn with_server_url(mut self, server_url: &str) -> Self {
        server_url
            .trim_end_matches('/')
            .clone_into(&mut self.server_url);
        self
    }

    /// Retries with `policy`.
    #[must_use]
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self.agent = policy.agent();
        self
    }

    /// The API base URL.
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The web page of a run.
    pub fn run_url(&self, repository: &str, run_id: &str) -> String {
        format!("{}/{repository}/actions/runs/{run_id}", self.server_url)
    }

    /// `GET /repos/{repository}/actions/runs/{run_id}`. Errors name the run's web page and
    /// suggest `--run-github-repo`.
    ///
    /// # Errors
    /// [`ApiError::InvalidRunId`] (before any request) when `run_id` is not a number;
    /// [`ApiError::WorkflowRun`] when the request fails.
    pub fn workflow_run(&self, repository: &str, run_id: &str) -> Result<WorkflowRun, ApiError> {
        check_run_id(run_id)?;
        let url = format!("{}/repos/{repository}/actions/runs/{run_id}", self.api_url);
        self.get_json(&url).map_err(|e| ApiError::WorkflowRun {
            repository: repository.to_owned(),
            run_id: run_id.to_owned(),
            run_url: redact_url(&self.run_url(repository, run_id)),
            source: Box::new(e),
        })
    }

    /// The runs of `workflow_file` for commit `sha`, newest first (first page only).
    pub fn workflow_runs_for_commit(
        &self,
        repository: &str,
        workflow_file: &str,
        sha: &str,
    ) -> Result<Vec<WorkflowRun>, ApiError> {
        let url = format!(
            "{}/repos/{repository}/actions/workflows/{workflow_file}/runs?head_sha={sha}&sort=created&direction=desc",
            self.api_url
        );
        let mut runs = self.get_json::<WorkflowRuns>(&url)?.workflow_runs;
        runs.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        Ok(runs)
    }

    /// Every run of `workflow_file` for commit `sha`, newest first: all pages (100 runs
    /// each), following the `Link` header.
    pub fn all_workflow_runs_for_commit(
        &self,
        repository: &str,
        workflow_file: &str,
        sha: &str,
    ) -> Result<Vec<WorkflowRun>, ApiError> {
        let mut next = Some(format!(
            "{}/repos/{repository}/actions/workflows/{}/runs?head_sha={}&sort=created&direction=desc&per_page=100",
            self.api_url,
            percent_encode(workflow_file),
            percent_encode(sha)
        ));
        let mut runs = Vec::new();
        while let Some(url) = next {
            let (page, link) = self.get_json_page::<WorkflowRuns>(&url)?;
            let empty = page.workflow_runs.is_empty();
            runs.extend(page.workflow_runs);
            next = link.filter(|_| !empty);
        }
        runs.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        Ok(runs)
    }

    /// The SHAs of the newest `max_count` commits of `branch`, newest first
    /// (`GET /repos/{repository}/commits?sha={branch}`, as many pages of up to 100 as needed).
    pub fn recent_branch_commits(
        &self,
        repository: &str,
        branch: &str,
        max_count: usize,
    ) -> Result<Vec<String>, ApiError> {
        let mut next = Some(format!(
            "{}/repos/{repository}/commits?sha={}&per_page={}",
            self.api_url,
            percent_encode(branch),
            max_count.clamp(1, 100)
        ));
        let mut shas = Vec::new();
        while let Some(url) = next.filter(|_| shas.len() < max_count) {
            let (page, link) = self.get_json_page::<Vec<CommitRef>>(&url)?;
            let empty = page.is_empty();
            shas.extend(page.into_iter().map(|c| c.sha));
            next = link.filter(|_| !empty);
        }
        shas.truncate(max_count);
        Ok(shas)
    }

    /// The commit SHA a branch, tag or commit `git_ref` names
    /// (`GET /repos/{repository}/commits/{ref}`, the ref percent-encoded).
    pub fn resolve_ref(&self, repository: &str, git_ref: &str) -> Result<String, ApiError> {
        let url = format!(
            "{}/repos/{repository}/commits/{}",
            self.api_url,
            percent_encode(git_ref)
        );
        Ok(self.get_json::<CommitRef>(&url)?.sha)
    }

    /// GETs `url` and parses the JSON body, retrying per the policy.
    pub fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, ApiError> {
        self.get_json_page(url).map(|(body, _)| body)
    }

    /// As [`GithubClient::get_json`], with the URL of the next page (the `Link` header's
    /// `rel="next"`), if any.
    pub fn get_json_page<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<(T, Option<String>), ApiError> {
        let (body, next) = self.get_with_retries(url)?;
        let parsed = serde_json::from_slice(&body).map_err(|source| ApiError::InvalidJson {
            url: redact_url(url),
            source,
        })?;
        Ok((parsed, next))
    }

    fn get_with_retries(&self, url: &str) -> Result<(Vec<u8>, Option<String>), ApiError> {
        if self.token.is_none() {
            tracing::warn!(
                "No GitHub token (GITHUB_TOKEN or GH_TOKEN); requests may be rate limited"
            );
        }
        let started = std::time::Instant::now();
        let mut attempt = 1;
        loop {
            match self.attempt(url, attempt) {
                Attempt::Done(body, next) => return Ok((body, next)),
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry { error, .. } if attempt >= self.retry.max_attempts => {
                    return Err(error);
                }
                Attempt::Retry { wait, error }
                    if !matches!(error, ApiError::RateLimited { .. })
                        && started.elapsed() + wait > self.retry.give_up_after =>
                {
                    tracing::warn!(
                        "GitHub API request failed (attempt {attempt}); giving up after {} s: {error}",
                        started.elapsed().as_secs()
                    );
                    return Err(error);
                }
                Attempt::Retry { wait, error } => {
                    tracing::warn!(
                        "GitHub API request failed (attempt {attempt} of {}), retrying in {:.1}s: {error}",
                        self.retry.max_attempts,
                        wait.as_secs_f64()
                    );
                    std::thread::sleep(wait);
                    attempt += 1;
                }
            }
        }
    }

    fn attempt(&self, url: &str, attempt: u32) -> Attempt {
        let mut request = self
            .agent
            .get(url)
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28");
        if let Some(token) = &self.token {
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        let backoff = self.retry.backoff(attempt - 1);
        match request.call() {
            Ok(response) if response.status().is_success() => {
                let next = header(&response, "link").and_then(next_link);
                match read_body(response) {
                    Ok(body) => Attempt::Done(body, next),
                    Err(source) => Attempt::Retry {
                        wait: backoff,
                        error: ApiError::Body {
                            url: redact_url(url),
                            source,
                        },
                    },
                }
            }
            Ok(response) => self.classify_status(url, attempt, response, backoff),
            Err(transport) => match untrusted_certificate(&transport) {
                Some(detail) => Attempt::Fail(ApiError::UntrustedCertificate {
                    url: redact_url(url),
                    detail,
                }),
                None => Attempt::Retry {
                    wait: backoff,
                    error: ApiError::Network {
                        url: redact_url(url),
                        attempts: attempt,
                        source: format!(
                            "{}{} (limits: connect {} s, read {} s, request {} s)",
                            if matches!(transport, ureq::Error::Timeout(_)) {
                                "timed out, "
                            } else {
                                ""
                            },
                            transport.to_string().replace(url, &redact_url(url)),
                            self.retry.connect_timeout.as_secs_f64(),
                            self.retry.read_timeout.as_secs_f64(),
                            self.retry.attempt_timeout.as_secs_f64()
                        )
                        .into(),
                    },
                },
            },
        }
    }

    fn classify_status(
        &self,
        url: &str,
        attempt: u32,
        response: Response,
        backoff: Duration,
    ) -> Attempt {
        let status = response.status().as_u16();
        let header_secs =
            |name: &str| header(&response, name).and_then(|v| v.trim().parse::<u64>().ok());
        let retry_after = header_secs("retry-after").map(Duration::from_secs);
        let remaining = header_secs("x-ratelimit-remaining");
        let reset_wait = header_secs("x-ratelimit-reset").map(|reset| {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            Duration::from_secs(reset.saturating_sub(now) + 1)
        });
        let body = read_body(response)
            .map(|b| String::from_utf8_lossy(&b[..b.len().min(500)]).into_owned())
            .unwrap_or_default();
        let rate_limited = matches!(status, 403 | 429)
            && (remaining == Some(0)
                || retry_after.is_some()
                || status == 429
                || body.to_lowercase().contains("rate limit"));
        let url = redact_url(url);
        if rate_limited {
            let wait = match (retry_after, remaining, reset_wait) {
                (Some(wait), _, _) | (None, Some(0), Some(wait)) => wait,
                _ => backoff,
            };
            let error = ApiError::RateLimited {
                url,
                detail: format!(
                    "status {status}, {attempt} attempt(s), reset in {}s",
                    wait.as_secs()
                ),
            };
            if wait > self.retry.max_rate_limit_wait {
                return Attempt::Fail(error);
            }
            return Attempt::Retry { wait, error };
        }
        match status {
            401 | 403 => Attempt::Fail(ApiError::Forbidden { url, status }),
            404 => Attempt::Fail(ApiError::NotFound { url }),
            408 | 500..=599 => Attempt::Retry {
                wait: retry_after.unwrap_or(backoff),
                error: ApiError::Http {
                    url,
                    status,
                    attempts: attempt,
                    body,
                },
            },
            _ => Attempt::Fail(ApiError::Http {
                url,
                status,
                attempts: attempt,
                body,
            }),
        }
    }
}

type Response = ureq::http::Response<ureq::Body>;

/// A response header's value, if it is there and is text.
fn header<'a>(response: &'a Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The whole body; one larger than [`MAX_RESPONSE_BYTES`] is an error, not a shorter answer.
fn read_body(response: Response) -> std::io::Result<Vec<u8>> {
    response
        .into_body()
        .into_with_config()
        .limit(MAX_RESPONSE_BYTES)
        .read_to_vec()
        .map_err(std::io::Error::other)
}

/// The `rel="next"` URL of a `Link` header (`<url>; rel="next", <url>; rel="last"`).
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| matches!(p.trim(), "rel=\"next\"" | "rel=next"));
        let url = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| url.to_owned())
    })
}

/// `text` with every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`) percent-encoded.
fn percent_encode(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests;
