//! Consistency checks of a loaded topology: names, allowed values, references, cycles,
//! source-set ownership.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::BuildTopology;

/// The platforms a topology may name.
pub const PLATFORMS: [&str; 2] = ["linux", "windows"];

/// The CPU processors a topology may name.
pub const PROCESSORS: [&str; 3] = ["aarch64", "ppc64le", "x86_64"];

/// What kind of entry a [`Problem`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// `[source_sets.<name>]`.
    SourceSet,
    /// `[build_stages.<name>]`.
    BuildStage,
    /// `[artifact_groups.<name>]`.
    ArtifactGroup,
    /// `[artifacts.<name>]`.
    Artifact,
    /// An entry of a source set's `external_git_sources`.
    ExternalGitSource,
}

impl EntryKind {
    /// The kind in lower case, as in `source set`.
    pub fn noun(self) -> &'static str {
        match self {
            EntryKind::SourceSet => "source set",
            EntryKind::BuildStage => "build stage",
            EntryKind::ArtifactGroup => "artifact group",
            EntryKind::Artifact => "artifact",
            EntryKind::ExternalGitSource => "external git source",
        }
    }
}

/// Capitalized, to start a sentence: `Source set`.
impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = self.noun();
        f.write_str(&noun[..1].to_uppercase())?;
        f.write_str(&noun[1..])
    }
}

/// One inconsistency found by [`BuildTopology::problems`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// An entry name that is not lowercase words joined by `-`.
    #[error("{kind} `{name}` should be lowercase-with-hyphens")]
    EntryName {
        /// What the entry is.
        kind: EntryKind,
        /// Its name.
        name: String,
    },
    /// A `feature_name`, `feature_group` or conditional build flag that is not uppercase
    /// words joined by `_`.
    #[error("Artifact `{artifact}` {key} `{value}` should be UPPERCASE_WITH_UNDERSCORES")]
    FeatureName {
        /// The artifact.
        artifact: String,
        /// `feature_name`, `feature_group` or `disable_platforms_if_flags_not_set`.
        key: &'static str,
        /// The value.
        value: String,
    },
    /// A platform other than those of [`PLATFORMS`].
    #[error("{kind} `{name}` has invalid {key} `{value}` (expected one of: linux, windows)")]
    Platform {
        /// What the entry is.
        kind: EntryKind,
        /// Its name.
        name: String,
        /// `platform`, `disable_platforms` or `disable_platforms_if_flags_not_set`.
        key: &'static str,
        /// The value.
        value: String,
    },
    /// A processor other than those of [`PROCESSORS`].
    #[error(
        "Artifact `{artifact}` has invalid disable_processors `{value}` (expected one of: aarch64, ppc64le, x86_64)"
    )]
    Processor {
        /// The artifact.
        artifact: String,
        /// The value.
        value: String,
    },
    /// A reference to an entry that is not defined.
    #[error("{kind} `{name}` references unknown {} `{target}`", target_kind.noun())]
    UnknownReference {
        /// What the referring entry is.
        kind: EntryKind,
        /// Its name.
        name: String,
        /// What the reference should name.
        target_kind: EntryKind,
        /// The undefined name.
        target: String,
    },
    /// Group or artifact dependencies that lead back to where they started.
    #[error("Circular dependency detected involving {} `{name}`", kind.noun())]
    Cycle {
        /// Groups or artifacts.
        kind: EntryKind,
        /// An entry on the cycle.
        name: String,
    },
    /// An external git source without its `name`, `origin`, `commit` or `path`.
    #[error("External git source `{name}` in source set `{source_set}` has no {key}")]
    MissingKey {
        /// The source set.
        source_set: String,
        /// The external source's name (may be empty).
        name: String,
        /// The missing key.
        key: &'static str,
    },
    /// An external source path outside `optional-sources/`, or a `path_prefixes` entry that
    /// is empty, absolute or contains `..`.
    #[error("{kind} `{name}` has invalid path `{path}` ({expected})")]
    Path {
        /// What the entry is.
        kind: EntryKind,
        /// Its name.
        name: String,
        /// The path.
        path: String,
        /// What the path should be.
        expected: &'static str,
    },
    /// A submodule, external source path or path prefix claimed by two source sets.
    #[error("{what} `{value}` is used by both source sets `{first}` and `{second}`")]
    SharedSource {
        /// `Submodule`, `External git source path` or `Path prefix`.
        what: &'static str,
        /// The shared value.
        value: String,
        /// The first source set that claims it.
        first: String,
        /// The later one.
        second: String,
    },
}

