//! Which workflow run holds the artifacts of some artifact groups: runs from the GitHub API,
//! their archives from one S3 listing per run.
//!
//! - [`Finder`]: the search for a commit ([`Finder::for_commit`]), one run
//!   ([`Finder::for_run`]), or the newest commit of a ref or a branch where every group
//!   exists ([`Finder::latest`]). The GitHub client blocks (its requests and its waits for
//!   rate limits), so every call to it runs on the blocking pool, never on an async thread.
//! - [`select_group`]: which archives of a run belong to a group (generic archives, the
//!   group's family and its targets, case-insensitively by base architecture).
//! - [`ArtifactRunInfo`]: the result records.
//! - [`tool`]: how the `find_*` command-line tools print them (text blocks or a JSON document,
//!   or the line saying nothing matched: [`Query::not_found`], [`LatestSource::not_found`]).
//!
//! ```
//! use rock_ci_run_finder::select_group;
//!
//! let files = ["base_lib_generic.tar.zst".to_owned(), "blas_lib_gfx942.tar.zst".to_owned()];
//! let family = ["gfx942".to_owned()];
//! let found = select_group(&files, "gfx94X-dcgpu", &family, &[], &[]);
//! assert!(found.is_present());
//! assert_eq!(found.artifact_filenames, files);
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

mod error;
mod finder;
mod groups;
mod report;

pub use build_topology::AMDGPU_TARGETS_CMAKE;
pub use error::FinderError;
pub use finder::{Finder, LatestSource, Query};
pub use groups::{GroupMatch, select_group};
pub use report::ArtifactRunInfo;

/// The output of the `find_*` command-line tools, in the formats of TheRock's scripts: for
/// tools that print what those print, not the way to read a search's results (which are
/// [`ArtifactRunInfo`] records).
pub mod tool {
    pub use crate::report::{print_outcome, write_results};
}

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
