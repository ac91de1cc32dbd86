//! The checks every patched image passes before it may replace the original (spec §10.7):
//! it parses; the dynamic entries read exactly as planned (every other entry untouched, entry
//! point and init/fini arrays included); string offsets are valid; `PT_LOAD`s are sorted,
//! consistent and do not overlap in the file or in memory (unless they already did);
//! `PT_PHDR` and `PT_DYNAMIC` lie inside a `PT_LOAD`; bytes outside the edited structures are
//! unchanged.

use object::elf;

use crate::ElfError;
use crate::parse::{Elf, Phdr, STRING_TAGS, tag_in};
use crate::symbols::{Moved, moved_value, symbols_in};

/// A dynamic entry's expected value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Num(u64),
    Str(Vec<u8>),
}

/// What the dynamic section must read as after the edit (`DT_STRTAB`/`DT_STRSZ` aside).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expected {
    pub(crate) entries: Vec<(u64, Value)>,
}

fn fail(msg: impl Into<String>) -> ElfError {
    ElfError::Verification(msg.into())
}

/// Problems of the `PT_LOAD` layout, as comparable strings.
fn load_problems(elf: &Elf<'_>) -> Vec<String> {
    let loads: Vec<&Phdr> = elf
        .phdrs
        .iter()
        .filter(|p| p.p_type == elf::PT_LOAD)
        .collect();
    let mut problems = Vec::new();
    for (i, p) in loads.iter().enumerate() {
        if p.filesz > p.memsz {
            problems.push(format!("segment {i}: file size above memory size"));
        }
        if p.offset.saturating_add(p.filesz) > elf.data.len() as u64 {
            problems.push(format!("segment {i}: beyond the end of the file"));
        }
        if p.align > 1 && p.offset % p.align != p.vaddr % p.align {
            problems.push(format!("segment {i}: offset and address not congruent"));
        }
        for (j, q) in loads.iter().enumerate().skip(i + 1) {
            if q.vaddr < p.vaddr {
                problems.push(format!("segments {i} and {j}: not sorted by address"));
            }
            if p.vaddr < q.vaddr.saturating_add(q.memsz)
                && q.vaddr < p.vaddr.saturating_add(p.memsz)
            {
                problems.push(format!("segments {i} and {j}: overlap in memory"));
            }
            if p.filesz > 0
                && q.filesz > 0
                && p.offset < q.offset.saturating_add(q.filesz)
                && q.offset < p.offset.saturating_add(p.filesz)
            {
                problems.push(format!("segments {i} and {j}: overlap in the file"));
            }
        }
    }
    problems
}

/// Whether `[offset, offset + size)` at `vaddr` is mapped by one `PT_LOAD` with the same
/// address-to-offset relation.
fn mapped(elf: &Elf<'_>, offset: u64, vaddr: u64, size: u64) -> bool {
    elf.phdrs
        .iter()
        .filter(|p| p.p_type == elf::PT_LOAD)
        .any(|p| p.file_offset(vaddr, size) == Some(offset))
}

fn entries_as_values(elf: &Elf<'_>) -> Result<Vec<(u64, Value)>, ElfError> {
    let d = elf
        .dynamic
        .as_ref()
        .ok_or_else(|| fail("the dynamic section is gone"))?;
    let table = elf.dynstr()?;
    d.entries
        .iter()
        .filter(|(t, _)| !tag_in(*t, &[elf::DT_STRTAB, elf::DT_STRSZ]))
        .map(|(t, v)| {
            Ok((
                *t,
                if tag_in(*t, &STRING_TAGS) {
                    Value::Str(crate::parse::string_at(table, *v)?.to_vec())
                } else {
                    Value::Num(*v)
                },
            ))
        })
        .collect()
}

/// The `st_value` fields of static symbols in a section that moved, each checked to follow its
/// section (see [`crate::symbols`]), as ranges the edit may change.
fn moved_symbols(original: &Elf<'_>, new: &Elf<'_>) -> Result<Vec<(u64, u64)>, ElfError> {
    if original.shdrs.len() != new.shdrs.len() || original.shoff != new.shoff {
        return Err(fail("the section header table changed shape"));
    }
    let moved: Vec<Moved> = original
        .shdrs
        .iter()
        .zip(&new.shdrs)
        .enumerate()
        .filter(|(_, (a, b))| a.addr != b.addr)
        .map(|(index, (a, b))| Moved {
            index,
            old_addr: a.addr,
            old_size: a.size,
            new_addr: b.addr,
        })
        .collect();
    let indices: Vec<usize> = moved.iter().map(|m| m.index).collect();
    let before = symbols_in(original, &indices)?;
    let after = symbols_in(new, &indices)?;
    if before.len() != after.len() {
        return Err(fail("the static symbol table changed"));
    }
    let w = original.c.word_size();
    let mut fields = Vec::new();
    for (a, b) in before.iter().zip(&after) {
        let m = moved
            .iter()
            .find(|m| m.index == a.section)
            .expect("selected by index");
        let want = moved_value(a, m).unwrap_or(a.value);
        if (b.field, b.section, b.value) != (a.field, a.section, want) {
            return Err(fail(format!(
                "a static symbol of section {} does not follow the section to {:#x}",
                a.section, m.new_addr
            )));
        }
        fields.push((a.field, a.field + w));
    }
    Ok(fields)
}

