//! Safe extraction of artifact archives (spec §8.3, §9): the first member is
//! `artifact_manifest.txt`; every other member must lie below one of its relpaths; nothing is
//! ever written outside the destination.

use file_tree::FileError;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::Error;

/// The first member of every artifact archive: one relpath per line.
pub const MANIFEST_NAME: &str = "artifact_manifest.txt";

/// Where members land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// As stored: `artifact_manifest.txt` and the relpath subtrees.
    ///
    /// Extraction here writes only below the destination. The fetches of
    /// `rock-ci-artifact-backend` also record a verified `Full` copy, so that a later fetch
    /// can keep it: by default in `.{name}.rock-ci-fetch/` beside the output directory
    /// `{name}` (outside it, so the output holds only what the archives hold);
    /// `ArtifactBackend::record_verified_in` chooses another directory.
    Full,
    /// With each member's relpath stripped (`{relpath}/bin/x` → `bin/x`); the manifest is not
    /// written.
    Flatten,
    /// As stored, for merging the relpath trees into a build directory (`fetch --bootstrap`):
    /// extraction writes what [`Layout::Full`] writes; the caller moves the relpath trees.
    Bootstrap,
}

impl Layout {
    /// Whether members keep their stored paths (everything but [`Layout::Flatten`]).
    pub fn keeps_paths(self) -> bool {
        self != Layout::Flatten
    }
}

/// What an extraction produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    /// The manifest's relpaths.
    pub relpaths: Vec<String>,
    /// Regular files written.
    pub files: u64,
    /// Bytes of regular files written.
    pub bytes: u64,
    /// Directories, symlinks and hardlinks created.
    pub links_and_dirs: u64,
}

/// A tree that the flattened extractions of one fetch write into at once
/// ([`extract_artifact_shared`]): it tells an extraction which paths are free for it, and
/// records what each one made there, so that what an extraction made can be taken away again.
pub trait SharedTree: Sync {
    /// Makes `rel` (a file, symlink or hard link; relative to the tree) in the tree by calling
    /// `create` when the path is free for this extraction (nothing of another extraction is
    /// at it or above it). `create` fails with `AlreadyExists` when something is at the path.
    /// `Ok(false)` when the path is not free or holds something: the member then goes to the
    /// extraction's own directory, which the caller merges.
    fn create(
        &self,
        rel: &Path,
        create: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<bool>;

    /// Records a directory this extraction made in the tree.
    fn made_dir(&self, rel: &Path);
}

/// The tree a flattened extraction writes into directly, beside its own directory.
#[derive(Clone, Copy)]
struct Shared<'a> {
    root: &'a Path,
    tree: &'a dyn SharedTree,
}

/// A member that extraction refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Refusing member `{member}` of `{archive}`: {reason}")]
pub struct UnsafeMember {
    /// The archive.
    pub archive: String,
    /// The member, as stored.
    pub member: String,
    /// Why.
    pub reason: String,
}

/// What separates the components of a stored name: `/`, as in the archive. On Unix a
/// backslash is a name character (`back\slash` is one file); on Windows it separates too, and
/// members whose names hold one are refused (see [`Extractor::entry`]).
#[cfg(unix)]
const SEPARATORS: &[char] = &['/'];
#[cfg(not(unix))]
const SEPARATORS: &[char] = &['/', '\\'];

/// Splits a stored path into normal components; `None` for absolute paths, drive prefixes,
/// `..` components, NUL bytes or an empty path.
pub(crate) fn safe_components(path: &str) -> Option<Vec<&str>> {
    if path.starts_with(SEPARATORS) || path.contains('\0') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split(SEPARATORS) {
        match part {
            "" | "." => {}
            ".." => return None,
            p if p.len() >= 2 && p.as_bytes()[1] == b':' && parts.is_empty() => return None,
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then_some(parts)
}

/// The relpaths of manifest text `manifest`: each as components, and as written. An error
/// (the reason) for a path that is absolute or has `..`.
pub(crate) fn manifest_relpaths_in(
    manifest: &str,
) -> Result<(Vec<Vec<String>>, Vec<String>), String> {
    let (mut parts_of, mut lines) = (Vec::new(), Vec::new());
    for line in manifest
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.is_empty())
    {
        let parts = safe_components(line)
            .ok_or_else(|| format!("manifest path `{line}` is absolute or has `..`"))?;
        parts_of.push(parts.into_iter().map(str::to_owned).collect());
        lines.push(line.to_owned());
    }
    Ok((parts_of, lines))
}

/// Where symlink target `target` of a link in directory `parent` (components below the
/// destination) resolves, as components below the destination; an error (the reason) when
/// it is absolute or leaves the destination.
pub(crate) fn symlink_resolved<'t>(
    parent: &'t [String],
    target: &'t str,
) -> Result<Vec<&'t str>, String> {
    if target.starts_with(SEPARATORS) {
        return Err(format!("symlink to absolute path `{target}`"));
    }
    let mut depth: Vec<&str> = parent.iter().map(String::as_str).collect();
    for part in target.split(SEPARATORS) {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return Err(format!("symlink `{target}` points outside the destination"));
                }
            }
            p => depth.push(p),
        }
    }
    Ok(depth)
}

