//! Gzip on every core: the stream is cut into blocks, each compressed on a worker thread into
//! a gzip member of its own, and the members are written in order. Concatenated members are
//! one valid gzip file (RFC 1952 §2.2): `gzip -d`, GNU `tar -xz`, Python's `gzip`/`tarfile`
//! and libarchive's `bsdtar` read them as the one stream they were cut from.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::mpsc::{Receiver, Sender, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Uncompressed bytes per gzip member. Each member starts without the previous 32 KiB as
/// its dictionary; at 4 MiB that costs well under 0.1% of the size.
pub const GZIP_BLOCK_SIZE: usize = 4 << 20;

/// A block to compress: its place in the stream and its bytes.
type Job = (u64, Vec<u8>);
/// A compressed block: its place and the member (or why it failed).
type Done = (u64, io::Result<Vec<u8>>);

/// A writer that gzips what is written to it on `workers` threads, writing the members to
/// `out` in order. Memory is bounded: at most two blocks per worker are in flight.
///
/// ```
/// use std::io::{Read, Write};
///
/// let mut gz = rock_ci_artifacts::ParallelGzWriter::new(Vec::new(), 2, 6);
/// gz.write_all(b"hello, world\n")?;
/// let bytes = gz.finish()?;
/// let mut text = String::new();
/// flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_string(&mut text)?;
/// assert_eq!(text, "hello, world\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct ParallelGzWriter<W: Write> {
    out: Option<W>,
    block: Vec<u8>,
    block_size: usize,
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Done>,
    workers: Vec<JoinHandle<()>>,
    /// Members compressed out of order, waiting for their turn.
    waiting: BTreeMap<u64, Vec<u8>>,
    /// The next block handed out, and the next one written.
    next_job: u64,
    next_write: u64,
    /// Uncompressed and compressed bytes so far.
    bytes_in: u64,
    bytes_out: u64,
}

impl<W: Write> std::fmt::Debug for ParallelGzWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelGzWriter")
            .field("workers", &self.workers.len())
            .field("block_size", &self.block_size)
            .field("bytes_in", &self.bytes_in)
            .field("bytes_out", &self.bytes_out)
            .finish_non_exhaustive()
    }
}

impl<W: Write> ParallelGzWriter<W> {
    /// Gzip at `level` (1–12, libdeflate's levels; 6 is gzip's default) on `workers` threads
    /// (at least 1), in [`GZIP_BLOCK_SIZE`] blocks.
    pub fn new(out: W, workers: usize, level: i32) -> Self {
        Self::with_block_size(out, workers, level, GZIP_BLOCK_SIZE)
    }

    /// [`ParallelGzWriter::new`] with blocks of `block_size` bytes.
    pub fn with_block_size(out: W, workers: usize, level: i32, block_size: usize) -> Self {
        let workers = workers.max(1);
        let level = libdeflater::CompressionLvl::new(level.clamp(1, 12))
            .unwrap_or_else(|_| libdeflater::CompressionLvl::default());
        let (jobs, queue) = sync_channel::<Job>(workers);
        let queue = Arc::new(Mutex::new(queue));
        let (done_tx, done) = std::sync::mpsc::channel::<Done>();
        let handles = (0..workers)
            .map(|_| {
                let (queue, done_tx) = (queue.clone(), done_tx.clone());
                std::thread::spawn(move || compress_blocks(&queue, &done_tx, level))
            })
            .collect();
        ParallelGzWriter {
            out: Some(out),
            block: Vec::with_capacity(block_size),
            block_size: block_size.max(1),
            jobs: Some(jobs),
            done,
            workers: handles,
            waiting: BTreeMap::new(),
            next_job: 0,
            next_write: 0,
            bytes_in: 0,
            bytes_out: 0,
        }
    }

    /// Uncompressed bytes written so far.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Compressed bytes written to the output so far.
    pub fn bytes_out(&self) -> u64 {
        self.bytes_out
    }

