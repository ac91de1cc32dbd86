//! Writing a zstd stream as independent frames of [`FRAME_SIZE`] uncompressed bytes, each with
//! its content size and checksum, compressed on worker threads and written in order, then the
//! seek table.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use zstd::zstd_safe::CParameter;

use super::{FRAME_SIZE, SeekEntry, seek_table};

/// A frame to compress: its bytes, and where the compressed frame goes (with the input back
/// for reuse).
type Job = (Vec<u8>, SyncSender<Compressed>);
type Compressed = io::Result<(Vec<u8>, Vec<u8>)>;

/// A compressor for one frame at a time, with the content checksum.
fn compressor(level: i32) -> io::Result<zstd::bulk::Compressor<'static>> {
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.set_parameter(CParameter::ChecksumFlag(true))?;
    Ok(c)
}

fn compress(c: &mut zstd::bulk::Compressor<'_>, input: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(input.len()));
    c.compress_to_buffer(input, &mut out)?;
    Ok(out)
}

/// Writes what it is given to `out` as zstd frames of [`FRAME_SIZE`] uncompressed bytes (the
/// last one shorter) and, on [`FramedEncoder::finish_with_index`], the seek table. With workers, frames are
/// compressed on them, a few in flight; without, on the writing thread. The same input and
/// level give the same bytes whatever the workers.
pub(crate) struct FramedEncoder<W: Write> {
    /// Taken by [`FramedEncoder::finish_with_index`].
    out: Option<W>,
    /// The frame being filled.
    frame: Vec<u8>,
    frame_size: usize,
    /// Frames being compressed, in order.
    pending: VecDeque<Receiver<Compressed>>,
    /// Emptied inputs for the next frames.
    spare: Vec<Vec<u8>>,
    jobs: Option<SyncSender<Job>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    in_flight: usize,
    /// Compresses on this thread when there are no workers.
    local: Option<zstd::bulk::Compressor<'static>>,
    entries: Vec<SeekEntry>,
    /// The SHA-256 of each frame written (for the member index).
    digests: Vec<String>,
    /// Uncompressed bytes taken so far.
    position: u64,
}

impl<W: Write> FramedEncoder<W> {
    /// Frames of [`FRAME_SIZE`] at `level`, compressed on `workers` threads (0: on the
    /// caller's).
    pub(crate) fn new(out: W, level: i32, workers: usize) -> io::Result<Self> {
        Self::with_frame_size(out, level, workers, FRAME_SIZE)
    }

    /// As [`FramedEncoder::new`] with frames of `frame_size` bytes.
    pub(crate) fn with_frame_size(
        out: W,
        level: i32,
        workers: usize,
        frame_size: usize,
    ) -> io::Result<Self> {
        // Checked here, where the error can be told, rather than on a worker.
        let local = compressor(level)?;
        let (jobs, handles) = if workers == 0 {
            (None, Vec::new())
        } else {
            let (tx, rx) = sync_channel::<Job>(workers);
            let rx = Arc::new(Mutex::new(rx));
            let handles = (0..workers)
                .map(|_| {
                    let rx = rx.clone();
                    std::thread::spawn(move || compress_jobs(level, &rx))
                })
                .collect();
            (Some(tx), handles)
        };
        Ok(Self {
            out: Some(out),
            frame: Vec::with_capacity(frame_size),
            frame_size,
            pending: VecDeque::new(),
            spare: Vec::new(),
            in_flight: workers + 1,
            local: jobs.is_none().then_some(local),
            jobs,
            workers: handles,
            entries: Vec::new(),
            digests: Vec::new(),
            position: 0,
        })
    }

