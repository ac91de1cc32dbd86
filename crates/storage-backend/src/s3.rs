//! The S3 side of [`crate::StorageBackend`].

use file_tree::FileError;
use std::path::Path;

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::{ByteStream, Length};
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, MetadataDirective};
use futures::{StreamExt as _, TryStreamExt as _};
use storage_location::{StorageLocation, encode_key};

use crate::client::S3Client;
use crate::error::{Error, S3ErrorKind};
use crate::patterns::fnmatch;
use crate::{Common, Outcome, Overwrite, SHA256_METADATA_KEY, TransferOptions, sha256_file};

/// Largest object a single `CopyObject` may copy.
const MAX_SINGLE_COPY: u64 = 5 << 30;
/// Smallest part of a multipart copy.
const MIN_COPY_PART: u64 = 256 << 20;
/// Smallest part S3 accepts (but the last).
const MIN_PART: u64 = 5 << 20;
/// Most parts of a multipart upload.
const MAX_PARTS: u64 = 10_000;
/// Read buffer of file bodies.
const BODY_BUFFER: usize = 256 << 10;

/// The bytes [`S3StorageBackend::read_range_to`] gathers before handing them to its sink.
pub const SINK_BATCH: usize = 512 << 10;

/// Where [`S3StorageBackend::read_range_to`] puts the bytes of a range.
pub trait RangeSink: Sync {
    /// Puts `pieces` (contiguous, in order) at `offset` of the object.
    fn write(
        &self,
        offset: u64,
        pieces: Vec<bytes::Bytes>,
    ) -> impl std::future::Future<Output = Result<(), Error>> + Send;
}

/// What the pieces of a body go to as they arrive.
trait Pieces: Send {
    fn take(
        &mut self,
        piece: bytes::Bytes,
    ) -> impl std::future::Future<Output = Result<(), Error>> + Send;
}

impl Pieces for Vec<bytes::Bytes> {
    async fn take(&mut self, piece: bytes::Bytes) -> Result<(), Error> {
        self.push(piece);
        Ok(())
    }
}

/// Pieces gathered for a [`RangeSink`], from offset `at`.
struct Batch<'s, S> {
    sink: &'s S,
    at: u64,
    held: Vec<bytes::Bytes>,
    held_len: usize,
}

impl<S: RangeSink> Batch<'_, S> {
    /// Hands what is held to the sink; `at` moves past it once written.
    async fn flush(&mut self) -> Result<(), Error> {
        if self.held_len > 0 {
            let pieces = std::mem::take(&mut self.held);
            self.sink.write(self.at, pieces).await?;
            self.at += self.held_len as u64;
            self.held_len = 0;
        }
        Ok(())
    }
}

impl<S: RangeSink> Pieces for Batch<'_, S> {
    async fn take(&mut self, piece: bytes::Bytes) -> Result<(), Error> {
        self.held_len += piece.len();
        self.held.push(piece);
        if self.held_len >= SINK_BATCH {
            self.flush().await?;
        }
        Ok(())
    }
}

/// What a HEAD tells about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectHead {
    /// Size in bytes.
    pub size: u64,
    /// The `ETag` (quoted as the server sent it; empty when it sent none).
    pub etag: String,
    /// The SHA-256 recorded in the metadata by our uploads.
    pub sha256: Option<String>,
    /// The content type.
    pub content_type: Option<String>,
    /// The user metadata.
    pub metadata: std::collections::HashMap<String, String>,
}

/// The state an object must be in for a conditional write ([`S3StorageBackend::put_bytes_if`])
/// to land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteCondition {
    /// No object exists under the key (`If-None-Match: *`).
    Absent,
    /// The object is still the version with this `ETag` (`If-Match`), as a HEAD or GET
    /// returned it.
    Matches(String),
}

impl std::fmt::Display for WriteCondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteCondition::Absent => f.write_str("if absent"),
            WriteCondition::Matches(etag) => write!(f, "if still {etag}"),
        }
    }
}

/// The `If-Match` and `If-None-Match` headers of a conditional write.
fn condition_headers(condition: Option<&WriteCondition>) -> (Option<String>, Option<String>) {
    match condition {
        None => (None, None),
        Some(WriteCondition::Absent) => (None, Some("*".to_owned())),
        Some(WriteCondition::Matches(etag)) => (Some(etag.clone()), None),
    }
}

/// One object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    /// The whole key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// When it was last written, when the server says.
    pub last_modified: Option<std::time::SystemTime>,
}

/// The body of a GET, read as it arrives.
pub struct ObjectBody {
    len: u64,
    body: ByteStream,
    location: String,
    read_timeout: std::time::Duration,
}

impl ObjectBody {
    /// The length the server announced (`Content-Length`).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the server announced an empty body.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The next piece of the body, `None` at its end. A connection that breaks is an
    /// [`Error::S3`] of kind [`S3ErrorKind::Unreachable`].
    pub async fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>, Error> {
        match tokio::time::timeout(self.read_timeout, self.body.try_next()).await {
            Ok(Ok(chunk)) => Ok(chunk),
            Ok(Err(e)) => Err(Error::S3 {
                op: "download",
                location: self.location.clone(),
                kind: S3ErrorKind::Unreachable,
                source: Box::new(e),
            }),
            Err(_) => Err(self.error(
                S3ErrorKind::Unreachable,
                format!(
                    "the body stalled: nothing arrived for {} s",
                    self.read_timeout.as_secs()
                ),
            )),
        }
    }

    fn error(&self, kind: S3ErrorKind, reason: String) -> Error {
        Error::S3 {
            op: "download",
            location: self.location.clone(),
            kind,
            source: reason.into(),
        }
    }

