//! Local file trees, shared by the crates that read or write them.
//!
//! - [`FileError`] is the one shape of a failed local read or write: it names the file and
//!   chains its cause once.
//! - [`fnmatch`] and [`PathGlob`] are the glob dialects of the tools (Python's `fnmatch`,
//!   pathlib's `rglob`, TheRock's `RecursiveGlobPattern`), one matcher behind them.
//! - [`walk()`], [`list`] and [`Walk`] walk a tree sorted, parents first, symlinks not followed
//!   unless asked, each [`Entry`] with its path relative to the root as components.
//! - [`index_page()`] renders an HTML index of files below a directory (names escaped, times
//!   in UTC), and [`is_index_page`] recognizes such a page later.
//! - [`symlink_replacing`] and [`hard_link_replacing`] put a link in place of whatever had its
//!   name, never leaving the name missing.
//! - [`existing_dir`] makes a directory the caller named absolute, or names it in
//!   [`DirNotFound`].
//! - [`native_path`] and [`resolved`] show paths as Windows programs (and Python's `pathlib`)
//!   show them there: native separators, no `\\?\` prefix; on Unix paths are unchanged.
//! - [`remove_tree`] removes a tree as its owner can, read-only directories included;
//!   [`remove_file`] and [`rename_replacing`] remove or replace a file, read-only on Windows
//!   included; [`set_modified`] sets the time of a read-only file too.
//! - [`StagedDir`] replaces a directory as a whole: the new tree is built beside it and swapped
//!   in once complete, the old one kept on any failure or kill; [`copy_tree`] copies a tree as
//!   `rsync -a` does.
//! - [`temp_file_in`] and [`temp_dir_in`] make the `.{name}.XXXXXX.partial` temporaries that
//!   are renamed into place, with the modes a plain create gives.
//!
//! ```
//! use rock_ci_file_tree::FileError;
//!
//! let err = FileError::read("/no/such/file", std::io::ErrorKind::NotFound.into());
//! assert_eq!(err.to_string(), "Failed to read `/no/such/file`");
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};

mod dir;
mod glob;
mod index_page;
mod link;
mod native;
mod remove;
mod staged;
mod temp;
mod walk;

pub use dir::{DirNotFound, existing_dir};
pub use glob::{PathGlob, cmp_components, fnmatch};
pub use index_page::{
    GENERATOR, IndexEntry, MARKER_WINDOW, escape_html, href, index_page, is_index_page,
    pretty_size, utc_date_stamp,
};
pub use link::{hard_link_replacing, symlink_replacing};
pub use native::{native_path, resolved, without_verbatim_prefix};
pub use remove::{remove_file, remove_tree, rename_replacing, set_modified};
pub use staged::{StagedDir, copy_tree};
pub use temp::{temp_dir_in, temp_file_in};
pub use walk::{Entry, Walk, list, select, walk};

/// What was being done to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileOp {
    /// Reading (opening, listing, reading contents or metadata).
    Read,
    /// Writing (creating, writing, syncing, renaming, removing).
    Write,
}

impl fmt::Display for FileOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileOp::Read => "read",
            FileOp::Write => "write",
        })
    }
}

/// A local read or write failed.
#[derive(Debug, thiserror::Error)]
#[error("Failed to {op} `{}`", path.display())]
pub struct FileError {
    /// Reading or writing.
    pub op: FileOp,
    /// The file or directory.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

impl FileError {
    /// Reading `path` failed.
    pub fn read(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Self {
            op: FileOp::Read,
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// Writing `path` failed.
    pub fn write(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Self {
            op: FileOp::Write,
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
}

#[cfg(test)]
mod tests;

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
