//! Drop-in `upload_package_repo.py`: publish built `.deb` or `.rpm` packages as an APT or
//! YUM/DNF repository in the run's S3 prefix, merged with the repository already there.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use package_index::repo::{self, PkgType};
use rock_ci::{RunRequest, block_on, resolve_run_root};
use workflow_outputs::Platform;

/// `--pkg-type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PkgTypeArg {
    /// An APT repository of `.deb` packages.
    Deb,
    /// A YUM/DNF repository of `.rpm` packages.
    Rpm,
}

impl From<PkgTypeArg> for PkgType {
    fn from(arg: PkgTypeArg) -> Self {
        match arg {
            PkgTypeArg::Deb => PkgType::Deb,
            PkgTypeArg::Rpm => PkgType::Rpm,
        }
    }
}

/// Publish a package repository to S3.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// The kind of packages and repository.
    #[arg(long, value_enum)]
    pkg_type: PkgTypeArg,
    /// The workflow run whose prefix receives the repository.
    #[arg(long)]
    run_id: String,
    /// The directory of built packages (its top-level packages are moved into the repository
    /// layout).
    #[arg(long)]
    package_dir: PathBuf,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    let lookup = args.limits.over(github_actions::process_env);
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    block_on(run(&args, &lookup, &mut stdout, &mut stderr))
}

/// Publishes the repository: progress to `out`, the bucket resolution and the messages of
/// the RPM tools to `log`.
async fn run(
    args: &Args,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> anyhow::Result<()> {
    let pkg_type = PkgType::from(args.pkg_type);
    let dir = rock_ci::uploads::existing_dir(&args.package_dir, "Package directory")?;
    let request = RunRequest {
        run_id: args.run_id.clone(),
        platform: Platform::Linux,
        repository: None,
        release_type: None,
        lookup_workflow_run: false,
    };
    let (root, selection) = resolve_run_root(&request, lookup, log)?;
    let location = root.native_linux_packages(pkg_type.name());
    let url = repo::install_url(&location, pkg_type);
    let job_type = lookup("RELEASE_TYPE").unwrap_or_else(|| "ci".to_owned());

    let prepared = repo::prepare(&dir, pkg_type, location, out, log).await?;
    let backend = rock_ci::uploads::backend(
        None,
        repo::transfer_options(),
        selection.config().region(),
        args.log.quiet,
        lookup,
    )
    .await?;
    repo::publish(&backend, &prepared, &job_type, out, log).await?;

    writeln!(out, "Package repository URL: {url}")?;
    github_actions::set_outputs_with(&[("package_repository_url", &url)], lookup)?;
    let mut logs_url = None;
    if let Some(logs) = repo::log_dir(&dir, out)? {
        let dest = root.native_linux_packages_log_dir(pkg_type.name());
        rock_ci::uploads::upload_logs(&backend, &logs, &dest, None, out).await?;
        let url = root
            .native_linux_packages_log_index(pkg_type.name())
            .https_url();
        writeln!(out, "Packaging logs uploaded to: {url}")?;
        github_actions::set_outputs_with(&[("packaging_logs_url", &url)], lookup)?;
        logs_url = Some(url);
    }
    github_actions::append_step_summary_with(
        &repo::summary(pkg_type, &url, logs_url.as_deref()),
        lookup,
    )?;
    Ok(())
}
