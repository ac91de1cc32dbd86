//! The errors of reading packages and publishing their indexes: each names the file or key
//! at fault and chains its cause once.

use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;

use file_tree::FileError;

use crate::deb::DebError;
use crate::repo::PUBLISH_ATTEMPTS;
use crate::rpm::RpmError;
use crate::wheel::WheelError;

/// What went wrong while reading packages or publishing an index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Writing the progress lines failed.
    #[error("Failed to write the output")]
    Output(#[source] io::Error),
    /// The step outputs could not be set.
    #[error(transparent)]
    Outputs(#[from] github_actions::ReportError),
    /// The job summary could not be written.
    #[error(transparent)]
    Summary(#[from] github_actions::WriteError),
    /// A local file operation failed (the error names the file).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Reading or writing a local file failed.
    #[error(transparent)]
    File(#[from] FileError),
    /// A key that cannot be mapped into the staging directory.
    #[error(transparent)]
    Key(#[from] storage_location::UnsafeKeyError),
    /// A storage operation failed.
    #[error(transparent)]
    Storage(#[from] storage_backend::Error),
    /// A `.deb` or an APT index cannot be read.
    #[error(transparent)]
    Deb(#[from] DebError),
    /// RPM metadata cannot be read, or its tools failed.
    #[error(transparent)]
    Rpm(#[from] RpmError),
    /// The cause, in the file or object `uri`.
    #[error("`{uri}`")]
    In {
        /// The file or object.
        uri: String,
        /// What is wrong in it.
        #[source]
        source: Box<Error>,
    },
    /// Reading an object failed.
    #[error("Failed to read `{uri}`")]
    Read {
        /// The object.
        uri: String,
        /// The cause.
        #[source]
        source: storage_backend::Error,
    },
    /// Writing an object failed.
    #[error("Failed to write `{uri}`")]
    Write {
        /// The object.
        uri: String,
        /// The cause.
        #[source]
        source: storage_backend::Error,
    },
    /// Listing a local directory failed.
    #[error("Failed to list `{}`", dir.display())]
    List {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The top index lists an object that is not there.
    #[error("`{by}` lists `{uri}`, which is missing")]
    MissingListed {
        /// The top index.
        by: String,
        /// The missing object.
        uri: String,
    },
    /// An index object is not text.
    #[error("`{uri}` is not UTF-8 text (byte {valid_up_to})")]
    NotUtf8 {
        /// The object.
        uri: String,
        /// The length of its UTF-8 start.
        valid_up_to: usize,
    },
    /// An APT index file differs from what `Release` lists for it.
    #[error(
        "`{uri}` does not match the SHA256 and size `{release}` lists for it (another publisher may be writing the repository; run again)"
    )]
    IndexMismatch {
        /// The index file.
        uri: String,
        /// The `Release` object.
        release: String,
    },
    /// A by-hash APT index file differs from its name.
    #[error("`{uri}` does not match the SHA256 `{release}` lists for it")]
    ByHashMismatch {
        /// The by-hash file.
        uri: String,
        /// The `Release` object.
        release: String,
    },
    /// An RPM metadata file differs from what `repomd.xml` lists for it.
    #[error(
        "`{uri}` does not match the checksum `{repomd}` lists for it (another publisher may be writing the repository; run again)"
    )]
    MetadataMismatch {
        /// The metadata file.
        uri: String,
        /// The `repomd.xml` object.
        repomd: String,
    },
    /// The published index cannot be read: it is left as it is.
    #[error("The published index cannot be read; it was left as it is")]
    UnreadableIndex(#[source] Box<Error>),
    /// The package directory holds no package of the repository's kind.
    #[error("No `{suffix}` package to publish in `{}`{place}; nothing was uploaded", dir.display())]
    NoPackages {
        /// The package directory.
        dir: PathBuf,
        /// `.deb` or `.rpm`.
        suffix: &'static str,
        /// Where in it they were looked for, when not only at its top.
        place: &'static str,
    },
    /// Some packages cannot be indexed: nothing was uploaded.
    #[error(
        "{} of the {total} packages cannot be read; nothing was uploaded:{}",
        failures.len(),
        lines(failures.iter().map(|(p, why)| format!("`{}`: {why}", p.display())))
    )]
    UnreadablePackages {
        /// How many packages were read.
        total: usize,
        /// Each package that cannot be read, and why.
        failures: Vec<(PathBuf, String)>,
    },
    /// A package repository is published to S3 only.
    #[error("upload_package_repo publishes to S3 only")]
    NotS3,
    /// Some packages failed to upload: the index was not changed.
    #[error(
        "Failed to upload the packages; the published index was not changed:{}",
        lines(failures.iter().map(|(uri, e)| format!("`{uri}`: {}", storage_backend::chain(e))))
    )]
    PackagesNotUploaded {
        /// Each failed upload: the object and the cause.
        failures: Vec<(String, storage_backend::Error)>,
    },
    /// The other files of the package directory failed to upload.
    #[error(
        "Failed to upload the other files of the package directory; the published index was not changed"
    )]
    OthersNotUploaded(#[source] storage_backend::Error),
    /// A content-addressed index file could not be written.
    #[error("The top index was not changed")]
    TopNotChanged(#[source] storage_backend::Error),
    /// `Release` is written, a plain copy of `Packages` is not.
    #[error(
        "`Release` is published; the plain `{name}` was not updated (clients fetching by hash are not affected; the next run updates it)"
    )]
    PlainNotUpdated {
        /// `Packages` or `Packages.gz`.
        name: &'static str,
        /// The cause.
        #[source]
        source: storage_backend::Error,
    },
    /// The top index changed under every read of it.
    #[error(
        "`{uri}` was replaced {PUBLISH_ATTEMPTS} times while this run read it; nothing was uploaded: run again"
    )]
    KeptChanging {
        /// The top index.
        uri: String,
    },
    /// Every attempt at writing the top index lost to other publishers.
    #[error(
        "`{uri}` was replaced by other publishers {PUBLISH_ATTEMPTS} times while this run merged into it; the packages are uploaded but not listed: run again"
    )]
    GaveUp {
        /// The top index.
        uri: String,
    },
    /// A package of this run was replaced before the index listing it was written.
    #[error(
        "`{uri}` is no longer the file this run uploaded (another publisher replaced it meanwhile); the published index was not changed: run again"
    )]
    Replaced {
        /// The package object.
        uri: String,
    },
    /// The dist directory holds no wheel or sdist.
    #[error("No package files found in `{}`", dir.display())]
    NoPythonPackages {
        /// The dist directory.
        dir: PathBuf,
    },
    /// Some wheels are not valid: nothing was uploaded.
    #[error(
        "Not a valid wheel, nothing was uploaded:{}",
        lines(failures.iter().map(|(p, e)| format!("`{}`: {}", p.display(), full(e))))
    )]
    InvalidWheels {
        /// Each bad wheel (its path below the dist directory) and what is wrong with it.
        failures: Vec<(PathBuf, WheelError)>,
    },
    /// The Python packages failed to upload: no page was written.
    #[error("Failed to upload the packages; no index was uploaded")]
    PythonPackagesNotUploaded(#[source] storage_backend::Error),
    /// The pages of a location could not be listed.
    #[error("Failed to list the pages in `{uri}`")]
    ListPages {
        /// The location.
        uri: String,
        /// The cause.
        #[source]
        source: storage_backend::Error,
    },
    /// The packages already in a location could not be listed.
    #[error("Failed to list the packages already in `{uri}`")]
    ListPackages {
        /// The location.
        uri: String,
        /// The cause.
        #[source]
        source: storage_backend::Error,
    },
    /// A page below `index.html` could not be written.
    #[error("Failed to write `{uri}`; `{index}` was not changed")]
    PageNotWritten {
        /// The page.
        uri: String,
        /// The `index.html` left unchanged.
        index: String,
        /// The cause.
        #[source]
        source: Box<storage_backend::Error>,
    },
    /// `index.html` kept changing while the pages were written.
    #[error(
        "`{uri}` kept changing while this run published into it ({attempts} attempts); the packages are uploaded but may not be listed: run again"
    )]
    PagesKeptChanging {
        /// The `index.html`.
        uri: String,
        /// The attempts made.
        attempts: usize,
    },
}

