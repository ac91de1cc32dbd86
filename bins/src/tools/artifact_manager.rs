//! Drop-in `artifact_manager.py`: stage-aware transfer of build artifacts between CI jobs
//! (`fetch`, `push`, `copy`) and a description of the build topology (`info`, `list-stages`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use artifact_backend::pipeline::{self, FetchMode, TransferError};
use artifact_backend::stages::{CopyRequest, GivenRun, PushRequest, RunOptions, StageFetchRequest};
use artifacts::Compression;
use build_topology::Targets;
use clap::{ArgGroup, Args, Parser, Subcommand};
use rock_ci::TopologyArgs;
use rock_ci::{RepositoryArg, parse_platform, parse_repository};
use workflow_outputs::Platform;

/// Move build artifacts between the stages of a multi-stage CI build.
#[derive(Debug, Parser)]
#[command(name = "artifact_manager", version, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Download (and unpack) the artifacts a stage consumes.
    Fetch(FetchArgs),
    /// Archive and upload the artifacts a stage produced.
    Push(PushArgs),
    /// Copy a stage's artifacts from an earlier run, server-side.
    Copy(CopyArgs),
    /// Describe one stage.
    Info(InfoArgs),
    /// List the stages of the topology.
    ListStages(TopologyArgs),
    /// List what a run's archives hold, from their member indexes, without downloading them
    /// (only each archive's end is read).
    ListMembers(ListMembersArgs),
}

#[derive(Debug, Args)]
struct ListMembersArgs {
    #[command(flatten)]
    backend: BackendArgs,
    /// Only the archives whose file name this regex finds (repeatable; all by default).
    #[arg(long = "include")]
    include: Vec<String>,
    /// `text` (a line per member) or `json`.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    format: String,
    /// Archives read at once.
    #[arg(long, default_value_t = 10)]
    concurrency: u32,
}

#[derive(Debug, Clone, Args)]
struct BackendArgs {
    #[command(flatten)]
    topology: TopologyArgs,
    /// Workflow run id [default: `$THEROCK_RUN_ID`, else `$GITHUB_RUN_ID`; `local` with a
    /// local staging directory].
    #[arg(long)]
    run_id: Option<String>,
    /// Platform of the run [default: `$THEROCK_PLATFORM`, else this machine's].
    #[arg(long, value_parser = parse_platform)]
    platform: Option<Platform>,
    /// Repository of the run [default: `$GITHUB_REPOSITORY`, else `ROCm/TheRock`].
    #[arg(long, value_parser = parse_repository)]
    run_github_repo: Option<RepositoryArg>,
    /// Use this directory (mirroring the S3 layout) instead of S3
    /// [default: `$THEROCK_LOCAL_STAGING_DIR`].
    #[arg(long, value_parser = rock_ci::parse_path)]
    local_staging_dir: Option<PathBuf>,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
}

#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("family_choice").args(["amdgpu_families", "generic_only"])))]
struct TargetArgs {
    /// `;`-separated GPU families (`gfx94X-dcgpu;gfx110X-all`).
    #[arg(long)]
    amdgpu_families: Option<String>,
    /// Only the generic (host) artifacts.
    #[arg(long)]
    generic_only: bool,
    /// `,`-separated GPU targets (`gfx942,gfx1100`).
    #[arg(long, default_value = "")]
    amdgpu_targets: String,
    /// Also request each family's GPU targets (from the family table).
    #[arg(long)]
    expand_family_to_targets: bool,
}

