//! Verified, resumable downloads. Objects are read from S3 with storage-backend's ranged
//! reads: into a file, each range written at its offset as it arrives ([`to_file`]); into an
//! unpacker, in order with [`storage_backend::S3StorageBackend::ranged_parts`] on this
//! backend's stream budget. Both are checked by storage-backend's [`storage_backend::Verifier`].

use file_tree::FileError;
use std::io::{Read as _, Write as _};
use std::path::Path;
#[cfg(feature = "s3")]
use std::path::PathBuf;

use sha2::{Digest as _, Sha256};

#[cfg(feature = "s3")]
mod to_file;

#[cfg(feature = "s3")]
use storage_location::StorageLocation;

use crate::{ArtifactBackend, Downloaded, Error, sidecar_key};

#[cfg(feature = "s3")]
/// Objects with more than this left to fetch are fetched as parallel ranged GETs (as boto3's
/// transfer manager splits objects above 8 MiB).
const PARALLEL_THRESHOLD: u64 = 8 << 20;
#[cfg(feature = "s3")]
/// Size of one ranged GET. Small enough that an object of a few tens of MiB spreads over many
/// connections (where each connection is slow, as behind a per-connection limit, the number
/// of connections is the speed).
const RANGE_SIZE: u64 = 4 << 20;
#[cfg(feature = "s3")]
/// Size of one ranged GET of a streamed fetch, whose bodies are held in memory until handed on
/// in order: half of [`RANGE_SIZE`], for as many connections in half the memory.
const STREAM_RANGE_SIZE: u64 = 2 << 20;
#[cfg(feature = "s3")]
/// Ranged GETs of one object in flight.
const RANGE_CONCURRENCY: usize = 16;
#[cfg(feature = "s3")]
/// Ranged GETs running at once across all downloads to a file of a backend: connections, not
/// memory (each is written out as it arrives, [`storage_backend::SINK_BATCH`] at a time).
pub(crate) const RANGE_BUDGET: usize = 32;
#[cfg(feature = "s3")]
/// Ranged GETs in flight or waiting to be handed on across all streamed fetches (into an
/// unpacker) of a backend: at most this many [`STREAM_RANGE_SIZE`] bodies (24 MiB) are held in
/// memory for them, however many unpacking slots share them.
pub(crate) const STREAM_RANGE_BUDGET: usize = 12;

#[cfg(feature = "s3")]
/// `{dir}/.{name}.partial`: where a download is written until verified.
fn partial_path(dest: &Path) -> PathBuf {
    dest.with_file_name(format!(".{}.partial", file_name(dest)))
}

#[cfg(feature = "s3")]
/// Beside the partial file: the `ETag` of the object it holds the start of.
fn etag_path(partial: &Path) -> PathBuf {
    let mut p = partial.as_os_str().to_owned();
    p.push(".etag");
    PathBuf::from(p)
}

/// The last component of `path`, for naming its temporary files.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes `data` to `path` through a temporary file and a rename.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp =
        file_tree::temp_file_in(dir, &file_name(path)).map_err(|e| FileError::write(path, e))?;
    temp.write_all(data)
        .map_err(|e| FileError::write(path, e))?;
    temp.persist(path)
        .map_err(|e| FileError::write(path, e.error))?;
    Ok(())
}

/// The SHA-256 an artifact must have, and where it was recorded (for the user: the sidecar
/// named, or the object's metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// The digest, lowercase hex.
    pub(crate) sha256: String,
    /// Where it was recorded.
    pub(crate) source: String,
}

