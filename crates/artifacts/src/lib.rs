//! Build artifacts as files: names, target matching and archives.
//!
//! An artifact is named `{name}_{component}_{target_family}` ([`ArtifactName`]) and ships as a
//! `.tar.zst` or `.tar.xz` archive whose first member is `artifact_manifest.txt`.
//! [`TargetSelection`] decides which artifacts a fetch for some GPU targets needs.
//!
//! ```
//! use artifacts::{ArchiveFormat, ArtifactName, TargetSelection};
//!
//! let (name, format) = ArtifactName::from_filename_with_format("rccl_test_gfx942:xnack+.tar.zst")
//!     .ok_or("not an artifact")?;
//! assert_eq!((name.name(), name.component(), name.target_family()), ("rccl", "test", "gfx942:xnack+"));
//! assert_eq!(format, ArchiveFormat::TarZst);
//!
//! let selection = TargetSelection::new(Some("gfx94X-dcgpu"), ["gfx942"]);
//! assert!(selection.matches(&name)); // gfx942:xnack+ has base gfx942
//! assert!(selection.matches_target("generic"));
//! assert!(!selection.matches_target("gfx1100"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

mod archive;
mod extract;
mod name;
mod targets;

pub use archive::{
    ArchiveWriter, Compression, DEFAULT_XZ_PRESET, DEFAULT_ZSTD_LEVEL, decoder, list_members,
    open_archive,
};
pub use extract::{Extracted, Layout, MANIFEST_NAME, UnsafeMember, extract_artifact};
pub use name::{ArchiveFormat, ArtifactName};
pub use targets::{GENERIC_TARGET_FAMILY, TargetSelection, base_target};

/// Errors of artifact names and archives.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name that is not `{name}_{component}_{target_family}`.
    #[error(
        "`{0}` is not an artifact name: expected `{{name}}_{{component}}_{{target_family}}` with an optional `.tar.zst` or `.tar.xz` suffix"
    )]
    InvalidArtifactName(String),
    /// A path whose suffix is neither `.tar.zst` nor `.tar.xz`.
    #[error("Unknown archive format: `{}` (expected a `.tar.zst` or `.tar.xz` file)", .0.display())]
    UnknownArchiveFormat(PathBuf),
    /// A compression name other than `zstd` or `xz`.
    #[error("Unknown compression type: `{0}` (expected one of [xz, zstd])")]
    UnknownCompression(String),
    /// Reading failed.
    #[error("Failed to read `{}`", path.display())]
    Read {
        /// The file read.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An archive member that extraction refused.
    #[error(transparent)]
    UnsafeMember(#[from] UnsafeMember),
    /// Writing failed.
    #[error("Failed to write `{}`", path.display())]
    Write {
        /// The file written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    fn read(path: &Path, source: std::io::Error) -> Self {
        Error::Read {
            path: path.to_path_buf(),
            source,
        }
    }

    fn write(path: &Path, source: std::io::Error) -> Self {
        Error::Write {
            path: path.to_path_buf(),
            source,
        }
    }
}

#[cfg(test)]
mod extract_tests;
#[cfg(test)]
mod tests;
