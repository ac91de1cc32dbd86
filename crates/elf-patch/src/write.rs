//! Planning and writing an edit of the dynamic section (spec §10.4–§10.7).
//!
//! Strings are reused when the table already holds them, overwritten in place when the new
//! string fits and nothing else points into the old one, and otherwise appended to a copy of
//! the string table placed in a new `PT_LOAD` at the end of the file. The program header table
//! grows in place when the bytes after it are free, else it moves into that new segment
//! (`PT_PHDR` follows it). Every result is verified before it is returned.

use object::elf;

use crate::ElfError;
use crate::displace::{Displaced, displaceable};
use crate::parse::{Elf, Phdr, STRING_TAGS, shdr_fields, string_at, tag_in};
use crate::refs::Reference;
use crate::symbols::Moved;
use crate::verify::{Expected, Value};

/// What to change in a file's dynamic section; the fields mirror patchelf's options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Edit {
    /// `--set-rpath`: replaces the search path.
    pub set_rpath: Option<String>,
    /// `--add-rpath`, in order: each appended with `:` to the search path (no de-duplication).
    pub add_rpath: Vec<String>,
    /// `--force-rpath`: write `DT_RPATH` (an existing `DT_RUNPATH` is retagged); without it
    /// the search path is written as `DT_RUNPATH` (an existing `DT_RPATH` is retagged).
    pub force_rpath: bool,
    /// `--set-soname` (added when missing; ignored for files other than `ET_DYN`).
    pub set_soname: Option<String>,
    /// `--replace-needed OLD NEW`, in order; also renames the library in the version
    /// requirements.
    pub replace_needed: Vec<(String, String)>,
    /// `--remove-rpath`: removes `DT_RPATH` and `DT_RUNPATH` (their strings stay in the table,
    /// as patchelf leaves them). Takes precedence over `set_rpath` and `add_rpath`.
    pub remove_rpath: bool,
    /// `--shrink-rpath`: keeps the relative entries of the search path and the absolute ones
    /// holding a `DT_NEEDED` library not found in an earlier one (looked up on this machine's
    /// file system, as patchelf does). Takes precedence over everything else on the search path.
    pub shrink_rpath: bool,
    /// `--allowed-rpath-prefixes`: with `shrink_rpath`, absolute entries starting with none of
    /// these are dropped (no restriction when empty).
    pub allowed_rpath_prefixes: Vec<String>,
}

impl Edit {
    /// The prefixes of a `:`-separated `--allowed-rpath-prefixes` value (empty entries
    /// dropped), for [`Edit::allowed_rpath_prefixes`].
    pub fn prefixes_of(value: &str) -> Vec<String> {
        value
            .split(':')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Whether the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        self.set_rpath.is_none()
            && self.add_rpath.is_empty()
            && self.set_soname.is_none()
            && self.replace_needed.is_empty()
            && !self.remove_rpath
            && !self.shrink_rpath
    }

    fn touches_search_path(&self) -> bool {
        self.set_rpath.is_some()
            || !self.add_rpath.is_empty()
            || self.remove_rpath
            || self.shrink_rpath
    }
}

/// The search path after `set` then each of `add` (spec §10.4): the base is `set` if given,
/// else `existing`; each entry is appended after a `:` unless the path is still empty.
pub fn combined_search_path(existing: Option<&str>, set: Option<&str>, add: &[String]) -> String {
    let path = combine(existing.map(str::as_bytes), set.map(str::as_bytes), add);
    String::from_utf8(path).expect("joined from UTF-8 parts")
}

fn combine(existing: Option<&[u8]>, set: Option<&[u8]>, add: &[String]) -> Vec<u8> {
    let mut path = set.or(existing).unwrap_or_default().to_vec();
    for entry in add {
        if !path.is_empty() {
            path.push(b':');
        }
        path.extend_from_slice(entry.as_bytes());
    }
    path
}

/// The most zero bytes an edit may add to keep an executable's program headers at the same
/// address-to-offset distance as its first segment (64 MiB; only a file whose table cannot
/// grow in place and whose memory reaches far beyond its bytes, a large `.bss`, needs any).
const MAX_PADDING: u64 = 1 << 26;