    /// Hands the current block to the workers, writing finished members while too many are
    /// in flight.
    fn submit(&mut self) -> io::Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let block = std::mem::replace(&mut self.block, Vec::with_capacity(self.block_size));
        let limit = 2 * self.workers.len() as u64;
        while self.next_job - self.next_write >= limit {
            self.receive_one()?;
        }
        let jobs = self.jobs.as_ref().ok_or_else(stopped)?;
        jobs.send((self.next_job, block)).map_err(|_| stopped())?;
        self.next_job += 1;
        Ok(())
    }

    /// Waits for one member, then writes every member whose turn it is.
    fn receive_one(&mut self) -> io::Result<()> {
        let (seq, member) = self.done.recv().map_err(|_| stopped())?;
        self.waiting.insert(seq, member?);
        let out = self.out.as_mut().ok_or_else(stopped)?;
        while let Some(member) = self.waiting.remove(&self.next_write) {
            out.write_all(&member)?;
            self.bytes_out += member.len() as u64;
            self.next_write += 1;
        }
        Ok(())
    }

    /// Compresses what is left, writes every member and returns the output (flushed).
    pub fn finish(mut self) -> io::Result<W> {
        if self.bytes_in == 0 {
            // An empty input is one empty member, as `gzip` writes it.
            self.submit_empty()?;
        }
        self.submit()?;
        while self.next_write < self.next_job {
            self.receive_one()?;
        }
        self.stop();
        let mut out = self.out.take().ok_or_else(stopped)?;
        out.flush()?;
        Ok(out)
    }

    fn submit_empty(&mut self) -> io::Result<()> {
        let jobs = self.jobs.as_ref().ok_or_else(stopped)?;
        jobs.send((self.next_job, Vec::new()))
            .map_err(|_| stopped())?;
        self.next_job += 1;
        Ok(())
    }

    /// Ends the workers.
    fn stop(&mut self) {
        self.jobs = None;
        for handle in self.workers.drain(..) {
            let _ = handle.join();
        }
    }
}

impl<W: Write> Drop for ParallelGzWriter<W> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<W: Write> Write for ParallelGzWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.block_size - self.block.len();
        let n = room.min(buf.len());
        self.block.extend_from_slice(&buf[..n]);
        self.bytes_in += n as u64;
        if self.block.len() == self.block_size {
            self.submit()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn stopped() -> io::Error {
    io::Error::other("the gzip workers stopped")
}

/// A worker: compresses blocks from `queue` into gzip members until the queue closes.
fn compress_blocks(
    queue: &Mutex<Receiver<Job>>,
    done: &Sender<Done>,
    level: libdeflater::CompressionLvl,
) {
    let mut compressor = libdeflater::Compressor::new(level);
    loop {
        let job = queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .recv();
        let Ok((seq, block)) = job else {
            return;
        };
        let mut member = vec![0; compressor.gzip_compress_bound(block.len())];
        let result = compressor
            .gzip_compress(&block, &mut member)
            .map(|n| {
                member.truncate(n);
                member
            })
            .map_err(|e| io::Error::other(format!("gzip: {e:?}")));
        if done.send((seq, result)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    /// Bytes that compress somewhat, as program text does.
    fn sample(len: usize) -> Vec<u8> {
        let mut state = 0x2545_f491_u32;
        (0..len)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                if i % 7 == 0 {
                    (state >> 24) as u8
                } else {
                    b"abcdefgh"[(state % 8) as usize]
                }
            })
            .collect()
    }

    #[test]
    fn members_in_order_give_back_the_input() {
        for (len, block, workers) in [(0, 16, 2), (1, 16, 3), (1000, 16, 4), (100_000, 997, 2)] {
            let data = sample(len);
            let mut gz = ParallelGzWriter::with_block_size(Vec::new(), workers, 6, block);
            // Uneven writes, across block boundaries.
            for piece in data.chunks(333) {
                gz.write_all(piece).unwrap();
            }
            assert_eq!(gz.bytes_in(), len as u64);
            let bytes = gz.finish().unwrap();
            assert_eq!(gunzip(&bytes), data, "len {len} block {block}");
            assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
        }
    }

    #[test]
    fn an_empty_input_is_one_empty_member() {
        let bytes = ParallelGzWriter::new(Vec::new(), 2, 6).finish().unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
        assert!(gunzip(&bytes).is_empty());
    }

    #[test]
    fn a_failing_output_is_an_error() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut gz = ParallelGzWriter::with_block_size(Full, 2, 6, 64);
        let written = gz
            .write_all(&sample(10_000))
            .and_then(|()| gz.finish().map(drop));
        assert_eq!(written.unwrap_err().kind(), io::ErrorKind::StorageFull);
    }
}
