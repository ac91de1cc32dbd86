//! The zip container of a wheel, written in one pass: each entry's payload is read once (its
//! CRC-32, SHA-256 and size taken on the way), cut into pieces that are deflated in parallel
//! (each piece primed with the 32 KiB before it and ended with a sync flush, so the pieces
//! join into one deflate stream, as pigz does) and written once, in entry order. The sizes and
//! CRC-32 of a local header are filled in when its entry is complete. Zip64 records are
//! written only where a size, an offset or the entry count needs them.
//!
//! Memory stays bounded by [`WINDOW`] pieces of [`PIECE`] bytes whatever the entry sizes, and
//! every core compresses until the last piece of the archive: a large entry is spread over all
//! of them instead of finishing alone.

use std::collections::VecDeque;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use sha2::{Digest as _, Sha256};

use crate::Error;
use file_tree::FileError;

/// Input bytes per deflated piece.
pub(crate) const PIECE: usize = 1 << 20;
/// Pieces read ahead of the writer (being compressed or waiting to be written).
const WINDOW: usize = 4;
/// The deflate window that primes each piece with the bytes before it.
const DICTIONARY: usize = 32 << 10;
/// Sizes and offsets from here on need zip64 fields.
const ZIP64_LIMIT: u64 = 0xFFFF_FFFF;

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// As it is.
    Stored,
    /// Raw deflate at this level (0–9).
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

/// One piece of an entry to deflate.
struct Piece {
    data: Vec<u8>,
    dictionary: Vec<u8>,
    last: bool,
    level: u32,
}

type Pending = Receiver<std::io::Result<Vec<u8>>>;
/// A piece to deflate and where to send the result.
type Job = (Piece, SyncSender<std::io::Result<Vec<u8>>>);
/// Version 2.0 (4.5 with zip64) made by Unix (3).
const MADE_BY_UNIX: u16 = 3 << 8;

/// A step of the writer, in archive order.
enum Step {
    /// A local header, written with zeros where CRC and sizes go.
    Header {
        name: String,
        method: Method,
        mode: u32,
        zip64: bool,
    },
    /// Payload bytes, ready or being deflated.
    Ready(Vec<u8>),
    Pending(Pending),
    /// The entry is complete: fill in its header.
    End {
        crc: u32,
        size: u64,
    },
}

/// Bytes of a piece deflated quickly to tell whether it compresses at all.
const PROBE: usize = 64 << 10;

/// The level to deflate `data` at: `level`, or 0 (stored blocks inside the deflate stream)
/// when a fast deflate of its first 64 KiB saves under 2% — already-compressed payloads
/// (kpack archives, compressed code objects), where the slow levels would burn CPU to emit
/// stored blocks all the same.
pub(crate) fn piece_level(data: &[u8], level: u32) -> u32 {
    if level <= 1 || data.len() < PROBE {
        return level;
    }
    let sample = &data[..PROBE];
    let mut c = flate2::Compress::new(flate2::Compression::fast(), false);
    let mut out = Vec::with_capacity(PROBE + PROBE / 8);
    let done = c.compress_vec(sample, &mut out, flate2::FlushCompress::Finish);
    if done.is_ok() && out.len() * 50 >= PROBE * 49 {
        0
    } else {
        level
    }
}

fn deflate_piece(piece: &Piece) -> std::io::Result<Vec<u8>> {
    let level = piece_level(&piece.data, piece.level);
    let mut c = flate2::Compress::new(flate2::Compression::new(level), false);
    if !piece.dictionary.is_empty() {
        c.set_dictionary(&piece.dictionary)
            .map_err(std::io::Error::other)?;
    }
    let flush = if piece.last {
        flate2::FlushCompress::Finish
    } else {
        flate2::FlushCompress::Sync
    };
    let mut out = Vec::with_capacity(piece.data.len() / 2 + 64);
    let mut input = &piece.data[..];
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(4096));
        }
        let before = c.total_in();
        let status = c
            .compress_vec(input, &mut out, flush)
            .map_err(std::io::Error::other)?;
        let used = usize::try_from(c.total_in() - before).expect("piece size");
        input = &input[used..];
        let done = match flush {
            flate2::FlushCompress::Finish => status == flate2::Status::StreamEnd,
            // A sync flush is complete when all input is taken and space was left over.
            _ => input.is_empty() && out.len() < out.capacity(),
        };
        if done {
            return Ok(out);
        }
    }
}

/// Compressor threads fed through a bounded queue; each piece answers on its own channel.
struct Workers {
    queue: Option<SyncSender<Job>>,
}

