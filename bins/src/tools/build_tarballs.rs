//! Drop-in `build_tarballs.py`: a run's artifacts as release tarballs, one per GPU family
//! (and a multi-arch one when the build split device files per target), streamed from the
//! archives into gzip on every core, with no flattened tree on disk.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use artifact_backend::pipeline::TransferError;
use artifact_backend::stages::{GivenRun, RunOptions, TarballsRequest};
use clap::Parser;
use rock_ci::{RepositoryArg, TopologyArgs, parse_platform, parse_repository};
use workflow_outputs::Platform;

/// Fetch a multi-arch run's artifacts and package them into per-family tarballs.
#[derive(Debug, Parser)]
#[command(name = "build_tarballs", version, args_override_self = true)]
struct Cli {
    /// Workflow run id to fetch from.
    #[arg(long)]
    run_id: String,
    /// Repository of the run, `owner/repo` [default: `$GITHUB_REPOSITORY`, else
    /// `ROCm/TheRock`; empty: the default].
    #[arg(long, value_parser = parse_repository)]
    run_github_repo: Option<RepositoryArg>,
    /// `;`-separated GPU families, one tarball each (`gfx94X-dcgpu;gfx110X-all`).
    #[arg(long)]
    dist_amdgpu_families: String,
    /// Platform of the run's artifacts.
    #[arg(long, default_value = "linux", value_parser = parse_platform)]
    platform: Platform,
    /// Version in the tarball names.
    #[arg(long)]
    package_version: String,
    /// Where the tarballs go (the download cache is `{output}/.work/download-cache`).
    #[arg(long, value_parser = rock_ci::parse_path)]
    output_dir: PathBuf,
    /// Also a `-tests-` tarball per family, with the test components and every artifact.
    #[arg(long)]
    include_test_tarballs: bool,
    /// Read this directory (mirroring the S3 layout) instead of S3
    /// [default: `$THEROCK_LOCAL_STAGING_DIR`].
    #[arg(long, value_parser = rock_ci::parse_path)]
    local_staging_dir: Option<PathBuf>,
    /// Artifacts downloaded at once.
    #[arg(long, default_value_t = 10, value_parser = rock_ci::positive::<u32>())]
    download_concurrency: u32,
    /// Threads gzipping each tarball [default: the number of cores].
    #[arg(long, value_parser = rock_ci::positive::<u32>())]
    compress_workers: Option<u32>,
    #[command(flatten)]
    topology: TopologyArgs,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

/// The `;`-separated families, trimmed, empties dropped.
fn families(value: &str) -> Vec<String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect()
}

async fn run(cli: Cli, out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    let families = families(&cli.dist_amdgpu_families);
    if families.is_empty() {
        return Err(
            TransferError::Usage("--dist-amdgpu-families names no GPU family".to_owned()).into(),
        );
    }
    let mut given = GivenRun::default();
    given.run_id = Some(cli.run_id);
    given.platform = Some(cli.platform);
    given.repository = cli.run_github_repo.and_then(|r| r.0);
    given.local_staging_dir = cli.local_staging_dir;
    let limits = cli.limits;
    let env = Arc::new(move |var: &str| limits.over(github_actions::process_env)(var));
    let concurrency = cli.download_concurrency as usize;
    let run = RunOptions::resolve(given, env, concurrency)?;
    let mut request = TarballsRequest::new(
        run,
        cli.topology.checkout(),
        families,
        cli.package_version,
        cli.output_dir,
    );
    request.include_test_tarballs = cli.include_test_tarballs;
    request.download_concurrency = concurrency;
    if let Some(workers) = cli.compress_workers {
        request.compress_workers = workers as usize;
    }
    let progress = rock_ci::progress::reporter_factory(cli.log.quiet);
    artifact_backend::stages::build_tarballs(&request, &progress, out).await?;
    Ok(())
}

pub(crate) fn main() -> ExitCode {
    let cli: Cli = rock_ci::parse_args();
    cli.log.init_logging();
    let mut stdout = std::io::stdout();
    rock_ci::block_on(run(cli, &mut stdout))
}

#[cfg(test)]
mod tests {
    use super::families;

    #[test]
    fn families_are_split_on_semicolons_and_trimmed() {
        assert_eq!(
            families(" gfx94X-dcgpu ;;gfx110X-all; "),
            ["gfx94X-dcgpu", "gfx110X-all"]
        );
        assert!(families(" ; ").is_empty());
    }
}
