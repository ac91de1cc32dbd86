//! Bucket tables, release types and the resolvers of the bucket for a run (spec §3).

use crate::error::closed_set;
use crate::{Error, GithubRepository};

/// Region of every bucket in the tables.
pub const DEFAULT_REGION: &str = "us-east-2";
/// AWS account of the CI and release buckets.
pub const DEFAULT_IAM_ACCOUNT: &str = "692859939525";
/// AWS account of the product package repositories (`therock-repo-amd-*`).
pub const PRODUCT_IAM_ACCOUNT: &str = "324352301041";
/// The repository whose own (non-fork) runs write to [`CI_ARTIFACTS_BUCKET`].
pub const THEROCK_REPOSITORY: &str = "ROCm/TheRock";
/// Artifacts bucket of `ci` runs of [`THEROCK_REPOSITORY`].
pub const CI_ARTIFACTS_BUCKET: &str = "therock-ci-artifacts";
/// Artifacts bucket of `ci` runs from forks and other repositories; keys get an
/// `{owner}-{name}/` prefix there.
pub const CI_ARTIFACTS_EXTERNAL_BUCKET: &str = "therock-ci-artifacts-external";

/// Every known bucket and its write role (all in [`DEFAULT_REGION`], account
/// [`DEFAULT_IAM_ACCOUNT`]).
const BUCKETS: &[(&str, Option<&str>)] = &[
    ("therock-ci-artifacts", Some("therock-ci")),
    ("therock-ci-artifacts-external", Some("therock-ci-external")),
    ("therock-dev-artifacts", Some("therock-dev")),
    ("therock-dev-packages", Some("therock-dev")),
    ("therock-dev-python", Some("therock-dev")),
    ("therock-dev-tarball", Some("therock-dev")),
    ("therock-nightly-artifacts", Some("therock-nightly")),
    ("therock-nightly-packages", Some("therock-nightly")),
    ("therock-nightly-python", Some("therock-nightly")),
    ("therock-nightly-tarball", Some("therock-nightly")),
    ("therock-prerelease-artifacts", Some("therock-prerelease")),
    ("therock-prerelease-packages", Some("therock-prerelease")),
    ("therock-prerelease-python", Some("therock-prerelease")),
    ("therock-prerelease-tarball", Some("therock-prerelease")),
    ("therock-release-artifacts", None),
    ("therock-release-packages", None),
    ("therock-release-python", None),
    ("therock-release-tarball", None),
];

/// A bucket with its region and the IAM role that may write to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct S3BucketConfig {
    name: String,
    region: String,
    iam_account: String,
    iam_role: Option<String>,
}

impl S3BucketConfig {
    /// A bucket configuration; an empty role means none.
    pub fn new(
        name: impl Into<String>,
        region: impl Into<String>,
        iam_account: impl Into<String>,
        iam_role: Option<String>,
    ) -> Self {
        Self {
            name: name.into(),
            region: region.into(),
            iam_account: iam_account.into(),
            iam_role: iam_role.filter(|r| !r.is_empty()),
        }
    }

    /// The configuration of a bucket of the static table, if it is one.
    pub fn known(name: &str) -> Option<Self> {
        BUCKETS.iter().find(|(n, _)| *n == name).map(|(n, role)| {
            Self::new(
                *n,
                DEFAULT_REGION,
                DEFAULT_IAM_ACCOUNT,
                role.map(str::to_owned),
            )
        })
    }

    /// Every bucket of the static table.
    pub fn all_known() -> impl Iterator<Item = Self> {
        BUCKETS.iter().filter_map(|(n, _)| Self::known(n))
    }

    /// The bucket name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bucket's region.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The AWS account that owns the write role.
    pub fn iam_account(&self) -> &str {
        &self.iam_account
    }

    /// The role that may write, if any.
    pub fn iam_role(&self) -> Option<&str> {
        self.iam_role.as_deref()
    }

    /// The same bucket without a write role (fork PRs use the runner's own credentials).
    #[must_use]
    pub fn without_iam_role(mut self) -> Self {
        self.iam_role = None;
        self
    }

