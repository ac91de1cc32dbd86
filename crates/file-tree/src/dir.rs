//! A directory the caller names, made absolute.

use std::path::{Path, PathBuf};

/// A directory the caller named is not there (or is not a directory).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} not found: `{}`", dir.display())]
pub struct DirNotFound {
    /// What the directory is for the user (`Tarballs directory`, ...).
    pub what: String,
    /// The directory as given.
    pub dir: PathBuf,
}

/// `dir` made absolute, if it is a directory; else [`DirNotFound`], whose message is
/// ``{what} not found: `{dir}` ``.
///
/// # Errors
/// [`DirNotFound`] when `dir` does not exist, cannot be resolved or is not a directory.
pub fn existing_dir(dir: &Path, what: &str) -> Result<PathBuf, DirNotFound> {
    crate::resolved(dir)
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| DirNotFound {
            what: what.to_owned(),
            dir: dir.to_path_buf(),
        })
}

#[cfg(test)]
mod tests;