    /// Compresses the full frame (or the last one), waiting for the oldest frame in flight
    /// first when there are enough.
    fn end_frame(&mut self) -> io::Result<()> {
        let input = std::mem::replace(
            &mut self.frame,
            self.spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(self.frame_size)),
        );
        if let Some(local) = &mut self.local {
            let compressed = compress(local, &input)?;
            self.write_frame(&compressed, input.len())?;
            let mut input = input;
            input.clear();
            self.spare.push(input);
            return Ok(());
        }
        while self.pending.len() >= self.in_flight {
            self.write_oldest()?;
        }
        let (tx, rx) = sync_channel(1);
        let jobs = self.jobs.as_ref().expect("workers without a queue");
        jobs.send((input, tx))
            .map_err(|_| io::Error::other("the zstd compression threads stopped"))?;
        self.pending.push_back(rx);
        Ok(())
    }

    /// Waits for the oldest frame in flight and writes it.
    fn write_oldest(&mut self) -> io::Result<()> {
        let Some(rx) = self.pending.pop_front() else {
            return Ok(());
        };
        let (compressed, mut input) = rx
            .recv()
            .map_err(|_| io::Error::other("a zstd compression thread stopped"))??;
        self.write_frame(&compressed, input.len())?;
        input.clear();
        self.spare.push(input);
        Ok(())
    }

    fn write_frame(&mut self, compressed: &[u8], decompressed: usize) -> io::Result<()> {
        self.output()?.write_all(compressed)?;
        self.digests
            .push(crate::member_index::frame_sha256(compressed));
        let sum = compressed[compressed.len() - 4..].try_into().ok();
        self.entries.push(SeekEntry {
            compressed: compressed.len() as u64,
            decompressed: decompressed as u64,
            checksum: sum.map(u32::from_le_bytes),
        });
        Ok(())
    }

    /// Uncompressed bytes taken so far: where the next byte written lands in the content.
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// The content bytes `start..end`, while they are still in the frame being filled.
    pub(crate) fn peek(&self, start: u64, end: u64) -> Option<Vec<u8>> {
        let frame_start = self.position - self.frame.len() as u64;
        let from = usize::try_from(start.checked_sub(frame_start)?).ok()?;
        let to = usize::try_from(end.checked_sub(frame_start)?).ok()?;
        self.frame.get(from..to).map(<[u8]>::to_vec)
    }

    /// Writes the last frame, the frames in flight and the seek table; hands back the output.
    /// An empty input is one empty frame. (The archives are finished with their index.)
    #[cfg(test)]
    pub(crate) fn finish(self) -> io::Result<W> {
        Ok(self.finish_with_index(None)?.0)
    }

    /// Writes the last frame, the frames in flight, the member index `index` (its members and
    /// prologue; the frames are filled in here) in its skippable frame, and the seek table;
    /// hands back the output and the index frame's SHA-256. An empty input is one empty
    /// frame.
    pub(crate) fn finish_with_index(
        mut self,
        index: Option<crate::member_index::MemberIndex>,
    ) -> io::Result<(W, Option<String>)> {
        if !self.frame.is_empty() || self.entries.is_empty() && self.pending.is_empty() {
            self.end_frame()?;
        }
        while !self.pending.is_empty() {
            self.write_oldest()?;
        }
        let mut index_sha256 = None;
        if let Some(mut index) = index {
            index.frames.clear();
            let (mut offset, mut content_offset) = (0, 0);
            for (entry, sha256) in self.entries.iter().zip(&self.digests) {
                index.frames.push(crate::member_index::IndexedFrame {
                    offset,
                    compressed: entry.compressed,
                    content_offset,
                    decompressed: entry.decompressed,
                    sha256: sha256.clone(),
                });
                offset += entry.compressed;
                content_offset += entry.decompressed;
            }
            let frame = index.encode()?;
            index_sha256 = Some(crate::member_index::frame_sha256(&frame));
            self.output()?.write_all(&frame)?;
            // Listed in the seek table as a frame of no content, so that the table's offsets
            // stay right for seekable-format readers; its checksum is that of no content
            // (the low 32 bits of XXH64 of nothing), for readers that check every frame's.
            self.entries.push(SeekEntry {
                compressed: frame.len() as u64,
                decompressed: 0,
                checksum: Some(0x51D8_E999),
            });
        }
        let table = seek_table(&self.entries)?;
        self.output()?.write_all(&table)?;
        self.stop_workers();
        let mut out = self.out.take().expect("the output is there until finished");
        out.flush()?;
        Ok((out, index_sha256))
    }

    fn output(&mut self) -> io::Result<&mut W> {
        self.out
            .as_mut()
            .ok_or_else(|| io::Error::other("the zstd stream was finished"))
    }

    fn stop_workers(&mut self) {
        self.jobs = None;
        for handle in self.workers.drain(..) {
            let _ = handle.join();
        }
    }
}

impl<W: Write> Drop for FramedEncoder<W> {
    fn drop(&mut self) {
        self.pending.clear();
        self.stop_workers();
    }
}

impl<W: Write> Write for FramedEncoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(self.frame_size - self.frame.len());
        self.frame.extend_from_slice(&buf[..n]);
        self.position += n as u64;
        if self.frame.len() == self.frame_size {
            self.end_frame()?;
        }
        Ok(n)
    }

    /// Nothing to flush before a frame is full: frames are written whole.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A worker: compresses the frames it takes until the queue closes.
fn compress_jobs(level: i32, jobs: &Mutex<Receiver<Job>>) {
    let mut c = compressor(level);
    loop {
        let job = jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .recv();
        let Ok((input, tx)) = job else {
            return;
        };
        let result = match &mut c {
            Ok(c) => compress(c, &input).map(|out| (out, input)),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        };
        let _ = tx.send(result);
    }
}
