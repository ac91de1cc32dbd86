//! The S3 layout of a CI run's outputs and the tables that choose its bucket.
//!
//! A run's outputs live under `s3://{bucket}/{external_repo}{run_id}-{platform}/`.
//! [`WorkflowOutputRoot`] computes every key below it; [`BucketSelection`] picks the bucket and
//! write role from the release type, the repository and whether the run is a pull request from
//! a fork. Nothing here does I/O: facts from the GitHub API or the event payload come in as
//! [`ForkEvidence`]. The published release tarballs (`v4/tarball/therock-dist-*.tar.gz` in the
//! nightly and dev tarball buckets) are named by [`tarball_location`] and [`ReleaseKind`].
//!
//! ```
//! use rock_ci_workflow_outputs::{ForkEvidence, Platform, ReleaseType, RunContext, WorkflowOutputRoot};
//!
//! let ctx = RunContext { repository: "ROCm/TheRock".parse()?, release_type: ReleaseType::Ci };
//! let fork = ForkEvidence::WorkflowRun { head_repository: Some("someone/TheRock") };
//! let selection = ctx.select_bucket(fork);
//! assert_eq!(selection.config().name(), "therock-ci-artifacts-external");
//! assert_eq!(selection.config().write_access_iam_role()?, None);
//!
//! let root = WorkflowOutputRoot::for_workflow_run("12345", Platform::Linux, &selection)?;
//! assert_eq!(
//!     root.log_file("gfx94X-dcgpu", "build.log").s3_uri(),
//!     "s3://therock-ci-artifacts-external/ROCm-TheRock/12345-linux/logs/gfx94X-dcgpu/build.log"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

mod buckets;
mod env;
mod error;
mod release;
mod repo;
mod root;
mod tarballs;

pub use buckets::{
    BucketSelection, CI_ARTIFACTS_BUCKET, CI_ARTIFACTS_EXTERNAL_BUCKET, DEFAULT_IAM_ACCOUNT,
    DEFAULT_REGION, ForkEvidence, PRODUCT_IAM_ACCOUNT, ReleaseBucketType, ReleaseProduct,
    ReleaseType, S3BucketConfig, THEROCK_REPOSITORY, artifacts_bucket_config,
    release_bucket_config, release_package_index_url,
};
pub use env::{EnvVars, RunContext};
pub use error::Error;
pub use release::{
    LEGACY_MULTI_ARCH_WHEEL_PREFIX, LEGACY_PER_FAMILY_WHEEL_PREFIXES, PRODUCT_REGION,
    PYTHON_PACKAGE_EXTENSIONS, PythonIndex, core_native_packages_prefix, core_tarball_prefix,
    is_python_package_file, legacy_multi_arch_index_url, product_package_index_url,
    product_package_location, product_release_bucket_config,
};
pub use repo::{GithubRepository, Platform};
pub use root::{DEFAULT_LOCAL_BUCKET, DEFAULT_LOCAL_RUN_ID, ExternalRepo, WorkflowOutputRoot};
pub use storage_location::StorageLocation;
pub use tarballs::{
    ReleaseKind, TARBALL_PREFIX, nightly_date_digits, parse_tarball_name, tarball_listing_prefix,
    tarball_location, tarball_name, tarball_name_of_key,
};

#[cfg(test)]
mod tests;

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