impl Workers {
    fn start<'scope>(scope: &'scope std::thread::Scope<'scope, '_>, threads: usize) -> Self {
        let (queue, jobs) = sync_channel::<Job>(WINDOW);
        let jobs = Arc::new(Mutex::new(jobs));
        for _ in 0..threads {
            let jobs = Arc::clone(&jobs);
            scope.spawn(move || {
                loop {
                    let job = jobs.lock().map(|rx| rx.recv());
                    let Ok(Ok((piece, reply))) = job else { break };
                    let _ = reply.send(deflate_piece(&piece));
                }
            });
        }
        Workers { queue: Some(queue) }
    }

    fn submit(&self, piece: Piece) -> Pending {
        let (reply, answer) = sync_channel(1);
        if let Some(queue) = &self.queue {
            // A closed queue only happens after a worker panicked; the answer then reports it.
            let _ = queue.send((piece, reply));
        }
        answer
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.queue.take();
    }
}

/// A zip archive being written to `dest` (a temporary file the caller renames).
pub(crate) struct ZipOut {
    out: std::io::BufWriter<std::fs::File>,
    patch: std::fs::File,
    dest: PathBuf,
    offset: u64,
    central: Vec<Central>,
    time: u16,
    date: u16,
    zip64_limit: u64,
}

impl ZipOut {
    /// Writes into `file` (at its start), every entry stamped with the DOS `time` and `date`.
    pub(crate) fn new(
        file: std::fs::File,
        dest: &Path,
        time: u16,
        date: u16,
    ) -> Result<Self, Error> {
        let patch = file.try_clone().map_err(|e| FileError::write(dest, e))?;
        Ok(ZipOut {
            out: std::io::BufWriter::with_capacity(1 << 20, file),
            patch,
            dest: dest.to_path_buf(),
            offset: 0,
            central: Vec::new(),
            time,
            date,
            zip64_limit: ZIP64_LIMIT,
        })
    }

