//! Drop-in `install_rocm_from_artifacts.py`: installs a ROCm tree into an output directory from
//! a CI run's artifacts, a release tarball, the latest nightly tarball or a local directory.
//! The new tree replaces the old one only once it is complete.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use rock_ci::{RepositoryArg, block_on, parse_repository};
use rocm_install::{COMPONENTS, Request, Selection, Source};

/// Install TheRock (ROCm) into a directory from CI artifacts, a release or a local tree.
#[derive(Debug, Parser)]
#[command(
    version,
    args_override_self = true,
    group(ArgGroup::new("group").args(["artifact_group", "amdgpu_family"]).required(true)),
    group(ArgGroup::new("source").args(["run_id", "release", "latest_release", "input_dir"]).required(true)),
)]
struct Args {
    /// Output directory; replaced (once the new tree is complete) when it exists.
    #[arg(long, default_value = "./therock-build", value_parser = rock_ci::parse_path)]
    output_dir: PathBuf,
    /// Artifact group to install (the run's matrix variant), e.g. gfx94X-dcgpu.
    #[arg(long, value_parser = non_empty_group)]
    artifact_group: Option<String>,
    /// GPU family to install (same as --artifact-group).
    #[arg(long, value_parser = non_empty_group)]
    amdgpu_family: Option<String>,
    /// GitHub run id whose artifacts to install.
    #[arg(long)]
    run_id: Option<String>,
    /// Release version to install: nightly `X.Y.Z(a|rc)YYYYMMDD` or dev `X.Y.Z.dev0+{hash}`.
    #[arg(long)]
    release: Option<String>,
    /// Install the newest nightly release of the group.
    #[arg(long)]
    latest_release: bool,
    /// Copy an existing directory (as `rsync -a DIR OUT`: without a trailing `/` the directory
    /// itself lands inside the output directory).
    #[arg(long, value_parser = rock_ci::parse_path)]
    input_dir: Option<PathBuf>,
    /// Show what would be installed; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Comma-separated GPU targets of per-target artifacts [default: the family's targets].
    #[arg(long, default_value = "")]
    amdgpu_targets: String,
    /// Repository of the run [default: `$GITHUB_REPOSITORY`, else `ROCm/TheRock`].
    #[arg(long, value_parser = parse_repository)]
    run_github_repo: Option<RepositoryArg>,
    /// A TheRock checkout, for the GPU family table (`cmake/therock_amdgpu_targets.cmake`)
    /// [default: `$THEROCK_DIR`, else the working directory or a parent holding
    /// `BUILD_TOPOLOGY.toml`].
    #[arg(long, env = "THEROCK_DIR", value_parser = rock_ci::parse_path)]
    therock_dir: Option<PathBuf>,
    /// Artifacts downloaded at once (run mode).
    #[arg(long, default_value_t = 10, value_parser = rock_ci::positive::<usize>())]
    download_concurrency: usize,
    /// Run mode: use archives that cannot be verified (no `.sha256sum` sidecar and no SHA-256
    /// recorded with the object) instead of failing on them.
    #[arg(long)]
    allow_unverified: bool,
    /// Run mode: `--member` and `--allow-empty`.
    #[command(flatten)]
    chosen: rock_ci::MemberArgs,
    #[command(flatten)]
    selection: SelectionArgs,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

fn non_empty_group(s: &str) -> Result<String, String> {
    if s.is_empty() {
        Err("Either --amdgpu-family or --artifact-group must be specified".to_owned())
    } else {
        Ok(s.to_owned())
    }
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    if (!args.chosen.members.is_empty() || args.chosen.allow_empty) && args.run_id.is_none() {
        clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            "--member and --allow-empty select archive members of a run: they need --run-id\n",
        )
        .exit();
    }
    let source = match (args.run_id, args.release, args.input_dir) {
        (Some(id), _, _) => Source::Run(id),
        (_, Some(version), _) => Source::Release(version),
        (_, _, Some(dir)) => Source::InputDir(dir),
        _ => Source::LatestRelease,
    };
    let mut request = Request::new(
        args.output_dir,
        args.artifact_group
            .or(args.amdgpu_family)
            .unwrap_or_default(),
        source,
    );
    request.dry_run = args.dry_run;
    request.amdgpu_targets = args.amdgpu_targets;
    request.run_github_repo = args.run_github_repo.and_then(|r| r.0);
    request.selection = args.selection.0;
    request.download_concurrency = args.download_concurrency.max(1);
    request.allow_unverified = args.allow_unverified;
    request.members = args.chosen.members;
    request.allow_empty = args.chosen.allow_empty;
    request.load_family_table(args.therock_dir);
    let lookup = args.limits.over(github_actions::process_env);
    let progress = rock_ci::progress::reporter_factory(args.log.quiet);
    let mut stdout = std::io::stdout().lock();
    block_on(async { Ok(rocm_install::run(&request, &lookup, &progress, &mut stdout).await?) })
}

/// The component flags (`--blas`, `--no-blas`, ...), `--tests` and `--base-only`.
#[derive(Debug, Clone, Default)]
struct SelectionArgs(Selection);

impl clap::FromArgMatches for SelectionArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(SelectionArgs(Selection {
            on: COMPONENTS
                .iter()
                .filter(|c| matches.get_flag(c.flag))
                .map(|c| c.flag)
                .collect(),
            tests: matches.get_flag("tests"),
            base_only: matches.get_flag("base-only"),
        }))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// `--{flag}` and `--{negated}`, the last given winning.
fn flag_pair(flag: &'static str, negated: &'static str, help: String) -> [clap::Arg; 2] {
    [
        clap::Arg::new(flag)
            .long(flag)
            .action(clap::ArgAction::SetTrue)
            .overrides_with(negated)
            .help(help),
        clap::Arg::new(negated)
            .long(negated)
            .action(clap::ArgAction::SetTrue)
            .overrides_with(flag)
            .hide(true),
    ]
}

impl clap::Args for SelectionArgs {
    fn augment_args(mut command: clap::Command) -> clap::Command {
        command = command.next_help_heading("Artifacts");
        for component in COMPONENTS {
            command = command.args(flag_pair(
                component.flag,
                component.negated,
                format!(
                    "Include '{}' artifacts (--{} to turn off)",
                    component.flag, component.negated
                ),
            ));
        }
        command
            .args(flag_pair(
                "tests",
                "no-tests",
                "Include the test artifacts of the enabled components".to_owned(),
            ))
            .arg(
                clap::Arg::new("base-only")
                    .long("base-only")
                    .action(clap::ArgAction::SetTrue)
                    .help("Include only the base artifacts"),
            )
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}
