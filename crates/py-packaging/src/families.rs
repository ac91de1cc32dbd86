//! `--{linux,windows}-amdgpu-families` (spec §1.2): list parsing (the family table itself is
//! `build_topology::FamilyMap`); and the default version (§1.1).

use crate::Error;

/// Parses a family list: `;` and `,` separate, items trimmed, empties dropped; an empty result
/// is `None` (the platform does not take part).
pub fn parse_family_list(value: &str) -> Option<Vec<String>> {
    let items: Vec<String> = value
        .replace(';', ",")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    (!items.is_empty()).then_some(items)
}

/// [`default_version`] of the `version.json` at the root of the TheRock checkout `root`.
pub fn checkout_default_version(root: &std::path::Path) -> Result<String, Error> {
    let path = root.join("version.json");
    let text = fs_err::read_to_string(&path).map_err(|e| file_tree::FileError::read(&path, e))?;
    default_version(&text)
}

/// The default version (§1.1): `rocm-version` of `version.json` + `.dev0`.
pub fn default_version(version_json: &str) -> Result<String, Error> {
    let doc: serde_json::Value =
        serde_json::from_str(version_json).map_err(|source| Error::Json {
            file: "version.json".into(),
            source,
        })?;
    let version = doc
        .get("rocm-version")
        .and_then(serde_json::Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or(Error::NoRocmVersion)?;
    if let Some(meta) = doc.get("release-metadata") {
        let meta = meta.as_object().ok_or(Error::VersionField {
            field: "release-metadata",
            expected: "an object",
            got: None,
        })?;
        if let Some(date) = meta.get("base-date").and_then(serde_json::Value::as_str)
            && !date.is_empty()
            && !valid_yyyymmdd(date)
        {
            return Err(Error::VersionField {
                field: "base-date",
                expected: "a YYYYMMDD date",
                got: Some(date.to_owned()),
            });
        }
    }
    Ok(format!("{version}.dev0"))
}

/// Whether `date` is a real calendar date written `YYYYMMDD`.
pub fn valid_yyyymmdd(date: &str) -> bool {
    if date.len() != 8 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let (y, m, d): (u32, u32, u32) = (
        date[..4].parse().unwrap_or(0),
        date[4..6].parse().unwrap_or(0),
        date[6..].parse().unwrap_or(0),
    );
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

#[cfg(test)]
mod tests;
