//! A place in object storage: a bucket plus a key relative to it.
//!
//! [`StorageLocation`] is the bridge between layout computation (which produces locations) and
//! the storage backends (which consume them). It renders as an `s3://` URI, a public
//! `https://` URL, or a path under a local staging directory. It performs no I/O.
//!
//! ```
//! use rock_ci_storage_location::StorageLocation;
//!
//! let loc = StorageLocation::new("my-bucket", "12345-linux/rocm 7.0+abc.tar.xz");
//! assert_eq!(loc.s3_uri(), "s3://my-bucket/12345-linux/rocm 7.0+abc.tar.xz");
//! assert_eq!(
//!     loc.https_url(),
//!     "https://my-bucket.s3.amazonaws.com/12345-linux/rocm%207.0%2Babc.tar.xz"
//! );
//! let local = loc.local_path("/tmp/staging".as_ref())?;
//! assert!(local.ends_with("12345-linux/rocm 7.0+abc.tar.xz"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};

/// A bucket and a key (`relative_path`) inside it. Immutable: fields are read through accessors.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorageLocation {
    bucket: String,
    relative_path: String,
}

/// A key that cannot be mapped below a local staging directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsafeKeyError {
    key: String,
}

impl fmt::Display for UnsafeKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Key `{}` has a `..` component and would leave the staging directory",
            self.key
        )
    }
}

impl std::error::Error for UnsafeKeyError {}

/// A bucket name S3 does not accept, and the naming rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketNameError {
    name: String,
    rule: &'static str,
}

impl BucketNameError {
    /// The name given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The rule it breaks, as S3's bucket naming rules word it.
    pub fn rule(&self) -> &'static str {
        self.rule
    }
}

impl fmt::Display for BucketNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a bucket name: {}", self.name, self.rule)
    }
}

impl std::error::Error for BucketNameError {}

/// Checks `name` against S3's naming rules for general purpose buckets, so that a bad name
/// (`bucket/path`, `Bad_Bucket!`, a name with a space) fails before any request instead of at
/// the server, or worse, as another key.
///
/// ```
/// use rock_ci_storage_location::check_bucket_name;
///
/// assert!(check_bucket_name("therock-ci-artifacts").is_ok());
/// let err = check_bucket_name("therock-ci-artifacts/evil").unwrap_err();
/// assert_eq!(err.rule(), "only lowercase letters, digits, dots and hyphens are allowed");
/// assert!(check_bucket_name("ab").is_err());
/// ```
pub fn check_bucket_name(name: &str) -> Result<(), BucketNameError> {
    let fail = |rule| {
        Err(BucketNameError {
            name: name.to_owned(),
            rule,
        })
    };
    if name.len() < 3 || name.len() > 63 {
        return fail("a bucket name has 3 to 63 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return fail("only lowercase letters, digits, dots and hyphens are allowed");
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(name.as_bytes()[0]) || !alnum(name.as_bytes()[name.len() - 1]) {
        return fail("it begins and ends with a letter or digit");
    }
    if name.contains("..") {
        return fail("no two dots in a row");
    }
    if name.split('.').count() == 4 && name.split('.').all(|p| p.parse::<u8>().is_ok()) {
        return fail("it is not formatted as an IP address");
    }
    if ["xn--", "sthree-", "amzn-s3-demo-"]
        .iter()
        .any(|p| name.starts_with(p))
    {
        return fail("the prefixes xn--, sthree- and amzn-s3-demo- are reserved");
    }
    if ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        return fail("the suffixes -s3alias, --ol-s3, .mrap, --x-s3 and --table-s3 are reserved");
    }
    Ok(())
}

impl StorageLocation {
    /// A location for `relative_path` in `bucket`. No validation: keys are whatever S3 accepts.
    pub fn new(bucket: impl Into<String>, relative_path: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            relative_path: relative_path.into(),
        }
    }

    /// The bucket name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key relative to the bucket (or to the staging directory).
    pub fn relative_path(&self) -> &str {
        &self.relative_path
    }

    /// `s3://{bucket}/{relative_path}`, the key left as is (the AWS CLI form).
    pub fn s3_uri(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.relative_path)
    }

    /// `https://{bucket}.s3.amazonaws.com/{key}` with the key percent-encoded so that S3 reads it
    /// back as the same key: `+` (which S3 would read as a space), space, `%`, `#`, `?`, control
    /// and non-ASCII bytes are escaped; `/` and the characters that are safe in a URL path stay.
    pub fn https_url(&self) -> String {
        format!(
            "https://{}.s3.amazonaws.com/{}",
            self.bucket,
            encode_key(&self.relative_path)
        )
    }

    /// The key as a path below `staging_dir` (the bucket is ignored). The key is split on `/`
    /// and joined component by component, so a leading `/` cannot make the result absolute;
    /// a `..` component is refused.
    pub fn local_path(&self, staging_dir: &Path) -> Result<PathBuf, UnsafeKeyError> {
        let mut path = staging_dir.to_path_buf();
        for part in self.relative_path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    return Err(UnsafeKeyError {
                        key: self.relative_path.clone(),
                    });
                }
                part => path.push(part),
            }
        }
        Ok(path)
    }

    /// A location for `child` below this one (`{relative_path}/{child}`).
    #[must_use]
    pub fn join(&self, child: &str) -> Self {
        let relative_path = if self.relative_path.is_empty() {
            child.to_owned()
        } else {
            format!(
                "{}/{}",
                self.relative_path.trim_end_matches('/'),
                child.trim_start_matches('/')
            )
        };
        Self::new(self.bucket.clone(), relative_path)
    }
}

