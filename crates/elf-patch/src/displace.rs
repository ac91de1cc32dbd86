//! Room for the program header table to grow in place. The sections right after it are
//! usually `.interp` and notes, which only program headers point to (`PT_INTERP`, `PT_NOTE`,
//! `PT_GNU_PROPERTY`): they move, bytes unchanged, into the new read-only segment, and the table
//! grows over their old place. The table then stays where the kernel and the loader expect it
//! (no copy of it, no padding to keep an executable's `AT_PHDR`).

use object::elf;

use crate::ElfError;
use crate::parse::{Elf, Phdr, STRING_TAGS, shdr_fields, tag_in};
use crate::symbols::Moved;

/// A run of sections after the program header table that can move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Displaced {
    /// File range `[start, end)`.
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// The address of `start`.
    pub(crate) vaddr: u64,
}

const MOVABLE_SEGMENTS: [u32; 3] = [elf::PT_INTERP, elf::PT_NOTE, elf::PT_GNU_PROPERTY];

/// `DT_RELRSZ` and `DT_RELRENT` (sizes of the packed relative relocations).
const DT_RELRSZ: u32 = 35;
const DT_RELRENT: u32 = 37;

/// Whether a dynamic entry of tag `tag` holds a size, a count, flags or a string offset, never
/// an address. Any other tag (processor-specific ones included) counts as an address.
fn holds_no_address(tag: u64) -> bool {
    tag_in(
        tag,
        &[
            elf::DT_PLTRELSZ,
            elf::DT_RELASZ,
            elf::DT_RELAENT,
            elf::DT_STRSZ,
            elf::DT_SYMENT,
            elf::DT_SYMBOLIC,
            elf::DT_RELSZ,
            elf::DT_RELENT,
            elf::DT_PLTREL,
            elf::DT_TEXTREL,
            elf::DT_BIND_NOW,
            elf::DT_INIT_ARRAYSZ,
            elf::DT_FINI_ARRAYSZ,
            elf::DT_FLAGS,
            elf::DT_PREINIT_ARRAYSZ,
            DT_RELRSZ,
            DT_RELRENT,
            elf::DT_RELACOUNT,
            elf::DT_RELCOUNT,
            elf::DT_FLAGS_1,
            elf::DT_VERDEFNUM,
            elf::DT_VERNEEDNUM,
        ],
    ) || tag_in(tag, &STRING_TAGS)
        || (u64::from(elf::DT_VALRNGLO)..=u64::from(elf::DT_VALRNGHI)).contains(&tag)
}

