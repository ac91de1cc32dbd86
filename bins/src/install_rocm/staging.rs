//! The new tree is built in `.{name}.install-XXXXXX.partial` beside the output directory, whose
//! owner holds a lock on `.{name}.install-XXXXXX.lock`; once complete it is swapped in and the
//! old tree (moved to `.{name}.install-XXXXXX.old`) removed. What a killed install left is
//! found by its free lock (or its missing lock file) and removed by the next install.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

const LOCK_SUFFIX: &str = ".lock";
const PARTIAL_SUFFIX: &str = ".partial";
const OLD_SUFFIX: &str = ".old";

/// Refuses output directories whose replacement would surely be a mistake: an existing
/// non-directory, a symlink, the file system root, the home directory, and the working
/// directory or any directory above it.
pub(super) fn check_replaceable(output: &Path) -> anyhow::Result<()> {
    let Ok(meta) = fs_err::symlink_metadata(output) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        bail!(
            "The output directory `{}` is a symlink: pass the directory it points to",
            output.display()
        );
    }
    if !meta.is_dir() {
        bail!(
            "The output directory `{}` exists and is not a directory",
            output.display()
        );
    }
    let real = fs_err::canonicalize(output)?;
    let home = std::env::home_dir().and_then(|h| fs_err::canonicalize(h).ok());
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| fs_err::canonicalize(d).ok());
    if real.parent().is_none()
        || home.as_deref() == Some(real.as_path())
        || cwd.as_deref().is_some_and(|cwd| cwd.starts_with(&real))
    {
        bail!(
            "Refusing to replace `{}` (the file system root, the home directory, or the working directory or one above it): choose an output directory of its own",
            output.display()
        );
    }
    Ok(())
}

/// An install in progress: the staging directory and the lock that marks it as alive.
pub(super) struct Staging {
    lock: tempfile::NamedTempFile,
    dir: PathBuf,
    committed: bool,
}

/// `output`'s parent directory (`.` for a bare name) and file name.
fn split(output: &Path) -> anyhow::Result<(PathBuf, String)> {
    let name = output
        .file_name()
        .with_context(|| format!("The output directory `{}` has no name", output.display()))?
        .to_string_lossy()
        .into_owned();
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name))
}

/// The path of `lock` with `suffix` instead of `.lock`.
fn sibling(lock: &Path, suffix: &str) -> PathBuf {
    let text = lock.as_os_str().to_string_lossy();
    PathBuf::from(format!(
        "{}{suffix}",
        text.strip_suffix(LOCK_SUFFIX).unwrap_or(&text)
    ))
}

fn remove_dir(path: &Path) -> anyhow::Result<()> {
    match fs_err::symlink_metadata(path) {
        Ok(_) => file_tree::remove_tree(path)
            .with_context(|| format!("Failed to remove `{}`", path.display())),
        Err(_) => Ok(()),
    }
}

/// Removes what killed installs into `{parent}/{name}` left: staging and old trees whose lock
/// is free or gone.
fn remove_stale(parent: &Path, name: &str) -> anyhow::Result<()> {
    let prefix = format!(".{name}.install-");
    let Ok(entries) = fs_err::read_dir(parent) else {
        return Ok(());
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    names.sort();
    for entry in &names {
        let path = parent.join(entry);
        if entry.ends_with(LOCK_SUFFIX) {
            let Ok(file) = fs_err::File::open(&path) else {
                continue;
            };
            if file.file().try_lock().is_err() {
                // A live install.
                continue;
            }
            remove_dir(&sibling(&path, PARTIAL_SUFFIX))?;
            remove_dir(&sibling(&path, OLD_SUFFIX))?;
            drop(file);
            let _ = fs_err::remove_file(&path);
        } else if let Some(stem) = entry
            .strip_suffix(PARTIAL_SUFFIX)
            .or_else(|| entry.strip_suffix(OLD_SUFFIX))
            && !names.contains(&format!("{stem}{LOCK_SUFFIX}"))
        {
            remove_dir(&path)?;
        }
    }
    Ok(())
}

impl Staging {
    /// Removes what earlier killed installs left, then creates the lock and an empty staging
    /// directory beside `output`.
    pub(super) fn begin(output: &Path) -> anyhow::Result<Self> {
        let (parent, name) = split(output)?;
        fs_err::create_dir_all(&parent)?;
        remove_stale(&parent, &name)?;
        let lock = tempfile::Builder::new()
            .prefix(&format!(".{name}.install-"))
            .suffix(LOCK_SUFFIX)
            .tempfile_in(&parent)
            .with_context(|| format!("Failed to write in `{}`", parent.display()))?;
        lock.as_file()
            .lock()
            .with_context(|| format!("Failed to lock `{}`", lock.path().display()))?;
        let dir = sibling(lock.path(), PARTIAL_SUFFIX);
        fs_err::create_dir(&dir)?;
        Ok(Staging {
            lock,
            dir,
            committed: false,
        })
    }

    /// The staging directory.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Puts the staging directory in the place of `output`, then removes the old tree.
    pub(super) fn commit(mut self, output: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
        let old = sibling(self.lock.path(), OLD_SUFFIX);
        let existed = fs_err::symlink_metadata(output).is_ok();
        if existed {
            writeln!(
                out,
                "Directory '{}' already exists, replacing existing directory and files",
                output.display()
            )?;
            fs_err::rename(output, &old)?;
        }
        if let Err(e) = fs_err::rename(&self.dir, output) {
            // Put the old tree back.
            if existed {
                let _ = fs_err::rename(&old, output);
            }
            return Err(e.into());
        }
        self.committed = true;
        if existed {
            remove_dir(&old)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = file_tree::remove_tree(&self.dir);
        }
        // The lock file goes with `self.lock`.
    }
}

/// Copies the tree `src` to `dest` (created) as `rsync -a` does: files with their modes and
/// modification times, symlinks as symlinks, directories with their modes and times. Returns
/// the files copied.
pub(super) fn copy_tree(src: &Path, dest: &Path) -> anyhow::Result<u64> {
    let mut files = 0;
    let mut dirs = vec![(dest.to_path_buf(), fs_err::metadata(src)?)];
    fs_err::create_dir_all(dest)?;
    for entry in file_tree::walk(src)? {
        let rel = entry.path.strip_prefix(src).unwrap_or(&entry.path);
        let to = dest.join(rel);
        if entry.is_symlink {
            let target = fs_err::read_link(&entry.path)?;
            #[cfg(unix)]
            fs_err::os::unix::fs::symlink(&target, &to)?;
            #[cfg(not(unix))]
            bail!(
                "Cannot copy symlink `{}` on this platform",
                entry.path.display()
            );
        } else if entry.is_dir {
            fs_err::create_dir(&to)?;
            dirs.push((to, fs_err::metadata(&entry.path)?));
        } else if entry.is_file {
            fs_err::copy(&entry.path, &to)?;
            let modified = fs_err::metadata(&entry.path)?.modified();
            if let Ok(mtime) = modified {
                let file = fs_err::OpenOptions::new().write(true).open(&to)?;
                let _ = file.file().set_modified(mtime);
            }
            files += 1;
        } else {
            bail!(
                "Cannot copy `{}`: not a file, directory or symlink",
                entry.path.display()
            );
        }
    }
    // Directory modes and times last, deepest first (writing into them changes both).
    dirs.sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
    for (dir, meta) in dirs {
        fs_err::set_permissions(&dir, meta.permissions())?;
        if let (Ok(mtime), Ok(handle)) = (meta.modified(), fs_err::File::open(&dir)) {
            let _ = handle.file().set_modified(mtime);
        }
    }
    Ok(files)
}