/// Segments other than `PT_LOAD`, `PT_PHDR` and `PT_DYNAMIC` are the same, in the same order;
/// one that moved (`.interp` and notes, out of the program headers' way) has the same size and
/// bytes, and is still mapped if it was.
fn moved_segments(original: &Elf<'_>, new: &Elf<'_>) -> Result<(), ElfError> {
    let others = |e: &Elf<'_>| -> Vec<Phdr> {
        e.phdrs
            .iter()
            .filter(|p| !matches!(p.p_type, elf::PT_LOAD | elf::PT_PHDR | elf::PT_DYNAMIC))
            .copied()
            .collect()
    };
    let (before, after) = (others(original), others(new));
    if before.len() != after.len() {
        return Err(fail("program headers other than PT_LOAD changed"));
    }
    let bytes = |e: &Elf<'_>, p: &Phdr| -> Option<Vec<u8>> {
        let start = usize::try_from(p.offset).ok()?;
        let len = usize::try_from(p.filesz).ok()?;
        e.data
            .get(start..start.checked_add(len)?)
            .map(<[u8]>::to_vec)
    };
    for (a, b) in before.iter().zip(&after) {
        if a == b {
            continue;
        }
        let same = (a.p_type, a.flags, a.filesz, a.memsz, a.align)
            == (b.p_type, b.flags, b.filesz, b.memsz, b.align)
            && bytes(original, a).is_some()
            && bytes(original, a) == bytes(new, b);
        if !same {
            return Err(fail(format!(
                "a program header of type {:#x} changed other than by moving",
                a.p_type
            )));
        }
        if mapped(original, a.offset, a.vaddr, a.filesz)
            && !mapped(new, b.offset, b.vaddr, b.filesz)
        {
            return Err(fail(format!(
                "a moved program header of type {:#x} is not covered by a PT_LOAD",
                a.p_type
            )));
        }
    }
    Ok(())
}

/// Checks `out`, the patched image of `original`; returns the byte ranges of the original
/// outside the structures an edit may touch, which must still hold the original's bytes (for
/// the caller to compare, see [`unchanged`]).
pub(crate) fn verify(
    original: &Elf<'_>,
    out: &[u8],
    expected: &Expected,
) -> Result<Vec<(u64, u64)>, ElfError> {
    let new = Elf::parse(out).map_err(|e| fail(format!("the result does not parse: {e}")))?;
    if (new.e_type, new.machine, new.entry) != (original.e_type, original.machine, original.entry) {
        return Err(fail("ELF type, machine or entry point changed"));
    }
    let got = entries_as_values(&new)?;
    if got != expected.entries {
        return Err(fail(
            "the dynamic entries do not read as planned after the edit",
        ));
    }
    let before = load_problems(original);
    if let Some(p) = load_problems(&new)
        .into_iter()
        .find(|p| !before.contains(p))
    {
        return Err(fail(p));
    }
    for p in &new.phdrs {
        if p.p_type == elf::PT_PHDR {
            let size = new.phdrs.len() as u64 * new.phentsize;
            if p.offset != new.phoff || p.filesz != size {
                return Err(fail("PT_PHDR does not describe the program header table"));
            }
            if !mapped(&new, p.offset, p.vaddr, size) {
                return Err(fail("PT_PHDR is not covered by a PT_LOAD"));
            }
        }
        if p.p_type == elf::PT_DYNAMIC && !mapped(&new, p.offset, p.vaddr, p.filesz) {
            return Err(fail("PT_DYNAMIC is not covered by a PT_LOAD"));
        }
    }
    moved_segments(original, &new)?;
    // Bytes of the original file outside the structures an edit may touch are unchanged.
    let d = original
        .dynamic
        .as_ref()
        .expect("patched files are dynamic");
    let dyn_ph = original.phdrs[d.phdr];
    let table = original.dynstr()?;
    let table_at = table.as_ptr() as u64 - original.data.as_ptr() as u64;
    let mut touched = vec![
        (0, original.ehsize),
        (
            original.phoff,
            // Room for the two segments an edit may add, when the table grows in place.
            original.phoff + (original.phdrs.len() as u64 + 2) * original.phentsize,
        ),
        (dyn_ph.offset, dyn_ph.offset.saturating_add(dyn_ph.filesz)),
        (table_at, table_at + table.len() as u64),
        (
            original.shoff,
            original.shoff + original.shdrs.len() as u64 * original.shentsize,
        ),
    ];
    touched.extend(moved_symbols(original, &new)?);
    if let Some(refs) = original.string_references()? {
        touched.extend(
            refs.iter()
                .filter(|r| r.needed_file)
                .map(|r| (r.field, r.field + 4)),
        );
    }
    touched.sort_unstable();
    let mut kept = Vec::new();
    let mut at = 0u64;
    for (start, end) in touched.into_iter().chain([(original.data.len() as u64, 0)]) {
        let stop = start.min(original.data.len() as u64);
        if at < stop {
            kept.push((at, stop));
        }
        at = at.max(end);
    }
    Ok(kept)
}

/// Checks that `out` holds the bytes of the original (`holds`: whether the original has these
/// bytes at this offset) in each of the `kept` ranges, which [`verify`] returned.
pub(crate) fn unchanged<E: From<ElfError>>(
    kept: &[(u64, u64)],
    out: &[u8],
    holds: impl Fn(u64, &[u8]) -> Result<bool, E>,
) -> Result<(), E> {
    for &(start, stop) in kept {
        let range = usize::try_from(start).ok().zip(usize::try_from(stop).ok());
        let Some(bytes) = range.and_then(|(a, b)| out.get(a..b)) else {
            return Err(fail(format!(
                "bytes {start:#x}..{stop:#x} are missing from the result"
            ))
            .into());
        };
        if !holds(start, bytes)? {
            return Err(fail(format!(
                "bytes {start:#x}..{stop:#x} changed outside the edited structures"
            ))
            .into());
        }
    }
    Ok(())
}
