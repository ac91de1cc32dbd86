//! Downloads into a file without holding the object in memory: ranged GETs whose bytes are
//! written at their offsets as they arrive, hashed in order by one reader behind them. The
//! partial file's complete, hashed prefix is recorded beside it (`{partial}.prefix`), so that
//! an interrupted download resumes from there whatever order its ranges finished in.

use std::collections::BTreeMap;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use file_tree::FileError;
use futures::{StreamExt as _, TryStreamExt as _};
use storage_backend::Verifier;
use storage_location::StorageLocation;

use super::{PARALLEL_THRESHOLD, RANGE_CONCURRENCY, RANGE_SIZE};
use crate::Error;

/// `{partial}.prefix`: how many leading bytes of the partial file are complete (and were fed
/// to the verifier); a decimal number.
pub(super) fn prefix_path(partial: &Path) -> PathBuf {
    let mut p = partial.as_os_str().to_owned();
    p.push(".prefix");
    PathBuf::from(p)
}

/// The complete prefix recorded for `partial`: `None` without a record (a partial file
/// written in order, whole), `Some(0)` for a record that cannot be read.
pub(super) fn recorded_prefix(partial: &Path) -> Option<u64> {
    match fs_err::read_to_string(prefix_path(partial)) {
        Ok(text) => Some(text.trim().parse().unwrap_or(0)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => Some(0),
    }
}

/// Writes `buf` at byte `at` of `file`.
fn write_all_at(file: &std::fs::File, buf: &[u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, buf, at)
    }
    #[cfg(windows)]
    {
        let (mut buf, mut at) = (buf, at);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_write(file, buf, at)? {
                0 => return Err(std::io::ErrorKind::WriteZero.into()),
                n => {
                    buf = &buf[n..];
                    at += n as u64;
                }
            }
        }
        Ok(())
    }
}

/// Puts each batch of a range at its offset of the partial file, off the async threads.
struct FileSink {
    file: Arc<std::fs::File>,
    path: PathBuf,
}

impl storage_backend::RangeSink for FileSink {
    async fn write(
        &self,
        offset: u64,
        pieces: Vec<bytes::Bytes>,
    ) -> Result<(), storage_backend::Error> {
        let (file, path) = (Arc::clone(&self.file), self.path.clone());
        storage_backend::blocking(move || {
            let mut at = offset;
            for piece in &pieces {
                write_all_at(&file, piece, at).map_err(|e| FileError::write(&path, e))?;
                at += piece.len() as u64;
            }
            Ok(())
        })
        .await
    }
}

/// The ranges finished beyond the complete prefix (start → end), and that prefix.
struct Finished {
    beyond: BTreeMap<u64, u64>,
    prefix: u64,
}

impl Finished {
    /// Records range `start..end` as written; the new complete prefix if it grew.
    fn add(&mut self, start: u64, end: u64) -> Option<u64> {
        self.beyond.insert(start, end);
        let before = self.prefix;
        while let Some(end) = self.beyond.remove(&self.prefix) {
            self.prefix = end;
        }
        (self.prefix > before).then_some(self.prefix)
    }
}