struct Extractor<'a> {
    archive: &'a str,
    /// Set when the tar stream ended (see [`Ending`]).
    ended: &'a std::cell::Cell<bool>,
    dest: &'a Path,
    layout: Layout,
    relpaths: Vec<Vec<String>>,
    /// Stored member path → where it was written (for hardlinks).
    written: HashMap<Vec<String>, PathBuf>,
    /// Directories this extraction created (`true`) or checked (`false`): real directories,
    /// never links; nothing can replace them later, so they need no second look.
    dirs: HashMap<PathBuf, bool>,
    /// Directory members' times and modes, applied once every member is written.
    dir_times: Vec<DirAttributes>,
    /// File contents pass through here (large, so few write calls).
    buffer: Vec<u8>,
    /// Handles of the directories regular files are created in (Unix).
    #[cfg(unix)]
    handles: unix::DirHandles,
    out: Extracted,
    /// Symlinks, made (or their targets copied) once every member is written.
    #[cfg(not(unix))]
    links: crate::windows_links::PendingLinks,
    /// Where members go first when set ([`extract_artifact_shared`]); `dest` takes the rest.
    shared: Option<Shared<'a>>,
}

/// A directory member's time and (where the tree stays as stored) mode.
struct DirAttributes {
    path: PathBuf,
    mtime: Option<SystemTime>,
    /// Made by this extraction (so with the mode the umask gives), not met.
    #[cfg_attr(
        not(unix),
        expect(dead_code, reason = "modes are Unix permission bits")
    )]
    created: bool,
    /// Applied on Unix only.
    #[cfg_attr(
        not(unix),
        expect(dead_code, reason = "modes are Unix permission bits")
    )]
    mode: Option<u32>,
}

/// The permission bits a member keeps: all but setuid, setgid, sticky and group/other write.
pub(crate) const KEPT_MODE_BITS: u32 = 0o755;

/// The modification time a member records: its PAX `mtime` record (decimal seconds with a
/// fraction, as GNU tar and Python's `tarfile` write it) when it has one, else the header's
/// whole seconds.
pub(crate) fn member_mtime<R: Read>(entry: &mut tar::Entry<'_, R>) -> Option<SystemTime> {
    if let Ok(Some(extensions)) = entry.pax_extensions() {
        let recorded = extensions
            .flatten()
            .filter(|e| e.key_bytes() == b"mtime")
            .find_map(|e| e.value().ok().and_then(parse_pax_time));
        if recorded.is_some() {
            return recorded;
        }
    }
    let secs = entry.header().mtime().ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// A PAX time (`1700000000.123456789`, `1700000000.5`, `-1.25`): decimal seconds since the
/// epoch; digits past the nanoseconds are dropped. `None` when it is no such number.
pub(crate) fn parse_pax_time(value: &str) -> Option<SystemTime> {
    let (negative, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let secs: u64 = whole.parse().ok()?;
    let nanos = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(9)
        .fold(0u32, |n, b| n * 10 + u32::from(b - b'0'));
    let offset = Duration::new(secs, nanos);
    if negative {
        SystemTime::UNIX_EPOCH.checked_sub(offset)
    } else {
        SystemTime::UNIX_EPOCH.checked_add(offset)
    }
}

/// Gives directory `path` the modification time `mtime`. Best effort, as with `tar` and
/// Python's `tarfile`: a file system that refuses leaves the time of extraction.
#[cfg(unix)]
fn set_dir_mtime(path: &Path, mtime: SystemTime) {
    // One call by path: no handle to open and close.
    set_mtime_at(path, mtime, rustix::fs::AtFlags::empty());
}

/// [`set_dir_mtime`] where there is no call that sets a time by path.
#[cfg(not(unix))]
fn set_dir_mtime(path: &Path, mtime: SystemTime) {
    let _ = file_tree::set_modified(path, mtime);
}

/// Gives the symlink `path` itself (not what it points to) the modification time `mtime`, as
/// `tar -x` does; the access time is left alone. Best effort.
#[cfg(unix)]
fn set_symlink_mtime(path: &Path, mtime: SystemTime) {
    set_mtime_at(path, mtime, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
}

/// `utimensat` of `path` with `flags`: the modification time `mtime`, the access time left
/// alone. Best effort.
#[cfg(unix)]
fn set_mtime_at(path: &Path, mtime: SystemTime, flags: rustix::fs::AtFlags) {
    use rustix::fs::{CWD, Timespec, Timestamps, UTIME_OMIT, utimensat};
    let since_epoch = match mtime.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => (i64::try_from(d.as_secs()).ok(), i64::from(d.subsec_nanos())),
        Err(e) => {
            let d = e.duration();
            let (secs, nanos) = (i64::try_from(d.as_secs()).ok(), i64::from(d.subsec_nanos()));
            match (secs, nanos) {
                (Some(s), 0) => (Some(-s), 0),
                (Some(s), n) => (Some(-s - 1), 1_000_000_000 - n),
                (None, _) => (None, 0),
            }
        }
    };
    let (Some(seconds), nanoseconds) = since_epoch else {
        return;
    };
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec: seconds,
            tv_nsec: nanoseconds,
        },
    };
    let _ = utimensat(CWD, path, &times, flags);
}

