use super::*;

use crate::tests::names;

#[test]
fn a_commit_replaces_the_tree_and_a_drop_keeps_it() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("out");
    fs_err::create_dir_all(target.join("lib")).unwrap();
    fs_err::write(target.join("lib/old"), "old").unwrap();

    let staged = StagedDir::begin(&target).unwrap();
    fs_err::write(staged.path().join("new"), "new").unwrap();
    drop(staged);
    assert_eq!(names(&target), ["lib"]);
    assert_eq!(names(t.path()), ["out"]);

    let staged = StagedDir::begin(&target).unwrap();
    fs_err::write(staged.path().join("new"), "new").unwrap();
    staged.commit(&target).unwrap();
    assert_eq!(names(&target), ["new"]);
    assert_eq!(names(t.path()), ["out"]);

    // A target that does not exist yet, its parent included.
    let fresh = t.path().join("a/b");
    let staged = StagedDir::begin(&fresh).unwrap();
    staged.commit(&fresh).unwrap();
    assert!(fresh.is_dir());
}

#[test]
fn what_a_killed_replacement_left_is_removed_unless_alive() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("out");
    // Left by a kill: a staging tree with its (free) lock, an old tree without one.
    fs_err::create_dir_all(t.path().join(".out.install-AAAAAA.partial/x")).unwrap();
    fs_err::write(t.path().join(".out.install-AAAAAA.lock"), "").unwrap();
    fs_err::create_dir_all(t.path().join(".out.install-BBBBBB.old/y")).unwrap();
    let alive = StagedDir::begin(&target).unwrap();
    let mut left = names(t.path());
    left.retain(|n| !alive.lock.path().ends_with(n) && !alive.path().ends_with(n));
    assert!(left.is_empty(), "{left:?}");
    // A live one is kept by the next.
    let next = StagedDir::begin(&target).unwrap();
    assert!(alive.path().is_dir());
    drop(next);
    drop(alive);
    assert!(names(t.path()).is_empty());
}

#[cfg(unix)]
#[test]
fn copy_tree_keeps_links_modes_and_times() {
    use std::os::unix::fs::PermissionsExt as _;
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    fs_err::create_dir_all(src.join("lib")).unwrap();
    fs_err::write(src.join("lib/libx.so.1"), "x").unwrap();
    std::os::unix::fs::symlink("libx.so.1", src.join("lib/libx.so")).unwrap();
    fs_err::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs_err::set_permissions(src.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let dest = t.path().join("dest");
    assert_eq!(copy_tree(&src, &dest).unwrap(), 2);
    assert_eq!(
        fs_err::read_link(dest.join("lib/libx.so")).unwrap(),
        Path::new("libx.so.1")
    );
    let mode = fs_err::metadata(dest.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
    let times = |p: &Path| fs_err::metadata(p).unwrap().modified().unwrap();
    assert_eq!(times(&dest.join("run.sh")), times(&src.join("run.sh")));
    assert_eq!(times(&dest.join("lib")), times(&src.join("lib")));
}
