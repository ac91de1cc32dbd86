//! The `rocm` sdist (spec §13.1–§13.2): built by the template's setuptools through the PEP 517
//! `build_sdist` hook (the package's `setup.py` runs again when users install it), then
//! rewritten with LF line endings in its text members and with normalized member metadata
//! (mtime `SOURCE_DATE_EPOCH`, owner 0:0, no names, gzip header without name or time), so the
//! same inputs give the same bytes.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use file_tree::FileError;

use crate::Error;

const HOOK: &str = "import sys\nfrom setuptools import build_meta\nname = build_meta.build_sdist(sys.argv[1])\nprint('ROCK_CI_SDIST:' + name)\n";

/// The oldest setuptools whose `rocm` sdist is the one current setuptools writes: metadata
/// 2.4 with `Requires-Dist` and `Dynamic:` lines (68 writes no `Requires-Dist`, 69–75 write
/// metadata 2.1 without `Dynamic:`, 76 writes 2.2).
pub const MIN_SETUPTOOLS: &str = "77.0.1";

const PROBE: &str = "import sys\ntry:\n    import setuptools\n    v = setuptools.__version__\nexcept ImportError:\n    v = ''\nprint(sys.executable)\nprint(v)\n";

/// The leading release numbers of a version (`77.0.1.post1` → `[77, 0, 1]`, `80.0rc1` →
/// `[80, 0]`).
fn release(version: &str) -> Vec<u64> {
    let mut numbers = Vec::new();
    for part in version.split('.') {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        let Ok(n) = digits.parse() else { break };
        numbers.push(n);
        if digits.len() != part.len() {
            break;
        }
    }
    numbers
}

/// Checks that `python` has a setuptools of at least [`MIN_SETUPTOOLS`]; returns its
/// `sys.executable`. `cwd` is where Python runs.
pub(crate) fn check_setuptools(python: &str, cwd: &Path) -> Result<String, Error> {
    let stdout = crate::run_python(python, PROBE, cwd, cwd, &[], "probing setuptools")?;
    let mut lines = stdout.lines();
    let executable = lines.next().unwrap_or_default().trim().to_owned();
    let found = lines.next().unwrap_or_default().trim().to_owned();
    let mut have = release(&found);
    let mut want = release(MIN_SETUPTOOLS);
    let width = have.len().max(want.len());
    have.resize(width, 0);
    want.resize(width, 0);
    if found.is_empty() || have < want {
        return Err(Error::OldSetuptools {
            python: python.to_owned(),
            executable,
            found,
            minimum: MIN_SETUPTOOLS,
        });
    }
    Ok(executable)
}

/// Whether a member's line endings are normalized (§13.2, §15.14).
pub(crate) fn is_text_member(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    if base == "PKG-INFO" {
        return true;
    }
    match base.rfind('.') {
        Some(i) if i > 0 => matches!(
            base[i..].to_lowercase().as_str(),
            ".py" | ".md" | ".toml" | ".cfg" | ".txt" | ".rst" | ".in"
        ),
        _ => false,
    }
}

/// Builds the sdist of the package staged in `staging` into `dist` with `python`, then
/// normalizes it. Returns its path.
pub(crate) fn build_sdist(
    staging: &Path,
    dist: &Path,
    python: &str,
    mtime: u64,
) -> Result<PathBuf, Error> {
    fs_err::create_dir_all(dist).map_err(|e| FileError::write(dist, e))?;
    let dist = fs_err::canonicalize(dist).map_err(|e| FileError::read(dist, e))?;
    let stdout = crate::run_python(python, HOOK, &dist, staging, &[], "building the sdist")?;
    let name = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("ROCK_CI_SDIST:"))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::NoSdist { dist: dist.clone() })?;
    let path = dist.join(name);
    if !path.is_file() {
        return Err(Error::NoSdist { dist });
    }
    normalize(&path, mtime)?;
    Ok(path)
}

/// Rewrites the `.tar.gz` at `path`: CRLF → LF in text members, normalized headers; member
/// order kept; replaced atomically.
pub(crate) fn normalize(path: &Path, mtime: u64) -> Result<(), Error> {
    let file = fs_err::File::open(path).map_err(|e| FileError::read(path, e))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = tempfile::Builder::new()
        .prefix(".sdist.")
        .tempfile_in(dir)
        .map_err(|e| FileError::write(dir, e))?;
    let gz = flate2::GzBuilder::new().mtime(0).write(
        std::io::BufWriter::new(
            temp.as_file()
                .try_clone()
                .map_err(|e| FileError::write(path, e))?,
        ),
        flate2::Compression::default(),
    );
    let mut builder = tar::Builder::new(gz);
    for entry in archive.entries().map_err(|e| FileError::read(path, e))? {
        let mut entry = entry.map_err(|e| FileError::read(path, e))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let mut header = entry.header().clone();
        let mut data = Vec::new();
        entry
            .read_to_end(&mut data)
            .map_err(|source| Error::SdistMember {
                member: name.clone(),
                sdist: path.to_path_buf(),
                source,
            })?;
        if header.entry_type().is_file() && is_text_member(&name) {
            let mut fixed = Vec::with_capacity(data.len());
            let mut i = 0;
            while i < data.len() {
                if data[i] == b'\r' && data.get(i + 1) == Some(&b'\n') {
                    i += 1;
                    continue;
                }
                fixed.push(data[i]);
                i += 1;
            }
            data = fixed;
        }
        header.set_size(data.len() as u64);
        header.set_mtime(mtime);
        header.set_uid(0);
        header.set_gid(0);
        let _ = header.set_username("");
        let _ = header.set_groupname("");
        builder
            .append_data(&mut header, &name, data.as_slice())
            .map_err(|e| FileError::write(path, e))?;
    }
    let gz = builder
        .into_inner()
        .map_err(|e| FileError::write(path, e))?;
    let mut inner = gz.finish().map_err(|e| FileError::write(path, e))?;
    inner.flush().map_err(|e| FileError::write(path, e))?;
    drop(inner);
    if fs_err::metadata(temp.path())
        .map_err(|e| FileError::write(path, e))?
        .len()
        == 0
    {
        return Err(Error::EmptySdist {
            sdist: path.to_path_buf(),
        });
    }
    #[cfg(unix)]
    fs_err::set_permissions(
        temp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .map_err(|e| FileError::write(path, e))?;
    temp.persist(path)
        .map_err(|e| FileError::write(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests;