/// Makes a member at `at` (from [`Extractor::tree_path`]) in the shared tree with `create`
/// (given the full path) where the tree finds it free: the full path, or `None` when the
/// member goes to `dest`.
fn in_tree(
    at: Option<(Shared<'_>, PathBuf, PathBuf)>,
    mut create: impl FnMut(&Path) -> std::io::Result<()>,
) -> Result<Option<PathBuf>, Error> {
    let Some((shared, path, rel)) = at else {
        return Ok(None);
    };
    let placed = shared
        .tree
        .create(&rel, &mut || create(&path))
        .map_err(|e| FileError::write(&path, e))?;
    Ok(placed.then_some(path))
}

/// Runs `create` at `path`; when something that is not a directory is already there (an
/// earlier member of the same path, or a leftover), removes it and tries once more: a later
/// member replaces an earlier one, as with `tar`. Links are replaced, never followed.
fn replace<T>(path: &Path, create: impl Fn(&Path) -> std::io::Result<T>) -> Result<T, Error> {
    match create(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if fs_err::symlink_metadata(path).is_ok_and(|m| !m.is_dir()) {
                file_tree::remove_file(path).map_err(|e| FileError::write(path, e))?;
                create(path).map_err(|e| FileError::write(path, e).into())
            } else {
                Err(FileError::write(path, e).into())
            }
        }
        other => other.map_err(|e| FileError::write(path, e).into()),
    }
}

impl<'a> Extractor<'a> {
    /// The time and mode directory member `entry` gives `path`. The mode only where the tree
    /// stays as stored ([`Layout::Full`]): a flattened or bootstrapped tree is merged into
    /// directories the merge makes, and a mode without owner write would stop the merge.
    fn dir_attributes<R: Read>(
        &self,
        path: PathBuf,
        created: bool,
        entry: &mut tar::Entry<'_, R>,
    ) -> DirAttributes {
        let mode = (self.layout == Layout::Full)
            .then(|| entry.header().mode().ok())
            .flatten()
            .map(|m| m & KEPT_MODE_BITS);
        DirAttributes {
            path,
            mtime: member_mtime(entry),
            created,
            mode,
        }
    }

    fn refuse(&self, member: &str, reason: impl Into<String>) -> Error {
        Error::UnsafeMember(UnsafeMember {
            archive: self.archive.to_owned(),
            member: member.to_owned(),
            reason: reason.into(),
        })
    }

    /// The destination-relative components of a stored member path.
    fn map(&self, member: &str) -> Result<(Vec<String>, Vec<String>), Error> {
        let parts = safe_components(member)
            .ok_or_else(|| self.refuse(member, "absolute path or `..` component"))?;
        let parts: Vec<String> = parts.into_iter().map(str::to_owned).collect();
        let rel = self
            .relpaths
            .iter()
            .find(|r| parts.len() > r.len() && parts.starts_with(r))
            .ok_or_else(|| self.refuse(member, "not below any path of the artifact manifest"))?;
        let mapped = if self.layout.keeps_paths() {
            parts.clone()
        } else {
            parts[rel.len()..].to_vec()
        };
        Ok((parts, mapped))
    }