/// Copies `src` to `dest` through a temporary file, hashing on the way; with `expected`, a
/// different digest is an error naming where it was recorded, and `dest` is left untouched.
/// Returns the digest.
pub(crate) async fn copy_verified(
    src: &Path,
    dest: &Path,
    expected: Option<Recorded>,
) -> Result<String, Error> {
    let (src, dest) = (src.to_path_buf(), dest.to_path_buf());
    storage_backend::blocking(move || {
        let dir = dest.parent().unwrap_or(Path::new("."));
        fs_err::create_dir_all(dir).map_err(|e| FileError::write(dir, e))?;
        let mut input = fs_err::File::open(&src).map_err(|e| FileError::read(&src, e))?;
        let mut temp = file_tree::temp_file_in(dir, &file_name(&dest))
            .map_err(|e| FileError::write(&dest, e))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0; 1 << 20];
        loop {
            let n = input.read(&mut buf).map_err(|e| FileError::read(&src, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            temp.write_all(&buf[..n])
                .map_err(|e| FileError::write(&dest, e))?;
        }
        let actual = hex::encode(hasher.finalize());
        if let Some(expected) = expected
            && expected.sha256 != actual
        {
            return Err(Error::ChecksumMismatch {
                location: src.display().to_string(),
                recorded_in: expected.source,
                expected: expected.sha256,
                actual,
            });
        }
        // Closed, not synced: the copy can be made again, and the rename alone makes the
        // whole file appear at once.
        temp.persist(&dest)
            .map_err(|e| FileError::write(&dest, e.error))?;
        Ok(actual)
    })
    .await
}

#[cfg(feature = "s3")]
/// Feeds the file at `path`, up to its first `limit` bytes, to `verifier`; the bytes fed.
fn feed_prefix(
    path: &Path,
    limit: u64,
    mut verifier: storage_backend::Verifier,
) -> Result<(storage_backend::Verifier, u64), Error> {
    let mut file = fs_err::File::open(path)
        .map_err(|e| FileError::read(path, e))?
        .take(limit);
    let mut buf = vec![0; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| FileError::read(path, e))?;
        if n == 0 {
            let len = verifier.received();
            return Ok((verifier, len));
        }
        verifier.update(&buf[..n]);
    }
}

