//! The member index of a multi-frame `.tar.zst`: every tar member (path, type, mode, size, link
//! target, where its headers start and its data ends in the tar stream) and every frame (its
//! compressed and decompressed size and the SHA-256 of its compressed bytes), so that a reader
//! holding only the archive's tail can tell which frames hold a member, fetch just those and
//! check each before decoding it.
//!
//! It is stored in a skippable frame of its own (magic [`INDEX_MAGIC`]) between the last data
//! frame and the seek table, which stays the archive's last frame: zstd readers skip it, and
//! readers of the seekable format find their table where they look for it. The frame's payload
//! is the zstd-compressed index text followed by an 8-byte footer (the frame's whole size and
//! [`INDEX_FOOTER_MAGIC`]), so that it can be found from the end. Its SHA-256 (of the whole
//! skippable frame) is what uploads record beside the archive's own
//! ([`INDEX_SHA256_METADATA_KEY`]): a partial reader trusts the index through it and each frame
//! through the index.

use std::io;

use sha2::{Digest as _, Sha256};

use crate::frames::{SEEK_TABLE_FOOTER, SEEK_TABLE_MAGIC, SEEKABLE_MAGIC};

/// The skippable-frame magic of the member index (the seek table's is 0x184D2A5E).
pub const INDEX_MAGIC: u32 = 0x184D_2A5B;
/// The last four bytes of the member index frame.
pub const INDEX_FOOTER_MAGIC: u32 = 0x4D43_5252;
/// The object metadata key under which uploads record the member index frame's SHA-256 (hex).
pub const INDEX_SHA256_METADATA_KEY: &str = "member-index-sha256";
/// The first line of the index text.
const HEADER: &str = "rock-ci member index 1";
/// The compression level of the index text.
const LEVEL: i32 = 19;

/// What a member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemberKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A hard link to a member before it.
    HardLink,
    /// Anything else tar can hold.
    Other,
}

impl MemberKind {
    fn code(self) -> char {
        match self {
            MemberKind::File => 'f',
            MemberKind::Dir => 'd',
            MemberKind::Symlink => 'l',
            MemberKind::HardLink => 'h',
            MemberKind::Other => 'o',
        }
    }

    fn from_code(code: &str) -> Option<Self> {
        Some(match code {
            "f" => MemberKind::File,
            "d" => MemberKind::Dir,
            "l" => MemberKind::Symlink,
            "h" => MemberKind::HardLink,
            "o" => MemberKind::Other,
            _ => return None,
        })
    }

    /// The kind of a tar entry type.
    pub fn of(entry_type: tar::EntryType) -> Self {
        match entry_type {
            tar::EntryType::Regular | tar::EntryType::Continuous => MemberKind::File,
            tar::EntryType::Directory => MemberKind::Dir,
            tar::EntryType::Symlink => MemberKind::Symlink,
            tar::EntryType::Link => MemberKind::HardLink,
            _ => MemberKind::Other,
        }
    }

    /// Its name in listings: `file`, `dir`, `symlink`, `hardlink`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            MemberKind::File => "file",
            MemberKind::Dir => "dir",
            MemberKind::Symlink => "symlink",
            MemberKind::HardLink => "hardlink",
            MemberKind::Other => "other",
        }
    }
}

/// One tar member.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexedMember {
    /// Its path in the archive.
    pub path: String,
    /// What it is.
    pub kind: MemberKind,
    /// Its permission bits.
    pub mode: u32,
    /// Its data's size (0 but for regular files).
    pub size: u64,
    /// The link target of a symlink or hard link.
    pub link: Option<String>,
    /// Where its first header (extension headers included) starts in the tar stream.
    pub start: u64,
    /// Where its data (padding included) ends in the tar stream: the next member's start.
    pub end: u64,
}

impl IndexedMember {
    /// A member spanning `start..end` of the tar stream.
    pub fn new(path: impl Into<String>, kind: MemberKind, start: u64, end: u64) -> Self {
        IndexedMember {
            path: path.into(),
            kind,
            mode: 0,
            size: 0,
            link: None,
            start,
            end,
        }
    }
}