    /// Creates the parent directories of `mapped` and checks that none of them is a symlink, so
    /// nothing is ever written through a link. What is at the path itself is left to
    /// [`replace`].
    fn prepare(&mut self, member: &str, mapped: &[String]) -> Result<PathBuf, Error> {
        let mut path = self.dest.to_path_buf();
        for comp in &mapped[..mapped.len() - 1] {
            path.push(comp);
            #[cfg(not(unix))]
            if self.links.holds(&path) {
                return Err(self.refuse(member, "a parent directory is a symlink"));
            }
            if self.dirs.contains_key(&path) {
                continue;
            }
            // Usually new: create it; only an existing entry needs a look.
            let created = match std::fs::create_dir(&path) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    match fs_err::symlink_metadata(&path) {
                        Ok(m) if m.file_type().is_symlink() => {
                            return Err(self.refuse(member, "a parent directory is a symlink"));
                        }
                        Ok(m) if m.is_dir() => false,
                        _ => {
                            file_tree::remove_file(&path)
                                .map_err(|e| FileError::write(&path, e))?;
                            fs_err::create_dir(&path).map_err(|e| FileError::write(&path, e))?;
                            true
                        }
                    }
                }
                Err(e) => return Err(FileError::write(&path, e).into()),
            };
            self.dirs.insert(path.clone(), created);
        }
        path.push(&mapped[mapped.len() - 1]);
        Ok(path)
    }

    /// Where `mapped` goes in the shared tree, with its parent directories made there (each
    /// made one recorded): the full path and the tree-relative one. `None` without a shared
    /// tree, or where a parent there is not a real directory (or cannot be made): the member
    /// then goes to `dest`, and the merge decides.
    fn tree_path(&mut self, mapped: &[String]) -> Option<(Shared<'a>, PathBuf, PathBuf)> {
        let shared = self.shared?;
        let (mut path, mut rel) = (shared.root.to_path_buf(), PathBuf::new());
        for comp in &mapped[..mapped.len() - 1] {
            path.push(comp);
            rel.push(comp);
            self.tree_dir(shared, &path, &rel)?;
        }
        let name = &mapped[mapped.len() - 1];
        path.push(name);
        rel.push(name);
        Some((shared, path, rel))
    }

    /// Makes directory `path` (`rel` in the shared tree), recorded, unless this extraction
    /// made or met it already: whether this extraction made it. `None` where something other
    /// than a real directory is there, or it cannot be made.
    fn tree_dir(&mut self, shared: Shared<'a>, path: &Path, rel: &Path) -> Option<bool> {
        if let Some(created) = self.dirs.get(path) {
            return Some(*created);
        }
        let created = match std::fs::create_dir(path) {
            Ok(()) => {
                shared.tree.made_dir(rel);
                true
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists
                    && fs_err::symlink_metadata(path).is_ok_and(|m| m.is_dir()) =>
            {
                false
            }
            Err(_) => return None,
        };
        self.dirs.insert(path.to_path_buf(), created);
        self.placed(path, true);
        Some(created)
    }

    /// Notes that this extraction placed `path` (a directory when `dir`) in the shared tree:
    /// on Windows a symlink copied in its own directory may point at it.
    #[cfg_attr(
        unix,
        expect(clippy::unused_self, reason = "symlinks are made as they come on Unix")
    )]
    fn placed(&mut self, path: &Path, dir: bool) {
        #[cfg(not(unix))]
        if let Some(shared) = self.shared
            && let Ok(rel) = path.strip_prefix(shared.root)
        {
            self.links.placed(rel, dir);
        }
        #[cfg(unix)]
        let _ = (path, dir);
    }

    fn link_target<R: Read>(
        &self,
        member: &str,
        entry: &tar::Entry<'_, R>,
    ) -> Result<String, Error> {
        entry
            .link_name_bytes()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .ok_or_else(|| self.refuse(member, "link without a target"))
    }

    /// A symlink whose target, resolved from the link's own directory, stays inside.
    fn symlink<R: Read>(
        &mut self,
        member: &str,
        entry: &mut tar::Entry<'_, R>,
        mapped: &[String],
    ) -> Result<(), Error> {
        let target = self.link_target(member, entry)?;
        let depth = symlink_resolved(&mapped[..mapped.len() - 1], &target)
            .map_err(|reason| self.refuse(member, reason))?;
        #[cfg(unix)]
        let _ = depth;
        #[cfg(unix)]
        {
            let at = self.tree_path(mapped);
            let path = if let Some(path) = in_tree(at, |p| std::os::unix::fs::symlink(&target, p))?
            {
                path
            } else {
                let path = self.prepare(member, mapped)?;
                replace(&path, |p| std::os::unix::fs::symlink(&target, p))?;
                path
            };
            if let Some(mtime) = member_mtime(entry) {
                set_symlink_mtime(&path, mtime);
            }
        }
        #[cfg(not(unix))]
        {
            let path = self.prepare(member, mapped)?;
            let rel: PathBuf = depth.iter().collect();
            let resolved = self.dest.join(&rel);
            self.links.push(member, path, resolved, rel, target);
        }
        self.out.links_and_dirs += 1;
        Ok(())
    }

    /// A hardlink to a regular file extracted earlier from the same archive.
    fn hardlink<R: Read>(
        &mut self,
        member: &str,
        entry: &tar::Entry<'_, R>,
        stored: Vec<String>,
        mapped: &[String],
    ) -> Result<(), Error> {
        let target = self.link_target(member, entry)?;
        let target_parts: Vec<String> = safe_components(&target)
            .ok_or_else(|| {
                self.refuse(
                    member,
                    format!("hardlink to `{target}` outside the destination"),
                )
            })?
            .into_iter()
            .map(str::to_owned)
            .collect();
        let source = self.written.get(&target_parts).cloned().ok_or_else(|| {
            self.refuse(
                member,
                format!(
                    "hardlink target `{target}` is not a file extracted earlier from this archive"
                ),
            )
        })?;
        let at = self.tree_path(mapped);
        let path = if let Some(path) = in_tree(at, |p| std::fs::hard_link(&source, p))? {
            self.placed(&path, false);
            path
        } else {
            let path = self.prepare(member, mapped)?;
            replace(&path, |p| std::fs::hard_link(&source, p))?;
            path
        };
        self.written.insert(stored, path);
        self.out.links_and_dirs += 1;
        Ok(())
    }

    /// A regular file: created new (with its stored mode, relative to a handle of its
    /// directory on Unix), written, given its time.
    fn regular<R: Read>(
        &mut self,
        member: &str,
        entry: &mut tar::Entry<'_, R>,
        stored: Vec<String>,
        mapped: &[String],
    ) -> Result<(), Error> {
        let mtime = member_mtime(entry);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        // The stored mode without setuid/setgid/sticky and group/other write; set again once
        // written where the umask narrowed what `open` created.
        #[cfg(unix)]
        let mode = entry.header().mode().unwrap_or(0o644) & KEPT_MODE_BITS;
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(mode);
        }
        // In the shared tree, never over anything: through a handle of the directory, else by
        // path (which tells why it failed).
        let mut opened = None;
        let in_tree = {
            let at = self.tree_path(mapped);
            #[cfg(unix)]
            let handles = &mut self.handles;
            in_tree(at, |p| {
                #[cfg(unix)]
                let file = handles.create(p, mode);
                #[cfg(not(unix))]
                let file = None;
                opened = Some(match file {
                    Some(file) => file,
                    None => options.open(p)?,
                });
                Ok(())
            })?
        };
        let (file, path) = if let (Some(path), Some(file)) = (in_tree, opened) {
            self.placed(&path, false);
            (fs_err::File::from_parts(file, &path), path)
        } else {
            let path = self.prepare(member, mapped)?;
            #[cfg(unix)]
            let created = self.handles.create(&path, mode);
            #[cfg(not(unix))]
            let created = None;
            let file = match created {
                Some(file) => file,
                None => replace(&path, |p| options.open(p))?,
            };
            (fs_err::File::from_parts(file, &path), path)
        };
        let mut n = 0u64;
        // Where the bytes written so far end: short of `n` when the file ends in a hole.
        #[cfg(unix)]
        let mut written_end = 0u64;
        loop {
            let got = entry
                .read(&mut self.buffer)
                .map_err(|e| Error::archive_read(self.archive, Some(member), e))?;
            if got == 0 {
                break;
            }
            #[cfg(unix)]
            {
                let end = unix::write_at_leaving_holes(file.file(), &self.buffer[..got], n)
                    .map_err(|e| FileError::write(&path, e))?;
                written_end = written_end.max(end);
            }
            #[cfg(not(unix))]
            std::io::Write::write_all(&mut file.file(), &self.buffer[..got])
                .map_err(|e| FileError::write(&path, e))?;
            n += got as u64;
        }
        #[cfg(unix)]
        if written_end < n {
            file.file()
                .set_len(n)
                .map_err(|e| FileError::write(&path, e))?;
        }
        #[cfg(unix)]
        if unix::narrowed_by_umask(mode) {
            use std::os::unix::fs::PermissionsExt as _;
            file.file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| FileError::write(&path, e))?;
        }
        // One call on the open handle; best effort, as with `tar`.
        if let Some(mtime) = mtime {
            let _ = file.file().set_modified(mtime);
        }
        // Windows keeps no mode, only a read-only attribute: set from the owner's write bit, as
        // Python's `os.chmod` sets it there; last, as it forbids writing.
        #[cfg(not(unix))]
        if entry.header().mode().is_ok_and(|m| m & 0o200 == 0) {
            let mut permissions = file
                .file()
                .metadata()
                .map_err(|e| FileError::write(&path, e))?
                .permissions();
            permissions.set_readonly(true);
            file.file()
                .set_permissions(permissions)
                .map_err(|e| FileError::write(&path, e))?;
        }
        self.out.files += 1;
        self.out.bytes += n;
        self.written.insert(stored, path);
        Ok(())
    }

    /// A directory member: created unless this extraction made or met it already; its time
    /// and mode are applied at the end.
    fn directory<R: Read>(
        &mut self,
        member: &str,
        entry: &mut tar::Entry<'_, R>,
        mapped: &[String],
    ) -> Result<(), Error> {
        // In the shared tree where a real directory is or can be made there; else into `dest`,
        // for the merge to decide.
        if let Some((shared, path, rel)) = self.tree_path(mapped)
            && let Some(created) = self.tree_dir(shared, &path, &rel)
        {
            let attributes = self.dir_attributes(path, created, entry);
            self.dir_times.push(attributes);
            self.out.links_and_dirs += 1;
            return Ok(());
        }
        let path = self.prepare(member, mapped)?;
        let created = if let Some(created) = self.dirs.get(&path) {
            *created
        } else {
            // Usually new: create it; only an existing entry needs a look.
            let created = match std::fs::create_dir(&path) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if fs_err::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                        false
                    } else {
                        replace(&path, |p| std::fs::create_dir(p))?;
                        true
                    }
                }
                Err(e) => return Err(FileError::write(&path, e).into()),
            };
            self.dirs.insert(path.clone(), created);
            created
        };
        let attributes = self.dir_attributes(path, created, entry);
        self.dir_times.push(attributes);
        self.out.links_and_dirs += 1;
        Ok(())
    }

    fn entry<R: Read>(&mut self, mut entry: tar::Entry<'_, R>) -> Result<(), Error> {
        let member = String::from_utf8(entry.path_bytes().into_owned()).map_err(|e| {
            self.refuse(&String::from_utf8_lossy(e.as_bytes()), "path is not UTF-8")
        })?;
        // A backslash separates names on Windows: such a member would land as another tree.
        #[cfg(not(unix))]
        if member.contains('\\') {
            return Err(self.refuse(
                &member,
                "a backslash in a name cannot be kept on this platform",
            ));
        }
        let kind = entry.header().entry_type();
        if matches!(
            kind,
            tar::EntryType::XGlobalHeader
                | tar::EntryType::XHeader
                | tar::EntryType::GNULongName
                | tar::EntryType::GNULongLink
        ) {
            return Ok(());
        }
        // Directories leading to (or equal to) a manifest path, as `tar` writes them: harmless.
        if kind == tar::EntryType::Directory
            && let Some(parts) = safe_components(&member)
            && self
                .relpaths
                .iter()
                .any(|r| r.len() >= parts.len() && r.iter().zip(&parts).all(|(a, b)| a == b))
        {
            if self.layout.keeps_paths() {
                let path = parts.iter().fold(self.dest.to_path_buf(), |p, c| p.join(c));
                fs_err::create_dir_all(&path).map_err(|e| FileError::write(&path, e))?;
                let attributes = self.dir_attributes(path, false, &mut entry);
                self.dir_times.push(attributes);
            }
            return Ok(());
        }
        let (stored, mapped) = self.map(&member)?;
        // Names Windows cannot hold (`a:b`, `NUL`, `x.`): refused, never written as another.
        #[cfg(not(unix))]
        if let Some(reason) = stored.iter().find_map(|c| crate::windows_names::problem(c)) {
            return Err(self.refuse(&member, reason));
        }
        if mapped.is_empty() {
            return Err(self.refuse(&member, "empty path after flattening"));
        }
        match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                self.regular(&member, &mut entry, stored, &mapped)?;
            }
            tar::EntryType::Directory => self.directory(&member, &mut entry, &mapped)?,
            tar::EntryType::Symlink => self.symlink(&member, &mut entry, &mapped)?,
            tar::EntryType::Link => self.hardlink(&member, &entry, stored, &mapped)?,
            other => {
                return Err(self.refuse(&member, format!("unsupported member type {other:?}")));
            }
        }
        Ok(())
    }
}

