//! Symlink members on Windows. A symbolic link there is a file or a directory link, so it is
//! made once every member is written and its target's kind is known; where the system refuses
//! it (symbolic links need a privilege or developer mode), the target is copied in its place,
//! as Python's `tarfile` falls back to extracting a link's target. Unlike `tarfile`, a link to
//! a directory gets the directory's whole tree, and a link whose target is not in the archive
//! is an error naming it rather than a missing file.
//!
//! A flattened extraction into a shared tree ([`crate::extract_artifact_shared`]) writes its
//! links into its own directory but most other members straight into the tree: a link's target
//! is then looked up in both, and only what this extraction placed in the tree is copied.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use file_tree::FileError;

use crate::{Error, UnsafeMember};

/// Symlink members waiting for the end of the archive.
#[derive(Default)]
pub(crate) struct PendingLinks {
    links: Vec<Pending>,
    /// Files (hard links included) this extraction placed in the shared tree, relative to it.
    placed_files: HashSet<PathBuf>,
    /// Directories this extraction made or met in the shared tree on the way to its members,
    /// relative to it, in the order they were met (parents first).
    placed_dirs: Vec<PathBuf>,
}

struct Pending {
    /// The member, as stored.
    member: String,
    /// Where the link goes.
    link: PathBuf,
    /// What it points to, resolved inside the destination.
    target: PathBuf,
    /// The same, relative to the destination (and to a shared tree).
    rel: PathBuf,
    /// The link's text.
    text: String,
}

/// Where a link's target is: at its path in the destination, in the shared tree, or in both
/// (a directory whose members went partly each way).
struct Found {
    dir: bool,
    local: bool,
}

impl PendingLinks {
    /// Records symlink `member`, to be made at `link` pointing at `target` (resolved inside the
    /// destination, `rel` relative to it; `text` as stored).
    pub(crate) fn push(
        &mut self,
        member: &str,
        link: PathBuf,
        target: PathBuf,
        rel: PathBuf,
        text: String,
    ) {
        self.links.push(Pending {
            member: member.to_owned(),
            link,
            target,
            rel,
            text,
        });
    }

    /// Whether a symlink member is to be made at `path`.
    pub(crate) fn holds(&self, path: &Path) -> bool {
        self.links.iter().any(|p| p.link == path)
    }

    /// Records that this extraction placed `rel` (a directory when `dir`) in the shared tree.
    pub(crate) fn placed(&mut self, rel: &Path, dir: bool) {
        if dir {
            self.placed_dirs.push(rel.to_path_buf());
        } else {
            self.placed_files.insert(rel.to_path_buf());
        }
    }

    /// What `p` points to, if it is anywhere.
    fn find(&self, p: &Pending) -> Option<Found> {
        if let Ok(meta) = fs_err::metadata(&p.target) {
            return Some(Found {
                dir: meta.is_dir(),
                local: true,
            });
        }
        let dir = if self.placed_files.contains(&p.rel) {
            false
        } else if self.placed_dirs.contains(&p.rel) {
            true
        } else {
            return None;
        };
        Some(Found { dir, local: false })
    }

    /// Makes every recorded link, or copies its target: a link whose target is another link
    /// (or a directory holding one) waits for it. `shared` is the tree a flattened extraction
    /// placed members in ([`PendingLinks::placed`]).
    pub(crate) fn finish(mut self, archive: &str, shared: Option<&Path>) -> Result<(), Error> {
        while !self.links.is_empty() {
            // Ready: no pending link at or below its target, nor above it (itself included:
            // a link into its own tree is a cycle).
            let ready = self.links.iter().position(|p| {
                !self.links.iter().any(|other| {
                    p.target.starts_with(&other.link) || other.link.starts_with(&p.target)
                })
            });
            let Some(index) = ready else {
                let p = &self.links[0];
                return Err(refuse(archive, p, "symlinks form a cycle"));
            };
            let p = self.links.remove(index);
            let Some(found) = self.find(&p) else {
                return Err(refuse(
                    archive,
                    &p,
                    &format!(
                        "symlink target `{}` is not in the archive, and a link to nothing cannot be copied",
                        p.text
                    ),
                ));
            };
            // A link is made only where its whole target is beside it.
            let placed_below = shared.is_some()
                && (self.placed_files.contains(&p.rel)
                    || self.placed_dirs.iter().any(|d| d.starts_with(&p.rel)));
            if found.local && !placed_below && make_link(&p, found.dir)? {
                continue;
            }
            if found.dir {
                if found.local {
                    file_tree::copy_tree(&p.target, &p.link)?;
                } else {
                    fs_err::create_dir_all(&p.link).map_err(|e| FileError::write(&p.link, e))?;
                }
                if let Some(root) = shared {
                    self.copy_placed(root, &p)?;
                }
            } else if found.local {
                copy_file(&p.target, &p.link)?;
            } else if let Some(root) = shared {
                copy_file(&root.join(&p.rel), &p.link)?;
            }
        }
        Ok(())
    }

    /// Copies what this extraction placed in the shared tree `root` below the directory `p`
    /// points to into the link's copy, where the destination holds nothing there (its members
    /// came later in the archive).
    fn copy_placed(&self, root: &Path, p: &Pending) -> Result<(), Error> {
        for dir in &self.placed_dirs {
            if let Ok(below) = dir.strip_prefix(&p.rel) {
                let to = p.link.join(below);
                fs_err::create_dir_all(&to).map_err(|e| FileError::write(&to, e))?;
            }
        }
        let mut files: Vec<&PathBuf> = self
            .placed_files
            .iter()
            .filter(|f| f.starts_with(&p.rel))
            .collect();
        files.sort();
        for file in files {
            let to = p.link.join(file.strip_prefix(&p.rel).unwrap_or(file));
            if fs_err::symlink_metadata(&to).is_err() {
                copy_file(&root.join(file), &to)?;
            }
        }
        Ok(())
    }
}

/// Makes the link `p` to a directory (`dir`) or a file: `true` when it reads as its target.
fn make_link(p: &Pending, dir: bool) -> Result<bool, Error> {
    let made = if dir {
        std::os::windows::fs::symlink_dir(&p.text, &p.link)
    } else {
        std::os::windows::fs::symlink_file(&p.text, &p.link)
    };
    // A link is kept only when it reads as its target (Wine reports success without making
    // one).
    if made.is_ok() && fs_err::metadata(&p.link).is_ok() {
        return Ok(true);
    }
    if fs_err::symlink_metadata(&p.link).is_ok() {
        let removed = if dir {
            fs_err::remove_dir(&p.link)
        } else {
            fs_err::remove_file(&p.link)
        };
        removed.map_err(|e| FileError::write(&p.link, e))?;
    }
    Ok(false)
}

/// Copies the file `from` to `to`, modification time and read-only attribute included.
fn copy_file(from: &Path, to: &Path) -> Result<(), Error> {
    fs_err::copy(from, to).map_err(|e| FileError::write(to, e))?;
    if let Ok(mtime) = fs_err::metadata(from).and_then(|m| m.modified()) {
        let _ = file_tree::set_modified(to, mtime);
    }
    Ok(())
}

fn refuse(archive: &str, p: &Pending, reason: &str) -> Error {
    Error::UnsafeMember(UnsafeMember {
        archive: archive.to_owned(),
        member: p.member.clone(),
        reason: reason.to_owned(),
    })
}
