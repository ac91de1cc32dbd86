//! The project a Python package file belongs to, from its name alone, as the reference's
//! `packaging` parsers read it: wheels by the binary distribution format, sdists
//! (`.tar.gz`, `.zip`) split at their last `-` with a PEP 440 version after it.

use package_index::wheel::{Version, canonical_name, parse_file_name};

/// A file name that names no wheel or sdist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// A `.whl` whose name does not follow the wheel format.
    #[error("Cannot parse wheel filename '{file}': {reason}")]
    Wheel {
        /// The file name.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// A `.tar.gz` or `.zip` that is no `{name}-{version}` sdist.
    #[error("Cannot parse sdist filename '{file}': Invalid sdist filename ({reason}): '{file}'")]
    Sdist {
        /// The file name.
        file: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// Not a wheel or sdist at all.
    #[error("'{0}' is not a wheel (.whl) or sdist (.tar.gz, .zip)")]
    NotAPackage(String),
}

/// The normalized project name (PEP 503: lower case, runs of `-_.` as one `-`) of a wheel or
/// sdist file name: `rocm_sdk_libraries_gfx110X_all-7.13.0-py3-none-linux_x86_64.whl` →
/// `rocm-sdk-libraries-gfx110x-all`, `Apex_Extra-0.1.zip` → `apex-extra`.
pub fn package_name(file_name: &str) -> Result<String, NameError> {
    // Case-sensitive, as the reference's suffix test.
    if file_name.strip_suffix(".whl").is_some() {
        return parse_file_name(file_name)
            .map(|wheel| canonical_name(&wheel.name))
            .map_err(|e| NameError::Wheel {
                file: file_name.to_owned(),
                reason: e.to_string(),
            });
    }
    let stem = file_name
        .strip_suffix(".tar.gz")
        .or_else(|| file_name.strip_suffix(".zip"))
        .ok_or_else(|| NameError::NotAPackage(file_name.to_owned()))?;
    let sdist = |reason| NameError::Sdist {
        file: file_name.to_owned(),
        reason,
    };
    let (name, version) = stem.rsplit_once('-').ok_or_else(|| sdist("no version"))?;
    if Version::parse(version).is_none() {
        return Err(sdist("invalid version"));
    }
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(sdist("invalid name"));
    }
    Ok(canonical_name(name))
}

#[cfg(test)]
mod tests;
