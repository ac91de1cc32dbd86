//! patchelf's job in-process (spec `python-packaging-and-elf.md` §10): read SONAME, RPATH,
//! RUNPATH, NEEDED and the interpreter of 32- and 64-bit ELF files of either byte order;
//! classify files as libmagic would for the packaging rules; set or extend the search path
//! (optionally forcing `DT_RPATH`), set the SONAME and replace NEEDED entries.
//!
//! Tables are found through the program headers (`PT_DYNAMIC`, `DT_STRTAB`), so files whose
//! section headers were stripped work too. When a string does not fit, the string table is
//! copied into a new `PT_LOAD` at the end of the file (the program header table grows in place
//! or moves there, `PT_PHDR` following it). Every patched image is parsed back and checked
//! before [`patch_file`] renames it over the original; on any error the file is unchanged.
//!
//! ```no_run
//! let edit = elf_patch::Edit {
//!     add_rpath: vec!["$ORIGIN/../../_rocm_sdk_core/lib".into()],
//!     force_rpath: true,
//!     ..Default::default()
//! };
//! elf_patch::patch_file("lib/librocblas.so.5".as_ref(), &edit)?;
//! # Ok::<(), elf_patch::Error>(())
//! ```

mod classify;
mod parse;
mod refs;
mod verify;
mod write;

#[cfg(test)]
mod tests;

use std::io::Write as _;
use std::path::{Path, PathBuf};

pub use classify::{FileType, classify_bytes, file_soname, file_type};
pub use parse::{Class, Elf, Endian, is_elf};
pub use write::{Edit, combined_search_path, patch};

/// What is wrong with an ELF image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
pub enum Error {
    /// Reading or writing failed.
    #[error("{}: {reason}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
    /// The file's contents are not what the operation needs.
    #[error("{}: {reason}", path.display())]
    Elf {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: ElfError,
    },
}

impl Error {
    fn io(path: &Path, reason: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            reason,
        }
    }

    /// The ELF problem, if this is one.
    pub fn elf(&self) -> Option<&ElfError> {
        match self {
            Error::Elf { reason, .. } => Some(reason),
            Error::Io { .. } => None,
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

/// Reads the dynamic facts of the ELF file at `path` (all empty for a static file).
pub fn read_file(path: &Path) -> Result<DynamicInfo, Error> {
    let data = fs_err::read(path).map_err(|e| Error::io(path, e))?;
    read_bytes(&data).map_err(|reason| Error::Elf {
        path: path.to_path_buf(),
        reason,
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

/// Applies `edit` to the file at `path` (a symlink is followed: its target is patched). The
/// result is verified, written to a temporary file beside the target with the same
/// permissions, and renamed over it. Returns whether anything changed; on error the file is
/// untouched.
pub fn patch_file(path: &Path, edit: &Edit) -> Result<bool, Error> {
    let meta = fs_err::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    let (target, permissions) = if meta.file_type().is_symlink() {
        let target = fs_err::canonicalize(path).map_err(|e| Error::io(path, e))?;
        let meta = fs_err::metadata(&target).map_err(|e| Error::io(&target, e))?;
        (target, meta.permissions())
    } else {
        (path.to_path_buf(), meta.permissions())
    };
    let data = fs_err::read(&target).map_err(|e| Error::io(path, e))?;
    let patched = patch(&data, edit).map_err(|reason| Error::Elf {
        path: path.to_path_buf(),
        reason,
    })?;
    let Some(patched) = patched else {
        return Ok(false);
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".elf-patch")
        .permissions(permissions)
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    temp.write_all(&patched)
        .map_err(|e| Error::io(temp.path(), e))?;
    temp.persist(&target)
        .map_err(|e| Error::io(&target, e.error))?;
    Ok(true)
}
