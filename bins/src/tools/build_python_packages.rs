//! Drop-in `build_python_packages.py`: the ROCm Python wheels and the `rocm` sdist from
//! exploded build artifacts, staged in parallel with in-process ELF edits, written natively.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgAction, Parser};
use py_packaging::{BuildOptions, Given};

/// Build the ROCm Python packages from artifacts.
#[derive(Debug, Parser)]
#[command(disable_version_flag = true, args_override_self = true)]
#[expect(clippy::struct_excessive_bools, reason = "command-line flags")]
struct Args {
    /// Directory of exploded artifact directories (`{name}_{component}_{target}`).
    #[arg(long, value_parser = rock_ci::parse_path)]
    artifact_dir: PathBuf,
    /// Staging root; packages go to `<dest>/dist[/<family>]`.
    #[arg(long, value_parser = rock_ci::parse_path)]
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
    #[arg(long, value_parser = rock_ci::parse_path)]
    therock_dir: Option<PathBuf>,
    /// Package templates (default: `<therock>/build_tools/packaging/python/templates`).
    #[arg(long, value_parser = rock_ci::parse_path)]
    templates_dir: Option<PathBuf>,
    /// Python that evaluates the templates' `setup.py` (default: `python3`; on Windows, whose
    /// Python installs name it so, `python`).
    #[arg(long, default_value = DEFAULT_PYTHON)]
    python: String,
    /// Print the time spent per stage to stderr at the end.
    #[arg(long)]
    timings: bool,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

/// The interpreter `--python` names by default: Windows installs of Python (python.org, the
/// runners' `setup-python`) name it `python.exe`, and only some add `python3.exe`.
const DEFAULT_PYTHON: &str = if cfg!(windows) { "python" } else { "python3" };

fn run(args: Args) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let given = Given {
        therock_dir: args.therock_dir.as_deref(),
        templates_dir: args.templates_dir.as_deref(),
        version: &args.version,
        linux_families: args.linux_amdgpu_families.as_deref(),
        windows_families: args.windows_amdgpu_families.as_deref(),
    };
    let resolved = given.resolve(std::env::current_dir, &mut stdout)?;
    let epoch = std::env::var("SOURCE_DATE_EPOCH").ok();
    let mut opts = BuildOptions::new(
        args.artifact_dir,
        args.dest_dir,
        resolved.templates_dir,
        resolved.version,
    );
    opts.build_packages = !args.no_build_packages;
    opts.version_suffix = args.version_suffix;
    opts.devel_tarball_compression = args.devel_tarball_compression;
    opts.wheel_compression = !args.no_wheel_compression;
    opts.deflate_level = args.deflate_level;
    opts.linux_targets = resolved.linux_targets;
    opts.windows_targets = resolved.windows_targets;
    opts.python = args.python;
    opts.cc = std::env::var("CC").ok().filter(|c| !c.is_empty());
    opts.source_date_epoch = py_packaging::source_date_epoch(epoch.as_deref())?;
    let start = std::time::Instant::now();
    py_packaging::run(&opts, &mut stdout)?;
    if args.timings {
        let line = py_packaging::timings_line(start.elapsed());
        writeln!(std::io::stderr(), "{line}")?;
    }
    Ok(())
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    rock_ci::exit_code(run(args))
}
