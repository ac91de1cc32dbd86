//! The checks a wheel passes before it is uploaded: its file name follows the binary
//! distribution format, it is a zip archive with one `.dist-info` directory, and the `Name` and
//! `Version` of its `METADATA` are the file name's, compared as pip compares them (names
//! normalized as PEP 503 says, versions as PEP 440 says).

use std::io::Read as _;
use std::path::Path;
use std::sync::LazyLock;

/// What is wrong with a wheel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WheelError {
    /// The file name does not follow the format.
    #[error(
        "its file name is not `{{name}}-{{version}}[-{{build}}]-{{python}}-{{abi}}-{{platform}}.whl`: {0}"
    )]
    FileName(String),
    /// The file could not be read.
    #[error("it could not be read")]
    Read(#[source] std::io::Error),
    /// The file is not a zip archive (or a broken one).
    #[error("it is not a zip archive")]
    Archive(#[source] zip::result::ZipError),
    /// The archive lacks what every wheel holds.
    #[error("{0}")]
    Contents(String),
    /// The metadata names another project or version than the file name.
    #[error("its METADATA says {field} `{found}`, its file name `{expected}`")]
    Mismatch {
        /// `Name` or `Version`.
        field: &'static str,
        /// What the metadata says.
        found: String,
        /// What the file name says.
        expected: String,
    },
}

/// The project and version a wheel's file name gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelName {
    /// The project name as written.
    pub name: String,
    /// The version as written.
    pub version: String,
}

/// A project name normalized as PEP 503 says: lower case, each run of `-`, `_`, `.` one `-`.
pub fn canonical_name(name: &str) -> String {
    py_packaging::escaped_name(name).replace('_', "-")
}

/// Splits a wheel file name into its project and version, checking every part: five or six
/// `-`-separated parts, a project name of letters, digits, `_` and `.` (no `__`), a PEP 440
/// version, a build tag starting with a digit, and non-empty tags.
pub fn parse_file_name(file_name: &str) -> Result<WheelName, WheelError> {
    let bad = |why: String| WheelError::FileName(why);
    let stem = file_name
        .strip_suffix(".whl")
        .ok_or_else(|| bad("it does not end in `.whl`".into()))?;
    let parts: Vec<&str> = stem.split('-').collect();
    if !matches!(parts.len(), 5 | 6) {
        return Err(bad(format!(
            "{} `-`-separated parts, not 5 or 6",
            parts.len()
        )));
    }
    if let Some(empty) = parts.iter().position(|p| p.is_empty()) {
        return Err(bad(format!("part {} is empty", empty + 1)));
    }
    let name = parts[0];
    if name.contains("__")
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return Err(bad(format!("`{name}` is not an escaped project name")));
    }
    let version = parts[1];
    if Version::parse(version).is_none() {
        return Err(bad(format!("`{version}` is not a PEP 440 version")));
    }
    if parts.len() == 6 && !parts[2].starts_with(|c: char| c.is_ascii_digit()) {
        return Err(bad(format!(
            "the build tag `{}` does not start with a digit",
            parts[2]
        )));
    }
    Ok(WheelName {
        name: name.to_owned(),
        version: version.to_owned(),
    })
}

/// A PEP 440 version in its normalized form, for comparison: two versions pip takes as equal
/// (`1.0` and `1.0.0`, `1.0rc1` and `1.0-RC.1`) are equal here. Numbers are kept as decimal
/// strings without leading zeros, so any length compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    epoch: String,
    release: Vec<String>,
    pre: Option<(&'static str, String)>,
    post: Option<String>,
    dev: Option<String>,
    local: Vec<LocalPart>,
}

/// One part of a local version label: numbers compare as numbers, the rest case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LocalPart {
    Number(String),
    Text(String),
}