/// Extracts the tar stream `tar_stream` of artifact archive `archive` into `dest` (an existing
/// directory, normally empty and private to this call).
///
/// Refused, with an error naming the archive and member: a first member other than
/// `artifact_manifest.txt`, a manifest path with `..` or an absolute path; members with `..`,
/// absolute paths or not below a manifest path; symlinks whose target is absolute or leaves
/// the destination; hardlinks to anything but a file extracted earlier from the same archive;
/// devices, FIFOs and other special members; writing through a symlink; on Windows, names
/// with a backslash (on Unix it is a name character, as with `tar -x`).
///
/// Regular files keep their stored mode (whatever the umask) less setuid/setgid/sticky and
/// group/other write; so do directory members with [`Layout::Full`] (other layouts are merged
/// into directories of their own). Files (the manifest included), directory members and
/// symlinks keep the archive's modification times to the nanosecond (a PAX `mtime` record,
/// else the header's seconds), as with `tar -x`; directories get theirs and their modes after
/// every member is written, deepest first.
pub fn extract_artifact<R: Read>(
    archive: &str,
    tar_stream: R,
    dest: &Path,
    layout: Layout,
) -> Result<Extracted, Error> {
    extract_into(archive, tar_stream, dest, layout, None)
}

/// [`extract_artifact`] with [`Layout::Flatten`] straight into `root`, a tree other
/// extractions write into at the same time: each file, symlink and hard link is made in
/// `root` where `tree` finds its path free ([`SharedTree::create`]), the directories leading
/// to it too; the rest (paths another extraction placed, paths that hold something already,
/// symlinks on Windows) goes to `dest` as [`extract_artifact`] writes it, for the caller to
/// merge. Nothing that is in `root` is ever replaced or removed: the caller decides about
/// what went to `dest`, and takes away what `tree` recorded when the artifact turns out bad.
pub fn extract_artifact_shared<R: Read>(
    archive: &str,
    tar_stream: R,
    dest: &Path,
    root: &Path,
    tree: &dyn SharedTree,
) -> Result<Extracted, Error> {
    extract_into(
        archive,
        tar_stream,
        dest,
        Layout::Flatten,
        Some(Shared { root, tree }),
    )
}