/// One zstd frame of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexedFrame {
    /// Where the frame starts in the archive.
    pub offset: u64,
    /// Its compressed size.
    pub compressed: u64,
    /// Where its content starts in the tar stream.
    pub content_offset: u64,
    /// Its decompressed size.
    pub decompressed: u64,
    /// The SHA-256 of its compressed bytes (lowercase hex).
    pub sha256: String,
}

/// An archive's frames and members.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemberIndex {
    /// The frames, in order.
    pub frames: Vec<IndexedFrame>,
    /// The members, in archive order.
    pub members: Vec<IndexedMember>,
    /// The tar bytes of the first member (an artifact's `artifact_manifest.txt`, headers and
    /// data), when it is small: a reader of some members puts it first without fetching the
    /// frame it is in.
    pub prologue: Option<Vec<u8>>,
}

/// The largest first member whose bytes the index carries.
pub const MAX_PROLOGUE: u64 = 64 << 10;

/// The members of an archive that some globs select.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selection {
    /// The selected members (indexes into [`MemberIndex::members`], in archive order): those
    /// a glob matches, and the members their links lead to.
    pub members: Vec<usize>,
    /// The globs that matched no member.
    pub unmatched: Vec<String>,
}

/// `path` with `.` and `..` components resolved (`None` when it leaves the root).
fn normalized(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// Why an index could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The archive has no member index (written by another tool, or not zstd).
    #[error("the archive has no member index")]
    Missing,
    /// More of the archive's end is needed: at least this many bytes from its end.
    #[error("the member index needs the last {0} bytes of the archive")]
    NeedTail(u64),
    /// The index frame is not what its footer or text says.
    #[error("the member index is damaged: {0}")]
    Damaged(String),
    /// The index frame's SHA-256 is not the one recorded for it.
    #[error("the member index's SHA-256 is {actual}, not the {expected} recorded for it")]
    Mismatch {
        /// The digest recorded (object metadata).
        expected: String,
        /// The digest of the index frame read.
        actual: String,
    },
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\t' => out.push_str("%09"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3)?;
        out.push(match code {
            "25" => '%',
            "09" => '\t',
            "0A" => '\n',
            "0D" => '\r',
            _ => return None,
        });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

impl MemberIndex {
    /// The index text: a header line, a line per frame, a line per member, tab-separated
    /// (`%`, tab and line breaks in paths escaped as `%25`, `%09`, `%0A`, `%0D`).
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut text = format!("{HEADER}\n");
        if let Some(prologue) = &self.prologue {
            let _ = writeln!(text, "P\t{}", hex::encode(prologue));
        }
        for f in &self.frames {
            let _ = writeln!(
                text,
                "F\t{}\t{}\t{}",
                f.compressed, f.decompressed, f.sha256
            );
        }
        for m in &self.members {
            let _ = write!(
                text,
                "M\t{}\t{}\t{}\t{:o}\t{}\t{}",
                m.start,
                m.end - m.start,
                m.kind.code(),
                m.mode,
                m.size,
                escape(&m.path)
            );
            if let Some(link) = &m.link {
                let _ = write!(text, "\t{}", escape(link));
            }
            text.push('\n');
        }
        text
    }

    fn parse_text(text: &str) -> Result<Self, IndexError> {
        let bad = |line: &str| IndexError::Damaged(format!("unreadable line {line:?}"));
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Err(IndexError::Damaged("no index header".to_owned()));
        }
        let mut index = MemberIndex::default();
        let (mut offset, mut content_offset) = (0, 0);
        for line in lines {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["P", bytes] if index.prologue.is_none() => {
                    index.prologue = Some(hex::decode(bytes).map_err(|_| bad(line))?);
                }
                ["F", compressed, decompressed, sha256] => {
                    let compressed: u64 = compressed.parse().map_err(|_| bad(line))?;
                    let decompressed: u64 = decompressed.parse().map_err(|_| bad(line))?;
                    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(bad(line));
                    }
                    index.frames.push(IndexedFrame {
                        offset,
                        compressed,
                        content_offset,
                        decompressed,
                        sha256: (*sha256).to_owned(),
                    });
                    offset += compressed;
                    content_offset += decompressed;
                }
                ["M", start, len, kind, mode, size, path, link @ ..] if link.len() <= 1 => {
                    let start: u64 = start.parse().map_err(|_| bad(line))?;
                    let len: u64 = len.parse().map_err(|_| bad(line))?;
                    index.members.push(IndexedMember {
                        path: unescape(path).ok_or_else(|| bad(line))?,
                        kind: MemberKind::from_code(kind).ok_or_else(|| bad(line))?,
                        mode: u32::from_str_radix(mode, 8).map_err(|_| bad(line))?,
                        size: size.parse().map_err(|_| bad(line))?,
                        link: match link.first() {
                            Some(l) => Some(unescape(l).ok_or_else(|| bad(line))?),
                            None => None,
                        },
                        start,
                        end: start.checked_add(len).ok_or_else(|| bad(line))?,
                    });
                }
                _ => return Err(bad(line)),
            }
        }
        if let Some(m) = index.members.iter().find(|m| m.end > content_offset) {
            return Err(IndexError::Damaged(format!(
                "member {:?} ends at {} past the {content_offset} bytes of the frames",
                m.path, m.end
            )));
        }
        Ok(index)
    }

    /// The skippable frame holding this index.
    ///
    /// # Errors
    /// When the index does not fit a skippable frame (4 GiB) or does not compress.
    pub fn encode(&self) -> io::Result<Vec<u8>> {
        // With the frame's content checksum: where no digest of the index is recorded (a local
        // staging directory), damage to it is still found when it is decoded.
        let mut compressor = zstd::bulk::Compressor::new(LEVEL)?;
        compressor.include_checksum(true)?;
        let compressed = compressor.compress(self.text().as_bytes())?;
        let size = u32::try_from(compressed.len() + 8)
            .map_err(|_| io::Error::other("the member index is too large for a frame"))?;
        let mut frame = Vec::with_capacity(compressed.len() + 16);
        frame.extend_from_slice(&INDEX_MAGIC.to_le_bytes());
        frame.extend_from_slice(&size.to_le_bytes());
        frame.extend_from_slice(&compressed);
        frame.extend_from_slice(&(size + 8).to_le_bytes());
        frame.extend_from_slice(&INDEX_FOOTER_MAGIC.to_le_bytes());
        Ok(frame)
    }

    /// Reads the index from `tail`, the last bytes of an archive of `archive_len` bytes, and
    /// returns it with the SHA-256 of its frame; with `expected`, that digest must be it.
    ///
    /// # Errors
    /// [`IndexError::NeedTail`] when `tail` is too short (ask again for that many bytes);
    /// [`IndexError::Missing`] when the archive has no index; [`IndexError::Mismatch`] and
    /// [`IndexError::Damaged`] when it is not to be trusted.
    pub fn from_tail(
        tail: &[u8],
        archive_len: u64,
        expected: Option<&str>,
    ) -> Result<(Self, String), IndexError> {
        let (at, frame) = index_frame(tail, archive_len)?;
        let actual = hex::encode(Sha256::digest(frame));
        if let Some(expected) = expected
            && !expected.eq_ignore_ascii_case(&actual)
        {
            return Err(IndexError::Mismatch {
                expected: expected.to_owned(),
                actual,
            });
        }
        let payload = &frame[8..frame.len() - 8];
        let text = zstd::stream::decode_all(payload)
            .map_err(|e| IndexError::Damaged(format!("its text does not decode: {e}")))?;
        let text = String::from_utf8(text)
            .map_err(|_| IndexError::Damaged("its text is not UTF-8".to_owned()))?;
        let index = Self::parse_text(&text)?;
        // The frames must end where the index frame starts.
        let frames_end = index.frames.last().map_or(0, |f| f.offset + f.compressed);
        let frame_start = archive_len - (tail.len() - at) as u64;
        if frames_end != frame_start {
            return Err(IndexError::Damaged(format!(
                "its frames end at {frames_end}, where the index frame starts at {frame_start}"
            )));
        }
        Ok((index, actual))
    }

    /// The paths below which an artifact's members lie (its manifest's lines), from the
    /// prologue; empty when the index has none or the first member is no manifest.
    pub fn relpaths(&self) -> Vec<String> {
        let Some(prologue) = &self.prologue else {
            return Vec::new();
        };
        let mut archive = tar::Archive::new(&prologue[..]);
        let Some(Ok(mut first)) = archive.entries().ok().and_then(|mut e| e.next()) else {
            return Vec::new();
        };
        let is_manifest = first
            .path()
            .is_ok_and(|p| p.to_string_lossy() == crate::MANIFEST_NAME);
        let mut text = String::new();
        if !is_manifest || io::Read::read_to_string(&mut first, &mut text).is_err() {
            return Vec::new();
        }
        crate::manifest_relpaths(&text)
            .into_iter()
            .map(|r| r.trim_end_matches('/').to_owned())
            .filter(|r| !r.is_empty())
            .collect()
    }

    /// The members `globs` select (Python's `fnmatch`: `*` and `?` cross `/`). A member
    /// matches when a glob matches its path in the archive, or its path below one of the
    /// manifest's relpaths (`lib/libx.so` for `core/stage/lib/libx.so`, the path an install
    /// or a flattened fetch gives it). A selected symlink brings the member its target names,
    /// and a hard link the member it links to, when the archive holds them (and so on along
    /// chains). The first member (the manifest) is never among them: a reader writes it
    /// first anyway.
    pub fn select(&self, globs: &[String]) -> Selection {
        let relpaths = self.relpaths();
        let by_path: std::collections::HashMap<&str, usize> = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.as_str(), i))
            .collect();
        let short = |path: &str| -> Option<String> {
            relpaths.iter().find_map(|r| {
                path.strip_prefix(r.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                    .map(str::to_owned)
            })
        };
        let mut chosen = vec![false; self.members.len()];
        let mut unmatched = Vec::new();
        for glob in globs {
            let mut any = false;
            for (i, m) in self.members.iter().enumerate().skip(1) {
                let hit = file_tree::fnmatch(glob, &m.path)
                    || short(&m.path).is_some_and(|s| file_tree::fnmatch(glob, &s));
                if hit {
                    chosen[i] = true;
                    any = true;
                }
            }
            if !any {
                unmatched.push(glob.clone());
            }
        }
        // Links bring their targets, along chains.
        let mut todo: Vec<usize> = (0..chosen.len()).filter(|&i| chosen[i]).collect();
        while let Some(i) = todo.pop() {
            let m = &self.members[i];
            let Some(link) = &m.link else { continue };
            let target = match m.kind {
                MemberKind::Symlink => {
                    let dir = m.path.rsplit_once('/').map_or("", |(d, _)| d);
                    normalized(&format!("{dir}/{link}"))
                }
                MemberKind::HardLink => normalized(link),
                _ => None,
            };
            if let Some(&t) = target.as_deref().and_then(|t| by_path.get(t))
                && t != 0
                && !chosen[t]
            {
                chosen[t] = true;
                todo.push(t);
            }
        }
        Selection {
            members: (0..chosen.len()).filter(|&i| chosen[i]).collect(),
            unmatched,
        }
    }

    /// The runs of consecutive frames (indexes into [`MemberIndex::frames`]) that hold
    /// `members` (indexes into [`MemberIndex::members`]), in order.
    pub fn frame_runs(&self, members: &[usize]) -> Vec<std::ops::Range<usize>> {
        let mut needed = vec![false; self.frames.len()];
        for &i in members {
            let m = &self.members[i];
            for f in self.frames_for(m.start, m.end) {
                needed[f] = true;
            }
        }
        let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
        for (f, _) in needed.iter().enumerate().filter(|(_, n)| **n) {
            match runs.last_mut() {
                Some(run) if run.end == f => run.end = f + 1,
                _ => runs.push(f..f + 1),
            }
        }
        runs
    }

    /// A tar stream of the prologue (the manifest), `members` and the end-of-archive blocks,
    /// each member's bytes taken from `frames` (the decoded content of frames holding them, as
    /// `(content offset, bytes)`, in order, read as it is needed: a frame is dropped once read
    /// past). An archive reader unpacks it as it would the whole archive, but with only these
    /// members. An error of `frames` is the stream's; frames that leave a member's bytes out
    /// are an [`io::ErrorKind::InvalidData`] error naming the member's offset.
    ///
    /// # Errors
    /// [`IndexError::Damaged`] when the index has no prologue.
    pub fn member_tar<I>(
        &self,
        members: &[usize],
        frames: I,
    ) -> Result<SpanReader<DecodedFrames<I::IntoIter>>, IndexError>
    where
        I: IntoIterator<Item = io::Result<(u64, Vec<u8>)>>,
    {
        let prologue = self.prologue.as_ref().ok_or_else(|| {
            IndexError::Damaged("it does not hold the first member's bytes".to_owned())
        })?;
        let spans = members
            .iter()
            .map(|&i| (self.members[i].start, self.members[i].end))
            .collect();
        Ok(SpanReader {
            source: DecodedFrames {
                frames: frames.into_iter(),
                chunk: None,
                at: 0,
            },
            head: prologue.clone(),
            head_at: 0,
            spans,
            next: 0,
            at: 0,
            tail: 1024,
        })
    }

    /// The frames (indexes into [`MemberIndex::frames`]) that hold the bytes `start..end` of
    /// the tar stream.
    pub fn frames_for(&self, start: u64, end: u64) -> std::ops::Range<usize> {
        let first = self
            .frames
            .partition_point(|f| f.content_offset + f.decompressed <= start);
        let last = self.frames.partition_point(|f| f.content_offset < end);
        first..last.max(first)
    }
}