impl ArtifactBackend {
    /// The SHA-256 artifact `key` must have: the digest in its `.sha256sum` sidecar, else
    /// (in S3) the one its upload recorded in the object's metadata
    /// ([`storage_backend::SHA256_METADATA_KEY`]), so that an archive whose sidecar never
    /// arrived (an upload stopped in between) can still be verified. `None` with neither.
    pub async fn expected_sha256(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self.recorded_sha256(key).await?.map(|r| r.sha256))
    }

    /// [`ArtifactBackend::expected_sha256`] with where it was recorded.
    async fn recorded_sha256(&self, key: &str) -> Result<Option<Recorded>, Error> {
        if let Some(sha256) = self.sidecar_sha256(key).await? {
            return Ok(Some(Recorded {
                sha256,
                source: format!("the sidecar `{}`", self.shown_location(&sidecar_key(key))),
            }));
        }
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => {
                let loc = b.root.artifact(key);
                let Some(head) = b.storage().head_object(&loc).await? else {
                    return Err(Error::NotFound(loc.s3_uri()));
                };
                match head.sha256 {
                    None => Ok(None),
                    Some(recorded) => storage_backend::parse_sha256sum(&recorded)
                        .map(|sha256| {
                            Some(Recorded {
                                sha256,
                                source: format!(
                                    "the object's metadata `{}` (it has no .sha256sum sidecar)",
                                    storage_backend::SHA256_METADATA_KEY
                                ),
                            })
                        })
                        .ok_or_else(|| {
                            Error::InvalidSidecar(format!(
                                "{} (metadata `{}`)",
                                loc.s3_uri(),
                                storage_backend::SHA256_METADATA_KEY
                            ))
                        }),
                }
            }
            ArtifactBackend::Local(_) => Ok(None),
        }
    }

    /// [`ArtifactBackend::expected_sha256`], where having none is [`Error::Unverifiable`]
    /// unless unverified archives are allowed.
    pub(crate) async fn required_sha256(&self, key: &str) -> Result<Option<Recorded>, Error> {
        let expected = self.recorded_sha256(key).await?;
        if expected.is_some() || self.allows_unverified() {
            return Ok(expected);
        }
        Err(match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(_) => Error::Unverifiable(self.location(key).s3_uri()),
            ArtifactBackend::Local(b) => {
                let path = b.base_path.join(key).display().to_string();
                if b.base_path.join(key).is_file() {
                    Error::Unverifiable(path)
                } else {
                    Error::NotFound(path)
                }
            }
        })
    }

    /// The digest in the artifact's `.sha256sum` sidecar, `None` without one.
    async fn sidecar_sha256(&self, key: &str) -> Result<Option<String>, Error> {
        let text = match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b
                .storage()
                .get_small(&b.root.artifact(&sidecar_key(key)))
                .await?
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
            ArtifactBackend::Local(b) => {
                let path = b.base_path.join(sidecar_key(key));
                if path.is_file() {
                    let read = storage_backend::blocking(move || {
                        fs_err::read_to_string(&path).map_err(|e| FileError::read(&path, e))
                    });
                    Some(read.await?)
                } else {
                    None
                }
            }
        };
        match text {
            None => Ok(None),
            Some(text) => storage_backend::parse_sha256sum(&text)
                .map(Some)
                .ok_or_else(|| Error::InvalidSidecar(self.shown_location(&sidecar_key(key)))),
        }
    }

    /// Downloads artifact `key` to `dest`: streamed to `.{name}.partial` beside it, hashed on
    /// the way, checked against the `.sha256sum` sidecar when there is one, then renamed. The
    /// sidecar is written beside it as `{key}.sha256sum`. A partial file left by an interrupted
    /// download of the same object is resumed with a ranged GET and the whole is verified. On a
    /// mismatch nothing is left at `dest` (or in the partial file).
    ///
    /// From S3, a download whose body was cut short after the storage retries is started
    /// again from scratch, up to the client's attempts; one whose digest does not match, once.
    pub async fn download_artifact(&self, key: &str, dest: &Path) -> Result<Downloaded, Error> {
        self.again_if_damaged(key, || self.download_artifact_once(key, dest))
            .await
    }

    /// Runs `fetch` of artifact `key` again while it fails with bytes that arrived damaged,
    /// through the S3 client's retries (once for a local backend). A complete body whose
    /// digest does not match is fetched again once only: a second mismatch is the object's,
    /// not the transfer's.
    pub(crate) async fn again_if_damaged<T, F, Fut>(
        &self,
        #[cfg_attr(not(feature = "s3"), expect(unused_variables, reason = "S3 names it"))]
        key: &str,
        mut fetch: F,
    ) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => {
                // Bytes that arrived whole but wrong (a digest that does not match, an archive
                // that does not decode) are fetched again once: the same bytes again mean the
                // object itself is so, and asking more would only repeat it.
                let damaged = std::sync::atomic::AtomicU32::new(0);
                let retryable = |e: &Error| {
                    if e.is_wrong_content() {
                        damaged.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0
                    } else {
                        e.arrived_damaged()
                    }
                };
                b.client
                    .retry(&self.location(key).s3_uri(), retryable, fetch)
                    .await
            }
            ArtifactBackend::Local(_) => fetch().await,
        }
    }

    async fn download_artifact_once(&self, key: &str, dest: &Path) -> Result<Downloaded, Error> {
        let dir = dest.parent().unwrap_or(Path::new(".")).to_path_buf();
        fs_err::create_dir_all(&dir).map_err(|e| FileError::write(&dir, e))?;
        let expected = self.required_sha256(key).await?;
        let downloaded = match self {
            ArtifactBackend::Local(b) => {
                let src = b.base_path.join(key);
                if !src.is_file() {
                    return Err(Error::NotFound(src.display().to_string()));
                }
                let size = fs_err::metadata(&src)
                    .map_err(|e| FileError::read(&src, e))?
                    .len();
                let id = b.reporter.on_transfer_start(key, size);
                let sha256 = copy_verified(&src, dest, expected.clone()).await?;
                b.reporter.on_transfer_progress(id, size);
                b.reporter.on_transfer_complete(id);
                Downloaded {
                    path: dest.to_path_buf(),
                    sha256,
                    verified: expected.is_some(),
                    fetched: size,
                    resumed: 0,
                }
            }
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => self.download_s3(b, key, dest, expected.as_ref()).await?,
        };
        if let Some(Recorded { sha256: sha, .. }) = &expected {
            write_atomic(
                &dir.join(sidecar_key(key)),
                format!("{sha}  {key}\n").as_bytes(),
            )?;
        }
        Ok(downloaded)
    }

    #[cfg(feature = "s3")]
    async fn download_s3(
        &self,
        b: &crate::S3Artifacts,
        key: &str,
        dest: &Path,
        expected: Option<&Recorded>,
    ) -> Result<Downloaded, Error> {
        let loc = b.root.artifact(key);
        let (size, etag) = head_version(b, &loc).await?;
        let partial = partial_path(dest);
        let etag_file = etag_path(&partial);

        let verifier = storage_backend::Verifier::new(
            loc.s3_uri(),
            expected.map_or(storage_backend::Expected::Nothing, |r| {
                storage_backend::Expected::Sha256(r.sha256.clone())
            }),
            size,
        )
        .computing_sha256();
        let (mut verifier, resumed) = resume_point(&partial, &etag_file, &etag, verifier).await?;
        if resumed > 0 {
            tracing::info!("Resuming {} at byte {resumed} of {size}", loc.s3_uri());
        } else {
            write_atomic(&etag_file, etag.as_bytes())?;
        }
        let id = b.reporter.on_transfer_start(key, size);
        b.reporter.on_transfer_progress(id, resumed);

        if resumed < size {
            let on_bytes = |n| b.reporter.on_transfer_progress(id, n);
            verifier = to_file::download_into(
                b,
                &loc,
                (resumed, size),
                &etag,
                &partial,
                verifier,
                &on_bytes,
            )
            .await?;
        }
        let prefix_file = to_file::prefix_path(&partial);
        // Written and closed, not synced: the rename makes the complete file appear at once
        // for every process, as `tar -x` and other S3 clients leave theirs; forcing each
        // archive to the disk before the next would make the download wait for the disk.
        let actual = match verifier.finish() {
            Ok(checked) => checked.sha256.unwrap_or_default(),
            Err(e) => {
                let _ = fs_err::remove_file(&partial);
                let _ = fs_err::remove_file(&etag_file);
                let _ = fs_err::remove_file(&prefix_file);
                return Err(match e {
                    storage_backend::Error::Incomplete {
                        location,
                        received,
                        expected,
                    } => Error::Truncated {
                        location,
                        received,
                        expected,
                    },
                    storage_backend::Error::DigestMismatch {
                        location,
                        expected: sha256,
                        actual,
                        ..
                    } => Error::ChecksumMismatch {
                        location,
                        recorded_in: expected.map(|r| r.source.clone()).unwrap_or_default(),
                        expected: sha256,
                        actual,
                    },
                    other => Error::from(other),
                });
            }
        };
        fs_err::rename(&partial, dest).map_err(|e| FileError::write(dest, e))?;
        let _ = fs_err::remove_file(&etag_file);
        let _ = fs_err::remove_file(&prefix_file);
        b.reporter.on_transfer_complete(id);
        Ok(Downloaded {
            path: dest.to_path_buf(),
            sha256: actual,
            verified: expected.is_some(),
            fetched: size - resumed,
            resumed,
        })
    }
}