/// The tar stream, noting when it ends: a tar archive ends with zero blocks, and a stream that
/// ends before them was cut short (at the end of a member, where nothing else tells).
struct Ending<'a, R> {
    inner: R,
    ended: &'a std::cell::Cell<bool>,
}

impl<R: Read> Read for Ending<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.ended.set(true);
        }
        Ok(n)
    }
}

fn extract_into<R: Read>(
    archive: &str,
    tar_stream: R,
    dest: &Path,
    layout: Layout,
    shared: Option<Shared<'_>>,
) -> Result<Extracted, Error> {
    let ended = std::cell::Cell::new(false);
    let mut tar = tar::Archive::new(Ending {
        inner: tar_stream,
        ended: &ended,
    });
    let mut entries = tar
        .entries()
        .map_err(|e| Error::archive_read(archive, None, e))?;
    let mut ex = Extractor {
        archive,
        dest,
        layout,
        relpaths: Vec::new(),
        written: HashMap::new(),
        dirs: HashMap::new(),
        dir_times: Vec::new(),
        buffer: vec![0; 256 << 10],
        #[cfg(unix)]
        handles: unix::DirHandles::default(),
        out: Extracted::default(),
        #[cfg(not(unix))]
        links: crate::windows_links::PendingLinks::default(),
        shared,
        ended: &ended,
    };
    let first = entries
        .next()
        .ok_or_else(|| ex.refuse("", "empty archive: expected `artifact_manifest.txt` first"))?
        .map_err(|e| Error::archive_read(archive, None, e))?;
    let first_name = String::from_utf8_lossy(&first.path_bytes()).into_owned();
    if first_name != MANIFEST_NAME || first.header().entry_type() != tar::EntryType::Regular {
        return Err(ex.refuse(
            &first_name,
            format!("the first member must be the regular file `{MANIFEST_NAME}`"),
        ));
    }
    let mut manifest = String::new();
    let mut first = first;
    first
        .read_to_string(&mut manifest)
        .map_err(|e| Error::archive_read(archive, Some(MANIFEST_NAME), e))?;
    let (relpaths, lines) =
        manifest_relpaths_in(&manifest).map_err(|reason| ex.refuse(MANIFEST_NAME, reason))?;
    ex.relpaths = relpaths;
    ex.out.relpaths = lines;
    if layout.keeps_paths() {
        let path = dest.join(MANIFEST_NAME);
        let mut file = fs_err::File::create(&path).map_err(|e| FileError::write(&path, e))?;
        std::io::Write::write_all(&mut file, manifest.as_bytes())
            .map_err(|e| FileError::write(&path, e))?;
        if let Some(mtime) = member_mtime(&mut first) {
            let _ = file.file().set_modified(mtime);
        }
    }
    ex.rest(entries)
}

