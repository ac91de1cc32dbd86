//! The published multi-arch release tarballs: their bucket, key prefix and file names
//! (`therock-dist-{platform}-{group}-{version}.tar.gz` under [`TARBALL_PREFIX`]), and the
//! version patterns of nightly and dev releases.

use std::sync::LazyLock;

use regex::Regex;
use storage_location::StorageLocation;

use crate::{ReleaseBucketType, ReleaseType, S3BucketConfig, release_bucket_config};

/// The key prefix of published multi-arch tarballs in the release buckets.
pub const TARBALL_PREFIX: &str = "v4/tarball";

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
    LazyLock::new(|| Regex::new(r"\d+\.\d+\.\d+(?:a|rc)(\d{8})").expect("valid"));

/// Which release bucket a tarball version lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseKind {
    /// `X.Y.Z(a|rc)YYYYMMDD`: `therock-nightly-tarball`.
    Nightly,
    /// `X.Y.Z.dev0+{hex}`: `therock-dev-tarball`.
    Dev,
}

impl ReleaseKind {
    /// The kind of release `version` is, `None` when it is neither.
    pub fn of_version(version: &str) -> Option<Self> {
        if NIGHTLY.is_match(version) {
            Some(ReleaseKind::Nightly)
        } else if DEV.is_match(version) {
            Some(ReleaseKind::Dev)
        } else {
            None
        }
    }

    /// `nightly` or `dev`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseKind::Nightly => "nightly",
            ReleaseKind::Dev => "dev",
        }
    }

    /// The release type whose tarball bucket holds this kind.
    pub fn release_type(self) -> ReleaseType {
        match self {
            ReleaseKind::Nightly => ReleaseType::Nightly,
            ReleaseKind::Dev => ReleaseType::Dev,
        }
    }

    /// The tarball bucket of this kind (`therock-nightly-tarball`, `therock-dev-tarball`).
    pub fn bucket(self) -> S3BucketConfig {
        release_bucket_config(self.release_type(), ReleaseBucketType::Tarball)
            .expect("nightly and dev are release types")
    }
}

/// The file name of the tarball of `group` at `version` for `platform` (`linux`, `windows`).
pub fn tarball_name(platform: &str, group: &str, version: &str) -> String {
    format!("therock-dist-{platform}-{group}-{version}.tar.gz")
}

/// Where tarball `name` lives in `bucket`.
pub fn tarball_location(bucket: &str, name: &str) -> StorageLocation {
    StorageLocation::new(bucket, format!("{TARBALL_PREFIX}/{name}"))
}

/// The key prefix listing every tarball of `platform`.
pub fn tarball_listing_prefix(platform: &str) -> String {
    format!("{TARBALL_PREFIX}/therock-dist-{platform}-")
}

/// The tarball file name of a listed `key`, `None` for keys outside [`TARBALL_PREFIX`].
pub fn tarball_name_of_key(key: &str) -> Option<&str> {
    key.strip_prefix(TARBALL_PREFIX)?.strip_prefix('/')
}

/// Platform, artifact group and version of a published tarball's file name.
pub fn parse_tarball_name(name: &str) -> Option<(&str, &str, &str)> {
    let c = NAME.captures(name)?;
    Some((c.get(1)?.as_str(), c.get(2)?.as_str(), c.get(3)?.as_str()))
}

/// The `YYYYMMDD` digits of a nightly version (`7.15.0a20260722` → `20260722`), not checked
/// as a date; `None` for other versions.
pub fn nightly_date_digits(version: &str) -> Option<&str> {
    Some(DATE.captures(version)?.get(1)?.as_str())
}

#[cfg(test)]
mod tests;
