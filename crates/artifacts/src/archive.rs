use file_tree::FileError;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::frames::read::FramedDecoder;
use crate::frames::write::FramedEncoder;
use crate::member_index::{IndexedMember, MAX_PROLOGUE, MemberIndex, MemberKind};
use crate::{ArchiveFormat, Error};

/// The zstd level used when none is given.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;
/// The xz preset used when none is given.
pub const DEFAULT_XZ_PRESET: u32 = 6;

/// How an archive is compressed when written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// zstd at a level (1..=22).
    Zstd {
        /// The level.
        level: i32,
    },
    /// xz at a preset (0..=9).
    Xz {
        /// The preset.
        preset: u32,
    },
    /// gzip at a level (0..=9): log archives (`ninja_logs.tar.gz`), never artifacts.
    Gzip {
        /// The level.
        level: u32,
    },
    /// No compression: a plain `.tar` (the devel tarball by default).
    None,
}

impl Compression {
    /// Parses `zstd` or `xz` (the names `fileset_tool.py` accepts) at their default levels.
    pub fn parse(kind: &str) -> Result<Self, Error> {
        match kind {
            "zstd" => Ok(Compression::Zstd {
                level: DEFAULT_ZSTD_LEVEL,
            }),
            "xz" => Ok(Compression::Xz {
                preset: DEFAULT_XZ_PRESET,
            }),
            _ => Err(Error::UnknownCompression(kind.to_owned())),
        }
    }

    /// `zstd` or `xz` at `level`, or at its default when `None`: zstd levels -7 to 22, xz
    /// presets 0 to 9 (what `artifact_manager.py push --compression-level` accepts).
    pub fn at_level(kind: &str, level: Option<i32>) -> Result<Self, Error> {
        let out_of_range = |level, (unit, min, max)| Error::CompressionLevel {
            level,
            kind: kind.to_owned(),
            unit,
            min,
            max,
        };
        match (Self::parse(kind)?, level) {
            (any, None) => Ok(any),
            (Compression::Xz { .. }, Some(l)) => u32::try_from(l)
                .ok()
                .filter(|p| *p <= 9)
                .map(|preset| Compression::Xz { preset })
                .ok_or_else(|| out_of_range(l, ("presets", 0, 9))),
            (_, Some(l)) if (-7..=22).contains(&l) => Ok(Compression::Zstd { level: l }),
            (_, Some(l)) => Err(out_of_range(l, ("levels", -7, 22))),
        }
    }

    /// The artifact archive format this compression writes (`None` for gzip, which artifacts
    /// never use).
    pub fn format(self) -> Option<ArchiveFormat> {
        match self {
            Compression::Zstd { .. } => Some(ArchiveFormat::TarZst),
            Compression::Xz { .. } => Some(ArchiveFormat::TarXz),
            Compression::Gzip { .. } | Compression::None => None,
        }
    }
}

/// The cores, as the threads a zstd archive is compressed or decompressed on.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Wraps `reader` in the decompressor of `format`: the uncompressed tar stream. The
/// decompressor reads straight from `reader`'s buffer (no second buffer, no copy). A zstd
/// archive of several frames is decoded on as many threads as there are cores
/// ([`FramedDecoder`]); one of a single frame as a stream on the caller's thread.
pub fn decoder<'a, R: BufRead + Send + 'a>(
    format: ArchiveFormat,
    reader: R,
) -> io::Result<Box<dyn Read + Send + 'a>> {
    decoder_on(format, reader, cores())
}

/// [`decoder`] with the frames of a zstd archive decoded on `workers` threads (1: one after
/// the other on the caller's thread, as a single frame is: where other archives keep the
/// cores busy).
pub fn decoder_on<'a, R: BufRead + Send + 'a>(
    format: ArchiveFormat,
    reader: R,
    workers: usize,
) -> io::Result<Box<dyn Read + Send + 'a>> {
    Ok(match format {
        ArchiveFormat::TarZst => Box::new(FramedDecoder::new(reader, workers)),
        ArchiveFormat::TarXz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(reader)),
    })
}

