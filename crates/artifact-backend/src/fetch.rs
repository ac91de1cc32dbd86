//! The streamed fetch: download, hash, decompress and unpack at once, into a temporary
//! directory beside the destination (a flattened fetch: into the shared tree where it can);
//! verify; then move into place.

use file_tree::FileError;
use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use artifacts::{ArchiveFormat, Extracted, Layout};
use bytes::Bytes;
use sha2::{Digest as _, Sha256};

use crate::{ArtifactBackend, Error};

mod withdraw;

/// The suffix of the directory beside an output directory `{parent}/{name}` that records which
/// extracted artifacts were verified, `{parent}/.{name}.rock-ci-fetch` ([`verified_dir`]): one
/// `{archive}.tree` per artifact, holding the digest its directory was unpacked from and the
/// entries the directory held then (type, permissions, size, modification time, link target).
/// Earlier versions kept only the digest, as `{archive}.sha256` (not trusted: the artifact is
/// unpacked again), and kept the records inside the output directory, as
/// `{output}/.rock-ci-fetch`.
pub const VERIFIED_DIR: &str = ".rock-ci-fetch";

/// Where the verified copies in `output_dir` are recorded: `.{name}.rock-ci-fetch` beside it,
/// so that the output holds only what the archives hold. `None` for a directory without a
/// parent (`/`).
pub fn verified_dir(output_dir: &Path) -> Option<PathBuf> {
    let absolute = fs_err::canonicalize(output_dir).unwrap_or_else(|_| output_dir.to_path_buf());
    let name = absolute.file_name()?.to_string_lossy().into_owned();
    Some(absolute.parent()?.join(format!(".{name}{VERIFIED_DIR}")))
}

/// Parts (one ranged GET, one whole small object, or 1 MiB of a local file) waiting between
/// the download and the unpacking thread.
const CHANNEL_PARTS: usize = 2;

/// What a streamed fetch produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The archive's file name.
    pub key: String,
    /// Its SHA-256.
    pub sha256: String,
    /// Whether a sidecar existed and matched.
    pub verified: bool,
    /// Compressed bytes streamed.
    pub bytes: u64,
    /// What was unpacked.
    pub extracted: Extracted,
    /// Where: the artifact's directory, or the flattened output directory.
    pub path: PathBuf,
}

/// Which artifact owns each path of a flattened output directory (for conflict detection);
/// share one between the artifacts of a fetch.
#[derive(Debug, Default)]
pub struct FlattenIndex {
    owners: Mutex<HashMap<PathBuf, Owner>>,
    /// Signalled whenever an artifact unpacking into the tree ends: its paths are kept, or
    /// taken away again.
    settled: std::sync::Condvar,
    /// The directories artifacts made in the tree as they unpacked into it, and by which.
    made_dirs: Mutex<HashMap<PathBuf, String>>,
    /// Held while one artifact is merged: merges are renames, quick, and never interleave (two
    /// artifacts creating the same directory at once would race).
    merging: Mutex<()>,
    /// Bootstrap: the relpaths met so far (each is cleared and marked once); guarded by
    /// `merging`.
    relpaths: Mutex<std::collections::HashSet<String>>,
    /// The paths other artifacts placed that an artifact holds too, with the same content, and
    /// by which: they stay, as theirs, when the one that placed them is withdrawn.
    shared: Mutex<HashMap<PathBuf, Vec<String>>>,
}

/// The artifact that placed a path of a flattened tree.
#[derive(Debug)]
struct Owner {
    key: String,
    /// Unpacked into the tree, not yet verified: kept or taken away when its unpacking ends.
    placing: bool,
}

impl Owner {
    /// Artifact `key`, verified.
    fn placed(key: &str) -> Self {
        Owner {
            key: key.to_owned(),
            placing: false,
        }
    }
}

/// `m` locked, whether or not a thread panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An artifact unpacking straight into a flattened tree ([`artifacts::extract_artifact_shared`]):
/// claims the paths it makes there, and takes what it made away again unless it is kept (an
/// artifact that turns out bad, a fetch dropped half-way: when the last handle goes).
struct Placing {
    key: String,
    root: PathBuf,
    index: Arc<FlattenIndex>,
    made: Mutex<Made>,
}

/// What a [`Placing`] made in the tree.
#[derive(Default)]
struct Made {
    /// Kept or taken away: nothing more is made in the tree.
    ended: bool,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl artifacts::SharedTree for Placing {
    fn create(
        &self,
        rel: &Path,
        create: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<bool> {
        // Held while the entry is made, so that taking everything away never misses one.
        let mut made = lock(&self.made);
        if made.ended {
            return Ok(false);
        }
        {
            let mut owners = lock(&self.index.owners);
            if owner_of(&owners, rel).is_some() {
                return Ok(false);
            }
            owners.insert(
                rel.to_path_buf(),
                Owner {
                    key: self.key.clone(),
                    placing: true,
                },
            );
        }
        match create() {
            Ok(()) => {
                made.files.push(rel.to_path_buf());
                Ok(true)
            }
            Err(e) => {
                let mut owners = lock(&self.index.owners);
                // Unless a merge placed its own entry there meanwhile.
                if owners.get(rel).is_some_and(|o| o.key == self.key) {
                    owners.remove(rel);
                }
                drop(owners);
                self.index.settled.notify_all();
                // Something there, or a directory another artifact made and took away again
                // meanwhile: the member goes the other way.
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotFound
                ) {
                    Ok(false)
                } else {
                    Err(e)
                }
            }
        }
    }

    fn made_dir(&self, rel: &Path) {
        lock(&self.made).dirs.push(rel.to_path_buf());
        lock(&self.index.made_dirs).insert(rel.to_path_buf(), self.key.clone());
    }
}

impl Placing {
    /// Artifact `key` about to unpack into the flattened tree `root`.
    fn new(key: &str, root: &Path, index: Arc<FlattenIndex>) -> Arc<Self> {
        Arc::new(Placing {
            key: key.to_owned(),
            root: root.to_path_buf(),
            index,
            made: Mutex::default(),
        })
    }

