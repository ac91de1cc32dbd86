//! Loading the topology and the per-stage artifact sets.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::model::{Document, named};
use crate::{Artifact, ArtifactGroup, BuildStage, Error, Position, SourceSet};

/// The file name of the topology, at the root of a TheRock checkout.
pub const TOPOLOGY_FILE_NAME: &str = "BUILD_TOPOLOGY.toml";

/// The stage name that `fetch` and `push` read as "every artifact".
pub const ALL_STAGES: &str = "all";

/// A parsed `BUILD_TOPOLOGY.toml`: source sets, build stages, artifact groups and artifacts,
/// each in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildTopology {
    source_sets: Vec<SourceSet>,
    stages: Vec<BuildStage>,
    artifact_groups: Vec<ArtifactGroup>,
    artifacts: Vec<Artifact>,
}

impl BuildTopology {
    /// Reads and parses the topology at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        #[expect(
            clippy::disallowed_methods,
            reason = "the error variants name the path; fs-err would name it a second time"
        )]
        let text = std::fs::read_to_string(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                Error::NotFound(path.to_path_buf())
            } else {
                Error::Read {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
        parse(&text, Some(path))
    }

    /// The source sets, in file order.
    pub fn source_sets(&self) -> &[SourceSet] {
        &self.source_sets
    }

    /// The build stages, in file order.
    pub fn stages(&self) -> &[BuildStage] {
        &self.stages
    }

    /// The artifact groups, in file order.
    pub fn artifact_groups(&self) -> &[ArtifactGroup] {
        &self.artifact_groups
    }

    /// The artifacts, in file order.
    pub fn artifacts(&self) -> &[Artifact] {
        &self.artifacts
    }

    /// The stage called `name`; [`Error::UnknownStage`] lists the known ones.
    pub fn stage(&self, name: &str) -> Result<&BuildStage, Error> {
        self.stages
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| Error::UnknownStage {
                name: name.to_owned(),
                known: self.stage_names().map(str::to_owned).collect(),
            })
    }

    /// The stage names, in file order.
    pub fn stage_names(&self) -> impl Iterator<Item = &str> {
        self.stages.iter().map(|s| s.name.as_str())
    }

    /// The artifact group called `name`, if any.
    pub fn artifact_group(&self, name: &str) -> Option<&ArtifactGroup> {
        self.artifact_groups.iter().find(|g| g.name == name)
    }

    /// The artifact called `name`, if any.
    pub fn artifact(&self, name: &str) -> Option<&Artifact> {
        self.artifacts.iter().find(|a| a.name == name)
    }

    /// The artifact names, in file order.
    pub fn artifact_names(&self) -> impl Iterator<Item = &str> {
        self.artifacts.iter().map(|a| a.name.as_str())
    }

    /// The artifacts whose `artifact_group` is `group`, in file order.
    pub fn artifacts_in_group<'a>(&'a self, group: &'a str) -> impl Iterator<Item = &'a Artifact> {
        self.artifacts
            .iter()
            .filter(move |a| a.artifact_group == group)
    }

    /// The artifacts a stage builds: those whose group is one of the stage's groups.
    pub fn produced_artifacts(&self, stage: &str) -> Result<BTreeSet<&str>, Error> {
        Ok(self.produced_by(self.stage(stage)?))
    }

    /// The artifacts a stage needs from earlier stages: every artifact of each direct group
    /// dependency of the stage's groups, every `artifact_deps` entry of the stage's artifacts,
    /// each with its transitive `artifact_deps`, minus what the stage produces.
    ///
    /// Group dependencies are not followed transitively (only artifact dependencies are), a
    /// dependency that is not a defined artifact is kept, and platform-disabled artifacts are
    /// not removed.
    pub fn inbound_artifacts(&self, stage: &str) -> Result<BTreeSet<&str>, Error> {
        let stage = self.stage(stage)?;
        let mut inbound = BTreeSet::new();
        let mut roots: Vec<&str> = Vec::new();
        for group in &stage.artifact_groups {
            let Some(group) = self.artifact_group(group) else {
                continue;
            };
            for dep_group in &group.artifact_group_deps {
                roots.extend(self.artifacts_in_group(dep_group).map(|a| a.name.as_str()));
            }
        }
        for artifact in self.stage_artifacts(stage) {
            roots.extend(artifact.artifact_deps.iter().map(String::as_str));
        }
        // The roots and their transitive `artifact_deps`; a name is expanded once, so diamonds
        // and cycles end.
        while let Some(name) = roots.pop() {
            if inbound.insert(name)
                && let Some(artifact) = self.artifact(name)
            {
                roots.extend(artifact.artifact_deps.iter().map(String::as_str));
            }
        }
        let produced = self.produced_by(stage);
        inbound.retain(|name| !produced.contains(name));
        Ok(inbound)
    }

    /// What `fetch --stage {stage}` downloads: [`ALL_STAGES`] is every artifact of the
    /// topology, anything else the stage's [inbound artifacts](Self::inbound_artifacts).
    pub fn artifacts_to_fetch(&self, stage: &str) -> Result<BTreeSet<&str>, Error> {
        if stage == ALL_STAGES {
            Ok(self.artifact_names().collect())
        } else {
            self.inbound_artifacts(stage)
        }
    }

    /// What `push --stage {stage}` uploads: [`ALL_STAGES`] is the union of every stage's
    /// produced artifacts, anything else the stage's [produced
    /// artifacts](Self::produced_artifacts).
    pub fn artifacts_to_push(&self, stage: &str) -> Result<BTreeSet<&str>, Error> {
        if stage == ALL_STAGES {
            Ok(self
                .stages
                .iter()
                .flat_map(|s| self.produced_by(s))
                .collect())
        } else {
            self.produced_artifacts(stage)
        }
    }

    fn stage_artifacts<'a>(&'a self, stage: &BuildStage) -> impl Iterator<Item = &'a Artifact> {
        self.artifacts
            .iter()
            .filter(|a| stage.artifact_groups.contains(&a.artifact_group))
    }

    fn produced_by<'a>(&'a self, stage: &BuildStage) -> BTreeSet<&'a str> {
        self.stage_artifacts(stage)
            .map(|a| a.name.as_str())
            .collect()
    }
}

impl FromStr for BuildTopology {
    type Err = Error;

    /// Parses the text of a topology file.
    fn from_str(text: &str) -> Result<Self, Error> {
        parse(text, None)
    }
}

fn parse(text: &str, path: Option<&Path>) -> Result<BuildTopology, Error> {
    let document: Document = toml::from_str(text).map_err(|e| Error::Toml {
        path: path.map(PathBuf::from),
        position: e.span().map(|span| Position::at(text, span.start)),
        message: e.message().trim_end().to_owned(),
    })?;
    Ok(BuildTopology {
        source_sets: named(document.source_sets, |s, name| s.name = name),
        stages: named(document.build_stages, |s, name| s.name = name),
        artifact_groups: named(document.artifact_groups, |g, name| g.name = name),
        artifacts: named(document.artifacts, |a, name| a.name = name),
    })
}
