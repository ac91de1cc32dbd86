use std::io;

/// Why the runs holding some artifact groups could not be found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinderError {
    /// `--amdgpu-target` values were given with more than one artifact group.
    #[error("Explicit AMDGPU targets may be used only with one artifact group")]
    TargetsNeedOneGroup,
    /// A `--require-artifact` pattern is not a regular expression.
    #[error("Invalid --require-artifact `{pattern}`")]
    InvalidPattern {
        /// The pattern given.
        pattern: String,
        /// What is wrong with it.
        #[source]
        source: regex::Error,
    },
    /// The GPU family table could not be read.
    #[error(
        "Cannot read the GPU family table: pass --therock-dir DIR (a TheRock checkout) or set THEROCK_DIR"
    )]
    FamilyTable(#[source] build_topology::CheckoutError),
    /// A GitHub API request failed.
    #[error(transparent)]
    Github(#[from] github_actions::ApiError),
    /// The bucket of a run could not be decided.
    #[error(transparent)]
    Bucket(#[from] github_actions::RunRootError),
    /// A run's output root is not valid.
    #[error(transparent)]
    Layout(#[from] workflow_outputs::Error),
    /// The S3 client could not be made.
    #[error(transparent)]
    Client(Box<storage_backend::Error>),
    /// The archives of a run could not be listed.
    #[error("Failed to list the artifacts of run {run_id} at `{uri}`")]
    List {
        /// The run.
        run_id: String,
        /// Where its archives were listed.
        uri: String,
        /// The cause.
        #[source]
        source: Box<artifact_backend::Error>,
    },
    /// The search progress could not be written.
    #[error("Failed to write the search progress")]
    Progress(#[source] io::Error),
}

impl FinderError {
    /// Whether the request itself is wrong (conflicting options, a bad pattern, a malformed
    /// URL setting or run id) and nothing was asked: a usage error.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::TargetsNeedOneGroup | Self::InvalidPattern { .. } => true,
            Self::Github(e) => e.is_usage(),
            Self::Bucket(e) => e.is_usage(),
            _ => false,
        }
    }
}