    /// The artifact was verified: what it made stays.
    fn keep(&self) {
        let mut made = lock(&self.made);
        made.ended = true;
        let mut owners = lock(&self.index.owners);
        for rel in &made.files {
            if let Some(owner) = owners.get_mut(rel).filter(|o| o.key == self.key) {
                owner.placing = false;
            }
        }
        drop(owners);
        self.index.settled.notify_all();
    }

    /// Takes away what the artifact made in the tree: its files, then the directories it made
    /// that are empty again (deepest first). Nothing once it was kept.
    fn undo(&self) {
        let mut made = lock(&self.made);
        if made.ended {
            return;
        }
        made.ended = true;
        let mut owners = lock(&self.index.owners);
        for rel in made.files.iter().rev() {
            if owners.get(rel).is_some_and(|o| o.key == self.key) {
                let path = self.root.join(rel);
                if let Err(e) = file_tree::remove_file(&path) {
                    tracing::warn!("Could not remove {} of {}: {e}", path.display(), self.key);
                }
                owners.remove(rel);
            }
        }
        drop(owners);
        self.index.settled.notify_all();
        let mut made_dirs = lock(&self.index.made_dirs);
        for rel in made.dirs.iter().rev() {
            // Another artifact may have put something there meanwhile: then it stays.
            if std::fs::remove_dir(self.root.join(rel)).is_ok() {
                made_dirs.remove(rel);
            }
        }
    }
}

impl Drop for Placing {
    fn drop(&mut self) {
        self.undo();
    }
}

/// The suffix of the marker file `fetch --bootstrap` leaves beside each relpath directory
/// (`{relpath}.prebuilt`): the build skips a subproject whose stage directory has one.
pub const PREBUILT_SUFFIX: &str = ".prebuilt";

type Part = Vec<Bytes>;

/// How a fetched archive is unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unpacking {
    /// Where the members land.
    pub layout: Layout,
    /// Decompress on a thread of its own, beside the thread writing the files: worth it when
    /// there are cores to spare (fewer archives unpacked at once than half the cores); it
    /// costs one more copy of the unpacked bytes.
    pub decoder_thread: bool,
    /// Threads the frames of a zstd archive of several frames are decoded on: the cores left
    /// to this archive by the others unpacked at once (1: one frame after the other, as a
    /// single-frame archive is decoded).
    pub frame_workers: usize,
}

impl From<Layout> for Unpacking {
    /// One archive at a time: its frames on every core.
    fn from(layout: Layout) -> Self {
        Unpacking {
            layout,
            decoder_thread: false,
            frame_workers: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        }
    }
}

/// Size of one block of decompressed bytes passed from a decoder thread to the writer.
const BLOCK: usize = 1 << 20;
/// Blocks in flight between a decoder thread and the writer.
const BLOCKS_IN_FLIGHT: usize = 4;

enum Decoded {
    Block(Vec<u8>, usize),
    End,
    Failed(std::io::Error),
}

/// The writer's side of a decoder thread: blocks in order; used blocks go back for reuse.
struct BlockReader {
    rx: std::sync::mpsc::Receiver<Decoded>,
    free: std::sync::mpsc::Sender<Vec<u8>>,
    block: Vec<u8>,
    len: usize,
    pos: usize,
    ended: bool,
}

