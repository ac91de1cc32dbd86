//! The zip container of a wheel, written in one pass. A file entry is read once into one
//! buffer (its CRC-32, SHA-256 and size taken piece by piece on the way, while the bytes are in
//! cache), deflated whole by libdeflate on a compressor thread (one deflate stream, every byte
//! compressed once) and written once, in entry order, behind a local header that already holds
//! its CRC and sizes.
//!
//! Entries are deflated in parallel within a memory budget: one entry larger than [`BUDGET`]
//! at a time, plus smaller ones up to [`BUDGET`] bytes in all, so a large library is held once
//! (with its compressed bytes beside it), never twice, and the other cores deflate the small
//! entries meanwhile. Stored entries, and deflated entries of [`WHOLE_LIMIT`] bytes and more,
//! are streamed in [`PIECE`]s instead (zlib-rs for the deflate, which needs no whole input):
//! memory stays bounded whatever the entry sizes. Their headers are filled in when they are
//! complete. Zip64 records are written only where a size, an offset or the entry count needs
//! them.

use std::collections::VecDeque;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use sha2::{Digest as _, Sha256};

use crate::Error;
use file_tree::FileError;

/// Bytes read from a file at a time (hashed while in cache; the unit of streamed entries).
pub(crate) const PIECE: usize = 1 << 20;
/// Input bytes of the entries smaller than this that may be read ahead of the writer (being
/// deflated or waiting for their turn); a larger entry is read ahead alone, beside them. Two
/// 16 MiB code objects still fit, one per core of a 2-core runner.
const BUDGET: u64 = 32 << 20;
/// Deflated entries of this size and more are streamed rather than held whole.
const WHOLE_LIMIT: u64 = 512 << 20;
/// Entries read ahead of the writer, whatever their sizes.
const MAX_PENDING: usize = 64;
/// Sizes and offsets from here on need zip64 fields.
const ZIP64_LIMIT: u64 = 0xFFFF_FFFF;

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// As it is.
    Stored,
    /// Raw deflate at this level: 1–9 as zlib's, 0 for stored blocks inside the stream.
    Deflated(u32),
}

impl Method {
    fn code(self) -> u16 {
        match self {
            Method::Stored => 0,
            Method::Deflated(_) => 8,
        }
    }
}

/// What the archive records of one entry, and what RECORD lists.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    /// Its name in the archive.
    pub name: String,
    /// SHA-256 of the payload.
    pub sha256: [u8; 32],
    /// Payload size.
    pub size: u64,
}

struct Central {
    name: String,
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    offset: u64,
    mode: u32,
    /// The local header has a zip64 extra for the sizes.
    zip64: bool,
}

/// An entry's CRC-32 and sizes, when they are known before its header is written.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    crc: u32,
    compressed: u64,
    size: u64,
}

/// Version 2.0 (4.5 with zip64) made by Unix (3).
const MADE_BY_UNIX: u16 = 3 << 8;

/// The libdeflate compressor of a level (0–9, higher levels taken as 9).
fn compressor(level: u32) -> libdeflater::Compressor {
    let level = i32::try_from(level.min(9)).expect("0-9");
    libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).expect("0-9 is valid"))
}

/// `data` as one raw deflate stream.
fn deflate_whole(c: &mut libdeflater::Compressor, data: &[u8]) -> std::io::Result<Vec<u8>> {
    // Zeroed memory comes from the kernel untouched: only the bytes written become resident.
    let mut out = vec![0; c.deflate_compress_bound(data.len())];
    let len = c
        .deflate_compress(data, &mut out)
        .map_err(|e| std::io::Error::other(format!("deflate: {e:?}")))?;
    out.truncate(len);
    Ok(out)
}

type Answer = std::io::Result<Vec<u8>>;
/// An entry's bytes to deflate and where to send the result.
type Job = (Vec<u8>, SyncSender<Answer>);

/// Compressor threads fed through a bounded queue; each entry answers on its own channel.
struct Workers {
    queue: Option<SyncSender<Job>>,
}

