//! Which archives of a run a stage transfer takes (spec §4.4, §4.5): the requested target
//! families, the exclusion lists and the file choice.

use std::collections::BTreeSet;
use std::io::{self, Write};

use artifacts::{ArtifactName, base_target};

use crate::{BuildTopology, Checkout, CheckoutError};

/// The artifact components, in the order messages list them.
pub const ARTIFACT_COMPONENTS: [&str; 6] = ["lib", "run", "dev", "dbg", "doc", "test"];

/// Parses a `,`-separated target list (`--amdgpu-targets`): items trimmed, empties dropped.
pub fn parse_targets(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The target options of a stage fetch or copy.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// `--amdgpu-families` (`;`-separated), as given.
    pub families: Option<String>,
    /// `--generic-only`.
    pub generic_only: bool,
    /// `--amdgpu-targets` (`,`-separated), as given.
    pub targets: String,
    /// `--expand-family-to-targets`.
    pub expand: bool,
}

impl Targets {
    /// The requested target families (spec §4.4): `generic`, the families (split on `;`, kept
    /// as given), with `expand` each family's targets not yet listed, then the trimmed
    /// non-empty `--amdgpu-targets`. `--generic-only` gives `generic` alone. `targets_of`
    /// answers a family's targets (none for an unknown family, which is reported on `out`).
    pub fn requested(
        &self,
        targets_of: &dyn Fn(&str) -> Vec<String>,
        out: &mut dyn Write,
    ) -> io::Result<Vec<String>> {
        let mut requested = vec![artifacts::GENERIC_TARGET_FAMILY.to_owned()];
        if self.generic_only {
            writeln!(out, "Using generic (host) artifacts only")?;
            let dropped = parse_targets(&self.targets);
            if !dropped.is_empty() {
                // The reference drops them without a word.
                writeln!(
                    out,
                    "WARNING: --generic-only ignores --amdgpu-targets {}",
                    dropped.join(",")
                )?;
            }
            return Ok(requested);
        }
        if let Some(families) = self.families.as_deref().filter(|f| !f.is_empty()) {
            let families: Vec<&str> = families.split(';').collect();
            requested.extend(families.iter().map(|f| (*f).to_owned()));
            if self.expand {
                for family in families.iter().filter(|f| !f.is_empty()) {
                    let targets = targets_of(family);
                    if targets.is_empty() {
                        writeln!(
                            out,
                            "WARNING: GPU family '{family}' is not in the family table: it adds no targets"
                        )?;
                    }
                    for target in targets {
                        if !requested.contains(&target) {
                            requested.push(target);
                        }
                    }
                }
            }
        }
        requested.extend(parse_targets(&self.targets));
        Ok(requested)
    }

    /// [`Targets::requested`] with the family table of `checkout`, read only when expanding.
    pub fn resolve(
        &self,
        checkout: &Checkout,
        out: &mut dyn Write,
    ) -> Result<Vec<String>, CheckoutError> {
        let map = if self.expand && !self.generic_only && self.families.is_some() {
            Some(checkout.family_map()?)
        } else {
            None
        };
        self.requested(
            &|f| {
                map.as_ref()
                    .map_or_else(Vec::new, |m| m.targets_of(f).to_vec())
            },
            out,
        )
        .map_err(CheckoutError::Write)
    }
}

/// Chooses the archives to transfer (spec §4.5): of `available` file names, those that parse
/// as artifact names, whose name is in `names`, whose component is not excluded and whose
/// target family base-matches a requested target; the `.tar.zst` twin before the `.tar.xz`
/// one, one file per artifact, sorted by name.
pub fn choose_files(
    names: &BTreeSet<&str>,
    targets: &[String],
    available: &[String],
    excluded_components: &BTreeSet<String>,
) -> Vec<String> {
    let bases: BTreeSet<&str> = targets.iter().map(|t| base_target(t)).collect();
    let mut sorted: Vec<&String> = available.iter().collect();
    let stem = |f: &str| f.rfind(".tar").map_or(f.to_owned(), |i| f[..i].to_owned());
    sorted.sort_by_key(|f| (stem(f), u8::from(!f.ends_with(".tar.zst"))));
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for file in sorted {
        let Some(name) = ArtifactName::from_filename(file) else {
            continue;
        };
        if !names.contains(name.name())
            || excluded_components.contains(name.component())
            || !bases.contains(base_target(name.target_family()))
        {
            continue;
        }
        if seen.insert(name.clone()) {
            out.push(file.clone());
        }
    }
    out
}

/// Artifacts of `wanted` without any chosen archive.
pub fn uncovered<'a>(wanted: &BTreeSet<&'a str>, chosen: &[String]) -> Vec<&'a str> {
    let covered: BTreeSet<&str> = chosen
        .iter()
        .filter_map(|f| ArtifactName::from_filename(f))
        .map(|n| wanted.get(n.name()).copied().unwrap_or_default())
        .collect();
    wanted
        .iter()
        .copied()
        .filter(|w| !covered.contains(w))
        .collect()
}

/// Splits a `,`/`;`-separated exclusion list: items trimmed, empties dropped.
pub fn split_list(value: &str) -> BTreeSet<String> {
    value
        .split([',', ';'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `--exclude-components`, validated: each must be one of [`ARTIFACT_COMPONENTS`].
pub fn parse_excluded_components(value: &str) -> Result<BTreeSet<String>, CheckoutError> {
    let items = split_list(value);
    let unknown: Vec<String> = items
        .iter()
        .filter(|c| !ARTIFACT_COMPONENTS.contains(&c.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(CheckoutError::InvalidComponents { unknown });
    }
    Ok(items)
}

/// `--exclude-artifacts`, validated against the topology's artifact names.
pub fn parse_excluded_artifacts(
    value: &str,
    topology: &BuildTopology,
) -> Result<BTreeSet<String>, CheckoutError> {
    let items = split_list(value);
    let valid: BTreeSet<&str> = topology.artifact_names().collect();
    let unknown: Vec<String> = items
        .iter()
        .filter(|a| !valid.contains(a.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(CheckoutError::InvalidArtifacts {
            unknown,
            valid: valid.into_iter().map(str::to_owned).collect(),
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests;
