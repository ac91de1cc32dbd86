//! The ELF structures this crate reads and rewrites: header, program headers, section headers
//! and the dynamic section, for 32- and 64-bit files of either byte order.

use crate::ElfError;
use object::elf;

/// Dynamic tags whose value is an offset into the dynamic string table.
pub(crate) const STRING_TAGS: [u32; 9] = [
    elf::DT_NEEDED,
    elf::DT_SONAME,
    elf::DT_RPATH,
    elf::DT_RUNPATH,
    elf::DT_AUXILIARY,
    elf::DT_FILTER,
    elf::DT_CONFIG,
    elf::DT_DEPAUDIT,
    elf::DT_AUDIT,
];

/// Whether the entry tag `tag` (a 64-bit `d_tag` as read) is one of `tags` (`object::elf`'s
/// `DT_*`, 32-bit).
pub(crate) fn tag_in(tag: u64, tags: &[u32]) -> bool {
    tags.iter().any(|t| u64::from(*t) == tag)
}

/// 32- or 64-bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `ELFCLASS32`.
    Elf32,
    /// `ELFCLASS64`.
    Elf64,
}

/// Byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// `ELFDATA2LSB`.
    Little,
    /// `ELFDATA2MSB`.
    Big,
}

/// Reads and writes fixed-width fields in a file's class and byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Codec {
    pub(crate) class: Class,
    pub(crate) endian: Endian,
}

fn field<const N: usize>(data: &[u8], off: u64) -> Result<[u8; N], ElfError> {
    usize::try_from(off)
        .ok()
        .and_then(|o| data.get(o..o.checked_add(N)?))
        .and_then(|s| s.try_into().ok())
        .ok_or(ElfError::Truncated(off))
}

impl Codec {
    pub(crate) fn u16(self, data: &[u8], off: u64) -> Result<u16, ElfError> {
        let b = field::<2>(data, off)?;
        Ok(match self.endian {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        })
    }

    pub(crate) fn u32(self, data: &[u8], off: u64) -> Result<u32, ElfError> {
        let b = field::<4>(data, off)?;
        Ok(match self.endian {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    }

    pub(crate) fn u64(self, data: &[u8], off: u64) -> Result<u64, ElfError> {
        let b = field::<8>(data, off)?;
        Ok(match self.endian {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        })
    }

    /// An address-sized field (`ElfN_Addr`, `ElfN_Off`, `ElfN_Xword`/`Word`).
    pub(crate) fn word(self, data: &[u8], off: u64) -> Result<u64, ElfError> {
        match self.class {
            Class::Elf32 => self.u32(data, off).map(u64::from),
            Class::Elf64 => self.u64(data, off),
        }
    }

    pub(crate) fn word_size(self) -> u64 {
        match self.class {
            Class::Elf32 => 4,
            Class::Elf64 => 8,
        }
    }

    fn put(self, data: &mut [u8], off: u64, le: &[u8], be: &[u8]) {
        let o = usize::try_from(off).expect("offset checked by the caller");
        let bytes = match self.endian {
            Endian::Little => le,
            Endian::Big => be,
        };
        data[o..o + bytes.len()].copy_from_slice(bytes);
    }

    pub(crate) fn put_u16(self, data: &mut [u8], off: u64, v: u16) {
        self.put(data, off, &v.to_le_bytes(), &v.to_be_bytes());
    }

    pub(crate) fn put_u32(self, data: &mut [u8], off: u64, v: u32) {
        self.put(data, off, &v.to_le_bytes(), &v.to_be_bytes());
    }

    pub(crate) fn put_word(self, data: &mut [u8], off: u64, v: u64) -> Result<(), ElfError> {
        match self.class {
            Class::Elf32 => {
                let v = u32::try_from(v)
                    .map_err(|_| ElfError::Unsupported(format!("{v:#x} does not fit 32 bits")))?;
                self.put_u32(data, off, v);
            }
            Class::Elf64 => self.put(data, off, &v.to_le_bytes(), &v.to_be_bytes()),
        }
        Ok(())
    }
}

/// A program header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Phdr {
    pub(crate) p_type: u32,
    pub(crate) flags: u32,
    pub(crate) offset: u64,
    pub(crate) vaddr: u64,
    pub(crate) paddr: u64,
    pub(crate) filesz: u64,
    pub(crate) memsz: u64,
    pub(crate) align: u64,
}

impl Phdr {
    /// The file offset of virtual address range `[vaddr, vaddr + len)` if this segment's file
    /// bytes hold all of it.
    pub(crate) fn file_offset(&self, vaddr: u64, len: u64) -> Option<u64> {
        let rel = vaddr.checked_sub(self.vaddr)?;
        if rel.checked_add(len)? <= self.filesz {
            self.offset.checked_add(rel)
        } else {
            None
        }
    }