    /// The step outputs that tell a workflow how to write to the bucket: `bucket`, `iam_role`
    /// (empty without a role) and `aws_region`.
    ///
    /// # Errors
    /// [`Error::MissingIamAccount`], as [`Self::write_access_iam_role`].
    pub fn access_outputs(&self) -> Result<[(&'static str, String); 3], Error> {
        Ok([
            ("bucket", self.name().to_owned()),
            (
                "iam_role",
                self.write_access_iam_role()?.unwrap_or_default(),
            ),
            ("aws_region", self.region().to_owned()),
        ])
    }

    /// `arn:aws:iam::{account}:role/{role}`, or `None` without a role.
    pub fn write_access_iam_role(&self) -> Result<Option<String>, Error> {
        match &self.iam_role {
            None => Ok(None),
            Some(role) if self.iam_account.is_empty() => Err(Error::MissingIamAccount {
                bucket: self.name.clone(),
                role: role.clone(),
            }),
            Some(role) => Ok(Some(format!(
                "arn:aws:iam::{}:role/{role}",
                self.iam_account
            ))),
        }
    }
}

closed_set! {
    /// The kind of build a run makes; selects the artifacts bucket and the release buckets.
    ReleaseType, "release_type", {
        /// Pre- and post-submit CI.
        Ci = "ci",
        /// Developer release builds.
        Dev = "dev",
        /// Developer builds of a best-known configuration.
        DevBkc = "dev-bkc",
        /// Nightly releases.
        Nightly = "nightly",
        /// Nightly builds of a best-known configuration.
        NightlyBkc = "nightly-bkc",
        /// Release candidates.
        Prerelease = "prerelease",
    }
}

/// The release types that publish releases (all but `ci`), in a stable order.
const RELEASE_TYPES: &[&str] = &["dev", "dev-bkc", "nightly", "nightly-bkc", "prerelease"];

closed_set! {
    /// The kinds of release bucket.
    ReleaseBucketType, "bucket_type", {
        /// Native packages (deb/rpm).
        Packages = "packages",
        /// Python wheels.
        Python = "python",
        /// Tarballs.
        Tarball = "tarball",
    }
}

closed_set! {
    /// Products with their own package repository buckets.
    ReleaseProduct, "product", {
        /// ROCm core.
        Core = "core",
        /// JAX.
        Jax = "jax",
        /// `PyTorch`.
        Pytorch = "pytorch",
    }
}

impl ReleaseType {
    /// The word used in the release bucket names (`therock-{word}-{type}`), `None` for `ci`.
    fn bucket_word(self) -> Option<&'static str> {
        match self {
            ReleaseType::Ci => None,
            ReleaseType::Dev | ReleaseType::DevBkc => Some("dev"),
            ReleaseType::Nightly | ReleaseType::NightlyBkc => Some("nightly"),
            ReleaseType::Prerelease => Some("prerelease"),
        }
    }

    fn not_a_release(self) -> Error {
        Error::InvalidValue {
            what: "release_type",
            value: self.as_str().to_owned(),
            allowed: RELEASE_TYPES,
        }
    }

    /// The release stream: `dev`, `nightly`, `rc` or `bkc`. `ci` publishes no releases.
    pub fn release_stream(self) -> Result<&'static str, Error> {
        match self {
            ReleaseType::Ci => Err(self.not_a_release()),
            ReleaseType::Dev => Ok("dev"),
            ReleaseType::Nightly => Ok("nightly"),
            ReleaseType::Prerelease => Ok("rc"),
            ReleaseType::DevBkc | ReleaseType::NightlyBkc => Ok("bkc"),
        }
    }
}

/// Whether `repository` is [`THEROCK_REPOSITORY`]; GitHub names are case-insensitive.
fn is_therock(repository: &GithubRepository) -> bool {
    repository.as_str().eq_ignore_ascii_case(THEROCK_REPOSITORY)
}

/// The artifacts bucket for a release type (spec §3.2). `ci` runs of forks or of repositories
/// other than `ROCm/TheRock` go to the external bucket. The write role is kept; see
/// [`BucketSelection`] for the fork rule that drops it.
pub fn artifacts_bucket_config(
    release_type: ReleaseType,
    repository: &GithubRepository,
    is_pr_from_fork: bool,
) -> S3BucketConfig {
    let name = match release_type {
        ReleaseType::Ci if is_pr_from_fork || !is_therock(repository) => {
            CI_ARTIFACTS_EXTERNAL_BUCKET
        }
        ReleaseType::Ci => CI_ARTIFACTS_BUCKET,
        ReleaseType::Dev | ReleaseType::DevBkc => "therock-dev-artifacts",
        ReleaseType::Nightly | ReleaseType::NightlyBkc => "therock-nightly-artifacts",
        ReleaseType::Prerelease => "therock-prerelease-artifacts",
    };
    S3BucketConfig::known(name).expect("every artifacts bucket is in the table")
}