/// The largest `PT_LOAD` alignment an edited file may have: 1 GiB, far above any page size
/// (4 KiB to 64 KiB) or huge-page alignment (2 MiB) linkers use. A larger one is a corrupt
/// header, and would place the new segment that far above the last one.
const MAX_ALIGN: u64 = 1 << 30;

fn align_up(v: u64, a: u64) -> Option<u64> {
    if a <= 1 {
        Some(v)
    } else {
        v.div_ceil(a).checked_mul(a)
    }
}

fn no_room() -> ElfError {
    ElfError::Unsupported("no address space above the last segment".to_owned())
}

/// Byte ranges of the string table overwritten so far.
struct Plan<'e, 'a> {
    elf: &'e Elf<'a>,
    table: Vec<u8>,
    base_len: u64,
    appended: Vec<u8>,
    dirty: Vec<(u64, u64)>,
    entries: Vec<(u64, u64)>,
    /// The string each string-valued entry must read as after the edit.
    strings: Vec<Option<Vec<u8>>>,
    references: Option<Vec<Reference>>,
    reference_updates: Vec<(u64, u64)>,
}

impl Plan<'_, '_> {
    /// An offset where `s` can be read: an existing copy, else appended.
    fn find(&self, s: &[u8]) -> Option<u64> {
        let mut needle = s.to_vec();
        needle.push(0);
        let clean = |at: u64| {
            self.dirty
                .iter()
                .all(|(a, b)| at + needle.len() as u64 <= *a || at >= *b)
        };
        if let Some(at) = self
            .table
            .windows(needle.len())
            .enumerate()
            .filter(|(_, w)| *w == needle.as_slice())
            .map(|(i, _)| i as u64)
            .find(|i| clean(*i))
        {
            return Some(at);
        }
        self.appended
            .windows(needle.len())
            .position(|w| w == needle.as_slice())
            .map(|i| self.base_len + i as u64)
    }

    fn append(&mut self, s: &[u8]) -> u64 {
        let at = self.base_len + self.appended.len() as u64;
        self.appended.extend_from_slice(s);
        self.appended.push(0);
        at
    }

    /// Whether anything besides entry `except` points into `[off, off + len]`.
    fn exclusive(&self, off: u64, len: u64, except: usize) -> bool {
        let Some(refs) = &self.references else {
            return false;
        };
        let inside = |v: u64| v >= off && v <= off + len;
        let original = &self
            .elf
            .dynamic
            .as_ref()
            .expect("planned on a dynamic file")
            .entries;
        let points_inside = |entries: &[(u64, u64)]| {
            entries
                .iter()
                .enumerate()
                .any(|(j, (t, v))| j != except && tag_in(*t, &STRING_TAGS) && inside(*v))
        };
        !refs.iter().any(|r| inside(r.value))
            && !points_inside(original)
            && !points_inside(&self.entries)
    }

    /// Makes entry `i` read as `s`.
    fn set_string(&mut self, i: usize, s: &[u8]) -> Result<(), ElfError> {
        self.strings[i] = Some(s.to_vec());
        let old_off = self.entries[i].1;
        let old = string_at(&self.table, old_off)?.to_vec();
        if old == s {
            return Ok(());
        }
        if let Some(at) = self.find(s) {
            self.entries[i].1 = at;
            return Ok(());
        }
        let original_len = self.elf.dynamic.as_ref().map_or(0, |d| d.entries.len());
        if s.len() <= old.len() && i < original_len && self.exclusive(old_off, old.len() as u64, i)
        {
            let start = usize::try_from(old_off).expect("offset inside the table");
            let region = &mut self.table[start..=start + old.len()];
            region.fill(b'X');
            region[..s.len()].copy_from_slice(s);
            region[s.len()] = 0;
            region[old.len()] = 0;
            self.dirty.push((old_off, old_off + old.len() as u64 + 1));
            return Ok(());
        }
        self.entries[i].1 = self.append(s);
        Ok(())
    }

