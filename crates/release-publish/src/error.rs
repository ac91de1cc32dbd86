//! The errors of planning and publishing a release.

use std::fmt;
use std::path::PathBuf;

use file_tree::FileError;

use crate::names::NameError;

/// Everything that can stop a publication; each names the file or key at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The release type or product has no bucket (`ci`).
    #[error(transparent)]
    Layout(#[from] workflow_outputs::Error),
    /// The source directory does not exist or is no directory.
    #[error("Source directory not found: {}", .0.display())]
    MissingSourceDir(PathBuf),
    /// The source directory holds no package to publish.
    #[error("No wheels found at {}", .0.display())]
    NoPackages(PathBuf),
    /// A phase of a run's publication found nothing to copy.
    #[error("No {what} found at {prefix}")]
    NothingToPublish {
        /// What was looked for (`tarballs`, `python packages`, `deb`, `rpm`).
        what: &'static str,
        /// The source prefix.
        prefix: String,
    },
    /// A progress line could not be written.
    #[error("Failed to write the progress lines")]
    Output(#[source] std::io::Error),
    /// The run's output root could not be resolved.
    #[error(transparent)]
    RunRoot(#[from] github_actions::RunRootError),
    /// A dry-run line could not be written to stdout.
    #[error("Failed to write to stdout")]
    Stdout(#[source] std::io::Error),
    /// The step outputs could not be set.
    #[error(transparent)]
    Outputs(#[from] github_actions::ReportError),
    /// The source directory could not be listed.
    #[error(transparent)]
    Read(#[from] FileError),
    /// A file name that is no wheel or sdist name.
    #[error(transparent)]
    Name(#[from] NameError),
    /// Two sources map to the same destination.
    #[error("`{first}` and `{second}` would both be published as `{destination}`")]
    Collision {
        /// The destination URI.
        destination: String,
        /// The first source.
        first: String,
        /// The second source.
        second: String,
    },
    /// The destination already holds other content than the source.
    #[error(
        "`{destination}` already holds other content ({existing}) than `{source_file}` (sha256 {sha256}); not replaced"
    )]
    Conflict {
        /// The destination URI.
        destination: String,
        /// The local file.
        source_file: String,
        /// The SHA-256 of the local file.
        sha256: String,
        /// What the destination holds (`sha256 …`, or that no digest is recorded).
        existing: String,
    },
    /// The object written is not what was uploaded.
    #[error(
        "`{destination}` does not hold what was uploaded from `{source_file}`: expected {expected}, found {found}"
    )]
    Verify {
        /// The destination URI.
        destination: String,
        /// The local file.
        source_file: String,
        /// Size and digest expected.
        expected: String,
        /// Size and digest found (or `nothing`).
        found: String,
    },
    /// An S3 request failed.
    #[error(transparent)]
    Storage(#[from] storage_backend::Error),
    /// A dry run could not list the run's sources: the plan needs read access to the
    /// artifacts bucket (with credentials, or anonymously where the bucket is public).
    #[error("The dry run lists the run's sources in {bucket}, which needs read access to it")]
    DryRunListing {
        /// The artifacts bucket.
        bucket: String,
        /// The listing's failure.
        #[source]
        source: storage_backend::Error,
    },
    /// Some files of a batch failed; every file was attempted.
    #[error("{}", Failures(.failures, *.total))]
    Failed {
        /// Files in the batch.
        total: usize,
        /// Each failed destination and its error.
        failures: Vec<(String, Error)>,
    },
}

/// The text of [`Error::Failed`]: a count, then one line per failure.
struct Failures<'a>(&'a [(String, Error)], usize);

impl fmt::Display for Failures<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Failed to publish {}/{} files:", self.0.len(), self.1)?;
        for (destination, err) in self.0 {
            write!(
                f,
                "\n  {destination}: {}",
                storage_backend::chain(err as &dyn std::error::Error)
            )?;
        }
        Ok(())
    }
}

impl Error {
    /// Whether the caller's input is at fault before anything was attempted (exit 2): a
    /// release type without product buckets, a run id or endpoint setting that is no valid
    /// value.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Layout(_) => true,
            Error::RunRoot(e) => e.is_usage(),
            Error::Storage(e) => e.is_usage(),
            _ => false,
        }
    }
}
