//! Reading a zstd stream frame by frame: frames that declare a content size of at most
//! [`MAX_BUFFERED_FRAME`] are cut out of the input by their block headers and decoded whole on
//! worker threads, a few in flight, their output handed on in order; any other frame (no
//! content size, or a large one: a stream written as one frame) is decoded as a stream on the
//! reading thread, as before. Skippable frames are skipped; a seek table is checked against
//! the frames before it.

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use zstd::zstd_safe::{self, InBuffer, OutBuffer, ResetDirective};

use super::{
    Frame, MAX_BUFFERED_FRAME, SEEK_TABLE_FOOTER, SEEK_TABLE_MAGIC, SeekEntry, append_exact,
    check_seek_table, parse_block, parse_seek_table, read_frame_header, read_full,
};

/// Where a frame starts, for messages.
#[derive(Debug, Clone, Copy)]
struct At {
    index: usize,
    offset: u64,
}

impl At {
    fn error(self, e: impl std::fmt::Display) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("zstd frame {} (at byte {}): {e}", self.index, self.offset),
        )
    }
}

/// A whole frame to decode: its bytes, its content size, a buffer for the output.
struct Job {
    frame: Vec<u8>,
    content_size: usize,
    out: Vec<u8>,
    at: At,
    done: SyncSender<Decoded>,
}

/// The frame's output, and its input back for reuse.
type Decoded = io::Result<(Vec<u8>, Vec<u8>)>;

/// Decodes the whole `frame` of declared `content_size` into `out`.
fn decode(
    d: &mut zstd::bulk::Decompressor<'_>,
    frame: Vec<u8>,
    content_size: usize,
    mut out: Vec<u8>,
    at: At,
) -> Decoded {
    out.clear();
    out.reserve_exact(content_size);
    let n = d
        .decompress_to_buffer(&frame[..], &mut out)
        .map_err(|e| at.error(format_args!("declares {content_size} bytes: {e}")))?;
    if n != content_size {
        return Err(at.error(format_args!("declares {content_size} bytes, holds {n}")));
    }
    Ok((out, frame))
}