    /// Points every `DT_NEEDED` reading `old`, and every version requirement naming the
    /// file `old`, at `new`.
    fn replace_needed(&mut self, table: &[u8], old: &[u8], new: &[u8]) -> Result<(), ElfError> {
        for i in 0..self.entries.len() {
            if self.entries[i].0 == u64::from(elf::DT_NEEDED)
                && self.strings[i].as_deref() == Some(old)
            {
                self.set_string(i, new)?;
            }
        }
        let files: Vec<Reference> = self
            .references
            .iter()
            .flatten()
            .filter(|r| r.needed_file)
            .copied()
            .collect();
        for r in files {
            if string_at(table, r.value)? == old {
                let at = self.find(new).unwrap_or_else(|| self.append(new));
                self.reference_updates.push((r.field, at));
            }
        }
        Ok(())
    }

    /// Sets the search path (spec §10.4–§10.5) as one entry of the chosen tag.
    fn set_search_path(&mut self, edit: &Edit) -> Result<(), ElfError> {
        let text = |tag: u32| {
            self.entries
                .iter()
                .zip(&self.strings)
                .find(|((t, _), _)| *t == u64::from(tag))
                .and_then(|(_, s)| s.clone())
        };
        let existing = text(elf::DT_RUNPATH).or_else(|| text(elf::DT_RPATH));
        let slots: Vec<usize> = (0..self.entries.len())
            .filter(|i| tag_in(self.entries[*i].0, &[elf::DT_RPATH, elf::DT_RUNPATH]))
            .collect();
        let path = if edit.shrink_rpath {
            let Some(existing) = existing else {
                return Ok(());
            };
            let needed: Vec<Vec<u8>> = self
                .elf
                .needed()?
                .into_iter()
                .map(String::into_bytes)
                .collect();
            crate::shrink::shrink(
                &existing,
                &needed,
                self.elf.machine,
                &edit.allowed_rpath_prefixes,
                &crate::shrink::machine_of,
            )
        } else if edit.remove_rpath {
            for &i in slots.iter().rev() {
                self.remove(i);
            }
            return Ok(());
        } else {
            combine(
                existing.as_deref(),
                edit.set_rpath.as_ref().map(String::as_bytes),
                &edit.add_rpath,
            )
        };
        let tag = if edit.force_rpath {
            elf::DT_RPATH
        } else {
            elf::DT_RUNPATH
        };
        match slots.first() {
            Some(&first) => {
                self.entries[first].0 = u64::from(tag);
                self.set_string(first, &path)?;
                for &i in slots[1..].iter().rev() {
                    self.remove(i);
                }
            }
            None if !path.is_empty() => self.push_string(tag, &path),
            None => {}
        }
        Ok(())
    }

    fn push_string(&mut self, tag: u32, s: &[u8]) {
        let at = self.find(s).unwrap_or_else(|| self.append(s));
        self.entries.push((u64::from(tag), at));
        self.strings.push(Some(s.to_vec()));
    }

    fn remove(&mut self, i: usize) {
        self.entries.remove(i);
        self.strings.remove(i);
    }
}

/// Applies `edit` to the ELF image `data`. `Ok(None)` when nothing changes; the returned image
/// has been parsed back and checked (spec §10.7 invariants) before it is returned.
pub fn patch(data: &[u8], edit: &Edit) -> Result<Option<Vec<u8>>, ElfError> {
    Ok(patch_and_expectation(data, edit)?.map(|(out, _)| out))
}

/// [`patch`], also returning what the verification checked the dynamic entries against.
pub(crate) fn patch_and_expectation(
    data: &[u8],
    edit: &Edit,
) -> Result<Option<(Vec<u8>, Expected)>, ElfError> {
    let elf = Elf::parse(data)?;
    patch_parsed(&elf, edit, &InMemory(data))
}

/// The original bytes of an image being edited: the copy the edit is written into, and what
/// the bytes the edit must leave alone are compared with. In memory, or read from a file again
/// (so that a large file need not be held whole beside its edited copy).
pub(crate) trait Original {
    /// The error of reading the bytes.
    type Error: From<ElfError>;
    /// All the bytes, in a buffer of their own.
    fn copy(&self) -> Result<Vec<u8>, Self::Error>;
    /// Whether the original holds `bytes` at offset `at`.
    fn holds(&self, at: u64, bytes: &[u8]) -> Result<bool, Self::Error>;
}

