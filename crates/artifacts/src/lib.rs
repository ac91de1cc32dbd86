//! Build artifacts as files: names, target matching and archives.
//!
//! An artifact is named `{name}_{component}_{target_family}` ([`ArtifactName`]) and ships as a
//! `.tar.zst` or `.tar.xz` archive whose first member is `artifact_manifest.txt`.
//! [`TargetSelection`] decides which artifacts a fetch for some GPU targets needs.
//!
//! ```
//! use rock_ci_artifacts::{ArchiveFormat, ArtifactName, TargetSelection};
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

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

use std::path::PathBuf;

mod archive;
mod extract;
mod flat_tar;
mod frames;
mod gzip;
mod logs;
pub mod member_index;
mod name;
mod pack;
mod targets;
#[cfg(not(unix))]
mod windows_links;
#[cfg(any(test, not(unix)))]
mod windows_names;

pub use archive::{
    ArchiveWriter, Compression, DEFAULT_XZ_PRESET, DEFAULT_ZSTD_LEVEL, Written, decoder,
    decoder_on, list_members, open_archive,
};
pub use extract::{
    Extracted, Layout, MANIFEST_NAME, SharedTree, UnsafeMember, extract_artifact,
    extract_artifact_shared, extract_tree,
};
pub use flat_tar::FlatTarWriter;
pub use frames::FRAME_SIZE;
pub use frames::read::FramedDecoder;
pub use gzip::{GZIP_BLOCK_SIZE, ParallelGzWriter};
pub use logs::{
    CCACHE_LOGS_ARCHIVE, CCACHE_LOGS_DIR, CCACHE_ZSTD_LEVEL, LogArchive, NINJA_LOG,
    NINJA_LOGS_ARCHIVE, archive_ccache_logs, archive_ninja_logs, find_ninja_logs,
};
pub use name::{ArchiveFormat, ArtifactName};
pub use pack::{Packed, archive_path_for, manifest_relpaths, pack_artifact_dir};
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
    /// A compression level out of the range of its compression.
    #[error("--compression-level {level}: {kind} {unit} are {min} to {max}")]
    CompressionLevel {
        /// The level given.
        level: i32,
        /// `zstd` or `xz`.
        kind: String,
        /// `levels` or `presets`.
        unit: &'static str,
        /// The lowest allowed.
        min: i32,
        /// The highest allowed.
        max: i32,
    },
    /// A local read or write failed.
    #[error(transparent)]
    File(#[from] file_tree::FileError),
    /// An archive member that extraction refused.
    #[error(transparent)]
    UnsafeMember(#[from] UnsafeMember),
    /// An archive whose stream could not be read (corrupt, or cut short): not a failure of
    /// the disk it is read from.
    #[error("Cannot read archive `{archive}`{}", in_member(.member.as_deref()))]
    ArchiveRead {
        /// The archive.
        archive: String,
        /// The member being read when it failed (its content, or the skip past it to the
        /// next header); `None` before the first member.
        member: Option<String>,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Two artifacts that put different things at the same path of a flattened tree.
    #[error("`{path}` is in both `{first}` and `{second}` with different content")]
    FlattenConflict {
        /// The path, relative to the flattened tree.
        path: String,
        /// The artifact that put it there first.
        first: String,
        /// The artifact that conflicts.
        second: String,
    },
}

impl Error {
    /// [`Error::ArchiveRead`] of `archive`, in `member` when one was being read.
    pub fn archive_read(archive: &str, member: Option<&str>, source: std::io::Error) -> Self {
        Error::ArchiveRead {
            archive: archive.to_owned(),
            member: member.map(str::to_owned),
            source,
        }
    }
}

/// The words naming `member` in an [`Error::ArchiveRead`] message (none without one).
fn in_member(member: Option<&str>) -> String {
    member.map_or_else(String::new, |m| format!(" in member `{m}`"))
}

#[cfg(test)]
mod extract_tests;
// Compared with GNU `tar -x` of the same archive, modes and inodes included: about Linux itself.
#[cfg(all(test, unix))]
mod pack_tests;
#[cfg(test)]
mod tests;

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
