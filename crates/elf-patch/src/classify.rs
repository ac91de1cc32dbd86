//! File classification of the packaging rules (spec §10.1), without libmagic: the extension
//! short-cuts first, then the ELF header (`ET_EXEC` → exe; `ET_DYN` → exe when `DT_FLAGS_1`
//! has `DF_1_PIE`, as libmagic ≥ 5.36 reports, else so), then `!<arch>` archives.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use object::elf;

use crate::parse::{Class, Codec, Endian, Phdr};

/// What a file is, for the packaging rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FileType {
    /// A symbolic link (not followed).
    Symlink,
    /// A directory.
    Dir,
    /// `.txt`, `.h`, `.hpp`.
    Text,
    /// GPU code objects (`.hsaco`, `.co`).
    Hsaco,
    /// `.lib` or an `ar` archive.
    Ar,
    /// An executable: `.exe`, `ET_EXEC`, or a PIE `ET_DYN`.
    Exe,
    /// A shared object: `ET_DYN` without `DF_1_PIE`.
    So,
    /// Anything else.
    Other,
}

impl FileType {
    /// The reference's name for the type (`symlink`, `dir`, `text`, `hsaco`, `ar`, `exe`,
    /// `so`, `other`).
    pub fn as_str(self) -> &'static str {
        match self {
            FileType::Symlink => "symlink",
            FileType::Dir => "dir",
            FileType::Text => "text",
            FileType::Hsaco => "hsaco",
            FileType::Ar => "ar",
            FileType::Exe => "exe",
            FileType::So => "so",
            FileType::Other => "other",
        }
    }
}

/// The extension short-cuts (rules 3–6), or `None`. Case-sensitive, as in the reference.
#[allow(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the reference compares extensions case-sensitively"
)]
fn by_name(name: &str) -> Option<FileType> {
    let ends = |exts: &[&str]| exts.iter().any(|e| name.ends_with(e));
    if ends(&[".txt", ".h", ".hpp"]) {
        Some(FileType::Text)
    } else if ends(&[".hsaco", ".co"]) {
        Some(FileType::Hsaco)
    } else if name.ends_with(".lib") {
        Some(FileType::Ar)
    } else if name.ends_with(".exe") {
        Some(FileType::Exe)
    } else {
        None
    }
}

/// Random access to the bytes of a file or a buffer.
trait Source {
    fn read_range(&mut self, offset: u64, len: u64) -> Option<Vec<u8>>;
}

impl Source for &[u8] {
    fn read_range(&mut self, offset: u64, len: u64) -> Option<Vec<u8>> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.get(start..end).map(<[u8]>::to_vec)
    }
}

impl Source for fs_err::File {
    fn read_range(&mut self, offset: u64, len: u64) -> Option<Vec<u8>> {
        if len > 1 << 30 {
            return None;
        }
        self.seek(SeekFrom::Start(offset)).ok()?;
        let mut buf = vec![0; usize::try_from(len).ok()?];
        self.read_exact(&mut buf).ok()?;
        Some(buf)
    }
}

/// The content rules (8–11) on a source's bytes.
fn by_content(src: &mut dyn Source) -> FileType {
    let Some(head) = src.read_range(0, 64).or_else(|| src.read_range(0, 52)) else {
        return match src.read_range(0, 8) {
            Some(h) if h == b"!<arch>\n" => FileType::Ar,
            _ => FileType::Other,
        };
    };
    if head.starts_with(b"!<arch>\n") {
        return FileType::Ar;
    }
    let Some(c) = codec_of(&head) else {
        return FileType::Other;
    };
    match c.u16(&head, 16) {
        Ok(elf::ET_EXEC) => FileType::Exe,
        Ok(elf::ET_DYN) if is_pie(c, &head, src) => FileType::Exe,
        Ok(elf::ET_DYN) => FileType::So,
        _ => FileType::Other,
    }
}

/// The byte order and class of an ELF header, if `head` is one.
fn codec_of(head: &[u8]) -> Option<Codec> {
    if !crate::is_elf(head) || head.len() < 6 {
        return None;
    }
    let class = match head[4] {
        elf::ELFCLASS32 => Class::Elf32,
        elf::ELFCLASS64 => Class::Elf64,
        _ => return None,
    };
    let endian = match head[5] {
        elf::ELFDATA2LSB => Endian::Little,
        elf::ELFDATA2MSB => Endian::Big,
        _ => return None,
    };
    Some(Codec { class, endian })
}

/// Dynamic entries as `(tag, value)`.
type DynEntries = Vec<(u64, u64)>;

