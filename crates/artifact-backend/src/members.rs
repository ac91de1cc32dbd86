//! What an archive holds, from its member index (`artifacts::member_index`): read from the
//! archive's end only, trusted through the digest recorded with the object.

use artifacts::member_index::MemberIndex;
#[cfg(feature = "s3")]
use artifacts::member_index::{FIRST_TAIL, IndexError};

use crate::{ArtifactBackend, Error};

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
                        Ok((index, _)) => return Ok(Some(index)),
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
                Ok(found.map(|(index, _)| index))
            }
        }
    }
}