/// Extracts the tar stream `tar_stream` of a plain archive `archive` (no artifact manifest:
/// a release tarball) into `dest`, every member kept at its stored path, with the safety rules
/// and times of [`extract_artifact`].
pub fn extract_tree<R: Read>(
    archive: &str,
    tar_stream: R,
    dest: &Path,
) -> Result<Extracted, Error> {
    let ended = std::cell::Cell::new(false);
    let mut tar = tar::Archive::new(Ending {
        inner: tar_stream,
        ended: &ended,
    });
    let entries = tar
        .entries()
        .map_err(|e| Error::archive_read(archive, None, e))?;
    let ex = Extractor {
        ended: &ended,
        archive,
        dest,
        layout: Layout::Full,
        // The empty path: every member is below it.
        relpaths: vec![Vec::new()],
        written: HashMap::new(),
        dirs: HashMap::new(),
        dir_times: Vec::new(),
        buffer: vec![0; 256 << 10],
        #[cfg(unix)]
        handles: unix::DirHandles::default(),
        out: Extracted::default(),
        #[cfg(not(unix))]
        links: crate::windows_links::PendingLinks::default(),
        shared: None,
    };
    ex.rest(entries)
}

impl Extractor<'_> {
    /// Extracts the remaining members, then gives directories their times.
    fn rest<R: Read>(mut self, entries: tar::Entries<'_, R>) -> Result<Extracted, Error> {
        let archive = self.archive;
        // The next header comes after the rest of the member before it is skipped.
        let mut last: Option<String> = None;
        for entry in entries {
            let entry = entry.map_err(|e| Error::archive_read(archive, last.as_deref(), e))?;
            last = Some(String::from_utf8_lossy(&entry.path_bytes()).into_owned());
            self.entry(entry)?;
        }
        if self.ended.get() {
            return Err(Error::archive_read(
                archive,
                None,
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the tar stream ends before its end-of-archive blocks: the archive was cut short",
                ),
            ));
        }
        let mut ex = self;
        #[cfg(not(unix))]
        std::mem::take(&mut ex.links).finish(archive, ex.shared.map(|s| s.root))?;
        // Writing into a directory changes its mtime, and a mode without owner write would
        // stop the writing: directories get both last, deepest first (the time before the
        // mode, which may forbid opening the directory).
        ex.dir_times
            .sort_by_key(|d| std::cmp::Reverse(d.path.components().count()));
        for dir in &ex.dir_times {
            if let Some(mtime) = dir.mtime {
                set_dir_mtime(&dir.path, mtime);
            }
            // Not where the directory was created with that mode already.
            #[cfg(unix)]
            if let Some(mode) = dir
                .mode
                .filter(|m| !(dir.created && unix::created_with(0o777, *m)))
            {
                use std::os::unix::fs::PermissionsExt as _;
                fs_err::set_permissions(&dir.path, std::fs::Permissions::from_mode(mode))
                    .map_err(|e| FileError::write(&dir.path, e))?;
            }
        }
        Ok(ex.out)
    }
}