    #[cfg(test)]
    pub(crate) fn with_zip64_limit(mut self, limit: u64) -> Self {
        self.zip64_limit = limit;
        self
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.out
            .write_all(bytes)
            .map_err(|e| FileError::write(&self.dest, e))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn header(&mut self, name: &str, method: Method, mode: u32, zip64: bool) -> Result<(), Error> {
        let flags: u16 = if name.is_ascii() { 0 } else { 0x0800 };
        let mut h = Vec::with_capacity(30 + name.len() + 20);
        h.extend_from_slice(&0x0403_4b50_u32.to_le_bytes());
        h.extend_from_slice(&(if zip64 { 45u16 } else { 20 }).to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&method.code().to_le_bytes());
        h.extend_from_slice(&self.time.to_le_bytes());
        h.extend_from_slice(&self.date.to_le_bytes());
        // CRC-32 and sizes are filled in by `end`.
        let sizes = if zip64 { u32::MAX } else { 0 };
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&sizes.to_le_bytes());
        h.extend_from_slice(&sizes.to_le_bytes());
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
            h.extend_from_slice(&[0; 16]);
        }
        let offset = self.offset;
        self.write(&h)?;
        self.central.push(Central {
            name: name.to_owned(),
            method: method.code(),
            crc: 0,
            compressed: 0,
            size: 0,
            offset,
            mode,
            zip64,
        });
        Ok(())
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
            return Err(FileError::write(
                &self.dest,
                std::io::Error::other(format!("entry `{name}` outgrew its header")),
            )
            .into());
        }
        self.out
            .flush()
            .map_err(|e| FileError::write(&self.dest, e))?;
        let patch = |bytes: &[u8], at: u64| {
            self.patch
                .write_all_at(bytes, at)
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
        let zip64 = data.len() as u64 >= self.zip64_limit - self.zip64_limit / 20;
        self.header(name, method, mode, zip64)?;
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let payload = match method {
            Method::Stored => data.to_vec(),
            Method::Deflated(level) => deflate_piece(&Piece {
                data: data.to_vec(),
                dictionary: Vec::new(),
                last: true,
                level,
            })
            .map_err(|e| FileError::write(&self.dest, e))?,
        };
        self.write(&payload)?;
        self.end(crc.sum(), data.len() as u64)?;
        Ok(Written {
            name: name.to_owned(),
            sha256: Sha256::digest(data).into(),
            size: data.len() as u64,
        })
    }

    /// Adds the files `entries` (archive name, path, mode) in order, each read once; deflated
    /// pieces are compressed on `threads` threads.
    pub(crate) fn add_files(
        &mut self,
        entries: &[(String, PathBuf, u32)],
        method: Method,
        threads: usize,
    ) -> Result<Vec<Written>, Error> {
        std::thread::scope(|scope| {
            let workers = match method {
                Method::Deflated(_) => Some(Workers::start(scope, threads.max(1))),
                Method::Stored => None,
            };
            let mut steps: VecDeque<Step> = VecDeque::new();
            let mut in_flight = 0usize;
            let mut written = Vec::with_capacity(entries.len());
            for (name, path, mode) in entries {
                let mut file = fs_err::File::open(path).map_err(|e| FileError::read(path, e))?;
                let len = file.metadata().map_err(|e| FileError::read(path, e))?.len();
                let zip64 = len >= self.zip64_limit - self.zip64_limit / 20;
                steps.push_back(Step::Header {
                    name: name.clone(),
                    method,
                    mode: *mode,
                    zip64,
                });
                let (mut crc, mut sha, mut size) = (flate2::Crc::new(), Sha256::new(), 0u64);
                let mut dictionary = Vec::new();
                loop {
                    let mut data = Vec::with_capacity(PIECE);
                    (&mut file)
                        .take(PIECE as u64)
                        .read_to_end(&mut data)
                        .map_err(|e| FileError::read(path, e))?;
                    crc.update(&data);
                    sha.update(&data);
                    size += data.len() as u64;
                    let last = data.len() < PIECE;
                    let next_dictionary = data[data.len().saturating_sub(DICTIONARY)..].to_vec();
                    match (&workers, method) {
                        (Some(w), Method::Deflated(level)) => {
                            steps.push_back(Step::Pending(w.submit(Piece {
                                data,
                                dictionary: std::mem::replace(&mut dictionary, next_dictionary),
                                last,
                                level,
                            })));
                            in_flight += 1;
                        }
                        _ => steps.push_back(Step::Ready(data)),
                    }
                    while in_flight >= WINDOW || steps.len() > 4 * WINDOW {
                        self.step(steps.pop_front().expect("steps queued"), &mut in_flight)?;
                    }
                    if last {
                        break;
                    }
                }
                steps.push_back(Step::End {
                    crc: crc.sum(),
                    size,
                });
                written.push(Written {
                    name: name.clone(),
                    sha256: sha.finalize().into(),
                    size,
                });
            }
            while let Some(step) = steps.pop_front() {
                self.step(step, &mut in_flight)?;
            }
            Ok(written)
        })
    }

    fn step(&mut self, step: Step, in_flight: &mut usize) -> Result<(), Error> {
        match step {
            Step::Header {
                name,
                method,
                mode,
                zip64,
            } => self.header(&name, method, mode, zip64),
            Step::Ready(data) => self.write(&data),
            Step::Pending(answer) => {
                *in_flight -= 1;
                let data = answer
                    .recv()
                    .map_err(std::io::Error::other)
                    .and_then(|r| r)
                    .map_err(|e| FileError::write(&self.dest, e))?;
                self.write(&data)
            }
            Step::End { crc, size } => self.end(crc, size),
        }
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

#[cfg(test)]
mod tests {
    use super::{Method, PIECE, ZipOut, piece_level};
    use std::path::{Path, PathBuf};

    /// Pseudo-random bytes (xorshift), reproducible.
    fn noise(len: usize, mut seed: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed.to_le_bytes()[0]
            })
            .collect()
    }

    /// Files of `sizes`: a random 16 KiB block repeated (matches reach across pieces).
    fn files(dir: &Path, sizes: &[usize]) -> Vec<(String, PathBuf, u32)> {
        let block = noise(16 << 10, 7);
        sizes
            .iter()
            .enumerate()
            .map(|(i, &len)| {
                let data: Vec<u8> = block.iter().copied().cycle().skip(i).take(len).collect();
                let path = dir.join(format!("f{i}"));
                fs_err::write(&path, &data).unwrap();
                (
                    format!("pkg/f{i}"),
                    path,
                    if i == 0 { 0o755 } else { 0o644 },
                )
            })
            .collect()
    }

    fn write(
        dir: &Path,
        name: &str,
        entries: &[(String, PathBuf, u32)],
        method: Method,
        limit: Option<u64>,
    ) -> PathBuf {
        let path = dir.join(name);
        let file = fs_err::File::create(&path).unwrap().into_parts().0;
        let mut zip = ZipOut::new(file, &path, 0x6000, 0x5821).unwrap();
        if let Some(limit) = limit {
            zip = zip.with_zip64_limit(limit);
        }
        zip.add_files(entries, method, 2).unwrap();
        zip.add_bytes("pkg/small.txt", b"text\n", 0o644, method)
            .unwrap();
        drop(zip.finish().unwrap());
        path
    }

    /// Python's zipfile checks every CRC and lists name, size, mode, method.
    const LIST: &str = r"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
