//! Replacing a directory as a whole: the new tree is built in `.{name}.install-XXXXXX.partial`
//! beside it, whose owner holds a lock on `.{name}.install-XXXXXX.lock`; once complete it is
//! swapped in and the old tree (moved to `.{name}.install-XXXXXX.old`) removed. A failure
//! before the swap leaves the old tree as it was. What a killed replacement left is found by
//! its free lock (or its missing lock file) and removed by the next one.
//!
//! [`copy_tree`] copies a tree as `rsync -a` does, to fill a staging directory from another.

use std::io;
use std::path::{Path, PathBuf};

use crate::FileError;

const LOCK_SUFFIX: &str = ".lock";
const PARTIAL_SUFFIX: &str = ".partial";
const OLD_SUFFIX: &str = ".old";

/// A replacement of a directory in progress: the staging directory and the lock that marks it
/// as alive. Dropped without [`StagedDir::commit`], the staging directory is removed and the
/// target left as it was.
#[derive(Debug)]
pub struct StagedDir {
    lock: tempfile::NamedTempFile,
    dir: PathBuf,
    committed: bool,
}

/// `target`'s parent directory (`.` for a bare name) and file name.
fn split(target: &Path) -> Result<(PathBuf, String), FileError> {
    let name = target
        .file_name()
        .ok_or_else(|| {
            FileError::write(
                target,
                io::Error::new(io::ErrorKind::InvalidInput, "the directory has no name"),
            )
        })?
        .to_string_lossy()
        .into_owned();
    let parent = match target.parent() {
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

/// Removes the tree at `path`, if there is one.
fn remove_dir(path: &Path) -> Result<(), FileError> {
    match fs_err::symlink_metadata(path) {
        Ok(_) => crate::remove_tree(path).map_err(|e| FileError::write(path, e)),
        Err(_) => Ok(()),
    }
}

/// Removes what killed replacements of `{parent}/{name}` left: staging and old trees whose
/// lock is free or gone.
fn remove_stale(parent: &Path, name: &str) -> Result<(), FileError> {
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
                // A live replacement.
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

impl StagedDir {
    /// Removes what earlier killed replacements of `target` left, then creates the lock and an
    /// empty staging directory beside `target` (creating its parent when missing).
    pub fn begin(target: &Path) -> Result<Self, FileError> {
        let (parent, name) = split(target)?;
        fs_err::create_dir_all(&parent).map_err(|e| FileError::write(&parent, e))?;
        remove_stale(&parent, &name)?;
        let lock = tempfile::Builder::new()
            .prefix(&format!(".{name}.install-"))
            .suffix(LOCK_SUFFIX)
            .tempfile_in(&parent)
            .map_err(|e| FileError::write(&parent, e))?;
        lock.as_file()
            .lock()
            .map_err(|e| FileError::write(lock.path(), e))?;
        let dir = sibling(lock.path(), PARTIAL_SUFFIX);
        fs_err::create_dir(&dir).map_err(|e| FileError::write(&dir, e))?;
        Ok(StagedDir {
            lock,
            dir,
            committed: false,
        })
    }

    /// The staging directory, to be filled with the new tree.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Puts the staging directory in the place of `target` (the path given to
    /// [`StagedDir::begin`]), then removes the old tree. When the swap fails, the old tree is
    /// put back.
    pub fn commit(mut self, target: &Path) -> Result<(), FileError> {
        let old = sibling(self.lock.path(), OLD_SUFFIX);
        let existed = fs_err::symlink_metadata(target).is_ok();
        if existed {
            fs_err::rename(target, &old).map_err(|e| FileError::write(target, e))?;
        }
        if let Err(e) = fs_err::rename(&self.dir, target) {
            // Put the old tree back.
            if existed {
                let _ = fs_err::rename(&old, target);
            }
            return Err(FileError::write(target, e));
        }
        self.committed = true;
        if existed {
            remove_dir(&old)?;
        }
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = crate::remove_tree(&self.dir);
        }
        // The lock file goes with `self.lock`.
    }
}

/// Copies the tree `src` to `dest` (created) as `rsync -a` does: files with their modes and
/// modification times, symlinks as symlinks, directories with their modes and times. Returns
/// the files copied.
pub fn copy_tree(src: &Path, dest: &Path) -> Result<u64, FileError> {
    let read = |path: &Path| {
        let path = path.to_path_buf();
        move |e| FileError::read(&path, e)
    };
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |e| FileError::write(&path, e)
    };
    let mut files = 0;
    let mut dirs = vec![(
        dest.to_path_buf(),
        fs_err::metadata(src).map_err(read(src))?,
    )];
    fs_err::create_dir_all(dest).map_err(write(dest))?;
    for entry in crate::walk(src)? {
        let rel = entry.path.strip_prefix(src).unwrap_or(&entry.path);
        let to = dest.join(rel);
        if entry.is_symlink {
            let target = fs_err::read_link(&entry.path).map_err(read(&entry.path))?;
            #[cfg(unix)]
            fs_err::os::unix::fs::symlink(&target, &to).map_err(write(&to))?;
            #[cfg(not(unix))]
            return Err(FileError::read(
                &entry.path,
                io::Error::other(format!(
                    "cannot copy symlink to `{}` on this platform",
                    target.display()
                )),
            ));
        } else if entry.is_dir {
            fs_err::create_dir(&to).map_err(write(&to))?;
            dirs.push((
                to,
                fs_err::metadata(&entry.path).map_err(read(&entry.path))?,
            ));
        } else if entry.is_file {
            fs_err::copy(&entry.path, &to).map_err(write(&to))?;
            let modified = fs_err::metadata(&entry.path)
                .map_err(read(&entry.path))?
                .modified();
            // A read-only copy (0444, the read-only attribute) gets its time too.
            if let Ok(mtime) = modified {
                crate::set_modified(&to, mtime).map_err(write(&to))?;
            }
            files += 1;
        } else {
            return Err(FileError::read(
                &entry.path,
                io::Error::other("not a file, directory or symlink"),
            ));
        }
    }
    // Directory modes and times last, deepest first (writing into them changes both).
    dirs.sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
    for (dir, meta) in dirs {
        fs_err::set_permissions(&dir, meta.permissions()).map_err(write(&dir))?;
        if let Ok(mtime) = meta.modified() {
            let _ = crate::set_modified(&dir, mtime);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests;