/// Creation of regular files relative to a handle of their directory: each file's name is
/// looked up in its directory only, not walked from the root of the path again.
#[cfg(unix)]
mod unix {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    use rustix::fd::OwnedFd;
    use rustix::fs::{Mode, OFlags};

    /// Directory handles kept at most (the oldest are closed first, all at once).
    const KEPT_HANDLES: usize = 256;

    /// Open directories by path: the parents of the files extracted so far.
    #[derive(Default)]
    pub(super) struct DirHandles {
        open: HashMap<PathBuf, OwnedFd>,
    }

    impl DirHandles {
        /// Creates the new regular file `path` (whose parents exist and are real directories:
        /// [`super::Extractor::prepare`]) with `mode`, through a handle of its directory that
        /// is opened once. `None` when that does not work (something already at `path`, a
        /// parent that cannot be opened): the caller takes the path-based way, which handles
        /// those cases.
        pub(super) fn create(&mut self, path: &Path, mode: u32) -> Option<std::fs::File> {
            let (parent, name) = (path.parent()?, path.file_name()?);
            if !self.open.contains_key(parent) {
                if self.open.len() >= KEPT_HANDLES {
                    self.open.clear();
                }
                // No symlink is followed at the last component; the ones above were checked
                // when they were made or met.
                let dir = rustix::fs::open(
                    parent,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()?;
                self.open.insert(parent.to_path_buf(), dir);
            }
            let dir = self.open.get(parent)?;
            let file = rustix::fs::openat(
                dir,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            )
            .ok()?;
            Some(std::fs::File::from(file))
        }
    }

    /// Zero runs at least this long, on block boundaries of the file, are not written: the file
    /// gets a hole there, which reads as zeros and costs no page-cache writes.
    const HOLE_MIN: usize = 64 << 10;
    /// The block size holes are aligned to.
    const BLOCK: usize = 4096;
    static ZERO_BLOCK: [u8; BLOCK] = [0; BLOCK];

    /// Writes `data` at `offset` of `file`, leaving out the runs of at least [`HOLE_MIN`] zero
    /// bytes that fill whole blocks of the file (as `cp --sparse=always` does); the end of the
    /// last byte written (`offset` when none was). The caller extends the file to its full
    /// length when its last bytes were such a run.
    pub(super) fn write_at_leaving_holes(
        file: &std::fs::File,
        data: &[u8],
        offset: u64,
    ) -> std::io::Result<u64> {
        use std::os::unix::fs::FileExt as _;
        // The offset within its block is below BLOCK, so it fits any usize.
        let within = usize::try_from(offset % BLOCK as u64).unwrap_or(0);
        let aligned_from = (BLOCK - within) % BLOCK;
        let mut pending = 0;
        let mut written_end = offset;
        let mut i = aligned_from;
        while i + BLOCK <= data.len() {
            if data[i..i + BLOCK] != ZERO_BLOCK {
                i += BLOCK;
                continue;
            }
            let run = i;
            i += BLOCK;
            while i + BLOCK <= data.len() && data[i..i + BLOCK] == ZERO_BLOCK {
                i += BLOCK;
            }
            if i - run >= HOLE_MIN {
                if run > pending {
                    file.write_all_at(&data[pending..run], offset + pending as u64)?;
                    written_end = offset + run as u64;
                }
                pending = i;
            }
        }
        if pending < data.len() {
            file.write_all_at(&data[pending..], offset + pending as u64)?;
            written_end = offset + data.len() as u64;
        }
        Ok(written_end)
    }

    /// The process's umask, read once (`None` when it cannot be told). Read, not set:
    /// setting it to learn it would race with other threads creating files.
    fn umask() -> Option<u32> {
        static UMASK: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
        *UMASK.get_or_init(|| {
            let status = fs_err::read_to_string("/proc/self/status").ok()?;
            let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
            u32::from_str_radix(line.trim(), 8).ok()
        })
    }

    /// Whether the process's umask takes any of `mode`'s bits away (also when the umask
    /// cannot be told: then the mode is always set again).
    pub(super) fn narrowed_by_umask(mode: u32) -> bool {
        umask().is_none_or(|umask| mode & umask != 0)
    }

    /// Whether what is created with `requested` permission bits (before the umask) gets
    /// exactly `mode` (`false` when the umask cannot be told).
    pub(super) fn created_with(requested: u32, mode: u32) -> bool {
        umask().is_some_and(|umask| requested & !umask == mode)
    }
}
