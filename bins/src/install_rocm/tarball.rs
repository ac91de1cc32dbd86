//! Release and latest-nightly modes: a published multi-arch tarball, streamed from its bucket
//! through verification, decompression and safe extraction into the staging directory.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::LazyLock;

use anyhow::{Context as _, anyhow, bail};
use md5::Digest as _;
use regex::Regex;
use storage_backend::{Anonymous, ClientOptions, S3Client, S3StorageBackend, StorageLocation};
use workflow_outputs::{ReleaseBucketType, ReleaseType};

use super::Request;

/// The key prefix of published multi-arch tarballs in the release buckets.
pub const TARBALL_PREFIX: &str = "v4/tarball";

/// Bytes asked for per ranged GET, and the part size whose multipart `ETag`s can be checked
/// (the AWS CLI's and boto3's default part size).
const PART: u64 = 8 << 20;
/// Ranged GETs in flight.
const PARTS_IN_FLIGHT: usize = 4;

static NIGHTLY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d+\.\d+\.\d+(?:a|rc)\d{8}$").expect("valid"));
static DEV: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d+\.\d+\.\d+\.dev0\+[0-9a-f]+$").expect("valid"));
static NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^therock-dist-(linux|windows)-(.+)-(\d+\.\d+\.\d+(?:(?:a|rc)\d{8}|\.dev0\+[0-9a-f]+)?)\.tar\.gz$",
    )
    .expect("valid")
});
static DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d+)\.(\d+)\.(\d+)(?:a|rc)(\d{8})").expect("valid"));

/// Which release bucket a version lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseKind {
    /// `X.Y.Z(a|rc)YYYYMMDD`: `therock-nightly-tarball`.
    Nightly,
    /// `X.Y.Z.dev0+{hex}`: `therock-dev-tarball`.
    Dev,
}

impl ReleaseKind {
    fn word(self) -> &'static str {
        match self {
            ReleaseKind::Nightly => "nightly",
            ReleaseKind::Dev => "dev",
        }
    }

    fn bucket(self) -> anyhow::Result<workflow_outputs::S3BucketConfig> {
        let release_type = match self {
            ReleaseKind::Nightly => ReleaseType::Nightly,
            ReleaseKind::Dev => ReleaseType::Dev,
        };
        Ok(workflow_outputs::release_bucket_config(
            release_type,
            ReleaseBucketType::Tarball,
        )?)
    }
}

/// The kind of release `version` is, `None` when it is neither.
pub fn release_kind(version: &str) -> Option<ReleaseKind> {
    if NIGHTLY.is_match(version) {
        Some(ReleaseKind::Nightly)
    } else if DEV.is_match(version) {
        Some(ReleaseKind::Dev)
    } else {
        None
    }
}

/// Platform, artifact group and version of a published tarball's file name.
pub fn parse_tarball_name(name: &str) -> Option<(&str, &str, &str)> {
    let c = NAME.captures(name)?;
    Some((c.get(1)?.as_str(), c.get(2)?.as_str(), c.get(3)?.as_str()))
}

/// The build date of a nightly version (`7.15.0a20260722` → 2026-07-22); `None` for other
/// versions and impossible dates.
fn nightly_date(version: &str) -> Option<(u32, u32, u32)> {
    let c = DATE.captures(version)?;
    let date = c.get(4)?.as_str();
    if !py_packaging::valid_yyyymmdd(date) {
        return None;
    }
    let num = |range: std::ops::Range<usize>| date[range].parse::<u32>().ok();
    Some((num(0..4)?, num(4..6)?, num(6..8)?))
}

/// The tarball an install will fetch.
#[derive(Debug, Clone)]
pub(super) struct Tarball {
    bucket: String,
    asset: String,
    version: String,
    /// Found by `--latest-release` (its dry-run line differs).
    latest: bool,
}

impl Tarball {
    fn location(&self) -> StorageLocation {
        StorageLocation::new(&self.bucket, format!("{TARBALL_PREFIX}/{}", self.asset))
    }

