//! The reference's `create_backend_from_env` (spec §7.1).

use std::path::PathBuf;

#[cfg(feature = "s3")]
use storage_backend::{ClientOptions, S3Client};
use workflow_outputs::{ForkEvidence, GithubRepository, Platform, RunContext, WorkflowOutputRoot};

use crate::{ArtifactBackend, Error};

/// Environment variables read by [`backend_from_env`].
pub struct EnvVars;

impl EnvVars {
    /// Non-empty: use a local staging directory here instead of S3.
    pub const THEROCK_LOCAL_STAGING_DIR: &'static str = "THEROCK_LOCAL_STAGING_DIR";
    /// Run id override.
    pub const THEROCK_RUN_ID: &'static str = "THEROCK_RUN_ID";
    /// Platform override.
    pub const THEROCK_PLATFORM: &'static str = "THEROCK_PLATFORM";
    /// The workflow run id of the current run.
    pub const GITHUB_RUN_ID: &'static str = "GITHUB_RUN_ID";
}

/// The artifact backend the environment describes: a local staging directory when
/// [`EnvVars::THEROCK_LOCAL_STAGING_DIR`] is set, else S3 with the run's bucket (repository and
/// release type from the environment, fork state from the event payload, given as `fork`).
/// Run id: argument, else `THEROCK_RUN_ID`, else `GITHUB_RUN_ID`, else `local`. Platform:
/// argument, else `THEROCK_PLATFORM`, else the host.
pub async fn backend_from_env(
    run_id: Option<&str>,
    repository: Option<GithubRepository>,
    platform: Option<Platform>,
    fork: ForkEvidence<'_>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ArtifactBackend, Error> {
    let run_id = run_id
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .or_else(|| lookup(EnvVars::THEROCK_RUN_ID))
        .or_else(|| lookup(EnvVars::GITHUB_RUN_ID))
        .unwrap_or_else(|| workflow_outputs::DEFAULT_LOCAL_RUN_ID.to_owned());
    let platform = match platform {
        Some(p) => p,
        None => match lookup(EnvVars::THEROCK_PLATFORM) {
            Some(p) => p.parse()?,
            None => Platform::host(),
        },
    };
    if let Some(staging) = lookup(EnvVars::THEROCK_LOCAL_STAGING_DIR).filter(|s| !s.is_empty()) {
        let root = WorkflowOutputRoot::for_local(Some(&run_id), Some(platform), None)?;
        return ArtifactBackend::local(&PathBuf::from(staging), root);
    }
    let selection = RunContext::from_lookup(lookup)?
        .with_overrides(repository, None)
        .select_bucket(fork);
    let root = WorkflowOutputRoot::for_workflow_run(&run_id, platform, &selection)?;
    #[cfg(feature = "s3")]
    {
        let client =
            S3Client::connect_with(&ClientOptions::reading(selection.config().region()), lookup)
                .await?;
        Ok(ArtifactBackend::s3(client, root))
    }
    #[cfg(not(feature = "s3"))]
    Err(storage_backend::Error::NoS3Support {
        target: root.root().s3_uri(),
    }
    .into())
}
