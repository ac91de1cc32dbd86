//! Verified ranged reads: an object read as parallel ranged GETs pinned to its `ETag`, each
//! range resumed from the byte it reached when its body breaks off
//! ([`S3StorageBackend::read_range`]), the bytes handed on in order and checked against the
//! digest recorded for the object: its SHA-256, or what its `ETag` says (the MD5 of a
//! single-part upload, `{md5 of the parts' md5s}-{parts}` of a multipart one).
//!
//! [`S3StorageBackend::ranged_parts`] is the stream of parts; [`Verifier`] checks bytes fed to
//! it (by whoever consumes the parts, off the async threads);
//! [`S3StorageBackend::read_verified`] puts both together for a consumer that reads the object
//! as a [`std::io::Read`] in a blocking task.

use std::io::Read;
use std::sync::Arc;

#[cfg(feature = "s3")]
use futures::StreamExt as _;
use md5::Digest as _;
#[cfg(feature = "s3")]
use storage_location::StorageLocation;

#[cfg(feature = "s3")]
use crate::S3StorageBackend;
use crate::error::Error;

/// How an object is split into ranged GETs.
#[derive(Debug, Clone)]
pub struct RangePlan {
    /// Bytes asked for per ranged GET.
    pub range_size: u64,
    /// Ranged GETs of the object in flight (their bodies are held until handed on in order).
    pub in_flight: usize,
    /// A budget shared with other reads: each range takes a permit before it starts and gives
    /// it back once its part is handed on, so the bodies held across all reads of the budget
    /// stay bounded. `None`: only [`RangePlan::in_flight`] bounds them.
    pub budget: Option<Arc<tokio::sync::Semaphore>>,
}

/// Which digest a mismatch is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigestKind {
    /// The SHA-256 recorded for the object (a sidecar or the upload's metadata).
    Sha256,
    /// The MD5 of a single-part upload, its `ETag`.
    Md5,
    /// The `ETag` of a multipart upload: the MD5 of the parts' MD5s and the part count.
    MultipartMd5,
}

impl DigestKind {
    /// `SHA-256`, `MD5`, `Multipart MD5`.
    pub fn as_str(self) -> &'static str {
        match self {
            DigestKind::Sha256 => "SHA-256",
            DigestKind::Md5 => "MD5",
            DigestKind::MultipartMd5 => "Multipart MD5",
        }
    }

    /// How the expected value is introduced in a mismatch message.
    pub(crate) fn recorded_as(self) -> &'static str {
        match self {
            DigestKind::Sha256 => "expected",
            DigestKind::Md5 | DigestKind::MultipartMd5 => "the ETag says",
        }
    }
}

impl std::fmt::Display for DigestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the bytes of an object are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A SHA-256 (lowercase hex).
    Sha256(String),
    /// A single-part upload's `ETag`: the MD5 of the object (lowercase hex).
    Md5(String),
    /// A multipart upload's `ETag` (`{md5 of the parts' md5s}-{parts}`, lowercase), with the
    /// part size it was uploaded in.
    MultipartMd5 {
        /// The `ETag` without quotes.
        etag: String,
        /// The size of every part but the last.
        part_size: u64,
    },
    /// Nothing recorded: only the length is checked.
    Nothing,
}

impl Expected {
    /// What an object can be checked against: `sha256` when one is recorded, else its `etag`
    /// when that is an MD5, or a multipart `ETag` whose part count fits parts of `part_size`
    /// (the AWS CLI's and boto3's default is 8 MiB); else [`Expected::Nothing`].
    pub fn for_object(sha256: Option<String>, etag: &str, size: u64, part_size: u64) -> Self {
        let etag = etag.trim_matches('"').to_ascii_lowercase();
        let is_md5 = |s: &str| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if let Some(sha) = sha256 {
            Expected::Sha256(sha)
        } else if is_md5(&etag) {
            Expected::Md5(etag)
        } else if let Some((md5, parts)) = etag.split_once('-')
            && is_md5(md5)
            && part_size > 0
            && parts.parse::<u64>().ok() == Some(size.div_ceil(part_size))
        {
            Expected::MultipartMd5 { etag, part_size }
        } else {
            Expected::Nothing
        }
    }
}

/// How an object was verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Its SHA-256 matched.
    Sha256,
    /// Its MD5 matched its single-part `ETag`.
    Md5,
    /// The MD5s of its parts matched its multipart `ETag`.
    MultipartMd5,
    /// Only its length was checked (nothing was recorded).
    LengthOnly,
}

/// The outcome of a [`Verifier`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// How the bytes were checked.
    pub verification: Verification,
    /// The SHA-256 of the bytes (lowercase hex), when it was computed: checked against
    /// [`Expected::Sha256`], or asked for with [`Verifier::computing_sha256`].
    pub sha256: Option<String>,
}

