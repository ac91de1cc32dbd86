//! The errors of the upload jobs and of the values that become S3 keys.

use std::io;
use std::path::PathBuf;

use file_tree::FileError;
use workflow_outputs::Platform;

/// Why an upload job failed. Each names the file, directory or destination at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A storage operation failed (connecting, uploading, the preflight).
    #[error(transparent)]
    Storage(#[from] storage_backend::Error),
    /// A local read or write failed.
    #[error(transparent)]
    File(#[from] FileError),
    /// A directory the caller named is not there.
    #[error(transparent)]
    Dir(#[from] file_tree::DirNotFound),
    /// The bucket or output root of the run could not be decided.
    #[error(transparent)]
    RunRoot(#[from] github_actions::RunRootError),
    /// The repository, release type or run id of the run is not valid.
    #[error(transparent)]
    Outputs(#[from] workflow_outputs::Error),
    /// The current run's event payload could not be read.
    #[error("Cannot tell whether this run is a pull request from a fork")]
    Event(#[source] github_actions::EventError),
    /// The job summary or a step output could not be written.
    #[error(transparent)]
    StepFile(#[from] github_actions::WriteError),
    /// A log archive could not be written.
    #[error(transparent)]
    Archive(#[from] artifacts::Error),
    /// A package repository could not be prepared or published.
    #[error(transparent)]
    Repo(#[from] package_index::Error),
    /// The job's output lines could not be written.
    #[error(transparent)]
    Output(#[from] io::Error),
    /// Writing the ninja or ccache log archive failed (`what` is `ninja` or `ccache`).
    #[error("Failed to archive the {what} logs")]
    LogArchive {
        /// `ninja` or `ccache`.
        what: &'static str,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// The build directory of a build job is not there.
    #[error(
        "Build directory `{}` not found. Skipping upload! This can be due to the CI job being cancelled before the build was started.",
        .0.display()
    )]
    NoBuildDir(PathBuf),
    /// An upload was asked for without a run id.
    #[error("when --upload is true, --run-id must also be set")]
    NoRunId,
    /// A preflight was asked for without an upload.
    #[error("--preflight needs --upload and --run-id")]
    PreflightWithoutUpload,
    /// The logs of a directory could not all be uploaded.
    #[error("Failed to upload the logs in `{}`", logs.display())]
    Logs {
        /// The log directory.
        logs: PathBuf,
        /// Why.
        #[source]
        source: storage_backend::Error,
    },
    /// A flattened copy of a build profile summary could not be uploaded.
    #[error("Failed to upload `{}` (flattened)", .path.display())]
    Flattened {
        /// The summary file.
        path: PathBuf,
        /// Why.
        #[source]
        source: storage_backend::Error,
    },
    /// The build has no manifest.
    #[error("therock_manifest.json not found at `{}`", .0.display())]
    NoManifest(PathBuf),
    /// The manifest could not be uploaded.
    #[error("Failed to upload the manifest `{}`", .path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// Why.
        #[source]
        source: storage_backend::Error,
    },
    /// The tarballs directory could not be listed.
    #[error("Failed to list `{}`", .dir.display())]
    List {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The tarballs directory holds no tarball at its top.
    #[error("No .tar.gz files found in `{}`", .0.display())]
    NoTarballs(PathBuf),
    /// No top-level tarball is the multi-arch one.
    #[error(
        "No multiarch tarball in `{}`: none is named `therock-dist-{platform}-multiarch-*.tar.gz` (without `-tests-`); nothing was uploaded",
        .dir.display()
    )]
    NoMultiarchTarball {
        /// The tarballs directory.
        dir: PathBuf,
        /// The platform of the tarball looked for.
        platform: Platform,
    },
    /// A `.sha256sum` file holds no digest.
    #[error("`{}` holds no SHA-256 digest", .0.display())]
    NoDigest(PathBuf),
    /// A tarball's digest differs from its `.sha256sum` file's.
    #[error(
        "`{}` does not match its sidecar `{}`: the file has {actual}, the sidecar says {expected}",
        .tarball.display(),
        .sidecar.display()
    )]
    SidecarMismatch {
        /// The tarball.
        tarball: PathBuf,
        /// Its `.sha256sum` file.
        sidecar: PathBuf,
        /// The tarball's digest.
        actual: String,
        /// The digest in the sidecar.
        expected: String,
    },
    /// The tarballs could not all be uploaded (no sidecar was).
    #[error("Failed to upload the tarballs; no sidecar was uploaded")]
    Tarballs(#[source] storage_backend::Error),
    /// The `.sha256sum` sidecars could not all be uploaded.
    #[error("Failed to upload the .sha256sum sidecars")]
    Sidecars(#[source] storage_backend::Error),
    /// The report path is not a directory.
    #[error("--report-path `{}` is not a directory; nothing was uploaded", .0.display())]
    ReportPathNotDir(PathBuf),
    /// Something that is no index page of this tool has the index page's name.
    #[error(
        "`{}` exists and is not an index page written by this tool; give another --index-file-name",
        .0.display()
    )]
    NotAnIndexPage(PathBuf),
    /// The reports could not all be uploaded (the index page was not).
    #[error("Failed to upload the reports; the index was not uploaded")]
    Reports(#[source] storage_backend::Error),
    /// The index page could not be uploaded.
    #[error("Failed to upload the index page")]
    IndexPage(#[source] storage_backend::Error),
    /// Several steps failed; each is listed on its own line with its causes.
    #[error("{}", .0.iter().map(|e| full(e)).collect::<Vec<_>>().join("\n"))]
    Several(Vec<Error>),
}

impl Error {
    /// Whether what the caller gave is wrong and nothing was attempted (a malformed endpoint
    /// URL or run id): a usage error.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Storage(e) => e.is_usage(),
            Self::RunRoot(e) => e.is_usage(),
            _ => false,
        }
    }

    /// Whether the job stopped because its output went to a closed pipe (`| head`), which
    /// is not a failure.
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            Self::Output(e) => e.kind() == io::ErrorKind::BrokenPipe,
            Self::Several(errors) => errors.iter().any(Self::is_broken_pipe),
            _ => false,
        }
    }
}

/// `err` and each of its causes, joined with `: ` (how the tools print an error).
pub fn full(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `Ok` without failures, the failure itself when there is one, else [`Error::Several`]
/// listing each.
///
/// # Errors
/// The failures, as said.
pub fn combine(mut failures: Vec<Error>) -> Result<(), Error> {
    if failures.len() <= 1 {
        return failures.pop().map_or(Ok(()), Err);
    }
    Err(Error::Several(failures))
}

/// A value that becomes part of an S3 key (a stage, family, folder or file name) cannot be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// `.` or `..`.
    #[error("{what} `{value}` is not a name")]
    NotAName {
        /// The flag or what the value is.
        what: String,
        /// The value.
        value: String,
    },
    /// A `/`, `\`, whitespace or control character.
    #[error(
        "{what} `{}` contains `{}`, which cannot be part of an S3 key component",
        .value.escape_debug(),
        .found.escape_debug()
    )]
    BadCharacter {
        /// The flag or what the value is.
        what: String,
        /// The value.
        value: String,
        /// The first character that cannot be.
        found: char,
    },
    /// An empty multi-arch stage name.
    #[error("the stage name is empty")]
    NoStage,
    /// A single-arch upload without an artifact group.
    #[error("--artifact-group is required for single-arch builds")]
    NoArtifactGroup,
    /// Nothing at all.
    #[error("{what} is empty")]
    Empty {
        /// The flag.
        what: String,
    },
    /// A path with an empty component (`a//b`, `a/`).
    #[error("{what} `{}` has an empty path component", .value.escape_debug())]
    EmptyComponent {
        /// The flag.
        what: String,
        /// The value.
        value: String,
    },
    /// An index page name that would not be served as HTML.
    #[error(
        "--index-file-name `{value}` would be served as {content_type}, not text/html: give a name ending in `.html`"
    )]
    NotHtml {
        /// The name.
        value: String,
        /// The content type its suffix gives.
        content_type: String,
    },
    /// A destination that is the run's root itself.
    #[error("--log-destination `{0}` names the run's root; give a folder below it")]
    RunRoot(String),
}

#[cfg(test)]
mod tests;