    /// The whole body as the pieces it arrived in; fewer bytes than announced is an error.
    pub async fn collect(mut self) -> Result<Vec<bytes::Bytes>, Error> {
        let mut out = Vec::new();
        let mut received = 0u64;
        while let Some(chunk) = self.next_chunk().await? {
            received += chunk.len() as u64;
            out.push(chunk);
        }
        if received != self.len {
            return Err(self.error(
                S3ErrorKind::BadResponse,
                format!("the body ended after {received} of {} bytes", self.len),
            ));
        }
        Ok(out)
    }
}

/// Uploads, copies and lists objects in S3 (or an S3-compatible server).
#[derive(Clone)]
pub struct S3StorageBackend {
    client: S3Client,
    pub(crate) common: Common,
    /// Whether the endpoint has answered across the requests of this backend and its
    /// clones, when a run gives up on an unreachable endpoint as a whole
    /// ([`S3StorageBackend::giving_up_when_unreachable`]).
    health: Option<std::sync::Arc<EndpointHealth>>,
}

/// What the requests of a run have seen of the endpoint: how many got an answer from it (a
/// response of any status), and, once one request gave up on failures that never reached it
/// (a refused connection, a timeout before the first byte) while no request got an answer,
/// the cause: the endpoint is then taken as unreachable for the rest of the run.
#[derive(Debug, Default)]
struct EndpointHealth {
    answers: std::sync::atomic::AtomicU64,
    down: std::sync::OnceLock<String>,
}

