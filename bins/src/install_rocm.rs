//! `install_rocm_from_artifacts`: a usable ROCm tree in an output directory, from a CI run's
//! artifacts (flattened), a published multi-arch release tarball, the newest nightly tarball,
//! or an existing directory (spec §10).
//!
//! The new tree is built in a temporary directory beside the output directory and swapped in
//! only once it is complete: a failed or interrupted install leaves the previous tree as it
//! was, and the inputs are checked before anything is touched.

mod components;
mod staging;
mod tarball;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use workflow_outputs::{GithubRepository, Platform};

pub use components::{BASE_PATTERNS, COMPONENTS, Component, Selection};
pub use tarball::{ReleaseKind, TARBALL_PREFIX, parse_tarball_name, release_kind};

/// Where the tree comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// A resolved command line.
#[derive(Debug, Clone)]
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
    /// Where the GPU family table is read from.
    pub checkout: crate::artifact_manager::Checkout,
    /// The platform of the release tarballs and of the run (this machine's).
    pub platform: Platform,
    /// Artifacts downloaded at once in run mode.
    pub download_concurrency: usize,
    /// Artifacts unpacked at once in run mode.
    pub extract_concurrency: usize,
    /// Run mode: use archives that cannot be verified (`--allow-unverified`).
    pub allow_unverified: bool,
    /// No progress bars.
    pub quiet: bool,
}

/// The family's targets when `--amdgpu-targets` is empty (non-strict: none for an unknown
/// family), with the line that reports them.
fn derived_targets(request: &Request, out: &mut dyn Write) -> anyhow::Result<String> {
    if !request.amdgpu_targets.is_empty() {
        return Ok(request.amdgpu_targets.clone());
    }
    let map = match request.checkout.family_map() {
        Ok(map) => map,
        Err(e) => {
            writeln!(
                out,
                "WARNING: cannot derive --amdgpu-targets from family '{}' ({e:#}); pass --amdgpu-targets or --therock-dir",
                request.artifact_group
            )?;
            return Ok(String::new());
        }
    };
    let group = &request.artifact_group;
    let Some(family) = map.family_of_group(group) else {
        // The reference derives nothing here, silently: per-target shards are then skipped.
        writeln!(
            out,
            "WARNING: '{group}' is not a family of therock_amdgpu_targets.cmake (nor one followed by a build variant): no --amdgpu-targets derived, so per-target artifacts are not fetched; pass --amdgpu-targets to fetch them"
        )?;
        return Ok(String::new());
    };
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
/// same request is made here in-process).
pub fn fetch_argv(request: &Request, run_id: &str, targets: &str) -> Vec<String> {
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

/// Checks what can be checked before anything is fetched or touched: the release string, the
/// input directory, and that the output directory may be replaced.
fn validate(request: &Request) -> anyhow::Result<()> {
    if let Source::Release(version) = &request.source
        && release_kind(version).is_none()
    {
        bail!(
            "`{version}` is not a nightly or dev release version.\n\
             Please retrieve the correct release version from:\n\
             \t - https://rocm.nightlies.amd.com/tarball-multi-arch/ (nightly examples: 6.4.0rc20250416, 7.10.0a20251024)\n\
             \t - https://rocm.devreleases.amd.com/tarball-multi-arch/ (dev-tarball example: 6.4.0.dev0+8f6cdfc0d95845f4ca5a46de59d58894972a29a9)"
        );
    }
    if let Source::InputDir(input) = &request.source
        && !input.is_dir()
    {
        bail!("Input directory `{}` does not exist", input.display());
    }
    if request.dry_run {
        return Ok(());
    }
    staging::check_replaceable(&request.output_dir)?;
    if let Source::InputDir(input) = &request.source {
        let (input, output) = (absolute(input)?, absolute(&request.output_dir)?);
        if output.starts_with(&input) || input.starts_with(&output) {
            bail!(
                "The input directory `{}` and the output directory `{}` contain one another",
                input.display(),
                output.display()
            );
        }
    }
    Ok(())
}

/// `path` made absolute and, where it exists, with its symlinks resolved.
fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    if let Ok(real) = fs_err::canonicalize(path) {
        return Ok(real);
    }
    std::path::absolute(path).with_context(|| format!("Cannot make `{}` absolute", path.display()))
}

/// Runs the install. Progress goes to `out` (stdout in the tool).
pub async fn run(
    request: &Request,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(out, "### Installing TheRock using artifacts ###")?;
    validate(request)?;
    let absolute_output = absolute(&request.output_dir)?;

    // Discovery (which tarball) happens before anything is touched.
    let tarball = match &request.source {
        Source::Release(version) => {
            Some(tarball::for_release(request, version, out).context("Release look-up failed")?)
        }
        Source::LatestRelease => Some(tarball::latest(request, lookup, out).await?),
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
            Source::Run(run_id) => run_mode(request, run_id, None, lookup, out).await,
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
    let staging = staging::Staging::begin(&request.output_dir)?;
    match &request.source {
        Source::Run(run_id) => run_mode(request, run_id, Some(staging.dir()), lookup, out).await?,
        Source::InputDir(input) => {
            let into = copy_destination(input, staging.dir());
            let copied = staging::copy_tree(input, &into)?;
            writeln!(
                out,
                "Retrieved artifacts from input dir {} to {} ({copied} files)",
                input.display(),
                request.output_dir.display()
            )?;
        }
        Source::Release(_) | Source::LatestRelease => {
            let tarball = tarball.expect("looked up");
            tarball
                .install(lookup, staging.dir(), &request.output_dir, out)
                .await?;
        }
    }
    staging.commit(&request.output_dir, out)?;
    writeln!(
        out,
        "Created output directory '{}'",
        absolute_output.display()
    )?;
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

/// Run mode: the selected artifacts of the run, flattened into `into` (the staging directory;
/// `None` for a dry run).
async fn run_mode(
    request: &Request,
    run_id: &str,
    into: Option<&Path>,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(out, "Retrieving artifacts for run ID {run_id}")?;
    let targets = derived_targets(request, out)?;
    let argv = fetch_argv(request, run_id, &targets);
    writeln!(
        out,
        "\nCalling fetch_artifacts_main with args:\n  {}\n",
        argv.join(" ")
    )?;
    let fetch = artifact_backend::pipeline::FetchRequest {
        include: request.selection.include_patterns(),
        exclude: Vec::new(),
        platform: request.platform,
        artifact_group: Some(request.artifact_group.clone()),
        amdgpu_targets: build_topology::parse_targets(&targets),
        download_concurrency: request.download_concurrency,
        extract_concurrency: request.extract_concurrency,
        run_github_repo: request.run_github_repo.clone(),
        run_id: run_id.to_owned(),
        output_dir: into.map_or_else(|| request.output_dir.clone(), Path::to_path_buf),
        dry_run: into.is_none(),
        mode: artifact_backend::pipeline::FetchMode::Flatten,
        local_staging_dir: None,
        allow_unverified: request.allow_unverified,
    };
    let progress = crate::progress::reporter_factory(request.quiet);
    artifact_backend::pipeline::fetch(&fetch, lookup, &progress, out).await?;
    writeln!(out, "Retrieved artifacts for run ID {run_id}")?;
    Ok(())
}