/// Opens an artifact archive for reading, choosing the decompressor by the file name suffix.
pub fn open_archive(path: &Path) -> Result<tar::Archive<Box<dyn Read + Send>>, Error> {
    let format = ArchiveFormat::from_path(path)?;
    let file = fs_err::File::open(path).map_err(|e| FileError::read(path, e))?;
    let reader = decoder(format, BufReader::with_capacity(1 << 17, file))
        .map_err(|e| FileError::read(path, e))?;
    Ok(tar::Archive::new(reader))
}

/// The member paths of an archive, in archive order.
pub fn list_members(path: &Path) -> Result<Vec<String>, Error> {
    let mut archive = open_archive(path)?;
    let mut names = Vec::new();
    for entry in archive.entries().map_err(|e| FileError::read(path, e))? {
        let entry = entry.map_err(|e| FileError::read(path, e))?;
        let name = entry.path().map_err(|e| FileError::read(path, e))?;
        names.push(name.to_string_lossy().into_owned());
    }
    Ok(names)
}

/// The archive file, hashing and counting what is written to it.
struct Hashing {
    file: std::fs::File,
    hasher: Sha256,
    len: u64,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

enum Encoder {
    Zstd(FramedEncoder<BufWriter<Hashing>>),
    Xz(liblzma::write::XzEncoder<BufWriter<Hashing>>),
    Gzip(flate2::write::GzEncoder<BufWriter<Hashing>>),
    Plain(BufWriter<Hashing>),
}

impl Write for Encoder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::Zstd(e) => e.write(buf),
            Encoder::Xz(e) => e.write(buf),
            Encoder::Gzip(e) => e.write(buf),
            Encoder::Plain(e) => e.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::Zstd(e) => e.flush(),
            Encoder::Xz(e) => e.flush(),
            Encoder::Gzip(e) => e.flush(),
            Encoder::Plain(e) => e.flush(),
        }
    }
}

impl Encoder {
    /// Where the next byte lands in the tar stream, for a zstd archive (which gets a member
    /// index).
    fn position(&self) -> Option<u64> {
        match self {
            Encoder::Zstd(e) => Some(e.position()),
            _ => None,
        }
    }

    /// Completes the stream (a zstd one with the member index of `members`); the index
    /// frame's SHA-256 too.
    fn finish(self, index: MemberIndex) -> io::Result<(Hashing, Option<String>)> {
        let mut index_sha256 = None;
        let buffered = match self {
            Encoder::Zstd(e) => {
                let (out, sha) = e.finish_with_index(Some(index))?;
                index_sha256 = sha;
                out
            }
            Encoder::Xz(e) => e.finish()?,
            Encoder::Gzip(e) => e.finish()?,
            Encoder::Plain(e) => e,
        };
        let hashing = buffered
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        Ok((hashing, index_sha256))
    }
}

/// The permission bits of the file at `path` as stored: its mode on Unix; on Windows, which
/// has none, [`windows_mode`].
fn own_mode(path: &Path, meta: &std::fs::Metadata) -> u32 {
    #[cfg(unix)]
    return {
        let _ = path;
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777
    };
    #[cfg(not(unix))]
    return windows_mode(path, meta.is_dir(), meta.permissions().readonly());
}

/// The mode a file written on Windows is stored with, the bits Python's `os.stat` gives it
/// there without group and other write: directories and programs (`.exe`, `.bat`, `.cmd`,
/// `.com`) 0755, other files 0644, without the write bit when read-only. So Linux consumers
/// of an archive pushed from Windows find its programs executable.
#[cfg_attr(
    all(unix, not(test)),
    expect(dead_code, reason = "Unix stores the file's own mode")
)]
pub(crate) fn windows_mode(path: &Path, is_dir: bool, readonly: bool) -> u32 {
    let program = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["exe", "bat", "cmd", "com"]
            .iter()
            .any(|p| e.eq_ignore_ascii_case(p))
    });
    let mode = if is_dir || program { 0o755 } else { 0o644 };
    if readonly { mode & !0o222 } else { mode }
}