/// The skippable frame of the index within `tail`, and where it starts there.
fn index_frame(tail: &[u8], archive_len: u64) -> Result<(usize, &[u8]), IndexError> {
    let need = |n: usize| IndexError::NeedTail((n as u64).min(archive_len));
    if tail.len() < SEEK_TABLE_FOOTER {
        return Err(need(SEEK_TABLE_FOOTER + 16));
    }
    let end = tail.len();
    if tail[end - 4..] != SEEKABLE_MAGIC.to_le_bytes() {
        return Err(IndexError::Missing);
    }
    let frames = u32::from_le_bytes(tail[end - 9..end - 5].try_into().expect("4 bytes")) as usize;
    let entry_len = if tail[end - 5] & 0x80 != 0 { 12 } else { 8 };
    let table_len = 8 + frames * entry_len + SEEK_TABLE_FOOTER;
    let footer_end = table_len + 8;
    if tail.len() < footer_end {
        return Err(need(footer_end + 4096));
    }
    let table = &tail[end - table_len..];
    if table[..4] != SEEK_TABLE_MAGIC.to_le_bytes() {
        return Err(IndexError::Missing);
    }
    let footer = &tail[end - footer_end..end - table_len];
    if footer[4..] != INDEX_FOOTER_MAGIC.to_le_bytes() {
        return Err(IndexError::Missing);
    }
    let frame_len = u32::from_le_bytes(footer[..4].try_into().expect("4 bytes")) as usize;
    if frame_len < 16 || (frame_len + table_len) as u64 > archive_len {
        return Err(IndexError::Damaged(format!("a frame size of {frame_len}")));
    }
    if tail.len() < frame_len + table_len {
        return Err(need(frame_len + table_len));
    }
    let at = end - table_len - frame_len;
    let frame = &tail[at..end - table_len];
    if frame[..4] != INDEX_MAGIC.to_le_bytes()
        || u32::from_le_bytes(frame[4..8].try_into().expect("4 bytes")) as usize != frame_len - 8
    {
        return Err(IndexError::Damaged(
            "its frame header does not match its footer".to_owned(),
        ));
    }
    Ok((at, frame))
}