    pub(super) fn print_dry_run(&self, out: &mut dyn Write) -> std::io::Result<()> {
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
    pub(super) async fn install(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
        into: &Path,
        shown_output: &Path,
        out: &mut dyn Write,
    ) -> anyhow::Result<()> {
        use futures::StreamExt as _;
        let storage = connect(lookup).await?;
        let loc = self.location();
        writeln!(out, "Downloading {}", loc.s3_uri())?;
        let head = storage
            .head_object(&loc)
            .await?
            .ok_or_else(|| anyhow!("Release tarball `{}` does not exist", loc.s3_uri()))?;
        let expected_sha256 = if let Some(sha) = &head.sha256 {
            Some(sha.clone())
        } else {
            let sidecar =
                StorageLocation::new(&self.bucket, format!("{}.sha256sum", loc.relative_path()));
            match storage.get_small(&sidecar).await? {
                Some(bytes) => Some(
                    storage_backend::parse_sha256sum(&String::from_utf8_lossy(&bytes))
                        .ok_or_else(|| anyhow!("Invalid sidecar `{}`", sidecar.s3_uri()))?,
                ),
                None => None,
            }
        };
        let check = Check::new(expected_sha256, &head.etag, head.size);
        writeln!(
            out,
            "Extracting {} to {}",
            self.asset,
            shown_output.display()
        )?;

        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(PARTS_IN_FLIGHT);
        let consumer = {
            let (asset, dest) = (self.asset.clone(), into.to_path_buf());
            storage_backend::blocking(move || unpack(&asset, rx, &dest, &check))
        };
        let producer = async {
            // Owned here, so the channel closes when the download ends.
            let tx = tx;
            let ranges = (0..head.size.div_ceil(PART))
                .map(|i| (i * PART, ((i + 1) * PART).min(head.size) - 1));
            let mut parts = futures::stream::iter(ranges)
                .map(|range| storage.read_range(&loc, range, &head.etag, &|_| {}))
                .buffered(PARTS_IN_FLIGHT);
            while let Some(part) = parts.next().await {
                match part {
                    Ok(chunks) => {
                        for chunk in chunks {
                            if tx.send(Ok(chunk)).await.is_err() {
                                // The unpacking stopped; its error says why.
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
            Ok::<(), storage_backend::Error>(())
        };
        let (download, unpacked) = tokio::join!(producer, consumer);
        download.with_context(|| format!("Failed to download `{}`", loc.s3_uri()))?;
        let (files, verification) =
            unpacked.with_context(|| format!("Failed to install `{}`", loc.s3_uri()))?;
        writeln!(
            out,
            "Extracted {files} files from {} ({verification})",
            self.asset
        )?;
        Ok(())
    }
}

async fn connect(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<S3StorageBackend, storage_backend::Error> {
    let client = S3Client::connect_with(
        &ClientOptions {
            region: Some(storage_backend::DEFAULT_REGION.to_owned()),
            // Public buckets, read as the reference does: unsigned.
            anonymous: Anonymous::Always,
            max_idle_connections: PARTS_IN_FLIGHT * 2,
            ..ClientOptions::default()
        },
        lookup,
    )
    .await?;
    Ok(S3StorageBackend::new(
        client,
        storage_backend::TransferOptions::default(),
    ))
}

/// The tarball of `--release {version}` (the version already checked).
pub(super) fn for_release(
    request: &Request,
    version: &str,
    out: &mut dyn Write,
) -> anyhow::Result<Tarball> {
    let kind = release_kind(version).ok_or_else(|| anyhow!("`{version}` is not a release"))?;
    let bucket = kind.bucket()?;
    writeln!(
        out,
        "Retrieving {} multi-arch artifacts from s3://{}/{TARBALL_PREFIX}/",
        kind.word(),
        bucket.name()
    )?;
    Ok(Tarball {
        bucket: bucket.name().to_owned(),
        asset: format!(
            "therock-dist-{}-{}-{version}.tar.gz",
            request.platform.as_str(),
            request.artifact_group
        ),
        version: version.to_owned(),
        latest: false,
    })
}

/// The newest nightly tarball of the group for this platform: by the date in its version,
/// then by upload time.
pub(super) async fn latest(
    request: &Request,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> anyhow::Result<Tarball> {
    let group = &request.artifact_group;
    let platform = request.platform.as_str();
    writeln!(out, "Finding latest nightly release for {group}...")?;
    let bucket = ReleaseKind::Nightly.bucket()?;
    let storage = connect(lookup).await?;
    let prefix = format!("{TARBALL_PREFIX}/therock-dist-{platform}-");
    let listed = storage
        .list_prefix(bucket.name(), &prefix, false)
        .await
        .with_context(|| format!("Failed to list s3://{}/{prefix}", bucket.name()))?;
    let mut families = std::collections::BTreeSet::new();
    let mut releases = Vec::new();
    for object in &listed {
        let Some(asset) = object
            .key
            .strip_prefix(TARBALL_PREFIX)
            .and_then(|k| k.strip_prefix('/'))
        else {
            continue;
        };
        let Some((p, g, version)) = parse_tarball_name(asset) else {
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
        return Err(crate::artifact_manager::Reported(format!(
            "No nightly release found for '{group}'"
        ))
        .into());
    };
    writeln!(out, "Found latest release: {version}")?;
    Ok(Tarball {
        bucket: bucket.name().to_owned(),
        asset: asset.to_owned(),
        version: version.to_owned(),
        latest: true,
    })
}

/// What the downloaded bytes are checked against.
#[derive(Debug, Clone)]
enum Expected {
    Sha256(String),
    /// A single-part upload's `ETag`.
    Md5(String),
    /// A multipart upload's `ETag` (`{md5 of the parts' md5s}-{parts}`) with parts of [`PART`].
    PartMd5s(String),
    /// Nothing recorded (the gzip checksum still applies).
    Nothing,
}

#[derive(Debug, Clone)]
struct Check {
    expected: Expected,
    size: u64,
}

impl Check {
    fn new(sha256: Option<String>, etag: &str, size: u64) -> Self {
        let etag = etag.trim_matches('"').to_ascii_lowercase();
        let is_md5 = |s: &str| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
        let expected = if let Some(sha) = sha256 {
            Expected::Sha256(sha)
        } else if is_md5(&etag) {
            Expected::Md5(etag)
        } else if let Some((md5, parts)) = etag.split_once('-')
            && is_md5(md5)
            && parts.parse::<u64>().ok() == Some(size.div_ceil(PART))
        {
            Expected::PartMd5s(etag)
        } else {
            Expected::Nothing
        };
        Check { expected, size }
    }
}

/// Reads the received chunks in order, hashing them as [`Check`] needs.
struct Received {
    rx: tokio::sync::mpsc::Receiver<std::io::Result<bytes::Bytes>>,
    current: bytes::Bytes,
    total: u64,
    sha256: Option<sha2::Sha256>,
    md5: Option<md5::Md5>,
    part_md5: Option<(md5::Md5, u64, Vec<u8>, u64)>,
}

impl Received {
    fn hash(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.sha256 {
            sha2::Digest::update(h, data);
        }
        if let Some(h) = &mut self.md5 {
            h.update(data);
        }
        if let Some((h, in_part, digests, parts)) = &mut self.part_md5 {
            let mut rest = data;
            while !rest.is_empty() {
                let room = usize::try_from(PART - *in_part).unwrap_or(usize::MAX);
                let (now, later) = rest.split_at(rest.len().min(room));
                h.update(now);
                *in_part += now.len() as u64;
                if *in_part == PART {
                    digests.extend_from_slice(&std::mem::take(h).finalize());
                    *in_part = 0;
                    *parts += 1;
                }
                rest = later;
            }
        }
    }
}

impl Read for Received {
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
        self.hash(&chunk);
        self.total += n as u64;
        Ok(n)
    }
}

/// Unpacks the gzip-compressed tar stream arriving on `rx` into `dest`, reads it to its end
/// and checks it; the files extracted and a word on the verification.
fn unpack(
    asset: &str,
    rx: tokio::sync::mpsc::Receiver<std::io::Result<bytes::Bytes>>,
    dest: &Path,
    check: &Check,
) -> anyhow::Result<(u64, String)> {
    let mut received = Received {
        rx,
        current: bytes::Bytes::new(),
        total: 0,
        sha256: matches!(check.expected, Expected::Sha256(_)).then(sha2::Sha256::default),
        md5: matches!(check.expected, Expected::Md5(_)).then(md5::Md5::new),
        part_md5: matches!(check.expected, Expected::PartMd5s(_))
            .then(|| (md5::Md5::new(), 0, Vec::new(), 0)),
    };
    let mut gz = flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(
        1 << 20,
        &mut received,
    ));
    let extracted = artifacts::extract_tree(asset, &mut gz, dest)?;
    // The rest of the stream: the tar padding and the gzip trailer (its CRC and length are
    // checked at the end), then anything after it.
    std::io::copy(&mut gz, &mut std::io::sink())
        .with_context(|| format!("`{asset}` is damaged"))?;
    drop(gz);
    std::io::copy(&mut received, &mut std::io::sink())?;
    if received.total != check.size {
        bail!(
            "Received {} of the {} bytes of `{asset}`",
            received.total,
            check.size
        );
    }
    let verification = match &check.expected {
        Expected::Sha256(expected) => {
            let actual = hex::encode(sha2::Digest::finalize(
                received.sha256.take().expect("hashing"),
            ));
            if &actual != expected {
                bail!("SHA-256 mismatch for `{asset}`: expected {expected}, got {actual}");
            }
            "sha256 verified"
        }
        Expected::Md5(expected) => {
            let actual = hex::encode(received.md5.take().expect("hashing").finalize());
            if &actual != expected {
                bail!("MD5 mismatch for `{asset}`: the ETag says {expected}, got {actual}");
            }
            "md5 verified against the ETag"
        }
        Expected::PartMd5s(expected) => {
            let (h, in_part, mut digests, mut parts) = received.part_md5.take().expect("hashing");
            if in_part > 0 {
                digests.extend_from_slice(&h.finalize());
                parts += 1;
            }
            let actual = format!("{}-{parts}", hex::encode(md5::Md5::digest(&digests)));
            if &actual != expected {
                bail!(
                    "Multipart MD5 mismatch for `{asset}`: the ETag says {expected}, got {actual}"
                );
            }
            "md5 of each part verified against the ETag"
        }
        Expected::Nothing => "gzip checksum verified; no digest recorded",
    };
    Ok((extracted.files, verification.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tarball_names() {
        let cases = [
            (
                "therock-dist-linux-gfx94X-dcgpu-7.15.0a20260722.tar.gz",
                Some(("linux", "gfx94X-dcgpu", "7.15.0a20260722")),
            ),
            (
                "therock-dist-windows-gfx110X-all-7.15.0rc20260722.tar.gz",
                Some(("windows", "gfx110X-all", "7.15.0rc20260722")),
            ),
            (
                "therock-dist-linux-gfx90a-7.15.0.dev0+deadbeef.tar.gz",
                Some(("linux", "gfx90a", "7.15.0.dev0+deadbeef")),
            ),
            (
                "therock-dist-windows-multiarch-7.15.0.tar.gz",
                Some(("windows", "multiarch", "7.15.0")),
            ),
            ("therock-dist-linux-gfx94X-dcgpu-not-a-version.tar.gz", None),
        ];
        for (name, expected) in cases {
            assert_eq!(parse_tarball_name(name), expected, "{name}");
        }
    }

    #[test]
    fn release_kinds_and_dates() {
        assert_eq!(release_kind("7.15.0a20260722"), Some(ReleaseKind::Nightly));
        assert_eq!(release_kind("6.4.0rc20250416"), Some(ReleaseKind::Nightly));
        assert_eq!(release_kind("7.15.0.dev0+deadbeef"), Some(ReleaseKind::Dev));
        for bad in [
            "7.15.0",
            "7.15.0a2026072",
            "x7.15.0a20260722",
            "7.15.0.dev0+XYZ",
            "",
        ] {
            assert_eq!(release_kind(bad), None, "{bad}");
        }
        assert_eq!(nightly_date("7.15.0a20260722"), Some((2026, 7, 22)));
        assert_eq!(nightly_date("7.15.0a20240229"), Some((2024, 2, 29)));
        // Impossible dates sort as undated instead of aborting the search.
        assert_eq!(nightly_date("7.15.0a20261340"), None);
        assert_eq!(nightly_date("7.15.0a20250229"), None);
        assert_eq!(nightly_date("7.15.0"), None);
    }

    #[test]
    fn what_an_etag_can_verify() {
        let md5 = "0123456789abcdef0123456789abcdef";
        assert!(matches!(
            Check::new(None, &format!("\"{md5}\""), 5).expected,
            Expected::Md5(_)
        ));
        assert!(matches!(
            Check::new(None, &format!("\"{md5}-2\""), PART + 1).expected,
            Expected::PartMd5s(_)
        ));
        // Parts of another size cannot be checked.
        assert!(matches!(
            Check::new(None, &format!("\"{md5}-3\""), PART + 1).expected,
            Expected::Nothing
        ));
        assert!(matches!(
            Check::new(Some("ab".into()), md5, 5).expected,
            Expected::Sha256(_)
        ));
    }
}
