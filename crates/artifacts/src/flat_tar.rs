//! Flattened artifacts as one tar stream: what `tar c .` of a `fetch --flatten` tree holds,
//! written straight from the artifact archives, with no tree on disk.
//!
//! The members are mapped as [`Layout::Flatten`](crate::Layout::Flatten) extraction maps them
//! (each manifest relpath stripped) under the same safety rules. Where two artifacts hold the
//! same path, identical content is written once and different content is an error naming
//! both, as a flattened fetch does.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use file_tree::FileError;
use sha2::{Digest, Sha256};

use crate::extract::{
    KEPT_MODE_BITS, MANIFEST_NAME, UnsafeMember, manifest_relpaths_in, member_mtime,
    safe_components, symlink_resolved,
};
use crate::{Error, Extracted};

/// The mode of the directories of a flattened tree (made with the usual umask, 022).
const DIR_MODE: u32 = 0o755;
/// GNU tar pads its output to whole records of 20 blocks.
const RECORD: u64 = 20 * 512;
/// A captured member larger than this is not kept (it is a small JSON file).
const CAPTURE_LIMIT: u64 = 16 << 20;

/// A link member of an archive, mapped.
struct Link<'a> {
    archive: &'a str,
    mapped: String,
    target: String,
    mtime: u64,
}

/// What a path of the flattened tree holds, and which artifact put it there.
#[derive(Debug)]
enum Placed {
    Dir,
    File { digest: [u8; 32], by: String },
    Symlink { target: String, by: String },
}

impl Placed {
    fn by(&self) -> Option<&str> {
        match self {
            Placed::Dir => None,
            Placed::File { by, .. } | Placed::Symlink { by, .. } => Some(by),
        }
    }
}

/// One tar stream of flattened artifacts, in GNU tar's format (`./`-prefixed names, GNU long
/// names, owner root, records of 10 KiB), as `tar cf - .` in a `--flatten` output directory
/// writes it. Directories come first where first needed; files, symlinks and hard links keep
/// the archives' modes (less setuid/setgid/sticky and group/other write) and modification
/// times (whole seconds); directories are `0755`, with the time of their directory member
/// where an archive has one, else the writer's time.
///
/// ```
/// let mut tarball = rock_ci_artifacts::FlatTarWriter::new(Vec::new(), "out.tar".as_ref());
/// // tarball.add_archive("core_lib_generic.tar.zst", decoded_tar_stream)?; for each archive
/// let bytes = tarball.finish()?;
/// assert_eq!(bytes.len(), 10240); // `./`, the end blocks, padding to a whole record
/// # Ok::<(), rock_ci_artifacts::Error>(())
/// ```
pub struct FlatTarWriter<W: Write> {
    out: W,
    dest: PathBuf,
    written: u64,
    placed: HashMap<String, Placed>,
    now: u64,
    capture: Option<String>,
    captured: Option<Vec<u8>>,
    totals: Extracted,
    buffer: Vec<u8>,
}

impl<W: Write> std::fmt::Debug for FlatTarWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatTarWriter")
            .field("dest", &self.dest)
            .field("written", &self.written)
            .field("paths", &self.placed.len())
            .finish_non_exhaustive()
    }
}

/// A `FlatTarWriter` failure writing its output `dest`.
fn write_error(dest: &Path, e: io::Error) -> Error {
    FileError::write(dest, e).into()
}

impl<W: Write> FlatTarWriter<W> {
    /// A tar stream into `out`, named `dest` in errors; the root directory entry `./` is
    /// written when the first archive is added (or at [`FlatTarWriter::finish`]).
    pub fn new(out: W, dest: &Path) -> Self {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        FlatTarWriter {
            out,
            dest: dest.to_path_buf(),
            written: 0,
            placed: HashMap::new(),
            now,
            capture: None,
            captured: None,
            totals: Extracted::default(),
            buffer: vec![0; 256 << 10],
        }
    }