    pub(crate) fn read(c: Codec, data: &[u8], at: u64) -> Result<Self, ElfError> {
        Ok(match c.class {
            Class::Elf32 => Phdr {
                p_type: c.u32(data, at)?,
                offset: c.word(data, at + 4)?,
                vaddr: c.word(data, at + 8)?,
                paddr: c.word(data, at + 12)?,
                filesz: c.word(data, at + 16)?,
                memsz: c.word(data, at + 20)?,
                flags: c.u32(data, at + 24)?,
                align: c.word(data, at + 28)?,
            },
            Class::Elf64 => Phdr {
                p_type: c.u32(data, at)?,
                flags: c.u32(data, at + 4)?,
                offset: c.word(data, at + 8)?,
                vaddr: c.word(data, at + 16)?,
                paddr: c.word(data, at + 24)?,
                filesz: c.word(data, at + 32)?,
                memsz: c.word(data, at + 40)?,
                align: c.word(data, at + 48)?,
            },
        })
    }

    pub(crate) fn write(&self, c: Codec, data: &mut [u8], at: u64) -> Result<(), ElfError> {
        c.put_u32(data, at, self.p_type);
        match c.class {
            Class::Elf32 => {
                for (i, v) in [self.offset, self.vaddr, self.paddr, self.filesz, self.memsz]
                    .into_iter()
                    .enumerate()
                {
                    c.put_word(data, at + 4 + 4 * i as u64, v)?;
                }
                c.put_u32(data, at + 24, self.flags);
                c.put_word(data, at + 28, self.align)?;
            }
            Class::Elf64 => {
                c.put_u32(data, at + 4, self.flags);
                for (i, v) in [
                    self.offset,
                    self.vaddr,
                    self.paddr,
                    self.filesz,
                    self.memsz,
                    self.align,
                ]
                .into_iter()
                .enumerate()
                {
                    c.put_word(data, at + 8 + 8 * i as u64, v)?;
                }
            }
        }
        Ok(())
    }
}

/// The fields of a section header this crate reads or rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shdr {
    pub(crate) sh_type: u32,
    pub(crate) addr: u64,
    pub(crate) offset: u64,
    pub(crate) size: u64,
    pub(crate) entsize: u64,
}

/// Byte offsets of `sh_addr`, `sh_offset`, `sh_size`, `sh_entsize` in a section header.
pub(crate) fn shdr_fields(class: Class) -> [u64; 4] {
    match class {
        Class::Elf32 => [12, 16, 20, 36],
        Class::Elf64 => [16, 24, 32, 56],
    }
}

/// The dynamic section as found through `PT_DYNAMIC`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dynamic {
    /// Index of `PT_DYNAMIC` among the program headers.
    pub(crate) phdr: usize,
    /// Entries before the first `DT_NULL`.
    pub(crate) entries: Vec<(u64, u64)>,
    /// How many entries (terminator included) fit in the segment's file bytes.
    pub(crate) capacity: usize,
}

/// A parsed ELF file (borrowing its bytes).
#[derive(Debug, Clone)]
pub struct Elf<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) c: Codec,
    pub(crate) e_type: u16,
    pub(crate) machine: u16,
    pub(crate) entry: u64,
    pub(crate) phoff: u64,
    pub(crate) shoff: u64,
    pub(crate) ehsize: u64,
    pub(crate) phentsize: u64,
    pub(crate) shentsize: u64,
    pub(crate) phdrs: Vec<Phdr>,
    pub(crate) shdrs: Vec<Shdr>,
    pub(crate) dynamic: Option<Dynamic>,
}

/// Whether `data` starts with the ELF magic.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(&elf::ELFMAG)
}