/// The MD5s of fixed-size parts, as a multipart `ETag` is computed.
#[derive(Debug, Clone)]
struct PartMd5s {
    part_size: u64,
    current: md5::Md5,
    in_part: u64,
    digests: Vec<u8>,
    parts: u64,
}

impl PartMd5s {
    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let room = usize::try_from(self.part_size - self.in_part).unwrap_or(usize::MAX);
            let (now, later) = data.split_at(data.len().min(room));
            self.current.update(now);
            self.in_part += now.len() as u64;
            if self.in_part == self.part_size {
                self.digests
                    .extend_from_slice(&std::mem::take(&mut self.current).finalize());
                self.in_part = 0;
                self.parts += 1;
            }
            data = later;
        }
    }

    fn finish(mut self) -> String {
        if self.in_part > 0 {
            self.digests.extend_from_slice(&self.current.finalize());
            self.parts += 1;
        }
        format!(
            "{}-{}",
            hex::encode(md5::Md5::digest(&self.digests)),
            self.parts
        )
    }
}

/// Checks the bytes of one object as they are fed to it, in order: their length and the
/// digest [`Expected`]. Hashing is CPU work: feed it from a blocking task
/// ([`crate::blocking`]), not from async code.
#[derive(Debug, Clone)]
pub struct Verifier {
    location: String,
    expected: Expected,
    size: u64,
    received: u64,
    sha256: Option<sha2::Sha256>,
    md5: Option<md5::Md5>,
    part_md5s: Option<PartMd5s>,
}

impl Verifier {
    /// A verifier of the `size` bytes of the object named `location` (an `s3://` URI or a
    /// path, for the errors).
    pub fn new(location: impl Into<String>, expected: Expected, size: u64) -> Self {
        let sha256 = matches!(expected, Expected::Sha256(_)).then(sha2::Sha256::default);
        let md5 = matches!(expected, Expected::Md5(_)).then(md5::Md5::new);
        let part_md5s = match &expected {
            Expected::MultipartMd5 { part_size, .. } => Some(PartMd5s {
                part_size: *part_size,
                current: md5::Md5::new(),
                in_part: 0,
                digests: Vec::new(),
                parts: 0,
            }),
            _ => None,
        };
        Verifier {
            location: location.into(),
            expected,
            size,
            received: 0,
            sha256,
            md5,
            part_md5s,
        }
    }

    /// Also computes the SHA-256 of the bytes, whatever is expected ([`Verified::sha256`]).
    #[must_use]
    pub fn computing_sha256(mut self) -> Self {
        self.sha256.get_or_insert_with(sha2::Sha256::default);
        self
    }

    /// The name of the object, as given.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The object's size, as given.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes fed so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Feeds the next bytes of the object.
    pub fn update(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.sha256 {
            sha2::Digest::update(h, data);
        }
        if let Some(h) = &mut self.md5 {
            h.update(data);
        }
        if let Some(parts) = &mut self.part_md5s {
            parts.update(data);
        }
        self.received += data.len() as u64;
    }

    /// Checks what was fed: [`Error::Incomplete`] when it is not the object's size,
    /// [`Error::DigestMismatch`] when its digest is not the one expected.
    pub fn finish(self) -> Result<Verified, Error> {
        if self.received != self.size {
            return Err(Error::Incomplete {
                location: self.location,
                received: self.received,
                expected: self.size,
            });
        }
        let sha256 = self.sha256.map(|h| hex::encode(sha2::Digest::finalize(h)));
        let mismatch = |kind, expected: &str, actual: String| Error::DigestMismatch {
            location: self.location.clone(),
            kind,
            expected: expected.to_owned(),
            actual,
        };
        let verification = match &self.expected {
            Expected::Sha256(expected) => {
                let actual = sha256.clone().unwrap_or_default();
                if &actual != expected {
                    return Err(mismatch(DigestKind::Sha256, expected, actual));
                }
                Verification::Sha256
            }
            Expected::Md5(expected) => {
                let actual = self
                    .md5
                    .map(|h| hex::encode(h.finalize()))
                    .unwrap_or_default();
                if &actual != expected {
                    return Err(mismatch(DigestKind::Md5, expected, actual));
                }
                Verification::Md5
            }
            Expected::MultipartMd5 { etag, .. } => {
                let actual = self.part_md5s.map(PartMd5s::finish).unwrap_or_default();
                if &actual != etag {
                    return Err(mismatch(DigestKind::MultipartMd5, etag, actual));
                }
                Verification::MultipartMd5
            }
            Expected::Nothing => Verification::LengthOnly,
        };
        Ok(Verified {
            verification,
            sha256,
        })
    }
}

/// The object as a [`Read`], its parts received from the download running beside it and fed
/// to a [`Verifier`] as they are read. Only for blocking tasks: a read waits for the next part.
pub struct VerifiedReader {
    rx: tokio::sync::mpsc::Receiver<std::io::Result<bytes::Bytes>>,
    current: bytes::Bytes,
    verifier: Verifier,
}