impl Read for BlockReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.len {
            if self.ended {
                return Ok(0);
            }
            let used = std::mem::take(&mut self.block);
            if used.capacity() > 0 {
                let _ = self.free.send(used);
            }
            (self.block, self.len, self.pos) = match self.rx.recv() {
                Ok(Decoded::Block(block, len)) => (block, len, 0),
                Ok(Decoded::End) => {
                    self.ended = true;
                    (Vec::new(), 0, 0)
                }
                Ok(Decoded::Failed(e)) => return Err(e),
                Err(_) => return Err(std::io::Error::other("the decoder thread stopped")),
            };
        }
        let n = buf.len().min(self.len - self.pos);
        buf[..n].copy_from_slice(&self.block[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Decompresses `reader` into blocks sent to `tx` until the end, then takes (so the
/// download hashes) whatever follows the compressed stream. Stops quietly when the writer
/// is gone: its error tells why.
fn decode_blocks(
    format: ArchiveFormat,
    workers: usize,
    reader: &mut StreamReader,
    tx: &std::sync::mpsc::SyncSender<Decoded>,
    free: &std::sync::mpsc::Receiver<Vec<u8>>,
) {
    let result = (|| -> std::io::Result<bool> {
        let mut decoder = artifacts::decoder_on(format, &mut *reader, workers)?;
        loop {
            let mut block = free.try_recv().unwrap_or_else(|_| vec![0; BLOCK]);
            let mut filled = 0;
            while filled < BLOCK {
                match decoder.read(&mut block[filled..])? {
                    0 => break,
                    n => filled += n,
                }
            }
            if filled == 0 {
                break;
            }
            if tx.send(Decoded::Block(block, filled)).is_err() {
                return Ok(false);
            }
        }
        drop(decoder);
        std::io::copy(reader, &mut std::io::sink())?;
        Ok(true)
    })();
    let _ = tx.send(match result {
        Ok(true) => Decoded::End,
        Ok(false) => return,
        Err(e) => Decoded::Failed(e),
    });
}

/// Unpacks the archive `reader` streams into `dir`, decompressing on this thread or, with
/// `unpacking.decoder_thread`, on a second one. Everything after the archive's end is read
/// too, so that the download can hash it.
fn unpack(
    key: &str,
    format: ArchiveFormat,
    mut reader: StreamReader,
    dir: &Path,
    unpacking: Unpacking,
    placing: Option<&Placing>,
) -> Result<Extracted, Error> {
    let read_error = |e| artifacts::Error::archive_read(key, None, e);
    let extract = |tar: &mut dyn Read| match placing {
        Some(tree) => artifacts::extract_artifact_shared(key, tar, dir, &tree.root, tree),
        None => artifacts::extract_artifact(key, tar, dir, unpacking.layout),
    };
    if !unpacking.decoder_thread {
        let extracted = {
            let mut decoder = artifacts::decoder_on(format, &mut reader, unpacking.frame_workers)
                .map_err(read_error)?;
            let extracted = extract(&mut decoder)?;
            // To the end of the compressed stream: its checksum and completeness are checked
            // there, even where no sidecar vouches for the archive.
            std::io::copy(&mut decoder, &mut std::io::sink()).map_err(read_error)?;
            extracted
        };
        std::io::copy(&mut reader, &mut std::io::sink()).map_err(read_error)?;
        return Ok(extracted);
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel(BLOCKS_IN_FLIGHT);
        let (free_tx, free_rx) = std::sync::mpsc::channel();
        let workers = unpacking.frame_workers;
        scope.spawn(move || decode_blocks(format, workers, &mut reader, &tx, &free_rx));
        let mut blocks = BlockReader {
            rx,
            free: free_tx,
            block: Vec::new(),
            len: 0,
            pos: 0,
            ended: false,
        };
        let extracted = extract(&mut blocks)?;
        std::io::copy(&mut blocks, &mut std::io::sink()).map_err(read_error)?;
        Ok(extracted)
    })
}

/// The unpacking thread's view of the parts the download sends: the decompressor reads the
/// received buffers in place.
struct StreamReader {
    rx: tokio::sync::mpsc::Receiver<std::io::Result<Part>>,
    part: std::vec::IntoIter<Bytes>,
    current: Bytes,
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = buf.len().min(available.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for StreamReader {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        while self.current.is_empty() {
            if let Some(next) = self.part.next() {
                self.current = next;
                continue;
            }
            match self.rx.blocking_recv() {
                Some(Ok(part)) => self.part = part.into_iter(),
                Some(Err(e)) => return Err(e),
                None => break,
            }
        }
        Ok(&self.current)
    }

    fn consume(&mut self, n: usize) {
        let _ = self.current.split_to(n);
    }
}

/// The running SHA-256 and length of what the download sent on.
struct Digesting {
    /// `None` when the bytes were verified before they reached this stream (a spooled archive
    /// already checked against its sidecar as it was downloaded): only counted then.
    hasher: Option<Sha256>,
    total: u64,
}

impl Digesting {
    /// Hashes `part` on a blocking thread (pipelined with the unpacking of the part before)
    /// and hands it back.
    async fn update(mut self, part: Part) -> (Self, Part) {
        let Some(mut hasher) = self.hasher.take() else {
            self.total += part.iter().map(|b| b.len() as u64).sum::<u64>();
            return (self, part);
        };
        storage_backend::blocking(move || {
            for b in &part {
                hasher.update(b);
                self.total += b.len() as u64;
            }
            self.hasher = Some(hasher);
            (self, part)
        })
        .await
    }
}

/// The artifact directory name for an archive file name (`x_lib_generic.tar.zst` →
/// `x_lib_generic`): the name without its archive suffix, dots inside kept.
pub fn extract_dir_name(key: &str) -> &str {
    ArchiveFormat::from_file_name(key).map_or(key, |f| &key[..key.len() - f.extension().len()])
}

fn same_content(a: &Path, b: &Path) -> std::io::Result<bool> {
    let (ma, mb) = (fs_err::symlink_metadata(a)?, fs_err::symlink_metadata(b)?);
    if ma.file_type().is_symlink() || mb.file_type().is_symlink() {
        return Ok(ma.file_type().is_symlink()
            && mb.file_type().is_symlink()
            && fs_err::read_link(a)? == fs_err::read_link(b)?);
    }
    if ma.len() != mb.len() || !ma.is_file() || !mb.is_file() {
        return Ok(false);
    }
    let (mut fa, mut fb) = (fs_err::File::open(a)?, fs_err::File::open(b)?);
    let (mut ba, mut bb) = (vec![0; 1 << 16], vec![0; 1 << 16]);
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(true);
        }
        fb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

/// The artifact of this fetch that placed `rel`: its own entry, or that of a directory above it
/// that was moved in whole.
fn owner_of<'a>(owners: &'a HashMap<PathBuf, Owner>, rel: &Path) -> Option<&'a Owner> {
    rel.ancestors()
        .take_while(|p| !p.as_os_str().is_empty())
        .find_map(|p| owners.get(p))
}

/// What is at `dst` (the path `rel` of the tree), and the other artifact of this fetch that
/// placed it or a directory above it, once that artifact is no longer unpacking into the
/// tree (its paths are then kept or gone). With the owners locked.
fn settled<'a>(
    index: &'a FlattenIndex,
    rel: &Path,
    dst: &Path,
    key: &str,
) -> (
    std::sync::MutexGuard<'a, HashMap<PathBuf, Owner>>,
    Option<std::fs::Metadata>,
    Option<String>,
) {
    let mut owners = lock(&index.owners);
    loop {
        let existing = fs_err::symlink_metadata(dst).ok();
        match owner_of(&owners, rel) {
            Some(o) if o.placing && o.key != key => {
                owners = index
                    .settled
                    .wait(owners)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            o => {
                let other = o.filter(|o| o.key != key).map(|o| o.key.clone());
                return (owners, existing, other);
            }
        }
    }
}

/// Another artifact of this fetch that placed something at or below `rel`.
fn placed_below(
    index: &FlattenIndex,
    owners: &HashMap<PathBuf, Owner>,
    rel: &Path,
    key: &str,
) -> Option<String> {
    owners
        .iter()
        .find(|(p, o)| p.starts_with(rel) && o.key != key)
        .map(|(_, o)| o.key.clone())
        .or_else(|| {
            lock(&index.made_dirs)
                .iter()
                .find(|(p, k)| p.starts_with(rel) && *k != key)
                .map(|(_, k)| k.clone())
        })
}

impl FlattenIndex {
    /// Merges the unpacked tree `temp` of artifact `key` into `output`, one merge at a time,
    /// its paths withdrawn from the index when it fails.
    pub(crate) fn merge_in(&self, temp: &Path, output: &Path, key: &str) -> Result<(), Error> {
        let _one_at_a_time = lock(&self.merging);
        merge(temp, output, Path::new(""), key, self).inspect_err(|_| self.withdraw(output, key))
    }
}

/// Moves the tree `from` into `to`: a directory `to` does not have yet in one rename (all of
/// it then belongs to this artifact), else entry by entry. A path another artifact of this
/// fetch already put there must have the same content (else an error naming both artifacts;
/// one still unpacking into the tree is waited for), and the copy of the artifact whose key
/// sorts first stays; a path left by an earlier run is replaced.
pub(crate) fn merge(
    from: &Path,
    to: &Path,
    rel: &Path,
    key: &str,
    index: &FlattenIndex,
) -> Result<(), Error> {
    let dirs = NoReplace::open(&from.join(rel), &to.join(rel));
    for entry in fs_err::read_dir(from.join(rel)).map_err(|e| FileError::read(from, e))? {
        let entry = entry.map_err(|e| FileError::read(from, e))?;
        let rel_child = rel.join(entry.file_name());
        let (src, dst) = (from.join(&rel_child), to.join(&rel_child));
        let ty = entry.file_type().map_err(|e| FileError::read(&src, e))?;
        // Where the destination is free (nearly always) one call moves the entry, without
        // looking at the destination first.
        if dirs.rename(&entry.file_name(), &dst)? {
            index.own(rel_child, key);
            continue;
        }
        let (mut owners, existing, other) = settled(index, &rel_child, &dst, key);
        let conflict = |first: String| Error::FlattenConflict {
            path: rel_child.clone(),
            first,
            second: key.to_owned(),
        };
        if ty.is_dir() {
            match &existing {
                Some(m) if m.is_dir() => {
                    drop(owners);
                    merge(from, to, &rel_child, key, index)?;
                    continue;
                }
                Some(_) => {
                    if let Some(other) = other {
                        return Err(conflict(other));
                    }
                    file_tree::remove_file(&dst).map_err(|e| FileError::write(&dst, e))?;
                }
                None => {}
            }
            fs_err::rename(&src, &dst).map_err(|e| FileError::write(&dst, e))?;
            owners.insert(rel_child, Owner::placed(key));
            continue;
        }
        if let Some(m) = &existing {
            if let Some(other) = other {
                if !same_content(&src, &dst).map_err(|e| FileError::read(&dst, e))? {
                    return Err(conflict(other));
                }
                if key < other.as_str() {
                    // The copy of the artifact that sorts first is the one kept (its mode and
                    // mtime), whichever arrived first: the tree is the same on every run, and
                    // what `build_tarballs` writes.
                    file_tree::rename_replacing(&src, &dst)
                        .map_err(|e| FileError::write(&dst, e))?;
                    owners.insert(rel_child.clone(), Owner::placed(key));
                    drop(owners);
                    index.share(&rel_child, &other);
                } else {
                    drop(owners);
                    index.share(&rel_child, key);
                }
                continue;
            }
            if m.is_dir() {
                // Left by an earlier run, unless another artifact put something in it.
                if let Some(other) = placed_below(index, &owners, &rel_child, key) {
                    return Err(conflict(other));
                }
                file_tree::remove_tree(&dst).map_err(|e| FileError::write(&dst, e))?;
            }
        }
        // Over an earlier run's file, read-only ones included.
        file_tree::rename_replacing(&src, &dst).map_err(|e| FileError::write(&dst, e))?;
        owners.insert(rel_child, Owner::placed(key));
    }
    Ok(())
}

/// Renames between two directories that never replace an entry (`renameat2` with
/// `RENAME_NOREPLACE`, through handles of both, on Linux); elsewhere, or where the file system
/// refuses the flag, every rename is left to the general path.
struct NoReplace {
    #[cfg(target_os = "linux")]
    dirs: Option<(rustix::fd::OwnedFd, rustix::fd::OwnedFd)>,
}

impl NoReplace {
    fn open(from: &Path, to: &Path) -> Self {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{Mode, OFlags};
            let open = |p: &Path| {
                rustix::fs::open(
                    p,
                    OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
            };
            NoReplace {
                dirs: open(from).and_then(|f| Ok((f, open(to)?))).ok(),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (from, to);
            NoReplace {}
        }
    }

    /// Moves `name` unless the destination (`dst`, for errors) has an entry of that name:
    /// `true` when moved, `false` when there is one (or this cannot tell).
    fn rename(&self, name: &std::ffi::OsStr, dst: &Path) -> Result<bool, Error> {
        #[cfg(target_os = "linux")]
        if let Some((from, to)) = &self.dirs {
            use rustix::io::Errno;
            return match rustix::fs::renameat_with(
                from,
                name,
                to,
                name,
                rustix::fs::RenameFlags::NOREPLACE,
            ) {
                Ok(()) => Ok(true),
                Err(Errno::EXIST | Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => Ok(false),
                Err(e) => Err(FileError::write(dst, e.into()).into()),
            };
        }
        let _ = (name, dst);
        Ok(false)
    }
}

/// Moves the relpath trees of an artifact unpacked in `from` into `to` (`fetch --bootstrap`).
/// The first time a fetch meets a relpath, what an earlier build left at `{to}/{relpath}` is
/// removed (never what this fetch already placed there, so relpaths nested in one another keep
/// each other's files), its `.prebuilt` marker too.
fn bootstrap(
    from: &Path,
    to: &Path,
    relpaths: &[String],
    key: &str,
    index: &FlattenIndex,
) -> Result<(), Error> {
    for relpath in relpaths {
        let rel = Path::new(relpath.trim_end_matches('/'));
        if rel.as_os_str().is_empty() {
            continue;
        }
        let first_time = lock(&index.relpaths).insert(relpath.clone());
        let dest = to.join(rel);
        if first_time {
            let owners = lock(&index.owners);
            remove_unowned(to, rel, &owners)?;
            drop(owners);
            // The marker of an earlier fetch goes with the tree it vouched for; the new one is
            // written once every artifact is in place (FlattenIndex::write_prebuilt_markers).
            let marker = prebuilt_marker(&dest);
            if let Err(e) = fs_err::remove_file(&marker)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                return Err(FileError::write(&marker, e).into());
            }
        }
        if from.join(rel).is_dir() {
            // Each directory made is recorded: a failed artifact takes it away again.
            let mut made = PathBuf::new();
            for part in rel.components() {
                made.push(part);
                let dir = to.join(&made);
                match fs_err::create_dir(&dir) {
                    Ok(()) => index.made_dir(&made, key),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {}
                    Err(e) => return Err(FileError::write(&dir, e).into()),
                }
            }
            merge(from, to, rel, key, index)?;
        }
    }
    Ok(())
}

/// `{dir}.prebuilt`.
fn prebuilt_marker(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(PREBUILT_SUFFIX);
    PathBuf::from(name)
}

impl FlattenIndex {
    /// Records that artifact `key` placed `rel` (a directory with all it holds).
    fn own(&self, rel: PathBuf, key: &str) {
        lock(&self.owners).insert(rel, Owner::placed(key));
    }

    /// The relpaths a bootstrap fetch placed, sorted.
    pub fn relpaths(&self) -> Vec<String> {
        let mut out: Vec<String> = lock(&self.relpaths).iter().cloned().collect();
        out.sort();
        out
    }

    /// Writes the empty marker `{output_dir}/{relpath}.prebuilt` of every relpath a bootstrap
    /// fetch placed: call it once every artifact is in place, so that a marker always stands
    /// for a complete tree (an interrupted fetch leaves none). Returns the markers.
    pub fn write_prebuilt_markers(&self, output_dir: &Path) -> Result<Vec<PathBuf>, Error> {
        let mut out = Vec::new();
        for relpath in self.relpaths() {
            let rel = relpath.trim_end_matches('/');
            if rel.is_empty() {
                continue;
            }
            let marker = prebuilt_marker(&output_dir.join(rel));
            if let Some(parent) = marker.parent() {
                fs_err::create_dir_all(parent).map_err(|e| FileError::write(parent, e))?;
            }
            fs_err::write(&marker, b"").map_err(|e| FileError::write(&marker, e))?;
            out.push(marker);
        }
        Ok(out)
    }
}

/// Removes `{root}/{rel}` except the paths of `owners` (relative to `root`; a directory with
/// all it holds) and the directories leading to them.
fn remove_unowned(root: &Path, rel: &Path, owners: &HashMap<PathBuf, Owner>) -> Result<(), Error> {
    let path = root.join(rel);
    let Ok(meta) = fs_err::symlink_metadata(&path) else {
        return Ok(());
    };
    if owner_of(owners, rel).is_some() {
        return Ok(());
    }
    if !meta.is_dir() {
        return file_tree::remove_file(&path).map_err(|e| FileError::write(&path, e).into());
    }
    if !owners.keys().any(|owned| owned.starts_with(rel)) {
        return file_tree::remove_tree(&path).map_err(|e| FileError::write(&path, e).into());
    }
    for entry in fs_err::read_dir(&path).map_err(|e| FileError::read(&path, e))? {
        let entry = entry.map_err(|e| FileError::read(&path, e))?;
        remove_unowned(root, &rel.join(entry.file_name()), owners)?;
    }
    Ok(())
}

/// Where `key`'s verified, extracted copy in `output_dir` is recorded: its digest and its
/// entries.
fn verified_marker(records: Option<&Path>, key: &str) -> Option<PathBuf> {
    Some(records?.join(format!("{key}.tree")))
}

/// The record of earlier versions: the digest alone, trusted without a look at the tree.
fn legacy_marker(records: Option<&Path>, key: &str) -> Option<PathBuf> {
    Some(records?.join(format!("{key}.sha256")))
}

/// Records that `key`'s directory `tree` in place was unpacked from content with `sha256`,
/// with its entries as they are now (through a temporary file and a rename). The record only
/// saves a later fetch work: where it cannot be written (no parent, an unwritable parent) the
/// fetch goes on without it.
fn record_verified(records: Option<&Path>, key: &str, tree: &Path, sha256: &str) {
    let (Some(dir), Some(marker)) = (records, verified_marker(records, key)) else {
        return;
    };
    let written = fs_err::create_dir_all(dir)
        .map_err(|e| FileError::write(dir, e).into())
        .and_then(|()| crate::tree_record::write(&marker, tree, sha256));
    if let Err(e) = written {
        tracing::info!(
            "Not recording the verified copy of {key} (a later fetch unpacks it again): {e}"
        );
    }
}

/// How many archives may be unpacked at once, shared by the fetches given it
/// ([`ArtifactBackend::fetch_extracted_limited`]).
#[derive(Debug)]
pub struct UnpackSlots(tokio::sync::Semaphore);

impl UnpackSlots {
    /// `n` archives unpacked at once (at least 1).
    pub fn new(n: usize) -> Self {
        UnpackSlots(tokio::sync::Semaphore::new(n.max(1)))
    }

    /// A slot if one is free now.
    pub(crate) fn try_acquire(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.0.try_acquire().ok()
    }

    /// A slot, once one is free.
    pub(crate) async fn acquire(&self) -> tokio::sync::SemaphorePermit<'_> {
        self.0.acquire().await.expect("the slots are never closed")
    }
}

/// Removes the temporary `.{name}.*.partial` directories that interrupted fetches left in
/// `output_dir` (a missing directory has none), and the verification records that earlier
/// versions kept inside it (`{output}/.rock-ci-fetch`; they are now kept beside it).
pub fn remove_stale_partials(output_dir: &Path) -> Result<(), Error> {
    let legacy = output_dir.join(VERIFIED_DIR);
    if legacy.is_dir() {
        file_tree::remove_tree(&legacy).map_err(|e| FileError::write(&legacy, e))?;
    }
    let Ok(entries) = fs_err::read_dir(output_dir) else {
        return Ok(());
    };
    for entry in entries {
        let entry = entry.map_err(|e| FileError::read(output_dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = entry
            .file_type()
            .map_err(|e| FileError::read(entry.path(), e))?
            .is_dir();
        if name.starts_with('.') && name.ends_with(".partial") && is_dir {
            file_tree::remove_tree(&entry.path()).map_err(|e| FileError::write(entry.path(), e))?;
        }
    }
    Ok(())
}

impl ArtifactBackend {
    /// Whether `{output_dir}/{name}` holds artifact `key` as it is now: unpacked by an earlier
    /// verified fetch (recorded in [`verified_dir`]) from content whose digest the artifact's
    /// sidecar (or recorded SHA-256) still gives, and still holding exactly the entries
    /// recorded then (type, permissions, size, modification time, link target: one `lstat`
    /// per entry, nothing read again). Without a sidecar, a record, or with any difference in
    /// the tree (an entry missing, added or changed), nothing counts as current. A change of
    /// content that keeps an entry's size and modification time is not seen.
    pub async fn extracted_is_current(&self, key: &str, output_dir: &Path) -> Result<bool, Error> {
        let tree = output_dir.join(extract_dir_name(key));
        if !tree.is_dir() {
            return Ok(false);
        }
        let records = self.records_dir(output_dir);
        let Some(marker) = verified_marker(records.as_deref(), key) else {
            return Ok(false);
        };
        let recorded =
            storage_backend::blocking(move || crate::tree_record::unchanged_sha256(&marker, &tree))
                .await;
        let Some(recorded) = recorded else {
            return Ok(false);
        };
        Ok(self.expected_sha256(key).await?.as_deref() == Some(recorded.as_str()))
    }

    /// Streams artifact `key` into `output_dir`: downloaded (or read), hashed, decompressed
    /// and unpacked at once into a temporary directory beside the destination, verified
    /// against the `.sha256sum` sidecar (else the SHA-256 recorded with the object; with
    /// neither, [`Error::Unverifiable`] before anything is fetched unless
    /// [`ArtifactBackend::allow_unverified`]), then moved into place: `{output_dir}/{name}` for
    /// [`Layout::Full`] (replacing an earlier copy), merged into `output_dir` for
    /// [`Layout::Flatten`] (conflicts checked through `index`; the paths no other artifact of
    /// the fetch placed and nothing occupies are unpacked straight into `output_dir`, and
    /// taken away again when the artifact fails verification). No archive touches the disk;
    /// on any error nothing of this artifact is left in `output_dir`: an artifact whose merge
    /// fails (a conflict) is taken out of the tree again, but for the paths another artifact
    /// of the fetch placed or holds with the same content. `unpacking` is a [`Layout`] or an
    /// [`Unpacking`]. A verified [`Layout::Full`] copy is recorded in [`verified_dir`] (beside
    /// the output) so that [`ArtifactBackend::extracted_is_current`] knows it.
    ///
    /// `output_dir` is created when missing (with its parents).
    ///
    /// From S3, a fetch whose bytes arrived damaged (a digest that does not match, an archive
    /// that does not decode, a body cut short after the storage retries) is started again
    /// from scratch, up to the client's attempts, each retry logged.
    pub async fn fetch_extracted(
        &self,
        key: &str,
        output_dir: &Path,
        unpacking: impl Into<Unpacking>,
        index: Arc<FlattenIndex>,
    ) -> Result<Fetched, Error> {
        let unpacking: Unpacking = unpacking.into();
        self.again_if_damaged(key, || {
            self.fetch_extracted_once(key, output_dir, unpacking, index.clone(), None)
        })
        .await
    }

    /// [`ArtifactBackend::fetch_extracted`] with unpacking limited by `unpack`'s slots but the
    /// transfer not: with a permit free, the archive streams straight into place. Without one,
    /// an S3 archive is downloaded (verified, not synced) into `spool` meanwhile and unpacked
    /// from there once a permit frees, then deleted: a link that is slow per connection keeps
    /// as many transfers going as the caller allows, while only as many archives are unpacked
    /// at once as there are permits. A local archive is never copied: it waits for a permit
    /// and streams from where it lies. `spool` should be a temporary directory on the output's
    /// filesystem.
    pub async fn fetch_extracted_limited(
        &self,
        key: &str,
        output_dir: &Path,
        unpacking: impl Into<Unpacking>,
        index: Arc<FlattenIndex>,
        unpack: &UnpackSlots,
        spool: &Path,
    ) -> Result<Fetched, Error> {
        let unpacking: Unpacking = unpacking.into();
        if let Some(_permit) = unpack.try_acquire() {
            return self
                .fetch_extracted(key, output_dir, unpacking, index)
                .await;
        }
        // A local archive is read where it lies once a permit frees: a copy would only add
        // the writing and reading of every byte.
        if self.is_local() {
            let _permit = unpack.acquire().await;
            return self
                .fetch_extracted(key, output_dir, unpacking, index)
                .await;
        }
        let spooled = spool.join(key);
        let downloaded = self.download_artifact(key, &spooled).await?;
        let _permit = unpack.acquire().await;
        // Verified as it was downloaded: unpacked from the spool without hashing it again.
        let local = ArtifactBackend::local_dir(spool, self.root().clone())
            .record_verified_in(self.records_dir(output_dir));
        let result = local
            .fetch_extracted_once(key, output_dir, unpacking, index, Some(&downloaded))
            .await;
        for path in [spooled.clone(), spool.join(format!("{key}.sha256sum"))] {
            if let Err(e) = fs_err::remove_file(&path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                return Err(FileError::write(&path, e).into());
            }
        }
        result
    }

    async fn fetch_extracted_once(
        &self,
        key: &str,
        output_dir: &Path,
        unpacking: Unpacking,
        index: Arc<FlattenIndex>,
        downloaded: Option<&crate::Downloaded>,
    ) -> Result<Fetched, Error> {
        let layout = unpacking.layout;
        let format = ArchiveFormat::from_file_name(key).ok_or_else(|| {
            Error::Artifacts(artifacts::Error::UnknownArchiveFormat(PathBuf::from(key)))
        })?;
        fs_err::create_dir_all(output_dir).map_err(|e| FileError::write(output_dir, e))?;
        let expected = match downloaded {
            Some(_) => None,
            None => self.required_sha256(key).await?,
        };
        let temp = file_tree::temp_dir_in(output_dir, extract_dir_name(key))
            .map_err(|e| FileError::write(output_dir, e))?;
        // A flattened artifact unpacks straight into the tree where its paths are free; the
        // rest goes to `temp` and is merged once the artifact is verified.
        let placing =
            (layout == Layout::Flatten).then(|| Placing::new(key, output_dir, index.clone()));

        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Part>>(CHANNEL_PARTS);
        let unpacking_task = {
            let (key, dir) = (key.to_owned(), temp.path().to_path_buf());
            let reader = StreamReader {
                rx,
                part: Vec::new().into_iter(),
                current: Bytes::new(),
            };
            let placing = placing.clone();
            storage_backend::blocking(move || {
                unpack(&key, format, reader, &dir, unpacking, placing.as_deref())
            })
        };
        let (produced, unpacked) =
            tokio::join!(self.produce(key, tx, downloaded.is_none()), unpacking_task);
        // A download error explains an unpacking error that follows from it.
        let checked = produced.and_then(|digest| {
            let extracted = unpacked?;
            let sha256 = match downloaded {
                Some(d) => d.sha256.clone(),
                None => hex::encode(digest.hasher.unwrap_or_default().finalize()),
            };
            match &expected {
                Some(expected) if expected.sha256 != sha256 => Err(Error::ChecksumMismatch {
                    location: self.shown_location(key),
                    recorded_in: expected.source.clone(),
                    expected: expected.sha256.clone(),
                    actual: sha256,
                }),
                _ => Ok((extracted, sha256, digest.total)),
            }
        });
        // Into place, or (on any error) the temporary directory removed, off the async threads.
        let (output, key_owned) = (output_dir.to_path_buf(), key.to_owned());
        let verified = downloaded.map_or(expected.is_some(), |d| d.verified);
        let temp_path = temp.path().to_path_buf();
        let records = self.records_dir(output_dir);
        let placed = storage_backend::blocking(move || {
            // What a bad artifact unpacked into the tree goes at once.
            let (extracted, sha256, bytes) =
                checked.inspect_err(|_| placing.as_deref().map_or((), Placing::undo))?;
            let path = match layout {
                Layout::Full => {
                    let records = records.as_deref();
                    replace_copy(
                        temp,
                        &output,
                        &key_owned,
                        records,
                        verified.then_some(&sha256),
                    )?
                }
                Layout::Flatten => {
                    // Kept before the merge waits for anything: another artifact's merge may
                    // be waiting for this one's paths.
                    if let Some(placing) = &placing {
                        placing.keep();
                    }
                    let _one_at_a_time = lock(&index.merging);
                    merge(temp.path(), &output, Path::new(""), &key_owned, &index)
                        .inspect_err(|_| index.withdraw(&output, &key_owned))?;
                    output
                }
                Layout::Bootstrap => {
                    let _one_at_a_time = lock(&index.merging);
                    bootstrap(
                        temp.path(),
                        &output,
                        &extracted.relpaths,
                        &key_owned,
                        &index,
                    )
                    .inspect_err(|_| index.withdraw(&output, &key_owned))?;
                    output
                }
            };
            Ok::<_, Error>((extracted, sha256, bytes, path))
        })
        .await;
        remove_leftover(&temp_path);
        let (extracted, sha256, bytes, path) = placed?;
        Ok(Fetched {
            key: key.to_owned(),
            sha256,
            verified,
            bytes,
            extracted,
            path,
        })
    }

    /// Sends the archive's bytes to `tx` in parts, hashing each on the way unless `hash` is
    /// off, reporting progress. Stops early (without error) when the unpacker stops; its error
    /// tells why.
    async fn produce(
        &self,
        key: &str,
        tx: tokio::sync::mpsc::Sender<std::io::Result<Part>>,
        hash: bool,
    ) -> Result<Digesting, Error> {
        let mut digest = Digesting {
            hasher: hash.then(Sha256::new),
            total: 0,
        };
        match self {
            ArtifactBackend::Local(b) => {
                let path = b.base_path.join(key);
                if !path.is_file() {
                    return Err(Error::NotFound(path.display().to_string()));
                }
                let size = fs_err::metadata(&path)
                    .map_err(|e| FileError::read(&path, e))?
                    .len();
                let id = b.reporter.on_transfer_start(key, size);
                let mut file = tokio::fs::File::open(&path)
                    .await
                    .map_err(|e| FileError::read(&path, e))?;
                loop {
                    let mut buf = bytes::BytesMut::with_capacity(1 << 20);
                    let n = tokio::io::AsyncReadExt::read_buf(&mut file, &mut buf)
                        .await
                        .map_err(|e| FileError::read(&path, e))?;
                    if n == 0 {
                        break;
                    }
                    b.reporter.on_transfer_progress(id, n as u64);
                    let (hashed, part) = digest.update(vec![buf.freeze()]).await;
                    digest = hashed;
                    if tx.send(Ok(part)).await.is_err() {
                        return Ok(digest);
                    }
                }
                b.reporter.on_transfer_complete(id);
                Ok(digest)
            }
            #[cfg(feature = "s3")]
            ArtifactBackend::S3(b) => {
                use futures::StreamExt as _;
                let loc = b.root.artifact(key);
                let (size, etag) = crate::download::head_version(b, &loc).await?;
                let id = b.reporter.on_transfer_start(key, size);
                // Pinned to the version just seen.
                let on_bytes = |n| b.reporter.on_transfer_progress(id, n);
                let mut parts = crate::download::object_parts(b, &loc, (0, size), &etag, &on_bytes);
                while let Some(part) = parts.next().await {
                    let part = match part {
                        Ok(part) => part,
                        Err(e) => {
                            let _ = tx
                                .send(Err(std::io::Error::other("download interrupted")))
                                .await;
                            return Err(e);
                        }
                    };
                    let (hashed, part) = digest.update(part).await;
                    digest = hashed;
                    if tx.send(Ok(part)).await.is_err() {
                        return Ok(digest);
                    }
                }
                if digest.total != size {
                    return Err(Error::Truncated {
                        location: loc.s3_uri(),
                        received: digest.total,
                        expected: size,
                    });
                }
                b.reporter.on_transfer_complete(id);
                Ok(digest)
            }
        }
    }
}

/// Moves the unpacked `temp` to `{output}/{name}` in place of an earlier copy, recording
/// `verified_sha256` as the digest it was unpacked from when the copy was verified.
pub(crate) fn replace_copy(
    temp: tempfile::TempDir,
    output: &Path,
    key: &str,
    records: Option<&Path>,
    verified_sha256: Option<&String>,
) -> Result<PathBuf, Error> {
    let dest = output.join(extract_dir_name(key));
    // The record of the copy being replaced goes first: it must never vouch for what
    // replaces it.
    forget_verified(records, key)?;
    if fs_err::symlink_metadata(&dest).is_ok() {
        file_tree::remove_tree(&dest).map_err(|e| FileError::write(&dest, e))?;
    }
    fs_err::rename(temp.path(), &dest).map_err(|e| FileError::write(&dest, e))?;
    let _moved = temp.keep();
    if let Some(sha256) = verified_sha256 {
        record_verified(records, key, &dest, sha256);
    }
    Ok(dest)
}

/// Removes the record that `key`'s copy in `output` was verified, if there is one.
fn forget_verified(records: Option<&Path>, key: &str) -> Result<(), Error> {
    for marker in [verified_marker(records, key), legacy_marker(records, key)]
        .into_iter()
        .flatten()
    {
        if let Err(e) = fs_err::remove_file(&marker)
            && !matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            )
        {
            return Err(FileError::write(&marker, e).into());
        }
    }
    Ok(())
}

/// Removes what is left of a temporary extraction directory (all of it after an error, the
/// emptied directories after a merge), read-only directories included, which the temporary
/// directory's own clean-up cannot remove for an ordinary user.
fn remove_leftover(temp: &Path) {
    if fs_err::symlink_metadata(temp).is_ok() {
        let _ = file_tree::remove_tree(temp);
    }
}