/// The sections (and the segments describing them) to move so that the program header table
/// may end at `need_end`, or `None` when something else lies there: a section that is not
/// `.interp` or a note, a segment other than those, the section header table, or anything a
/// dynamic entry holding an address or a dynamic symbol points into.
pub(crate) fn displaceable(elf: &Elf<'_>, need_end: u64) -> Option<Displaced> {
    let pht_end = elf.phoff + elf.phdrs.len() as u64 * elf.phentsize;
    if elf.shdrs.is_empty() || need_end <= pht_end {
        return None;
    }
    let interp = elf.phdrs.iter().find(|p| p.p_type == elf::PT_INTERP);
    let overlaps = |o: u64, l: u64, lo: u64, hi: u64| l > 0 && o < hi && lo < o.saturating_add(l);
    let (mut start, mut end) = (u64::MAX, need_end);
    loop {
        let mut grew = false;
        for s in &elf.shdrs {
            if matches!(s.sh_type, elf::SHT_NULL | elf::SHT_NOBITS)
                || !overlaps(s.offset, s.size, pht_end, end)
            {
                continue;
            }
            let is_interp = s.sh_type == elf::SHT_PROGBITS
                && interp.is_some_and(|p| p.offset == s.offset && p.filesz == s.size);
            if (s.sh_type != elf::SHT_NOTE && !is_interp) || s.offset < pht_end || s.addr == 0 {
                return None;
            }
            start = start.min(s.offset);
            let last = s.offset.saturating_add(s.size);
            if last > end {
                (end, grew) = (last, true);
            }
        }
        for p in &elf.phdrs {
            if matches!(p.p_type, elf::PT_LOAD | elf::PT_PHDR)
                || !overlaps(p.offset, p.filesz, pht_end, end)
            {
                continue;
            }
            if !MOVABLE_SEGMENTS.contains(&p.p_type) || p.offset < pht_end {
                return None;
            }
            start = start.min(p.offset);
            let last = p.offset.saturating_add(p.filesz);
            if last > end {
                (end, grew) = (last, true);
            }
        }
        if !grew {
            break;
        }
    }
    if start == u64::MAX || end > elf.data.len() as u64 {
        return None;
    }
    let load = elf.phdrs.iter().find(|p| {
        p.p_type == elf::PT_LOAD
            && p.offset <= elf.phoff
            && end <= p.offset.saturating_add(p.filesz)
    })?;
    let shdr_table = elf.shdrs.len() as u64 * elf.shentsize;
    if overlaps(elf.shoff, shdr_table, pht_end, end) {
        return None;
    }
    let vaddr = load.vaddr.checked_add(start - load.offset)?;
    let vend = vaddr.checked_add(end - start)?;
    // Everything moved is mapped by that segment at its own offset.
    let mapped = |o: u64, a: u64| load.vaddr.checked_add(o - load.offset) == Some(a);
    let sections_mapped = elf.shdrs.iter().all(|s| {
        matches!(s.sh_type, elf::SHT_NULL | elf::SHT_NOBITS)
            || s.size == 0
            || !(start..end).contains(&s.offset)
            || mapped(s.offset, s.addr)
    });
    let segments_mapped = elf.phdrs.iter().all(|p| {
        !MOVABLE_SEGMENTS.contains(&p.p_type)
            || p.filesz == 0
            || !(start..end).contains(&p.offset)
            || mapped(p.offset, p.vaddr)
    });
    if !sections_mapped || !segments_mapped {
        return None;
    }
    let points_inside = elf.dynamic.as_ref().is_some_and(|d| {
        d.entries
            .iter()
            .any(|(t, v)| !holds_no_address(*t) && (vaddr..vend).contains(v))
    });
    if points_inside || elf.dynamic_symbol_in(vaddr, vend) != Some(false) {
        return None;
    }
    Some(Displaced { start, end, vaddr })
}

/// Copies the displaced bytes to `offset`/`vaddr` of `out` and points their section headers and
/// program headers (in `phdrs`, the new table) there. Returns the sections that moved.
pub(crate) fn apply(
    elf: &Elf<'_>,
    out: &mut [u8],
    phdrs: &mut [Phdr],
    d: Displaced,
    offset: u64,
    vaddr: u64,
) -> Result<Vec<Moved>, ElfError> {
    if vaddr % 16 != d.vaddr % 16 {
        return Err(ElfError::Unsupported(
            "the moved notes would lose their alignment".to_owned(),
        ));
    }
    let (from, to) = (
        usize::try_from(d.start).expect("inside the file"),
        usize::try_from(offset).expect("inside the file"),
    );
    let len = usize::try_from(d.end - d.start).expect("inside the file");
    out[to..to + len].copy_from_slice(&elf.data[from..from + len]);
    let inside = |o: u64| (d.start..d.end).contains(&o);
    for p in phdrs.iter_mut() {
        if MOVABLE_SEGMENTS.contains(&p.p_type) && p.filesz > 0 && inside(p.offset) {
            p.offset = p.offset - d.start + offset;
            p.vaddr = p.vaddr - d.vaddr + vaddr;
            p.paddr = p.vaddr;
        }
    }
    let [f_addr, f_offset, _, _] = shdr_fields(elf.c.class);
    let mut moved = Vec::new();
    for (i, s) in elf.shdrs.iter().enumerate() {
        if matches!(s.sh_type, elf::SHT_NULL | elf::SHT_NOBITS) || s.size == 0 || !inside(s.offset)
        {
            continue;
        }
        let new_addr = s.addr - d.vaddr + vaddr;
        let at = elf.shoff + i as u64 * elf.shentsize;
        elf.c.put_word(out, at + f_addr, new_addr)?;
        elf.c
            .put_word(out, at + f_offset, s.offset - d.start + offset)?;
        moved.push(Moved {
            index: i,
            old_addr: s.addr,
            old_size: s.size,
            new_addr,
        });
    }
    Ok(moved)
}
