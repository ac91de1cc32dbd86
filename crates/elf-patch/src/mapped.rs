//! Editing a large file without holding it twice: the file is mapped, so that parsing and
//! planning bring into memory only the pages of the structures they read; the edit is written
//! into one copy read from the file, and the bytes the edit must leave alone are compared with
//! the file piece by piece. Memory: the edited copy and the structures, not two images.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use crate::write::{Edit, Original, patch_parsed};
use crate::{Elf, ElfError, Error};

/// A regular file mapped for reading.
pub struct MappedFile {
    path: PathBuf,
    file: std::fs::File,
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps the regular file at `path` (anything else is refused before it is opened). Nothing
    /// may write the file while it is mapped: a file shortened meanwhile makes reading its lost
    /// pages fault. For files no other program changes, such as a build's staged artifacts.
    #[expect(
        clippy::disallowed_methods,
        reason = "std's errors: the path goes into `Error::Io` once, fs_err would name it again in the cause"
    )]
    pub fn open(path: &Path) -> Result<Self, Error> {
        let io = |e| Error::io(path, e);
        crate::file::refuse_irregular(path, &std::fs::metadata(path).map_err(io)?)?;
        let file = std::fs::File::open(path).map_err(io)?;
        // The path may have been replaced between the two looks: check what was opened.
        crate::file::refuse_irregular(path, &file.metadata().map_err(io)?)?;
        #[expect(
            unsafe_code,
            reason = "a mapping is the only way to read a file's pages only as they are looked at"
        )]
        // SAFETY: the mapping is read-only and private to this value; the caller promises that
        // nothing writes the file meanwhile (documented above). A change would show in the
        // bytes read, not break memory safety; a shortened file would fault (SIGBUS).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Ok(MappedFile {
            path: path.to_path_buf(),
            file,
            map,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// [`crate::patch`] of the file: the edited image, `None` when the edit changes nothing.
    /// The image is a copy read from the file; the file is not written.
    pub fn patch(&self, edit: &Edit) -> Result<Option<Vec<u8>>, Error> {
        let failed = |f| match f {
            Failure::Elf(source) => Error::Elf {
                path: self.path.clone(),
                source,
            },
            Failure::Io(e) => Error::io(&self.path, e),
        };
        let elf = Elf::parse(&self.map).map_err(|e| failed(Failure::Elf(e)))?;
        Ok(patch_parsed(&elf, edit, &Reread(self))
            .map_err(failed)?
            .map(|(out, _)| out))
    }
}

/// Why an edit of a mapped file failed.
enum Failure {
    Elf(ElfError),
    Io(std::io::Error),
}

impl From<ElfError> for Failure {
    fn from(e: ElfError) -> Self {
        Failure::Elf(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Io(e)
    }
}

/// The bytes of a mapped file, read again through its handle.
struct Reread<'a>(&'a MappedFile);

impl Original for Reread<'_> {
    type Error = Failure;

    fn copy(&self) -> Result<Vec<u8>, Failure> {
        let mut out = Vec::with_capacity(self.0.map.len());
        (&self.0.file).seek(SeekFrom::Start(0))?;
        (&self.0.file).read_to_end(&mut out)?;
        Ok(out)
    }

    fn holds(&self, at: u64, bytes: &[u8]) -> Result<bool, Failure> {
        const PIECE: usize = 1 << 20;
        let mut piece = vec![0; bytes.len().min(PIECE)];
        (&self.0.file).seek(SeekFrom::Start(at))?;
        for want in bytes.chunks(PIECE) {
            let got = &mut piece[..want.len()];
            match (&self.0.file).read_exact(got) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
                Err(e) => return Err(e.into()),
            }
            if got != want {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

// Real libraries of the machine the tests run on.
#[cfg(all(test, unix))]
mod tests;