impl<'a> Elf<'a> {
    /// Parses the headers and the dynamic section of `data`.
    pub fn parse(data: &'a [u8]) -> Result<Self, ElfError> {
        if !is_elf(data) {
            return Err(ElfError::NotElf);
        }
        if data.len() < 52 {
            return Err(ElfError::Truncated(0));
        }
        let class = match data[4] {
            elf::ELFCLASS32 => Class::Elf32,
            elf::ELFCLASS64 => Class::Elf64,
            other => return Err(ElfError::Malformed(format!("unknown ELF class {other}"))),
        };
        let endian = match data[5] {
            elf::ELFDATA2LSB => Endian::Little,
            elf::ELFDATA2MSB => Endian::Big,
            other => return Err(ElfError::Malformed(format!("unknown byte order {other}"))),
        };
        let c = Codec { class, endian };
        let w = c.word_size();
        let (phoff, shoff, rest) = (24 + w, 24 + 2 * w, 24 + 3 * w + 4);
        let mut elf = Elf {
            data,
            c,
            e_type: c.u16(data, 16)?,
            machine: c.u16(data, 18)?,
            entry: c.word(data, 24)?,
            phoff: c.word(data, phoff)?,
            shoff: c.word(data, shoff)?,
            ehsize: u64::from(c.u16(data, rest)?),
            phentsize: u64::from(c.u16(data, rest + 2)?),
            shentsize: u64::from(c.u16(data, rest + 6)?),
            phdrs: Vec::new(),
            shdrs: Vec::new(),
            dynamic: None,
        };
        let phnum = c.u16(data, rest + 4)?;
        let shnum = c.u16(data, rest + 8)?;
        let (phdr_min, shdr_min) = match class {
            Class::Elf32 => (32, 40),
            Class::Elf64 => (56, 64),
        };
        if elf.shoff != 0 && elf.shentsize >= shdr_min {
            let count = if shnum == 0 {
                // More than 0xff00 sections: the count lives in section 0's `sh_size`.
                c.word(data, elf.shoff.saturating_add(shdr_fields(class)[2]))?
            } else {
                u64::from(shnum)
            };
            if elf
                .shoff
                .saturating_add(count.saturating_mul(elf.shentsize))
                > data.len() as u64
            {
                return Err(ElfError::Truncated(elf.shoff));
            }
            for i in 0..count {
                let at = elf.shoff + i * elf.shentsize;
                let [addr, offset, size, entsize] = shdr_fields(class);
                elf.shdrs.push(Shdr {
                    sh_type: c.u32(data, at + 4)?,
                    addr: c.word(data, at + addr)?,
                    offset: c.word(data, at + offset)?,
                    size: c.word(data, at + size)?,
                    entsize: c.word(data, at + entsize)?,
                });
            }
        }
        if phnum == 0xffff {
            return Err(ElfError::Unsupported(
                "more than 65534 program headers".to_owned(),
            ));
        }
        if phnum > 0 {
            let table_end = elf.phoff.saturating_add(u64::from(phnum) * elf.phentsize);
            if table_end > data.len() as u64 {
                return Err(ElfError::Truncated(elf.phoff));
            }
            if elf.phentsize < phdr_min {
                return Err(ElfError::Malformed(format!(
                    "program header size {} is too small",
                    elf.phentsize
                )));
            }
            for i in 0..u64::from(phnum) {
                elf.phdrs
                    .push(Phdr::read(c, data, elf.phoff + i * elf.phentsize)?);
            }
        }
        elf.dynamic = elf.read_dynamic()?;
        Ok(elf)
    }

    fn read_dynamic(&self) -> Result<Option<Dynamic>, ElfError> {
        let Some(index) = self.phdrs.iter().position(|p| p.p_type == elf::PT_DYNAMIC) else {
            return Ok(None);
        };
        let ph = self.phdrs[index];
        let size = 2 * self.c.word_size();
        if ph.offset.saturating_add(ph.filesz) > self.data.len() as u64 {
            return Err(ElfError::Malformed(
                "the dynamic segment lies beyond the end of the file".to_owned(),
            ));
        }
        let capacity = usize::try_from(ph.filesz / size).unwrap_or(usize::MAX);
        let mut entries = Vec::new();
        for i in 0..ph.filesz / size {
            let at = ph.offset + i * size;
            let tag = self.c.word(self.data, at)?;
            if tag == u64::from(elf::DT_NULL) {
                break;
            }
            entries.push((tag, self.c.word(self.data, at + self.c.word_size())?));
        }
        Ok(Some(Dynamic {
            phdr: index,
            entries,
            capacity,
        }))
    }

    /// The file offset of the virtual range `[vaddr, vaddr + len)`, through the `PT_LOAD`
    /// holding it.
    pub(crate) fn vaddr_to_offset(&self, vaddr: u64, len: u64) -> Option<u64> {
        self.phdrs
            .iter()
            .filter(|p| p.p_type == elf::PT_LOAD)
            .find_map(|p| p.file_offset(vaddr, len))
            .filter(|o| o.saturating_add(len) <= self.data.len() as u64)
    }

    pub(crate) fn dyn_value(&self, tag: u32) -> Option<u64> {
        self.dynamic
            .as_ref()?
            .entries
            .iter()
            .find(|(t, _)| *t == u64::from(tag))
            .map(|(_, v)| *v)
    }

