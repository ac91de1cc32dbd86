use std::io;
use std::path::PathBuf;

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
    FamilyTable(#[source] FamilyTableError),
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

/// Why the GPU family table (`cmake/therock_amdgpu_targets.cmake`) could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FamilyTableError {
    /// The working directory cannot be read.
    #[error("Cannot read the working directory")]
    CurrentDir(#[source] io::Error),
    /// No checkout was given and none holds the working directory.
    #[error(
        "No {} in {} or its parents: pass --topology FILE or --therock-dir DIR (a TheRock checkout)",
        build_topology::TOPOLOGY_FILE_NAME,
        .0.display()
    )]
    NoCheckout(PathBuf),
    /// The checkout has no family table.
    #[error("AMDGPU targets cmake file not found: {}", .0.display())]
    NotFound(PathBuf),
    /// The family table exists but cannot be read.
    #[error(transparent)]
    Read(io::Error),
}