/// Bytes in memory, the image parsed from them.
pub(crate) struct InMemory<'a>(pub(crate) &'a [u8]);

impl Original for InMemory<'_> {
    type Error = ElfError;

    fn copy(&self) -> Result<Vec<u8>, ElfError> {
        Ok(self.0.to_vec())
    }

    fn holds(&self, at: u64, bytes: &[u8]) -> Result<bool, ElfError> {
        let at = usize::try_from(at).map_err(|_| ElfError::Truncated(at))?;
        Ok(self.0.get(at..at + bytes.len()) == Some(bytes))
    }
}

/// Plans `edit` on the parsed `elf`, writes it into a copy of `original` (the bytes `elf` was
/// parsed from) and verifies the result; `None` when nothing changes.
pub(crate) fn patch_parsed<O: Original>(
    elf: &Elf<'_>,
    edit: &Edit,
    original: &O,
) -> Result<Option<(Vec<u8>, Expected)>, O::Error> {
    let Some((plan, expected)) = plan_edit(elf, edit)? else {
        return Ok(None);
    };
    let out = layout(elf, &plan, original.copy()?)?;
    let kept = crate::verify::verify(elf, &out, &expected)?;
    crate::verify::unchanged(&kept, &out, |at, bytes| original.holds(at, bytes))?;
    Ok(Some((out, expected)))
}

