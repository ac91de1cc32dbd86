//! Everything that points into the dynamic string table besides the dynamic entries: symbol
//! names of `.dynsym` and the file and version names of the version sections. A string may be
//! overwritten in place only when nothing else points into it.

use object::elf;

use crate::ElfError;
use crate::parse::{Class, Elf};

/// A string reference held outside the dynamic section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reference {
    /// File offset of the 32-bit field holding the string offset.
    pub(crate) field: u64,
    /// The string offset.
    pub(crate) value: u64,
    /// Whether the field is a `vn_file` (the name of a needed library).
    pub(crate) needed_file: bool,
}

impl Elf<'_> {
    fn file_offset_of(&self, vaddr: u64, len: u64) -> Result<u64, ElfError> {
        self.vaddr_to_offset(vaddr, len).ok_or_else(|| {
            ElfError::Malformed(format!(
                "{len} bytes at address {vaddr:#x} are not inside a loaded segment"
            ))
        })
    }

    /// The number of `.dynsym` entries: from the section header when present, else from
    /// `DT_HASH` or `DT_GNU_HASH`. `None` when nothing tells.
    fn dynsym_count(&self) -> Result<Option<u64>, ElfError> {
        if let Some(s) = self.shdrs.iter().find(|s| s.sh_type == elf::SHT_DYNSYM) {
            return Ok((s.entsize > 0).then(|| s.size / s.entsize));
        }
        let c = self.c;
        if let Some(hash) = self.dyn_value(elf::DT_HASH) {
            let at = self.file_offset_of(hash, 8)?;
            return Ok(Some(u64::from(c.u32(self.data, at + 4)?)));
        }
        let Some(gnu) = self.dyn_value(elf::DT_GNU_HASH) else {
            return Ok(None);
        };
        let at = self.file_offset_of(gnu, 16)?;
        let nbuckets = u64::from(c.u32(self.data, at)?);
        let symoffset = u64::from(c.u32(self.data, at + 4)?);
        let bloom = u64::from(c.u32(self.data, at + 8)?);
        let buckets = at + 16 + bloom * c.word_size();
        let mut last = 0u64;
        for i in 0..nbuckets {
            last = last.max(u64::from(c.u32(self.data, buckets + 4 * i)?));
        }
        if last < symoffset {
            return Ok(Some(symoffset));
        }
        let chains = buckets + 4 * nbuckets;
        let mut index = last;
        while c.u32(self.data, chains + 4 * (index - symoffset))? & 1 == 0 {
            index += 1;
            if index > self.data.len() as u64 {
                return Err(ElfError::Malformed("endless GNU hash chain".to_owned()));
            }
        }
        Ok(Some(index + 1))
    }

    /// Every string reference outside the dynamic entries, or `None` when the symbol table's
    /// extent cannot be known.
    pub(crate) fn string_references(&self) -> Result<Option<Vec<Reference>>, ElfError> {
        let c = self.c;
        let mut refs = Vec::new();
        let Some(dynsym) = self.dyn_value(elf::DT_SYMTAB) else {
            // No DT_SYMTAB: no symbols.
            return self.version_references(refs).map(Some);
        };
        let Some(count) = self.dynsym_count()? else {
            return Ok(None);
        };
        let entsize = match c.class {
            Class::Elf32 => 16,
            Class::Elf64 => 24,
        };
        let at = self.file_offset_of(dynsym, count.saturating_mul(entsize))?;
        for i in 0..count {
            let field = at + i * entsize;
            refs.push(Reference {
                field,
                value: u64::from(c.u32(self.data, field)?),
                needed_file: false,
            });
        }
        self.version_references(refs).map(Some)
    }

    /// The highest address a dynamic relocation reaches when its symbol's size is counted
    /// (`r_offset + st_size`, what `eu-elflint` takes a relocation to write): over `DT_RELA`,
    /// `DT_REL` and `DT_JMPREL`. `None` when a table or a symbol cannot be read.
    pub(crate) fn relocation_reach(&self) -> Option<u64> {
        let c = self.c;
        let w = c.word_size();
        let sym_size_at = match c.class {
            Class::Elf32 => 8,
            Class::Elf64 => 16,
        };
        let syment = self
            .dyn_value(elf::DT_SYMENT)
            .unwrap_or(if w == 8 { 24 } else { 16 });
        let dynsym = self.dyn_value(elf::DT_SYMTAB);
        let plt_rela = self.dyn_value(elf::DT_PLTREL) == Some(u64::from(elf::DT_RELA));
        let tables = [
            (
                elf::DT_RELA,
                elf::DT_RELASZ,
                self.dyn_value(elf::DT_RELAENT).unwrap_or(3 * w),
            ),
            (
                elf::DT_REL,
                elf::DT_RELSZ,
                self.dyn_value(elf::DT_RELENT).unwrap_or(2 * w),
            ),
            (
                elf::DT_JMPREL,
                elf::DT_PLTRELSZ,
                if plt_rela { 3 * w } else { 2 * w },
            ),
        ];
        let mut reach = 0u64;
        for (tag, size_tag, entsize) in tables {
            let (Some(addr), Some(size)) = (self.dyn_value(tag), self.dyn_value(size_tag)) else {
                continue;
            };
            if entsize < 2 * w {
                return None;
            }
            let at = self.vaddr_to_offset(addr, size)?;
            for i in 0..size / entsize {
                let offset = c.word(self.data, at + i * entsize).ok()?;
                let info = c.word(self.data, at + i * entsize + w).ok()?;
                let sym = if w == 8 { info >> 32 } else { info >> 8 };
                let sym_size = if sym == 0 {
                    0
                } else {
                    let field = dynsym?
                        .checked_add(sym.checked_mul(syment)?)?
                        .checked_add(sym_size_at)?;
                    let field = self.vaddr_to_offset(field, w)?;
                    c.word(self.data, field).ok()?
                };
                reach = reach.max(offset.checked_add(sym_size)?);
            }
        }
        Some(reach)
    }

    /// The largest `st_size` among the dynamic symbols; 0 without them or when their number
    /// cannot be known.
    pub(crate) fn largest_dynamic_symbol(&self) -> Result<u64, ElfError> {
        let (Some(dynsym), Some(count)) = (self.dyn_value(elf::DT_SYMTAB), self.dynsym_count()?)
        else {
            return Ok(0);
        };
        let (entsize, size_at) = match self.c.class {
            Class::Elf32 => (16, 8),
            Class::Elf64 => (24, 16),
        };
        let at = self.file_offset_of(dynsym, count.saturating_mul(entsize))?;
        let mut largest = 0;
        for i in 0..count {
            largest = largest.max(self.c.word(self.data, at + i * entsize + size_at)?);
        }
        Ok(largest)
    }

    /// Whether a dynamic symbol's value lies in `[lo, hi)`; `None` when the symbols cannot be
    /// read or counted.
    pub(crate) fn dynamic_symbol_in(&self, lo: u64, hi: u64) -> Option<bool> {
        let Some(dynsym) = self.dyn_value(elf::DT_SYMTAB) else {
            return Some(false);
        };
        let count = self.dynsym_count().ok()??;
        let (entsize, value_at) = match self.c.class {
            Class::Elf32 => (16, 4),
            Class::Elf64 => (24, 8),
        };
        let at = self.vaddr_to_offset(dynsym, count.checked_mul(entsize)?)?;
        for i in 0..count {
            let v = self.c.word(self.data, at + i * entsize + value_at).ok()?;
            if (lo..hi).contains(&v) {
                return Some(true);
            }
        }
        Some(false)
    }

    fn version_references(&self, mut refs: Vec<Reference>) -> Result<Vec<Reference>, ElfError> {
        let c = self.c;
        let mut push = |field: u64, needed_file: bool| -> Result<(), ElfError> {
            refs.push(Reference {
                field,
                value: u64::from(c.u32(self.data, field)?),
                needed_file,
            });
            Ok(())
        };
        if let (Some(addr), Some(num)) = (
            self.dyn_value(elf::DT_VERNEED),
            self.dyn_value(elf::DT_VERNEEDNUM),
        ) {
            let mut at = self.file_offset_of(addr, 16)?;
            for _ in 0..num.min(self.data.len() as u64) {
                let cnt = c.u16(self.data, at + 2)?;
                push(at + 4, true)?;
                let mut aux = at + u64::from(c.u32(self.data, at + 8)?);
                for _ in 0..cnt {
                    push(aux + 8, false)?;
                    aux += u64::from(c.u32(self.data, aux + 12)?);
                }
                let next = u64::from(c.u32(self.data, at + 12)?);
                if next == 0 {
                    break;
                }
                at += next;
            }
        }
        if let (Some(addr), Some(num)) = (
            self.dyn_value(elf::DT_VERDEF),
            self.dyn_value(elf::DT_VERDEFNUM),
        ) {
            let mut at = self.file_offset_of(addr, 20)?;
            for _ in 0..num.min(self.data.len() as u64) {
                let cnt = c.u16(self.data, at + 6)?;
                let mut aux = at + u64::from(c.u32(self.data, at + 12)?);
                for _ in 0..cnt {
                    push(aux, false)?;
                    aux += u64::from(c.u32(self.data, aux + 4)?);
                }
                let next = u64::from(c.u32(self.data, at + 16)?);
                if next == 0 {
                    break;
                }
                at += next;
            }
        }
        Ok(refs)
    }
}