/// The index of the tar stream `tar` (no frames; as prologue the manifest's header and data,
/// without extension headers): what [`MemberIndex::select`] and [`SpanReader`] need for an
/// archive written without an index, read whole (the first member's span is then read from
/// the stream too).
///
/// # Errors
/// When the stream does not read as tar.
pub fn index_tar_stream(tar: impl io::Read) -> io::Result<MemberIndex> {
    let mut index = MemberIndex::default();
    let mut archive = tar::Archive::new(tar);
    let mut start = 0;
    for entry in archive.entries()? {
        let mut entry = entry?;
        let header = entry.header().clone();
        let size = entry.size();
        let end = entry.raw_file_position() + size.div_ceil(512) * 512;
        let path = entry
            .path()?
            .to_string_lossy()
            .trim_end_matches('/')
            .to_owned();
        let link = entry.link_name()?.map(|l| l.to_string_lossy().into_owned());
        // The manifest's header and data, for [`MemberIndex::relpaths`] (its extension
        // headers, if any, left out).
        if index.members.is_empty() && path == crate::MANIFEST_NAME && size <= MAX_PROLOGUE {
            let mut bytes = header.as_bytes().to_vec();
            io::Read::read_to_end(&mut entry, &mut bytes)?;
            bytes.resize(bytes.len().div_ceil(512) * 512, 0);
            index.prologue = Some(bytes);
        }
        let mut member = IndexedMember::new(path, MemberKind::of(header.entry_type()), start, end);
        member.mode = header.mode().unwrap_or(0) & 0o7777;
        member.size = size;
        member.link = link;
        index.members.push(member);
        start = end;
    }
    Ok(index)
}

