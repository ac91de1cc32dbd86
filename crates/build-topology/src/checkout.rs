//! Where a TheRock checkout keeps the two tables the artifact tools read: the topology
//! (`BUILD_TOPOLOGY.toml`) and the GPU family table (`cmake/therock_amdgpu_targets.cmake`).

use std::io;
use std::path::{Path, PathBuf};

use crate::{BuildTopology, Error, FamilyMap, TOPOLOGY_FILE_NAME};

/// The GPU family table of a TheRock checkout, relative to its root.
pub const AMDGPU_TARGETS_CMAKE: &str = "cmake/therock_amdgpu_targets.cmake";

/// Why a checkout's topology or family table could not be found or read, or a request made
/// of them is not valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckoutError {
    /// The working directory cannot be read.
    #[error("Cannot read the working directory")]
    CurrentDir(#[source] io::Error),
    /// No checkout was given and none holds the working directory.
    #[error(
        "No {TOPOLOGY_FILE_NAME} in {} or its parents: pass --topology FILE or --therock-dir DIR (a TheRock checkout)",
        .0.display()
    )]
    NoCheckout(PathBuf),
    /// The checkout has no family table.
    #[error("AMDGPU targets cmake file not found: {}", .0.display())]
    NoFamilyTable(PathBuf),
    /// The family table exists but cannot be read.
    #[error(transparent)]
    ReadFamilyTable(io::Error),
    /// The topology could not be loaded or does not have what was asked.
    #[error(transparent)]
    Topology(#[from] Error),
    /// Artifact components that do not exist.
    #[error(
        "Invalid artifact component(s): {}. Valid components are: {}",
        unknown.join(", "),
        crate::ARTIFACT_COMPONENTS.join(", ")
    )]
    InvalidComponents {
        /// The unknown components, sorted.
        unknown: Vec<String>,
    },
    /// Artifact names that the topology does not define.
    #[error(
        "Invalid artifact name(s): {}. Valid artifacts are: {}",
        unknown.join(", "),
        valid.join(", ")
    )]
    InvalidArtifacts {
        /// The unknown names, sorted.
        unknown: Vec<String>,
        /// The topology's artifact names, sorted.
        valid: Vec<String>,
    },
    /// A stage the topology does not define; the `ERROR:` lines naming it and the available
    /// stages are already written.
    #[error("Stage '{0}' not found")]
    StageNotFound(String),
    /// A line could not be written.
    #[error("Failed to write the output")]
    Write(#[source] io::Error),
}

impl CheckoutError {
    /// Whether the explanation is already written to the output (the `ERROR:` lines), so that
    /// nothing more is to be said.
    pub fn is_reported(&self) -> bool {
        matches!(self, Self::StageNotFound(_))
    }
}

/// Where the topology and the GPU family table come from.
#[derive(Debug, Clone, Default)]
pub struct Checkout {
    /// An explicit topology file (`--topology`).
    pub topology: Option<PathBuf>,
    /// A TheRock checkout (`--therock-dir`, `THEROCK_DIR`).
    pub therock_dir: Option<PathBuf>,
}

impl Checkout {
    /// The topology file: [`Checkout::topology`], else `{therock_dir}/BUILD_TOPOLOGY.toml`,
    /// else the first `BUILD_TOPOLOGY.toml` in the working directory or one of its parents.
    pub fn topology_path(&self) -> Result<PathBuf, CheckoutError> {
        if let Some(path) = &self.topology {
            return Ok(path.clone());
        }
        if let Some(dir) = &self.therock_dir {
            return Ok(dir.join(TOPOLOGY_FILE_NAME));
        }
        let cwd = std::env::current_dir().map_err(CheckoutError::CurrentDir)?;
        cwd.ancestors()
            .map(|d| d.join(TOPOLOGY_FILE_NAME))
            .find(|p| p.is_file())
            .ok_or(CheckoutError::NoCheckout(cwd))
    }

    /// Loads the topology; its problems (unknown dependencies, ...) are logged as warnings.
    pub fn load_topology(&self) -> Result<BuildTopology, CheckoutError> {
        let path = self.topology_path()?;
        let topology = BuildTopology::load(&path)?;
        for problem in topology.problems() {
            tracing::warn!("{}: {problem}", path.display());
        }
        Ok(topology)
    }

    /// The GPU family table: `{therock_dir}/cmake/therock_amdgpu_targets.cmake`, else beside
    /// the topology file. It must exist.
    pub fn family_table_path(&self) -> Result<PathBuf, CheckoutError> {
        let root = match &self.therock_dir {
            Some(dir) => dir.clone(),
            None => self
                .topology_path()?
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        };
        // Component by component: on Windows the path then has one kind of separator.
        let path = AMDGPU_TARGETS_CMAKE.split('/').fold(root, |p, c| p.join(c));
        if !path.is_file() {
            return Err(CheckoutError::NoFamilyTable(path));
        }
        Ok(path)
    }

    /// The GPU family table read from [`Checkout::family_table_path`].
    pub fn family_map(&self) -> Result<FamilyMap, CheckoutError> {
        let path = self.family_table_path()?;
        let text = fs_err::read_to_string(&path).map_err(CheckoutError::ReadFamilyTable)?;
        Ok(FamilyMap::parse(&text))
    }
}
