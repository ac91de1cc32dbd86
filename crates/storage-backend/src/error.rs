use std::fmt;
use std::path::PathBuf;

#[cfg(feature = "s3")]
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};

/// What kind of S3 failure happened, as far as the caller needs to act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum S3ErrorKind {
    /// DNS or connection failure, or a timeout: the endpoint cannot be reached.
    Unreachable,
    /// Missing, wrong or insufficient credentials.
    Auth,
    /// The bucket does not exist.
    NoSuchBucket,
    /// The key does not exist.
    NotFound,
    /// The server is throttling or failing (retries were exhausted).
    Unavailable,
    /// The response was malformed or ended early.
    BadResponse,
    /// A conditional write found the object changed (created, replaced) by someone else.
    Conflict,
    /// The server's TLS certificate is not signed by an authority the client trusts.
    UntrustedCertificate,
    /// Anything else.
    Other,
}

impl S3ErrorKind {
    /// Whether asking again may succeed: the endpoint was unreachable, busy or failing, or
    /// its answer broke off.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            S3ErrorKind::Unreachable | S3ErrorKind::Unavailable | S3ErrorKind::BadResponse
        )
    }
}

impl fmt::Display for S3ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            S3ErrorKind::Unreachable => "endpoint unreachable",
            S3ErrorKind::Auth => "access denied or bad credentials",
            S3ErrorKind::NoSuchBucket => "no such bucket",
            S3ErrorKind::NotFound => "not found",
            S3ErrorKind::Unavailable => "service unavailable",
            S3ErrorKind::BadResponse => "malformed or incomplete response",
            S3ErrorKind::Conflict => "changed by someone else meanwhile",
            S3ErrorKind::UntrustedCertificate => {
                "the server's certificate is not trusted: point AWS_CA_BUNDLE or SSL_CERT_FILE \
                 at a PEM file with the authority that signed it"
            }
            S3ErrorKind::Other => "request failed",
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Errors of storage operations. Each names the file, key or bucket at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The source file of an upload does not exist.
    #[error("Source file `{}` not found", .0.display())]
    MissingSource(PathBuf),
    /// The source directory of an upload does not exist or is not a directory.
    #[error("Source directory `{}` not found", .0.display())]
    MissingSourceDir(PathBuf),
    /// A local read or write failed.
    #[error(transparent)]
    File(#[from] file_tree::FileError),
    /// A key that cannot be mapped into the staging directory.
    #[error(transparent)]
    UnsafeKey(#[from] storage_location::UnsafeKeyError),
    /// An S3 request failed.
    #[error("Failed to {op} `{location}` ({kind})")]
    S3 {
        /// The operation (`upload`, `copy`, `list`, ...).
        op: &'static str,
        /// The key or keys involved.
        location: String,
        /// The kind of failure.
        kind: S3ErrorKind,
        /// The SDK's error.
        #[source]
        source: BoxError,
    },
    /// S3 was asked for, and this build has no S3 client (the crate's `s3` feature is off):
    /// only a local staging directory can be used.
    #[error("`{target}` is on S3, and this build has no S3 support (its `s3` feature is off)")]
    NoS3Support {
        /// What was to be read or written.
        target: String,
    },
    /// The destination exists and overwriting is [`crate::Overwrite::Never`].
    #[error("`{0}` already exists and overwriting is disabled")]
    AlreadyExists(String),
    /// The S3 endpoint setting is not an `http://` or `https://` URL with a host (a usage
    /// error: no request is made).
    #[error("{var} is not an http(s) URL with a host: {value:?}")]
    InvalidEndpoint {
        /// Where the endpoint came from: the variable or `--endpoint-url`.
        var: &'static str,
        /// The value, credentials shown as `***`.
        value: String,
    },
    /// The file of trusted certificate authorities cannot be used.
    #[error("AWS_CA_BUNDLE `{}`: {reason}", path.display())]
    CaBundle {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The preflight of uploads to a destination failed.
    #[error("Preflight of uploads to `{target}` failed")]
    Preflight {
        /// The destination as the user sees it (a staged path or an S3 URI).
        target: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// The bytes read of an object do not have the digest recorded for it.
    #[error("{kind} mismatch for `{location}`: {} {expected}, got {actual}", kind.recorded_as())]
    DigestMismatch {
        /// The object.
        location: String,
        /// Which digest.
        kind: crate::DigestKind,
        /// The digest recorded.
        expected: String,
        /// The digest of the bytes read.
        actual: String,
    },
    /// A read of an object ended with another length than the object's.
    #[error("Received {received} of the {expected} bytes of `{location}`")]
    Incomplete {
        /// The object.
        location: String,
        /// Bytes received.
        received: u64,
        /// The object's size.
        expected: u64,
    },
    /// Some files of a batch failed; the failures are listed a cause at a time.
    #[error("Failed to {op} {}/{total} files:{}", failures.len(), list(failures))]
    Batch {
        /// `upload` or `copy`.
        op: &'static str,
        /// Files in the batch.
        total: usize,
        /// Every failure: the destination and its error.
        failures: Vec<(String, Error)>,
    },
    /// The endpoint proved unreachable across a run's requests (every one refused, or
    /// without a byte of answer, for as long as one request's retries take): the files in
    /// flight stopped retrying and the rest were not started.
    #[error(
        "endpoint {endpoint} unreachable ({cause}): {failed} of {total} files not {}",
        participle(op)
    )]
    Unreachable {
        /// The endpoint, credentials shown as `***`.
        endpoint: String,
        /// What the requests met (the last one's root cause).
        cause: String,
        /// `upload` or `copy`.
        op: &'static str,
        /// Files not transferred.
        failed: usize,
        /// Files in the batch.
        total: usize,
    },
}

/// `uploaded`, `copied`.
fn participle(op: &str) -> String {
    match op {
        "copy" => "copied".to_owned(),
        other => format!("{other}ed"),
    }
}

/// Names shown for the files that failed with one cause.
const NAMED_PER_CAUSE: usize = 3;

/// The failures a cause at a time (in the order each cause first appears): a cause that
/// one file met is that file and its error; one that several met is shown once, with how
/// many and the first few of them.
fn list(failures: &[(String, Error)]) -> String {
    use std::fmt::Write as _;
    let mut groups: Vec<(String, Vec<&str>, &Error)> = Vec::new();
    for (location, err) in failures {
        let cause = root_cause(err);
        match groups.iter_mut().find(|(c, _, _)| *c == cause) {
            Some((_, locations, _)) => locations.push(location),
            None => groups.push((cause, vec![location], err)),
        }
    }
    let mut out = String::new();
    for (_, locations, first) in groups {
        if let [location] = locations[..] {
            let _ = write!(out, "\n  {location}: {}", chain(first));
            continue;
        }
        let named = locations
            .iter()
            .take(NAMED_PER_CAUSE)
            .map(|l| format!("`{l}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let more = match locations.len().saturating_sub(NAMED_PER_CAUSE) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let _ = write!(
            out,
            "\n  {} files ({named}{more}): {}",
            locations.len(),
            chain(first)
        );
    }
    out
}

/// What `err` comes down to, without the file it happened to: the kind of the first I/O
/// error among its causes (`NotADirectory`, `PermissionDenied`, ...), else the kind of an S3
/// failure and the text of its innermost cause.
fn root_cause(err: &Error) -> String {
    if let Some(io) = causes(err).find_map(|c| c.downcast_ref::<std::io::Error>()) {
        return format!("{:?}", io.kind());
    }
    let innermost = innermost(err);
    match err.s3_kind() {
        Some(kind) => format!("{kind}: {innermost}"),
        None => innermost.to_string(),
    }
}

/// `err` and its sources, outermost first.
fn causes<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |e| e.source())
}

