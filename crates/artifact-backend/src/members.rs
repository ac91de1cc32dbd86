//! What an archive holds, from its member index (`artifacts::member_index`): read from the
//! archive's end only, trusted through the digest recorded with the object.

use std::path::Path;
use std::sync::Arc;

use artifacts::Layout;
#[cfg(feature = "s3")]
use artifacts::member_index::{FIRST_TAIL, IndexError};
use artifacts::member_index::{IndexedFrame, IndexedMember, MemberIndex};
use file_tree::FileError;
use futures::StreamExt as _;

use crate::{ArtifactBackend, Error, FlattenIndex};

/// The largest ranged read of a member fetch: small enough that a member's few frames spread
/// over several connections (behind a per-connection limit, the number of connections is the
/// speed).
const MEMBER_RANGE_SIZE: u64 = 1 << 20;
/// Ranged reads of a member fetch in flight or waiting to be handed on (on S3 also within the
/// backend's budget of streamed reads).
const MEMBER_RANGES: usize = 12;

impl ArtifactBackend {
    /// The member index of artifact `key`, reading only the archive's end: on S3 one HEAD and
    /// a ranged GET of its tail (larger once if the index needs it), the index checked against
    /// the digest recorded in the object's metadata; in a local staging directory, the file's
    /// end. `None` when the archive has no index (written by another tool, an xz archive) or,
    /// on S3, none whose digest was recorded: such an archive is read whole.
    ///
    /// # Errors
    /// [`Error::NotFound`] when there is no such artifact; [`Error::MemberIndex`] naming the
    /// archive when its index is damaged or does not match the recorded digest.
    pub async fn member_index(&self, key: &str) -> Result<Option<MemberIndex>, Error> {
        Ok(self.versioned_index(key).await?.map(|(index, _)| index))
    }

