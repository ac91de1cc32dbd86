//! The errors of an install.

use std::path::PathBuf;

/// An install failed. Every failure but [`Error::NoNightlyRelease`] (already reported, see
/// [`Error::is_reported`]) is to be shown with its chain of causes; an unknown family and some of a fetch's are usage errors ([`Error::is_usage`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `--release` is neither a nightly nor a dev version.
    #[error(
        "`{0}` is not a nightly or dev release version.\n\
         Please retrieve the correct release version from:\n\
         \t - https://rocm.nightlies.amd.com/tarball-multi-arch/ (nightly examples: 6.4.0rc20250416, 7.10.0a20251024)\n\
         \t - https://rocm.devreleases.amd.com/tarball-multi-arch/ (dev-tarball example: 6.4.0.dev0+8f6cdfc0d95845f4ca5a46de59d58894972a29a9)"
    )]
    NotARelease(String),
    /// The input directory does not exist.
    #[error("Input directory `{}` does not exist", .0.display())]
    MissingInputDir(PathBuf),
    /// The output directory is a symlink.
    #[error("The output directory `{}` is a symlink: pass the directory it points to", .0.display())]
    OutputIsSymlink(PathBuf),
    /// The output path is something other than a directory.
    #[error("The output directory `{}` exists and is not a directory", .0.display())]
    OutputNotADirectory(PathBuf),
    /// Replacing the output directory would surely be a mistake.
    #[error(
        "Refusing to replace `{}` (the file system root, the home directory, or the working directory or one above it): choose an output directory of its own",
        .0.display()
    )]
    RefusedOutput(PathBuf),
    /// The input and output directories overlap.
    #[error(
        "The input directory `{}` and the output directory `{}` contain one another",
        input.display(),
        output.display()
    )]
    Nested {
        /// The input directory, absolute.
        input: PathBuf,
        /// The output directory, absolute.
        output: PathBuf,
    },
    /// A path cannot be made absolute.
    #[error("Cannot make `{}` absolute", path.display())]
    Absolute {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The release tarball is not in its bucket.
    #[error("Release tarball `{0}` does not exist")]
    MissingTarball(String),
    /// The `.sha256sum` sidecar of the tarball holds no digest.
    #[error("Invalid sidecar `{0}`")]
    InvalidSidecar(String),
    /// The listing of the nightly tarballs failed.
    #[error("Failed to list {location}")]
    List {
        /// The bucket and prefix listed.
        location: String,
        /// Why.
        #[source]
        source: storage_backend::Error,
    },
    /// No nightly tarball of the group exists; the `ERROR:` lines naming the groups that do
    /// were written already.
    #[error("No nightly release found for '{0}'")]
    NoNightlyRelease(String),
    /// The download of the tarball failed.
    #[error("Failed to download `{location}`")]
    Download {
        /// The tarball.
        location: String,
        /// Why.
        #[source]
        source: storage_backend::Error,
    },
    /// The tarball could not be unpacked or did not match its digest.
    #[error("Failed to install `{location}`")]
    Install {
        /// The tarball.
        location: String,
        /// Why.
        #[source]
        source: UnpackError,
    },
    /// A request to the tarball bucket failed.
    #[error(transparent)]
    Storage(#[from] storage_backend::Error),
    /// A local file operation failed (staging, swapping, copying).
    #[error(transparent)]
    File(#[from] file_tree::FileError),
    /// Reading the file system or writing the output lines failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The artifact group is not a family of the GPU family table (nor a family followed by a
    /// build variant).
    #[error(
        "'{group}' is not a GPU family of therock_amdgpu_targets.cmake (nor a family followed by a build variant such as '-asan'); known families: {}; or pass --amdgpu-targets",
        known.join(", ")
    )]
    UnknownFamily {
        /// The artifact group given.
        group: String,
        /// The table's families, sorted.
        known: Vec<String>,
    },
    /// The fetch of a run's artifacts failed.
    #[error(transparent)]
    Fetch(#[from] artifact_backend::pipeline::TransferError),
}

impl Error {
    /// Whether the failure was reported already (as `ERROR:` lines on the output), so that
    /// only the exit status is left to give.
    pub fn is_reported(&self) -> bool {
        match self {
            Error::NoNightlyRelease(_) => true,
            Error::Fetch(e) => e.is_reported(),
            _ => false,
        }
    }

    /// Whether what the caller gave is wrong (exit 2): an unknown family, or a fetch that
    /// says so.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::UnknownFamily { .. } => true,
            Error::Fetch(e) => e.is_usage(),
            _ => false,
        }
    }
}

/// Why a streamed tarball could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnpackError {
    /// A member could not be extracted.
    #[error(transparent)]
    Extract(#[from] artifacts::Error),
    /// The compressed stream is damaged.
    #[error("`{asset}` is damaged")]
    Damaged {
        /// The tarball's name.
        asset: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The bytes read are not the object (length or digest).
    #[error(transparent)]
    Check(#[from] storage_backend::Error),
}