    /// Keeps the content of the file that lands at `path` (relative, `/`-separated: say
    /// `share/therock/therock_manifest.json`) for [`FlatTarWriter::captured`].
    #[must_use]
    pub fn capturing(mut self, path: &str) -> Self {
        self.capture = Some(path.to_owned());
        self
    }

    /// The content of the captured file, once an archive held it.
    pub fn captured(&self) -> Option<&[u8]> {
        self.captured.as_deref()
    }

    /// What was written so far: files and their bytes, directories and links.
    pub fn totals(&self) -> &Extracted {
        &self.totals
    }

    /// Adds the members of artifact archive `archive` (its name, for messages), read from its
    /// uncompressed tar stream, flattened.
    ///
    /// # Errors
    /// [`Error::UnsafeMember`] for what flattened extraction refuses (naming the archive and
    /// member), [`Error::FlattenConflict`] for a path another artifact holds with other
    /// content, [`Error::ArchiveRead`] when the stream cannot be read, [`Error::File`] when
    /// the output cannot be written.
    pub fn add_archive<R: Read>(&mut self, archive: &str, tar_stream: R) -> Result<(), Error> {
        if self.written == 0 {
            self.write_dir("", self.now)?;
        }
        let refuse = |member: &str, reason: String| refuse(archive, member, reason);
        let mut tar = tar::Archive::new(tar_stream);
        let mut entries = tar
            .entries()
            .map_err(|e| Error::archive_read(archive, None, e))?;
        let mut first = entries
            .next()
            .ok_or_else(|| {
                refuse(
                    "",
                    format!("empty archive: expected `{MANIFEST_NAME}` first"),
                )
            })?
            .map_err(|e| Error::archive_read(archive, None, e))?;
        let first_name = String::from_utf8_lossy(&first.path_bytes()).into_owned();
        if first_name != MANIFEST_NAME || first.header().entry_type() != tar::EntryType::Regular {
            return Err(refuse(
                &first_name,
                format!("the first member must be the regular file `{MANIFEST_NAME}`"),
            ));
        }
        let mut manifest = String::new();
        first
            .read_to_string(&mut manifest)
            .map_err(|e| Error::archive_read(archive, Some(MANIFEST_NAME), e))?;
        let (relpaths, _) =
            manifest_relpaths_in(&manifest).map_err(|r| refuse(MANIFEST_NAME, r))?;
        // Stored path → where this archive wrote it, with its digest (for hard links).
        let mut files: HashMap<Vec<String>, (String, [u8; 32])> = HashMap::new();
        // The next header comes after the rest of this member is skipped.
        let mut last = MANIFEST_NAME.to_owned();
        for entry in entries {
            let entry = entry.map_err(|e| Error::archive_read(archive, Some(&last), e))?;
            last = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            self.add_member(archive, &relpaths, &mut files, entry)?;
        }
        Ok(())
    }