impl EndpointHealth {
    fn answers(&self) -> u64 {
        self.answers.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Counts an attempt that got an answer from the server.
    fn observe<T>(&self, result: &Result<T, Error>) {
        if !result.as_ref().is_err_and(|e| !got_answer(e)) {
            self.answers
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn down(&self) -> Option<&str> {
        self.down.get().map(String::as_str)
    }
}

/// Whether a failed attempt got an answer from the server: anything but an unreachable
/// endpoint (and local failures, which tell nothing of it) is one.
fn got_answer(err: &Error) -> bool {
    err.s3_kind()
        .is_some_and(|kind| kind != S3ErrorKind::Unreachable)
}

/// `Ok(None)` for a "not found" failure, the failure itself for any other.
fn absent_as_none<T>(result: Result<T, Error>) -> Result<Option<T>, Error> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.s3_kind() == Some(S3ErrorKind::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether a failure may pass when asked again.
fn is_transient(err: &Error) -> bool {
    err.s3_kind().is_some_and(S3ErrorKind::is_transient)
}

fn part_size_for(size: u64, preferred: u64) -> u64 {
    preferred.max(MIN_PART).max(size.div_ceil(MAX_PARTS))
}

impl S3StorageBackend {
    /// A backend over `client`.
    pub fn new(client: S3Client, options: TransferOptions) -> Self {
        Self {
            client,
            common: Common::new(options),
            health: None,
        }
    }

    /// This backend, giving up on the endpoint for the whole run once it proves unreachable:
    /// when a request has used up its retries on refused connections or timeouts before any
    /// answer, and no request of the run got an answer meanwhile, the requests in flight stop
    /// retrying and no new one is made (each fails at once, saying so). A run against a dead
    /// endpoint thus fails within the time of one request's retries, however many files it
    /// has; a few failures among answered requests are retried as before.
    #[must_use]
    pub fn giving_up_when_unreachable(mut self) -> Self {
        self.health = Some(std::sync::Arc::default());
        self
    }

    /// Why the endpoint was given up on, once it was
    /// ([`S3StorageBackend::giving_up_when_unreachable`]).
    pub fn unreachable(&self) -> Option<&str> {
        self.health.as_deref().and_then(EndpointHealth::down)
    }

    /// Once the endpoint is given up on, the error of a request (or a transfer) to
    /// `location` that is not started.
    pub(crate) fn not_started(&self, op: &'static str, location: &str) -> Option<Error> {
        let cause = self.unreachable()?;
        Some(Error::S3 {
            op,
            location: location.to_owned(),
            kind: S3ErrorKind::Unreachable,
            source: format!(
                "not started: {} is unreachable ({cause})",
                self.client.endpoint()
            )
            .into(),
        })
    }

    /// The client.
    pub fn client(&self) -> &S3Client {
        &self.client
    }

    fn sdk(&self) -> &aws_sdk_s3::Client {
        self.client.sdk()
    }

    /// What a HEAD of `loc` tells, `None` if the object is absent. The one HEAD of the
    /// workspace: existence checks, overwrite policies, copies and downloads all use it.
    pub async fn head_object(&self, loc: &StorageLocation) -> Result<Option<ObjectHead>, Error> {
        let head = self
            .retrying("head", &loc.s3_uri(), 0, || async {
                self.sdk()
                    .head_object()
                    .bucket(loc.bucket())
                    .key(loc.relative_path())
                    .send()
                    .await
                    .map_err(|e| Error::s3("head", loc.s3_uri(), e))
            })
            .await;
        let Some(head) = absent_as_none(head)? else {
            return Ok(None);
        };
        let metadata = head.metadata().cloned().unwrap_or_default();
        Ok(Some(ObjectHead {
            size: u64::try_from(head.content_length().unwrap_or(0)).unwrap_or(0),
            etag: head.e_tag().unwrap_or_default().to_owned(),
            sha256: metadata.get(SHA256_METADATA_KEY).cloned(),
            content_type: head.content_type().map(str::to_owned),
            metadata,
        }))
    }

    /// Reads a small object whole; `None` if absent. A body that breaks off is asked for
    /// again, as any failed request.
    pub async fn get_small(&self, loc: &StorageLocation) -> Result<Option<Vec<u8>>, Error> {
        let body = self
            .retrying("read", &loc.s3_uri(), 0, || async {
                self.get_once(loc, None, None).await?.collect().await
            })
            .await;
        Ok(absent_as_none(body)?.map(|parts| parts.concat()))
    }

    /// A GET of `loc`: the whole object, or `range` (first and last byte, inclusive; an open
    /// end reads to the end of the object). With `etag`, only that version of the object is
    /// read (a newer one fails the request), so ranges of one object can be put together.
    /// A missing object is an [`Error::S3`] of kind [`S3ErrorKind::NotFound`]. The request is
    /// retried until the response starts; reading the body is the caller's
    /// ([`S3StorageBackend::read_range`] resumes a body that breaks off).
    pub async fn get(
        &self,
        loc: &StorageLocation,
        range: Option<(u64, Option<u64>)>,
        etag: Option<&str>,
    ) -> Result<ObjectBody, Error> {
        self.retrying("download", &loc.s3_uri(), 0, || {
            self.get_once(loc, range, etag)
        })
        .await
    }

    /// One GET request (the SDK's own retries aside).
    async fn get_once(
        &self,
        loc: &StorageLocation,
        range: Option<(u64, Option<u64>)>,
        etag: Option<&str>,
    ) -> Result<ObjectBody, Error> {
        let header = range.map(|(first, last)| match last {
            Some(last) => format!("bytes={first}-{last}"),
            None => format!("bytes={first}-"),
        });
        let out = self
            .sdk()
            .get_object()
            .bucket(loc.bucket())
            .key(loc.relative_path())
            .set_range(header)
            .set_if_match(etag.filter(|e| !e.is_empty()).map(str::to_owned))
            .send()
            .await
            .map_err(|e| Error::s3("download", loc.s3_uri(), e))?;
        Ok(ObjectBody {
            len: u64::try_from(out.content_length().unwrap_or(0)).unwrap_or(0),
            body: out.body,
            location: loc.s3_uri(),
            read_timeout: self.client.limits().read_timeout,
        })
    }

    /// Bytes `first..=last` of `loc`, only of the version `etag` (when not empty). A body that
    /// breaks off, stalls or ends early is asked for again from the byte it reached, with
    /// backoff, up to the client's attempts; each retry is logged and counted. Fewer bytes
    /// than asked for is an error, never a shorter answer. `on_bytes` is told of every piece
    /// as it arrives (a piece received again after a failure is not told twice).
    pub async fn read_range(
        &self,
        loc: &StorageLocation,
        (first, last): (u64, u64),
        etag: &str,
        on_bytes: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<Vec<bytes::Bytes>, Error> {
        let location = format!("{} (bytes {first}-{last})", loc.s3_uri());
        // What arrived so far and where the next attempt starts; no lock is held across an
        // await.
        let received = std::sync::Mutex::new((Vec::new(), first));
        let state = || {
            received
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        self.retrying("download", &location, last + 1 - first, || async {
            let (mut parts, mut offset) = (Vec::new(), state().1);
            let result = self
                .read_into(loc, last, etag, (&mut parts, &mut offset), on_bytes)
                .await;
            let mut kept = state();
            kept.0.append(&mut parts);
            kept.1 = offset;
            result
        })
        .await?;
        let (parts, _) = received
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(parts)
    }

    /// [`S3StorageBackend::read_range`] handing the bytes to `sink` as they arrive, in batches
    /// of about [`SINK_BATCH`] (in order within the range, each at its offset in the object),
    /// instead of holding the range in memory: a range costs one batch of memory however
    /// large it is and however slowly it comes. What arrived before a failure is handed on
    /// before the retry, which asks for the rest only.
    pub async fn read_range_to<S: RangeSink>(
        &self,
        loc: &StorageLocation,
        (first, last): (u64, u64),
        etag: &str,
        on_bytes: &(dyn Fn(u64) + Send + Sync),
        sink: &S,
    ) -> Result<(), Error> {
        let location = format!("{} (bytes {first}-{last})", loc.s3_uri());
        let next = std::sync::atomic::AtomicU64::new(first);
        self.retrying("download", &location, last + 1 - first, || async {
            let at = next.load(std::sync::atomic::Ordering::Relaxed);
            let mut batch = Batch {
                sink,
                at,
                held: Vec::new(),
                held_len: 0,
            };
            let mut offset = at;
            let result = self
                .read_into(loc, last, etag, (&mut batch, &mut offset), on_bytes)
                .await;
            // What arrived is kept even when the body broke off: the retry starts after it.
            let flushed = batch.flush().await;
            next.store(batch.at, std::sync::atomic::Ordering::Relaxed);
            flushed.and(result)
        })
        .await
    }

    /// One GET of `offset..=last`, its pieces given to `parts` and `offset` advanced as they
    /// arrive (so that a retry resumes where this one broke).
    async fn read_into(
        &self,
        loc: &StorageLocation,
        last: u64,
        etag: &str,
        (parts, offset): (&mut impl Pieces, &mut u64),
        on_bytes: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<(), Error> {
        let start = *offset;
        let mut body = self
            .get_once(loc, Some((start, Some(last))), Some(etag))
            .await?;
        let wanted = last + 1 - start;
        if body.len() != wanted {
            return Err(body.error(
                S3ErrorKind::BadResponse,
                format!(
                    "asked for {wanted} bytes, the server announced {}",
                    body.len()
                ),
            ));
        }
        while let Some(chunk) = body.next_chunk().await? {
            if chunk.len() as u64 > last + 1 - *offset {
                return Err(body.error(
                    S3ErrorKind::BadResponse,
                    format!("the body is longer than the {wanted} bytes asked for"),
                ));
            }
            *offset += chunk.len() as u64;
            on_bytes(chunk.len() as u64);
            parts.take(chunk).await?;
        }
        if *offset != last + 1 {
            return Err(body.error(
                S3ErrorKind::BadResponse,
                format!("the body ended after {} of {wanted} bytes", *offset - start),
            ));
        }
        Ok(())
    }

    /// Runs `request` until it succeeds or fails for good ([`S3Client::retry`], transient
    /// failures only), all of it within the deadline of a request moving `bytes` of body.
    pub(crate) async fn retrying<T, F, Fut>(
        &self,
        op: &'static str,
        location: &str,
        bytes: u64,
        request: F,
    ) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let Some(health) = self.health.as_deref() else {
            // While this request meets no answer, no attempt starts after the operation
            // timeout (the time a body needs is granted only while the server answers).
            let started = std::time::Instant::now();
            let silent_budget = self.client.limits().operation_timeout;
            let answered = std::sync::atomic::AtomicBool::new(false);
            let mut request = request;
            let attempts = self.client.retry(
                location,
                |e| {
                    is_transient(e)
                        && (answered.load(std::sync::atomic::Ordering::Relaxed)
                            || started.elapsed() < silent_budget)
                },
                || {
                    let attempt = request();
                    let answered = &answered;
                    async move {
                        let result = attempt.await;
                        if !result.as_ref().is_err_and(|e| !got_answer(e)) {
                            answered.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                        result
                    }
                },
            );
            return self
                .within(self.client.limits().deadline(bytes), op, location, attempts)
                .await
                .map_err(|e| crate::error::naming_endpoint(e, self.client.endpoint()));
        };
        if let Some(e) = self.not_started(op, location) {
            return Err(e);
        }
        let answers = health.answers();
        // While nothing answers (a silent endpoint), the time a body needs at the slowest
        // expected rate is not granted: no attempt starts after the operation timeout.
        let started = std::time::Instant::now();
        let silent_budget = self.client.limits().operation_timeout;
        let mut request = request;
        let attempts = self.client.retry(
            location,
            |e| {
                is_transient(e)
                    && health.down().is_none()
                    && !(health.answers() == answers && started.elapsed() >= silent_budget)
            },
            || {
                let attempt = request();
                async move {
                    let result = attempt.await;
                    health.observe(&result);
                    result
                }
            },
        );
        let result = self
            .within(self.client.limits().deadline(bytes), op, location, attempts)
            .await;
        if let Err(e) = &result
            && e.s3_kind() == Some(S3ErrorKind::Unreachable)
            && health.answers() == answers
        {
            // What a request that never reached the server met.
            let _ = health.down.set(crate::error::innermost(e).to_string());
        }
        result.map_err(|e| crate::error::naming_endpoint(e, self.client.endpoint()))
    }

    /// `work`, or an [`S3ErrorKind::Unreachable`] error naming the endpoint and the limit when
    /// it takes longer than `limit`.
    async fn within<T>(
        &self,
        limit: std::time::Duration,
        op: &'static str,
        location: &str,
        work: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        tokio::time::timeout(limit, Box::pin(work))
            .await
            .unwrap_or_else(|_| {
                Err(Error::S3 {
                    op,
                    location: location.to_owned(),
                    kind: S3ErrorKind::Unreachable,
                    source: format!(
                        "no complete answer from {} within {} s (raise {} for slow links)",
                        self.client.endpoint(),
                        limit.as_secs(),
                        crate::EnvVars::ROCK_CI_OPERATION_TIMEOUT
                    )
                    .into(),
                })
            })
    }

    /// Writes `data` as object `dest`, with the content type of its name and its SHA-256 in
    /// the object's metadata (a dry run prints the action instead).
    pub async fn put_bytes(&self, data: Vec<u8>, dest: &StorageLocation) -> Result<Outcome, Error> {
        let content_type = crate::infer_content_type(dest.relative_path());
        if self.common.dry_run_line(&format!(
            "[DRY RUN] {} bytes -> {} ({content_type})",
            data.len(),
            dest.s3_uri()
        )) {
            return Ok(Outcome::Planned);
        }
        let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data));
        self.put_object(data, dest, content_type, (&sha, &[]), None)
            .await?;
        Ok(Outcome::Transferred)
    }

    /// Writes `data` as object `dest` as [`S3StorageBackend::put_bytes`] does, but only when
    /// `condition` holds when the write lands (S3 conditional writes): a write that finds the
    /// object created or replaced by someone else fails with an [`Error::S3`] of kind
    /// [`S3ErrorKind::Conflict`] and changes nothing.
    pub async fn put_bytes_if(
        &self,
        data: Vec<u8>,
        dest: &StorageLocation,
        condition: &WriteCondition,
    ) -> Result<Outcome, Error> {
        let content_type = crate::infer_content_type(dest.relative_path());
        if self.common.dry_run_line(&format!(
            "[DRY RUN] {} bytes -> {} ({content_type}, {condition})",
            data.len(),
            dest.s3_uri()
        )) {
            return Ok(Outcome::Planned);
        }
        let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data));
        self.put_object(data, dest, content_type, (&sha, &[]), Some(condition))
            .await?;
        Ok(Outcome::Transferred)
    }

    /// One `PutObject` of `data`, unsigned payload, with its content type and SHA-256, under
    /// `condition` when there is one.
    async fn put_object(
        &self,
        data: Vec<u8>,
        dest: &StorageLocation,
        content_type: &str,
        (sha, extra): (&str, &[(&str, &str)]),
        condition: Option<&WriteCondition>,
    ) -> Result<(), Error> {
        let size = data.len() as u64;
        let data = bytes::Bytes::from(data);
        let (if_match, if_none_match) = condition_headers(condition);
        self.retrying("upload", &dest.s3_uri(), size, || async {
            self.sdk()
                .put_object()
                .bucket(dest.bucket())
                .key(dest.relative_path())
                .content_type(content_type)
                .content_length(i64::try_from(size).unwrap_or(i64::MAX))
                .set_metadata(Some(metadata(sha, extra)))
                .set_if_match(if_match.clone())
                .set_if_none_match(if_none_match.clone())
                .body(ByteStream::from(data.clone()))
                .customize()
                .disable_payload_signing()
                .send()
                .await
                .map_err(|e| Error::s3("upload", dest.s3_uri(), e))
        })
        .await?;
        Ok(())
    }

    /// Every object whose key starts with `prefix` (a plain string prefix), with its size, in
    /// key order. With `delimiter`, keys with a `/` after the prefix (deeper "directories") are
    /// left out.
    pub async fn list_prefix(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: bool,
    ) -> Result<Vec<ListedObject>, Error> {
        let location = format!("s3://{bucket}/{prefix}");
        let incomplete = |reason: String| Error::S3 {
            op: "list",
            location: location.clone(),
            kind: S3ErrorKind::BadResponse,
            source: reason.into(),
        };
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            // A page is believed only when it is whole; one that is not is asked for again.
            let page = self
                .retrying("list", &location, 0, || async {
                    let page = self
                        .sdk()
                        .list_objects_v2()
                        .bucket(bucket)
                        .prefix(prefix)
                        .set_delimiter(delimiter.then(|| "/".to_owned()))
                        .set_continuation_token(token.clone())
                        .send()
                        .await
                        .map_err(|e| Error::s3("list", location.clone(), e))?;
                    // A page cut short can still parse: its closing fields are then missing.
                    let (Some(count), Some(_)) = (page.key_count(), page.is_truncated()) else {
                        return Err(incomplete(
                            "a page without its KeyCount or IsTruncated (cut short?)".into(),
                        ));
                    };
                    // Servers differ on whether common prefixes count as keys; either is whole.
                    let (keys, prefixes) = (page.contents().len(), page.common_prefixes().len());
                    let count = usize::try_from(count).unwrap_or(usize::MAX);
                    if count != keys && count != keys + prefixes {
                        return Err(incomplete(format!(
                            "a page says it holds {count} keys but lists {keys} (and {prefixes} prefixes)"
                        )));
                    }
                    if page.contents().iter().any(|o| o.key().is_none()) {
                        return Err(incomplete("an entry without a key".into()));
                    }
                    Ok(page)
                })
                .await?;
            out.extend(page.contents().iter().map(|object| {
                ListedObject {
                    key: object.key().unwrap_or_default().to_owned(),
                    size: u64::try_from(object.size().unwrap_or(0)).unwrap_or(0),
                    last_modified: object
                        .last_modified()
                        .and_then(|t| std::time::SystemTime::try_from(*t).ok()),
                }
            }));
            if page.is_truncated() != Some(true) {
                return Ok(out);
            }
            match page.next_continuation_token() {
                Some(next) if Some(next) != token.as_deref() => token = Some(next.to_owned()),
                _ => {
                    return Err(incomplete(
                        "the listing is cut short: more keys are announced but no usable continuation token was given"
                            .into(),
                    ));
                }
            }
        }
    }

    /// Creates `bucket`; one that already exists and is ours is fine.
    pub async fn create_bucket(&self, bucket: &str) -> Result<(), Error> {
        let location = format!("s3://{bucket}");
        self.retrying("create bucket", &location, 0, || async {
            match self.sdk().create_bucket().bucket(bucket).send().await {
                Ok(_) => Ok(()),
                Err(e)
                    if matches!(
                        e.as_service_error().and_then(ProvideErrorMetadata::code),
                        Some("BucketAlreadyOwnedByYou" | "BucketAlreadyExists")
                    ) =>
                {
                    Ok(())
                }
                Err(e) => Err(Error::s3("create bucket", location.clone(), e)),
            }
        })
        .await
    }

    /// The SHA-256 an object is known to have: our upload metadata, else its `.sha256sum`
    /// sidecar. `None` when the object or both records are absent.
    pub async fn stored_sha256(&self, loc: &StorageLocation) -> Result<Option<String>, Error> {
        let Some(head) = self.head_object(loc).await? else {
            return Ok(None);
        };
        if head.sha256.is_some() {
            return Ok(head.sha256);
        }
        let sidecar =
            StorageLocation::new(loc.bucket(), format!("{}.sha256sum", loc.relative_path()));
        Ok(self
            .get_small(&sidecar)
            .await?
            .and_then(|b| crate::parse_sha256sum(&String::from_utf8_lossy(&b))))
    }

    /// The SHA-256 of the bytes of the version `head` describes, read in ranges of at most
    /// 8 MiB (each resumed where it breaks off) and hashed as they arrive: for an object with
    /// no recorded digest, such as one another tool wrote. A newer version written meanwhile
    /// fails the read rather than being mixed in.
    pub async fn content_sha256(
        &self,
        loc: &StorageLocation,
        head: &ObjectHead,
    ) -> Result<String, Error> {
        use sha2::Digest as _;
        const RANGE: u64 = 8 << 20;
        let mut hasher = sha2::Sha256::new();
        let mut first = 0;
        while first < head.size {
            let last = (first + RANGE).min(head.size) - 1;
            for part in self
                .read_range(loc, (first, last), &head.etag, &|_| {})
                .await?
            {
                hasher.update(&part);
            }
            first = last + 1;
        }
        Ok(hex::encode(hasher.finalize()))
    }

    pub(crate) async fn upload_file(
        &self,
        source: &Path,
        dest: &StorageLocation,
        known_sha256: Option<String>,
        extra: &[(&str, &str)],
    ) -> Result<Outcome, Error> {
        self.upload_file_under(source, dest, known_sha256, extra, None)
            .await
    }

    /// Uploads `source` to `dest` as [`crate::StorageBackend::upload_file_hashed`] does, but
    /// only when `condition` holds when the object lands: the one `PutObject` of a small file,
    /// or the completion of a multipart upload, is conditional (S3 conditional writes), so a
    /// writer that finds the key created or replaced by someone else in the meantime fails
    /// with an [`Error::S3`] of kind [`S3ErrorKind::Conflict`] and changes nothing (its parts
    /// are aborted). The backend's overwrite mode is not consulted: the condition decides.
    pub async fn upload_file_if(
        &self,
        source: &Path,
        dest: &StorageLocation,
        known_sha256: Option<String>,
        condition: &WriteCondition,
    ) -> Result<Outcome, Error> {
        self.upload_file_under(source, dest, known_sha256, &[], Some(condition))
            .await
    }

    async fn upload_file_under(
        &self,
        source: &Path,
        dest: &StorageLocation,
        known_sha256: Option<String>,
        extra: &[(&str, &str)],
        condition: Option<&WriteCondition>,
    ) -> Result<Outcome, Error> {
        let size = crate::source_size(source).await?;
        let content_type = crate::infer_content_type(&source.to_string_lossy());
        if self.common.dry_run_line(&format!(
            "[DRY RUN] {} -> {} ({content_type})",
            source.display(),
            dest.s3_uri()
        )) {
            return Ok(Outcome::Planned);
        }
        // A small file is read once: hashed and sent from memory.
        let small = size <= self.common.options.multipart_threshold;
        let (sha, contents) = if small {
            // Read (and hash, unless known) off the async workers.
            let path = source.to_path_buf();
            let (sha, data) = crate::blocking(move || {
                let data = fs_err::read(&path).map_err(|e| FileError::read(&path, e))?;
                let sha = known_sha256
                    .unwrap_or_else(|| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data)));
                Ok::<_, Error>((sha, data))
            })
            .await?;
            (sha, Some(data))
        } else {
            match known_sha256 {
                Some(sha) => (sha, None),
                None => (sha256_file(source).await?, None),
            }
        };
        match self.common.options.overwrite {
            _ if condition.is_some() => {}
            Overwrite::Always => {}
            Overwrite::Never => {
                if self.head_object(dest).await?.is_some() {
                    return Err(Error::AlreadyExists(dest.s3_uri()));
                }
            }
            Overwrite::IfDifferent => {
                if self.stored_sha256(dest).await?.as_deref() == Some(sha.as_str()) {
                    tracing::info!("{} is unchanged, skipping", dest.s3_uri());
                    return Ok(Outcome::Skipped);
                }
            }
        }
        let id = self.common.reporter.on_transfer_start(&dest.s3_uri(), size);
        if let Some(data) = contents {
            let size = data.len() as u64;
            self.put_object(data, dest, content_type, (&sha, extra), condition)
                .await?;
            self.common.reporter.on_transfer_progress(id, size);
        } else {
            self.multipart_upload(
                source,
                dest,
                (size, content_type, &sha),
                extra,
                id,
                condition,
            )
            .await?;
        }
        self.common.reporter.on_transfer_complete(id);
        Ok(Outcome::Transferred)
    }

