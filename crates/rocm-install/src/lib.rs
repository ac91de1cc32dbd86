//! Install ROCm into a directory (`install_rocm_from_artifacts`): a usable ROCm tree in an
//! output directory, from a CI run's artifacts (flattened), a published multi-arch release
//! tarball, the newest nightly tarball, or an existing directory (spec §10).
//!
//! The new tree is built in a staging directory beside the output directory
//! ([`file_tree::StagedDir`]) and swapped in only once it is complete: a failed or interrupted
//! install leaves the previous tree as it was, and the inputs are checked before anything is
//! touched.
//!
//! - [`Selection`] and [`COMPONENTS`]: the component flags and the include patterns they give.
//! - [`run`]: the install. A run's artifacts are fetched (flattened) by `artifact-backend`'s
//!   one fetch pipeline; tarballs are read with `storage-backend`'s verified ranged reader,
//!   their keys from `workflow-outputs`.

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

mod components;
mod error;
mod tarball;

use std::io::Write;
use std::path::{Path, PathBuf};

use artifact_backend::pipeline::{self, FetchMode, FetchRequest, ReporterFactory};
use file_tree::StagedDir;
use workflow_outputs::{GithubRepository, Platform, ReleaseKind};

pub use components::{BASE_PATTERNS, COMPONENTS, Component, Selection};
pub use error::{Error, UnpackError};

/// Where the tree comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A CI run's artifacts (`--run-id`).
    Run(String),
    /// A published release tarball (`--release`).
    Release(String),
    /// The newest nightly tarball of the group (`--latest-release`).
    LatestRelease,
    /// A copy of an existing directory (`--input-dir`).
    InputDir(PathBuf),
}

/// The GPU family table, as the caller could load it.
#[derive(Debug, Clone)]
pub enum FamilyTable {
    /// The table.
    Loaded(build_topology::FamilyMap),
    /// It could not be loaded: why (shown in a warning; no targets are derived).
    Unavailable(String),
}

