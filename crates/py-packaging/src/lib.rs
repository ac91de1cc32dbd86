//! ROCm Python packages from build artifacts (spec `python-packaging-and-elf.md`): the artifact
//! catalog and filters, the package model and names, the target-family views, the generated
//! `_dist_info.py` files.

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

mod build;
mod catalog;
mod devel;
mod error;
mod families;
mod invocation;
mod names;
mod params;
mod populate;
mod pyrepr;
mod sdist;
mod stub;
mod timing;
mod wheel;
mod zipout;

// The devel tarball's trees are symlink chains of ELF libraries; population edits ELF files and
// loads and runs them: about Linux itself.
#[cfg(all(test, unix))]
mod devel_tests;
#[cfg(all(test, unix))]
mod populate_tests;
#[cfg(test)]
mod wheel_tests;

use std::path::Path;

pub use build::{BuildOptions, run};
pub use build_topology::FamilyMap;
pub use catalog::{ArtifactCatalog, Entry, EntryKind};
pub use error::Error;
pub use families::{checkout_default_version, default_version, parse_family_list, valid_yyyymmdd};
pub use invocation::{
    DEFAULT_EPOCH, Given, Resolved, TEMPLATES, find_therock, source_date_epoch, timings_line,
};
pub use names::{Logical, Naming};
pub use params::Parameters;
pub use sdist::MIN_SETUPTOOLS;
pub use timing::{Stage, report as stage_timings};
pub use wheel::{DEFAULT_DEFLATE_LEVEL, WheelOptions, build_wheel, escaped_name};

use file_tree::FileError;

/// Runs `python -c script arg` in the staged package `staging` with `env` added; its
/// standard output, or an error naming the package, `what` failed and Python's stderr.
pub(crate) fn run_python(
    python: &str,
    script: &str,
    arg: &Path,
    staging: &Path,
    env: &[(String, String)],
    what: &str,
) -> Result<String, Error> {
    // The child runs in `staging`: relative paths given by the caller (a relative `--dest-dir`,
    // `--python venv/bin/python`) are made absolute against this process's directory first.
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let program = if python.contains(std::path::MAIN_SEPARATOR) || python.contains('/') {
        absolute(Path::new(python)).into_os_string()
    } else {
        python.into()
    };
    let out = std::process::Command::new(program)
        .arg("-c")
        .arg(script)
        .arg(absolute(arg))
        .current_dir(staging)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .map_err(|source| Error::Spawn {
            program: python.to_owned(),
            source,
        })?;
    if !out.status.success() {
        return Err(Error::Python {
            package: staging.to_path_buf(),
            what: what.to_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Writes `data` to `dest` (replacing a file there) with permission bits `mode`.
pub(crate) fn write_file(dest: &Path, data: &[u8], mode: u32) -> Result<(), Error> {
    if fs_err::symlink_metadata(dest).is_ok() {
        fs_err::remove_file(dest).map_err(|e| FileError::write(dest, e))?;
    }
    let mut options = fs_err::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    fs_err::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(dest).map_err(|e| FileError::write(dest, e))?;
    std::io::Write::write_all(&mut file, data).map_err(|e| FileError::write(dest, e))?;
    #[cfg(unix)]
    {
        // The umask may have cleared bits the source had.
        let perms = std::os::unix::fs::PermissionsExt::from_mode(mode);
        fs_err::set_permissions(dest, perms).map_err(|e| FileError::write(dest, e))?;
    }
    Ok(())
}

/// Appends formatted text to a `String`.
pub(crate) fn push(s: &mut String, args: std::fmt::Arguments<'_>) {
    std::fmt::Write::write_fmt(s, args).expect("writing to a String cannot fail");
}

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