/// The innermost source of `err` (`err` itself without one).
pub(crate) fn innermost<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> &'a (dyn std::error::Error + 'static) {
    causes(err).last().unwrap_or(err)
}

/// `err` and its sources, joined with `: `.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The cause of a failure to reach the endpoint, with the endpoint named.
#[cfg(feature = "s3")]
#[derive(Debug, thiserror::Error)]
#[error("{endpoint}: {source}")]
struct AtEndpoint {
    endpoint: String,
    source: BoxError,
}

/// `err` with the endpoint named in its cause when it is an [`S3ErrorKind::Unreachable`]
/// failure that does not name it yet (a refused connection, a failed DNS look-up).
#[cfg(feature = "s3")]
pub(crate) fn naming_endpoint(err: Error, endpoint: &str) -> Error {
    match err {
        Error::S3 {
            op,
            location,
            kind: S3ErrorKind::Unreachable,
            source,
        } if !chain(source.as_ref()).contains(endpoint) => Error::S3 {
            op,
            location,
            kind: S3ErrorKind::Unreachable,
            source: Box::new(AtEndpoint {
                endpoint: endpoint.to_owned(),
                source,
            }),
        },
        other => other,
    }
}

impl Error {
    /// Whether a setting the caller gave is wrong and no request was made (a malformed
    /// endpoint URL): a usage error.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::InvalidEndpoint { .. } | Error::NoS3Support { .. }
        )
    }

    /// The kind of an S3 failure, or `None` for local and batch errors.
    pub fn s3_kind(&self) -> Option<S3ErrorKind> {
        match self {
            Error::S3 { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// Whether a conditional write lost to another writer ([`S3ErrorKind::Conflict`]): the
    /// caller reads again and retries.
    pub fn is_conflict(&self) -> bool {
        self.s3_kind() == Some(S3ErrorKind::Conflict)
    }

    /// An [`Error::S3`] from an SDK error, classified.
    #[cfg(feature = "s3")]
    pub fn s3<E, R>(op: &'static str, location: impl Into<String>, err: SdkError<E, R>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: fmt::Debug + Send + Sync + 'static,
        SdkError<E, R>: HasStatus,
    {
        Error::S3 {
            op,
            location: location.into(),
            kind: classify(&err),
            source: Box::new(err),
        }
    }
}

/// The HTTP status of a failed request, where there was a response.
#[cfg(feature = "s3")]
pub trait HasStatus {
    /// The status code.
    fn status(&self) -> Option<u16>;
}

#[cfg(feature = "s3")]
impl<E> HasStatus for SdkError<E, aws_smithy_runtime_api::client::orchestrator::HttpResponse> {
    fn status(&self) -> Option<u16> {
        self.raw_response().map(|r| r.status().as_u16())
    }
}

/// The kind of an SDK error.
#[cfg(feature = "s3")]
pub fn classify<E, R>(err: &SdkError<E, R>) -> S3ErrorKind
where
    E: ProvideErrorMetadata,
    SdkError<E, R>: HasStatus,
{
    match err {
        SdkError::DispatchFailure(d) => {
            if d.as_connector_error()
                .is_some_and(|c| crate::client::is_untrusted_certificate(c))
            {
                S3ErrorKind::UntrustedCertificate
            } else if d.is_io()
                || d.is_timeout()
                // A connection closed before the response (a reset), as the connector
                // classifies it.
                || matches!(
                    d.as_other(),
                    Some(
                        aws_smithy_types::retry::ErrorKind::TransientError
                            | aws_smithy_types::retry::ErrorKind::ServerError
                            | aws_smithy_types::retry::ErrorKind::ThrottlingError
                    )
                )
            {
                S3ErrorKind::Unreachable
            } else if format!("{d:?}").contains("credentials") {
                S3ErrorKind::Auth
            } else {
                S3ErrorKind::Other
            }
        }
        SdkError::TimeoutError(_) => S3ErrorKind::Unreachable,
        SdkError::ResponseError(_) => S3ErrorKind::BadResponse,
        SdkError::ServiceError(service) => match (service.err().code(), err.status()) {
            (Some("NoSuchBucket"), _) => S3ErrorKind::NoSuchBucket,
            (Some("PreconditionFailed" | "ConditionalRequestConflict"), _) | (_, Some(412)) => {
                S3ErrorKind::Conflict
            }
            (Some("NoSuchKey" | "NotFound" | "NoSuchUpload"), _) | (None, Some(404)) => {
                S3ErrorKind::NotFound
            }
            (
                Some(
                    "AccessDenied"
                    | "InvalidAccessKeyId"
                    | "SignatureDoesNotMatch"
                    | "Forbidden"
                    | "ExpiredToken"
                    | "InvalidToken",
                ),
                _,
            )
            | (_, Some(401 | 403)) => S3ErrorKind::Auth,
            (
                Some(
                    "SlowDown"
                    | "ServiceUnavailable"
                    | "InternalError"
                    | "RequestTimeout"
                    | "Throttling"
                    | "ThrottlingException"
                    | "TooManyRequests",
                ),
                _,
            )
            | (_, Some(429 | 500..=599)) => S3ErrorKind::Unavailable,
            // A success status whose body could not be understood: damaged on the way.
            (None, Some(200..=299)) => S3ErrorKind::BadResponse,
            _ => S3ErrorKind::Other,
        },
        SdkError::ConstructionFailure(c) if format!("{c:?}").contains("credentials") => {
            S3ErrorKind::Auth
        }
        _ => S3ErrorKind::Other,
    }
}
