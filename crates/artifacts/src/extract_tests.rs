use std::path::Path;

use super::extract::*;
use crate::Error;

/// One member of a hand-made archive: stored name, type, link target, data.
type Member<'a> = (&'a str, tar::EntryType, Option<&'a str>, &'a [u8]);

/// A tar stream with exactly the given headers (names are written raw: `..` and absolute
/// paths included).
fn raw_tar(members: &[Member<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, kind, link, data) in members {
        let mut h = tar::Header::new_gnu();
        {
            let gnu = h.as_gnu_mut().unwrap();
            gnu.name = [0; 100];
            gnu.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(link) = link {
                gnu.linkname = [0; 100];
                gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
        }
        h.set_entry_type(*kind);
        h.set_mode(if *kind == tar::EntryType::Directory {
            0o755
        } else {
            0o644
        });
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap()
}

const REG: tar::EntryType = tar::EntryType::Regular;

fn manifest(text: &'static str) -> Member<'static> {
    (MANIFEST_NAME, REG, None, text.as_bytes())
}

fn everything_below(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = walk(root);
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs_err::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let ty = e.file_type().unwrap();
        out.push(e.path().display().to_string());
        if ty.is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn extracts_full_and_flattened_layouts() {
    let data = raw_tar(&[
        manifest("lib/stage\nbin/stage\n"),
        // Parent directories of the manifest paths, as `tar` writes them.
        ("lib/", tar::EntryType::Directory, None, b""),
        ("lib/stage/", tar::EntryType::Directory, None, b""),
        ("lib/stage/lib", tar::EntryType::Directory, None, b""),
        ("lib/stage/lib/libx.so.1", REG, None, b"ELF"),
        (
            "lib/stage/lib/libx.so",
            tar::EntryType::Symlink,
            Some("libx.so.1"),
            b"",
        ),
        (
            "lib/stage/lib/libx-hard.so",
            tar::EntryType::Link,
            Some("lib/stage/lib/libx.so.1"),
            b"",
        ),
        ("bin/stage/bin/tool", REG, None, b"#!/bin/sh\n"),
    ]);
    let full = tempfile::tempdir().unwrap();
    let out = extract_artifact(
        "a_lib_generic.tar.zst",
        &data[..],
        full.path(),
        Layout::Full,
    )
    .unwrap();
    assert_eq!(out.relpaths, ["lib/stage", "bin/stage"]);
    assert_eq!(out.files, 2);
    assert_eq!(
        fs_err::read_to_string(full.path().join(MANIFEST_NAME)).unwrap(),
        "lib/stage\nbin/stage\n"
    );
    assert_eq!(
        fs_err::read(full.path().join("lib/stage/lib/libx.so")).unwrap(),
        b"ELF"
    );
    // A link on Unix; on Windows a link or, where none can be made, a copy (read above).
    #[cfg(unix)]
    assert_eq!(
        fs_err::read_link(full.path().join("lib/stage/lib/libx.so")).unwrap(),
        Path::new("libx.so.1")
    );
    assert_eq!(
        fs_err::read(full.path().join("lib/stage/lib/libx-hard.so")).unwrap(),
        b"ELF"
    );

    let flat = tempfile::tempdir().unwrap();
    extract_artifact(
        "a_lib_generic.tar.zst",
        &data[..],
        flat.path(),
        Layout::Flatten,
    )
    .unwrap();
    let mut got: Vec<String> = everything_below(flat.path())
        .into_iter()
        .map(|p| {
            p.strip_prefix(&flat.path().display().to_string())
                .unwrap()
                .replace('\\', "/")
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            "/bin",
            "/bin/tool",
            "/lib",
            "/lib/libx-hard.so",
            "/lib/libx.so",
            "/lib/libx.so.1"
        ]
    );
}

// Mode bits as extracted: Unix's (Windows files keep only a read-only attribute).
#[cfg(unix)]
#[test]
fn keeps_exec_bits_and_drops_dangerous_ones() {
    use std::os::unix::fs::PermissionsExt as _;
    let mut b = tar::Builder::new(Vec::new());
    for (name, mode, data) in [
        (MANIFEST_NAME, 0o644, &b"s\n"[..]),
        ("s/tool", 0o6777, &b"x"[..]),
        ("s/data", 0o666, &b"y"[..]),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_path(name).unwrap();
        h.set_mode(mode);
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    let data = b.into_inner().unwrap();
    let dir = tempfile::tempdir().unwrap();
    extract_artifact("p.tar.zst", &data[..], dir.path(), Layout::Full).unwrap();
    let mode = |p: &str| {
        fs_err::metadata(dir.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("s/tool"), 0o755);
    assert_eq!(mode("s/data"), 0o644);
}

/// Files, directories and symlinks keep the archive's mtimes (directories too, although
/// members are written into them after their own member), in every layout.
#[test]
fn keeps_member_mtimes() {
    use tar::EntryType::{Directory, Regular, Symlink};
    // Name, type, mtime (seconds since the epoch, all long before any test run).
    let members: &[(&str, tar::EntryType, u64)] = &[
        (MANIFEST_NAME, Regular, 1_000_000_000),
        ("a/", Directory, 1_000_000_100),
        ("a/stage/", Directory, 1_000_000_200),
        ("a/stage/lib/", Directory, 1_100_000_000),
        ("a/stage/lib/deep/", Directory, 1_200_000_000),
        ("a/stage/lib/deep/nested.txt", Regular, 1_300_000_000),
        ("a/stage/lib/top.so", Regular, 1_400_000_000),
        ("a/stage/lib/link.so", Symlink, 1_500_000_000),
        ("a/stage/later.txt", Regular, 1_600_000_000),
    ];
    let mut b = tar::Builder::new(Vec::new());
    for (name, kind, mtime) in members {
        let data: &[u8] = if *name == MANIFEST_NAME {
            b"a/stage\n"
        } else if *kind == Regular {
            name.as_bytes()
        } else {
            b""
        };
        let mut h = tar::Header::new_gnu();
        h.set_path(name).unwrap();
        h.set_entry_type(*kind);
        if *kind == Symlink {
            h.set_link_name("top.so").unwrap();
        }
        h.set_mode(0o755);
        h.set_mtime(*mtime);
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    let data = b.into_inner().unwrap();
    let mtime = |path: &Path| {
        fs_err::symlink_metadata(path)
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    for layout in [Layout::Full, Layout::Flatten, Layout::Bootstrap] {
        let dir = tempfile::tempdir().unwrap();
        extract_artifact("t.tar.zst", &data[..], dir.path(), layout).unwrap();
        let mut checked = 0;
        for (name, kind, want) in members {
            let stored = name.trim_end_matches('/');
            let rel = match layout {
                Layout::Full | Layout::Bootstrap => stored,
                Layout::Flatten => match stored.strip_prefix("a/stage/") {
                    Some(rel) => rel,
                    None => continue,
                },
            };
            // On Windows a link that could not be made is a copy with its target's time.
            let want = if cfg!(windows) && *kind == Symlink {
                1_400_000_000
            } else {
                *want
            };
            assert_eq!(mtime(&dir.path().join(rel)), want, "{layout:?} {name}");
            checked += 1;
        }
        assert_eq!(checked, if layout.keeps_paths() { 9 } else { 6 });
    }
}

/// Hostile archives: each is refused with an error naming the archive and member, and nothing
/// appears outside the destination.
#[test]
fn hostile_members_are_refused() {
    use tar::EntryType::{Block, Char, Directory, Fifo, Link, Symlink};
    // One member after a manifest naming `s`.
    #[rustfmt::skip]
    let lone: &[(&str, Member<'_>, &str)] = &[
        ("dotdot", ("s/../../evil", REG, None, b"x"), "`..`"),
        ("leading dotdot", ("../evil", REG, None, b"x"), "`..`"),
        ("absolute", ("/tmp/evil-rockci", REG, None, b"x"), "absolute"),
        ("windows drive", ("C:/evil", REG, None, b"x"), "absolute"),
        ("outside manifest", ("other/file", REG, None, b"x"), "not below any path"),
        ("manifest itself is a prefix only", ("s", REG, None, b"x"), "not below any path"),
        ("absolute symlink", ("s/passwd", Symlink, Some("/etc/passwd"), b""), "absolute path"),
        ("escaping symlink", ("s/up", Symlink, Some("../../.."), b""), "outside the destination"),
        ("hardlink outside", ("s/h", Link, Some("/etc/passwd"), b""), "outside the destination"),
        ("hardlink dotdot", ("s/h", Link, Some("../../x"), b""), "outside the destination"),
        ("hardlink to unknown", ("s/h", Link, Some("s/nothing"), b""), "not a file extracted earlier"),
        ("char device", ("s/tty", Char, None, b""), "unsupported member type"),
        ("block device", ("s/sda", Block, None, b""), "unsupported member type"),
        ("fifo", ("s/pipe", Fifo, None, b""), "unsupported member type"),
    ];
    let mut cases: Vec<(&str, Vec<Member<'_>>, &str)> = vec![
        (
            "write through symlink",
            vec![
                manifest("s\n"),
                ("s/d", Directory, None, b""),
                ("s/d/l", Symlink, Some(".."), b""),
                ("s/d/l/x", REG, None, b"x"),
            ],
            "parent directory is a symlink",
        ),
        (
            "manifest not first",
            vec![("s/x", REG, None, b"x"), manifest("s\n")],
            "first member must be",
        ),
        (
            "manifest escapes",
            vec![manifest("../s\n"), ("s/x", REG, None, b"x")],
            "manifest path",
        ),
        ("empty archive", vec![], "empty archive"),
    ];
    cases.extend(
        lone.iter()
            .map(|&(what, member, reason)| (what, vec![manifest("s\n"), member], reason)),
    );
    assert!(cases.len() >= 12);
    for (what, members, reason) in cases {
        let outer = tempfile::tempdir().unwrap();
        let dest = outer.path().join("dest");
        fs_err::create_dir(&dest).unwrap();
        let data = raw_tar(&members);
        for layout in [Layout::Full, Layout::Flatten] {
            let err = extract_artifact("hostile_lib_generic.tar.zst", &data[..], &dest, layout)
                .unwrap_err();
            let Error::UnsafeMember(m) = &err else {
                panic!("{what}: {err:?}")
            };
            assert_eq!(m.archive, "hostile_lib_generic.tar.zst");
            assert!(m.reason.contains(reason), "{what}: {}", m.reason);
            assert!(err.to_string().starts_with("Refusing member `"), "{err}");
            // Nothing outside the destination.
            assert_eq!(
                everything_below(outer.path())
                    .iter()
                    .filter(|p| !p.starts_with(&dest.display().to_string()))
                    .count(),
                0,
                "{what}"
            );
        }
    }
    assert!(!Path::new("/tmp/evil-rockci").exists());
}

/// On Unix a backslash is a name character: `back\\slash` is one file (and a symlink's target
/// may name it), in every layout; on Windows such a member is refused, naming it.
#[test]
fn a_backslash_is_part_of_a_name() {
    let data = raw_tar(&[
        manifest("p/stage\n"),
        ("p/stage/share/back\\slash", REG, None, b"kept"),
        (
            "p/stage/share/link",
            tar::EntryType::Symlink,
            Some("back\\slash"),
            b"",
        ),
        // Not a way out: one name, not `..` twice.
        (
            "p/stage/share/odd",
            tar::EntryType::Symlink,
            Some("..\\..\\x"),
            b"",
        ),
    ]);
    for layout in [Layout::Full, Layout::Flatten, Layout::Bootstrap] {
        let dir = tempfile::tempdir().unwrap();
        let result = extract_artifact("b_lib_generic.tar.zst", &data[..], dir.path(), layout);
        let share = if layout.keeps_paths() {
            dir.path().join("p/stage/share")
        } else {
            dir.path().join("share")
        };
        #[cfg(unix)]
        {
            result.unwrap();
            assert_eq!(fs_err::read(share.join("back\\slash")).unwrap(), b"kept");
            assert!(!share.join("back").exists(), "{layout:?}");
            assert_eq!(
                fs_err::read(share.join("link")).unwrap(),
                b"kept",
                "{layout:?}"
            );
            assert_eq!(
                fs_err::read_link(share.join("odd")).unwrap(),
                Path::new("..\\..\\x")
            );
        }
        #[cfg(not(unix))]
        {
            let err = result.unwrap_err();
            assert!(
                err.to_string()
                    .contains("Refusing member `p/stage/share/back\\slash`"),
                "{err}"
            );
            assert!(err.to_string().contains("backslash"), "{err}");
            assert!(!share.join("back").exists(), "{layout:?}");
        }
    }
}

/// PAX times: decimal seconds, the fraction to the nanosecond, before the epoch too; written as
/// read.
#[test]
fn pax_times_read_and_write() {
    use std::time::{Duration, UNIX_EPOCH};
    let at = |secs, nanos| UNIX_EPOCH + Duration::new(secs, nanos);
    for (text, want) in [
        ("1700000000.123456789", Some(at(1_700_000_000, 123_456_789))),
        ("1700000000.1234567", Some(at(1_700_000_000, 123_456_700))),
        ("1700000000.5", Some(at(1_700_000_000, 500_000_000))),
        ("1700000000", Some(at(1_700_000_000, 0))),
        ("1700000000.0", Some(at(1_700_000_000, 0))),
        (
            "1700000000.1234567891",
            Some(at(1_700_000_000, 123_456_789)),
        ),
        ("-1.25", Some(UNIX_EPOCH - Duration::new(1, 250_000_000))),
        ("", None),
        ("x", None),
        ("1.2.3", None),
        (".5", None),
        ("1e9", None),
    ] {
        assert_eq!(parse_pax_time(text), want, "{text}");
    }
    for (time, header, record) in [
        (
            at(1_700_000_000, 123_456_789),
            1_700_000_000,
            // Windows keeps times in 100 ns steps.
            Some(if cfg!(windows) {
                "1700000000.1234567"
            } else {
                "1700000000.123456789"
            }),
        ),
        (
            at(1_700_000_000, 500_000_000),
            1_700_000_000,
            Some("1700000000.5"),
        ),
        (at(1_700_000_000, 0), 1_700_000_000, None),
        (UNIX_EPOCH - Duration::new(1, 250_000_000), 0, Some("-1.25")),
        (UNIX_EPOCH - Duration::new(3, 0), 0, Some("-3")),
    ] {
        let (seconds, written) = crate::archive::tar_time(time);
        assert_eq!((seconds, written.as_deref()), (header, record));
        if let Some(text) = written {
            assert_eq!(parse_pax_time(&text), Some(time));
        }
    }
}

/// A later member of the same path replaces an earlier one (a symlink is replaced, never
/// written through), and so does whatever was left at a member's path; a directory that was
/// already there gets the member's mode all the same.
// Symlinks replaced in place and directory modes: Unix's (Windows makes links only with a
// privilege, and has no mode bits).
#[cfg(unix)]
#[test]
fn replaces_what_is_at_a_members_path() {
    use std::os::unix::fs::PermissionsExt as _;
    use tar::EntryType::{Directory, Symlink};
    let outer = tempfile::tempdir().unwrap();
    let dest = outer.path().join("dest");
    fs_err::create_dir_all(dest.join("s/kept")).unwrap();
    fs_err::set_permissions(dest.join("s/kept"), std::fs::Permissions::from_mode(0o700)).unwrap();
    fs_err::write(dest.join("s/left"), b"leftover").unwrap();
    std::os::unix::fs::symlink("../../outside", dest.join("s/left-link")).unwrap();
    let data = raw_tar(&[
        manifest("s\n"),
        ("s/kept", Directory, None, b""),
        ("s/l", Symlink, Some("t"), b""),
        ("s/l", REG, None, b"new"),
        ("s/left", REG, None, b"fresh"),
        ("s/left-link", REG, None, b"not through"),
        ("s/kept/f", REG, None, b"f"),
    ]);
    extract_artifact("r_lib_generic.tar.zst", &data[..], &dest, Layout::Full).unwrap();
    let read = |p: &str| fs_err::read(dest.join(p)).unwrap();
    assert!(
        fs_err::symlink_metadata(dest.join("s/l"))
            .unwrap()
            .is_file()
    );
    assert_eq!(read("s/l"), b"new");
    assert!(!dest.join("s/t").exists());
    assert_eq!(read("s/left"), b"fresh");
    assert!(
        fs_err::symlink_metadata(dest.join("s/left-link"))
            .unwrap()
            .is_file()
    );
    assert_eq!(read("s/left-link"), b"not through");
    assert!(!outer.path().join("outside").exists());
    assert_eq!(read("s/kept/f"), b"f");
    let mode = fs_err::metadata(dest.join("s/kept"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o755);
}

/// Names Windows cannot hold: kept as stored on Unix (as `tar -x` does); refused on Windows,
/// naming the member, instead of landing under another name or on a device.
#[test]
fn names_windows_cannot_hold_are_refused_there() {
    for (name, why) in [
        ("p/stage/a:b", "`:`"),
        ("p/stage/NUL", "reserved device name"),
        ("p/stage/com1.txt", "reserved device name"),
        ("p/stage/trailing.", "ends with a dot"),
        ("p/stage/dir /x", "ends with a dot or a space"),
        ("p/stage/q?", "`?`"),
    ] {
        let data = raw_tar(&[manifest("p/stage\n"), (name, REG, None, b"data")]);
        let dir = tempfile::tempdir().unwrap();
        let result = extract_artifact("n_lib_generic.tar.zst", &data[..], dir.path(), Layout::Full);
        #[cfg(unix)]
        {
            let _ = why;
            result.unwrap();
            assert_eq!(fs_err::read(dir.path().join(name)).unwrap(), b"data");
        }
        #[cfg(not(unix))]
        {
            let err = result.unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "Refusing member `{name}` of `n_lib_generic.tar.zst`"
                )),
                "{err}"
            );
            assert!(err.contains(why), "{err}");
            assert!(!dir.path().join("p").exists(), "{name}");
        }
    }
}

/// Symlinks to files, to directories and to other links, whatever their order in the archive:
/// links on Unix; on Windows links where the system makes them, else copies of their targets
/// (as Python's `tarfile` falls back to). Either way every name reads as its target.
#[test]
fn symlinks_read_as_their_targets_in_any_order() {
    use tar::EntryType::{Directory, Symlink};
    let data = raw_tar(&[
        manifest("p/stage\n"),
        // Before its target, and a link to a link.
        ("p/stage/lib/libx.so", Symlink, Some("libx.so.1"), b""),
        ("p/stage/lib/libx.so.1", Symlink, Some("libx.so.1.2"), b""),
        ("p/stage/lib64", Symlink, Some("lib"), b""),
        ("p/stage/lib/", Directory, None, b""),
        ("p/stage/lib/libx.so.1.2", REG, None, b"x"),
        ("p/stage/bin/tool", REG, None, b"tool"),
        ("p/stage/bin/alias", Symlink, Some("../bin/./tool"), b""),
    ]);
    for layout in [Layout::Full, Layout::Flatten] {
        let dir = tempfile::tempdir().unwrap();
        extract_artifact("l_lib_generic.tar.zst", &data[..], dir.path(), layout).unwrap();
        let root = if layout.keeps_paths() {
            dir.path().join("p/stage")
        } else {
            dir.path().to_path_buf()
        };
        for (name, content) in [
            ("lib/libx.so", "x"),
            ("lib/libx.so.1", "x"),
            ("lib64/libx.so", "x"),
            ("lib64/libx.so.1.2", "x"),
            ("bin/alias", "tool"),
        ] {
            assert_eq!(
                fs_err::read_to_string(root.join(name)).unwrap(),
                content,
                "{name} {layout:?}"
            );
        }
    }
}

/// A symlink to nothing: a dangling link on Unix, as `tar -x` makes; on Windows, where a link
/// may have to be copied, an error naming the member (never a silently missing file).
#[test]
fn a_symlink_to_nothing() {
    let data = raw_tar(&[
        manifest("p/stage\n"),
        (
            "p/stage/gone",
            tar::EntryType::Symlink,
            Some("missing"),
            b"",
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let result = extract_artifact("d_lib_generic.tar.zst", &data[..], dir.path(), Layout::Full);
    #[cfg(unix)]
    {
        result.unwrap();
        assert_eq!(
            fs_err::read_link(dir.path().join("p/stage/gone")).unwrap(),
            Path::new("missing")
        );
    }
    #[cfg(not(unix))]
    {
        let err = result.unwrap_err().to_string();
        assert!(err.contains("Refusing member `p/stage/gone`"), "{err}");
        assert!(err.contains("`missing` is not in the archive"), "{err}");
    }
}

/// Long runs of zeros on block boundaries become holes (no page-cache writes), anywhere in a
/// file and at its end; short runs and unaligned zeros are written; every file reads back as
/// stored, at its full length.
#[cfg(unix)]
#[test]
fn long_zero_runs_become_holes_and_read_back_as_stored() {
    use std::os::unix::fs::MetadataExt as _;
    let mib = 1 << 20;
    // Mostly zeros: 16 bytes of data per MiB, and 200 KiB of zeros to end with.
    let mut sparse = vec![0u8; 3 * mib + 200 * 1024];
    for at in [0, 5000, mib + 17, 2 * mib + 4096] {
        sparse[at..at + 16].copy_from_slice(b"0123456789abcdef");
    }
    // A zero run shorter than a hole is worth (12 KiB) between data, and an odd length.
    let mut short = vec![7u8; 100_001];
    short[40_960..53_248].fill(0);
    let all_zero = vec![0u8; 300_000];
    let empty: Vec<u8> = Vec::new();
    let data = raw_tar(&[
        manifest("p/stage\n"),
        ("p/stage/sparse", REG, None, &sparse),
        ("p/stage/short", REG, None, &short),
        ("p/stage/zeros", REG, None, &all_zero),
        ("p/stage/empty", REG, None, &empty),
    ]);
    let dir = tempfile::tempdir().unwrap();
    extract_artifact("z_lib_generic.tar.zst", &data[..], dir.path(), Layout::Full).unwrap();
    let stage = dir.path().join("p/stage");
    for (name, want) in [
        ("sparse", &sparse),
        ("short", &short),
        ("zeros", &all_zero),
        ("empty", &empty),
    ] {
        assert!(fs_err::read(stage.join(name)).unwrap() == *want, "{name}");
    }
    // Allocated space, where the file system keeps holes (ext4, tmpfs, xfs, btrfs do).
    let allocated = |name: &str| fs_err::metadata(stage.join(name)).unwrap().blocks() * 512;
    // (A partial last block is written, and the file system may reserve a few blocks more.)
    assert!(allocated("sparse") <= 128 * 1024, "{}", allocated("sparse"));
    assert!(allocated("zeros") <= 64 * 1024, "{}", allocated("zeros"));
    assert!(allocated("short") >= 100_001);
}

/// A shared tree that takes every free path (as a flattened fetch's first artifact finds it).
struct FreeTree;

impl SharedTree for FreeTree {
    fn create(
        &self,
        _rel: &Path,
        create: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<bool> {
        match create() {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn made_dir(&self, _rel: &Path) {}
}

/// A flattened extraction into a shared tree: most members go straight into the tree, the rest
/// (paths not free there, and on Windows every symlink) into the extraction's own directory.
/// Links read as their targets wherever those went, whatever the order in the archive: on
/// Windows, where a link may have to be copied, the copy has the target's bytes.
#[test]
fn symlinks_of_a_shared_extraction_read_as_their_targets() {
    use tar::EntryType::{Directory, Symlink};
    let data = raw_tar(&[
        manifest("p/stage\n"),
        // The target first, as sorted archives have it.
        ("p/stage/base/target.txt", REG, None, b"target"),
        ("p/stage/base/link.txt", Symlink, Some("target.txt"), b""),
        // Before its target, and a link to a link.
        ("p/stage/lib/libx.so", Symlink, Some("libx.so.1"), b""),
        ("p/stage/lib/libx.so.1", Symlink, Some("libx.so.1.2"), b""),
        // A link to a directory whose members went both ways.
        ("p/stage/lib64", Symlink, Some("lib"), b""),
        ("p/stage/lib/", Directory, None, b""),
        ("p/stage/lib/libx.so.1.2", REG, None, b"x"),
        // `bin` is taken in the tree: these go to the extraction's own directory.
        ("p/stage/bin/tool", REG, None, b"tool"),
        ("p/stage/bin/alias", Symlink, Some("../bin/./tool"), b""),
    ]);
    let t = tempfile::tempdir().unwrap();
    let (root, own) = (t.path().join("tree"), t.path().join("own"));
    fs_err::create_dir_all(&root).unwrap();
    fs_err::create_dir_all(&own).unwrap();
    fs_err::write(root.join("bin"), b"another artifact's file").unwrap();
    extract_artifact_shared("s_lib_generic.tar.zst", &data[..], &own, &root, &FreeTree).unwrap();
    // What the merge would show: the extraction's own directory over the tree.
    let read = |name: &str| {
        let mine = own.join(name);
        let path = if fs_err::symlink_metadata(&mine).is_ok() {
            mine
        } else {
            root.join(name)
        };
        fs_err::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    for (name, content) in [
        ("base/target.txt", "target"),
        ("base/link.txt", "target"),
        ("lib/libx.so", "x"),
        ("lib/libx.so.1", "x"),
        ("lib/libx.so.1.2", "x"),
        ("lib64/libx.so", "x"),
        ("lib64/libx.so.1", "x"),
        ("lib64/libx.so.1.2", "x"),
        ("bin/tool", "tool"),
        ("bin/alias", "tool"),
    ] {
        assert_eq!(read(name), content, "{name}");
    }
    assert_eq!(
        fs_err::read(root.join("bin")).unwrap(),
        b"another artifact's file"
    );
    // The regular files went straight into the tree where their paths were free.
    assert_eq!(
        fs_err::read_to_string(root.join("base/target.txt")).unwrap(),
        "target"
    );
    assert_eq!(
        fs_err::read_to_string(root.join("lib/libx.so.1.2")).unwrap(),
        "x"
    );
}

/// In a shared extraction as in the others: a link to nothing is an error naming it on Windows
/// (a dangling link on Unix), a link out of the tree is refused everywhere.
#[test]
fn shared_extraction_refuses_links_to_nothing_and_out_of_the_tree() {
    let shared = |link: &'static str| {
        let data = raw_tar(&[
            manifest("p/stage\n"),
            ("p/stage/lib/real", REG, None, b"real"),
            ("p/stage/lib/gone", tar::EntryType::Symlink, Some(link), b""),
        ]);
        let t = tempfile::tempdir().unwrap();
        let (root, own) = (t.path().join("tree"), t.path().join("own"));
        fs_err::create_dir_all(&root).unwrap();
        fs_err::create_dir_all(&own).unwrap();
        extract_artifact_shared("g_lib_generic.tar.zst", &data[..], &own, &root, &FreeTree)
            .map_err(|e| e.to_string())
    };
    let err = shared("../../outside").unwrap_err();
    assert!(err.contains("Refusing member `p/stage/lib/gone`"), "{err}");
    assert!(err.contains("points outside the destination"), "{err}");
    let result = shared("missing");
    #[cfg(unix)]
    result.unwrap();
    #[cfg(not(unix))]
    {
        let err = result.unwrap_err();
        assert!(err.contains("Refusing member `p/stage/lib/gone`"), "{err}");
        assert!(err.contains("`missing` is not in the archive"), "{err}");
    }
}

/// A member without its owner's write bit (0444) is read-only once extracted: its mode on
/// Unix, the read-only attribute on Windows (as Python's `os.chmod` sets it there); a file
/// with the bit is not. Extracting again over it, and removing the tree, work.
#[test]
fn a_member_without_owner_write_is_read_only() {
    let mut b = tar::Builder::new(Vec::new());
    for (name, mode, data) in [
        (MANIFEST_NAME, 0o644, &b"p/stage\n"[..]),
        ("p/stage/ro.txt", 0o444, b"read only"),
        ("p/stage/rw.txt", 0o644, b"writable"),
        // A later member of the same path replaces the read-only one.
        ("p/stage/again.txt", 0o444, b"first"),
        ("p/stage/again.txt", 0o444, b"second"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(mode);
        h.set_mtime(1_700_000_000);
        h.set_entry_type(REG);
        h.set_cksum();
        b.append_data(&mut h, name, data).unwrap();
    }
    let data = b.into_inner().unwrap();
    let t = tempfile::tempdir().unwrap();
    let dest = t.path().join("x");
    fs_err::create_dir_all(&dest).unwrap();
    for _ in 0..2 {
        extract_artifact("ro_lib_generic.tar.zst", &data[..], &dest, Layout::Full).unwrap();
        let stage = dest.join("p/stage");
        let read_only = |name: &str| {
            fs_err::metadata(stage.join(name))
                .unwrap()
                .permissions()
                .readonly()
        };
        assert!(read_only("ro.txt"));
        assert!(read_only("again.txt"));
        assert!(!read_only("rw.txt"));
        assert_eq!(fs_err::read(stage.join("again.txt")).unwrap(), b"second");
        // The time was set before the attribute.
        let mtime = fs_err::metadata(stage.join("ro.txt"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(
            mtime,
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)
        );
    }
    file_tree::remove_tree(&dest).unwrap();
    assert!(!dest.exists());
}

/// An archive cut short names itself and the member it ended in, whether its content was
/// being read or skipped past to the next header, and is an archive error, not a disk's.
#[test]
fn a_cut_archive_names_the_member_it_ends_in() {
    let content = vec![7u8; 5000];
    for (kind, name) in [
        (REG, "p/stage/read.bin"),
        (tar::EntryType::Directory, "p/stage/skipped"),
    ] {
        let data = raw_tar(&[manifest("p/stage\n"), (name, kind, None, &content)]);
        // Inside the member's data: its header and 2,000 of its 5,000 bytes.
        let cut = &data[..512 * 3 + 2000];
        let dir = tempfile::tempdir().unwrap();
        let err =
            extract_artifact("c_lib_generic.tar.zst", cut, dir.path(), Layout::Full).unwrap_err();
        match &err {
            Error::ArchiveRead {
                archive, member, ..
            } => {
                assert_eq!(archive, "c_lib_generic.tar.zst");
                assert_eq!(member.as_deref(), Some(name));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            err.to_string(),
            format!("Cannot read archive `c_lib_generic.tar.zst` in member `{name}`")
        );
        assert!(std::error::Error::source(&err).is_some());
    }
}