impl Workers {
    fn start<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        threads: usize,
        level: u32,
    ) -> Self {
        let (queue, jobs) = sync_channel::<Job>(threads);
        let jobs = Arc::new(Mutex::new(jobs));
        for _ in 0..threads {
            let jobs = Arc::clone(&jobs);
            scope.spawn(move || {
                let mut c = compressor(level);
                loop {
                    let job = jobs.lock().map(|rx| rx.recv());
                    let Ok(Ok((data, reply))) = job else { break };
                    let answer = deflate_whole(&mut c, &data);
                    // The input goes as soon as it is compressed, before the answer waits.
                    drop(data);
                    let _ = reply.send(answer);
                }
            });
        }
        Workers { queue: Some(queue) }
    }

    fn submit(&self, data: Vec<u8>) -> Receiver<Answer> {
        let (reply, answer) = sync_channel(1);
        if let Some(queue) = &self.queue {
            // A closed queue only happens after a worker panicked; the answer then reports it.
            let _ = queue.send((data, reply));
        }
        answer
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.queue.take();
    }
}

/// An entry read and handed to a compressor, waiting for its turn to be written.
struct Pending {
    name: String,
    method: Method,
    mode: u32,
    crc: u32,
    size: u64,
    answer: Receiver<Answer>,
}

/// The entries read ahead of the writer and the memory they hold.
struct Queue {
    entries: VecDeque<Pending>,
    /// Input bytes of the entries up to `budget` in the queue.
    small: u64,
    /// An entry over `budget` is in the queue.
    large: bool,
    /// [`BUDGET`], or less in tests.
    budget: u64,
}

impl Queue {
    fn new(budget: u64) -> Self {
        Queue {
            entries: VecDeque::new(),
            small: 0,
            large: false,
            budget,
        }
    }

    /// Whether an entry of `len` bytes must wait for the queue's head to be written.
    fn full_for(&self, len: u64) -> bool {
        !self.entries.is_empty()
            && (self.entries.len() >= MAX_PENDING
                || if len > self.budget {
                    self.large
                } else {
                    self.small + len > self.budget
                })
    }

    fn push(&mut self, entry: Pending) {
        if entry.size > self.budget {
            self.large = true;
        } else {
            self.small += entry.size;
        }
        self.entries.push_back(entry);
    }

    fn pop(&mut self) -> Option<Pending> {
        let entry = self.entries.pop_front()?;
        if entry.size > self.budget {
            self.large = false;
        } else {
            self.small -= entry.size;
        }
        Some(entry)
    }
}

/// A zip archive being written to `dest` (a temporary file the caller renames).
pub(crate) struct ZipOut {
    out: std::io::BufWriter<std::fs::File>,
    dest: PathBuf,
    offset: u64,
    central: Vec<Central>,
    time: u16,
    date: u16,
    zip64_limit: u64,
    whole_limit: u64,
    budget: u64,
}

impl ZipOut {
    /// Writes into `file` (at its start), every entry stamped with the DOS `time` and `date`.
    pub(crate) fn new(file: std::fs::File, dest: &Path, time: u16, date: u16) -> Self {
        ZipOut {
            out: std::io::BufWriter::with_capacity(1 << 20, file),
            dest: dest.to_path_buf(),
            offset: 0,
            central: Vec::new(),
            time,
            date,
            zip64_limit: ZIP64_LIMIT,
            whole_limit: WHOLE_LIMIT,
            budget: BUDGET,
        }
    }

    #[cfg(test)]
    pub(crate) fn with_zip64_limit(mut self, limit: u64) -> Self {
        self.zip64_limit = limit;
        self
    }

    /// Streams deflated entries from `limit` bytes on, and reads ahead up to `budget` bytes.
    #[cfg(test)]
    pub(crate) fn with_memory_limits(mut self, limit: u64, budget: u64) -> Self {
        self.whole_limit = limit;
        self.budget = budget;
        self
    }