impl BuildTopology {
    /// Every inconsistency of the topology, in the order names, references, cycles,
    /// source-set ownership; empty when it is consistent.
    ///
    /// [`BuildTopology::load`] does not run these checks: the per-stage sets are defined for
    /// any topology.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        self.check_names(&mut problems);
        self.check_references(&mut problems);
        self.check_cycles(&mut problems);
        self.check_source_ownership(&mut problems);
        problems
    }

    /// [`Error::Invalid`](crate::Error::Invalid) with the [problems](Self::problems), if any.
    pub fn validate(&self) -> Result<(), crate::Error> {
        let problems = self.problems();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(crate::Error::Invalid(problems))
        }
    }

    fn check_names(&self, problems: &mut Vec<Problem>) {
        let entry_names = self
            .stages()
            .iter()
            .map(|s| (EntryKind::BuildStage, &s.name))
            .chain(
                self.artifact_groups()
                    .iter()
                    .map(|g| (EntryKind::ArtifactGroup, &g.name)),
            );
        for (kind, name) in entry_names {
            check_entry_name(kind, name, problems);
        }
        for artifact in self.artifacts() {
            let name = &artifact.name;
            check_entry_name(EntryKind::Artifact, name, problems);
            let features = [
                ("feature_name", artifact.feature_name.as_ref()),
                ("feature_group", artifact.feature_group.as_ref()),
            ];
            for (key, value) in features {
                if let Some(value) = value.filter(|v| !v.is_empty() && !is_feature_name(v)) {
                    problems.push(Problem::FeatureName {
                        artifact: name.clone(),
                        key,
                        value: value.clone(),
                    });
                }
            }
            let platforms = artifact
                .platform
                .iter()
                .filter(|p| !p.is_empty())
                .map(|p| ("platform", p))
                .chain(
                    artifact
                        .disable_platforms
                        .iter()
                        .map(|p| ("disable_platforms", p)),
                );
            for (key, value) in platforms {
                check_platform(EntryKind::Artifact, name, key, value, problems);
            }
            for (platform, flag) in &artifact.disable_platforms_if_flags_not_set {
                let key = "disable_platforms_if_flags_not_set";
                check_platform(EntryKind::Artifact, name, key, platform, problems);
                if !is_feature_name(flag) {
                    problems.push(Problem::FeatureName {
                        artifact: name.clone(),
                        key,
                        value: flag.clone(),
                    });
                }
            }
            for processor in &artifact.disable_processors {
                if !PROCESSORS.contains(&processor.as_str()) {
                    problems.push(Problem::Processor {
                        artifact: name.clone(),
                        value: processor.clone(),
                    });
                }
            }
        }
        for set in self.source_sets() {
            check_source_set(set, problems);
        }
    }

    fn check_references(&self, problems: &mut Vec<Problem>) {
        let groups: BTreeSet<&str> = self
            .artifact_groups()
            .iter()
            .map(|g| g.name.as_str())
            .collect();
        let sets: BTreeSet<&str> = self.source_sets().iter().map(|s| s.name.as_str()).collect();
        let artifacts: BTreeSet<&str> = self.artifact_names().collect();
        let mut check = |kind, name: &str, target_kind, known: &BTreeSet<&str>, target: &str| {
            if !known.contains(target) {
                problems.push(Problem::UnknownReference {
                    kind,
                    name: name.to_owned(),
                    target_kind,
                    target: target.to_owned(),
                });
            }
        };
        use EntryKind::{Artifact, ArtifactGroup, BuildStage, SourceSet};
        for stage in self.stages() {
            for group in &stage.artifact_groups {
                check(BuildStage, &stage.name, ArtifactGroup, &groups, group);
            }
        }
        for group in self.artifact_groups() {
            for dep in &group.artifact_group_deps {
                check(ArtifactGroup, &group.name, ArtifactGroup, &groups, dep);
            }
            for set in &group.source_sets {
                check(ArtifactGroup, &group.name, SourceSet, &sets, set);
            }
        }
        for artifact in self.artifacts() {
            if !artifact.artifact_group.is_empty() {
                let group = &artifact.artifact_group;
                check(Artifact, &artifact.name, ArtifactGroup, &groups, group);
            }
            for dep in &artifact.artifact_deps {
                check(Artifact, &artifact.name, Artifact, &artifacts, dep);
            }
        }
    }

    fn check_cycles(&self, problems: &mut Vec<Problem>) {
        let groups = self.artifact_groups().iter();
        let group_deps = groups.map(|g| (g.name.as_str(), g.artifact_group_deps.as_slice()));
        find_cycles(EntryKind::ArtifactGroup, group_deps, problems);
        let artifact_deps =
            (self.artifacts().iter()).map(|a| (a.name.as_str(), a.artifact_deps.as_slice()));
        find_cycles(EntryKind::Artifact, artifact_deps, problems);
    }

    fn check_source_ownership(&self, problems: &mut Vec<Problem>) {
        type Claims<'a> = Vec<(&'a str, &'a str)>;
        let mut external: Claims<'_> = Vec::new();
        let mut submodules: Claims<'_> = Vec::new();
        let mut prefixes: Claims<'_> = Vec::new();
        for set in self.source_sets() {
            let name = set.name.as_str();
            external.extend(
                set.external_git_sources
                    .iter()
                    .map(|s| (s.path.as_str(), name)),
            );
            submodules.extend(set.submodules.iter().map(|s| (s.as_str(), name)));
            prefixes.extend(
                set.path_prefixes
                    .iter()
                    .map(|p| (p.trim_end_matches('/'), name)),
            );
        }
        let kinds = [
            ("External git source path", external),
            ("Submodule", submodules),
            ("Path prefix", prefixes),
        ];
        for (what, claims) in kinds {
            let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
            for (value, set) in claims {
                match owners.get(value) {
                    Some(&first) if first != set => problems.push(Problem::SharedSource {
                        what,
                        value: value.to_owned(),
                        first: first.to_owned(),
                        second: set.to_owned(),
                    }),
                    Some(_) => {}
                    None => {
                        owners.insert(value, set);
                    }
                }
            }
        }
    }
}