    async fn multipart_upload(
        &self,
        source: &Path,
        dest: &StorageLocation,
        (size, content_type, sha): (u64, &str, &str),
        extra: &[(&str, &str)],
        id: usize,
        condition: Option<&WriteCondition>,
    ) -> Result<(), Error> {
        let created = self
            .retrying("start multipart upload", &dest.s3_uri(), 0, || async {
                self.sdk()
                    .create_multipart_upload()
                    .bucket(dest.bucket())
                    .key(dest.relative_path())
                    .content_type(content_type)
                    .set_metadata(Some(metadata(sha, extra)))
                    .send()
                    .await
                    .map_err(|e| Error::s3("start multipart upload", dest.s3_uri(), e))
            })
            .await?;
        let upload_id = created.upload_id().unwrap_or_default().to_owned();
        let part_size = part_size_for(size, self.common.options.part_size);
        let parts: Vec<(i32, u64, u64)> = (0..size.div_ceil(part_size))
            .map(|i| {
                let offset = i * part_size;
                (
                    i32::try_from(i + 1).unwrap_or(i32::MAX),
                    offset,
                    part_size.min(size - offset),
                )
            })
            .collect();
        let result: Result<Vec<CompletedPart>, Error> = futures::stream::iter(parts)
            .map(|(number, offset, len)| {
                self.upload_part(source, dest, &upload_id, (number, offset, len), id)
            })
            .buffer_unordered(self.common.options.part_concurrency.max(1))
            .try_collect()
            .await;
        self.finish_multipart(dest, &upload_id, result, dest.s3_uri(), condition)
            .await
    }