    fn write_error(&self, e: std::io::Error) -> Error {
        FileError::write(&self.dest, e).into()
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.out.write_all(bytes).map_err(|e| self.write_error(e))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Writes a local header: with the CRC and sizes when `known`, else with zeros that
    /// [`Self::end`] fills in (and a zip64 extra when `zip64`).
    fn header(
        &mut self,
        name: &str,
        method: Method,
        mode: u32,
        zip64: bool,
        known: Option<Sizes>,
    ) -> Result<(), Error> {
        let Sizes {
            crc,
            compressed,
            size,
        } = known.unwrap_or(Sizes {
            crc: 0,
            compressed: 0,
            size: 0,
        });
        let flags: u16 = if name.is_ascii() { 0 } else { 0x0800 };
        let mut h = Vec::with_capacity(30 + name.len() + 20);
        h.extend_from_slice(&0x0403_4b50_u32.to_le_bytes());
        h.extend_from_slice(&(if zip64 { 45u16 } else { 20 }).to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&method.code().to_le_bytes());
        h.extend_from_slice(&self.time.to_le_bytes());
        h.extend_from_slice(&self.date.to_le_bytes());
        h.extend_from_slice(&crc.to_le_bytes());
        if zip64 {
            h.extend_from_slice(&[0xFF; 8]);
        } else {
            for v in [compressed, size] {
                h.extend_from_slice(&u32::try_from(v).expect("below the limit").to_le_bytes());
            }
        }
        h.extend_from_slice(
            &u16::try_from(name.len())
                .expect("short names")
                .to_le_bytes(),
        );
        h.extend_from_slice(&(if zip64 { 20u16 } else { 0 }).to_le_bytes());
        h.extend_from_slice(name.as_bytes());
        if zip64 {
            h.extend_from_slice(&1u16.to_le_bytes());
            h.extend_from_slice(&16u16.to_le_bytes());
            h.extend_from_slice(&size.to_le_bytes());
            h.extend_from_slice(&compressed.to_le_bytes());
        }
        let offset = self.offset;
        self.write(&h)?;
        self.central.push(Central {
            name: name.to_owned(),
            method: method.code(),
            crc,
            compressed,
            size,
            offset,
            mode,
            zip64,
        });
        Ok(())
    }

    /// Writes an entry whose payload is ready, CRC and sizes in its header.
    fn whole(
        &mut self,
        name: &str,
        method: Method,
        mode: u32,
        crc: u32,
        size: u64,
        payload: &[u8],
    ) -> Result<(), Error> {
        let compressed = payload.len() as u64;
        let zip64 = size >= self.zip64_limit || compressed >= self.zip64_limit;
        let known = Sizes {
            crc,
            compressed,
            size,
        };
        self.header(name, method, mode, zip64, Some(known))?;
        self.write(payload)
    }

    /// Fills in the last entry's CRC-32 and sizes in the central record and its local header.
    fn end(&mut self, crc: u32, size: u64) -> Result<(), Error> {
        let limit = self.zip64_limit;
        let end = self.offset;
        let entry = self.central.last_mut().expect("an entry is open");
        let name_len = entry.name.len() as u64;
        let data_start = entry.offset + 30 + name_len + if entry.zip64 { 20 } else { 0 };
        entry.crc = crc;
        entry.size = size;
        entry.compressed = end - data_start;
        let (header_at, compressed, zip64) = (entry.offset, entry.compressed, entry.zip64);
        if !zip64 && (compressed >= limit || size >= limit) {
            let name = entry.name.clone();
            return Err(self.write_error(std::io::Error::other(format!(
                "entry `{name}` outgrew its header"
            ))));
        }
        let mut patch = |bytes: &[u8], at: u64| {
            self.out
                .seek(SeekFrom::Start(at))
                .and_then(|_| self.out.write_all(bytes))
                .map_err(|e| FileError::write(&self.dest, e))
        };
        if zip64 {
            patch(&crc.to_le_bytes(), header_at + 14)?;
            let mut sizes = size.to_le_bytes().to_vec();
            sizes.extend_from_slice(&compressed.to_le_bytes());
            patch(&sizes, header_at + 30 + name_len + 4)?;
        } else {
            let mut fields = crc.to_le_bytes().to_vec();
            fields.extend_from_slice(&u32::try_from(compressed).expect("checked").to_le_bytes());
            fields.extend_from_slice(&u32::try_from(size).expect("checked").to_le_bytes());
            patch(&fields, header_at + 14)?;
        }
        self.out
            .seek(SeekFrom::Start(end))
            .map_err(|e| self.write_error(e))?;
        Ok(())
    }

    /// Adds an entry whose payload is in memory.
    pub(crate) fn add_bytes(
        &mut self,
        name: &str,
        data: &[u8],
        mode: u32,
        method: Method,
    ) -> Result<Written, Error> {
        let crc = crc32(data);
        let size = data.len() as u64;
        match method {
            Method::Stored => self.whole(name, method, mode, crc, size, data)?,
            Method::Deflated(level) => {
                let payload =
                    deflate_whole(&mut compressor(level), data).map_err(|e| self.write_error(e))?;
                self.whole(name, method, mode, crc, size, &payload)?;
            }
        }
        Ok(Written {
            name: name.to_owned(),
            sha256: Sha256::digest(data).into(),
            size,
        })
    }

    /// Adds the files `entries` (archive name, path, mode) in order, each read once; deflated
    /// entries are compressed on `threads` threads.
    pub(crate) fn add_files(
        &mut self,
        entries: &[(String, PathBuf, u32)],
        method: Method,
        threads: usize,
    ) -> Result<Vec<Written>, Error> {
        std::thread::scope(|scope| {
            let workers = match method {
                Method::Deflated(level) => Some(Workers::start(scope, threads.max(1), level)),
                Method::Stored => None,
            };
            let mut queue = Queue::new(self.budget);
            let mut written = Vec::with_capacity(entries.len());
            for (name, path, mode) in entries {
                let mut file = fs_err::File::open(path).map_err(|e| FileError::read(path, e))?;
                let len = file.metadata().map_err(|e| FileError::read(path, e))?.len();
                let whole = match (&workers, method) {
                    (Some(w), Method::Deflated(_)) if len < self.whole_limit => Some(w),
                    _ => None,
                };
                let Some(workers) = whole else {
                    while let Some(entry) = queue.pop() {
                        self.write_pending(&entry)?;
                    }
                    written.push(self.stream(name, *mode, method, &mut file, len)?);
                    continue;
                };
                while queue.full_for(len) {
                    let entry = queue.pop().expect("a full queue has entries");
                    self.write_pending(&entry)?;
                }
                let mut data = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
                let mut hashes = Hashes::default();
                loop {
                    let start = data.len();
                    (&mut file)
                        .take(PIECE as u64)
                        .read_to_end(&mut data)
                        .map_err(|e| FileError::read(path, e))?;
                    hashes.update(&data[start..]);
                    if data.len() - start < PIECE {
                        break;
                    }
                }
                let size = data.len() as u64;
                let (crc, sha256) = hashes.finish();
                queue.push(Pending {
                    name: name.clone(),
                    method,
                    mode: *mode,
                    crc,
                    size,
                    answer: workers.submit(data),
                });
                written.push(Written {
                    name: name.clone(),
                    sha256,
                    size,
                });
            }
            while let Some(entry) = queue.pop() {
                self.write_pending(&entry)?;
            }
            Ok(written)
        })
    }

    /// Writes an entry handed to a compressor, once it is deflated.
    fn write_pending(&mut self, entry: &Pending) -> Result<(), Error> {
        let payload = entry
            .answer
            .recv()
            .map_err(std::io::Error::other)
            .and_then(|r| r)
            .map_err(|e| self.write_error(e))?;
        self.whole(
            &entry.name,
            entry.method,
            entry.mode,
            entry.crc,
            entry.size,
            &payload,
        )
    }

    /// Writes the entry read from `file` (`len` bytes long) in pieces: as it is, or through a
    /// streaming deflate; its header is filled in at the end.
    fn stream(
        &mut self,
        name: &str,
        mode: u32,
        method: Method,
        file: &mut fs_err::File,
        len: u64,
    ) -> Result<Written, Error> {
        let zip64 = len >= self.zip64_limit - self.zip64_limit / 20;
        self.header(name, method, mode, zip64, None)?;
        let mut deflate = match method {
            Method::Deflated(level) => Some(flate2::write::DeflateEncoder::new(
                Vec::new(),
                flate2::Compression::new(level.min(9)),
            )),
            Method::Stored => None,
        };
        let mut hashes = Hashes::default();
        let mut size = 0u64;
        let mut data = Vec::with_capacity(PIECE);
        loop {
            data.clear();
            (&mut *file)
                .take(PIECE as u64)
                .read_to_end(&mut data)
                .map_err(|e| FileError::read(file.path(), e))?;
            hashes.update(&data);
            size += data.len() as u64;
            let last = data.len() < PIECE;
            if let Some(encoder) = &mut deflate {
                encoder.write_all(&data).map_err(|e| self.write_error(e))?;
                if last {
                    break;
                }
                let out = std::mem::take(encoder.get_mut());
                self.write(&out)?;
            } else {
                self.write(&data)?;
                if last {
                    break;
                }
            }
        }
        if let Some(encoder) = deflate {
            let out = encoder.finish().map_err(|e| self.write_error(e))?;
            self.write(&out)?;
        }
        let (crc, sha256) = hashes.finish();
        self.end(crc, size)?;
        Ok(Written {
            name: name.to_owned(),
            sha256,
            size,
        })
    }

    /// Writes the central directory (sorted as the entries were added) and returns the file.
    pub(crate) fn finish(mut self) -> Result<std::fs::File, Error> {
        let limit = self.zip64_limit;
        let cd_start = self.offset;
        let mut cd = Vec::new();
        for e in &self.central {
            let mut extra = Vec::new();
            let mut field = |v: u64| {
                if v >= limit {
                    extra.extend_from_slice(&v.to_le_bytes());
                    u32::MAX
                } else {
                    u32::try_from(v).expect("below the limit")
                }
            };
            let size = field(e.size);
            let compressed = field(e.compressed);
            let offset = field(e.offset);
            let zip64 = !extra.is_empty();
            let version: u16 = if zip64 { 45 } else { 20 };
            let flags: u16 = if e.name.is_ascii() { 0 } else { 0x0800 };
            cd.extend_from_slice(&0x0201_4b50_u32.to_le_bytes());
            cd.extend_from_slice(&(MADE_BY_UNIX + version).to_le_bytes());
            cd.extend_from_slice(&version.to_le_bytes());
            cd.extend_from_slice(&flags.to_le_bytes());
            cd.extend_from_slice(&e.method.to_le_bytes());
            cd.extend_from_slice(&self.time.to_le_bytes());
            cd.extend_from_slice(&self.date.to_le_bytes());
            cd.extend_from_slice(&e.crc.to_le_bytes());
            cd.extend_from_slice(&compressed.to_le_bytes());
            cd.extend_from_slice(&size.to_le_bytes());
            cd.extend_from_slice(&u16::try_from(e.name.len()).expect("short").to_le_bytes());
            let extra_len = if zip64 { extra.len() + 4 } else { 0 };
            cd.extend_from_slice(&u16::try_from(extra_len).expect("short").to_le_bytes());
            cd.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
            cd.extend_from_slice(&((0o100_000 | e.mode) << 16).to_le_bytes());
            cd.extend_from_slice(&offset.to_le_bytes());
            cd.extend_from_slice(e.name.as_bytes());
            if zip64 {
                cd.extend_from_slice(&1u16.to_le_bytes());
                cd.extend_from_slice(&u16::try_from(extra.len()).expect("short").to_le_bytes());
                cd.extend_from_slice(&extra);
            }
        }
        self.write(&cd)?;
        let count = self.central.len() as u64;
        let cd_size = cd.len() as u64;
        let mut tail = Vec::new();
        if count >= 0xFFFF || cd_size >= limit || cd_start >= limit {
            let record_at = self.offset;
            tail.extend_from_slice(&0x0606_4b50_u32.to_le_bytes());
            tail.extend_from_slice(&44u64.to_le_bytes());
            tail.extend_from_slice(&(MADE_BY_UNIX + 45).to_le_bytes());
            tail.extend_from_slice(&45u16.to_le_bytes());
            tail.extend_from_slice(&[0; 8]); // this disk, the directory's disk
            tail.extend_from_slice(&count.to_le_bytes());
            tail.extend_from_slice(&count.to_le_bytes());
            tail.extend_from_slice(&cd_size.to_le_bytes());
            tail.extend_from_slice(&cd_start.to_le_bytes());
            tail.extend_from_slice(&0x0706_4b50_u32.to_le_bytes());
            tail.extend_from_slice(&0u32.to_le_bytes());
            tail.extend_from_slice(&record_at.to_le_bytes());
            tail.extend_from_slice(&1u32.to_le_bytes());
        }
        let count16 = u16::try_from(count.min(0xFFFF)).expect("clamped");
        tail.extend_from_slice(&0x0605_4b50_u32.to_le_bytes());
        tail.extend_from_slice(&[0; 4]);
        tail.extend_from_slice(&count16.to_le_bytes());
        tail.extend_from_slice(&count16.to_le_bytes());
        for v in [cd_size, cd_start] {
            let v = if v >= limit {
                u32::MAX
            } else {
                u32::try_from(v).expect("below the limit")
            };
            tail.extend_from_slice(&v.to_le_bytes());
        }
        tail.extend_from_slice(&0u16.to_le_bytes());
        self.write(&tail)?;
        self.out
            .into_inner()
            .map_err(|e| FileError::write(&self.dest, e.into_error()).into())
    }
}

/// CRC-32 (zip's) of `data`.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(data);
    crc.sum()
}

/// The CRC-32 and SHA-256 of a payload, taken piece by piece.
#[derive(Default)]
struct Hashes {
    crc: flate2::Crc,
    sha: Sha256,
}

impl Hashes {
    fn update(&mut self, piece: &[u8]) {
        self.crc.update(piece);
        self.sha.update(piece);
    }

    fn finish(self) -> (u32, [u8; 32]) {
        (self.crc.sum(), self.sha.finalize().into())
    }
}

#[cfg(test)]
mod tests;