/// The decoding threads of one stream.
struct Pool {
    jobs: Option<SyncSender<Job>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Pool {
    fn start(workers: usize) -> Self {
        let (tx, rx) = sync_channel::<Job>(workers);
        let rx = Arc::new(Mutex::new(rx));
        let handles = (0..workers)
            .map(|_| {
                let rx = rx.clone();
                std::thread::spawn(move || {
                    let mut d = zstd::bulk::Decompressor::new();
                    loop {
                        let job = rx
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .recv();
                        let Ok(job) = job else { return };
                        let result = match &mut d {
                            Ok(d) => decode(d, job.frame, job.content_size, job.out, job.at),
                            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                        };
                        let _ = job.done.send(result);
                    }
                })
            })
            .collect();
        Pool {
            jobs: Some(tx),
            handles,
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.jobs = None;
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

/// A frame read ahead, in stream order.
enum Pending {
    /// Cut out, not handed to a worker yet (while it is the only one: decoded here).
    Whole(Vec<u8>, usize, At),
    /// On a worker.
    Decoding(Receiver<Decoded>),
    /// To be decoded as a stream from the input, after its header.
    Stream(StreamFrame),
}

/// A frame decoded as a stream.
struct StreamFrame {
    header: [u8; 18],
    header_len: usize,
    /// Header bytes already given to the decoder.
    header_pos: usize,
    at: At,
    produced: u64,
}

/// The input, counting the bytes taken.
struct Counted<R> {
    inner: R,
    taken: u64,
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = buf.len().min(available.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.taken += n as u64;
        self.inner.consume(n);
    }
}

/// The decompressed bytes of the zstd stream `R`, in order, its frames decoded on up to
/// `workers` threads (see the module).
pub struct FramedDecoder<R: BufRead> {
    input: Counted<R>,
    workers: usize,
    pool: Option<Pool>,
    queue: VecDeque<Pending>,
    /// The decoded frame being handed out.
    out: Vec<u8>,
    pos: usize,
    /// Decoded frames' buffers and frames' inputs, for reuse.
    spare_out: Vec<Vec<u8>>,
    spare_in: Vec<Vec<u8>>,
    stream: Option<StreamFrame>,
    dctx: Option<zstd_safe::DCtx<'static>>,
    /// The input ended.
    ended: bool,
    /// Frames read (skippable ones included).
    index: usize,
    /// The frames since the start or the last seek table, as a seek table would list them.
    entries: Vec<SeekEntry>,
}

impl<R: BufRead> FramedDecoder<R> {
    /// Decodes `input` on up to `workers` threads beside the reading one; with one (or none),
    /// every frame as a stream on the reading thread (no thread, no copy: as fast as a single
    /// frame, for when the cores are busy with other archives).
    pub fn new(input: R, workers: usize) -> Self {
        FramedDecoder {
            input: Counted {
                inner: input,
                taken: 0,
            },
            workers,
            pool: None,
            queue: VecDeque::new(),
            out: Vec::new(),
            pos: 0,
            spare_out: Vec::new(),
            spare_in: Vec::new(),
            stream: None,
            dctx: None,
            ended: false,
            index: 0,
            entries: Vec::new(),
        }
    }

    /// Reads frames ahead until enough are in flight (one per worker, beside the one being
    /// handed out), the input ends, or a frame must be decoded as a stream.
    fn read_ahead(&mut self) -> io::Result<()> {
        while !self.ended
            && self.queue.len() < self.workers.max(1)
            && !matches!(self.queue.back(), Some(Pending::Stream(_)))
        {
            let at = At {
                index: self.index,
                offset: self.input.taken,
            };
            let Some(frame) = read_frame_header(&mut self.input).map_err(|e| at.error(e))? else {
                self.ended = true;
                break;
            };
            self.index += 1;
            match frame {
                Frame::Skippable { magic, size } => self.skippable(magic, size, at)?,
                Frame::Zstd {
                    header,
                    header_len,
                    content_size: Some(size),
                    checksum,
                } if size <= MAX_BUFFERED_FRAME && self.workers > 1 => {
                    let size = usize::try_from(size).map_err(|e| at.error(e))?;
                    let frame = self.cut_frame(&header[..header_len], size, checksum, at)?;
                    self.queue_whole(frame, size, at);
                }
                Frame::Zstd {
                    header, header_len, ..
                } => {
                    self.queue.push_back(Pending::Stream(StreamFrame {
                        header,
                        header_len,
                        header_pos: 0,
                        at,
                        produced: 0,
                    }));
                }
            }
        }
        Ok(())
    }

    /// Queues a whole frame; from the second one on, every such frame goes to the workers.
    fn queue_whole(&mut self, frame: Vec<u8>, content_size: usize, at: At) {
        self.queue
            .push_back(Pending::Whole(frame, content_size, at));
        let wholes = self
            .queue
            .iter()
            .filter(|p| !matches!(p, Pending::Stream(_)))
            .count();
        if wholes < 2 && self.pool.is_none() {
            return;
        }
        let pool = self.pool.get_or_insert_with(|| Pool::start(self.workers));
        for pending in &mut self.queue {
            if let Pending::Whole(frame, content_size, at) = pending {
                let (done, rx) = sync_channel(1);
                let job = Job {
                    frame: std::mem::take(frame),
                    content_size: *content_size,
                    out: self.spare_out.pop().unwrap_or_default(),
                    at: *at,
                    done,
                };
                if let Some(jobs) = &pool.jobs {
                    // A closed queue shows as the worker's answer missing.
                    let _ = jobs.send(job);
                }
                *pending = Pending::Decoding(rx);
            }
        }
    }

    /// Reads the rest of a frame of declared `content_size` after its `header`, by its block
    /// headers, refusing more bytes than a frame of that size can have.
    fn cut_frame(
        &mut self,
        header: &[u8],
        content_size: usize,
        checksum: bool,
        at: At,
    ) -> io::Result<Vec<u8>> {
        let limit = zstd_safe::compress_bound(content_size) + header.len() + 3 + 4;
        let mut frame = self.spare_in.pop().unwrap_or_default();
        frame.clear();
        frame.reserve(limit);
        frame.extend_from_slice(header);
        loop {
            let mut bytes = [0u8; 3];
            if !read_full(&mut self.input, &mut bytes, "a block header").map_err(|e| at.error(e))? {
                return Err(at.error("the zstd stream ends inside the frame"));
            }
            let block = parse_block(bytes).map_err(|e| at.error(e))?;
            frame.extend_from_slice(&bytes);
            let tail = if block.last && checksum { 4 } else { 0 };
            let start = frame.len();
            let len = block.payload + tail;
            if start + len > limit {
                return Err(at.error(format_args!(
                    "more bytes than a frame declaring {content_size} bytes can hold"
                )));
            }
            append_exact(&mut self.input, &mut frame, len, "a block").map_err(|e| at.error(e))?;
            if block.last {
                break;
            }
        }
        let sum = checksum.then(|| {
            let n = frame.len();
            u32::from_le_bytes([frame[n - 4], frame[n - 3], frame[n - 2], frame[n - 1]])
        });
        self.entries.push(SeekEntry {
            compressed: frame.len() as u64,
            decompressed: content_size as u64,
            checksum: sum,
        });
        Ok(frame)
    }

    /// Skips a skippable frame, or checks the seek table it holds.
    fn skippable(&mut self, magic: u32, size: u32, at: At) -> io::Result<()> {
        let size = u64::from(size);
        // A table of the frames read so far (and then some), read whole; larger, skipped.
        let table_limit = 12 * (self.entries.len() as u64 + 1024) + SEEK_TABLE_FOOTER as u64;
        if magic == SEEK_TABLE_MAGIC && size <= table_limit {
            let mut data = vec![0; usize::try_from(size).map_err(|e| at.error(e))?];
            if !read_full(&mut self.input, &mut data, "a skippable frame")
                .map_err(|e| at.error(e))?
                && size > 0
            {
                return Err(at.error("the zstd stream ends inside a skippable frame"));
            }
            if let Some(table) = parse_seek_table(&data).map_err(|e| at.error(e))? {
                check_seek_table(&table, &self.entries).map_err(|e| at.error(e))?;
                self.entries.clear();
                return Ok(());
            }
        } else {
            let skipped = io::copy(&mut (&mut self.input).take(size), &mut io::sink())?;
            if skipped < size {
                return Err(at.error("the zstd stream ends inside a skippable frame"));
            }
        }
        self.entries.push(SeekEntry {
            compressed: 8 + size,
            decompressed: 0,
            checksum: None,
        });
        Ok(())
    }

    /// Decodes the stream frame into `buf`: the bytes produced, 0 when the frame ended.
    fn stream_into(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(frame) = &mut self.stream else {
            return Ok(0);
        };
        let dctx = self.dctx.get_or_insert_with(zstd_safe::DCtx::create);
        loop {
            let from_header = frame.header_pos < frame.header_len;
            let src = if from_header {
                &frame.header[frame.header_pos..frame.header_len]
            } else {
                self.input.fill_buf()?
            };
            if src.is_empty() {
                return Err(frame.at.error("the zstd stream ends inside the frame"));
            }
            let mut input = InBuffer::around(src);
            let mut output = OutBuffer::around(&mut *buf);
            let hint = dctx
                .decompress_stream(&mut output, &mut input)
                .map_err(|code| frame.at.error(zstd_safe::get_error_name(code)))?;
            let (used, produced) = (input.pos, output.pos());
            if from_header {
                frame.header_pos += used;
            } else {
                self.input.consume(used);
            }
            frame.produced += produced as u64;
            if hint == 0 {
                self.entries.push(SeekEntry {
                    compressed: self.input.taken - frame.at.offset,
                    decompressed: frame.produced,
                    checksum: None,
                });
                self.stream = None;
                return Ok(produced);
            }
            if produced > 0 {
                return Ok(produced);
            }
        }
    }
}

impl<R: BufRead> Read for FramedDecoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.pos < self.out.len() {
                let n = buf.len().min(self.out.len() - self.pos);
                buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            if self.stream.is_some() {
                match self.stream_into(buf)? {
                    0 => continue,
                    n => return Ok(n),
                }
            }
            self.read_ahead()?;
            let done = std::mem::take(&mut self.out);
            if done.capacity() > 0 {
                self.spare_out.push(done);
            }
            self.pos = 0;
            match self.queue.pop_front() {
                None => return Ok(0),
                Some(Pending::Whole(frame, content_size, at)) => {
                    let mut d = zstd::bulk::Decompressor::new()?;
                    let out = self.spare_out.pop().unwrap_or_default();
                    let (out, frame) = decode(&mut d, frame, content_size, out, at)?;
                    self.out = out;
                    self.spare_in.push(frame);
                }
                Some(Pending::Decoding(rx)) => {
                    let (out, frame) = rx
                        .recv()
                        .map_err(|_| io::Error::other("a zstd decoding thread stopped"))??;
                    self.out = out;
                    self.spare_in.push(frame);
                }
                Some(Pending::Stream(frame)) => {
                    if let Some(dctx) = &mut self.dctx {
                        dctx.reset(ResetDirective::SessionOnly)
                            .map_err(|code| frame.at.error(zstd_safe::get_error_name(code)))?;
                    }
                    self.stream = Some(frame);
                }
            }
        }
    }
}
