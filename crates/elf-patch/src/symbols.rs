//! Symbols of the static symbol table (`SHT_SYMTAB`, `.symtab`) defined in a section that an
//! edit moves: the section's own symbol (`STT_SECTION`, whose value is the section's address)
//! and symbols inside it (`_DYNAMIC` in `.dynamic`) follow the section, so that the table keeps
//! agreeing with the section headers. The table is not loaded; the dynamic symbol table is
//! never changed.

use object::elf;

use crate::ElfError;
use crate::parse::{Class, Elf};

/// A section that moved: its index, old address and size, new address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moved {
    pub(crate) index: usize,
    pub(crate) old_addr: u64,
    pub(crate) old_size: u64,
    pub(crate) new_addr: u64,
}

/// A symbol of a static symbol table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Symbol {
    /// File offset of its `st_value`.
    pub(crate) field: u64,
    pub(crate) value: u64,
    pub(crate) is_section: bool,
    /// `st_shndx`.
    pub(crate) section: usize,
}

/// The symbols of every `SHT_SYMTAB` section defined in one of `sections` (by index). A table
/// that does not lie inside the file is passed over: it is not loaded, and an edit does not
/// depend on it.
pub(crate) fn symbols_in(elf: &Elf<'_>, sections: &[usize]) -> Result<Vec<Symbol>, ElfError> {
    let c = elf.c;
    let (size, shndx_at, value_at, info_at) = match c.class {
        Class::Elf32 => (16, 14, 4, 12),
        Class::Elf64 => (24, 6, 8, 4),
    };
    let mut out = Vec::new();
    if sections.is_empty() {
        return Ok(out);
    }
    for table in elf.shdrs.iter().filter(|s| s.sh_type == elf::SHT_SYMTAB) {
        let inside = table
            .offset
            .checked_add(table.size)
            .is_some_and(|end| end <= elf.data.len() as u64);
        if !inside || table.entsize < size {
            continue;
        }
        for i in 0..table.size / table.entsize {
            let at = table.offset + i * table.entsize;
            let section = usize::from(c.u16(elf.data, at + shndx_at)?);
            if !sections.contains(&section) {
                continue;
            }
            let info = elf.data[usize::try_from(at + info_at).expect("inside the file")];
            out.push(Symbol {
                field: at + value_at,
                value: c.word(elf.data, at + value_at)?,
                is_section: info & 0xf == elf::STT_SECTION,
                section,
            });
        }
    }
    Ok(out)
}

/// Where a symbol of a moved section lies after the move: the section symbol at the new
/// address, a symbol inside the old extent (its end included) at the same distance from the
/// new start; `None` for a symbol outside it (left as it is).
pub(crate) fn moved_value(sym: &Symbol, moved: &Moved) -> Option<u64> {
    if sym.is_section {
        return Some(moved.new_addr);
    }
    let rel = sym.value.checked_sub(moved.old_addr)?;
    (rel <= moved.old_size).then(|| moved.new_addr + rel)
}

/// Points the static symbols of the `moved` sections at their new places in `out`.
pub(crate) fn update(elf: &Elf<'_>, out: &mut [u8], moved: &[Moved]) -> Result<(), ElfError> {
    let indices: Vec<usize> = moved.iter().map(|m| m.index).collect();
    for sym in symbols_in(elf, &indices)? {
        let m = moved
            .iter()
            .find(|m| m.index == sym.section)
            .expect("selected by index");
        if let Some(v) = moved_value(&sym, m) {
            elf.c.put_word(out, sym.field, v)?;
        }
    }
    Ok(())
}
