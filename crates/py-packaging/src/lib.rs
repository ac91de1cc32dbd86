//! ROCm Python packages from build artifacts (spec `python-packaging-and-elf.md`): the artifact
//! catalog and filters, the package model and names, the target-family views, the generated
//! `_dist_info.py` files.

pub mod catalog;
pub mod families;
pub mod names;
pub mod params;
pub mod pyrepr;

use std::path::PathBuf;

pub use catalog::{ArtifactCatalog, Entry, EntryKind};
pub use names::{Logical, Naming};
pub use params::Parameters;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: the message is the reference's where it has one.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
