//! The record of an artifact directory as a verified fetch left it, kept beside the output
//! ([`crate::verified_dir`]) as `{archive}.tree`: the digest of the archive it was unpacked
//! from, and every entry below the directory with its type, permission bits, size,
//! modification time and (a symlink) target, as they are on disk once the directory is in
//! place. A later fetch skips the artifact only while its archive still has that digest and
//! the same walk of the directory gives the same entries: one `lstat` per entry (a
//! `readlink` per symlink, a `readdir` per directory), no file read again.
//!
//! What the walk cannot see: a change of content that keeps the size and the modification
//! time (an edit followed by `touch -r`), a change of owner, extended attributes, or which
//! paths are hard links of one another. A record of another format, one that cannot be read,
//! and a tree with a name that is not Unicode (never recorded) mean the artifact is unpacked
//! again.

use std::fmt::Write as _;
use std::path::Path;
use std::time::SystemTime;

use file_tree::FileError;

use crate::Error;

/// The first line of a record; another first line (an earlier format) is not trusted.
const FORMAT: &str = "rock-ci extracted tree 1";

/// The entries below `dir` (the directory itself left out), one line each, sorted by path:
/// `None` when a name or link target is not Unicode (such a tree is not recorded).
fn entries(dir: &Path) -> Result<Option<String>, FileError> {
    let mut out = String::new();
    for entry in file_tree::Walk::new(dir).entries()? {
        let path = &entry.path;
        let Some(rel) = path.strip_prefix(dir).ok().and_then(Path::to_str) else {
            return Ok(None);
        };
        let meta = fs_err::symlink_metadata(path).map_err(|e| FileError::read(path, e))?;
        let ty = meta.file_type();
        let (kind, size) = if ty.is_symlink() {
            ('l', meta.len())
        } else if ty.is_dir() {
            // A directory's size depends on the file system's history, not on its entries.
            ('d', 0)
        } else if ty.is_file() {
            ('f', meta.len())
        } else {
            ('o', meta.len())
        };
        let mtime = meta.modified().map_err(|e| FileError::read(path, e))?;
        let _ = write!(
            out,
            "{kind} {:o} {size} {} {rel:?}",
            permissions(&meta),
            time_text(mtime)
        );
        if ty.is_symlink() {
            let target = fs_err::read_link(path).map_err(|e| FileError::read(path, e))?;
            let Some(target) = target.to_str() else {
                return Ok(None);
            };
            let _ = write!(out, " -> {target:?}");
        }
        out.push('\n');
    }
    Ok(Some(out))
}

/// The permission bits (Unix), or whether the entry is read-only (elsewhere).
#[cfg(unix)]
fn permissions(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o7777
}

/// The permission bits (Unix), or whether the entry is read-only (elsewhere).
#[cfg(not(unix))]
fn permissions(meta: &std::fs::Metadata) -> u32 {
    u32::from(meta.permissions().readonly())
}

/// `secs.nanos` since the epoch (negative before it).
fn time_text(t: SystemTime) -> String {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => format!("{}.{:09}", d.as_secs(), d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            format!("-{}.{:09}", d.as_secs(), d.subsec_nanos())
        }
    }
}

/// Writes `record` (through a temporary file and a rename): the directory `tree`, in place
/// and complete, unpacked from an archive whose digest is `sha256`. Where the tree cannot be
/// recorded (a name that is not Unicode, an entry that cannot be read) nothing is written and
/// a later fetch unpacks it again; the error is only that of the writing.
pub(crate) fn write(record: &Path, tree: &Path, sha256: &str) -> Result<(), Error> {
    let listed = match entries(tree) {
        Ok(Some(listed)) => listed,
        Ok(None) => {
            tracing::info!(
                "Not recording {} (a name is not Unicode): a later fetch unpacks it again",
                tree.display()
            );
            return Ok(());
        }
        Err(e) => {
            tracing::info!("Not recording {}: {e}", tree.display());
            return Ok(());
        }
    };
    let text = format!("{FORMAT}\nsha256 {sha256}\n{listed}");
    crate::download::write_atomic(record, text.as_bytes())
}

/// The digest `record` gives for `tree` when the tree holds exactly the entries recorded, as
/// recorded; `None` when the record is missing, or the tree differs in any entry (missing,
/// added, or with another type, mode, size, time or target). A record that is there but
/// cannot be read or is not one this version writes is `None` too, with a warning naming it:
/// the tree is unpacked again and the record replaced.
pub(crate) fn unchanged_sha256(record: &Path, tree: &Path) -> Option<String> {
    let text = match fs_err::read_to_string(record) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return unusable(record, tree, &e.to_string()),
    };
    let Some(rest) = text.strip_prefix(FORMAT).and_then(|r| r.strip_prefix('\n')) else {
        return unusable(record, tree, "not a record of this version");
    };
    let sha256 = rest
        .split_once('\n')
        .and_then(|(sha_line, listed)| Some((sha_line.strip_prefix("sha256 ")?, listed)));
    let Some((sha256, listed)) =
        sha256.filter(|(s, _)| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit()))
    else {
        return unusable(record, tree, "no digest in it");
    };
    (entries(tree).ok()??.as_str() == listed).then(|| sha256.to_owned())
}

/// Warns that `record` cannot be used (`why`) and so `tree` is unpacked again; `None`.
fn unusable(record: &Path, tree: &Path, why: &str) -> Option<String> {
    // As the user would type it: without Windows' `\\?\` prefix of a long-path form.
    tracing::warn!(
        "Cannot use the record {} ({why}): unpacking {} again",
        file_tree::without_verbatim_prefix(record.to_path_buf()).display(),
        tree.display()
    );
    None
}
