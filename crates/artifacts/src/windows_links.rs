//! Symlink members on Windows. A symbolic link there is a file or a directory link, so it is
//! made once every member is written and its target's kind is known; where the system refuses
//! it (symbolic links need a privilege or developer mode), the target is copied in its place,
//! as Python's `tarfile` falls back to extracting a link's target. Unlike `tarfile`, a link to
//! a directory gets the directory's whole tree, and a link whose target is not in the archive
//! is an error naming it rather than a missing file.

use std::path::{Path, PathBuf};

use file_tree::FileError;

use crate::{Error, UnsafeMember};

/// Symlink members waiting for the end of the archive.
#[derive(Default)]
pub(crate) struct PendingLinks {
    links: Vec<Pending>,
}

struct Pending {
    /// The member, as stored.
    member: String,
    /// Where the link goes.
    link: PathBuf,
    /// What it points to, resolved inside the destination.
    target: PathBuf,
    /// The link's text.
    text: String,
}

impl PendingLinks {
    /// Records symlink `member`, to be made at `link` pointing at `target` (resolved inside the
    /// destination; `text` as stored).
    pub(crate) fn push(&mut self, member: &str, link: PathBuf, target: PathBuf, text: String) {
        self.links.push(Pending {
            member: member.to_owned(),
            link,
            target,
            text,
        });
    }

    /// Whether a symlink member is to be made at `path`.
    pub(crate) fn holds(&self, path: &Path) -> bool {
        self.links.iter().any(|p| p.link == path)
    }

    /// Makes every recorded link, or copies its target: a link whose target is another link
    /// (or a directory holding one) waits for it.
    pub(crate) fn finish(mut self, archive: &str) -> Result<(), Error> {
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
            let Ok(meta) = fs_err::metadata(&p.target) else {
                return Err(refuse(
                    archive,
                    &p,
                    &format!(
                        "symlink target `{}` is not in the archive, and a link to nothing cannot be copied",
                        p.text
                    ),
                ));
            };
            let made = if meta.is_dir() {
                std::os::windows::fs::symlink_dir(&p.text, &p.link)
            } else {
                std::os::windows::fs::symlink_file(&p.text, &p.link)
            };
            // A link is kept only when it reads as its target (Wine reports success without
            // making one).
            if made.is_ok() && fs_err::metadata(&p.link).is_ok() {
                continue;
            }
            if fs_err::symlink_metadata(&p.link).is_ok() {
                let removed = if meta.is_dir() {
                    fs_err::remove_dir(&p.link)
                } else {
                    fs_err::remove_file(&p.link)
                };
                removed.map_err(|e| FileError::write(&p.link, e))?;
            }
            if meta.is_dir() {
                file_tree::copy_tree(&p.target, &p.link)?;
            } else {
                copy_file(&p.target, &p.link)?;
            }
        }
        Ok(())
    }
}

/// Copies the file `from` to `to`, modification time included.
fn copy_file(from: &Path, to: &Path) -> Result<(), Error> {
    fs_err::copy(from, to).map_err(|e| FileError::write(to, e))?;
    if let Ok(mtime) = fs_err::metadata(from).and_then(|m| m.modified())
        && let Ok(file) = fs_err::OpenOptions::new().write(true).open(to)
    {
        let _ = file.file().set_modified(mtime);
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
