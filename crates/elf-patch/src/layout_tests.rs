//! Where moved tables go, on files built with `cc`: read-only data in a read-only segment, the
//! static symbols of moved sections following them, and nothing `eu-elflint` did not already
//! report about the original.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::elf;
use rock_ci_test_support::elf::{cc, elflint};

use crate::parse::{Elf, Phdr, shdr_fields};
use crate::symbols::symbols_in;
use crate::{Edit, patch_file};

const LIB: &str = "int counter;\nint lib_value(void) { return counter + 1; }\n";
const PROGRAM: &str = "#include <stdio.h>\nint main(void) { puts(\"ok\"); return 0; }\n";

/// A path entry long enough that the string table must be copied.
fn long_entry() -> String {
    format!("$ORIGIN/../{}", "not-here/".repeat(30))
}

fn add(entry: &str) -> Edit {
    Edit {
        add_rpath: vec![entry.to_owned()],
        ..Edit::default()
    }
}

/// Shrinks the dynamic section (segment and section header) to its entries and one
/// `DT_NULL`, as linkers that leave no spare slot write it, so that an added entry moves it.
fn without_spare_dynamic_slots(path: &Path) {
    let original = fs_err::read(path).unwrap();
    let mut data = original.clone();
    let elf = Elf::parse(&original).unwrap();
    let d = elf.dynamic.clone().unwrap();
    let ph = elf.phdrs[d.phdr];
    let bytes = (d.entries.len() as u64 + 1) * 2 * elf.c.word_size();
    let at = elf.phoff + d.phdr as u64 * elf.phentsize;
    Phdr {
        filesz: bytes,
        memsz: bytes,
        ..ph
    }
    .write(elf.c, &mut data, at)
    .unwrap();
    let [_, _, f_size, _] = shdr_fields(elf.c.class);
    for (i, s) in elf.shdrs.iter().enumerate() {
        if s.sh_type == elf::SHT_DYNAMIC {
            let at = elf.shoff + i as u64 * elf.shentsize + f_size;
            elf.c.put_word(&mut data, at, bytes).unwrap();
        }
    }
    fs_err::write(path, data).unwrap();
}

/// The `PT_LOAD` mapping `[vaddr, vaddr + len)`.
fn load_of(elf: &Elf<'_>, vaddr: u64, len: u64) -> Phdr {
    *elf.phdrs
        .iter()
        .find(|p| p.p_type == elf::PT_LOAD && p.file_offset(vaddr, len).is_some())
        .unwrap_or_else(|| panic!("no PT_LOAD maps {vaddr:#x}"))
}

#[test]
fn read_only_tables_move_into_a_read_only_segment() {
    let dir = tempfile::tempdir().unwrap();
    // One library whose dynamic section has room for the new entry (only the string table
    // moves), one without (the dynamic section moves too, into a writable segment of its own).
    let roomy = cc(dir.path(), "libroomy.so", LIB, &["-shared", "-fPIC"]);
    let tight = cc(dir.path(), "libtight.so", LIB, &["-shared", "-fPIC"]);
    without_spare_dynamic_slots(&tight);
    for (lib, dynamic_moves) in [(&roomy, false), (&tight, true)] {
        let before = fs_err::read(lib).unwrap();
        let old = Elf::parse(&before).unwrap();
        assert!(patch_file(lib, &add(&long_entry())).unwrap());
        let after = fs_err::read(lib).unwrap();
        let new = Elf::parse(&after).unwrap();
        let loads = |e: &Elf<'_>| e.phdrs.iter().filter(|p| p.p_type == elf::PT_LOAD).count();
        assert_eq!(
            loads(&new),
            loads(&old) + 1 + usize::from(dynamic_moves),
            "{}",
            lib.display()
        );
        let strtab = new.dyn_value(elf::DT_STRTAB).unwrap();
        let strsz = new.dyn_value(elf::DT_STRSZ).unwrap();
        let strings = load_of(&new, strtab, strsz);
        assert!(strings.offset >= old.data.len() as u64, "a new segment");
        assert_eq!(strings.flags, elf::PF_R, "strings: {strings:?}");
        let dyn_ph = new.phdrs[new.dynamic.as_ref().unwrap().phdr];
        let dynamic = load_of(&new, dyn_ph.vaddr, dyn_ph.filesz);
        assert_ne!(
            dynamic.flags & elf::PF_W,
            0,
            "the dynamic section stays writable"
        );
        if dynamic_moves {
            assert!(
                dynamic.offset >= old.data.len() as u64,
                "a second new segment"
            );
            assert_eq!(dynamic.flags, elf::PF_R | elf::PF_W);
            // Separate pages of memory, so permissions never mix.
            assert!(dynamic.vaddr >= (strings.vaddr + strings.memsz).next_multiple_of(0x1000));
        }
        // Every new segment holding only read-only data is read-only.
        for p in new.phdrs.iter().filter(|p| {
            p.p_type == elf::PT_LOAD && p.offset >= old.data.len() as u64 && **p != dynamic
        }) {
            assert_eq!(p.flags, elf::PF_R, "{p:?}");
        }
    }
}

