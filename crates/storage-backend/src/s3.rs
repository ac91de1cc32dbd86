//! The S3 side of [`crate::StorageBackend`].

use std::path::Path;

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

/// Uploads, copies and lists objects in S3 (or an S3-compatible server).
#[derive(Clone)]
pub struct S3StorageBackend {
    client: S3Client,
    pub(crate) common: Common,
}

/// `Ok(None)` for a "not found" failure, the failure itself for any other.
fn absent_as_none<T>(result: Result<T, Error>) -> Result<Option<T>, Error> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.s3_kind() == Some(S3ErrorKind::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
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
        }
    }

    /// The client.
    pub fn client(&self) -> &S3Client {
        &self.client
    }

    fn sdk(&self) -> &aws_sdk_s3::Client {
        self.client.sdk()
    }

    /// The size and stored SHA-256 (from our metadata) of an object, `None` if absent.
    pub async fn head(
        &self,
        loc: &StorageLocation,
    ) -> Result<Option<(u64, Option<String>)>, Error> {
        let head = self
            .sdk()
            .head_object()
            .bucket(loc.bucket())
            .key(loc.relative_path())
            .send()
            .await
            .map_err(|e| Error::s3("head", loc.s3_uri(), e));
        let Some(head) = absent_as_none(head)? else {
            return Ok(None);
        };
        let sha = head
            .metadata()
            .and_then(|m| m.get(SHA256_METADATA_KEY))
            .cloned();
        let size = u64::try_from(head.content_length().unwrap_or(0)).unwrap_or(0);
        Ok(Some((size, sha)))
    }

    /// Reads a small object whole; `None` if absent.
    pub async fn get_small(&self, loc: &StorageLocation) -> Result<Option<Vec<u8>>, Error> {
        let out = self
            .sdk()
            .get_object()
            .bucket(loc.bucket())
            .key(loc.relative_path())
            .send()
            .await
            .map_err(|e| Error::s3("read", loc.s3_uri(), e));
        let Some(out) = absent_as_none(out)? else {
            return Ok(None);
        };
        let body = out.body.collect().await.map_err(|e| Error::S3 {
            op: "read",
            location: loc.s3_uri(),
            kind: S3ErrorKind::Other,
            source: Box::new(e),
        })?;
        Ok(Some(body.into_bytes().to_vec()))
    }

    /// The SHA-256 an object is known to have: our upload metadata, else its `.sha256sum`
    /// sidecar. `None` when the object or both records are absent.
    pub async fn stored_sha256(&self, loc: &StorageLocation) -> Result<Option<String>, Error> {
        let Some((_, meta)) = self.head(loc).await? else {
            return Ok(None);
        };
        if meta.is_some() {
            return Ok(meta);
        }
        let sidecar =
            StorageLocation::new(loc.bucket(), format!("{}.sha256sum", loc.relative_path()));
        Ok(self
            .get_small(&sidecar)
            .await?
            .and_then(|b| crate::parse_sha256sum(&String::from_utf8_lossy(&b))))
    }

    pub(crate) async fn upload_file(
        &self,
        source: &Path,
        dest: &StorageLocation,
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
            // Read and hash off the async workers.
            let path = source.to_path_buf();
            let (sha, data) = crate::blocking(move || {
                let data = fs_err::read(&path).map_err(|e| Error::Read { path, source: e })?;
                let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data));
                Ok::<_, Error>((sha, data))
            })
            .await?;
            (sha, Some(data))
        } else {
            (sha256_file(source).await?, None)
        };
        match self.common.options.overwrite {
            Overwrite::Always => {}
            Overwrite::Never => {
                if self.head(dest).await?.is_some() {
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
            let body = ByteStream::from(data);
            self.sdk()
                .put_object()
                .bucket(dest.bucket())
                .key(dest.relative_path())
                .content_type(content_type)
                .content_length(i64::try_from(size).unwrap_or(i64::MAX))
                .metadata(SHA256_METADATA_KEY, &sha)
                .body(body)
                .customize()
                .disable_payload_signing()
                .send()
                .await
                .map_err(|e| Error::s3("upload", dest.s3_uri(), e))?;
            self.common.reporter.on_transfer_progress(id, size);
        } else {
            self.multipart_upload(source, dest, size, content_type, &sha, id)
                .await?;
        }
        self.common.reporter.on_transfer_complete(id);
        Ok(Outcome::Transferred)
    }

    async fn multipart_upload(
        &self,
        source: &Path,
        dest: &StorageLocation,
        size: u64,
        content_type: &str,
        sha: &str,
        id: usize,
    ) -> Result<(), Error> {
        let created = self
            .sdk()
            .create_multipart_upload()
            .bucket(dest.bucket())
            .key(dest.relative_path())
            .content_type(content_type)
            .metadata(SHA256_METADATA_KEY, sha)
            .send()
            .await
            .map_err(|e| Error::s3("start multipart upload", dest.s3_uri(), e))?;
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
        self.finish_multipart(dest, &upload_id, result, dest.s3_uri())
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
        let body = ByteStream::read_from()
            .path(source)
            .offset(offset)
            .length(Length::Exact(len))
            .buffer_size(BODY_BUFFER)
            .build()
            .await
            .map_err(|e| Error::Read {
                path: source.to_path_buf(),
                source: std::io::Error::other(e),
            })?;
        let out = self
            .sdk()
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
            .map_err(|e| Error::s3("upload part", format!("{} part {number}", dest.s3_uri()), e))?;
        self.common.reporter.on_transfer_progress(id, len);
        Ok(CompletedPart::builder()
            .part_number(number)
            .set_e_tag(out.e_tag().map(str::to_owned))
            .build())
    }

    /// Completes a multipart upload with its parts, or aborts it when a part (or the
    /// completion) failed, so no orphaned upload is left behind.
    async fn finish_multipart(
        &self,
        dest: &StorageLocation,
        upload_id: &str,
        parts: Result<Vec<CompletedPart>, Error>,
        location: String,
    ) -> Result<(), Error> {
        let completed = match parts {
            Ok(mut parts) => {
                parts.sort_by_key(CompletedPart::part_number);
                self.sdk()
                    .complete_multipart_upload()
                    .bucket(dest.bucket())
                    .key(dest.relative_path())
                    .upload_id(upload_id)
                    .multipart_upload(
                        CompletedMultipartUpload::builder()
                            .set_parts(Some(parts))
                            .build(),
                    )
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| Error::s3("complete multipart upload", location, e))
            }
            Err(e) => Err(e),
        };
        if completed.is_err() {
            let abort = self
                .sdk()
                .abort_multipart_upload()
                .bucket(dest.bucket())
                .key(dest.relative_path())
                .upload_id(upload_id)
                .send()
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
        let Some((size, src_sha)) = self.head(src).await? else {
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
                if self.head(dst).await?.is_some() {
                    return Err(Error::AlreadyExists(dst.s3_uri()));
                }
            }
            Overwrite::IfDifferent => {
                let src_sha = match src_sha {
                    Some(sha) => Some(sha),
                    None => self.stored_sha256(src).await?,
                };
                if src_sha.is_some() && self.stored_sha256(dst).await? == src_sha {
                    return Ok(Outcome::Skipped);
                }
            }
        }
        let location = format!("{} -> {}", src.s3_uri(), dst.s3_uri());
        let copy_source = format!("{}/{}", src.bucket(), encode_key(src.relative_path()));
        let id = self.common.reporter.on_transfer_start(&dst.s3_uri(), size);
        if size <= MAX_SINGLE_COPY.min(self.common.options.multipart_copy_threshold) {
            self.sdk()
                .copy_object()
                .copy_source(&copy_source)
                .bucket(dst.bucket())
                .key(dst.relative_path())
                .metadata_directive(MetadataDirective::Copy)
                .send()
                .await
                .map_err(|e| Error::s3("copy", location, e))?;
        } else {
            self.multipart_copy(&copy_source, src, dst, size, id)
                .await?;
        }
        self.common.reporter.on_transfer_progress(id, size);
        self.common.reporter.on_transfer_complete(id);
        Ok(Outcome::Transferred)
    }

    async fn multipart_copy(
        &self,
        copy_source: &str,
        src: &StorageLocation,
        dst: &StorageLocation,
        size: u64,
        _id: usize,
    ) -> Result<(), Error> {
        let location = format!("{} -> {}", src.s3_uri(), dst.s3_uri());
        // Keep the source's content type and metadata.
        let head = self
            .sdk()
            .head_object()
            .bucket(src.bucket())
            .key(src.relative_path())
            .send()
            .await
            .map_err(|e| Error::s3("copy", location.clone(), e))?;
        let created = self
            .sdk()
            .create_multipart_upload()
            .bucket(dst.bucket())
            .key(dst.relative_path())
            .set_content_type(head.content_type().map(str::to_owned))
            .set_metadata(head.metadata().cloned())
            .send()
            .await
            .map_err(|e| Error::s3("start multipart copy", location.clone(), e))?;
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
                    let out = self
                        .sdk()
                        .upload_part_copy()
                        .bucket(dst.bucket())
                        .key(dst.relative_path())
                        .upload_id(upload_id)
                        .part_number(number)
                        .copy_source(copy_source)
                        .copy_source_range(format!("bytes={start}-{end}"))
                        .send()
                        .await
                        .map_err(|e| {
                            Error::s3("copy part", format!("{location} part {number}"), e)
                        })?;
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
        self.finish_multipart(dst, &upload_id, result, location)
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
        let mut pages = self
            .sdk()
            .list_objects_v2()
            .bucket(location.bucket())
            .prefix(&prefix)
            .into_paginator()
            .send();
        let mut out = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                Error::s3("list", format!("s3://{}/{prefix}", location.bucket()), e)
            })?;
            for object in page.contents() {
                let Some(key) = object.key() else { continue };
                let rel = key.strip_prefix(&prefix).unwrap_or(key);
                if rel.is_empty() || rel.ends_with('/') {
                    continue;
                }
                if include.is_empty() || include.iter().any(|p| fnmatch(p, rel)) {
                    out.push(StorageLocation::new(location.bucket(), key));
                }
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
                let probe = location.join(crate::PREFLIGHT_PROBE_KEY);
                let found = self.head(&probe).await;
                // A HEAD answers a missing bucket with a bare 404 too: ask the bucket.
                let found = match found {
                    Ok(None) => self
                        .sdk()
                        .head_bucket()
                        .bucket(location.bucket())
                        .send()
                        .await
                        .map(|_| None)
                        .map_err(|e| {
                            let mut e = Error::s3("preflight upload to", location.s3_uri(), e);
                            if let Error::S3 {
                                kind: kind @ S3ErrorKind::NotFound,
                                ..
                            } = &mut e
                            {
                                *kind = S3ErrorKind::NoSuchBucket;
                            }
                            e
                        }),
                    other => other,
                };
                found.map(|_| ()).map_err(|e| match e {
                    Error::S3 { kind, source, .. } => Error::S3 {
                        op: "preflight upload to",
                        location: location.s3_uri(),
                        kind,
                        source,
                    },
                    e => e,
                })
            }
            crate::Direction::Download => {
                let rel = location.relative_path();
                self.sdk()
                    .list_objects_v2()
                    .bucket(location.bucket())
                    .prefix(if rel.is_empty() {
                        String::new()
                    } else {
                        format!("{}/", rel.trim_end_matches('/'))
                    })
                    .max_keys(1)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| Error::s3("preflight download from", location.s3_uri(), e))
            }
        }
    }
}