fn check_source_set(set: &crate::SourceSet, problems: &mut Vec<Problem>) {
    let kind = EntryKind::SourceSet;
    check_entry_name(kind, &set.name, problems);
    for platform in &set.disable_platforms {
        check_platform(kind, &set.name, "disable_platforms", platform, problems);
    }
    for source in &set.external_git_sources {
        if source.name.is_empty() {
            missing(set, &source.name, "name", problems);
        } else {
            check_entry_name(EntryKind::ExternalGitSource, &source.name, problems);
        }
        for (key, value) in [("origin", &source.origin), ("commit", &source.commit)] {
            if value.is_empty() {
                missing(set, &source.name, key, problems);
            }
        }
        if source.path.is_empty() {
            missing(set, &source.name, "path", problems);
            continue;
        }
        let parts: Vec<&str> = relative_parts(&source.path);
        let expected = if source.path.starts_with('/') {
            Some("must be relative")
        } else if parts.len() < 2 || parts[0] != "optional-sources" || parts.contains(&"..") {
            Some("must be under optional-sources/")
        } else {
            None
        };
        if let Some(expected) = expected {
            problems.push(Problem::Path {
                kind: EntryKind::ExternalGitSource,
                name: source.name.clone(),
                path: source.path.clone(),
                expected,
            });
        }
    }
    for prefix in &set.path_prefixes {
        let expected = if prefix.is_empty() {
            Some("must not be empty")
        } else if prefix.starts_with('/') {
            Some("must be relative")
        } else if relative_parts(prefix).contains(&"..") {
            Some("must not contain `..`")
        } else {
            None
        };
        if let Some(expected) = expected {
            problems.push(Problem::Path {
                kind,
                name: set.name.clone(),
                path: prefix.clone(),
                expected,
            });
        }
    }
}

