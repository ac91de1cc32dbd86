use crate::buckets::{BucketSelection, ForkEvidence, ReleaseType, THEROCK_REPOSITORY};
use crate::{Error, GithubRepository, Platform, WorkflowOutputRoot};

/// The environment variables this crate reads, and only in the `from_env` constructors.
pub struct EnvVars;

impl EnvVars {
    /// `owner/name` of the repository the run belongs to. Unset or empty: `ROCm/TheRock`.
    pub const GITHUB_REPOSITORY: &'static str = "GITHUB_REPOSITORY";
    /// The release type. Unset: `ci`. Set to anything else than a release type (empty too):
    /// an error.
    pub const RELEASE_TYPE: &'static str = "RELEASE_TYPE";
}

/// The repository and release type of a run: the inputs of the bucket selection that do not
/// depend on the GitHub API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunContext {
    /// The base repository of the run.
    pub repository: GithubRepository,
    /// The release type.
    pub release_type: ReleaseType,
}

impl RunContext {
    /// Reads [`EnvVars::GITHUB_REPOSITORY`] and [`EnvVars::RELEASE_TYPE`] from the process
    /// environment.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_lookup(|var| std::env::var(var).ok())
    }

    /// As [`RunContext::from_env`], reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let repository = match lookup(EnvVars::GITHUB_REPOSITORY) {
            Some(repo) if !repo.is_empty() => repo
                .parse()
                .map_err(|e: Error| e.in_env(EnvVars::GITHUB_REPOSITORY))?,
            _ => THEROCK_REPOSITORY.parse()?,
        };
        let release_type = match lookup(EnvVars::RELEASE_TYPE) {
            Some(rt) => rt
                .parse()
                .map_err(|e: Error| e.in_env(EnvVars::RELEASE_TYPE))?,
            None => ReleaseType::Ci,
        };
        Ok(Self {
            repository,
            release_type,
        })
    }

    /// Overrides the parts given explicitly (as command-line flags would).
    #[must_use]
    pub fn with_overrides(
        mut self,
        repository: Option<GithubRepository>,
        release_type: Option<ReleaseType>,
    ) -> Self {
        if let Some(repository) = repository {
            self.repository = repository;
        }
        if let Some(release_type) = release_type {
            self.release_type = release_type;
        }
        self
    }

    /// Selects the artifacts bucket of a run of this context.
    pub fn select_bucket(&self, fork: ForkEvidence<'_>) -> BucketSelection {
        BucketSelection::resolve(&self.repository, self.release_type, fork)
    }
}

impl WorkflowOutputRoot {
    /// The root of run `run_id` with the repository and release type read from the environment
    /// (see [`EnvVars`]) and the given fork evidence.
    pub fn from_env(
        run_id: &str,
        platform: Platform,
        fork: ForkEvidence<'_>,
    ) -> Result<Self, Error> {
        let selection = RunContext::from_env()?.select_bucket(fork);
        Self::for_workflow_run(run_id, platform, &selection)
    }
}