    /// Adds one member of `archive` (manifest `relpaths`; `files`: what it wrote so far).
    fn add_member<R: Read>(
        &mut self,
        archive: &str,
        relpaths: &[Vec<String>],
        files: &mut HashMap<Vec<String>, (String, [u8; 32])>,
        mut entry: tar::Entry<'_, R>,
    ) -> Result<(), Error> {
        let refuse = |member: &str, reason: String| refuse(archive, member, reason);
        let member = member_name(archive, &entry.path_bytes())?;
        let read_error = |source| Error::archive_read(archive, Some(&member), source);
        let kind = entry.header().entry_type();
        let parts: Vec<String> = safe_components(&member)
            .ok_or_else(|| refuse(&member, "absolute path or `..` component".into()))?
            .into_iter()
            .map(str::to_owned)
            .collect();
        // Directories leading to (or equal to) a manifest path, as `tar` writes them.
        if kind == tar::EntryType::Directory
            && relpaths
                .iter()
                .any(|r| r.len() >= parts.len() && r.starts_with(&parts))
        {
            return Ok(());
        }
        let Some(rel) = relpaths
            .iter()
            .find(|r| parts.len() > r.len() && parts.starts_with(r))
        else {
            return Err(refuse(
                &member,
                "not below any path of the artifact manifest".into(),
            ));
        };
        let mapped = parts[rel.len()..].join("/");
        let mtime = member_mtime(&mut entry)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        self.parents(&mapped, archive)?;
        match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let mode = entry.header().mode().unwrap_or(0o644) & KEPT_MODE_BITS;
                let size = entry.header().size().map_err(read_error)?;
                let digest = self.file(archive, &member, &mapped, &mut entry, size, mode, mtime)?;
                files.insert(parts, (mapped, digest));
            }
            tar::EntryType::Directory => match self.placed.get(&mapped) {
                Some(Placed::Dir) => {}
                Some(other) => return Err(conflict(&mapped, other, archive)),
                None => {
                    self.write_dir(&mapped, mtime)?;
                    self.placed.insert(mapped, Placed::Dir);
                }
            },
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let target = entry
                    .link_name_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .ok_or_else(|| refuse(&member, "link without a target".into()))?;
                let mode = entry.header().mode().unwrap_or(0o644) & KEPT_MODE_BITS;
                let link = Link {
                    archive,
                    mapped,
                    target,
                    mtime,
                };
                if kind == tar::EntryType::Symlink {
                    let parent = &parts[rel.len()..parts.len() - 1];
                    symlink_resolved(parent, &link.target).map_err(|r| refuse(&member, r))?;
                    self.symlink(link)?;
                } else {
                    let source = safe_components(&link.target)
                        .map(|c| c.into_iter().map(str::to_owned).collect::<Vec<_>>())
                        .and_then(|c| files.get(&c).cloned())
                        .ok_or_else(|| {
                            refuse(
                                &member,
                                format!(
                                    "hardlink target `{}` is not a file extracted earlier from this archive",
                                    link.target
                                ),
                            )
                        })?;
                    if let Some(written) = self.hardlink(link, mode, &source)? {
                        files.insert(parts, written);
                    }
                }
            }
            other => {
                return Err(refuse(
                    &member,
                    format!("unsupported member type {other:?}"),
                ));
            }
        }
        Ok(())
    }
}

/// Member `member` of `archive`, refused for `reason`.
fn refuse(archive: &str, member: &str, reason: String) -> Error {
    Error::UnsafeMember(UnsafeMember {
        archive: archive.to_owned(),
        member: member.to_owned(),
        reason,
    })
}

/// A member's stored name: UTF-8 and, on Windows, without a backslash.
fn member_name(archive: &str, bytes: &[u8]) -> Result<String, Error> {
    let refuse = |member: &str, reason: &str| refuse(archive, member, reason.to_owned());
    let member = String::from_utf8(bytes.to_vec())
        .map_err(|e| refuse(&String::from_utf8_lossy(e.as_bytes()), "path is not UTF-8"))?;
    #[cfg(not(unix))]
    if member.contains('\\') {
        return Err(refuse(
            &member,
            "a backslash in a name cannot be kept on this platform",
        ));
    }
    Ok(member)
}

/// The error for `path`, which `placed` holds, met again in `archive` with other content.
fn conflict(path: &str, placed: &Placed, archive: &str) -> Error {
    Error::FlattenConflict {
        path: path.to_owned(),
        first: placed
            .by()
            .unwrap_or("a directory of an earlier artifact")
            .to_owned(),
        second: archive.to_owned(),
    }
}