    /// The dynamic string table's bytes.
    pub(crate) fn dynstr(&self) -> Result<&'a [u8], ElfError> {
        let (Some(addr), Some(size)) = (
            self.dyn_value(elf::DT_STRTAB),
            self.dyn_value(elf::DT_STRSZ),
        ) else {
            return Err(ElfError::Malformed(
                "the dynamic section has no DT_STRTAB/DT_STRSZ".to_owned(),
            ));
        };
        let off = self.vaddr_to_offset(addr, size).ok_or_else(|| {
            ElfError::Malformed(format!(
                "the dynamic string table ({size} bytes at {addr:#x}) is not inside a loaded segment"
            ))
        })?;
        let off = usize::try_from(off).map_err(|_| ElfError::Truncated(off))?;
        let size = usize::try_from(size).map_err(|_| ElfError::Truncated(size))?;
        Ok(&self.data[off..off + size])
    }

    /// The NUL-terminated string at `off` of the dynamic string table.
    pub(crate) fn dyn_string(&self, off: u64) -> Result<&'a [u8], ElfError> {
        string_at(self.dynstr()?, off)
    }

    fn tag_strings(&self, tag: u32) -> Result<Vec<String>, ElfError> {
        let Some(d) = &self.dynamic else {
            return Ok(Vec::new());
        };
        d.entries
            .iter()
            .filter(|(t, _)| *t == u64::from(tag))
            .map(|(_, v)| {
                self.dyn_string(*v)
                    .map(|s| String::from_utf8_lossy(s).into_owned())
            })
            .collect()
    }

    fn tag_string(&self, tag: u32) -> Result<Option<String>, ElfError> {
        Ok(self.tag_strings(tag)?.into_iter().next())
    }

    /// `DT_SONAME`.
    pub fn soname(&self) -> Result<Option<String>, ElfError> {
        self.tag_string(elf::DT_SONAME)
    }

    /// `DT_RPATH`.
    pub fn rpath(&self) -> Result<Option<String>, ElfError> {
        self.tag_string(elf::DT_RPATH)
    }

    /// `DT_RUNPATH`.
    pub fn runpath(&self) -> Result<Option<String>, ElfError> {
        self.tag_string(elf::DT_RUNPATH)
    }

    /// What `patchelf --print-rpath` prints: `DT_RUNPATH` if present, else `DT_RPATH`.
    pub fn search_path(&self) -> Result<Option<String>, ElfError> {
        Ok(match self.runpath()? {
            Some(r) => Some(r),
            None => self.rpath()?,
        })
    }

    /// `DT_NEEDED`, in order.
    pub fn needed(&self) -> Result<Vec<String>, ElfError> {
        self.tag_strings(elf::DT_NEEDED)
    }

    /// The program interpreter (`PT_INTERP`), if any.
    pub fn interpreter(&self) -> Result<Option<String>, ElfError> {
        let Some(p) = self.phdrs.iter().find(|p| p.p_type == elf::PT_INTERP) else {
            return Ok(None);
        };
        let bytes = usize::try_from(p.offset)
            .ok()
            .and_then(|o| {
                self.data
                    .get(o..o.checked_add(usize::try_from(p.filesz).ok()?)?)
            })
            .ok_or(ElfError::Truncated(p.offset))?;
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        Ok(Some(String::from_utf8_lossy(&bytes[..end]).into_owned()))
    }

    /// The file's class.
    pub fn class(&self) -> Class {
        self.c.class
    }

    /// The file's byte order.
    pub fn endian(&self) -> Endian {
        self.c.endian
    }

    /// `e_type`.
    pub fn e_type(&self) -> u16 {
        self.e_type
    }

    /// `e_machine`.
    pub fn machine(&self) -> u16 {
        self.machine
    }

    /// Whether the file has a dynamic section.
    pub fn is_dynamic(&self) -> bool {
        self.dynamic.is_some()
    }

    /// Whether the file has a dynamic section with a readable string table (what an edit
    /// needs; separate debug-info files keep the segment but not its contents).
    pub fn has_string_table(&self) -> bool {
        self.dynamic.is_some() && self.dynstr().is_ok()
    }

    /// Whether `DT_FLAGS_1` has `DF_1_PIE`.
    pub fn is_pie(&self) -> bool {
        self.dyn_value(elf::DT_FLAGS_1)
            .is_some_and(|f| f & u64::from(elf::DF_1_PIE) != 0)
    }
}

/// The NUL-terminated string at `off` of `table`.
pub(crate) fn string_at(table: &[u8], off: u64) -> Result<&[u8], ElfError> {
    let start = usize::try_from(off)
        .ok()
        .filter(|o| *o < table.len())
        .ok_or_else(|| {
            ElfError::Malformed(format!(
                "string offset {off} is outside the dynamic string table ({} bytes)",
                table.len()
            ))
        })?;
    let len = table[start..]
        .iter()
        .position(|b| *b == 0)
        .ok_or_else(|| ElfError::Malformed(format!("string at offset {off} is not terminated")))?;
    Ok(&table[start..start + len])
}