/// Bytes `start..size` of `loc` (version `etag`) into `partial`, whose first `start` bytes
/// `verifier` has already seen (the file is cut there first): ranged GETs of [`RANGE_SIZE`]
/// (one GET for what is no more than [`PARALLEL_THRESHOLD`]), [`RANGE_CONCURRENCY`] at once
/// and within the backend's budget of connections, each written as it arrives. Returns the
/// verifier fed every byte in order. After a failure the partial file and its record hold the
/// complete prefix reached, to resume from.
pub(super) async fn download_into(
    b: &crate::S3Artifacts,
    loc: &StorageLocation,
    (start, size): (u64, u64),
    etag: &str,
    partial: &Path,
    verifier: Verifier,
    on_bytes: &(dyn Fn(u64) + Send + Sync),
) -> Result<Verifier, Error> {
    let file = {
        let partial = partial.to_path_buf();
        storage_backend::blocking(move || open_at_prefix(&partial, start)).await?
    };
    let range_size = if size - start > PARALLEL_THRESHOLD {
        RANGE_SIZE
    } else {
        (size - start).max(1)
    };
    let ranges = (0..(size - start).div_ceil(range_size)).map(move |i| {
        let first = start + i * range_size;
        (first, (first + range_size).min(size) - 1)
    });
    let (advanced, prefixes) = std::sync::mpsc::channel::<u64>();
    let hashing = {
        let partial = partial.to_path_buf();
        storage_backend::blocking(move || hash_behind(&partial, start, &prefixes, verifier))
    };
    let finished = Mutex::new(Finished {
        beyond: BTreeMap::new(),
        prefix: start,
    });
    let sink = FileSink {
        file: Arc::new(file),
        path: partial.to_path_buf(),
    };
    let fetched = futures::stream::iter(ranges)
        .map(|(first, last)| {
            let (sink, finished, advanced) = (&sink, &finished, advanced.clone());
            async move {
                // A connection's slot, held only while its GET runs: what a range fetched is
                // on disk, not in memory, so the slots bound connections, not bytes held.
                let _slot = b.range_slots.acquire().await.ok();
                b.storage()
                    .read_range_to(loc, (first, last), etag, on_bytes, sink)
                    .await
                    .map_err(|e| Error::from_s3(e, loc))?;
                let grown = finished
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .add(first, last + 1);
                if let Some(prefix) = grown {
                    // The hasher may have stopped on an error of its own: it reports it.
                    let _ = advanced.send(prefix);
                }
                Ok::<_, Error>(())
            }
        })
        .buffer_unordered(RANGE_CONCURRENCY)
        .try_collect::<()>()
        .await;
    drop(advanced);
    let hashed = hashing.await;
    fetched?;
    hashed
}

/// Opens `partial` for writing, cut to its first `start` bytes, with the prefix recorded.
fn open_at_prefix(partial: &Path, start: u64) -> Result<std::fs::File, Error> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(partial)
        .map_err(|e| FileError::write(partial, e))?;
    file.set_len(start)
        .map_err(|e| FileError::write(partial, e))?;
    record_prefix(partial, start)?;
    Ok(file)
}

/// Records `prefix` as the complete prefix of `partial`.
fn record_prefix(partial: &Path, prefix: u64) -> Result<(), Error> {
    let record = prefix_path(partial);
    fs_err::write(&record, format!("{prefix}\n")).map_err(|e| FileError::write(&record, e))?;
    Ok(())
}

/// Feeds `partial` from byte `start` to `verifier`, up to each complete prefix `prefixes`
/// announces, recording each prefix once fed; returns the verifier when the announcements end.
fn hash_behind(
    partial: &Path,
    start: u64,
    prefixes: &std::sync::mpsc::Receiver<u64>,
    mut verifier: Verifier,
) -> Result<Verifier, Error> {
    let mut file = fs_err::File::open(partial).map_err(|e| FileError::read(partial, e))?;
    file.seek(SeekFrom::Start(start))
        .map_err(|e| FileError::read(partial, e))?;
    let mut buf = vec![0; 1 << 20];
    let mut fed = start;
    while let Ok(mut prefix) = prefixes.recv() {
        // Only the latest announcement matters.
        while let Ok(later) = prefixes.try_recv() {
            prefix = later;
        }
        while fed < prefix {
            let want = usize::try_from(prefix - fed).map_or(buf.len(), |n| n.min(buf.len()));
            let n = file
                .read(&mut buf[..want])
                .map_err(|e| FileError::read(partial, e))?;
            if n == 0 {
                return Err(FileError::read(
                    partial,
                    std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("ends at byte {fed}, before the {prefix} bytes written"),
                    ),
                )
                .into());
            }
            verifier.update(&buf[..n]);
            fed += n as u64;
        }
        record_prefix(partial, fed)?;
    }
    Ok(verifier)
}

#[cfg(test)]
mod tests {
    use super::Finished;

    #[test]
    fn the_prefix_grows_only_over_contiguous_ranges() {
        let mut f = Finished {
            beyond: std::collections::BTreeMap::new(),
            prefix: 10,
        };
        assert_eq!(f.add(20, 30), None);
        assert_eq!(f.add(30, 40), None);
        assert_eq!(f.add(10, 20), Some(40));
        assert!(f.beyond.is_empty());
        assert_eq!(f.add(50, 60), None);
        assert_eq!(f.prefix, 40);
    }
}
