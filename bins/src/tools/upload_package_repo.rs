//! Drop-in `upload_package_repo.py`: publish built `.deb` or `.rpm` packages as an APT or
//! YUM/DNF repository in the run's S3 prefix, merged with the repository already there.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use package_index::repo::PkgType;
use rock_ci::block_on;
use rock_ci::progress::Progress;
use run_uploads::package_repo::{Plan, run};

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
    #[arg(long, value_parser = rock_ci::parse_path)]
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
    let plan = Plan::new(args.pkg_type.into(), args.run_id, args.package_dir);
    let progress = Arc::new(Progress::for_stderr(args.log.quiet));
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    block_on(async { Ok(run(&plan, progress, &lookup, &mut stdout, &mut stderr).await?) })
}