    /// Uploads bytes `offset..offset + len` of `source` as part `number`, streamed from disk.
    async fn upload_part(
        &self,
        source: &Path,
        dest: &StorageLocation,
        upload_id: &str,
        (number, offset, len): (i32, u64, u64),
        id: usize,
    ) -> Result<CompletedPart, Error> {
        let location = format!("{} part {number}", dest.s3_uri());
        let out = self
            .retrying("upload part", &location, len, || async {
                let body = ByteStream::read_from()
                    .path(source)
                    .offset(offset)
                    .length(Length::Exact(len))
                    .buffer_size(BODY_BUFFER)
                    .build()
                    .await
                    .map_err(|e| FileError::read(source, std::io::Error::other(e)))?;
                self.sdk()
                    .upload_part()
                    .bucket(dest.bucket())
                    .key(dest.relative_path())
                    .upload_id(upload_id)
                    .part_number(number)
                    .content_length(i64::try_from(len).unwrap_or(i64::MAX))
                    .body(body)
                    .customize()
                    .disable_payload_signing()
                    .send()
                    .await
                    .map_err(|e| Error::s3("upload part", location.clone(), e))
            })
            .await?;
        self.common.reporter.on_transfer_progress(id, len);
        Ok(CompletedPart::builder()
            .part_number(number)
            .set_e_tag(out.e_tag().map(str::to_owned))
            .build())
    }