/// A modification time as a tar header's whole seconds (0 before the epoch) and, when it has a
/// fraction or lies before the epoch, the PAX `mtime` record that keeps it exactly: decimal
/// seconds, the nanoseconds without trailing zeros (`1700000000.123456789`, `1700000000.5`,
/// `-1.25`).
pub(crate) fn tar_time(time: std::time::SystemTime) -> (u64, Option<String>) {
    let record = |sign: &str, d: std::time::Duration| {
        let mut text = format!("{sign}{}", d.as_secs());
        if d.subsec_nanos() != 0 {
            let nanos = format!("{:09}", d.subsec_nanos());
            text.push('.');
            text.push_str(nanos.trim_end_matches('0'));
        }
        text
    };
    match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (d.as_secs(), (d.subsec_nanos() != 0).then(|| record("", d))),
        Err(e) => (0, Some(record("-", e.duration()))),
    }
}

/// A finished archive: where, its SHA-256 and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The archive's path.
    pub path: PathBuf,
    /// Lowercase hex SHA-256 of the archive's bytes.
    pub sha256: String,
    /// The archive's size in bytes.
    pub size: u64,
    /// The SHA-256 of the member index frame of a zstd archive
    /// ([`crate::member_index`]), to be recorded with it.
    pub member_index_sha256: Option<String>,
}

/// Writes a compressed tar archive under a temporary name beside `dest` and renames it into
/// place only when [`ArchiveWriter::finish`] succeeds: a failed or abandoned write never leaves
/// a partial archive at `dest`. The bytes are hashed as they are written.
pub struct ArchiveWriter {
    builder: tar::Builder<Encoder>,
    temp: tempfile::NamedTempFile,
    dest: PathBuf,
    /// The members so far (and the first one's bytes), for the member index of a zstd
    /// archive.
    index: MemberIndex,
}

impl ArchiveWriter {
    /// Starts an archive to be written to `dest`, zstd compressing on as many threads as there
    /// are cores.
    pub fn create(dest: &Path, compression: Compression) -> Result<Self, Error> {
        Self::create_with_workers(dest, compression, u32::try_from(cores()).unwrap_or(1))
    }

