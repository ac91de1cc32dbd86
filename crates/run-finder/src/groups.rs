//! Which archives of a run belong to an artifact group (spec §3.2, third matcher).

use artifacts::ArtifactName;
use regex::Regex;

/// What [`select_group`] decided for one group and one run's archives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMatch {
    /// The selected archives, sorted and de-duplicated (empty when no archive of the group
    /// itself, only generic ones, was found).
    pub artifact_filenames: Vec<String>,
    /// The `--require-artifact` patterns no selected archive matches.
    pub missing_patterns: Vec<String>,
}

impl GroupMatch {
    /// Whether the group counts as present in the run.
    pub fn is_present(&self) -> bool {
        !self.artifact_filenames.is_empty() && self.missing_patterns.is_empty()
    }
}

/// Text before the first `:`, lowercased (`gfx942:xnack+` → `gfx942`, `:xnack+` → empty).
fn base_lower(target: &str) -> String {
    target.split(':').next().unwrap_or("").to_lowercase()
}

/// The archives of `file_names` that belong to `group`: generic ones, and those whose target
/// family has, case-insensitively and by base architecture, the group's name, one of
/// `family_targets` (the group's targets in the family table) or one of `explicit_targets`.
/// Names that are not `{name}_{component}_{family}` archives are skipped. Unless the group is
/// `generic`, at least one non-generic archive must match, else nothing is selected. Every
/// pattern must then search-match some selected name.
pub fn select_group(
    file_names: &[String],
    group: &str,
    family_targets: &[String],
    explicit_targets: &[String],
    required: &[Regex],
) -> GroupMatch {
    let requested: Vec<String> = std::iter::once(group)
        .chain(family_targets.iter().map(String::as_str))
        .chain(explicit_targets.iter().map(String::as_str))
        .filter(|t| !t.is_empty())
        .map(base_lower)
        .collect();
    let mut specific = group.eq_ignore_ascii_case("generic");
    let mut kept: Vec<String> = Vec::new();
    for file_name in file_names {
        let Some(name) = ArtifactName::from_filename(file_name) else {
            continue;
        };
        let family = name.target_family();
        if family.eq_ignore_ascii_case("generic") {
            kept.push(file_name.clone());
        } else if requested.contains(&base_lower(family)) {
            kept.push(file_name.clone());
            specific = true;
        }
    }
    if !specific {
        kept.clear();
    }
    kept.sort();
    kept.dedup();
    let missing_patterns = required
        .iter()
        .filter(|r| !kept.iter().any(|n| r.is_match(n)))
        .map(|r| r.as_str().to_owned())
        .collect();
    GroupMatch {
        artifact_filenames: kept,
        missing_patterns,
    }
}

/// The requested groups, de-duplicated in first-seen order.
pub(crate) fn unique_groups(groups: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for g in groups {
        if !out.contains(&g.as_str()) {
            out.push(g);
        }
    }
    out
}

#[cfg(test)]
mod tests;
