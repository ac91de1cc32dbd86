//! `artifact_manager`: the stage-aware transfer of build artifacts between CI jobs (spec §4).
//! `fetch` downloads and unpacks what a stage consumes, `push` archives and uploads what it
//! produced, `copy` re-uses an earlier run's stage outputs server-side, `info` and
//! `list-stages` describe the build topology.

mod copy;
mod fetch;
mod info;
mod push;

use std::collections::BTreeSet;
use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use artifact_backend::{ArtifactBackend, ArtifactEntry};
use artifacts::{ArtifactName, base_target};
use build_topology::BuildTopology;
use workflow_outputs::{GithubRepository, Platform, WorkflowOutputRoot};

pub use copy::{CopyRequest, copy};
pub use fetch::{FetchMode, FetchRequest, fetch};
pub use info::{info, list_stages};
pub use push::{PushRequest, push};

/// The artifact components, in the order messages list them.
pub const ARTIFACT_COMPONENTS: [&str; 6] = ["lib", "run", "dev", "dbg", "doc", "test"];

/// The GPU family table of a TheRock checkout, relative to its root.
pub const AMDGPU_TARGETS_CMAKE: &str = "cmake/therock_amdgpu_targets.cmake";

/// The tool's standard output: whole lines, one writer at a time, from any task.
#[derive(Clone)]
pub struct Lines(Arc<Mutex<Box<dyn Write + Send>>>);

impl Lines {
    /// Lines to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Lines(Arc::new(Mutex::new(out)))
    }

    /// Writes one line and flushes. A closed output (`| head`) stops no transfer.
    pub fn line(&self, text: impl Display) {
        let mut out = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }

    /// A writer for code that prints blocks of lines (the bucket resolution).
    fn writer(&self) -> LinesWriter {
        LinesWriter(self.clone())
    }
}

struct LinesWriter(Lines);

impl Write for LinesWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut out = (self.0)
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        out.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        (self.0)
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .flush()
    }
}

/// A failure whose explanation is already printed (the `ERROR:` lines): exit 1, nothing more.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Reported(pub String);

/// A usage error found after parsing (exit 2), e.g. an empty `THEROCK_LOCAL_STAGING_DIR`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Where the topology and the GPU family table come from.
#[derive(Debug, Clone, Default)]
pub struct Checkout {
    /// `--topology`.
    pub topology: Option<PathBuf>,
    /// `--therock-dir`, else `THEROCK_DIR`.
    pub therock_dir: Option<PathBuf>,
}

impl Checkout {
    /// The topology file: `--topology`, else `{therock_dir}/BUILD_TOPOLOGY.toml`, else the first
    /// `BUILD_TOPOLOGY.toml` in the working directory or one of its parents.
    pub fn topology_path(&self) -> anyhow::Result<PathBuf> {
        if let Some(path) = &self.topology {
            return Ok(path.clone());
        }
        if let Some(dir) = &self.therock_dir {
            return Ok(dir.join(build_topology::TOPOLOGY_FILE_NAME));
        }
        let cwd = std::env::current_dir().context("Cannot read the working directory")?;
        cwd.ancestors()
            .map(|d| d.join(build_topology::TOPOLOGY_FILE_NAME))
            .find(|p| p.is_file())
            .with_context(|| {
                format!(
                    "No {} in {} or its parents: pass --topology FILE or --therock-dir DIR (a TheRock checkout)",
                    build_topology::TOPOLOGY_FILE_NAME,
                    cwd.display()
                )
            })
    }

    /// Loads the topology; its problems (unknown dependencies, ...) are warnings on stderr.
    pub fn load_topology(&self) -> anyhow::Result<BuildTopology> {
        let path = self.topology_path()?;
        let topology = BuildTopology::load(&path)?;
        for problem in topology.problems() {
            tracing::warn!("{}: {problem}", path.display());
        }
        Ok(topology)
    }

