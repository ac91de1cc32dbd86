//! patchelf's job in-process (spec `python-packaging-and-elf.md` §10): read SONAME, RPATH,
//! RUNPATH, NEEDED and the interpreter of 32- and 64-bit ELF files of either byte order;
//! classify files as libmagic would for the packaging rules; set or extend the search path
//! (optionally forcing `DT_RPATH`), shrink or remove it, set the SONAME and replace NEEDED
//! entries.
//!
//! Tables are found through the program headers (`PT_DYNAMIC`, `DT_STRTAB`), so files whose
//! section headers were stripped work too. When a string does not fit, the string table is
//! copied into a new `PT_LOAD` at the end of the file (the program header table grows in place
//! or moves there, `PT_PHDR` following it). Every patched image is parsed back and checked
//! before [`patch_file`] writes it; on any error the file is unchanged. Only regular files are
//! read, and a replaced file keeps its mode, owner, group and extended attributes.
//!
//! ```no_run
//! let mut edit = rock_ci_elf_patch::Edit::default();
//! edit.add_rpath = vec!["$ORIGIN/../../_rocm_sdk_core/lib".into()];
//! edit.force_rpath = true;
//! rock_ci_elf_patch::patch_file("lib/librocblas.so.5".as_ref(), &edit)?;
//! # Ok::<(), rock_ci_elf_patch::Error>(())
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

mod batch;
mod classify;
mod displace;
mod file;
mod mapped;
mod parse;
mod refs;
mod shrink;
mod symbols;
mod verify;
mod write;

// The fixtures of these tests are ELF programs and libraries built with `cc`, loaded and run
// after the edit: about Linux itself, so not built for other systems.
#[cfg(all(test, unix))]
mod layout_tests;
#[cfg(test)]
mod portable_tests;
#[cfg(all(test, unix))]
mod tests;

use std::path::{Path, PathBuf};

pub use batch::{Print, print_values, run_files};
pub use classify::{FileType, classify_bytes, file_soname, file_type};
pub use mapped::MappedFile;
pub use parse::{Class, Elf, Endian, is_elf};
pub use write::{Edit, combined_search_path, patch};

/// What is wrong with an ELF image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElfError {
    /// No ELF magic.
    #[error("not an ELF file")]
    NotElf,
    /// A structure reaches past the end of the file.
    #[error("truncated ELF file (a structure at offset {0:#x} reaches past its end)")]
    Truncated(u64),
    /// Inconsistent headers or tables.
    #[error("malformed ELF file: {0}")]
    Malformed(String),
    /// The file has no dynamic section (a static executable, an object file).
    #[error("no dynamic section (statically linked or not a linked file)")]
    NoDynamic,
    /// A layout this crate does not edit.
    #[error("unsupported ELF layout: {0}")]
    Unsupported(String),
    /// The patched image failed a check; nothing was written.
    #[error("the patched file failed verification, nothing was written: {0}")]
    Verification(String),
}

/// An error about a file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing failed. The message is the path; the cause is the source.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file's contents are not what the operation needs. The message is the path; the
    /// cause is the source.
    #[error("{}", path.display())]
    Elf {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: ElfError,
    },
    /// The path is a FIFO, a device, a directory or a socket: refused before it is opened.
    #[error("{}: not a regular file ({kind})", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a FIFO", "a character device", …).
        kind: &'static str,
    },
    /// `--print-interpreter` of a file without `PT_INTERP`.
    #[error("{}: no program interpreter", path.display())]
    NoInterpreter {
        /// The file.
        path: PathBuf,
    },
    /// A printed value could not be written.
    #[error("cannot write the printed value")]
    Output(#[source] std::io::Error),
    /// Several files of a [`run_files`] failed; each error in order, with its causes.
    #[error("{} files failed:\n  {}", .0.len(), Failures(.0))]
    Failed(Vec<Error>),
}

/// The errors of [`Error::Failed`], one per line.
struct Failures<'a>(&'a [Error]);

impl std::fmt::Display for Failures<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n  ")?;
            }
            f.write_str(&e.report())?;
        }
        Ok(())
    }
}

impl Error {
    /// The message and its causes, joined with `: ` (`{path}: {why}`): the one-line report of
    /// a tool that prints no chain of its own.
    pub fn report(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }

    fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The ELF problem, if this is one.
    pub fn elf(&self) -> Option<&ElfError> {
        match self {
            Error::Elf { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What [`read_file`] found in a file's dynamic section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicInfo {
    /// `DT_SONAME`.
    pub soname: Option<String>,
    /// `DT_RPATH`.
    pub rpath: Option<String>,
    /// `DT_RUNPATH`.
    pub runpath: Option<String>,
    /// `DT_NEEDED`, in order.
    pub needed: Vec<String>,
    /// `PT_INTERP`.
    pub interpreter: Option<String>,
}

impl DynamicInfo {
    /// What `patchelf --print-rpath` prints: `DT_RUNPATH` if present, else `DT_RPATH`.
    pub fn search_path(&self) -> Option<&str> {
        self.runpath.as_deref().or(self.rpath.as_deref())
    }
}

/// Reads the dynamic facts of the ELF file at `path` (all empty for a static file). Anything
/// but a regular file (or a symlink to one) is refused before it is opened.
pub fn read_file(path: &Path) -> Result<DynamicInfo, Error> {
    let (data, _) = file::read_regular(path)?;
    read_bytes(&data).map_err(|source| Error::Elf {
        path: path.to_path_buf(),
        source,
    })
}

/// [`read_file`] on bytes.
pub fn read_bytes(data: &[u8]) -> Result<DynamicInfo, ElfError> {
    let elf = Elf::parse(data)?;
    Ok(DynamicInfo {
        soname: elf.soname()?,
        rpath: elf.rpath()?,
        runpath: elf.runpath()?,
        needed: elf.needed()?,
        interpreter: elf.interpreter()?,
    })
}

/// Applies `edit` to the file at `path` (a symlink is followed: its target is patched).
/// Returns whether anything changed; on error the file is untouched. See [`patch_file_to`].
pub fn patch_file(path: &Path, edit: &Edit) -> Result<bool, Error> {
    patch_file_to(path, None, edit)
}

/// Applies `edit` to `input` and writes the result to `output`, or over `input` when `output`
/// is `None` or names the same file. Only regular files are read (anything else is refused
/// before it is opened), and nothing is written until the new image is complete and verified
/// in memory: on error neither file changes, and an `output` that is another file is written
/// even when the edit changes nothing (as patchelf does).
///
/// The file written is the one the path names, symlinks followed to their end: a symlink's
/// target is replaced, not the link, and a dangling symlink's target is created. An `output`
/// that is a hard link of `input` is replaced under its own name (the input's name keeps the
/// old contents). An existing file is written only when this user may write it (`access(2)`
/// with `W_OK`), whatever the directory allows.
///
/// A file is replaced by a temporary file beside it renamed over it, with the replaced file's
/// mode, owner, group and extended attributes (a new `output` gets `input`'s mode). Where the
/// directory does not allow that (read-only, or an owner this user cannot give), the file is
/// rewritten in place. Returns whether the image changed.
#[expect(
    clippy::disallowed_methods,
    reason = "std's errors: the path goes into `Error::Io` once, fs_err would name it again in the cause"
)]
pub fn patch_file_to(input: &Path, output: Option<&Path>, edit: &Edit) -> Result<bool, Error> {
    let (data, meta) = file::read_regular(input)?;
    let patched = patch(&data, edit).map_err(|source| Error::Elf {
        path: input.to_path_buf(),
        source,
    })?;
    let changed = patched.is_some();
    // The file the named path reaches: through symlinks, dangling ones included (their target
    // is created), so that the result is always read back under the name given.
    let named = output.unwrap_or(input);
    let target = file::write_target(named)?;
    let dest_meta = match std::fs::metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(named, e)),
    };
    if let Some(m) = &dest_meta {
        file::refuse_irregular(named, m)?;
    }
    let over_input = dest_meta
        .as_ref()
        .is_some_and(|m| file::same_file(&target, m, input, &meta));
    if over_input && !changed {
        return Ok(false);
    }
    let bytes = patched.as_deref().unwrap_or(&data);
    let old: &[u8] = if over_input { &data } else { &[] };
    file::replace(&target, old, bytes, dest_meta.as_ref(), &meta)?;
    Ok(changed)
}

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
