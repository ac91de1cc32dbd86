//! TheRock's `BUILD_TOPOLOGY.toml`: build stages, artifact groups and artifacts, and the
//! artifacts each stage produces and needs from earlier stages.
//!
//! A stage builds artifact groups; a group owns artifacts. A stage's
//! [produced](BuildTopology::produced_artifacts) artifacts are those of its groups; its
//! [inbound](BuildTopology::inbound_artifacts) artifacts are what it must fetch first: the
//! artifacts of its groups' direct group dependencies and its artifacts' dependencies, each
//! with its transitive artifact dependencies, minus what it produces. Tables keep file order.
//! The only I/O is reading files: the topology in [`BuildTopology::load`], and a checkout's
//! topology and GPU family table ([`FamilyMap`]) found by [`Checkout`].
//!
//! On top of the topology sit the stage rules of the artifact tools: the requested target
//! families ([`Targets`]), the exclusion lists ([`parse_excluded_components`],
//! [`parse_excluded_artifacts`]), which archives a transfer takes ([`choose_files`]), and the
//! stage descriptions ([`write_stage_info`], [`write_stage_list`]).
//!
//! ```
//! use rock_ci_build_topology::BuildTopology;
//!
//! let topology: BuildTopology = r#"
//!     [build_stages.compiler]
//!     artifact_groups = ["toolchain"]
//!     [build_stages.libraries]
//!     type = "per-arch"
//!     artifact_groups = ["math"]
//!
//!     [artifact_groups.toolchain]
//!     [artifact_groups.math]
//!     artifact_group_deps = ["toolchain"]
//!
//!     [artifacts.llvm]
//!     artifact_group = "toolchain"
//!     [artifacts.hip]
//!     artifact_group = "toolchain"
//!     artifact_deps = ["llvm"]
//!     [artifacts.blas]
//!     artifact_group = "math"
//!     type = "target-specific"
//!     artifact_deps = ["hip"]
//! "#
//! .parse()?;
//!
//! assert_eq!(topology.stage("libraries")?.build_type.as_str(), "per-arch");
//! assert_eq!(Vec::from_iter(topology.produced_artifacts("libraries")?), ["blas"]);
//! assert_eq!(Vec::from_iter(topology.inbound_artifacts("libraries")?), ["hip", "llvm"]);
//! assert!(topology.inbound_artifacts("compiler")?.is_empty());
//! assert_eq!(
//!     topology.stage("docs").unwrap_err().to_string(),
//!     "Build stage `docs` not found (available stages: compiler, libraries)"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};

mod checkout;
mod describe;
mod families;
mod model;
mod selection;
mod topology;
mod validate;

pub use checkout::{AMDGPU_TARGETS_CMAKE, Checkout, CheckoutError};
pub use describe::{unknown_stage, write_stage_info, write_stage_list};
pub use families::{FamilyMap, UnknownFamilies};
pub use selection::{
    ARTIFACT_COMPONENTS, Targets, choose_files, parse_excluded_artifacts,
    parse_excluded_components, parse_targets, split_list, uncovered,
};

pub use model::{
    Artifact, ArtifactGroup, ArtifactType, BuildStage, BuildType, ExternalGitSource, SourceSet,
};
pub use topology::{ALL_STAGES, BuildTopology, TOPOLOGY_FILE_NAME};
pub use validate::{EntryKind, PLATFORMS, PROCESSORS, Problem};

/// Errors of loading and querying a topology.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The topology file does not exist.
    #[error("`BUILD_TOPOLOGY.toml` not found at `{}`", .0.display())]
    NotFound(PathBuf),
    /// The topology file exists but could not be read.
    #[error("Failed to read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The text is not TOML, or a key has the wrong type or an unknown value.
    #[error("Invalid TOML{}{}: {message}", in_file(path.as_deref()), at(position.as_ref()))]
    Toml {
        /// The file, when the text came from one.
        path: Option<PathBuf>,
        /// Where the parser stopped, when it says.
        position: Option<Position>,
        /// What is wrong.
        message: String,
    },
    /// A stage name that the topology does not define.
    #[error("Build stage `{name}` not found (available stages: {})", known.join(", "))]
    UnknownStage {
        /// The requested name.
        name: String,
        /// The defined stage names, in file order.
        known: Vec<String>,
    },
    /// [`BuildTopology::validate`] found inconsistencies.
    #[error("Invalid build topology: {}", problem_list(.0))]
    Invalid(Vec<Problem>),
}

/// A 1-based line and column (in characters) in the topology text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1, counted in characters.
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` of `text` (clamped to the text, and to a character
    /// boundary before it).
    pub fn at(text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

fn in_file(path: Option<&Path>) -> String {
    path.map(|p| format!(" in `{}`", p.display()))
        .unwrap_or_default()
}

fn at(position: Option<&Position>) -> String {
    position.map(|p| format!(" at {p}")).unwrap_or_default()
}

fn problem_list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests;

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