    /// The GPU family table: `{therock_dir}/cmake/therock_amdgpu_targets.cmake`, else beside
    /// the topology file.
    pub fn family_map(&self) -> anyhow::Result<py_packaging::FamilyMap> {
        let root = match &self.therock_dir {
            Some(dir) => dir.clone(),
            None => self
                .topology_path()?
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        };
        let path = root.join(AMDGPU_TARGETS_CMAKE);
        if !path.is_file() {
            anyhow::bail!("AMDGPU targets cmake file not found: {}", path.display());
        }
        let text = fs_err::read_to_string(&path)?;
        Ok(py_packaging::FamilyMap::parse(&text))
    }
}

/// The target options of `fetch` and `copy`.
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
    /// answers a family's targets (none for an unknown family, which is reported on `lines`).
    pub fn requested(
        &self,
        targets_of: &dyn Fn(&str) -> Vec<String>,
        lines: &Lines,
    ) -> Vec<String> {
        let mut out = vec![artifacts::GENERIC_TARGET_FAMILY.to_owned()];
        if self.generic_only {
            lines.line("Using generic (host) artifacts only");
            let dropped = crate::fetch_artifacts::parse_targets(&self.targets);
            if !dropped.is_empty() {
                // The reference drops them without a word.
                lines.line(format!(
                    "WARNING: --generic-only ignores --amdgpu-targets {}",
                    dropped.join(",")
                ));
            }
            return out;
        }
        if let Some(families) = self.families.as_deref().filter(|f| !f.is_empty()) {
            let families: Vec<&str> = families.split(';').collect();
            out.extend(families.iter().map(|f| (*f).to_owned()));
            if self.expand {
                for family in families.iter().filter(|f| !f.is_empty()) {
                    let targets = targets_of(family);
                    if targets.is_empty() {
                        lines.line(format!(
                            "WARNING: GPU family '{family}' is not in the family table: it adds no targets"
                        ));
                    }
                    for target in targets {
                        if !out.contains(&target) {
                            out.push(target);
                        }
                    }
                }
            }
        }
        out.extend(crate::fetch_artifacts::parse_targets(&self.targets));
        out
    }

    /// [`Targets::requested`] with the family table of `checkout`, read only when expanding.
    pub fn resolve(&self, checkout: &Checkout, lines: &Lines) -> anyhow::Result<Vec<String>> {
        let map = if self.expand && !self.generic_only && self.families.is_some() {
            Some(checkout.family_map()?)
        } else {
            None
        };
        Ok(self.requested(
            &|f| {
                map.as_ref()
                    .map_or_else(Vec::new, |m| m.targets_of(f).to_vec())
            },
            lines,
        ))
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
pub fn parse_excluded_components(value: &str) -> anyhow::Result<BTreeSet<String>> {
    let items = split_list(value);
    let unknown: Vec<&str> = items
        .iter()
        .map(String::as_str)
        .filter(|c| !ARTIFACT_COMPONENTS.contains(c))
        .collect();
    if !unknown.is_empty() {
        anyhow::bail!(
            "Invalid artifact component(s): {}. Valid components are: {}",
            unknown.join(", "),
            ARTIFACT_COMPONENTS.join(", ")
        );
    }
    Ok(items)
}

/// `--exclude-artifacts`, validated against the topology's artifact names.
pub fn parse_excluded_artifacts(
    value: &str,
    topology: &BuildTopology,
) -> anyhow::Result<BTreeSet<String>> {
    let items = split_list(value);
    let valid: BTreeSet<&str> = topology.artifact_names().collect();
    let unknown: Vec<&str> = items
        .iter()
        .map(String::as_str)
        .filter(|a| !valid.contains(a))
        .collect();
    if !unknown.is_empty() {
        anyhow::bail!(
            "Invalid artifact name(s): {}. Valid artifacts are: {}",
            unknown.join(", "),
            valid.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(items)
}

/// Prints the unknown-stage lines and returns the failure.
fn unknown_stage(topology: &BuildTopology, stage: &str, lines: &Lines) -> anyhow::Error {
    lines.line(format!("ERROR: Stage '{stage}' not found"));
    lines.line(format!(
        "Available stages: {}",
        topology.stage_names().collect::<Vec<_>>().join(", ")
    ));
    Reported(format!("Stage '{stage}' not found")).into()
}

/// The environment as the tools read it (with the network-limit flags answered first).
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The run options every transfer takes (spec §4.2 backend options), resolved.
#[derive(Clone)]
pub struct RunOptions {
    /// The run id (`--run-id`, `THEROCK_RUN_ID`, `GITHUB_RUN_ID`); `None` when none is set.
    pub run_id: Option<String>,
    /// The platform.
    pub platform: Platform,
    /// `--run-github-repo`.
    pub repository: Option<GithubRepository>,
    /// The local staging directory (`--local-staging-dir`, `THEROCK_LOCAL_STAGING_DIR`).
    pub local_staging_dir: Option<PathBuf>,
    /// Network limits as environment answers.
    pub env: Env,
    /// Transfers at once (sizes the S3 connection pool).
    pub concurrency: usize,
}

/// How a backend finds its run's bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// Ask the GitHub API about the run when it is not the current one (`GITHUB_RUN_ID`).
    UnlessCurrentRun,
    /// Always ask (the source of `copy`).
    Always,
    /// Never ask: this run's own event decides (what `push` and `copy` write).
    Never,
}

impl RunOptions {
    /// The run id; for S3 one must be set (a default of `local` would write into the real
    /// bucket), locally it defaults to `local`.
    fn run_id(&self) -> anyhow::Result<String> {
        match (&self.run_id, &self.local_staging_dir) {
            (Some(id), _) if !id.is_empty() => Ok(id.clone()),
            (_, Some(_)) => Ok(workflow_outputs::DEFAULT_LOCAL_RUN_ID.to_owned()),
            (Some(_), None) => Err(Usage(
                "the run id is empty: pass --run-id (THEROCK_RUN_ID or GITHUB_RUN_ID is set but empty)"
                    .to_owned(),
            )
            .into()),
            (None, None) => Err(Usage(
                "a run id is needed for S3: pass --run-id or set THEROCK_RUN_ID / GITHUB_RUN_ID (the `local` run id is only for --local-staging-dir)"
                    .to_owned(),
            )
            .into()),
        }
    }

    /// The backend of run `run_id` (spec §4.3), with repository `repository`.
    async fn backend(
        &self,
        run_id: &str,
        repository: Option<GithubRepository>,
        lookup: Lookup,
        lines: &Lines,
    ) -> anyhow::Result<ArtifactBackend> {
        if let Some(staging) = &self.local_staging_dir {
            let root = WorkflowOutputRoot::for_local(Some(run_id), Some(self.platform), None)?;
            return Ok(ArtifactBackend::local(staging, root)?);
        }
        let env = self.env.clone();
        let ask = match lookup {
            Lookup::Always => true,
            Lookup::Never => false,
            Lookup::UnlessCurrentRun => env("GITHUB_RUN_ID").as_deref() != Some(run_id),
        };
        let request = crate::RunRequest {
            run_id: run_id.to_owned(),
            platform: self.platform,
            repository,
            release_type: None,
            lookup_workflow_run: ask,
        };
        let (root, selection) = {
            let env = env.clone();
            let mut writer = lines.writer();
            tokio::task::spawn_blocking(move || {
                crate::resolve_run_root(&request, &|v| env(v), &mut writer)
            })
            .await??
        };
        let client =
            crate::artifact_reader(selection.config().region(), self.concurrency.max(1), &|v| {
                env(v)
            })
            .await?;
        Ok(ArtifactBackend::s3(client, root))
    }
}

/// The archive file names of a listing.
fn file_names(entries: &[ArtifactEntry]) -> Vec<String> {
    entries.iter().map(|e| e.file_name.clone()).collect()
}

/// Artifacts of `wanted` without any chosen archive.
fn uncovered<'a>(wanted: &BTreeSet<&'a str>, chosen: &[String]) -> Vec<&'a str> {
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

/// `s` sorted and `", "`-joined.
fn joined<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let sorted: BTreeSet<&str> = items.into_iter().collect();
    sorted.into_iter().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests;
