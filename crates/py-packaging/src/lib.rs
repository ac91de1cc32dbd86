//! ROCm Python packages from build artifacts (spec `python-packaging-and-elf.md`): the artifact
//! catalog and filters, the package model and names, the target-family views, the generated
//! `_dist_info.py` files.

pub mod build;
pub mod catalog;
pub mod devel;
pub mod families;
pub mod names;
pub mod params;
pub mod populate;
pub mod pyrepr;
pub mod sdist;
pub mod stub;
pub mod timing;
pub mod wheel;

#[cfg(test)]
mod devel_tests;
#[cfg(test)]
mod populate_tests;
#[cfg(test)]
mod wheel_tests;

use std::path::{Path, PathBuf};

pub use catalog::{ArtifactCatalog, Entry, EntryKind};
pub use names::{Logical, Naming};
pub use params::Parameters;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: the message is the reference's where it has one.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing an archive failed.
    #[error(transparent)]
    Archive(#[from] artifacts::Error),
}

pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

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
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(arg)
        .current_dir(staging)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .map_err(|e| Error::Invalid(format!("cannot run `{python}`: {e}")))?;
    if !out.status.success() {
        return Err(Error::Invalid(format!(
            "{}: {what} failed: {}",
            staging.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Writes `data` to `dest` (replacing a file there) with permission bits `mode`.
pub(crate) fn write_file(dest: &Path, data: &[u8], mode: u32) -> Result<(), Error> {
    if fs_err::symlink_metadata(dest).is_ok() {
        fs_err::remove_file(dest).map_err(|e| io(dest, e))?;
    }
    let mut options = fs_err::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    fs_err::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(dest).map_err(|e| io(dest, e))?;
    std::io::Write::write_all(&mut file, data).map_err(|e| io(dest, e))?;
    #[cfg(unix)]
    {
        // The umask may have cleared bits the source had.
        let perms = std::os::unix::fs::PermissionsExt::from_mode(mode);
        fs_err::set_permissions(dest, perms).map_err(|e| io(dest, e))?;
    }
    Ok(())
}

/// Appends formatted text to a `String`.
pub(crate) fn push(s: &mut String, args: std::fmt::Arguments<'_>) {
    std::fmt::Write::write_fmt(s, args).expect("writing to a String cannot fail");
}

/// The entries of `dir`, sorted by name.
pub(crate) fn sorted_dir(dir: &Path) -> Result<Vec<fs_err::DirEntry>, Error> {
    let mut entries = fs_err::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| io(dir, e))?;
    entries.sort_by_key(fs_err::DirEntry::file_name);
    Ok(entries)
}

/// The paths in `dir`, sorted by name.
pub(crate) fn sorted_paths(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    Ok(sorted_dir(dir)?
        .iter()
        .map(fs_err::DirEntry::path)
        .collect())
}