impl VerifiedReader {
    /// Bytes read so far.
    pub fn received(&self) -> u64 {
        self.verifier.received()
    }

    /// Reads what is left of the object, then checks it ([`Verifier::finish`]).
    pub fn finish(mut self) -> Result<Verified, Error> {
        let location = self.verifier.location().to_owned();
        std::io::copy(&mut self, &mut std::io::sink()).map_err(|e| Error::S3 {
            op: "download",
            location,
            kind: crate::S3ErrorKind::BadResponse,
            source: Box::new(e),
        })?;
        self.verifier.finish()
    }
}

impl Read for VerifiedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        let chunk = self.current.split_to(n);
        buf[..n].copy_from_slice(&chunk);
        self.verifier.update(&chunk);
        Ok(n)
    }
}

#[cfg(feature = "s3")]
impl S3StorageBackend {
    /// Bytes `start..end` of `loc`, only of the version `etag`, as parallel ranged GETs of
    /// `plan`, yielded in order. Each range resumes from the byte it reached when its body
    /// breaks off ([`S3StorageBackend::read_range`]); `on_bytes` hears of the bytes as they
    /// arrive. The stream holds its own handle on the client.
    pub fn ranged_parts<'a>(
        &self,
        loc: &'a StorageLocation,
        (start, end): (u64, u64),
        etag: &'a str,
        plan: RangePlan,
        on_bytes: &'a (dyn Fn(u64) + Send + Sync),
    ) -> impl futures::Stream<Item = Result<Vec<bytes::Bytes>, Error>> + Send + use<'a> {
        let storage = Arc::new(self.clone());
        let range_size = plan.range_size.max(1);
        let ranges = (0..end.saturating_sub(start).div_ceil(range_size)).map(move |i| {
            let first = start + i * range_size;
            (first, (first + range_size).min(end) - 1)
        });
        // A range takes a permit of the budget before it starts, in order (so the earliest
        // range of every read holding permits has one: no deadlock), and gives it back when
        // its part is handed on.
        let budget = plan.budget;
        futures::stream::iter(ranges)
            .then(move |range| {
                let budget = budget.clone();
                async move {
                    let permit = match budget {
                        Some(b) => b.acquire_owned().await.ok(),
                        None => None,
                    };
                    (range, permit)
                }
            })
            .map(move |(range, permit)| {
                let storage = Arc::clone(&storage);
                async move {
                    let part = storage.read_range(loc, range, etag, on_bytes).await;
                    (part, permit)
                }
            })
            .buffered(plan.in_flight.max(1))
            .map(|(part, _permit)| part)
    }

    /// Reads the `size` bytes of `loc` (only the version `etag`) with [`S3StorageBackend::ranged_parts`]
    /// into `consume`, run as a blocking task that reads the object from a
    /// [`VerifiedReader`]; when it returns, what it left unread is read and everything is
    /// checked against `expected` (a failed check is `consume`'s error type, through `From`).
    ///
    /// The outer error is the download's (it wins: the consumer then sees the read fail); the
    /// inner one is the consumer's or the check's. A consumer that stops early stops the
    /// download.
    pub async fn read_verified<T, E>(
        &self,
        loc: &StorageLocation,
        (size, etag): (u64, &str),
        expected: Expected,
        plan: RangePlan,
        consume: impl FnOnce(&mut VerifiedReader) -> Result<T, E> + Send + 'static,
    ) -> Result<Result<(T, Verified), E>, Error>
    where
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        let (tx, rx) =
            tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(plan.in_flight.max(1));
        let mut reader = VerifiedReader {
            rx,
            current: bytes::Bytes::new(),
            verifier: Verifier::new(loc.s3_uri(), expected, size),
        };
        let consumer = crate::blocking(move || {
            let value = consume(&mut reader)?;
            let verified = reader.finish()?;
            Ok((value, verified))
        });
        let producer = async {
            // Owned here, so the channel closes when the download ends.
            let tx = tx;
            let mut parts = std::pin::pin!(self.ranged_parts(loc, (0, size), etag, plan, &|_| {}));
            while let Some(part) = parts.next().await {
                match part {
                    Ok(chunks) => {
                        for chunk in chunks {
                            if tx.send(Ok(chunk)).await.is_err() {
                                // The consumer stopped; its error says why.
                                return Ok(());
                            }
                        }
                    }
                    Err(e) => {
                        let _ = tx
                            .send(Err(std::io::Error::other("download interrupted")))
                            .await;
                        return Err(e);
                    }
                }
            }
            Ok::<(), Error>(())
        };
        let (download, read) = tokio::join!(producer, consumer);
        download?;
        Ok(read)
    }
}

#[cfg(test)]
mod tests;
