//! What an archive holds, from its member index (`artifacts::member_index`): read from the
//! archive's end only, trusted through the digest recorded with the object.

use std::path::Path;
use std::sync::Arc;

use artifacts::Layout;
use artifacts::member_index::MemberIndex;
#[cfg(feature = "s3")]
use artifacts::member_index::{FIRST_TAIL, IndexError};
use file_tree::FileError;
use futures::StreamExt as _;

use crate::{ArtifactBackend, Error, FlattenIndex};

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
    /// merged into `output_dir` as a flattened fetch merges), reading only the frames that hold them: on S3 one ranged GET
    /// per run of consecutive frames, each frame checked against the SHA-256 the index
    /// records for it before it is decoded. An archive without a member index (written by
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
        let damaged = |source| Error::MemberIndex {
            archive: shown.clone(),
            source,
        };
        // The runs of frames, read and checked, then decoded: (content offset, bytes).
        let index_ref = &index;
        let etag = etag.as_str();
        let fetched: Vec<(u64, Vec<u8>, u64)> = futures::stream::iter(runs.iter().cloned())
            .map(|run| async move {
                let first = &index_ref.frames[run.start];
                let last = &index_ref.frames[run.end - 1];
                let (from, to) = (first.offset, last.offset + last.compressed);
                let bytes = self.read_archive_range(key, (from, to), etag).await?;
                let frames = index_ref.frames[run].to_vec();
                let content_offset = first.content_offset;
                storage_backend::blocking(move || {
                    let mut content = Vec::new();
                    for f in &frames {
                        let at = usize::try_from(f.offset - from).unwrap_or(usize::MAX);
                        let len = usize::try_from(f.compressed).unwrap_or(usize::MAX);
                        let compressed = bytes.get(at..at.saturating_add(len)).unwrap_or_default();
                        content.extend_from_slice(&f.decode(compressed)?);
                    }
                    Ok((content_offset, content, to - from))
                })
                .await
                .map_err(damaged)
            })
            .buffered(8)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<_, Error>>()?;
        let bytes = fetched.iter().map(|(_, _, n)| n).sum();
        let content: Vec<(u64, Vec<u8>)> = fetched.into_iter().map(|(at, c, _)| (at, c)).collect();
        let tar = index
            .tar_of(&selection.members, &content)
            .map_err(damaged)?;
        drop(content);
        let place = self.placing(key, output_dir, flatten);
        storage_backend::blocking(move || place.unpack(&mut &tar[..])).await?;
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
        let format = artifacts::ArchiveFormat::from_file_name(key)
            .ok_or_else(|| Error::Artifacts(artifacts::Error::UnknownArchiveFormat(key.into())))?;
        fs_err::create_dir_all(output_dir).map_err(|e| FileError::write(output_dir, e))?;
        let spool = file_tree::temp_dir_in(output_dir, crate::extract_dir_name(key))
            .map_err(|e| FileError::write(output_dir, e))?;
        let archive = spool.path().join(key);
        let downloaded = self.download_artifact(key, &archive).await?;
        // `spool` goes when this function returns, once the archive is closed (Windows keeps
        // a directory holding an open file).
        let place = self.placing(key, output_dir, flatten);
        let (globs, key_owned) = (globs.to_vec(), key.to_owned());
        let selection = storage_backend::blocking(move || {
            let read_error = |e| artifacts::Error::archive_read(&key_owned, None, e);
            let open =
                || -> Result<_, Error> {
                    let file =
                        fs_err::File::open(&archive).map_err(|e| FileError::read(&archive, e))?;
                    Ok(artifacts::decoder(format, std::io::BufReader::new(file))
                        .map_err(read_error)?)
                };
            let index = artifacts::member_index::index_tar_stream(open()?).map_err(read_error)?;
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
                open()?,
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
            bytes: downloaded.fetched,
            indexed: false,
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