    /// Starts an archive to be written to `dest`, zstd compressing on `workers` threads of its
    /// own beside the caller's (0: on the caller's thread only; other compressions ignore it).
    /// A zstd archive is written as independent frames of [`crate::FRAME_SIZE`] uncompressed
    /// bytes, each with its content size and checksum, then a seek table (the zstd seekable
    /// format): every zstd reader reads it as before, and [`decoder`] on several threads.
    pub fn create_with_workers(
        dest: &Path,
        compression: Compression,
        workers: u32,
    ) -> Result<Self, Error> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let file_name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp =
            file_tree::temp_file_in(dir, &file_name).map_err(|e| FileError::write(dest, e))?;
        let file = temp
            .as_file()
            .try_clone()
            .map_err(|e| FileError::write(dest, e))?;
        let out = BufWriter::with_capacity(
            1 << 20,
            Hashing {
                file,
                hasher: Sha256::new(),
                len: 0,
            },
        );
        let encoder = match compression {
            // With each frame's content checksum (as the `zstd` program writes it): a damaged
            // archive fails to decode even where no `.sha256sum` vouches for it.
            Compression::Zstd { level } => Encoder::Zstd(
                FramedEncoder::new(out, level, workers as usize)
                    .map_err(|e| FileError::write(dest, e))?,
            ),
            Compression::Xz { preset } => Encoder::Xz(liblzma::write::XzEncoder::new(out, preset)),
            // No name and mtime 0 in the gzip header: the same input gives the same bytes.
            Compression::Gzip { level } => Encoder::Gzip(
                flate2::GzBuilder::new()
                    .mtime(0)
                    .write(out, flate2::Compression::new(level)),
            ),
            Compression::None => Encoder::Plain(out),
        };
        let mut builder = tar::Builder::new(encoder);
        builder.follow_symlinks(false);
        Ok(Self {
            builder,
            temp,
            dest: dest.to_path_buf(),
            index: MemberIndex::default(),
        })
    }

    /// Where the next member's headers start in the tar stream (zstd archives only).
    fn start(&self) -> Option<u64> {
        self.builder.get_ref().position()
    }

    /// Records the member just appended from `start` on, for the member index.
    fn record(
        &mut self,
        start: Option<u64>,
        path: &str,
        kind: MemberKind,
        mode: u32,
        size: u64,
        link: Option<&Path>,
    ) {
        let (Some(start), Some(end)) = (start, self.start()) else {
            return;
        };
        if self.index.members.is_empty() && end - start <= MAX_PROLOGUE {
            self.index.prologue = match self.builder.get_ref() {
                Encoder::Zstd(e) => e.peek(start, end),
                _ => None,
            };
        }
        let mut member = IndexedMember::new(path.trim_end_matches('/'), kind, start, end);
        member.mode = mode & 0o7777;
        member.size = size;
        member.link = link.map(|l| l.to_string_lossy().replace('\\', "/"));
        self.index.members.push(member);
    }

    /// Adds a regular file with `data` and `mode` at `arcname`.
    pub fn append_data(&mut self, arcname: &str, data: &[u8], mode: u32) -> Result<(), Error> {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_entry_type(tar::EntryType::Regular);
        let start = self.start();
        self.builder
            .append_data(&mut header, arcname, data)
            .map_err(|e| FileError::write(&self.dest, e))?;
        self.record(
            start,
            arcname,
            MemberKind::File,
            mode,
            data.len() as u64,
            None,
        );
        Ok(())
    }

    /// Adds the regular file, directory or symlink at `path` (not following symlinks) as
    /// `arcname` with normalized metadata: owner 0:0 without names, mtime `mtime`, mode 0644
    /// (0755 for directories and when any execute bit is set). The same files give the same
    /// archive bytes.
    pub fn append_normalized(
        &mut self,
        arcname: &str,
        path: &Path,
        mtime: u64,
    ) -> Result<(), Error> {
        self.append_entry(arcname, path, Some(mtime))
    }

    /// Adds the regular file, directory or symlink at `path` (not following symlinks) as
    /// `arcname` with its own permission bits and mtime (a fraction of a second in a PAX `mtime`
    /// record before it); owner 0:0 without names.
    pub fn append_file_as(&mut self, arcname: &str, path: &Path) -> Result<(), Error> {
        self.append_entry(arcname, path, None)
    }

    /// Adds a hard link `arcname` to the member `target` added before, with the mode and mtime
    /// of `path` (the file both name), as Python's `tarfile` stores links: a reader that sets
    /// the times of links gives the file its own.
    pub fn append_hard_link(
        &mut self,
        arcname: &str,
        target: &str,
        path: &Path,
    ) -> Result<(), Error> {
        let meta = fs_err::symlink_metadata(path).map_err(|e| FileError::read(path, e))?;
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Link);
        header.set_size(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mode(own_mode(path, &meta));
        let (seconds, pax_mtime) = meta.modified().map_or((0, None), tar_time);
        header.set_mtime(seconds);
        let start = self.start();
        self.append_pax_mtime(pax_mtime)?;
        self.builder
            .append_link(&mut header, arcname, target)
            .map_err(|e| FileError::write(&self.dest, e))?;
        let mode = own_mode(path, &meta);
        self.record(
            start,
            arcname,
            MemberKind::HardLink,
            mode,
            0,
            Some(Path::new(target)),
        );
        Ok(())
    }

    /// The PAX record of an exact mtime, when there is one, before the member it describes (as
    /// Python's `tarfile` and GNU tar write it).
    fn append_pax_mtime(&mut self, record: Option<String>) -> Result<(), Error> {
        if let Some(record) = record {
            self.builder
                .append_pax_extensions([("mtime", record.as_bytes())])
                .map_err(|e| FileError::write(&self.dest, e))?;
        }
        Ok(())
    }

    /// `mtime` `Some`: normalized mode and that mtime; `None`: the file's own.
    fn append_entry(
        &mut self,
        arcname: &str,
        path: &Path,
        mtime: Option<u64>,
    ) -> Result<(), Error> {
        let meta = fs_err::symlink_metadata(path).map_err(|e| FileError::read(path, e))?;
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        let own_mode = own_mode(path, &meta);
        let (seconds, pax_mtime) = match mtime {
            Some(seconds) => (seconds, None),
            None => meta.modified().map_or((0, None), tar_time),
        };
        header.set_mtime(seconds);
        let start = self.start();
        // The exact time, when the header's whole seconds cannot hold it.
        self.append_pax_mtime(pax_mtime)?;
        let keep_mode = mtime.is_none();
        if meta.file_type().is_symlink() {
            let target = fs_err::read_link(path).map_err(|e| FileError::read(path, e))?;
            self.append_link_header(header, arcname, &target, start)
        } else if meta.is_dir() {
            header.set_entry_type(tar::EntryType::Directory);
            let mode = if keep_mode { own_mode } else { 0o755 };
            header.set_mode(mode);
            header.set_size(0);
            self.builder
                .append_data(&mut header, arcname, std::io::empty())
                .map_err(|e| FileError::write(&self.dest, e))?;
            self.record(start, arcname, MemberKind::Dir, mode, 0, None);
            Ok(())
        } else {
            let executable = own_mode & 0o111 != 0;
            header.set_entry_type(tar::EntryType::Regular);
            let mode = match (keep_mode, executable) {
                (true, _) => own_mode,
                (false, true) => 0o755,
                (false, false) => 0o644,
            };
            header.set_mode(mode);
            header.set_size(meta.len());
            let file = fs_err::File::open(path).map_err(|e| FileError::read(path, e))?;
            self.builder
                .append_data(&mut header, arcname, std::io::BufReader::new(file))
                .map_err(|e| FileError::read(path, e))?;
            self.record(start, arcname, MemberKind::File, mode, meta.len(), None);
            Ok(())
        }
    }

    /// Adds a symlink `arcname` with link text `target` and `mtime`, owner 0:0, as
    /// [`Self::append_normalized`] stores a symlink: for a link known only by its text (where
    /// the system made none).
    pub fn append_symlink(&mut self, arcname: &str, target: &str, mtime: u64) -> Result<(), Error> {
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(mtime);
        let start = self.start();
        self.append_link_header(header, arcname, Path::new(target), start)
    }

    /// Adds the symlink member `arcname` to `target` with `header`'s owner and time; its
    /// headers started at `start`.
    fn append_link_header(
        &mut self,
        mut header: tar::Header,
        arcname: &str,
        target: &Path,
        start: Option<u64>,
    ) -> Result<(), Error> {
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_mode(0o777);
        header.set_size(0);
        self.builder
            .append_link(&mut header, arcname, target)
            .map_err(|e| FileError::write(&self.dest, e))?;
        self.record(start, arcname, MemberKind::Symlink, 0o777, 0, Some(target));
        Ok(())
    }

    /// Adds the file, directory or symlink at `path` (not following symlinks) as `arcname`.
    pub fn append_path(&mut self, arcname: &str, path: &Path) -> Result<(), Error> {
        let meta = fs_err::symlink_metadata(path).map_err(|e| FileError::read(path, e))?;
        let start = self.start();
        self.builder
            .append_path_with_name(path, arcname)
            .map_err(|e| FileError::read(path, e))?;
        let file_type = meta.file_type();
        let (kind, size, link) = if file_type.is_symlink() {
            let target = fs_err::read_link(path).map_err(|e| FileError::read(path, e))?;
            (MemberKind::Symlink, 0, Some(target))
        } else if file_type.is_dir() {
            (MemberKind::Dir, 0, None)
        } else if file_type.is_file() {
            (MemberKind::File, meta.len(), None)
        } else {
            (MemberKind::Other, 0, None)
        };
        let mode = own_mode(path, &meta);
        self.record(start, arcname, kind, mode, size, link.as_deref());
        Ok(())
    }

    /// Completes the archive and renames it to its destination (not synced to the disk).
    pub fn finish(self) -> Result<PathBuf, Error> {
        Ok(self.finish_written()?.path)
    }

    /// As [`ArchiveWriter::finish`], with the archive's SHA-256 and size.
    pub fn finish_written(self) -> Result<Written, Error> {
        let Self {
            builder,
            temp,
            dest,
            index,
        } = self;
        let encoder = builder
            .into_inner()
            .map_err(|e| FileError::write(&dest, e))?;
        let (hashing, member_index_sha256) = encoder
            .finish(index)
            .map_err(|e| FileError::write(&dest, e))?;
        // Closed, not synced: an archive can be written again from its tree, and the rename
        // alone makes the whole archive appear at once; a sync here would make every archive
        // wait for the disk.
        temp.persist(&dest)
            .map_err(|e| FileError::write(&dest, e.error))?;
        Ok(Written {
            path: dest,
            sha256: hex::encode(hashing.hasher.finalize()),
            size: hashing.len,
            member_index_sha256,
        })
    }
}