#[cfg(feature = "s3")]
/// Where an earlier partial download of the same object version (same `ETag`) ended, with
/// what it holds fed to `verifier`; `(verifier, 0)` when there is nothing to reuse.
async fn resume_point(
    partial: &Path,
    etag_file: &Path,
    etag: &str,
    verifier: storage_backend::Verifier,
) -> Result<(storage_backend::Verifier, u64), Error> {
    let etag_path = etag_file.to_path_buf();
    let stored_etag =
        storage_backend::blocking(move || fs_err::read_to_string(etag_path).ok()).await;
    if partial.is_file() && !etag.is_empty() && stored_etag.as_deref() == Some(etag) {
        let p = partial.to_path_buf();
        let fresh = verifier.clone();
        let (fed, len) = storage_backend::blocking(move || {
            feed_prefix(&p, to_file::recorded_prefix(&p).unwrap_or(u64::MAX), fresh)
        })
        .await?;
        if len <= verifier.size() {
            return Ok((fed, len));
        }
    }
    Ok((verifier, 0))
}

#[cfg(feature = "s3")]
/// The bytes `start..end` of `loc` (only of version `etag`) as parallel ranged GETs of
/// [`STREAM_RANGE_SIZE`] (storage-backend's ranged reader), yielded in order, within the
/// backend's [`STREAM_RANGE_BUDGET`].
fn ranged_parts<'a>(
    b: &'a crate::S3Artifacts,
    loc: &'a StorageLocation,
    (start, end): (u64, u64),
    etag: &'a str,
    on_bytes: &'a (dyn Fn(u64) + Send + Sync),
) -> impl futures::Stream<Item = Result<Vec<bytes::Bytes>, Error>> + 'a {
    use futures::StreamExt as _;
    // A range takes a slot of the budget before it starts, in order, and gives it back when
    // its part is handed on: the bodies held in memory across all streamed fetches stay
    // bounded.
    let slots = &b.stream_slots;
    let plan = storage_backend::RangePlan {
        range_size: STREAM_RANGE_SIZE,
        in_flight: RANGE_CONCURRENCY,
        budget: Some(slots.clone()),
    };
    b.storage()
        .ranged_parts(loc, (start, end), etag, plan, on_bytes)
        .map(move |part| part.map_err(|e| Error::from_s3(e, loc)))
}