/// Where a [`SpanReader`] reads the tar stream from: the stream itself ([`WholeStream`]), or
/// only the decoded frames that hold the spans ([`DecodedFrames`]).
pub trait SpanSource {
    /// Reads the bytes at the current position into `buf`, as [`io::Read::read`].
    ///
    /// # Errors
    /// As the source's reads.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// Moves `n` bytes forward without handing them out; the number moved (fewer at the end
    /// of the stream).
    ///
    /// # Errors
    /// As the source's reads.
    fn skip(&mut self, n: u64) -> io::Result<u64>;
}

/// A whole tar stream as a [`SpanSource`]: skipped bytes are read and dropped.
#[derive(Debug)]
pub struct WholeStream<R>(pub R);

impl<R: io::Read> SpanSource for WholeStream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }

    fn skip(&mut self, n: u64) -> io::Result<u64> {
        io::copy(&mut io::Read::take(&mut self.0, n), &mut io::sink())
    }
}

/// The decoded content of some frames of an archive, `(content offset, bytes)` in order, as a
/// [`SpanSource`] over the tar stream: only the bytes the frames hold can be read, and each
/// frame is dropped once the position is past it.
#[derive(Debug)]
pub struct DecodedFrames<I> {
    frames: I,
    /// The frame being read: its content offset and bytes.
    chunk: Option<(u64, Vec<u8>)>,
    /// The position in the tar stream.
    at: u64,
}

