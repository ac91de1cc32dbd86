//! Reading and editing an ELF file made byte by byte, on every system the crate builds for:
//! no `cc`, no loader, so these also run where the files cannot be built or loaded (Windows,
//! whose wheels hold PE files that are never patched, but whose jobs may still read ELF).

use std::path::Path;

use super::{DynamicInfo, Edit, ElfError, Error, patch_file, patch_file_to, read_file};

const STRTAB_AT: usize = 0x100;
const DYNAMIC_AT: usize = 0x140;

fn put(image: &mut [u8], at: usize, bytes: &[u8]) {
    image[at..at + bytes.len()].copy_from_slice(bytes);
}

/// A minimal x86-64 shared library: the ELF header, two program headers (one `PT_LOAD` over
/// the whole file, `PT_DYNAMIC`), a string table and a dynamic section naming its SONAME and
/// one needed library, with spare `DT_NULL` entries; no section headers.
fn tiny_library() -> Vec<u8> {
    let strings: &[u8] = b"\0libc.so.6\0libtiny.so.1\0";
    let dynamic: [(u64, u64); 7] = [
        (1, 1),                     // DT_NEEDED libc.so.6
        (14, 11),                   // DT_SONAME libtiny.so.1
        (5, STRTAB_AT as u64),      // DT_STRTAB
        (10, strings.len() as u64), // DT_STRSZ
        (0, 0),                     // DT_NULL, and room for more entries
        (0, 0),
        (0, 0),
    ];
    let size = DYNAMIC_AT + dynamic.len() * 16;
    let mut f = vec![0u8; size];
    // e_ident: ELFCLASS64, ELFDATA2LSB, EV_CURRENT, System V.
    put(&mut f, 0, b"\x7fELF\x02\x01\x01\x00");
    put(&mut f, 16, &3u16.to_le_bytes()); // ET_DYN
    put(&mut f, 18, &62u16.to_le_bytes()); // EM_X86_64
    put(&mut f, 20, &1u32.to_le_bytes());
    put(&mut f, 32, &64u64.to_le_bytes()); // e_phoff
    put(&mut f, 52, &64u16.to_le_bytes()); // e_ehsize
    put(&mut f, 54, &56u16.to_le_bytes()); // e_phentsize
    put(&mut f, 56, &2u16.to_le_bytes()); // e_phnum
    put(&mut f, 58, &64u16.to_le_bytes()); // e_shentsize
    let phdr = |f: &mut [u8], at: usize, kind: u32, offset: u64, len: u64, align: u64| {
        put(f, at, &kind.to_le_bytes());
        put(f, at + 4, &6u32.to_le_bytes()); // PF_R | PF_W
        for (field, value) in [
            (8, offset),
            (16, offset),
            (24, offset),
            (32, len),
            (40, len),
        ] {
            put(f, at + field, &value.to_le_bytes());
        }
        put(f, at + 48, &align.to_le_bytes());
    };
    phdr(&mut f, 64, 1, 0, size as u64, 0x1000); // PT_LOAD
    phdr(
        &mut f,
        120,
        2, // PT_DYNAMIC
        DYNAMIC_AT as u64,
        (dynamic.len() * 16) as u64,
        8,
    );
    put(&mut f, STRTAB_AT, strings);
    for (i, (tag, value)) in dynamic.iter().enumerate() {
        put(&mut f, DYNAMIC_AT + i * 16, &tag.to_le_bytes());
        put(&mut f, DYNAMIC_AT + i * 16 + 8, &value.to_le_bytes());
    }
    f
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    fs_err::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_library_made_by_hand_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let lib = write(dir.path(), "libtiny.so.1", &tiny_library());
    assert_eq!(
        read_file(&lib).unwrap(),
        DynamicInfo {
            soname: Some("libtiny.so.1".into()),
            needed: vec!["libc.so.6".into()],
            ..DynamicInfo::default()
        }
    );
}

/// A search path and a longer SONAME, which do not fit the string table: both land (the
/// table copied into a new segment), the image parses back, and with an output the input is
/// left as it was.
#[test]
fn an_edit_that_outgrows_the_string_table_lands_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let original = tiny_library();
    let lib = write(dir.path(), "libtiny.so.1", &original);
    let edit = Edit {
        add_rpath: vec!["$ORIGIN/../../_rocm_sdk_core/lib".into()],
        force_rpath: true,
        set_soname: Some("libtiny-with-a-longer-name.so.1".into()),
        ..Edit::default()
    };
    let out = dir.path().join("out.so");
    assert!(patch_file_to(&lib, Some(&out), &edit).unwrap());
    assert_eq!(fs_err::read(&lib).unwrap(), original);
    let want = DynamicInfo {
        soname: Some("libtiny-with-a-longer-name.so.1".into()),
        rpath: Some("$ORIGIN/../../_rocm_sdk_core/lib".into()),
        needed: vec!["libc.so.6".into()],
        ..DynamicInfo::default()
    };
    assert_eq!(read_file(&out).unwrap(), want);
    assert!(fs_err::read(&out).unwrap().len() > original.len());
    // In place, the same result.
    assert!(patch_file(&lib, &edit).unwrap());
    assert_eq!(read_file(&lib).unwrap(), want);
    assert_eq!(fs_err::read(&lib).unwrap(), fs_err::read(&out).unwrap());
}

/// What a Windows wheel holds instead of ELF: a PE file is refused as not ELF, named, and
/// left unchanged; so is a truncated ELF.
#[test]
fn a_pe_file_or_a_cut_elf_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut pe = vec![0u8; 512];
    put(&mut pe, 0, b"MZ");
    put(&mut pe, 0x3c, &0x80u32.to_le_bytes());
    put(&mut pe, 0x80, b"PE\0\0");
    let pe_path = write(dir.path(), "amdhip64.dll", &pe);
    let cut = write(dir.path(), "libcut.so", &tiny_library()[..100]);
    let edit = Edit {
        set_rpath: Some("$ORIGIN".into()),
        ..Edit::default()
    };
    for (path, bytes) in [
        (&pe_path, pe.clone()),
        (&cut, tiny_library()[..100].to_vec()),
    ] {
        let err = patch_file(path, &edit).unwrap_err();
        assert!(
            err.to_string().starts_with(&path.display().to_string()),
            "{err}"
        );
        assert!(matches!(err, Error::Elf { .. }), "{err}");
        assert_eq!(fs_err::read(path).unwrap(), bytes);
    }
    assert_eq!(
        read_file(&pe_path).unwrap_err().elf(),
        Some(&ElfError::NotElf)
    );
}

/// A read-only file (Windows' read-only attribute) is refused as not writable and keeps its
/// contents; as root on Unix the mode does not stop a write, so this is checked on Windows.
#[cfg(windows)]
#[test]
fn a_read_only_file_is_refused_and_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let original = tiny_library();
    let lib = write(dir.path(), "libtiny.so.1", &original);
    let mut permissions = fs_err::metadata(&lib).unwrap().permissions();
    permissions.set_readonly(true);
    fs_err::set_permissions(&lib, permissions).unwrap();
    let edit = Edit {
        set_rpath: Some("$ORIGIN".into()),
        ..Edit::default()
    };
    let err = patch_file(&lib, &edit).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert_eq!(fs_err::read(&lib).unwrap(), original);
    assert!(fs_err::metadata(&lib).unwrap().permissions().readonly());
}