/// The components of a `/`-separated path, without empty and `.` components (as a
/// `PurePosixPath` reads them).
fn relative_parts(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect()
}

fn missing(set: &crate::SourceSet, name: &str, key: &'static str, problems: &mut Vec<Problem>) {
    problems.push(Problem::MissingKey {
        source_set: set.name.clone(),
        name: name.to_owned(),
        key,
    });
}

fn check_entry_name(kind: EntryKind, name: &str, problems: &mut Vec<Problem>) {
    if !is_entry_name(name) {
        problems.push(Problem::EntryName {
            kind,
            name: name.to_owned(),
        });
    }
}

fn check_platform(
    kind: EntryKind,
    name: &str,
    key: &'static str,
    value: &str,
    problems: &mut Vec<Problem>,
) {
    if !PLATFORMS.contains(&value) {
        problems.push(Problem::Platform {
            kind,
            name: name.to_owned(),
            key,
            value: value.to_owned(),
        });
    }
}

/// `^[a-z0-9]+(-[a-z0-9]+)*$`.
fn is_entry_name(name: &str) -> bool {
    is_words(name, '-', |c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// `^[A-Z0-9]+(_[A-Z0-9]+)*$`.
fn is_feature_name(name: &str) -> bool {
    is_words(name, '_', |c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

fn is_words(text: &str, separator: char, letter: impl Fn(char) -> bool) -> bool {
    text.split(separator)
        .all(|word| !word.is_empty() && word.chars().all(&letter))
}

/// Reports one entry per dependency cycle reached by a depth-first walk in file order, like
/// the reference: the walk stops at the first cycle of each graph.
fn find_cycles<'a>(
    kind: EntryKind,
    entries: impl Iterator<Item = (&'a str, &'a [String])>,
    problems: &mut Vec<Problem>,
) {
    fn visit<'a>(
        name: &'a str,
        deps: &BTreeMap<&str, &'a [String]>,
        visited: &mut BTreeSet<&'a str>,
        on_path: &mut Vec<&'a str>,
    ) -> Option<&'a str> {
        visited.insert(name);
        on_path.push(name);
        for dep in deps.get(name).into_iter().flat_map(|d| d.iter()) {
            if on_path.contains(&dep.as_str()) {
                return Some(dep);
            }
            if !visited.contains(dep.as_str())
                && let Some(found) = visit(dep, deps, visited, on_path)
            {
                return Some(found);
            }
        }
        on_path.pop();
        None
    }

    let entries: Vec<(&str, &[String])> = entries.collect();
    let deps: BTreeMap<&str, &[String]> = entries.iter().copied().collect();
    let mut visited = BTreeSet::new();
    for &(name, _) in &entries {
        if !visited.contains(name) {
            let mut on_path = Vec::new();
            if let Some(found) = visit(name, &deps, &mut visited, &mut on_path) {
                problems.push(Problem::Cycle {
                    kind,
                    name: found.to_owned(),
                });
            }
        }
    }
}