impl<I: Iterator<Item = io::Result<(u64, Vec<u8>)>>> SpanSource for DecodedFrames<I> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some((offset, bytes)) = &self.chunk {
                let end = offset + bytes.len() as u64;
                if *offset <= self.at && self.at < end {
                    let from = usize::try_from(self.at - offset).unwrap_or(usize::MAX);
                    let n = buf.len().min(bytes.len() - from);
                    buf[..n].copy_from_slice(&bytes[from..from + n]);
                    self.at += n as u64;
                    return Ok(n);
                }
                if *offset > self.at {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "the bytes at {} of the tar stream were not fetched",
                            self.at
                        ),
                    ));
                }
            }
            match self.frames.next() {
                Some(frame) => self.chunk = Some(frame?),
                None => return Ok(0),
            }
        }
    }

    fn skip(&mut self, n: u64) -> io::Result<u64> {
        self.at += n;
        Ok(n)
    }
}

/// A tar stream of only some spans of another (the members chosen, each with its headers),
/// after a head (the manifest's bytes, when the index carries them) and followed by the two
/// end-of-archive blocks: the bytes between the spans are skipped.
#[derive(Debug)]
pub struct SpanReader<S> {
    source: S,
    /// Bytes given before the spans.
    head: Vec<u8>,
    head_at: usize,
    /// The spans to keep, sorted, not overlapping.
    spans: Vec<(u64, u64)>,
    next: usize,
    /// Where `source` is.
    at: u64,
    /// End-of-archive bytes still to give once the spans are done.
    tail: usize,
}