/// `(index, sh_addr)` of the section of type `sh_type`.
fn section_of(elf: &Elf<'_>, sh_type: u32) -> (usize, u64) {
    elf.shdrs
        .iter()
        .enumerate()
        .find(|(_, s)| s.sh_type == sh_type && s.addr != 0)
        .map(|(i, s)| (i, s.addr))
        .unwrap()
}

#[test]
fn static_symbols_of_moved_sections_follow_them() {
    let dir = tempfile::tempdir().unwrap();
    // `-q` (--emit-relocs) keeps a section symbol per section in .symtab.
    let lib = cc(
        dir.path(),
        "libsyms.so",
        LIB,
        &["-shared", "-fPIC", "-Wl,-q"],
    );
    without_spare_dynamic_slots(&lib);
    let before = fs_err::read(&lib).unwrap();
    let old = Elf::parse(&before).unwrap();
    let (dynstr, old_dynstr) = section_of(&old, elf::SHT_STRTAB);
    let (dynamic, old_dynamic) = section_of(&old, elf::SHT_DYNAMIC);
    let old_syms = symbols_in(&old, &[dynstr, dynamic]).unwrap();
    assert!(
        old_syms.iter().filter(|s| s.is_section).count() >= 2,
        "the linker kept the section symbols: {old_syms:?}"
    );
    assert!(
        old_syms
            .iter()
            .any(|s| !s.is_section && s.value == old_dynamic),
        "_DYNAMIC is in .symtab: {old_syms:?}"
    );

    assert!(patch_file(&lib, &add(&long_entry())).unwrap());
    let after = fs_err::read(&lib).unwrap();
    let new = Elf::parse(&after).unwrap();
    let (_, new_dynstr) = section_of(&new, elf::SHT_STRTAB);
    let (_, new_dynamic) = section_of(&new, elf::SHT_DYNAMIC);
    assert_ne!(new_dynstr, old_dynstr);
    assert_ne!(new_dynamic, old_dynamic);
    assert_eq!(new_dynstr, new.dyn_value(elf::DT_STRTAB).unwrap());
    assert_eq!(
        new_dynamic,
        new.phdrs[new.dynamic.as_ref().unwrap().phdr].vaddr
    );
    let new_syms = symbols_in(&new, &[dynstr, dynamic]).unwrap();
    assert_eq!(new_syms.len(), old_syms.len());
    for (a, b) in old_syms.iter().zip(&new_syms) {
        let (old_base, new_base) = if a.section == dynstr {
            (old_dynstr, new_dynstr)
        } else {
            (old_dynamic, new_dynamic)
        };
        assert_eq!(b.value, a.value - old_base + new_base, "{a:?} -> {b:?}");
    }
}

#[test]
fn eu_elflint_finds_nothing_new_in_patched_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut files: Vec<PathBuf> = vec![
        cc(d, "libplain.so", LIB, &["-shared", "-fPIC"]),
        cc(d, "libsyms.so", LIB, &["-shared", "-fPIC", "-Wl,-q"]),
        cc(
            d,
            "librunpath.so",
            LIB,
            &["-shared", "-fPIC", "-Wl,--enable-new-dtags,-rpath,$ORIGIN"],
        ),
        cc(d, "pie", PROGRAM, &["-pie", "-fPIE"]),
        cc(d, "nopie", PROGRAM, &["-no-pie"]),
        cc(d, "pie-syms", PROGRAM, &["-pie", "-fPIE", "-Wl,-q"]),
    ];
    let tight = cc(d, "libtight.so", LIB, &["-shared", "-fPIC", "-Wl,-q"]);
    without_spare_dynamic_slots(&tight);
    files.push(tight);
    for file in &files {
        let before = elflint(file);
        assert!(patch_file(file, &add(&long_entry())).unwrap());
        let after = elflint(file);
        let new: Vec<&String> = after.difference(&before).collect();
        assert!(
            new.is_empty(),
            "{}: eu-elflint reports {new:?} (before: {before:?})",
            file.display()
        );
        // The short edit (a string that does not fit in place either) as well.
        assert!(patch_file(file, &add("$ORIGIN")).unwrap());
        let again = elflint(file);
        let new: Vec<&String> = again.difference(&before).collect();
        assert!(new.is_empty(), "{}: {new:?}", file.display());
    }
    // The programs still run.
    for p in ["pie", "nopie", "pie-syms"] {
        let out = Command::new(d.join(p)).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n", "{p}");
    }
}