/// The release bucket `therock-{dev|nightly|prerelease}-{bucket_type}`; `ci` has none.
pub fn release_bucket_config(
    release_type: ReleaseType,
    bucket_type: ReleaseBucketType,
) -> Result<S3BucketConfig, Error> {
    let word = release_type
        .bucket_word()
        .ok_or_else(|| release_type.not_a_release())?;
    let name = format!("therock-{word}-{bucket_type}");
    Ok(S3BucketConfig::known(&name).expect("every release bucket is in the table"))
}

/// The Python package index of a release stream: `https://{stream}.repo.amd.com/rocm/whl-next/`.
pub fn release_package_index_url(release_type: ReleaseType) -> Result<String, Error> {
    let stream = release_type.release_stream()?;
    Ok(format!("https://{stream}.repo.amd.com/rocm/whl-next/"))
}

/// What is known about whether the run is a pull request from a fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkEvidence<'a> {
    /// The workflow run as the GitHub API returned it: the full name of its head repository,
    /// `None` when the API reports none (the fork was deleted). The run is a fork PR when the
    /// head repository is absent or differs from the base repository.
    WorkflowRun {
        /// `head_repository.full_name` of the run.
        head_repository: Option<&'a str>,
    },
    /// The current run's event payload was inspected (`pull_request.head.repo.fork`).
    Event {
        /// Whether the payload says the head repository is a fork.
        is_pr_from_fork: bool,
    },
}

impl ForkEvidence<'_> {
    /// Not a pull request from a fork: a push, a schedule, a dispatch, or a pull request
    /// from a branch of the repository itself.
    pub const NOT_A_FORK: ForkEvidence<'static> = ForkEvidence::Event {
        is_pr_from_fork: false,
    };

    /// A pull request from a fork, as an event payload says (`pull_request.head.repo.fork`).
    pub const FORK: ForkEvidence<'static> = ForkEvidence::Event {
        is_pr_from_fork: true,
    };
}

/// The bucket chosen for a run's outputs, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketSelection {
    repository: GithubRepository,
    release_type: ReleaseType,
    is_pr_from_fork: bool,
    head_repository: Option<String>,
    config: S3BucketConfig,
}

impl BucketSelection {
    /// Selects the artifacts bucket for a run of `repository` (spec §3.3). A fork PR never
    /// gets the bucket's write role: it uploads with the runner's own credentials.
    pub fn resolve(
        repository: &GithubRepository,
        release_type: ReleaseType,
        fork: ForkEvidence<'_>,
    ) -> Self {
        let (is_pr_from_fork, head_repository) = match fork {
            ForkEvidence::WorkflowRun { head_repository } => (
                head_repository.is_none_or(|head| !repository.as_str().eq_ignore_ascii_case(head)),
                head_repository.map(str::to_owned),
            ),
            ForkEvidence::Event { is_pr_from_fork } => (is_pr_from_fork, None),
        };
        let mut config = artifacts_bucket_config(release_type, repository, is_pr_from_fork);
        if is_pr_from_fork {
            config = config.without_iam_role();
        }
        Self {
            repository: repository.clone(),
            release_type,
            is_pr_from_fork,
            head_repository,
            config,
        }
    }

    /// The base repository of the run.
    pub fn repository(&self) -> &GithubRepository {
        &self.repository
    }

    /// The release type used.
    pub fn release_type(&self) -> ReleaseType {
        self.release_type
    }

    /// Whether the run was found to be a fork PR.
    pub fn is_pr_from_fork(&self) -> bool {
        self.is_pr_from_fork
    }

    /// The head repository reported by the workflow run, if one was looked up.
    pub fn head_repository(&self) -> Option<&str> {
        self.head_repository.as_deref()
    }

    /// The chosen bucket (without a write role for fork PRs).
    pub fn config(&self) -> &S3BucketConfig {
        &self.config
    }

    /// The key prefix for runs in the external bucket: `{owner}-{name}/` of the base
    /// repository there, empty elsewhere.
    pub fn external_repo(&self) -> crate::ExternalRepo {
        if self.config.name() == CI_ARTIFACTS_EXTERNAL_BUCKET {
            crate::ExternalRepo::of(&self.repository)
        } else {
            crate::ExternalRepo::NONE
        }
    }
}
