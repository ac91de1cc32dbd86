//! Release and latest-nightly modes: a published multi-arch tarball, streamed from its bucket
//! through verification, decompression and safe extraction into the staging directory.

use std::io::Write;
use std::path::Path;

use storage_backend::{
    Anonymous, ClientOptions, Expected, RangePlan, S3Client, S3StorageBackend, StorageLocation,
    Verification,
};
use workflow_outputs::{Platform, ReleaseKind, TARBALL_PREFIX};

use crate::error::{Error, UnpackError};

/// Bytes asked for per ranged GET, and the part size whose multipart `ETag`s can be checked
/// (the AWS CLI's and boto3's default part size).
const PART: u64 = 8 << 20;
/// Ranged GETs in flight.
const PARTS_IN_FLIGHT: usize = 4;

/// The build date of a nightly version (`7.15.0a20260722` → 2026-07-22); `None` for other
/// versions and impossible dates.
fn nightly_date(version: &str) -> Option<(u32, u32, u32)> {
    let date = workflow_outputs::nightly_date_digits(version)?;
    if !py_packaging::valid_yyyymmdd(date) {
        return None;
    }
    let num = |range: std::ops::Range<usize>| date[range].parse::<u32>().ok();
    Some((num(0..4)?, num(4..6)?, num(6..8)?))
}

/// The tarball an install will fetch.
#[derive(Debug, Clone)]
pub(crate) struct Tarball {
    bucket: String,
    asset: String,
    version: String,
    /// Found by `--latest-release` (its dry-run line differs).
    latest: bool,
}

impl Tarball {
    fn location(&self) -> StorageLocation {
        workflow_outputs::tarball_location(&self.bucket, &self.asset)
    }

    pub(crate) fn print_dry_run(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.latest {
            writeln!(
                out,
                "[DRY RUN] Would download: {} (version {})",
                self.asset, self.version
            )
        } else {
            writeln!(
                out,
                "[DRY RUN] Would download: {} (asset {}, version {})",
                self.location().s3_uri(),
                self.asset,
                self.version
            )
        }
    }

    /// Streams the tarball into `into`: ranged GETs pinned to the object's `ETag`, hashed,
    /// decompressed and unpacked as they arrive; then verified (length, gzip checksum, the
    /// `.sha256sum` sidecar or the upload's SHA-256 when the bucket has one, else the `ETag`
    /// when it is an MD5). Any failure is an error; what was unpacked is the caller's to drop.
    pub(crate) async fn install(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
        into: &Path,
        shown_output: &Path,
        out: &mut dyn Write,
    ) -> Result<(), Error> {
        let storage = connect(lookup).await?;
        let loc = self.location();
        writeln!(out, "Downloading {}", loc.s3_uri())?;
        let head = storage
            .head_object(&loc)
            .await?
            .ok_or_else(|| Error::MissingTarball(loc.s3_uri()))?;
        let expected_sha256 = if let Some(sha) = &head.sha256 {
            Some(sha.clone())
        } else {
            let sidecar =
                StorageLocation::new(&self.bucket, format!("{}.sha256sum", loc.relative_path()));
            match storage.get_small(&sidecar).await? {
                Some(bytes) => Some(
                    storage_backend::parse_sha256sum(&String::from_utf8_lossy(&bytes))
                        .ok_or_else(|| Error::InvalidSidecar(sidecar.s3_uri()))?,
                ),
                None => None,
            }
        };
        let expected = Expected::for_object(expected_sha256, &head.etag, head.size, PART);
        writeln!(
            out,
            "Extracting {} to {}",
            self.asset,
            shown_output.display()
        )?;
        let plan = RangePlan {
            range_size: PART,
            in_flight: PARTS_IN_FLIGHT,
            budget: None,
        };
        let (asset, dest) = (self.asset.clone(), into.to_path_buf());
        let (files, verified) = storage
            .read_verified(
                &loc,
                (head.size, &head.etag),
                expected,
                plan,
                move |reader| unpack(&asset, reader, &dest),
            )
            .await
            .map_err(|source| Error::Download {
                location: loc.s3_uri(),
                source,
            })?
            .map_err(|source| Error::Install {
                location: loc.s3_uri(),
                source,
            })?;
        let verification = match verified.verification {
            Verification::Sha256 => "sha256 verified",
            Verification::Md5 => "md5 verified against the ETag",
            Verification::MultipartMd5 => "md5 of each part verified against the ETag",
            Verification::LengthOnly => "gzip checksum verified; no digest recorded",
        };
        writeln!(
            out,
            "Extracted {files} files from {} ({verification})",
            self.asset
        )?;
        Ok(())
    }
}

