//! Drop-in `fetch_artifacts.py`: fetch a CI run's build artifacts, selected by artifact group,
//! GPU targets and regexes; each is streamed through SHA-256 verification and unpacking.

use std::path::PathBuf;
use std::process::ExitCode;

use artifact_backend::pipeline::{FetchMode, FetchRequest, fetch};
use build_topology::parse_targets;
use clap::{ArgGroup, Parser};
use rock_ci::{RepositoryArg, block_on, parse_platform, parse_repository};
use workflow_outputs::Platform;

/// Fetch the build artifacts of a CI run.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true, group(ArgGroup::new("mode").args(["no_extract", "extract", "flatten"])))]
#[expect(clippy::struct_excessive_bools, reason = "command-line flags")]
struct Args {
    /// Regexes: keep artifacts whose file name matches any (all when none).
    include: Vec<String>,
    /// Regexes: drop artifacts whose file name matches any.
    #[arg(long, num_args = 0..)]
    exclude: Vec<String>,
    /// Platform of the run [default: this machine's].
    #[arg(long, value_parser = parse_platform)]
    platform: Option<Platform>,
    /// Artifact group (GPU family), e.g. gfx94X-dcgpu.
    #[arg(long)]
    artifact_group: Option<String>,
    /// Comma-separated GPU targets, e.g. gfx942,gfx90a.
    #[arg(long, default_value = "")]
    amdgpu_targets: String,
    /// Artifacts downloaded at once.
    #[arg(long, default_value_t = 10, value_parser = rock_ci::positive::<usize>())]
    download_concurrency: usize,
    /// Artifacts unpacked at once [default: the number of cores].
    #[arg(long, value_parser = rock_ci::positive::<usize>())]
    extract_concurrency: Option<usize>,
    /// Repository of the run [default: `$GITHUB_REPOSITORY`, else `ROCm/TheRock`].
    #[arg(long, value_parser = parse_repository)]
    run_github_repo: Option<RepositoryArg>,
    /// Workflow run id.
    #[arg(long)]
    run_id: String,
    /// Output directory.
    #[arg(long, default_value = "build/artifacts", value_parser = rock_ci::parse_path)]
    output_dir: PathBuf,
    /// List what would be fetched, fetch nothing.
    #[arg(long, overrides_with = "no_dry_run")]
    dry_run: bool,
    /// Fetch (the default).
    #[arg(long, overrides_with = "dry_run")]
    no_dry_run: bool,
    /// Keep the archives instead of unpacking them.
    #[arg(long)]
    no_extract: bool,
    /// Unpack each artifact into `{output}/{name}/` (the default).
    #[arg(long)]
    extract: bool,
    /// Merge all artifacts into the output directory.
    #[arg(long)]
    flatten: bool,
    /// Accepted for compatibility: unpacking streams, so no archive is ever left to delete.
    #[arg(long, overrides_with = "no_delete_after_extract")]
    delete_after_extract: bool,
    /// Accepted for compatibility (see `--delete-after-extract`).
    #[arg(long, overrides_with = "delete_after_extract")]
    no_delete_after_extract: bool,
    /// Read the artifacts from this local staging directory instead of S3 (no GitHub look-up).
    #[arg(long, value_parser = rock_ci::parse_path)]
    local_staging_dir: Option<PathBuf>,
    /// Use archives that cannot be verified (no `.sha256sum` sidecar and no SHA-256 recorded
    /// with the object) instead of failing on them.
    #[arg(long)]
    allow_unverified: bool,
    #[command(flatten)]
    chosen: rock_ci::MemberArgs,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    let mut request = FetchRequest::new(args.run_id, args.output_dir);
    request.include = args.include;
    request.exclude = args.exclude;
    request.platform = args.platform.unwrap_or_else(Platform::host);
    request.artifact_group = args.artifact_group.filter(|g| !g.is_empty());
    request.amdgpu_targets = parse_targets(&args.amdgpu_targets);
    request.download_concurrency = args.download_concurrency.max(1);
    request.extract_concurrency = args
        .extract_concurrency
        .unwrap_or_else(artifact_backend::pipeline::default_extract_concurrency)
        .max(1);
    request.run_github_repo = args.run_github_repo.and_then(|r| r.0);
    request.dry_run = args.dry_run;
    request.mode = FetchMode::from_flags(args.no_extract, false, args.flatten);
    request.local_staging_dir = args.local_staging_dir;
    request.allow_unverified = args.allow_unverified;
    request.members = args.chosen.members;
    request.allow_empty = args.chosen.allow_empty;
    let lookup = args.limits.over(github_actions::process_env);
    let progress = rock_ci::progress::reporter_factory(args.log.quiet);
    let mut stdout = std::io::stdout().lock();
    block_on(async {
        fetch(&request, &lookup, &progress, &mut stdout).await?;
        Ok(())
    })
}
