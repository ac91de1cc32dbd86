//! The entries of `BUILD_TOPOLOGY.toml`, with the defaults that apply when a key is absent.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

/// A closed set of values spelled in the file as given; `as_str` gives the spelling back.
macro_rules! spelled_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $text:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
        pub enum $name {
            $($(#[$variant_meta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            #[doc = concat!("The spelling in the file: ", $("`", $text, "` "),+)]
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

spelled_enum! {
    /// Whether a stage or an artifact group is built once or once per GPU family.
    pub enum BuildType {
        /// Built once (`generic`, the default).
        #[default]
        Generic = "generic",
        /// Built once per GPU family (`per-arch`).
        PerArch = "per-arch",
    }
}

spelled_enum! {
    /// Whether an artifact ships one archive for all GPU targets or one per target family.
    pub enum ArtifactType {
        /// One build for every target (`target-neutral`, the default).
        #[default]
        TargetNeutral = "target-neutral",
        /// One build per target family (`target-specific`).
        TargetSpecific = "target-specific",
    }
}

/// A table of the file: derives, every key optional with the defaults of `Default`, and
/// fields may be added. `named` tables are entries of a top-level table and get its key as
/// their `name`.
macro_rules! table {
    ($(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
        #[serde(default)]
        #[non_exhaustive]
        pub struct $name { $($body)* }
    };
    (named $(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        table! {
            $(#[$meta])*
            pub struct $name {
                /// The table name.
                #[serde(skip)]
                pub name: String,
                $($body)*
            }
        }
    };
}

table! {
    named
    /// `[source_sets.<name>]`: git submodules and external checkouts needed together.
    pub struct SourceSet {
        /// `description` (default empty).
        pub description: String,
        /// `submodules`: git submodule directory names.
        pub submodules: Vec<String>,
        /// `external_git_sources`: pinned checkouts under `optional-sources/`.
        pub external_git_sources: Vec<ExternalGitSource>,
        /// `disable_platforms`: platforms where the set is not fetched.
        pub disable_platforms: Vec<String>,
        /// `path_prefixes`: repository paths owned by the set.
        pub path_prefixes: Vec<String>,
    }
}

table! {
    /// One `{name, origin, commit, path}` of a source set's `external_git_sources`.
    pub struct ExternalGitSource {
        /// `name` (default empty).
        pub name: String,
        /// `origin`: the clone URL (default empty).
        pub origin: String,
        /// `commit`: the pinned commit (default empty).
        pub commit: String,
        /// `path`: the checkout directory, relative to the repository (default empty).
        pub path: String,
    }
}

table! {
    named
    /// `[build_stages.<name>]`: one CI job and the artifact groups it builds.
    pub struct BuildStage {
        /// `description` (default empty).
        pub description: String,
        /// `artifact_groups`: the groups built by this stage.
        pub artifact_groups: Vec<String>,
        /// `type` (default `generic`).
        #[serde(rename = "type")]
        pub build_type: BuildType,
    }
}

table! {
    named
    /// `[artifact_groups.<name>]`: related artifacts with shared dependencies.
    pub struct ArtifactGroup {
        /// `type` (default `generic`).
        #[serde(rename = "type")]
        pub build_type: BuildType,
        /// `description` (default empty).
        pub description: String,
        /// `artifact_group_deps`: groups whose artifacts this group consumes.
        pub artifact_group_deps: Vec<String>,
        /// `source_sets`: the source sets the group is built from.
        pub source_sets: Vec<String>,
    }
}

table! {
    named
    /// `[artifacts.<name>]`: one build output, the unit that is archived and uploaded.
    pub struct Artifact {
        /// `artifact_group`: the owning group (default empty).
        pub artifact_group: String,
        /// `type` (default `target-neutral`).
        #[serde(rename = "type")]
        pub artifact_type: ArtifactType,
        /// `artifact_deps`: other artifacts needed to build this one.
        pub artifact_deps: Vec<String>,
        /// `platform`: the only platform the artifact exists on, if any.
        pub platform: Option<String>,
        /// `feature_name`: overrides the build feature name ([`Artifact::feature_name`]).
        pub feature_name: Option<String>,
        /// `feature_group`: overrides the build feature group ([`Artifact::feature_group`]).
        pub feature_group: Option<String>,
        /// `disable_platforms`: platforms where the artifact is not built.
        pub disable_platforms: Vec<String>,
        /// `disable_platforms_if_flags_not_set`: platform → build flag that must be set there.
        pub disable_platforms_if_flags_not_set: BTreeMap<String, String>,
        /// `disable_processors`: CPU processors where the artifact is not built.
        pub disable_processors: Vec<String>,
        /// `python_requires`: pip install arguments.
        pub python_requires: Vec<String>,
        /// `split_databases`: database handlers used when splitting the artifact.
        pub split_databases: Vec<String>,
        /// `test_artifacts`: artifacts needed to test this one.
        pub test_artifacts: Vec<String>,
    }
}

impl Artifact {
    /// The build feature name: `feature_name`, else the name upper-cased with `-` → `_`.
    pub fn feature_name(&self) -> String {
        feature_spelling(self.feature_name.as_deref(), &self.name)
    }

    /// The build feature group: `feature_group`, else the group upper-cased with `-` → `_`.
    pub fn feature_group(&self) -> String {
        feature_spelling(self.feature_group.as_deref(), &self.artifact_group)
    }

    /// Whether the artifact is not built on `platform` given the enabled build flags: listed
    /// in `disable_platforms`, or its conditional flag for the platform is not enabled. An
    /// empty platform disables nothing.
    pub fn is_disabled_on_platform(&self, platform: &str, enabled_flags: &[&str]) -> bool {
        if platform.is_empty() {
            return false;
        }
        if self.disable_platforms.iter().any(|p| p == platform) {
            return true;
        }
        match self.disable_platforms_if_flags_not_set.get(platform) {
            Some(flag) if !flag.is_empty() => !enabled_flags.contains(&flag.as_str()),
            _ => false,
        }
    }

    /// Whether the artifact is not built on the CPU `processor` (`x86_64`, `aarch64`,
    /// `ppc64le`). An empty processor disables nothing.
    pub fn is_disabled_on_processor(&self, processor: &str) -> bool {
        !processor.is_empty() && self.disable_processors.iter().any(|p| p == processor)
    }
}

fn feature_spelling(explicit: Option<&str>, name: &str) -> String {
    match explicit {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => name.to_uppercase().replace('-', "_"),
    }
}

/// The named entries of one top-level table, in file order.
pub(crate) struct Entries<T>(pub(crate) Vec<(String, T)>);

impl<T> Default for Entries<T> {
    fn default() -> Self {
        Entries(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Entries<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for EntriesVisitor<T> {
            type Value = Entries<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of tables")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<T>, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }

        deserializer.deserialize_map(EntriesVisitor(std::marker::PhantomData))
    }
}

/// The four tables the topology reads; `[metadata]` and unknown tables are ignored.
#[derive(Default, Deserialize)]
#[serde(default)]
pub(crate) struct Document {
    pub(crate) source_sets: Entries<SourceSet>,
    pub(crate) build_stages: Entries<BuildStage>,
    pub(crate) artifact_groups: Entries<ArtifactGroup>,
    pub(crate) artifacts: Entries<Artifact>,
}

/// Moves each table name into its entry.
pub(crate) fn named<T>(entries: Entries<T>, set_name: impl Fn(&mut T, String)) -> Vec<T> {
    entries
        .0
        .into_iter()
        .map(|(name, mut entry)| {
            set_name(&mut entry, name);
            entry
        })
        .collect()
}