impl fmt::Display for StorageLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.relative_path)
    }
}

/// Percent-encodes an S3 key for use in a URL path (or an `x-amz-copy-source` header): RFC 3986 unreserved characters, `/` and the
/// path-safe sub-delimiters stay, every other byte (of the UTF-8 form) becomes `%XX`.
pub fn encode_key(key: &str) -> String {
    const KEEP: &[u8] = b"-._~/:@!$'()*,;=";
    let mut out = String::with_capacity(key.len());
    for &b in key.as_bytes() {
        if b.is_ascii_alphanumeric() || KEEP.contains(&b) {
            out.push(char::from(b));
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
    out
}

#[cfg(test)]
mod tests;

/// `url` with any user name and password replaced by `***`, for messages and logs:
/// `https://user:token@host/path` becomes `https://***@host/path`, and a value without a
/// scheme (`user:token@host`) `***@host`.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (&url[..scheme.len() + 3], rest),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}***@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// The secrets a URL carries, which logs must not show: its `user:password` as written and
/// percent-decoded, and the password alone of each; nothing when it has no user part.
/// `https://me:p%40ss@host/` gives `me:p%40ss`, `p%40ss`, `me:p@ss` and `p@ss`.
pub fn url_secrets(url: &str) -> Vec<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let Some((userinfo, _)) = authority.rsplit_once('@') else {
        return Vec::new();
    };
    let mut secrets = Vec::new();
    for form in [userinfo.to_owned(), percent_decode(userinfo)] {
        secrets.push(form.clone());
        if let Some((_, password)) = form.split_once(':') {
            secrets.push(password.to_owned());
        }
    }
    secrets
}

/// `%XX` escapes of `s` decoded (invalid escapes kept as they are).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `url` is an `http://` or `https://` URL with a host (and no whitespace or control
/// characters): the check every URL setting of the tools gets before it is used.
pub fn is_http_url(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(h, _)| h),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    !host.is_empty() && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod redact_tests {
    use super::{is_http_url, redact_url};

    #[test]
    fn http_urls_need_a_scheme_and_a_host() {
        for ok in [
            "http://127.0.0.1:9000",
            "https://u:p@host/x?y",
            "HTTPS://api.github.com",
            "http://[::1]:8080/",
        ] {
            assert!(is_http_url(ok), "{ok}");
        }
        for bad in [
            "not-a-url",
            "localhost:9000",
            "ftp://host",
            "http://",
            "http://:80",
            "http://u:p@/x",
            "http://host name",
        ] {
            assert!(!is_http_url(bad), "{bad}");
        }
    }

    #[test]
    fn credentials_are_hidden_and_nothing_else_changes() {
        for (url, shown) in [
            ("http://user:pw@127.0.0.1:9000", "http://***@127.0.0.1:9000"),
            ("https://token@host/a@b", "https://***@host/a@b"),
            ("user:pw@host/x", "***@host/x"),
            ("https://host/a@b", "https://host/a@b"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }
}

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
