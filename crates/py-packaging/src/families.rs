//! `--{linux,windows}-amdgpu-families` (spec §1.2): list parsing and expansion of families to
//! GPU targets through `cmake/therock_amdgpu_targets.cmake`; and the default version (§1.1).

use std::collections::BTreeSet;

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

/// Family → targets, from the `therock_add_amdgpu_target(...)` calls of the cmake file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FamilyMap {
    /// In file order; every target is also a family of itself.
    families: Vec<(String, Vec<String>)>,
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                s.push(c);
            }
            out.push(s);
        } else {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '"' {
                    break;
                }
                s.push(c);
                chars.next();
            }
            out.push(s);
        }
    }
    out
}

impl FamilyMap {
    /// Parses the text of `therock_amdgpu_targets.cmake`.
    pub fn parse(cmake: &str) -> Self {
        let mut map = FamilyMap::default();
        let mut rest = cmake;
        while let Some(at) = rest.find("therock_add_amdgpu_target(") {
            let args_start = at + "therock_add_amdgpu_target(".len();
            let Some(len) = rest[args_start..].find(')') else {
                break;
            };
            let args: String = rest[args_start..args_start + len]
                .lines()
                .map(|l| l.split('#').next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            rest = &rest[args_start + len..];
            let toks = tokens(&args);
            let Some(target) = toks.first() else {
                continue;
            };
            map.add(target, target);
            if let Some(f) = toks.iter().position(|t| t == "FAMILY") {
                for family in toks[f + 1..]
                    .iter()
                    .take_while(|t| *t != "EXCLUDE_TARGET_PROJECTS")
                {
                    map.add(family, target);
                }
            }
        }
        map
    }

    fn add(&mut self, family: &str, target: &str) {
        match self.families.iter_mut().find(|(f, _)| f == family) {
            Some((_, targets)) => {
                if !targets.iter().any(|t| t == target) {
                    targets.push(target.to_owned());
                }
            }
            None => self
                .families
                .push((family.to_owned(), vec![target.to_owned()])),
        }
    }

    /// The family an artifact group stands for: the group itself when it is a family (or a
    /// target), else the longest family it starts with followed by `-` — the group of a build
    /// variant (`gfx94X-dcgpu-asan`, `gfx94X-dcgpu-host-asan`); `None` when there is none.
    pub fn family_of_group<'a>(&'a self, group: &str) -> Option<&'a str> {
        self.families
            .iter()
            .map(|(f, _)| f.as_str())
            .filter(|f| {
                group == *f
                    || group
                        .strip_prefix(f)
                        .is_some_and(|rest| rest.starts_with('-') && rest.len() > 1)
            })
            .max_by_key(|f| f.len())
    }

    /// The targets of `family` in file order; none for an unknown family.
    pub fn targets_of(&self, family: &str) -> &[String] {
        self.families
            .iter()
            .find(|(f, _)| f == family)
            .map_or(&[], |(_, targets)| targets.as_slice())
    }

    /// The targets of `families`, in order, de-duplicated; unknown families are an error
    /// listing them and every known family.
    pub fn expand(&self, families: &[String]) -> Result<Vec<String>, Error> {
        let unknown: Vec<&String> = families
            .iter()
            .filter(|f| !self.families.iter().any(|(k, _)| k == *f))
            .collect();
        if !unknown.is_empty() {
            let known: BTreeSet<&str> = self.families.iter().map(|(k, _)| k.as_str()).collect();
            return Err(Error::UnknownFamilies {
                unknown: unknown.into_iter().cloned().collect(),
                known: known.into_iter().map(str::to_owned).collect(),
            });
        }
        let mut out: Vec<String> = Vec::new();
        for f in families {
            let (_, targets) = self.families.iter().find(|(k, _)| k == f).expect("checked");
            for t in targets {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
        Ok(out)
    }
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