/// A resolved command line.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Request {
    /// `--output-dir`.
    pub output_dir: PathBuf,
    /// `--artifact-group` / `--amdgpu-family`.
    pub artifact_group: String,
    /// The source option.
    pub source: Source,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--amdgpu-targets`, as given.
    pub amdgpu_targets: String,
    /// `--run-github-repo`.
    pub run_github_repo: Option<GithubRepository>,
    /// The component flags.
    pub selection: Selection,
    /// The GPU family table, when [`Request::needs_family_table`] (else unused).
    pub family_table: Option<FamilyTable>,
    /// The platform of the release tarballs and of the run (this machine's).
    pub platform: Platform,
    /// Artifacts downloaded at once in run mode.
    pub download_concurrency: usize,
    /// Artifacts unpacked at once in run mode.
    pub extract_concurrency: usize,
    /// Run mode: use archives that cannot be verified (`--allow-unverified`).
    pub allow_unverified: bool,
    /// Run mode: only the archive members these globs select (`--member`; all when empty),
    /// matched below the install prefix or in the archive.
    pub members: Vec<String>,
    /// Run mode: a `--member` glob that matches nothing is not an error (`--allow-empty`).
    pub allow_empty: bool,
}

impl Request {
    /// Installs `artifact_group` from `source` into `output_dir`: this machine's platform,
    /// every target of the group, the default components, the family table of the checkout,
    /// 10 downloads and [`pipeline::default_extract_concurrency`] unpackings at once,
    /// unverifiable archives failing.
    pub fn new(
        output_dir: impl Into<PathBuf>,
        artifact_group: impl Into<String>,
        source: Source,
    ) -> Self {
        Request {
            output_dir: output_dir.into(),
            artifact_group: artifact_group.into(),
            source,
            dry_run: false,
            amdgpu_targets: String::new(),
            run_github_repo: None,
            selection: Selection::default(),
            family_table: None,
            platform: Platform::host(),
            download_concurrency: 10,
            extract_concurrency: pipeline::default_extract_concurrency(),
            allow_unverified: false,
            members: Vec::new(),
            allow_empty: false,
        }
    }
}

impl Request {
    /// Whether the install derives `--amdgpu-targets` from the GPU family table: run mode
    /// without `--amdgpu-targets`.
    pub fn needs_family_table(&self) -> bool {
        matches!(self.source, Source::Run(_)) && self.amdgpu_targets.is_empty()
    }

    /// Sets [`Request::family_table`] when [`Request::needs_family_table`]: the table of the
    /// checkout `therock_dir` (else the one found from the working directory), or why it could
    /// not be loaded.
    pub fn load_family_table(&mut self, therock_dir: Option<PathBuf>) {
        if !self.needs_family_table() {
            return;
        }
        let checkout = build_topology::Checkout {
            topology: None,
            therock_dir,
        };
        self.family_table = Some(match checkout.family_map() {
            Ok(map) => FamilyTable::Loaded(map),
            Err(e) => FamilyTable::Unavailable(format!("{e:#}")),
        });
    }
}

/// The family `group` stands for in `map`, else [`Error::UnknownFamily`]. (The reference
/// derives no targets then, silently, and installs the generic artifacts only.)
fn known_family<'a>(map: &'a build_topology::FamilyMap, group: &str) -> Result<&'a str, Error> {
    map.family_of_group(group)
        .ok_or_else(|| Error::UnknownFamily {
            group: group.to_owned(),
            known: map.family_names().into_iter().map(str::to_owned).collect(),
        })
}

/// The family's targets when `--amdgpu-targets` is empty, with the line that reports them; a
/// group the loaded table does not know is [`Error::UnknownFamily`] (a usage error).
fn derived_targets(request: &Request, out: &mut dyn Write) -> Result<String, Error> {
    if !request.amdgpu_targets.is_empty() {
        return Ok(request.amdgpu_targets.clone());
    }
    let map = match &request.family_table {
        Some(FamilyTable::Loaded(map)) => map,
        Some(FamilyTable::Unavailable(why)) => {
            writeln!(
                out,
                "WARNING: cannot derive --amdgpu-targets from family '{}' ({why}); pass --amdgpu-targets or --therock-dir",
                request.artifact_group
            )?;
            return Ok(String::new());
        }
        None => {
            writeln!(
                out,
                "WARNING: cannot derive --amdgpu-targets from family '{}' (no GPU family table); pass --amdgpu-targets or --therock-dir",
                request.artifact_group
            )?;
            return Ok(String::new());
        }
    };
    let group = &request.artifact_group;
    let family = known_family(map, group)?;
    let targets = map.targets_of(family).join(",");
    if family == group {
        writeln!(
            out,
            "Auto-deriving --amdgpu-targets from family '{group}': {targets}"
        )?;
    } else {
        writeln!(
            out,
            "Auto-deriving --amdgpu-targets from family '{family}' of variant group '{group}': {targets}"
        )?;
    }
    Ok(targets)
}

/// The command line the reference hands to `fetch_artifacts` for run mode (printed, and the
/// same request is made in-process).
pub(crate) fn fetch_argv(request: &Request, run_id: &str, targets: &str) -> Vec<String> {
    let mut argv: Vec<String> = [
        "--run-id",
        run_id,
        "--artifact-group",
        &request.artifact_group,
        "--output-dir",
        &pathlib_text(&request.output_dir),
        "--flatten",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if !targets.is_empty() {
        argv.extend(["--amdgpu-targets".to_owned(), targets.to_owned()]);
    }
    if request.dry_run {
        argv.push("--dry-run".to_owned());
    }
    if let Some(repo) = &request.run_github_repo {
        argv.extend(["--run-github-repo".to_owned(), repo.to_string()]);
    }
    for glob in &request.members {
        argv.extend(["--member".to_owned(), glob.clone()]);
    }
    if request.allow_empty {
        argv.push("--allow-empty".to_owned());
    }
    argv.extend(request.selection.include_patterns());
    argv
}

/// `path` as Python's `str(pathlib.Path(path))` shows it: `.` components and repeated or
/// trailing separators dropped (`./therock-build` is `therock-build`), `.` when nothing is
/// left.
fn pathlib_text(path: &Path) -> String {
    let kept: PathBuf = path
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    if kept.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        kept.display().to_string()
    }
}

/// Refuses output directories whose replacement would surely be a mistake: an existing
/// non-directory, a symlink, the file system root, the home directory, and the working
/// directory or any directory above it.
fn check_replaceable(output: &Path) -> Result<(), Error> {
    let Ok(meta) = fs_err::symlink_metadata(output) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Err(Error::OutputIsSymlink(output.to_path_buf()));
    }
    if !meta.is_dir() {
        return Err(Error::OutputNotADirectory(output.to_path_buf()));
    }
    let real = fs_err::canonicalize(output)?;
    let home = std::env::home_dir().and_then(|h| fs_err::canonicalize(h).ok());
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| fs_err::canonicalize(d).ok());
    if real.parent().is_none()
        || home.as_deref() == Some(real.as_path())
        || cwd.as_deref().is_some_and(|cwd| cwd.starts_with(&real))
    {
        return Err(Error::RefusedOutput(output.to_path_buf()));
    }
    Ok(())
}

/// Checks what can be checked before anything is fetched or touched: the release string, the
/// input directory, and that the output directory may be replaced. Returns the output
/// directory made absolute.
fn validate(request: &Request) -> Result<PathBuf, Error> {
    if let Source::Release(version) = &request.source
        && ReleaseKind::of_version(version).is_none()
    {
        return Err(Error::NotARelease(version.clone()));
    }
    if let Source::InputDir(input) = &request.source
        && !input.is_dir()
    {
        return Err(Error::MissingInputDir(input.clone()));
    }
    if !request.dry_run {
        check_replaceable(&request.output_dir)?;
        if let Source::InputDir(input) = &request.source {
            let (input, output) = (absolute(input)?, absolute(&request.output_dir)?);
            if output.starts_with(&input) || input.starts_with(&output) {
                return Err(Error::Nested { input, output });
            }
        }
    }
    absolute(&request.output_dir)
}

/// `path` made absolute and, where it exists, with its symlinks resolved.
fn absolute(path: &Path) -> Result<PathBuf, Error> {
    if let Ok(real) = file_tree::resolved(path) {
        return Ok(real);
    }
    // Without a trailing separator, which `std::path::absolute` keeps (`out/`, `C:\rocm\`):
    // the path as Python's `resolve()` shows it.
    std::path::absolute(path)
        .map(|p| p.components().collect())
        .map_err(|source| Error::Absolute {
            path: path.to_path_buf(),
            source,
        })
}

/// Runs the install. Progress goes to `out` (stdout in the tool); run mode fetches through
/// `artifact-backend`'s pipeline, with progress bars from `progress`.
pub async fn run(
    request: &Request,
    lookup: &dyn Fn(&str) -> Option<String>,
    progress: &ReporterFactory,
    out: &mut dyn Write,
) -> Result<(), Error> {
    writeln!(out, "### Installing TheRock using artifacts ###")?;
    let checked = request.clone();
    let absolute_output = storage_backend::blocking(move || validate(&checked)).await?;
    if let (true, Some(FamilyTable::Loaded(map))) =
        (request.needs_family_table(), &request.family_table)
    {
        known_family(map, &request.artifact_group)?;
    }

    // Discovery (which tarball) happens before anything is touched.
    let tarball = match &request.source {
        Source::Release(version) => Some(tarball::for_release(
            request.platform,
            &request.artifact_group,
            version,
            out,
        )?),
        Source::LatestRelease => {
            Some(tarball::latest(request.platform, &request.artifact_group, lookup, out).await?)
        }
        _ => None,
    };
    if let Source::InputDir(input) = &request.source {
        writeln!(
            out,
            "Retrieving artifacts from input dir {}",
            input.display()
        )?;
    }
    if request.dry_run {
        return match &request.source {
            Source::Run(run_id) => run_mode(request, run_id, None, lookup, progress, out).await,
            Source::InputDir(input) => {
                writeln!(
                    out,
                    "[DRY RUN] Would rsync from {} to {}",
                    input.display(),
                    request.output_dir.display()
                )?;
                Ok(())
            }
            Source::Release(_) | Source::LatestRelease => {
                tarball.expect("looked up").print_dry_run(out)?;
                Ok(())
            }
        };
    }

    writeln!(
        out,
        "Creating output directory '{}'",
        absolute_output.display()
    )?;
    let output = request.output_dir.clone();
    let staging = storage_backend::blocking(move || StagedDir::begin(&output)).await?;
    let filled = async {
        match &request.source {
            Source::Run(run_id) => {
                run_mode(request, run_id, Some(staging.path()), lookup, progress, out).await
            }
            Source::InputDir(input) => {
                let (from, into) = (input.clone(), copy_destination(input, staging.path()));
                let copied =
                    storage_backend::blocking(move || file_tree::copy_tree(&from, &into)).await?;
                writeln!(
                    out,
                    "Retrieved artifacts from input dir {} to {} ({copied} files)",
                    input.display(),
                    request.output_dir.display()
                )?;
                Ok(())
            }
            Source::Release(_) | Source::LatestRelease => {
                let tarball = tarball.expect("looked up");
                tarball
                    .install(lookup, staging.path(), &request.output_dir, out)
                    .await?;
                Ok(())
            }
        }
    }
    .await;
    if let Err(e) = filled {
        // The staging tree goes, off the async threads; the old tree stays.
        storage_backend::blocking(move || drop(staging)).await;
        return Err(e);
    }
    swap_in(staging, &request.output_dir, out).await?;
    writeln!(
        out,
        "Created output directory '{}'",
        absolute_output.display()
    )?;
    Ok(())
}

/// Puts the complete staging tree in the place of `output`, saying so when it replaces one.
async fn swap_in(staging: StagedDir, output: &Path, out: &mut dyn Write) -> Result<(), Error> {
    let output = output.to_path_buf();
    let shown = output.clone();
    let exists = storage_backend::blocking(move || fs_err::symlink_metadata(&shown).is_ok()).await;
    if exists {
        writeln!(
            out,
            "Directory '{}' already exists, replacing existing directory and files",
            output.display()
        )?;
    }
    storage_backend::blocking(move || staging.commit(&output)).await?;
    Ok(())
}

/// Where `rsync -a {input} {output}` puts the copy: the directory itself inside `output`,
/// or only its contents when `input` ends with a separator.
fn copy_destination(input: &Path, output: &Path) -> PathBuf {
    let text = input.as_os_str().to_string_lossy();
    if text.ends_with('/') || text.ends_with(std::path::MAIN_SEPARATOR) {
        return output.to_path_buf();
    }
    match input.file_name() {
        Some(name) => output.join(name),
        None => output.to_path_buf(),
    }
}

/// Run mode: the run's artifacts flattened into `into` (the staging directory; nothing when
/// `None`, a dry run) by the fetch pipeline.
async fn run_mode(
    request: &Request,
    run_id: &str,
    into: Option<&Path>,
    lookup: &dyn Fn(&str) -> Option<String>,
    progress: &ReporterFactory,
    out: &mut dyn Write,
) -> Result<(), Error> {
    writeln!(out, "Retrieving artifacts for run ID {run_id}")?;
    let targets = derived_targets(request, out)?;
    let argv = fetch_argv(request, run_id, &targets);
    writeln!(
        out,
        "\nCalling fetch_artifacts_main with args:\n  {}\n",
        argv.join(" ")
    )?;
    let mut fetch = FetchRequest::new(
        run_id,
        into.map_or_else(|| request.output_dir.clone(), Path::to_path_buf),
    );
    fetch.include = request.selection.include_patterns();
    fetch.platform = request.platform;
    fetch.artifact_group = Some(request.artifact_group.clone());
    fetch.amdgpu_targets = build_topology::parse_targets(&targets);
    fetch.download_concurrency = request.download_concurrency;
    fetch.extract_concurrency = request.extract_concurrency;
    fetch.run_github_repo.clone_from(&request.run_github_repo);
    fetch.dry_run = into.is_none();
    fetch.mode = FetchMode::Flatten;
    fetch.allow_unverified = request.allow_unverified;
    fetch.members.clone_from(&request.members);
    fetch.allow_empty = request.allow_empty;
    pipeline::fetch(&fetch, lookup, progress, out).await?;
    writeln!(out, "Retrieved artifacts for run ID {run_id}")?;
    Ok(())
}

#[cfg(test)]
mod tests;

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