    /// Completes a multipart upload with its parts (under `condition` when there is one), or
    /// aborts it when a part (or the completion) failed, so no orphaned upload is left behind.
    async fn finish_multipart(
        &self,
        dest: &StorageLocation,
        upload_id: &str,
        parts: Result<Vec<CompletedPart>, Error>,
        location: String,
        condition: Option<&WriteCondition>,
    ) -> Result<(), Error> {
        let (if_match, if_none_match) = condition_headers(condition);
        let completed = match parts {
            Ok(mut parts) => {
                parts.sort_by_key(CompletedPart::part_number);
                let completed = CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build();
                self.retrying("complete multipart upload", &location, 0, || async {
                    self.sdk()
                        .complete_multipart_upload()
                        .bucket(dest.bucket())
                        .key(dest.relative_path())
                        .upload_id(upload_id)
                        .multipart_upload(completed.clone())
                        .set_if_match(if_match.clone())
                        .set_if_none_match(if_none_match.clone())
                        .send()
                        .await
                        .map(|_| ())
                        .map_err(|e| Error::s3("complete multipart upload", location.clone(), e))
                })
                .await
            }
            Err(e) => Err(e),
        };
        if completed.is_err() {
            let abort = self
                .retrying("abort multipart upload", &dest.s3_uri(), 0, || async {
                    self.sdk()
                        .abort_multipart_upload()
                        .bucket(dest.bucket())
                        .key(dest.relative_path())
                        .upload_id(upload_id)
                        .send()
                        .await
                        .map_err(|e| Error::s3("abort multipart upload", dest.s3_uri(), e))
                })
                .await;
            if let Err(e) = abort {
                tracing::warn!(
                    "Failed to abort the multipart upload of {}: {e}",
                    dest.s3_uri()
                );
            }
        }
        completed
    }