impl TargetArgs {
    fn targets(&self) -> Targets {
        Targets {
            families: self.amdgpu_families.clone(),
            generic_only: self.generic_only,
            targets: self.amdgpu_targets.clone(),
            expand: self.expand_family_to_targets,
        }
    }
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").args(["bootstrap", "flatten", "no_extract"])))]
#[expect(clippy::struct_excessive_bools, reason = "command-line flags")]
struct FetchArgs {
    #[command(flatten)]
    backend: BackendArgs,
    #[command(flatten)]
    targets: TargetArgs,
    /// The stage whose inbound artifacts are fetched (`all`: every artifact).
    #[arg(long, default_value = "all")]
    stage: String,
    /// Where the artifacts go.
    #[arg(long, value_parser = rock_ci::parse_path)]
    output_dir: PathBuf,
    /// Merge the artifacts' trees into the output directory and mark each with
    /// `{relpath}.prebuilt`.
    #[arg(long)]
    bootstrap: bool,
    /// Merge every artifact's files into the output directory, relpaths stripped.
    #[arg(long)]
    flatten: bool,
    /// Keep the archives (in the download cache) instead of unpacking them.
    #[arg(long)]
    no_extract: bool,
    /// A download cache kept between invocations [default: none; archives stream straight
    /// into the output, or into `{output}/.download_cache` with --no-extract].
    #[arg(long, value_parser = rock_ci::parse_path)]
    download_cache_dir: Option<PathBuf>,
    /// Artifacts transferred at once.
    #[arg(long, default_value_t = 10, value_parser = rock_ci::positive::<u32>())]
    download_concurrency: u32,
    /// Artifacts unpacked at once [default: the number of cores].
    #[arg(long, value_parser = rock_ci::positive::<u32>())]
    extract_concurrency: Option<u32>,
    /// Components to leave out (`,`/`;`-separated: lib, run, dev, dbg, doc, test).
    #[arg(long, default_value = "")]
    exclude_components: String,
    /// Artifacts to leave out (`,`/`;`-separated topology names).
    #[arg(long, default_value = "")]
    exclude_artifacts: String,
    /// Finding no archive at all for the request (or, with `--member`, no member) is not an
    /// error.
    #[arg(long)]
    allow_empty: bool,
    /// Use archives that cannot be verified (no `.sha256sum` sidecar and no SHA-256 recorded
    /// with the object) instead of failing on them.
    #[arg(long)]
    allow_unverified: bool,
    /// Only the archive members this glob matches (repeatable): by their path in the archive
    /// or below its manifest paths (`lib/libamdhip64.so*`), `*` crossing `/`; a symlink brings
    /// its target. Only the frames holding them are downloaded where the archive has a member
    /// index; other archives are downloaded whole and filtered.
    #[arg(long = "member", value_name = "GLOB")]
    members: Vec<String>,
}

#[derive(Debug, Args)]
struct PushArgs {
    #[command(flatten)]
    backend: BackendArgs,
    /// The stage whose produced artifacts are pushed (`all`: every stage's).
    #[arg(long)]
    stage: String,
    /// The build directory (its `artifacts/` holds the artifacts).
    #[arg(long, value_parser = rock_ci::parse_path)]
    build_dir: PathBuf,
    /// Compression of the archives written from directories.
    #[arg(long, default_value = "zstd", value_parser = ["zstd", "xz"])]
    compression_type: String,
    /// Compression level [default: zstd 3, xz 6].
    #[arg(long)]
    compression_level: Option<i32>,
    /// Archives written at once [default: half the cores, at least 1; each compresses on
    /// the cores left].
    #[arg(long, value_parser = rock_ci::positive::<u32>())]
    compress_concurrency: Option<u32>,
    /// Archives uploaded at once.
    #[arg(long, default_value_t = 10, value_parser = rock_ci::positive::<u32>())]
    upload_concurrency: u32,
}

#[derive(Debug, Args)]
struct CopyArgs {
    #[command(flatten)]
    backend: BackendArgs,
    #[command(flatten)]
    targets: TargetArgs,
    /// The run to copy from.
    #[arg(long)]
    source_run_id: String,
    /// Repository of the source run [default: `$GITHUB_REPOSITORY`, else `ROCm/TheRock`].
    #[arg(long, value_parser = parse_repository)]
    source_repository: Option<RepositoryArg>,
    /// `,`-separated stages whose produced artifacts are copied.
    #[arg(long)]
    stage: String,
    /// Copies at once.
    #[arg(long, default_value_t = 10, value_parser = rock_ci::positive::<u32>())]
    concurrency: u32,
    /// List what would be copied, copy nothing.
    #[arg(long)]
    dry_run: bool,
    /// Finding no archive at all for the request is not an error.
    #[arg(long)]
    allow_empty: bool,
}

#[derive(Debug, Args)]
struct InfoArgs {
    #[command(flatten)]
    topology: TopologyArgs,
    /// The stage.
    #[arg(long)]
    stage: String,
    /// `;`-separated GPU families (only echoed).
    #[arg(long)]
    amdgpu_families: Option<String>,
}

/// The run options: flags, then the environment.
fn run_options(args: &BackendArgs, concurrency: usize) -> Result<RunOptions, TransferError> {
    let mut given = GivenRun::default();
    given.run_id.clone_from(&args.run_id);
    given.platform = args.platform;
    given.repository = args.run_github_repo.clone().and_then(|r| r.0);
    given.local_staging_dir.clone_from(&args.local_staging_dir);
    let limits = args.limits;
    let env = Arc::new(move |var: &str| limits.over(github_actions::process_env)(var));
    RunOptions::resolve(given, env, concurrency)
}

async fn run(command: Command, quiet: bool, out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    use artifact_backend::stages;
    match command {
        Command::Fetch(a) => {
            let concurrency = a.download_concurrency as usize;
            let mut request = StageFetchRequest::new(
                run_options(&a.backend, concurrency)?,
                a.backend.topology.checkout(),
                a.stage,
                a.output_dir,
            );
            request.targets = a.targets.targets();
            request.mode = FetchMode::from_flags(a.no_extract, a.bootstrap, a.flatten);
            request.download_cache_dir = a.download_cache_dir;
            request.download_concurrency = concurrency;
            request.extract_concurrency = a
                .extract_concurrency
                .map_or_else(pipeline::default_extract_concurrency, |n| n as usize);
            request.exclude_components = a.exclude_components;
            request.exclude_artifacts = a.exclude_artifacts;
            request.allow_empty = a.allow_empty;
            request.allow_unverified = a.allow_unverified;
            request.members = a.members;
            let progress = rock_ci::progress::reporter_factory(quiet);
            stages::fetch_stage(&request, &progress, out).await?;
        }
        Command::Push(a) => {
            let mut request = PushRequest::new(
                run_options(&a.backend, a.upload_concurrency as usize)?,
                a.backend.topology.checkout(),
                a.stage,
                a.build_dir,
            );
            request.compression = Compression::at_level(&a.compression_type, a.compression_level)
                .map_err(|e| TransferError::Usage(e.to_string()))?;
            request.compress_concurrency = a
                .compress_concurrency
                .map_or_else(pipeline::default_compress_concurrency, |n| n as usize);
            request.upload_concurrency = a.upload_concurrency as usize;
            stages::push(&request, out).await?;
        }
        Command::Copy(a) => {
            let mut request = CopyRequest::new(
                run_options(&a.backend, a.concurrency as usize)?,
                a.backend.topology.checkout(),
                a.stage,
                a.source_run_id,
            );
            request.targets = a.targets.targets();
            request.source_repository = a.source_repository.and_then(|r| r.0);
            request.concurrency = a.concurrency as usize;
            request.dry_run = a.dry_run;
            request.allow_empty = a.allow_empty;
            stages::copy(&request, out).await?;
        }
        Command::Info(a) => {
            let topology = a.topology.checkout().load_topology()?;
            build_topology::write_stage_info(
                &topology,
                &a.stage,
                a.amdgpu_families.as_deref(),
                out,
            )?;
        }
        Command::ListMembers(a) => {
            let mut request =
                stages::ListMembersRequest::new(run_options(&a.backend, a.concurrency as usize)?);
            request.include = a.include;
            request.json = a.format == "json";
            stages::list_members(&request, out).await?;
        }
        Command::ListStages(a) => {
            build_topology::write_stage_list(&a.checkout().load_topology()?, out)?;
        }
    }
    Ok(())
}

pub(crate) fn main() -> ExitCode {
    let cli: Cli = rock_ci::parse_args();
    cli.log.init_logging();
    let mut stdout = std::io::stdout();
    rock_ci::block_on(run(cli.command, cli.log.quiet, &mut stdout))
}
