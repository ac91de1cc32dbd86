//! Sorted directory walks.

use std::path::{Path, PathBuf};

use crate::{FileError, PathGlob};

/// One entry below the root of a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "a symlink is both a link and what it resolves to; callers test single flags"
)]
pub struct Entry {
    /// The root joined with the components.
    pub path: PathBuf,
    /// The path relative to the root, one name per component (lossily UTF-8).
    pub components: Vec<String>,
    /// A real directory (not a symlink), or with [`Walk::follow_links`] anything that
    /// resolves to one.
    pub is_dir: bool,
    /// A regular file (not a symlink), or with [`Walk::follow_links`] anything that resolves
    /// to one.
    pub is_file: bool,
    /// A symlink (to anything, even a directory, or dangling).
    pub is_symlink: bool,
    /// A symlink whose target is a regular file.
    pub is_symlink_to_file: bool,
}

impl Entry {
    /// The relative path, `/`-joined.
    pub fn relative(&self) -> String {
        self.components.join("/")
    }

    /// The last component (the file name).
    pub fn name(&self) -> &str {
        self.components.last().map_or("", String::as_str)
    }

    /// How deep below the root: 1 for the root's own entries.
    pub fn depth(&self) -> usize {
        self.components.len()
    }
}

/// A walk of the tree below a root: parents before their children, the entries of each
/// directory sorted by name (so relative paths come in [`crate::cmp_components`] order), the
/// root itself left out. Symlinks are listed, not followed, unless [`Walk::follow_links`].
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// fs_err::create_dir_all(dir.path().join("b/c")).unwrap();
/// fs_err::write(dir.path().join("a.txt"), "").unwrap();
/// let entries = rock_ci_file_tree::Walk::new(dir.path()).entries().unwrap();
/// let names: Vec<String> = entries.iter().map(rock_ci_file_tree::Entry::relative).collect();
/// assert_eq!(names, ["a.txt", "b", "b/c"]);
/// ```
#[derive(Debug, Clone)]
pub struct Walk {
    root: PathBuf,
    follow_links: bool,
    max_depth: usize,
}

impl Walk {
    /// A walk of everything below `root` (which may itself be a symlink to a directory).
    pub fn new(root: impl AsRef<Path>) -> Self {
        Self {
            root: root.as_ref().to_path_buf(),
            follow_links: false,
            max_depth: usize::MAX,
        }
    }

    /// Descend into symlinked directories and report what links resolve to (a dangling link
    /// stays a symlink that is neither file nor directory). Off by default.
    #[must_use]
    pub fn follow_links(mut self, yes: bool) -> Self {
        self.follow_links = yes;
        self
    }

    /// Stop at entries `depth` components below the root (1: the root's own entries).
    #[must_use]
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Every entry.
    pub fn entries(self) -> Result<Vec<Entry>, FileError> {
        self.entries_where(|_| true)
    }

    /// The entries `keep` accepts; a directory it rejects is not descended into.
    pub fn entries_where(self, keep: impl FnMut(&Entry) -> bool) -> Result<Vec<Entry>, FileError> {
        let root = self.root;
        // Called for the entries walkdir filters and for the links it cannot follow.
        let keep = std::cell::RefCell::new(keep);
        let mut out = Vec::new();
        let iter = walkdir::WalkDir::new(&root)
            .min_depth(1)
            .max_depth(self.max_depth)
            .follow_links(self.follow_links)
            .sort_by_file_name()
            .into_iter();
        let iter = iter.filter_entry(|e| {
            e.depth() == 0
                || (keep.borrow_mut())(&entry(&root, e.path(), e.file_type(), e.path_is_symlink()))
        });
        for next in iter {
            match next {
                Ok(e) => out.push(entry(&root, e.path(), e.file_type(), e.path_is_symlink())),
                Err(err) => {
                    let path = err.path().unwrap_or(&root).to_path_buf();
                    match fs_symlink_type(&path) {
                        // A link that cannot be followed (dangling, or a loop) is listed as
                        // a link.
                        Some(ty) if self.follow_links && ty.is_symlink() && err.depth() > 0 => {
                            let e = entry(&root, &path, ty, true);
                            if (keep.borrow_mut())(&e) {
                                out.push(e);
                            }
                        }
                        _ => {
                            let source = err
                                .into_io_error()
                                .unwrap_or_else(|| std::io::Error::other("filesystem loop"));
                            return Err(FileError::read(path, source));
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

fn fs_symlink_type(path: &Path) -> Option<std::fs::FileType> {
    path.symlink_metadata().ok().map(|m| m.file_type())
}

fn entry(root: &Path, path: &Path, file_type: std::fs::FileType, is_symlink: bool) -> Entry {
    let components = path
        .strip_prefix(root)
        .expect("walked paths are below the root")
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let is_symlink_to_file = is_symlink && path.metadata().is_ok_and(|m| m.is_file());
    Entry {
        path: path.to_path_buf(),
        components,
        is_dir: file_type.is_dir(),
        is_file: file_type.is_file(),
        is_symlink,
        is_symlink_to_file,
    }
}

/// Every entry below `root`, sorted, symlinks not followed: `Walk::new(root).entries()`.
pub fn walk(root: impl AsRef<Path>) -> Result<Vec<Entry>, FileError> {
    Walk::new(root).entries()
}

/// The entries of the directory `dir` itself, sorted by name, symlinks not followed.
pub fn list(dir: impl AsRef<Path>) -> Result<Vec<Entry>, FileError> {
    Walk::new(dir).max_depth(1).entries()
}

/// The entries matching any of the rglob patterns `include` (all when it is empty) and none
/// of `exclude` (see [`PathGlob::rglob`]).
pub fn select<'a>(entries: &'a [Entry], include: &[String], exclude: &[String]) -> Vec<&'a Entry> {
    let compile = |ps: &[String]| ps.iter().map(|p| PathGlob::rglob(p)).collect::<Vec<_>>();
    let (inc, exc) = (compile(include), compile(exclude));
    entries
        .iter()
        .filter(|e| {
            (inc.is_empty() || inc.iter().any(|p| p.matches(&e.components)))
                && !exc.iter().any(|p| p.matches(&e.components))
        })
        .collect()
}

// The fixture trees hold symlinks (to files, to directories, dangling): Unix-only here.
#[cfg(all(test, unix))]
mod tests;