impl<W: Write> FlatTarWriter<W> {
    /// A symlink member: written unless the same link is there.
    fn symlink(&mut self, link: Link<'_>) -> Result<(), Error> {
        match self.placed.get(&link.mapped) {
            Some(Placed::Symlink { target, .. }) if *target == link.target => return Ok(()),
            Some(other) if other.by() != Some(link.archive) => {
                return Err(conflict(&link.mapped, other, link.archive));
            }
            _ => {}
        }
        self.write_header(
            &link.mapped,
            tar::EntryType::Symlink,
            0o777,
            link.mtime,
            0,
            Some(&link.target),
        )?;
        self.totals.links_and_dirs += 1;
        self.placed.insert(
            link.mapped,
            Placed::Symlink {
                target: link.target,
                by: link.archive.to_owned(),
            },
        );
        Ok(())
    }

    /// A hard link member to `source` (where this archive wrote its target, and the digest):
    /// written unless the same content is there; where it was written, and its digest.
    fn hardlink(
        &mut self,
        link: Link<'_>,
        mode: u32,
        source: &(String, [u8; 32]),
    ) -> Result<Option<(String, [u8; 32])>, Error> {
        match self.placed.get(&link.mapped) {
            Some(Placed::File { digest, .. }) if *digest == source.1 => return Ok(None),
            Some(other) if other.by() != Some(link.archive) => {
                return Err(conflict(&link.mapped, other, link.archive));
            }
            _ => {}
        }
        self.write_header(
            &link.mapped,
            tar::EntryType::Link,
            mode,
            link.mtime,
            0,
            Some(&format!("./{}", source.0)),
        )?;
        self.totals.links_and_dirs += 1;
        self.placed.insert(
            link.mapped.clone(),
            Placed::File {
                digest: source.1,
                by: link.archive.to_owned(),
            },
        );
        Ok(Some((link.mapped, source.1)))
    }

    /// Writes the directories leading to `mapped` that are not written yet.
    fn parents(&mut self, mapped: &str, archive: &str) -> Result<(), Error> {
        let mut end = 0;
        while let Some(slash) = mapped[end..].find('/') {
            end += slash;
            let dir = &mapped[..end];
            match self.placed.get(dir) {
                Some(Placed::Dir) => {}
                Some(other) => return Err(conflict(dir, other, archive)),
                None => {
                    self.write_dir(dir, self.now)?;
                    self.placed.insert(dir.to_owned(), Placed::Dir);
                }
            }
            end += 1;
        }
        Ok(())
    }