/// The program headers and the dynamic entries (up to `DT_NULL`) of an ELF source, read
/// piece by piece.
fn dynamic_of(c: Codec, head: &[u8], src: &mut dyn Source) -> Option<(Vec<Phdr>, DynEntries)> {
    let w = c.word_size();
    let (Ok(phoff), Ok(phentsize), Ok(phnum)) = (
        c.word(head, 24 + w),
        c.u16(head, 24 + 3 * w + 6),
        c.u16(head, 24 + 3 * w + 8),
    ) else {
        return None;
    };
    let (phentsize, phnum) = (u64::from(phentsize), u64::from(phnum));
    let table = src.read_range(phoff, phentsize * phnum)?;
    let phdrs: Vec<Phdr> = (0..phnum)
        .filter_map(|i| Phdr::read(c, &table, i * phentsize).ok())
        .collect();
    let dynamic = phdrs.iter().find(|p| p.p_type == elf::PT_DYNAMIC)?;
    let raw = src.read_range(dynamic.offset, dynamic.filesz)?;
    let mut entries = Vec::new();
    let mut at = 0;
    while let (Ok(tag), Ok(value)) = (c.word(&raw, at), c.word(&raw, at + w)) {
        if tag == u64::from(elf::DT_NULL) {
            break;
        }
        entries.push((tag, value));
        at += 2 * w;
    }
    Some((phdrs, entries))
}

/// Whether the dynamic section of an `ET_DYN` file has `DF_1_PIE`.
fn is_pie(c: Codec, head: &[u8], src: &mut dyn Source) -> bool {
    dynamic_of(c, head, src).is_some_and(|(_, entries)| {
        entries
            .iter()
            .find(|(t, _)| *t == u64::from(elf::DT_FLAGS_1))
            .is_some_and(|(_, v)| v & u64::from(elf::DF_1_PIE) != 0)
    })
}

/// The `DT_SONAME` of the ELF file at `path`, reading only its headers, dynamic section and
/// the name itself (not the whole file); `None` for files without one or that are not ELF.
pub fn file_soname(path: &Path) -> std::io::Result<Option<String>> {
    let invalid = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    let mut file = fs_err::File::open(path)?;
    let src: &mut dyn Source = &mut file;
    let Some(head) = src.read_range(0, 64).or_else(|| src.read_range(0, 52)) else {
        return Ok(None);
    };
    let Some(c) = codec_of(&head) else {
        return Ok(None);
    };
    let Some((phdrs, entries)) = dynamic_of(c, &head, src) else {
        return Ok(None);
    };
    let value = |tag: u32| {
        entries
            .iter()
            .find(|(t, _)| *t == u64::from(tag))
            .map(|(_, v)| *v)
    };
    let Some(name) = value(elf::DT_SONAME) else {
        return Ok(None);
    };
    let (Some(strtab), Some(strsz)) = (value(elf::DT_STRTAB), value(elf::DT_STRSZ)) else {
        return Err(invalid("dynamic section without DT_STRTAB/DT_STRSZ"));
    };
    if name >= strsz {
        return Err(invalid("SONAME offset outside the string table"));
    }
    let table = phdrs
        .iter()
        .filter(|p| p.p_type == elf::PT_LOAD)
        .find_map(|p| p.file_offset(strtab, strsz))
        .ok_or_else(|| invalid("string table outside the loaded segments"))?;
    let rest = strsz - name;
    let bytes = src
        .read_range(table + name, rest.min(4096))
        .or_else(|| src.read_range(table + name, rest))
        .ok_or_else(|| invalid("truncated string table"))?;
    let end = bytes
        .iter()
        .position(|b| *b == 0)
        .ok_or_else(|| invalid("SONAME not terminated"))?;
    Ok(Some(String::from_utf8_lossy(&bytes[..end]).into_owned()))
}

/// Classifies the file at `path` (spec §10.1, a non-Windows host): the link or directory
/// itself first, then the name, then the first bytes, the program headers and the dynamic
/// section. An unreadable file is an [`Error::Io`](crate::Error::Io) naming it.
#[expect(
    clippy::disallowed_methods,
    reason = "std's errors: the path goes into `Error::Io` once, fs_err would name it again in the cause"
)]
pub fn file_type(path: &Path) -> Result<FileType, crate::Error> {
    let io = |source| crate::Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    if meta.file_type().is_symlink() {
        return Ok(FileType::Symlink);
    }
    if meta.is_dir() {
        return Ok(FileType::Dir);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if let Some(t) = by_name(&name) {
        return Ok(t);
    }
    let mut file = fs_err::File::from_parts(std::fs::File::open(path).map_err(io)?, path);
    Ok(by_content(&mut file))
}

/// [`file_type`] for a regular file named `name` with contents `data`.
pub fn classify_bytes(name: &str, data: &[u8]) -> FileType {
    by_name(name).unwrap_or_else(|| by_content(&mut { data }))
}