    /// [`ArtifactBackend::member_index`] with the `ETag` of the object it was read from (empty
    /// locally), which the frames are then read from.
    async fn versioned_index(&self, key: &str) -> Result<Option<(MemberIndex, String)>, Error> {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => {
                let loc = b.root.artifact(key);
                let storage = b.storage();
                let Some(head) = storage
                    .head_object(&loc)
                    .await
                    .map_err(|e| Error::from_s3(e, &loc))?
                else {
                    return Err(Error::NotFound(loc.s3_uri()));
                };
                let Some(expected) = head
                    .metadata
                    .get(artifacts::member_index::INDEX_SHA256_METADATA_KEY)
                else {
                    return Ok(None);
                };
                let mut want = FIRST_TAIL.min(head.size);
                loop {
                    let first = head.size - want;
                    let parts = storage
                        .read_range(&loc, (first, head.size - 1), &head.etag, &|_| {})
                        .await
                        .map_err(|e| Error::from_s3(e, &loc))?;
                    let tail: Vec<u8> = parts.concat();
                    match MemberIndex::from_tail(&tail, head.size, Some(expected)) {
                        Ok((index, _)) => return Ok(Some((index, head.etag))),
                        Err(IndexError::NeedTail(more)) if more > want => want = more,
                        Err(source) => {
                            return Err(Error::MemberIndex {
                                archive: loc.s3_uri(),
                                source,
                            });
                        }
                    }
                }
            }
            ArtifactBackend::Local(b) => {
                let path = b.base_path.join(key);
                if !path.is_file() {
                    return Err(Error::NotFound(path.display().to_string()));
                }
                let at = path.clone();
                let found =
                    storage_backend::blocking(move || artifacts::member_index::read_from_file(&at))
                        .await
                        .map_err(|e| Error::File(file_tree::FileError::read(&path, e)))?;
                Ok(found.map(|(index, _)| (index, String::new())))
            }
        }
    }

    /// Writes the members of artifact `key` that `globs` select ([`MemberIndex::select`]:
    /// with the members their links lead to) into `output_dir` as a fetch with `layout`
    /// would write them (into `{output_dir}/{artifact}`, replaced by them; with `flatten`,
    /// merged into `output_dir` as a flattened fetch merges), reading only the frames that
    /// hold them: on S3 as parallel ranged GETs of at most 1 MiB (within the backend's budget
    /// of streamed reads), each frame checked against the SHA-256 the index records for it
    /// before it is decoded, and the members unpacked as the frames arrive (memory stays
    /// bounded however many are selected). An archive without a member index (written by
    /// another tool, xz) is downloaded whole and verified, and only the selected members
    /// unpacked.
    ///
    /// # Errors
    /// [`Error::MemberIndex`] naming the archive when its index or a frame is not what the
    /// index says (a frame's message names it); as the fetches otherwise.
    pub async fn fetch_members(
        &self,
        key: &str,
        globs: &[String],
        output_dir: &Path,
        flatten: Option<Arc<FlattenIndex>>,
    ) -> Result<MembersFetched, Error> {
        let Some((index, etag)) = self.versioned_index(key).await? else {
            return self
                .fetch_members_whole(key, globs, output_dir, flatten)
                .await;
        };
        let selection = index.select(globs);
        if selection.members.is_empty() {
            // Nothing of this archive is written.
            return Ok(MembersFetched {
                key: key.to_owned(),
                members: 0,
                unmatched: selection.unmatched,
                frames: (0, index.frames.len()),
                bytes: 0,
                indexed: true,
            });
        }
        let runs = index.frame_runs(&selection.members);
        let shown = self.shown_location(key);
        // The frames' bytes as ranged reads of at most `MEMBER_RANGE_SIZE`, several in flight,
        // handed on in order; each frame, once whole, goes to the unpacker, which checks it
        // against the index and decodes it. At most `MEMBER_RANGES` reads and two frames are
        // held in memory, whatever is selected.
        let pieces: Vec<(u64, u64)> = runs
            .iter()
            .flat_map(|run| {
                let from = index.frames[run.start].offset;
                let last = &index.frames[run.end - 1];
                let to = last.offset + last.compressed;
                (from..to)
                    .step_by(usize::try_from(MEMBER_RANGE_SIZE).unwrap_or(usize::MAX))
                    .map(move |at| (at, (at + MEMBER_RANGE_SIZE).min(to)))
            })
            .collect();
        let bytes = pieces.iter().map(|(from, to)| to - from).sum();
        let (frames_tx, mut frames_rx) = tokio::sync::mpsc::channel::<(IndexedFrame, Vec<u8>)>(1);
        let wanted: Vec<_> = runs
            .iter()
            .flat_map(|run| index.frames[run.clone()].iter().cloned())
            .collect();
        let producer = self.send_frames(key, etag, pieces, wanted, frames_tx);
        // The first frame that is not what the index says, kept to be named.
        let damage = Arc::new(std::sync::Mutex::new(None));
        let tar_frames = {
            let damage = damage.clone();
            std::iter::from_fn(move || frames_rx.blocking_recv()).map(move |(f, compressed)| {
                f.decode(&compressed)
                    .map(|content| (f.content_offset, content))
                    .map_err(|e| {
                        let message = e.to_string();
                        *damage
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                        std::io::Error::new(std::io::ErrorKind::InvalidData, message)
                    })
            })
        };
        let damaged = |source| Error::MemberIndex {
            archive: shown.clone(),
            source,
        };
        let mut tar = index
            .member_tar(&selection.members, tar_frames)
            .map_err(damaged)?;
        let place = self.placing(key, output_dir, flatten);
        let unpacker = storage_backend::blocking(move || place.unpack(&mut tar));
        let (read, placed) = futures::join!(producer, unpacker);
        read?;
        if let Err(e) = placed {
            let found = damage
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            return Err(found.map_or(e, damaged));
        }
        Ok(MembersFetched {
            key: key.to_owned(),
            members: selection.members.len(),
            unmatched: selection.unmatched,
            frames: (
                runs.iter().map(ExactSizeIterator::len).sum(),
                index.frames.len(),
            ),
            bytes,
            indexed: true,
        })
    }

    /// Reads `pieces` (ranges of archive `key`, version `etag`) as parallel ranged reads,
    /// handed on in order, and sends each of the `wanted` frames they hold to `frames` once it
    /// is whole. Stops early, without an error, when `frames`' receiver is gone (the unpacker
    /// stopped: its error is the one to tell).
    async fn send_frames(
        &self,
        key: &str,
        etag: String,
        pieces: Vec<(u64, u64)>,
        wanted: Vec<IndexedFrame>,
        frames: tokio::sync::mpsc::Sender<(IndexedFrame, Vec<u8>)>,
    ) -> Result<(), Error> {
        let etag = etag.as_str();
        let mut reads = futures::stream::iter(pieces)
            .map(|range| async move {
                let permit = self.range_permit().await;
                let bytes = self.read_archive_range(key, range, etag).await?;
                Ok::<_, Error>((range.0, bytes, permit))
            })
            .buffered(MEMBER_RANGES);
        let mut wanted = wanted.into_iter().peekable();
        let mut frame = Vec::new();
        while let Some(read) = reads.next().await {
            let (mut at, bytes, _permit) = read?;
            let mut rest = &bytes[..];
            while let Some(f) = wanted.peek() {
                if at < f.offset {
                    // A run's first frame starts where its read starts.
                    break;
                }
                let need = usize::try_from(f.offset + f.compressed - at).unwrap_or(usize::MAX);
                let take = need.min(rest.len());
                frame.extend_from_slice(&rest[..take]);
                (at, rest) = (at + take as u64, &rest[take..]);
                if take < need {
                    break;
                }
                let f = wanted.next().expect("peeked");
                if frames.send((f, std::mem::take(&mut frame))).await.is_err() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// [`ArtifactBackend::fetch_members`] of an archive without a member index: downloaded
    /// whole (verified) beside the output, then read twice, to find the members and to unpack
    /// only those.
    async fn fetch_members_whole(
        &self,
        key: &str,
        globs: &[String],
        output_dir: &Path,
        flatten: Option<Arc<FlattenIndex>>,
    ) -> Result<MembersFetched, Error> {
        let spooled = self.spool_whole(key, output_dir).await?;
        let fetched = spooled.fetched;
        let place = self.placing(key, output_dir, flatten);
        let globs = globs.to_vec();
        let selection = storage_backend::blocking(move || {
            let index = spooled.scan()?;
            let selection = index.select(&globs);
            if selection.members.is_empty() {
                // Nothing of this archive is written.
                return Ok(selection);
            }
            let spans: Vec<(u64, u64)> = index
                .members
                .first()
                .into_iter()
                .chain(selection.members.iter().map(|&i| &index.members[i]))
                .map(|m| (m.start, m.end))
                .collect();
            place.unpack(&mut artifacts::member_index::SpanReader::new(
                spooled.open()?,
                spans,
            ))?;
            Ok::<_, Error>(selection)
        })
        .await?;
        Ok(MembersFetched {
            key: key.to_owned(),
            members: selection.members.len(),
            unmatched: selection.unmatched,
            frames: (0, 0),
            bytes: fetched,
            indexed: false,
        })
    }

    /// The members of artifact `key`, and whether they come from its member index: from the
    /// index when it has one (only the archive's end is read, as by
    /// [`ArtifactBackend::member_index`]), else from the whole archive, downloaded and verified
    /// into a temporary directory of the system's and read once.
    ///
    /// # Errors
    /// As [`ArtifactBackend::member_index`], and as a whole download of the archive.
    pub async fn archive_members(&self, key: &str) -> Result<(Vec<IndexedMember>, bool), Error> {
        if let Some(index) = self.member_index(key).await? {
            return Ok((index.members, true));
        }
        let parent = std::env::temp_dir();
        let spooled = self.spool_whole(key, &parent).await?;
        let index = storage_backend::blocking(move || spooled.scan()).await?;
        Ok((index.members, false))
    }

    /// Archive `key` downloaded whole (verified) into a spool directory inside `parent`
    /// (made when missing).
    async fn spool_whole(&self, key: &str, parent: &Path) -> Result<Spooled, Error> {
        let format = artifacts::ArchiveFormat::from_file_name(key)
            .ok_or_else(|| Error::Artifacts(artifacts::Error::UnknownArchiveFormat(key.into())))?;
        let (at, name) = (
            parent.to_path_buf(),
            crate::extract_dir_name(key).to_owned(),
        );
        let dir = storage_backend::blocking(move || {
            fs_err::create_dir_all(&at).map_err(|e| FileError::write(&at, e))?;
            file_tree::temp_dir_in(&at, &name).map_err(|e| FileError::write(&at, e))
        })
        .await?;
        let archive = dir.path().join(key);
        let downloaded = self.download_artifact(key, &archive).await?;
        Ok(Spooled {
            key: key.to_owned(),
            format,
            archive,
            fetched: downloaded.fetched,
            _dir: dir,
        })
    }

    /// Where the chosen members of artifact `key` go in `output_dir`.
    fn placing(&self, key: &str, output_dir: &Path, flatten: Option<Arc<FlattenIndex>>) -> Placing {
        Placing {
            key: key.to_owned(),
            output: output_dir.to_path_buf(),
            records: self.records_dir(output_dir),
            flatten,
        }
    }

    /// A slot of the backend's budget of streamed ranged reads (on S3), held until the bytes
    /// read in it are handed on.
    #[cfg_attr(
        not(feature = "s3"),
        expect(clippy::unused_async, reason = "S3's slots are awaited")
    )]
    async fn range_permit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => b.stream_slots.clone().acquire_owned().await.ok(),
            ArtifactBackend::Local(_) => None,
        }
    }

    /// Bytes `from..to` of archive `key`: a ranged GET of the version `etag` on S3, a read of
    /// the file locally.
    async fn read_archive_range(
        &self,
        key: &str,
        (from, to): (u64, u64),
        #[cfg_attr(not(feature = "s3"), expect(unused_variables, reason = "S3 pins it"))]
        etag: &str,
    ) -> Result<Vec<u8>, Error> {
        match self {
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => {
                let loc = b.root.artifact(key);
                let parts = b
                    .storage()
                    .read_range(&loc, (from, to - 1), etag, &|_| {})
                    .await
                    .map_err(|e| Error::from_s3(e, &loc))?;
                Ok(parts.concat())
            }
            ArtifactBackend::Local(b) => {
                let path = b.base_path.join(key);
                storage_backend::blocking(move || {
                    use std::io::{Read as _, Seek as _};
                    let mut file =
                        fs_err::File::open(&path).map_err(|e| FileError::read(&path, e))?;
                    file.seek(std::io::SeekFrom::Start(from))
                        .map_err(|e| FileError::read(&path, e))?;
                    let mut bytes = vec![0; usize::try_from(to - from).unwrap_or(0)];
                    file.read_exact(&mut bytes)
                        .map_err(|e| FileError::read(&path, e))?;
                    Ok(bytes)
                })
                .await
            }
        }
    }
}

