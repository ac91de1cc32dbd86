#![cfg_attr(
    windows,
    expect(unused_imports, reason = "used by the tests that run on Unix only")
)]

use super::{hard_link_replacing, symlink_replacing};
use crate::tests::names;

// Symbolic links: Windows makes them only with a privilege.
#[cfg(unix)]
#[test]
fn a_link_replaces_a_file_and_an_older_link_and_leaves_no_temporary() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("bin");
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    fs_err::write(&a, "a").unwrap();
    fs_err::write(&b, "b").unwrap();

    // A missing directory is created.
    symlink_replacing(&a, &dir.join("tool")).unwrap();
    assert_eq!(fs_err::read_to_string(dir.join("tool")).unwrap(), "a");

    // An older link is replaced.
    symlink_replacing(&b, &dir.join("tool")).unwrap();
    assert_eq!(fs_err::read_link(dir.join("tool")).unwrap(), b);

    // So is a plain file.
    fs_err::write(dir.join("other"), "plain").unwrap();
    symlink_replacing(&a, &dir.join("other")).unwrap();
    assert_eq!(fs_err::read_link(dir.join("other")).unwrap(), a);

    assert_eq!(names(&dir), ["other", "tool"]);
}

// Symbolic links: Windows makes them only with a privilege.
#[cfg(unix)]
#[test]
fn a_link_over_a_directory_fails_naming_it() {
    let t = tempfile::tempdir().unwrap();
    let busy = t.path().join("busy");
    fs_err::create_dir_all(busy.join("x")).unwrap();
    let err = symlink_replacing(t.path(), &busy).unwrap_err();
    assert!(err.to_string().contains("busy"), "{err}");
    // No temporary is left beside it.
    assert_eq!(names(t.path()), ["busy"]);
}

#[test]
fn a_hard_link_replaces_a_file_and_leaves_no_temporary() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("bin");
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    fs_err::write(&a, "a").unwrap();
    fs_err::write(&b, "b").unwrap();
    hard_link_replacing(&a, &dir.join("tool.exe")).unwrap();
    assert_eq!(fs_err::read_to_string(dir.join("tool.exe")).unwrap(), "a");
    // An older link or copy is replaced; the file it named is left alone.
    hard_link_replacing(&b, &dir.join("tool.exe")).unwrap();
    assert_eq!(fs_err::read_to_string(dir.join("tool.exe")).unwrap(), "b");
    assert_eq!(fs_err::read_to_string(&a).unwrap(), "a");
    assert_eq!(names(&dir), ["tool.exe"]);
}

// Linkers of one name at once (threads of one process here: their process ids are the same, as
// those of processes under two Wine servers or two containers can be) all succeed, and leave
// the link and no temporary.
#[test]
fn linkers_of_one_name_at_once_all_succeed() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("bin");
    let target = t.path().join("a");
    fs_err::write(&target, "a").unwrap();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..50 {
                    hard_link_replacing(&target, &dir.join("tool.exe")).unwrap();
                }
            });
        }
    });
    assert_eq!(fs_err::read_to_string(dir.join("tool.exe")).unwrap(), "a");
    assert_eq!(names(&dir), ["tool.exe"]);
}
