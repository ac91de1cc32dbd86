//! Drop-in `build_python_packages.py`: the ROCm Python wheels and the `rocm` sdist from
//! exploded build artifacts, staged in parallel with in-process ELF edits, written natively.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{ArgAction, Parser};
use py_packaging::{BuildOptions, checkout_default_version, parse_family_list};

/// Midnight, 1 January 1980: the earliest time a zip entry can carry.
const DEFAULT_EPOCH: u64 = 315_532_800;

/// Build the ROCm Python packages from artifacts.
#[derive(Debug, Parser)]
#[command(disable_version_flag = true, args_override_self = true)]
#[expect(clippy::struct_excessive_bools, reason = "command-line flags")]
struct Args {
    /// Directory of exploded artifact directories (`{name}_{component}_{target}`).
    #[arg(long)]
    artifact_dir: PathBuf,
    /// Staging root; packages go to `<dest>/dist[/<family>]`.
    #[arg(long)]
    dest_dir: PathBuf,
    /// Build the wheels and sdist (default).
    #[arg(long, overrides_with = "no_build_packages", action = ArgAction::SetTrue)]
    build_packages: bool,
    /// Only stage the package directories.
    #[arg(long, overrides_with = "build_packages", action = ArgAction::SetTrue)]
    no_build_packages: bool,
    /// Version of every package (default: `rocm-version` of `version.json` + `.dev0`).
    #[arg(long, default_value = "")]
    version: String,
    /// Appended to every platform Python package name.
    #[arg(long, default_value = "")]
    version_suffix: String,
    /// Compress the devel tarball with xz.
    #[arg(long, overrides_with = "no_devel_tarball_compression", action = ArgAction::SetTrue)]
    devel_tarball_compression: bool,
    /// Leave the devel tarball uncompressed (default).
    #[arg(long, overrides_with = "devel_tarball_compression", action = ArgAction::SetTrue)]
    no_devel_tarball_compression: bool,
    /// Deflate wheel entries (default).
    #[arg(long, overrides_with = "no_wheel_compression", action = ArgAction::SetTrue)]
    wheel_compression: bool,
    /// Store wheel entries uncompressed.
    #[arg(long, overrides_with = "wheel_compression", action = ArgAction::SetTrue)]
    no_wheel_compression: bool,
    /// Deflate level of wheel entries (libdeflate): 1 (fastest) to 9 (smallest); the default,
    /// 6, writes wheels smaller than the reference's.
    #[arg(long, default_value_t = py_packaging::DEFAULT_DEFLATE_LEVEL,
          value_parser = clap::value_parser!(u32).range(1..=9))]
    deflate_level: u32,
    /// Linux GPU families (`,` or `;` separated).
    #[arg(long)]
    linux_amdgpu_families: Option<String>,
    /// Windows GPU families (`,` or `;` separated).
    #[arg(long)]
    windows_amdgpu_families: Option<String>,
    /// TheRock checkout (templates, `version.json`, GPU family table; default: found from the
    /// current directory upwards).
    #[arg(long)]
    therock_dir: Option<PathBuf>,
    /// Package templates (default: `<therock>/build_tools/packaging/python/templates`).
    #[arg(long)]
    templates_dir: Option<PathBuf>,
    /// Python that evaluates the templates' `setup.py`.
    #[arg(long, default_value = "python3")]
    python: String,
    /// Print the time spent per stage to stderr at the end.
    #[arg(long)]
    timings: bool,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

const TEMPLATES: &str = "build_tools/packaging/python/templates";

fn find_therock(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join(TEMPLATES).is_dir())
        .map(Path::to_path_buf)
}

fn run(args: Args) -> anyhow::Result<()> {
    let timings = args.timings;
    let therock = match &args.therock_dir {
        Some(d) => Some(d.clone()),
        None => find_therock(&std::env::current_dir()?),
    };
    let templates_dir = match (&args.templates_dir, &therock) {
        (Some(t), _) => t.clone(),
        (None, Some(root)) => root.join(TEMPLATES),
        (None, None) => anyhow::bail!(
            "no package templates: pass --templates-dir or --therock-dir, or run inside a TheRock checkout"
        ),
    };
    let need_root = || {
        therock
            .clone()
            .context("--therock-dir is needed to read version.json and the GPU family table")
    };
    let mut stdout = std::io::stdout().lock();
    let version = if args.version.is_empty() {
        use std::io::Write as _;
        writeln!(stdout, "::: Version not specified, choosing a default")?;
        let v = checkout_default_version(&need_root()?)?;
        writeln!(stdout, "::: Version defaulting to {v}")?;
        v
    } else {
        args.version.clone()
    };
    let lists = [&args.linux_amdgpu_families, &args.windows_amdgpu_families]
        .map(|v| v.as_deref().and_then(parse_family_list));
    let [linux_targets, windows_targets] = if lists.iter().any(Option::is_some) {
        let checkout = build_topology::Checkout {
            topology: None,
            therock_dir: Some(need_root()?),
        };
        let map = checkout.family_map()?;
        let expand = |l: &Option<Vec<String>>| l.as_ref().map(|l| map.expand(l)).transpose();
        [expand(&lists[0])?, expand(&lists[1])?]
    } else {
        [None, None]
    };
    let source_date_epoch = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) => v
            .trim()
            .parse()
            .with_context(|| format!("SOURCE_DATE_EPOCH={v:?} is not a number of seconds"))?,
        Err(_) => DEFAULT_EPOCH,
    };
    let opts = BuildOptions {
        artifact_dir: args.artifact_dir,
        dest_dir: args.dest_dir,
        build_packages: !args.no_build_packages,
        version,
        version_suffix: args.version_suffix,
        devel_tarball_compression: args.devel_tarball_compression,
        wheel_compression: !args.no_wheel_compression,
        deflate_level: args.deflate_level,
        linux_targets,
        windows_targets,
        templates_dir,
        python: args.python,
        cc: std::env::var("CC").ok().filter(|c| !c.is_empty()),
        source_date_epoch,
    };
    let start = std::time::Instant::now();
    py_packaging::run(&opts, &mut stdout)?;
    if timings {
        let stages: Vec<String> = py_packaging::stage_timings()
            .into_iter()
            .map(|(stage, d)| format!("{} {:.2}s", stage.name(), d.as_secs_f64()))
            .collect();
        use std::io::Write as _;
        writeln!(
            std::io::stderr(),
            "timings: total {:.2}s; {}",
            start.elapsed().as_secs_f64(),
            stages.join(", ")
        )?;
    }
    Ok(())
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    rock_ci::exit_code(run(args))
}