/// What [`ArtifactBackend::fetch_members`] did with one archive.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MembersFetched {
    /// The archive's file name.
    pub key: String,
    /// Members written (the manifest not counted).
    pub members: usize,
    /// The globs that matched nothing in it.
    pub unmatched: Vec<String>,
    /// Frames read, and the archive's frames.
    pub frames: (usize, usize),
    /// Compressed bytes read (the index's tail not counted).
    pub bytes: u64,
    /// Whether the archive had a member index (else it was downloaded whole).
    pub indexed: bool,
}

/// Where an artifact's chosen members go: merged into the output (flattened), or replacing
/// `{output}/{artifact}`.
struct Placing {
    key: String,
    output: std::path::PathBuf,
    records: Option<std::path::PathBuf>,
    flatten: Option<Arc<FlattenIndex>>,
}

impl Placing {
    /// Unpacks the tar stream `tar` (the manifest and the chosen members) beside the output,
    /// then puts it in place.
    fn unpack(self, tar: &mut dyn std::io::Read) -> Result<(), Error> {
        let output = &self.output;
        fs_err::create_dir_all(output).map_err(|e| FileError::write(output, e))?;
        let temp = file_tree::temp_dir_in(output, crate::extract_dir_name(&self.key))
            .map_err(|e| FileError::write(output, e))?;
        let layout = if self.flatten.is_some() {
            Layout::Flatten
        } else {
            Layout::Full
        };
        artifacts::extract_artifact(&self.key, tar, temp.path(), layout)?;
        match &self.flatten {
            Some(index) => index.merge_in(temp.path(), output, &self.key),
            None => {
                crate::fetch::replace_copy(temp, output, &self.key, self.records.as_deref(), None)
                    .map(drop)
            }
        }
    }
}

/// An archive downloaded whole into a spool directory, which goes when this is dropped (once
/// the archive is closed: Windows keeps a directory holding an open file).
struct Spooled {
    key: String,
    format: artifacts::ArchiveFormat,
    archive: std::path::PathBuf,
    /// Bytes downloaded.
    fetched: u64,
    _dir: tempfile::TempDir,
}

impl Spooled {
    /// The archive's tar stream.
    fn open(&self) -> Result<Box<dyn std::io::Read + Send>, Error> {
        let file =
            fs_err::File::open(&self.archive).map_err(|e| FileError::read(&self.archive, e))?;
        artifacts::decoder(self.format, std::io::BufReader::new(file))
            .map_err(|e| Error::Artifacts(artifacts::Error::archive_read(&self.key, None, e)))
    }

    /// Its members, read from the whole tar stream.
    fn scan(&self) -> Result<MemberIndex, Error> {
        artifacts::member_index::index_tar_stream(self.open()?)
            .map_err(|e| Error::Artifacts(artifacts::Error::archive_read(&self.key, None, e)))
    }
}