#[cfg(feature = "s3")]
/// Bytes `start..end` of `loc` (only of version `etag`): parallel ranged GETs when more than
/// [`PARALLEL_THRESHOLD`] is left, else one GET; in order either way. `on_bytes` hears of the
/// bytes as they arrive.
pub(crate) fn object_parts<'a>(
    b: &'a crate::S3Artifacts,
    loc: &'a StorageLocation,
    (start, end): (u64, u64),
    etag: &'a str,
    on_bytes: &'a (dyn Fn(u64) + Send + Sync),
) -> std::pin::Pin<Box<dyn futures::Stream<Item = Result<Vec<bytes::Bytes>, Error>> + Send + 'a>> {
    if end - start > PARALLEL_THRESHOLD {
        Box::pin(ranged_parts(b, loc, (start, end), etag, on_bytes))
    } else {
        Box::pin(futures::stream::once(single_get(
            b,
            loc,
            (start, end),
            etag,
            on_bytes,
        )))
    }
}

#[cfg(feature = "s3")]
/// Bytes `start..end` of a small object in one ranged GET, as one part.
async fn single_get(
    b: &crate::S3Artifacts,
    loc: &StorageLocation,
    (start, end): (u64, u64),
    etag: &str,
    on_bytes: &(dyn Fn(u64) + Send + Sync),
) -> Result<Vec<bytes::Bytes>, Error> {
    if start == end {
        return Ok(Vec::new());
    }
    b.storage()
        .read_range(loc, (start, end - 1), etag, on_bytes)
        .await
        .map_err(|e| Error::from_s3(e, loc))
}

#[cfg(feature = "s3")]
/// The size and `ETag` of `loc`; a missing object is [`Error::NotFound`].
pub(crate) async fn head_version(
    b: &crate::S3Artifacts,
    loc: &StorageLocation,
) -> Result<(u64, String), Error> {
    match b.storage().head_object(loc).await? {
        Some(head) => Ok((head.size, head.etag)),
        None => Err(Error::NotFound(loc.s3_uri())),
    }
}