/// The version grammar of PEP 440 (its appendix), case-insensitive, surrounding space allowed.
static VERSION: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?ix)^\s*
        v?
        (?:(?P<epoch>[0-9]+)!)?
        (?P<release>[0-9]+(?:\.[0-9]+)*)
        (?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
        (?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?
        (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
        (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
        \s*$",
    )
    .expect("the PEP 440 pattern is valid")
});

/// A decimal number without its leading zeros.
fn number(digits: &str) -> String {
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() { "0" } else { trimmed }.to_owned()
}

impl Version {
    /// Parses `text`; `None` when it is not a PEP 440 version.
    pub fn parse(text: &str) -> Option<Self> {
        let caps = VERSION.captures(text)?;
        let get = |name: &str| caps.name(name).map(|m| m.as_str());
        let mut release: Vec<String> = get("release")?.split('.').map(number).collect();
        while release.last().is_some_and(|n| n == "0") {
            release.pop();
        }
        let pre = get("pre_l").map(|label| {
            let label = match label.to_ascii_lowercase().as_str() {
                "a" | "alpha" => "a",
                "b" | "beta" => "b",
                _ => "rc",
            };
            (label, number(get("pre_n").unwrap_or("0")))
        });
        let post = get("post_n1")
            .or(get("post_n2"))
            .map(number)
            .or_else(|| get("post_l").map(|_| "0".to_owned()));
        let dev = get("dev_l").map(|_| number(get("dev_n").unwrap_or("0")));
        let local = get("local")
            .map(|label| {
                label
                    .split(['-', '_', '.'])
                    .map(|part| {
                        if part.bytes().all(|b| b.is_ascii_digit()) {
                            LocalPart::Number(number(part))
                        } else {
                            LocalPart::Text(part.to_ascii_lowercase())
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(Version {
            epoch: number(get("epoch").unwrap_or("0")),
            release,
            pre,
            post,
            dev,
            local,
        })
    }
}

/// The `Name` and `Version` headers of a `METADATA` text (the first of each; the headers end
/// at the first empty line).
fn metadata_fields(text: &str) -> (Option<String>, Option<String>) {
    let (mut name, mut version) = (None, None);
    for line in text.lines() {
        if line.trim().is_empty() {
            break;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let slot = match key.trim().to_ascii_lowercase().as_str() {
            "name" => &mut name,
            "version" => &mut version,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(value.trim().to_owned());
        }
    }
    (name, version)
}

/// The largest `METADATA` read (a long description included).
const METADATA_LIMIT: u64 = 64 << 20;

/// Checks the wheel at `path` (its file name, its archive, its metadata).
pub fn check(path: &Path) -> Result<(), WheelError> {
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let wheel = parse_file_name(&file_name)?;
    let file = fs_err::File::open(path).map_err(WheelError::Read)?;
    let mut archive = zip::ZipArchive::new(file).map_err(WheelError::Archive)?;
    let mut dirs: Vec<&str> = archive
        .file_names()
        .filter_map(|n| n.split_once('/').map(|(top, _)| top))
        .filter(|top| top.ends_with(".dist-info"))
        .collect();
    dirs.sort_unstable();
    dirs.dedup();
    let dir = match dirs.as_slice() {
        [one] => (*one).to_owned(),
        [] => {
            return Err(WheelError::Contents(
                "it has no `.dist-info` directory".into(),
            ));
        }
        many => {
            return Err(WheelError::Contents(format!(
                "it has several `.dist-info` directories: {}",
                many.join(", ")
            )));
        }
    };
    let metadata_name = format!("{dir}/METADATA");
    let mut text = Vec::new();
    archive
        .by_name(&metadata_name)
        .map_err(|_| WheelError::Contents(format!("it has no `{metadata_name}`")))?
        .take(METADATA_LIMIT)
        .read_to_end(&mut text)
        .map_err(WheelError::Read)?;
    let (name, version) = metadata_fields(&String::from_utf8_lossy(&text));
    let missing = |field: &str| WheelError::Contents(format!("`{metadata_name}` has no {field}"));
    let name = name.ok_or_else(|| missing("Name"))?;
    let version = version.ok_or_else(|| missing("Version"))?;
    if canonical_name(&name) != canonical_name(&wheel.name) {
        return Err(WheelError::Mismatch {
            field: "Name",
            found: name,
            expected: wheel.name,
        });
    }
    if Version::parse(&version) != Version::parse(&wheel.version) {
        return Err(WheelError::Mismatch {
            field: "Version",
            found: version,
            expected: wheel.version,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