    /// A regular file member: written (or, where an artifact wrote the same path, compared);
    /// its digest.
    #[expect(clippy::too_many_arguments, reason = "one member's parts")]
    fn file<R: Read>(
        &mut self,
        archive: &str,
        member: &str,
        mapped: &str,
        entry: &mut R,
        size: u64,
        mode: u32,
        mtime: u64,
    ) -> Result<[u8; 32], Error> {
        let read_error = |source| Error::archive_read(archive, Some(member), source);
        let earlier = match self.placed.get(mapped) {
            Some(Placed::File { digest, by }) if by != archive => Some(*digest),
            Some(Placed::File { .. }) | None => None,
            Some(other) => return Err(conflict(mapped, other, archive)),
        };
        let capture = self.capture.as_deref() == Some(mapped) && size <= CAPTURE_LIMIT;
        let mut kept = Vec::new();
        let mut hasher = Sha256::new();
        if earlier.is_none() {
            self.write_header(mapped, tar::EntryType::Regular, mode, mtime, size, None)?;
        }
        let mut left = size;
        while left > 0 {
            let want =
                usize::try_from(left.min(self.buffer.len() as u64)).unwrap_or(self.buffer.len());
            let n = entry.read(&mut self.buffer[..want]).map_err(read_error)?;
            if n == 0 {
                return Err(read_error(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the archive ends inside member `{member}`"),
                )));
            }
            hasher.update(&self.buffer[..n]);
            if capture {
                kept.extend_from_slice(&self.buffer[..n]);
            }
            if earlier.is_none() {
                self.out
                    .write_all(&self.buffer[..n])
                    .map_err(|e| write_error(&self.dest, e))?;
            }
            left -= n as u64;
        }
        let digest: [u8; 32] = hasher.finalize().into();
        if let Some(first) = earlier {
            if first != digest {
                let placed = self.placed.get(mapped).expect("compared with it");
                return Err(conflict(mapped, placed, archive));
            }
            return Ok(digest);
        }
        self.written += size;
        self.pad()?;
        self.totals.files += 1;
        self.totals.bytes += size;
        if capture {
            self.captured = Some(kept);
        }
        self.placed.insert(
            mapped.to_owned(),
            Placed::File {
                digest,
                by: archive.to_owned(),
            },
        );
        Ok(digest)
    }

    fn write_dir(&mut self, mapped: &str, mtime: u64) -> Result<(), Error> {
        self.totals.links_and_dirs += u64::from(!mapped.is_empty());
        self.write_header(mapped, tar::EntryType::Directory, DIR_MODE, mtime, 0, None)
    }

    /// Writes the header of `mapped` (with GNU long-name records before it where its name or
    /// link target do not fit).
    fn write_header(
        &mut self,
        mapped: &str,
        kind: tar::EntryType,
        mode: u32,
        mtime: u64,
        size: u64,
        link: Option<&str>,
    ) -> Result<(), Error> {
        let mut name = format!("./{mapped}");
        if kind == tar::EntryType::Directory && !mapped.is_empty() {
            name.push('/');
        }
        if let Some(link) = link.filter(|l| l.len() > 100) {
            self.long_record(tar::EntryType::GNULongLink, link)?;
        }
        if name.len() > 100 {
            self.long_record(tar::EntryType::GNULongName, &name)?;
        }
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(mtime);
        header.set_size(size);
        set_owner_names(&mut header);
        let old = header.as_old_mut();
        copy_truncated(&mut old.name, name.as_bytes());
        if let Some(link) = link {
            copy_truncated(&mut old.linkname, link.as_bytes());
        }
        header.set_cksum();
        self.raw(header.as_bytes())
    }

    /// A GNU `././@LongLink` record holding `value` (NUL-terminated).
    fn long_record(&mut self, kind: tar::EntryType, value: &str) -> Result<(), Error> {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_size(value.len() as u64 + 1);
        set_owner_names(&mut header);
        copy_truncated(&mut header.as_old_mut().name, b"././@LongLink");
        header.set_cksum();
        self.raw(header.as_bytes())?;
        let mut data = value.as_bytes().to_vec();
        data.push(0);
        self.raw(&data)?;
        self.pad()
    }

    fn raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.out
            .write_all(bytes)
            .map_err(|e| write_error(&self.dest, e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Zeros up to the next 512-byte block.
    fn pad(&mut self) -> Result<(), Error> {
        let rest = (512 - self.written % 512) % 512;
        self.raw(&[0; 512][..usize::try_from(rest).unwrap_or(0)])
    }

    /// Ends the stream (two zero blocks, padded to a whole record) and returns the output.
    pub fn finish(mut self) -> Result<W, Error> {
        if self.written == 0 {
            self.write_dir("", self.now)?;
        }
        self.raw(&[0; 1024])?;
        let rest = (RECORD - self.written % RECORD) % RECORD;
        let zeros = vec![0; usize::try_from(rest).unwrap_or(0)];
        self.raw(&zeros)?;
        self.out.flush().map_err(|e| write_error(&self.dest, e))?;
        Ok(self.out)
    }
}

fn set_owner_names(header: &mut tar::Header) {
    if let Some(gnu) = header.as_gnu_mut() {
        copy_truncated(&mut gnu.uname, b"root");
        copy_truncated(&mut gnu.gname, b"root");
    }
}

/// Copies `value` into the field `field`, as much as fits (a full field has no NUL, as in tar).
fn copy_truncated(field: &mut [u8], value: &[u8]) {
    let n = value.len().min(field.len());
    field[..n].copy_from_slice(&value[..n]);
    field[n..].fill(0);
}