    pub(crate) async fn copy_file(
        &self,
        src: &StorageLocation,
        dst: &StorageLocation,
    ) -> Result<Outcome, Error> {
        if self.common.dry_run_line(&format!(
            "[DRY RUN] copy {} -> {}",
            src.s3_uri(),
            dst.s3_uri()
        )) {
            return Ok(Outcome::Planned);
        }
        let Some(head) = self.head_object(src).await? else {
            return Err(Error::S3 {
                op: "copy",
                location: src.s3_uri(),
                kind: S3ErrorKind::NotFound,
                source: "the source object does not exist".into(),
            });
        };
        match self.common.options.overwrite {
            Overwrite::Always => {}
            Overwrite::Never => {
                if self.head_object(dst).await?.is_some() {
                    return Err(Error::AlreadyExists(dst.s3_uri()));
                }
            }
            Overwrite::IfDifferent => {
                let src_sha = match head.sha256.clone() {
                    Some(sha) => Some(sha),
                    None => self.stored_sha256(src).await?,
                };
                if src_sha.is_some() && self.stored_sha256(dst).await? == src_sha {
                    return Ok(Outcome::Skipped);
                }
            }
        }
        self.copy_known(src, &head, dst).await
    }

    /// Copies `src`, whose HEAD the caller already has (`head`), to `dst` server-side, keeping
    /// its content type and metadata: one `CopyObject` up to the multipart copy threshold
    /// (at most 5 GiB), ranged part copies above it. No look-up of either object and no
    /// overwrite check: the caller decided.
    pub async fn copy_known(
        &self,
        src: &StorageLocation,
        head: &ObjectHead,
        dst: &StorageLocation,
    ) -> Result<Outcome, Error> {
        let location = format!("{} -> {}", src.s3_uri(), dst.s3_uri());
        let copy_source = format!("{}/{}", src.bucket(), encode_key(src.relative_path()));
        let size = head.size;
        let id = self.common.reporter.on_transfer_start(&dst.s3_uri(), size);
        if size <= MAX_SINGLE_COPY.min(self.common.options.multipart_copy_threshold) {
            self.retrying("copy", &location, 0, || async {
                self.sdk()
                    .copy_object()
                    .copy_source(&copy_source)
                    .bucket(dst.bucket())
                    .key(dst.relative_path())
                    .metadata_directive(MetadataDirective::Copy)
                    .send()
                    .await
                    .map_err(|e| Error::s3("copy", location.clone(), e))
            })
            .await?;
        } else {
            self.multipart_copy(&copy_source, (src, head), dst).await?;
        }
        self.common.reporter.on_transfer_progress(id, size);
        self.common.reporter.on_transfer_complete(id);
        Ok(Outcome::Transferred)
    }

