use super::{MappedFile, Reread};
use crate::write::Original as _;
use crate::{Edit, ElfError, Error, patch};

// The mapped path gives the very bytes (or the very error) the in-memory one gives, on real
// libraries, for an edit that fits in place and one that moves the tables to a new segment.
#[test]
fn a_mapped_file_is_edited_as_its_bytes_in_memory_are() {
    let mut libraries = rock_ci_test_support::system_libraries();
    libraries.truncate(16);
    assert!(libraries.len() >= 8, "too few libraries: {libraries:?}");
    let edits = [
        Edit {
            add_rpath: vec![format!("$ORIGIN/{}", "../x".repeat(40))],
            force_rpath: true,
            ..Edit::default()
        },
        Edit {
            set_soname: Some("libs.so.1".to_owned()),
            ..Edit::default()
        },
        Edit::default(),
    ];
    let mut changed = 0;
    for lib in &libraries {
        let data = fs_err::read(lib).unwrap();
        let mapped = MappedFile::open(lib).unwrap();
        assert_eq!(mapped.bytes(), &data[..]);
        for edit in &edits {
            let in_memory = patch(&data, edit);
            let from_file = mapped.patch(edit);
            match (&in_memory, &from_file) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{} {edit:?}", lib.display());
                    changed += usize::from(a.is_some());
                }
                (Err(a), Err(Error::Elf { source, .. })) => assert_eq!(a, source),
                _ => panic!("{}: {in_memory:?} but {from_file:?}", lib.display()),
            }
        }
        // The file itself is not written.
        assert_eq!(fs_err::read(lib).unwrap(), data);
    }
    assert!(changed >= libraries.len(), "{changed} edits changed a file");
}

#[test]
fn the_original_is_compared_piece_by_piece_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let data: Vec<u8> = (0..(3u32 << 20) + 7).map(|i| (i % 251) as u8).collect();
    fs_err::write(&path, &data).unwrap();
    let mapped = MappedFile::open(&path).unwrap();
    let file = Reread(&mapped);
    let Ok(copy) = file.copy() else {
        panic!("copy")
    };
    assert_eq!(copy, data);
    let holds = |at: usize, bytes: &[u8]| file.holds(at as u64, bytes).ok().unwrap();
    assert!(holds(0, &data));
    assert!(holds(5, &data[5..(2 << 20) + 9]));
    assert!(holds(data.len(), &[]));
    let mut other = data[1000..].to_vec();
    *other.last_mut().unwrap() ^= 1;
    assert!(!holds(1000, &other));
    // Past the end of the file.
    assert!(!holds(data.len() - 2, &data[..4]));
}

#[test]
fn only_regular_files_are_mapped() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        MappedFile::open(dir.path()),
        Err(Error::NotRegular { .. })
    ));
    let missing = dir.path().join("missing");
    assert!(matches!(MappedFile::open(&missing), Err(Error::Io { .. })));
    fs_err::write(&missing, b"not an ELF file").unwrap();
    assert!(matches!(
        MappedFile::open(&missing).unwrap().patch(&Edit {
            set_soname: Some("x".to_owned()),
            ..Edit::default()
        }),
        Err(Error::Elf {
            source: ElfError::NotElf,
            ..
        })
    ));
}
