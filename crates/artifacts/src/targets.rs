use std::collections::BTreeSet;

use crate::ArtifactName;

/// The target family of artifacts built for every GPU.
pub const GENERIC_TARGET_FAMILY: &str = "generic";

/// The base architecture of a target: the text before the first `:` (`gfx942:xnack+` →
/// `gfx942`), or the whole text when that part would be empty.
pub fn base_target(target: &str) -> &str {
    match target.split_once(':') {
        Some((base, _)) if !base.is_empty() => base,
        _ => target,
    }
}

/// Which artifacts a fetch keeps by target family: `generic`, the artifact group and the
/// requested targets, compared by base architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSelection {
    families: BTreeSet<String>,
    bases: BTreeSet<String>,
}

impl TargetSelection {
    /// `generic` ∪ `{artifact_group}` ∪ `targets`. Empty strings are ignored.
    pub fn new<'a>(
        artifact_group: Option<&'a str>,
        targets: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let families: BTreeSet<String> = std::iter::once(GENERIC_TARGET_FAMILY)
            .chain(artifact_group)
            .chain(targets)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        let bases = families.iter().map(|t| base_target(t).to_owned()).collect();
        Self { families, bases }
    }

    /// The families asked for, sorted.
    pub fn families(&self) -> impl Iterator<Item = &str> {
        self.families.iter().map(String::as_str)
    }

    /// Whether an artifact of `target_family` is selected: its base architecture equals the
    /// base of one of the families (exact and case-sensitive; a family does not expand to its
    /// targets). `generic` is always selected.
    pub fn matches_target(&self, target_family: &str) -> bool {
        !target_family.is_empty() && self.bases.contains(base_target(target_family))
    }

    /// Whether `artifact` is selected.
    pub fn matches(&self, artifact: &ArtifactName) -> bool {
        self.matches_target(artifact.target_family())
    }
}