impl Error {
    /// Whether the caller's request itself is wrong. None of these is: the flags are checked
    /// before any of this runs, and what a package directory holds is data, not usage (a
    /// failed run, exit 1).
    pub fn is_usage(&self) -> bool {
        false
    }

    /// Whether an S3 conditional request found the object changed (another publisher
    /// replaced it): the caller reads again.
    pub fn is_conflict(&self) -> bool {
        match self {
            Error::Storage(e) | Error::Read { source: e, .. } | Error::Write { source: e, .. } => {
                e.is_conflict()
            }
            Error::In { source, .. } | Error::UnreadableIndex(source) => source.is_conflict(),
            _ => false,
        }
    }

    /// `source` in the file or object `uri`.
    pub(crate) fn within(uri: impl Into<String>, source: impl Into<Error>) -> Self {
        Error::In {
            uri: uri.into(),
            source: Box::new(source.into()),
        }
    }

    /// A failed read of the object `uri`.
    pub(crate) fn read(uri: impl Into<String>) -> impl FnOnce(storage_backend::Error) -> Self {
        let uri = uri.into();
        move |source| Error::Read { uri, source }
    }
}

/// Each item on a line of its own, indented by two spaces.
fn lines(items: impl Iterator<Item = String>) -> String {
    let mut out = String::new();
    for item in items {
        let _ = write!(out, "\n  {item}");
    }
    out
}

/// `err` and each of its causes, joined by `: `.
pub(crate) fn full(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

/// Writes a line to a progress writer, failing as [`Error::Output`].
macro_rules! say {
    ($out:expr) => {
        writeln!($out).map_err($crate::Error::Output)
    };
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, $($arg)*).map_err($crate::Error::Output)
    };
}
pub(crate) use say;