#[test]
fn program_headers_grow_in_place_when_interp_and_notes_move() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, flags) in [("pie", &["-pie", "-fPIE"][..]), ("nopie", &["-no-pie"][..])] {
        let program = cc(d, name, PROGRAM, flags);
        let before = fs_err::read(&program).unwrap();
        let old = Elf::parse(&before).unwrap();
        let old_interp = old.interpreter().unwrap().unwrap();
        assert!(patch_file(&program, &add(&long_entry())).unwrap());
        let after = fs_err::read(&program).unwrap();
        let new = Elf::parse(&after).unwrap();
        // The table grew where it was, over .interp and the notes, which moved.
        assert_eq!(new.phoff, old.phoff, "{name}");
        assert_eq!(new.phdrs.len(), old.phdrs.len() + 1, "{name}");
        let interp = new
            .phdrs
            .iter()
            .find(|p| p.p_type == elf::PT_INTERP)
            .unwrap();
        assert!(interp.offset >= before.len() as u64, "{name}: {interp:?}");
        assert_eq!(new.interpreter().unwrap().unwrap(), old_interp);
        let holder = load_of(&new, interp.vaddr, interp.filesz);
        assert_eq!(holder.flags, elf::PF_R, "{name}");
        for p in new.phdrs.iter().filter(|p| p.p_type == elf::PT_NOTE) {
            assert_eq!(p.offset % p.align.max(1), 0, "{name}: {p:?}");
            load_of(&new, p.vaddr, p.filesz);
        }
        // Growth: the string table with the new entry and the moved bytes, no padding and no
        // copy of the table.
        let strsz = new.dyn_value(elf::DT_STRSZ).unwrap();
        let growth = (after.len() - before.len()) as u64;
        assert!(growth < strsz + 512, "{name}: grew {growth} bytes");
        let out = Command::new(&program).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n", "{name}");
    }
}

#[test]
fn only_addresses_in_the_dynamic_section_keep_interp_and_notes_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let program = cc(dir.path(), "pie", PROGRAM, &["-pie", "-fPIE"]);
    let original = fs_err::read(&program).unwrap();
    let elf = Elf::parse(&original).unwrap();
    let interp = *elf
        .phdrs
        .iter()
        .find(|p| p.p_type == elf::PT_INTERP)
        .unwrap();
    let need = elf.phoff + (elf.phdrs.len() as u64 + 1) * elf.phentsize;
    let found = crate::displace::displaceable(&elf, need).unwrap();
    assert_eq!((found.start, found.vaddr), (interp.offset, interp.vaddr));
    // An entry whose value is a size that happens to equal .interp's address changes nothing;
    // one holding an address there (DT_DEBUG) keeps everything where it is.
    let d = elf.dynamic.as_ref().unwrap();
    let dyn_ph = elf.phdrs[d.phdr];
    let slot = |tag: u32| {
        let i = d
            .entries
            .iter()
            .position(|(t, _)| *t == u64::from(tag))
            .unwrap();
        dyn_ph.offset + i as u64 * 2 * elf.c.word_size() + elf.c.word_size()
    };
    for (tag, movable) in [(elf::DT_STRSZ, true), (elf::DT_DEBUG, false)] {
        let mut data = original.clone();
        elf.c.put_word(&mut data, slot(tag), interp.vaddr).unwrap();
        let edited = Elf::parse(&data).unwrap();
        assert_eq!(
            crate::displace::displaceable(&edited, need).is_some(),
            movable,
            "tag {tag:#x}"
        );
    }
}

#[test]
fn a_note_of_impossible_size_is_an_error_or_stays_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let program = cc(dir.path(), "pie", PROGRAM, &["-pie", "-fPIE"]);
    let original = fs_err::read(&program).unwrap();
    let elf = Elf::parse(&original).unwrap();
    for size in [u64::MAX, u64::MAX / 2, original.len() as u64 * 2] {
        let mut data = original.clone();
        for (i, p) in elf.phdrs.iter().enumerate() {
            if p.p_type == elf::PT_NOTE {
                let at = elf.phoff + i as u64 * elf.phentsize;
                Phdr {
                    filesz: size,
                    memsz: size,
                    ..*p
                }
                .write(elf.c, &mut data, at)
                .unwrap();
            }
        }
        // Found by fuzzing: the note's end overflowed. Now the notes stay and the program
        // headers move, or the edit is refused.
        if let Ok(Some(out)) = crate::patch(&data, &add(&long_entry())) {
            let new = Elf::parse(&out).unwrap();
            assert_ne!(new.phoff, elf.phoff, "size {size:#x}");
        }
    }
}