for i in z.infolist():
    print(i.filename, i.file_size, oct(i.external_attr >> 16), i.compress_type, i.date_time)
";

    #[test]
    fn pieces_join_into_one_stream_that_python_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let entries = files(tmp.path(), &[0, 1, PIECE, 3 * PIECE + 5, 100]);
        let zip = write(tmp.path(), "a.zip", &entries, Method::Deflated(9), None);
        let listing = rock_ci_test_support::python(LIST, &[zip.as_os_str()]);
        assert_eq!(
            listing,
            "pkg/f0 0 0o100755 8 (2024, 1, 1, 12, 0, 0)\npkg/f1 1 0o100644 8 (2024, 1, 1, 12, 0, 0)\n\
             pkg/f2 1048576 0o100644 8 (2024, 1, 1, 12, 0, 0)\npkg/f3 3145733 0o100644 8 (2024, 1, 1, 12, 0, 0)\n\
             pkg/f4 100 0o100644 8 (2024, 1, 1, 12, 0, 0)\npkg/small.txt 5 0o100644 8 (2024, 1, 1, 12, 0, 0)\n"
        );
        // The bytes come back as they were.
        let mut archive = zip::ZipArchive::new(fs_err::File::open(&zip).unwrap()).unwrap();
        for (name, path, _) in &entries {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut archive.by_name(name).unwrap(), &mut data).unwrap();
            assert!(data == fs_err::read(path).unwrap(), "{name}");
        }
        // Each piece is primed with the bytes before it: the 3 MiB entry costs about what one
        // stream costs, not a fresh 16 KiB block per piece.
        let f3 = archive.by_name("pkg/f3").unwrap().compressed_size();
        let mut one = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(9));
        std::io::Write::write_all(&mut one, &fs_err::read(&entries[3].1).unwrap()).unwrap();
        let single = one.finish().unwrap().len() as u64;
        assert!(f3 <= single + 4 * 64, "{f3} vs {single}");
        // Same inputs, same bytes; stored entries too.
        let again = write(tmp.path(), "b.zip", &entries, Method::Deflated(9), None);
        assert!(fs_err::read(&again).unwrap() == fs_err::read(&zip).unwrap());
        let stored = write(tmp.path(), "s.zip", &entries, Method::Stored, None);
        let listing = rock_ci_test_support::python(LIST, &[stored.as_os_str()]);
        assert!(listing.contains("pkg/f3 3145733 0o100644 0 "), "{listing}");
    }

    #[test]
    fn incompressible_pieces_are_stored_inside_the_stream() {
        let random = noise(PIECE, 3);
        assert_eq!(piece_level(&random, 9), 0);
        let code: Vec<u8> = noise(16 << 10, 5).into_iter().cycle().take(PIECE).collect();
        assert_eq!(piece_level(&code, 9), 9);
        assert_eq!(piece_level(&random[..1000], 9), 9, "too short to probe");
        // A random entry costs its size plus the stored-block headers, and reads back.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("random");
        fs_err::write(&path, noise(3 * PIECE, 11)).unwrap();
        let entries = [("r".to_owned(), path.clone(), 0o644)];
        let zip = write(tmp.path(), "r.zip", &entries, Method::Deflated(9), None);
        let mut archive = zip::ZipArchive::new(fs_err::File::open(&zip).unwrap()).unwrap();
        let mut file = archive.by_name("r").unwrap();
        assert!(file.compressed_size() <= 3 * PIECE as u64 + 1024);
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut data).unwrap();
        assert!(data == fs_err::read(&path).unwrap());
    }

    #[test]
    fn zip64_fields_where_sizes_and_offsets_need_them() {
        let tmp = tempfile::tempdir().unwrap();
        let entries = files(tmp.path(), &[10, 5000, 3 * PIECE, 20]);
        // With a 4 KiB limit: big entries, late offsets and the directory need zip64 fields.
        for method in [Method::Stored, Method::Deflated(1)] {
            let zip = write(tmp.path(), "z64.zip", &entries, method, Some(4096));
            let listing = rock_ci_test_support::python(LIST, &[zip.as_os_str()]);
            assert!(listing.contains("pkg/f2 3145728 "), "{listing}");
            let code = if method == Method::Stored { 0 } else { 8 };
            let last = format!("pkg/small.txt 5 0o100644 {code} (2024, 1, 1, 12, 0, 0)\n");
            assert!(listing.ends_with(&last), "{listing}");
            let bytes = fs_err::read(&zip).unwrap();
            assert!(
                bytes.windows(4).any(|w| w == [0x50, 0x4b, 0x06, 0x06]),
                "zip64 end record"
            );
        }
    }
}