/// What `edit` changes in `elf`, and what its dynamic entries must read as afterwards; `None`
/// when it changes nothing.
fn plan_edit<'e, 'a>(
    elf: &'e Elf<'a>,
    edit: &Edit,
) -> Result<Option<(Plan<'e, 'a>, Expected)>, ElfError> {
    if edit.is_empty() {
        return Ok(None);
    }
    let Some(dynamic) = &elf.dynamic else {
        return Err(ElfError::NoDynamic);
    };
    if let Some(p) = elf
        .phdrs
        .iter()
        .find(|p| p.p_type == elf::PT_LOAD && p.align > MAX_ALIGN)
    {
        return Err(ElfError::Malformed(format!(
            "a PT_LOAD's alignment {:#x} is implausibly large (above 1 GiB)",
            p.align
        )));
    }
    let table = elf.dynstr()?;
    let strings = dynamic
        .entries
        .iter()
        .map(|(t, v)| {
            tag_in(*t, &STRING_TAGS)
                .then(|| string_at(table, *v).map(<[u8]>::to_vec))
                .transpose()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut plan = Plan {
        elf,
        table: table.to_vec(),
        base_len: table.len() as u64,
        appended: Vec::new(),
        dirty: Vec::new(),
        entries: dynamic.entries.clone(),
        strings,
        references: None,
        reference_updates: Vec::new(),
    };
    plan.references = elf.string_references()?;

    for (old, new) in &edit.replace_needed {
        plan.replace_needed(table, old.as_bytes(), new.as_bytes())?;
    }

    // As patchelf: only shared objects (ET_DYN) carry a SONAME.
    if let Some(soname) = edit
        .set_soname
        .as_ref()
        .filter(|_| elf.e_type == elf::ET_DYN)
    {
        match plan
            .entries
            .iter()
            .position(|(t, _)| *t == u64::from(elf::DT_SONAME))
        {
            Some(i) => plan.set_string(i, soname.as_bytes())?,
            None => plan.push_string(elf::DT_SONAME, soname.as_bytes()),
        }
    }

    if edit.touches_search_path() {
        plan.set_search_path(edit)?;
    }

    let unchanged = plan.entries == dynamic.entries
        && plan.appended.is_empty()
        && plan.dirty.is_empty()
        && plan.reference_updates.is_empty();
    if unchanged {
        return Ok(None);
    }
    let expected = Expected {
        entries: plan
            .entries
            .iter()
            .zip(&plan.strings)
            .filter(|((t, _), _)| !tag_in(*t, &[elf::DT_STRTAB, elf::DT_STRSZ]))
            .map(|((t, v), s)| {
                (
                    *t,
                    match s {
                        Some(s) => Value::Str(s.clone()),
                        None => Value::Num(*v),
                    },
                )
            })
            .collect(),
    };
    Ok(Some((plan, expected)))
}

/// Whether the `len` bytes at `at` hold nothing: no section contents, no non-`PT_LOAD`
/// segment, not the ELF header or the section header table, and inside the `PT_LOAD`
/// mapping the program headers.
fn free_after_phdrs(elf: &Elf<'_>, at: u64, len: u64) -> bool {
    let overlaps = |o: u64, l: u64| l > 0 && o < at + len && at < o.saturating_add(l);
    let covering = elf
        .phdrs
        .iter()
        .filter(|p| p.p_type == elf::PT_LOAD)
        .any(|p| p.offset <= elf.phoff && at + len <= p.offset.saturating_add(p.filesz));
    let shdr_table = elf.shdrs.len() as u64 * elf.shentsize;
    covering
        && !elf.shdrs.is_empty()
        && at >= elf.ehsize
        && !overlaps(elf.shoff, shdr_table)
        && !elf
            .shdrs
            .iter()
            .any(|s| s.sh_type != elf::SHT_NOBITS && s.sh_type != 0 && overlaps(s.offset, s.size))
        && !elf.phdrs.iter().any(|p| {
            !matches!(p.p_type, elf::PT_LOAD | elf::PT_PHDR) && overlaps(p.offset, p.filesz)
        })
}

/// A new `PT_LOAD` at the end of the file.
#[derive(Debug, Clone, Copy)]
struct Segment {
    offset: u64,
    vaddr: u64,
    size: u64,
    align: u64,
    flags: u32,
}

/// What moves into the new segments: a read-only one holds the program headers (when they
/// cannot grow in place), the string table copy (when strings were appended) and a read-only
/// dynamic section; a read-write one holds a dynamic section that was writable (the loader
/// writes `DT_DEBUG` into it). Each exists only when it holds something.
#[derive(Debug, Clone, Copy)]
struct Moves {
    pht: bool,
    /// Sections moved out of the program header table's way, into the read-only segment.
    displaced: Option<Displaced>,
    strings: bool,
    /// The dynamic section moves, into the read-write segment when `Some(true)`.
    dynamic: Option<bool>,
}

impl Moves {
    fn plan(elf: &Elf<'_>, grow_strings: bool, move_dynamic: bool) -> Self {
        let dyn_ph = elf.phdrs[elf.dynamic.as_ref().expect("dynamic").phdr];
        // The dynamic section stays writable if the segment it was loaded from was.
        let writable = elf
            .phdrs
            .iter()
            .filter(|p| p.p_type == elf::PT_LOAD)
            .find(|p| p.file_offset(dyn_ph.vaddr, dyn_ph.filesz).is_some())
            .is_none_or(|p| p.flags & elf::PF_W != 0);
        let mut moves = Moves {
            pht: false,
            displaced: None,
            strings: grow_strings,
            dynamic: move_dynamic.then_some(writable),
        };
        let at = elf.phoff + elf.phdrs.len() as u64 * elf.phentsize;
        if !free_after_phdrs(elf, at, moves.new_loads() * elf.phentsize) {
            // Displaced sections go into a read-only segment, which may be one more.
            let loads = 1 + u64::from(moves.read_write());
            moves.displaced = displaceable(elf, at + loads * elf.phentsize);
            moves.pht = moves.displaced.is_none();
        }
        moves
    }

    fn read_only(self) -> bool {
        self.pht || self.displaced.is_some() || self.strings || self.dynamic == Some(false)
    }

    fn read_write(self) -> bool {
        self.dynamic == Some(true)
    }

    fn new_loads(self) -> u64 {
        u64::from(self.read_only()) + u64::from(self.read_write())
    }
}

/// Where the new segments go: file offset, address and alignment of the first one. Its file
/// offset follows the file's end (16-aligned), its address lies above every segment, congruent
/// with the offset modulo the largest `PT_LOAD` alignment. An executable whose program headers
/// move keeps its first segment's address-to-offset distance for them: kernels before Linux
/// 5.18 compute `AT_PHDR` as that segment's load address plus `e_phoff`.
///
/// A read-only segment also starts beyond every dynamic relocation's address plus its
/// symbol's size: checkers (`eu-elflint`) take a relocation at `r_offset` against a symbol of
/// size `n` as writing `[r_offset, r_offset + n]`, and would count a read-only segment there as
/// one written by relocations (text relocations).
fn place(elf: &Elf<'_>, out_len: u64, moves: Moves) -> Result<(u64, u64, u64, u64), ElfError> {
    let pht_moves = moves.pht;
    let loads = elf.phdrs.iter().filter(|p| p.p_type == elf::PT_LOAD);
    let mut max_end = loads
        .clone()
        .map(|p| p.vaddr.checked_add(p.memsz).ok_or_else(no_room))
        .try_fold(0, |m, e| e.map(|e| m.max(e)))?;
    if moves.read_only() {
        // Without readable relocation tables: every address plus the largest symbol size.
        let reach = match elf.relocation_reach() {
            Some(r) => r,
            None => max_end.saturating_add(elf.largest_dynamic_symbol().unwrap_or(0)),
        };
        max_end = max_end.max(reach.checked_add(1).ok_or_else(no_room)?);
    }
    let align = loads.map(|p| p.align).max().unwrap_or(1).max(0x1000);
    let file_end = align_up(out_len, 16).ok_or_else(no_room)?;
    let first_vaddr = align_up(max_end, align).ok_or_else(no_room)?;
    let has_interp = elf.phdrs.iter().any(|p| p.p_type == elf::PT_INTERP);
    let (offset, vaddr, seg_align) = match elf.phdrs.iter().find(|p| {
        p.p_type == elf::PT_LOAD && p.offset <= elf.phoff && elf.phoff < p.offset + p.filesz
    }) {
        Some(first) if pht_moves && has_interp => {
            let delta = first.vaddr.wrapping_sub(first.offset);
            let offset =
                align_up(file_end.max(first_vaddr.wrapping_sub(delta)), 16).ok_or_else(no_room)?;
            (offset, offset.wrapping_add(delta), first.align.max(1))
        }
        _ => (
            file_end,
            first_vaddr
                .checked_add(file_end % align)
                .ok_or_else(no_room)?,
            align,
        ),
    };
    if offset - file_end > MAX_PADDING {
        return Err(ElfError::Unsupported(format!(
            "moving the program headers would pad the file by {} bytes",
            offset - file_end
        )));
    }
    if vaddr < max_end {
        return Err(no_room());
    }
    Ok((offset, vaddr, seg_align, align))
}

/// The new segments, read-only first: their file bytes are contiguous; the read-write one
/// starts on a new page of memory (at the next multiple of `align`, plus its offset's
/// remainder), so the two never share a page's permissions.
fn segments(
    elf: &Elf<'_>,
    out_len: u64,
    moves: Moves,
    sizes: (u64, u64),
) -> Result<Vec<Segment>, ElfError> {
    let (read_only_size, writable_size) = sizes;
    let (offset, vaddr, seg_align, align) = place(elf, out_len, moves)?;
    let mut segs = Vec::new();
    let (mut offset, mut vaddr) = (offset, vaddr);
    if moves.read_only() {
        segs.push(Segment {
            offset,
            vaddr,
            size: read_only_size,
            align: seg_align,
            flags: elf::PF_R,
        });
        let end = vaddr.checked_add(read_only_size).ok_or_else(no_room)?;
        offset = align_up(offset + read_only_size, 16).ok_or_else(no_room)?;
        vaddr = align_up(end, align)
            .and_then(|v| v.checked_add(offset % align))
            .ok_or_else(no_room)?;
    }
    if moves.read_write() {
        segs.push(Segment {
            offset,
            vaddr,
            size: writable_size,
            align,
            flags: elf::PF_R | elf::PF_W,
        });
    }
    if segs.iter().any(|s| s.vaddr.checked_add(s.size).is_none()) {
        return Err(no_room());
    }
    Ok(segs)
}

/// Writes the planned edit into `out`, a copy of the file.
#[expect(
    clippy::too_many_lines,
    reason = "one pass over the new segments' contents reads best in one place"
)]
fn layout(elf: &Elf<'_>, plan: &Plan<'_, '_>, mut out: Vec<u8>) -> Result<Vec<u8>, ElfError> {
    let c = elf.c;
    let dynamic = elf.dynamic.as_ref().expect("planned on a dynamic file");
    let dyn_ph = elf.phdrs[dynamic.phdr];
    let entry_size = 2 * c.word_size();
    let grow_strings = !plan.appended.is_empty();
    let move_dynamic = plan.entries.len() + 1 > dynamic.capacity;
    if out.len() != elf.data.len() {
        return Err(ElfError::Malformed(
            "the file changed while it was read".to_owned(),
        ));
    }
    let mut phdrs = elf.phdrs.clone();
    let mut entries = plan.entries.clone();
    let old_strtab = elf.dyn_value(elf::DT_STRTAB).expect("checked by dynstr()");
    let table_at = elf
        .vaddr_to_offset(old_strtab, plan.base_len)
        .expect("checked by dynstr()");

    // In-place string edits and version-requirement renames.
    if !plan.dirty.is_empty() && !grow_strings {
        let at = usize::try_from(table_at).expect("inside the file");
        out[at..at + plan.table.len()].copy_from_slice(&plan.table);
    }
    for (field, value) in &plan.reference_updates {
        let value = u32::try_from(*value)
            .map_err(|_| ElfError::Unsupported("string table above 4 GiB".to_owned()))?;
        c.put_u32(&mut out, *field, value);
    }

    let mut phoff = elf.phoff;
    let mut dyn_at = dyn_ph.offset;
    let mut dyn_slots = dynamic.capacity as u64;
    if grow_strings || move_dynamic {
        let moves = Moves::plan(elf, grow_strings, move_dynamic);
        let pht_size = (elf.phdrs.len() as u64 + moves.new_loads()) * elf.phentsize;
        // The read-only segment: [program headers | displaced sections] [string table]
        // [read-only dynamic section]; the read-write one: [dynamic section].
        let mut ro_size = if moves.pht { pht_size } else { 0 };
        if let Some(d) = moves.displaced {
            // At the same address modulo 16 (the segment starts 16-aligned): the notes keep
            // their alignment.
            ro_size = d.vaddr % 16 + d.end - d.start;
        }
        let str_rel = ro_size.next_multiple_of(8);
        if grow_strings {
            ro_size = str_rel + plan.base_len + plan.appended.len() as u64;
        }
        if move_dynamic {
            dyn_slots = entries.len() as u64 + 2;
        }
        let dyn_bytes = dyn_slots * entry_size;
        let dyn_rel = ro_size.next_multiple_of(8);
        if moves.dynamic == Some(false) {
            ro_size = dyn_rel + dyn_bytes;
        }
        let segs = segments(elf, out.len() as u64, moves, (ro_size, dyn_bytes))?;
        let last_load = elf
            .phdrs
            .iter()
            .rposition(|p| p.p_type == elf::PT_LOAD)
            .ok_or_else(|| {
                ElfError::Unsupported("no loadable segment to place the new tables after".into())
            })?;
        for (i, s) in segs.iter().enumerate() {
            phdrs.insert(
                last_load + 1 + i,
                Phdr {
                    p_type: elf::PT_LOAD,
                    flags: s.flags,
                    offset: s.offset,
                    vaddr: s.vaddr,
                    paddr: s.vaddr,
                    filesz: s.size,
                    memsz: s.size,
                    align: s.align,
                },
            );
        }
        let ro = segs[0];
        let rw = *segs.last().expect("at least one segment");
        for p in phdrs.iter_mut().filter(|p| p.p_type == elf::PT_PHDR) {
            if moves.pht {
                (p.offset, p.vaddr, p.paddr) = (ro.offset, ro.vaddr, ro.vaddr);
            }
            (p.filesz, p.memsz) = (pht_size, pht_size);
        }
        if moves.pht {
            phoff = ro.offset;
        }
        let len = usize::try_from(rw.offset + rw.size).expect("file size fits memory");
        out.reserve_exact(len - out.len());
        out.resize(len, 0);
        let mut relocated = Vec::new();
        if let Some(d) = moves.displaced {
            let rel = d.vaddr % 16;
            relocated.extend(crate::displace::apply(
                elf,
                &mut out,
                &mut phdrs,
                d,
                ro.offset + rel,
                ro.vaddr + rel,
            )?);
        }
        if grow_strings {
            let at = usize::try_from(ro.offset + str_rel).expect("inside the file");
            out[at..at + plan.table.len()].copy_from_slice(&plan.table);
            out[at + plan.table.len()..at + plan.table.len() + plan.appended.len()]
                .copy_from_slice(&plan.appended);
            let new_len = plan.base_len + plan.appended.len() as u64;
            for e in &mut entries {
                if e.0 == u64::from(elf::DT_STRTAB) {
                    e.1 = ro.vaddr + str_rel;
                } else if e.0 == u64::from(elf::DT_STRSZ) {
                    e.1 = new_len;
                }
            }
            relocated.extend(update_sections(
                elf,
                &mut out,
                elf::SHT_STRTAB,
                old_strtab,
                ro.offset + str_rel,
                ro.vaddr + str_rel,
                new_len,
            )?);
        }
        if let Some(writable) = moves.dynamic {
            let (seg, rel) = if writable { (rw, 0) } else { (ro, dyn_rel) };
            dyn_at = seg.offset + rel;
            let p = phdrs
                .iter_mut()
                .find(|p| p.p_type == elf::PT_DYNAMIC)
                .expect("the dynamic segment exists");
            (p.offset, p.vaddr, p.paddr, p.filesz, p.memsz) = (
                dyn_at,
                seg.vaddr + rel,
                seg.vaddr + rel,
                dyn_bytes,
                dyn_bytes,
            );
            relocated.extend(update_sections(
                elf,
                &mut out,
                elf::SHT_DYNAMIC,
                dyn_ph.vaddr,
                dyn_at,
                seg.vaddr + rel,
                dyn_bytes,
            )?);
        }
        crate::symbols::update(elf, &mut out, &relocated)?;
    }

    // The dynamic entries, then DT_NULL up to the capacity.
    for slot in 0..dyn_slots {
        let at = dyn_at + slot * entry_size;
        let (t, v) = entries
            .get(usize::try_from(slot).expect("small"))
            .copied()
            .unwrap_or((u64::from(elf::DT_NULL), 0));
        c.put_word(&mut out, at, t)?;
        c.put_word(&mut out, at + c.word_size(), v)?;
    }
    // The program headers and the ELF header.
    for (i, p) in phdrs.iter().enumerate() {
        p.write(c, &mut out, phoff + i as u64 * elf.phentsize)?;
    }
    let w = c.word_size();
    c.put_word(&mut out, 24 + w, phoff)?;
    let phnum = u16::try_from(phdrs.len())
        .ok()
        .filter(|n| *n < 0xffff)
        .ok_or_else(|| ElfError::Unsupported("too many program headers".to_owned()))?;
    c.put_u16(&mut out, 24 + 3 * w + 4 + 4, phnum);
    Ok(out)
}

/// Points the allocated section headers of type `sh_type` at address `old_addr` to the new
/// place of their contents; returns what moved.
fn update_sections(
    elf: &Elf<'_>,
    out: &mut [u8],
    sh_type: u32,
    old_addr: u64,
    offset: u64,
    addr: u64,
    size: u64,
) -> Result<Vec<Moved>, ElfError> {
    let [f_addr, f_offset, f_size, _] = shdr_fields(elf.c.class);
    let mut moved = Vec::new();
    for (i, s) in elf.shdrs.iter().enumerate() {
        if s.sh_type == sh_type && s.addr == old_addr && s.addr != 0 {
            let at = elf.shoff + i as u64 * elf.shentsize;
            elf.c.put_word(out, at + f_addr, addr)?;
            elf.c.put_word(out, at + f_offset, offset)?;
            elf.c.put_word(out, at + f_size, size)?;
            moved.push(Moved {
                index: i,
                old_addr: s.addr,
                old_size: s.size,
                new_addr: addr,
            });
        }
    }
    Ok(moved)
}