    /// Copies `src` (whose HEAD is `head`) in ranged parts, keeping its content type and
    /// metadata.
    async fn multipart_copy(
        &self,
        copy_source: &str,
        (src, head): (&StorageLocation, &ObjectHead),
        dst: &StorageLocation,
    ) -> Result<(), Error> {
        let size = head.size;
        let location = format!("{} -> {}", src.s3_uri(), dst.s3_uri());
        let created = self
            .retrying("start multipart copy", &location, 0, || async {
                self.sdk()
                    .create_multipart_upload()
                    .bucket(dst.bucket())
                    .key(dst.relative_path())
                    .set_content_type(head.content_type.clone())
                    .set_metadata(Some(head.metadata.clone()))
                    .send()
                    .await
                    .map_err(|e| Error::s3("start multipart copy", location.clone(), e))
            })
            .await?;
        let upload_id = created.upload_id().unwrap_or_default().to_owned();
        let part_size = part_size_for(
            size,
            self.common
                .options
                .part_size
                .max(MIN_COPY_PART.min(self.common.options.multipart_copy_threshold)),
        );
        let ranges: Vec<(i32, u64, u64)> = (0..size.div_ceil(part_size))
            .map(|i| {
                let start = i * part_size;
                let end = (start + part_size).min(size) - 1;
                (i32::try_from(i + 1).unwrap_or(i32::MAX), start, end)
            })
            .collect();
        let result: Result<Vec<CompletedPart>, Error> = futures::stream::iter(ranges)
            .map(|(number, start, end)| {
                let (upload_id, location) = (upload_id.clone(), location.clone());
                async move {
                    let part = format!("{location} part {number}");
                    let out = self
                        .retrying("copy part", &part, 0, || async {
                            self.sdk()
                                .upload_part_copy()
                                .bucket(dst.bucket())
                                .key(dst.relative_path())
                                .upload_id(&upload_id)
                                .part_number(number)
                                .copy_source(copy_source)
                                .copy_source_range(format!("bytes={start}-{end}"))
                                .send()
                                .await
                                .map_err(|e| Error::s3("copy part", part.clone(), e))
                        })
                        .await?;
                    Ok(CompletedPart::builder()
                        .part_number(number)
                        .set_e_tag(
                            out.copy_part_result()
                                .and_then(|r| r.e_tag())
                                .map(str::to_owned),
                        )
                        .build())
                }
            })
            .buffer_unordered(self.common.options.part_concurrency.max(1))
            .try_collect()
            .await;
        self.finish_multipart(dst, &upload_id, result, location, None)
            .await
    }

    pub(crate) async fn list_files(
        &self,
        location: &StorageLocation,
        include: &[String],
    ) -> Result<Vec<StorageLocation>, Error> {
        let rel = location.relative_path();
        let prefix = if rel.is_empty() || rel.ends_with('/') {
            rel.to_owned()
        } else {
            format!("{rel}/")
        };
        let mut out = Vec::new();
        for object in self.list_prefix(location.bucket(), &prefix, false).await? {
            let rel = object.key.strip_prefix(&prefix).unwrap_or(&object.key);
            if rel.is_empty() || rel.ends_with('/') {
                continue;
            }
            if include.is_empty() || include.iter().any(|p| fnmatch(p, rel)) {
                out.push(StorageLocation::new(location.bucket(), object.key));
            }
        }
        Ok(out)
    }

    pub(crate) async fn preflight(
        &self,
        direction: crate::Direction,
        location: &StorageLocation,
    ) -> Result<(), Error> {
        match direction {
            crate::Direction::Upload => {
                if !self.client.is_signed() {
                    return Err(Error::S3 {
                        op: "preflight upload to",
                        location: location.s3_uri(),
                        kind: S3ErrorKind::Auth,
                        source: "no AWS credentials were found".into(),
                    });
                }
                let op = "preflight upload to";
                let named = |e: Error, kind: Option<S3ErrorKind>| match e {
                    Error::S3 {
                        kind: found,
                        source,
                        ..
                    } => Error::S3 {
                        op,
                        location: location.s3_uri(),
                        kind: kind.unwrap_or(found),
                        source,
                    },
                    e => e,
                };
                // The bucket first: some servers create a missing bucket on the first PUT.
                self.retrying(op, &location.s3_uri(), 0, || async {
                    self.sdk()
                        .head_bucket()
                        .bucket(location.bucket())
                        .send()
                        .await
                        .map_err(|e| Error::s3(op, location.s3_uri(), e))
                })
                .await
                .map_err(|e| {
                    let missing = e.s3_kind() == Some(S3ErrorKind::NotFound);
                    named(e, missing.then_some(S3ErrorKind::NoSuchBucket))
                })?;
                // Then write access, proved: a probe object is written and deleted.
                let probe = location.join(crate::PREFLIGHT_PROBE_KEY);
                let data = b"rock-ci write check\n".to_vec();
                let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data));
                self.put_object(data, &probe, crate::DEFAULT_CONTENT_TYPE, (&sha, &[]), None)
                    .await
                    .map_err(|e| named(e, None))?;
                self.retrying(op, &probe.s3_uri(), 0, || async {
                    self.sdk()
                        .delete_object()
                        .bucket(probe.bucket())
                        .key(probe.relative_path())
                        .send()
                        .await
                        .map_err(|e| Error::s3("delete", probe.s3_uri(), e))
                })
                .await
                .map(|_| ())
                .map_err(|e| named(e, None))
            }
            crate::Direction::Download => {
                let rel = location.relative_path();
                let prefix = if rel.is_empty() {
                    String::new()
                } else {
                    format!("{}/", rel.trim_end_matches('/'))
                };
                self.retrying("preflight download from", &location.s3_uri(), 0, || async {
                    self.sdk()
                        .list_objects_v2()
                        .bucket(location.bucket())
                        .prefix(prefix.clone())
                        .max_keys(1)
                        .send()
                        .await
                        .map(|_| ())
                        .map_err(|e| Error::s3("preflight download from", location.s3_uri(), e))
                })
                .await
            }
        }
    }
}

/// The user metadata of an upload: its SHA-256 under [`SHA256_METADATA_KEY`], and `extra`.
fn metadata(sha: &str, extra: &[(&str, &str)]) -> std::collections::HashMap<String, String> {
    std::iter::once((SHA256_METADATA_KEY, sha))
        .chain(extra.iter().copied())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}
