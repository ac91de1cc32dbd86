//! Packing exploded artifact directories, checked against `tar -x` of the same archive.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;

use super::*;

fn digest(data: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(data))
}

fn set_mtime(path: &Path, secs: u64) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    fs_err::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// An exploded artifact: two relpaths (one nested in the other), one missing, with files of
/// several modes, a symlink, a hard link pair and an empty directory.
fn exploded(root: &Path) -> std::path::PathBuf {
    let dir = root.join("blas_lib_generic");
    let stage = dir.join("math-libs/BLAS/stage");
    fs_err::create_dir_all(stage.join("lib/cmake")).unwrap();
    fs_err::create_dir_all(stage.join("bin")).unwrap();
    fs_err::create_dir_all(stage.join("share/empty")).unwrap();
    fs_err::write(
        dir.join(MANIFEST_NAME),
        "math-libs/BLAS/stage\nmath-libs/BLAS/stage/lib\n\nnot/there\n",
    )
    .unwrap();
    fs_err::write(stage.join("lib/libblas.so.1.0"), vec![7u8; 300_000]).unwrap();
    std::os::unix::fs::symlink("libblas.so.1.0", stage.join("lib/libblas.so.1")).unwrap();
    fs_err::write(stage.join("lib/cmake/blas.cmake"), "set(X 1)\n").unwrap();
    fs_err::write(stage.join("bin/tool"), "#!/bin/sh\n").unwrap();
    fs_err::set_permissions(
        stage.join("bin/tool"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    fs_err::hard_link(stage.join("bin/tool"), stage.join("bin/tool-alias")).unwrap();
    for (p, t) in [
        ("lib/libblas.so.1.0", 1_600_000_000),
        ("bin/tool", 1_700_000_000),
    ] {
        set_mtime(&stage.join(p), t);
    }
    dir
}

/// Relative path → (kind, mode, mtime, content or link target) of every entry below `root`.
fn snapshot(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in file_tree::Walk::new(root).entries().unwrap() {
        let meta = fs_err::symlink_metadata(&e.path).unwrap();
        let what = if e.is_symlink {
            format!("link {}", fs_err::read_link(&e.path).unwrap().display())
        } else if e.is_dir {
            format!("dir {:o}", meta.mode() & 0o7777)
        } else {
            let data = fs_err::read(&e.path).unwrap();
            format!(
                "file {:o} {} {} {}",
                meta.mode() & 0o7777,
                meta.mtime(),
                data.len(),
                digest(&data)
            )
        };
        out.push((e.relative(), what));
    }
    out
}

#[test]
fn packed_directories_unpack_as_tar_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = exploded(tmp.path());
    for (compression, workers, flag) in [
        (Compression::Zstd { level: 3 }, 2, "--zstd"),
        (Compression::Zstd { level: 1 }, 0, "--zstd"),
        (Compression::Xz { preset: 1 }, 0, "--xz"),
    ] {
        let dest = archive_path_for(tmp.path(), "blas_lib_generic", compression);
        let packed = pack_artifact_dir(&dir, &dest, compression, workers).unwrap();
        let bytes = fs_err::read(&dest).unwrap();
        assert_eq!(packed.archive.sha256, digest(&bytes));
        assert_eq!(packed.archive.size, bytes.len() as u64);
        // The manifest, tool, tool-alias, libblas.so.1.0 and (followed) libblas.so.1, blas.cmake.
        assert_eq!(packed.files, 6);
        assert_eq!(
            packed.uncompressed_size,
            fs_err::metadata(dir.join(MANIFEST_NAME)).unwrap().len() + 300_000 * 2 + 10 * 2 + 9
        );
        let members = list_members(&dest).unwrap();
        assert_eq!(members[0], MANIFEST_NAME);
        assert_eq!(
            members.len(),
            members
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            "no member twice: {members:?}"
        );
        assert!(
            !members.iter().any(|m| m == "math-libs/BLAS/stage"),
            "{members:?}"
        );

        let by_tar = tmp.path().join("by-tar");
        let by_us = tmp.path().join("by-us");
        for d in [&by_tar, &by_us] {
            let _ = fs_err::remove_dir_all(d);
            fs_err::create_dir_all(d).unwrap();
        }
        let status = Command::new("tar")
            .arg(flag)
            .arg("-xpf")
            .arg(&dest)
            .arg("-C")
            .arg(&by_tar)
            .status()
            .unwrap();
        assert!(status.success());
        let mut reader = open_archive(&dest).unwrap().into_inner();
        extract_artifact("blas", &mut reader, &by_us, Layout::Full).unwrap();
        let (a, b) = (snapshot(&by_tar), snapshot(&by_us));
        assert_eq!(a, b);
        // What was packed is what tar unpacks: files, modes, mtimes, links.
        let original: Vec<_> = snapshot(&dir)
            .into_iter()
            .filter(|(p, _)| p != "not")
            .collect();
        let strip_dirs = |v: Vec<(String, String)>| -> Vec<(String, String)> {
            v.into_iter()
                .filter(|(_, w)| !w.starts_with("dir"))
                .collect()
        };
        assert_eq!(strip_dirs(original), strip_dirs(a));
        let alias = by_tar.join("math-libs/BLAS/stage/bin/tool-alias");
        let tool = by_tar.join("math-libs/BLAS/stage/bin/tool");
        assert_eq!(
            fs_err::metadata(alias).unwrap().ino(),
            fs_err::metadata(tool).unwrap().ino(),
            "the hard link is kept"
        );
    }
}

#[test]
fn packing_without_a_manifest_names_it_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("x_lib_generic");
    fs_err::create_dir_all(&dir).unwrap();
    let dest = tmp.path().join("out/x_lib_generic.tar.zst");
    fs_err::create_dir_all(dest.parent().unwrap()).unwrap();
    let err = pack_artifact_dir(&dir, &dest, Compression::Zstd { level: 3 }, 0).unwrap_err();
    assert!(err.to_string().contains(MANIFEST_NAME), "{err}");
    assert_eq!(fs_err::read_dir(dest.parent().unwrap()).unwrap().count(), 0);
}