impl<R: io::Read> SpanReader<WholeStream<R>> {
    /// The spans `spans` (sorted, not overlapping) of the stream `inner`.
    pub fn new(inner: R, spans: Vec<(u64, u64)>) -> Self {
        SpanReader {
            source: WholeStream(inner),
            head: Vec::new(),
            head_at: 0,
            spans,
            next: 0,
            at: 0,
            tail: 1024,
        }
    }
}

impl<S: SpanSource> io::Read for SpanReader<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.head_at < self.head.len() {
            let n = buf.len().min(self.head.len() - self.head_at);
            buf[..n].copy_from_slice(&self.head[self.head_at..self.head_at + n]);
            self.head_at += n;
            return Ok(n);
        }
        let Some(&(start, end)) = self.spans.get(self.next) else {
            let n = buf.len().min(self.tail);
            buf[..n].fill(0);
            self.tail -= n;
            return Ok(n);
        };
        if self.at < start {
            let skip = start - self.at;
            let skipped = self.source.skip(skip)?;
            self.at += skipped;
            if skipped < skip {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the tar stream ends before a chosen member",
                ));
            }
        }
        let want = usize::try_from(end - self.at)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.source.read(&mut buf[..want])?;
        if n == 0 && want > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the tar stream ends inside a chosen member",
            ));
        }
        self.at += n as u64;
        if self.at == end {
            self.next += 1;
        }
        Ok(n)
    }
}

/// The first tail read: enough for the index of most archives (a few thousand members).
pub const FIRST_TAIL: u64 = 64 << 10;

/// The member index of the archive file at `path` and its frame's SHA-256, reading only the
/// file's end: `None` when the archive has none.
///
/// # Errors
/// When the file cannot be read, or its index is damaged.
pub fn read_from_file(path: &std::path::Path) -> io::Result<Option<(MemberIndex, String)>> {
    use std::io::{Read as _, Seek as _};
    let mut file = fs_err::File::open(path)?;
    let len = file.metadata()?.len();
    let mut want = FIRST_TAIL.min(len);
    loop {
        file.seek(io::SeekFrom::Start(len - want))?;
        let mut tail = vec![0; usize::try_from(want).map_err(io::Error::other)?];
        file.read_exact(&mut tail)?;
        match MemberIndex::from_tail(&tail, len, None) {
            Ok(found) => return Ok(Some(found)),
            Err(IndexError::Missing) => return Ok(None),
            Err(IndexError::NeedTail(more)) if more > want => want = more,
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                ));
            }
        }
    }
}

impl IndexedFrame {
    /// The content of this frame from its `compressed` bytes, once they have the SHA-256 the
    /// index records for it.
    ///
    /// # Errors
    /// [`IndexError::Damaged`] naming the frame (by its offset) when the bytes are not the
    /// frame's or do not decode.
    pub fn decode(&self, compressed: &[u8]) -> Result<Vec<u8>, IndexError> {
        let actual = frame_sha256(compressed);
        if actual != self.sha256 {
            return Err(IndexError::Damaged(format!(
                "the frame at byte {} has SHA-256 {actual}, the index says {}",
                self.offset, self.sha256
            )));
        }
        let capacity = usize::try_from(self.decompressed).unwrap_or(0);
        zstd::bulk::decompress(compressed, capacity).map_err(|e| {
            IndexError::Damaged(format!(
                "the frame at byte {} does not decode: {e}",
                self.offset
            ))
        })
    }
}

/// The SHA-256 of a frame's compressed bytes (lowercase hex), as the index records it.
pub fn frame_sha256(compressed: &[u8]) -> String {
    hex::encode(Sha256::digest(compressed))
}

#[cfg(test)]
mod tests;