/// Unpacks the gzip-compressed tar stream `reader` into `dest` and reads the compressed
/// stream to its end (the tar padding and the gzip trailer, whose CRC and length are checked
/// there); the files extracted.
fn unpack(asset: &str, reader: &mut dyn std::io::Read, dest: &Path) -> Result<u64, UnpackError> {
    let mut gz =
        flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 20, reader));
    let extracted = artifacts::extract_tree(asset, &mut gz, dest)?;
    std::io::copy(&mut gz, &mut std::io::sink()).map_err(|source| UnpackError::Damaged {
        asset: asset.to_owned(),
        source,
    })?;
    Ok(extracted.files)
}

async fn connect(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<S3StorageBackend, storage_backend::Error> {
    let mut options = ClientOptions::default();
    options.region = Some(storage_backend::DEFAULT_REGION.to_owned());
    // Public buckets, read as the reference does: unsigned.
    options.anonymous = Anonymous::Always;
    options.max_idle_connections = PARTS_IN_FLIGHT * 2;
    let client = S3Client::connect_with(&options, lookup).await?;
    Ok(S3StorageBackend::new(
        client,
        storage_backend::TransferOptions::default(),
    ))
}

/// The tarball of `--release {version}` for `group` on `platform`, with the line that says
/// where it is looked for.
pub(crate) fn for_release(
    platform: Platform,
    group: &str,
    version: &str,
    out: &mut dyn Write,
) -> Result<Tarball, Error> {
    let kind =
        ReleaseKind::of_version(version).ok_or_else(|| Error::NotARelease(version.to_owned()))?;
    let bucket = kind.bucket();
    writeln!(
        out,
        "Retrieving {} multi-arch artifacts from s3://{}/{TARBALL_PREFIX}/",
        kind.as_str(),
        bucket.name()
    )?;
    Ok(Tarball {
        bucket: bucket.name().to_owned(),
        asset: workflow_outputs::tarball_name(platform.as_str(), group, version),
        version: version.to_owned(),
        latest: false,
    })
}

/// The newest nightly tarball of `group` for `platform`: by the date in its version, then by
/// upload time. None is [`Error::NoNightlyRelease`], after `ERROR:` lines listing the groups
/// that have one.
pub(crate) async fn latest(
    platform: Platform,
    group: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> Result<Tarball, Error> {
    let platform = platform.as_str();
    writeln!(out, "Finding latest nightly release for {group}...")?;
    let bucket = ReleaseKind::Nightly.bucket();
    let storage = connect(lookup).await?;
    let prefix = workflow_outputs::tarball_listing_prefix(platform);
    let listed = storage
        .list_prefix(bucket.name(), &prefix, false)
        .await
        .map_err(|source| Error::List {
            location: format!("s3://{}/{prefix}", bucket.name()),
            source,
        })?;
    let mut families = std::collections::BTreeSet::new();
    let mut releases = Vec::new();
    for object in &listed {
        let Some(asset) = workflow_outputs::tarball_name_of_key(&object.key) else {
            continue;
        };
        let Some((p, g, version)) = workflow_outputs::parse_tarball_name(asset) else {
            continue;
        };
        if p != platform || g.ends_with("-tests") {
            continue;
        }
        families.insert(g.to_owned());
        if g == group {
            let date = nightly_date(version).unwrap_or((0, 0, 0));
            releases.push((date, object.last_modified, version, asset));
        }
    }
    // Newest first; ties keep the listing's order.
    releases.sort_by_key(|r| std::cmp::Reverse((r.0, r.1)));
    let Some(&(_, _, version, asset)) = releases.first() else {
        writeln!(out, "ERROR: No nightly release found for '{group}'")?;
        writeln!(out)?;
        writeln!(
            out,
            "Available GPU families in the multi-arch nightly bucket:"
        )?;
        for family in &families {
            writeln!(out, "  - {family}")?;
        }
        return Err(Error::NoNightlyRelease(group.to_owned()));
    };
    writeln!(out, "Found latest release: {version}")?;
    Ok(Tarball {
        bucket: bucket.name().to_owned(),
        asset: asset.to_owned(),
        version: version.to_owned(),
        latest: true,
    })
}

#[cfg(test)]
mod tests;
