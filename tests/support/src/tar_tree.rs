//! An artifact tree with what archives must keep (sub-second modification times, unusual
//! modes, a backslash in a name, symlinks, a hard link, a name longer than 100 bytes), archives
//! of it written by GNU tar and by Python's `tarfile`, `tar -x`, and complete snapshots of
//! unpacked trees to compare them.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;

/// The relative path of a sample file whose name holds a backslash (a name character on Linux).
pub const BACKSLASH_FILE: &str = "share/back\\slash";

/// One entry of [`write_sample_tree`]: path below the relpath, kind, mode, mtime as
/// `seconds.nanoseconds` (as `touch -d @…` takes it).
struct Sample {
    path: String,
    kind: Kind,
    mode: u32,
    mtime: &'static str,
}

enum Kind {
    Dir,
    File(String),
    Link(&'static str),
    HardLink(&'static str),
}

fn samples(seed: &str) -> Vec<Sample> {
    let long_name = format!("share/long/{}", "n".repeat(120));
    let file = |path: &str, mode, mtime, body: &str| Sample {
        path: path.to_owned(),
        kind: Kind::File(format!("{seed}: {body}\n")),
        mode,
        mtime,
    };
    let dir = |path: &str, mode, mtime| Sample {
        path: path.to_owned(),
        kind: Kind::Dir,
        mode,
        mtime,
    };
    vec![
        dir("bin", 0o755, "1700000010.000000001"),
        file("bin/tool", 0o755, "1700000000.123456789", "#!/bin/sh"),
        dir("lib", 0o700, "1700000011.5"),
        file("lib/libx.so.1", 0o444, "1700000001.5", "read-only library"),
        Sample {
            path: "lib/libx.so".to_owned(),
            kind: Kind::Link("libx.so.1"),
            mode: 0o777,
            mtime: "1600000000.999999999",
        },
        Sample {
            path: "lib/libx-hard.so.1".to_owned(),
            kind: Kind::HardLink("lib/libx.so.1"),
            mode: 0o444,
            mtime: "1700000001.5",
        },
        dir("share", 0o750, "1700000012.25"),
        file(BACKSLASH_FILE, 0o640, "1700000002.000000001", "backslash"),
        dir("share/doc", 0o555, "1700000013.999999999"),
        file("share/doc/README", 0o644, "1700000003", "whole seconds"),
        dir("share/long", 0o755, "1700000014.1"),
        file(&long_name, 0o600, "1700000004.25", "long name"),
        dir("empty", 0o711, "1700000005.75"),
    ]
}

fn touch(path: &Path, mtime: &str) {
    let status = Command::new("touch")
        .arg("-h")
        .arg("-d")
        .arg(format!("@{mtime}"))
        .arg(path)
        .status()
        .expect("touch runs");
    assert!(status.success(), "touch {}", path.display());
}

/// Writes an exploded artifact into `root`: `artifact_manifest.txt` naming `relpath`, and below
/// `relpath` the sample entries (contents marked with `seed`): directories 0700, 0750, 0555
/// (no owner write) and 0711, files 0755, 0444, 0640 and 0600, a symlink, a hard link, a
/// backslash in a name, a name longer than 100 bytes, mtimes with nanoseconds (the directories
/// of `relpath` too).
pub fn write_sample_tree(root: &Path, relpath: &str, seed: &str) {
    let base = root.join(relpath);
    fs_err::create_dir_all(&base).expect("relpath directories");
    let manifest = root.join("artifact_manifest.txt");
    fs_err::write(&manifest, format!("{relpath}\n")).expect("manifest");
    let samples = samples(seed);
    for s in &samples {
        let path = base.join(&s.path);
        match &s.kind {
            Kind::Dir => fs_err::create_dir_all(&path).expect("directory"),
            Kind::File(body) => {
                fs_err::create_dir_all(path.parent().expect("a parent")).expect("parent");
                fs_err::write(&path, body).expect("file");
            }
            Kind::Link(target) => std::os::unix::fs::symlink(target, &path).expect("symlink"),
            Kind::HardLink(target) => fs_err::hard_link(base.join(target), &path).expect("link"),
        }
    }
    // Files and links first, then directories deepest first (writing into a directory changes
    // its time), modes last (0555 forbids writing into the directory).
    for s in samples.iter().filter(|s| !matches!(s.kind, Kind::Dir)) {
        let path = base.join(&s.path);
        if !matches!(s.kind, Kind::Link(_)) {
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(s.mode))
                .expect("file mode");
        }
        touch(&path, s.mtime);
    }
    let mut dirs: Vec<&Sample> = samples
        .iter()
        .filter(|s| matches!(s.kind, Kind::Dir))
        .collect();
    dirs.sort_by_key(|s| std::cmp::Reverse(s.path.matches('/').count()));
    for s in dirs {
        let path = base.join(&s.path);
        touch(&path, s.mtime);
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(s.mode)).expect("mode");
    }
    touch(&manifest, "1700000020.333333333");
    // The relpath's own directories, deepest first.
    let mut dir = base.clone();
    let mut n = 0;
    while dir != root {
        touch(&dir, &format!("1700000030.{n:09}"));
        n += 123_456_789;
        dir = dir.parent().expect("below the root").to_path_buf();
    }
}

/// Every entry below `dir` as (relative path, description), sorted by path: its kind, mode,
/// modification time to the nanosecond (directories and symlinks too), link count, and a
/// file's size and SHA-256 or a link's target. Equal snapshots: equal trees, nothing extra.
pub fn exact_snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = file_tree::walk(dir)
        .expect("a readable tree")
        .into_iter()
        .map(|e| {
            let meta = fs_err::symlink_metadata(&e.path).expect("metadata");
            let time = format!("mtime {}.{:09}", meta.mtime(), meta.mtime_nsec());
            let what = if e.is_symlink {
                let target = fs_err::read_link(&e.path).expect("link");
                format!("link -> {} {time}", target.display())
            } else if e.is_dir {
                format!("dir {:o} {time}", meta.mode() & 0o7777)
            } else {
                let data = fs_err::read(&e.path).expect("file");
                format!(
                    "file {:o} {time} links {} {} bytes {}",
                    meta.mode() & 0o7777,
                    meta.nlink(),
                    data.len(),
                    crate::sha256_hex(&data)
                )
            };
            (e.relative(), what)
        })
        .collect();
    out.sort();
    out
}

/// [`exact_snapshot`] without what a merged tree does not keep: directories' modes and times.
pub fn snapshot_without_dir_attributes(dir: &Path) -> Vec<(String, String)> {
    exact_snapshot(dir)
        .into_iter()
        .map(|(path, what)| {
            if what.starts_with("dir ") {
                (path, "dir".to_owned())
            } else {
                (path, what)
            }
        })
        .collect()
}

/// GNU tar's compression flag for an archive name (none for a plain `.tar`).
fn compression_flag(archive: &Path) -> Option<&'static str> {
    let name = archive.to_string_lossy();
    [(".zst", "--zstd"), (".xz", "--xz"), (".gz", "--gzip")]
        .into_iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map(|(_, flag)| flag)
}

/// Writes the exploded artifact `dir` with GNU tar in its POSIX (PAX) format, as the artifact
/// layout wants it: `artifact_manifest.txt` first, then the tree of `top` (a relpath's first
/// component), sorted by name. Compressed by the name's suffix.
pub fn gnu_tar_artifact(dir: &Path, top: &str, archive: &Path) {
    let mut command = Command::new("tar");
    command.arg("--format=posix").arg("--sort=name");
    if let Some(flag) = compression_flag(archive) {
        command.arg(flag);
    }
    let status = command
        .arg("-cf")
        .arg(archive)
        .arg("-C")
        .arg(dir)
        .args(["artifact_manifest.txt", top])
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar -c {}", archive.display());
}

/// Writes the exploded artifact `dir` with Python's `tarfile` in its default (PAX) format:
/// `artifact_manifest.txt`, then `top` recursively. `.tar.xz`, `.tar.gz` or `.tar`.
pub fn python_tar_artifact(dir: &Path, top: &str, archive: &Path) {
    let name = archive.to_string_lossy();
    let mode = if name.ends_with(".xz") {
        "w:xz"
    } else if name.ends_with(".gz") {
        "w:gz"
    } else {
        "w"
    };
    crate::python(
        "import os, sys, tarfile\n\
         archive, mode, top = sys.argv[1:4]\n\
         os.chdir(sys.argv[4])\n\
         with tarfile.open(archive, mode) as t:\n\
         \x20   t.add('artifact_manifest.txt')\n\
         \x20   t.add(top)\n",
        &[
            archive.as_os_str(),
            mode.as_ref(),
            top.as_ref(),
            dir.as_os_str(),
        ],
    );
}

/// `tar -xpf ARCHIVE -C DEST MEMBERS...`: only the members named.
pub fn tar_x_members(archive: &Path, dest: &Path, members: &[&str]) {
    fs_err::create_dir_all(dest).expect("destination");
    let out = Command::new("tar")
        .arg("-xpf")
        .arg(archive)
        .arg("-C")
        .arg(dest)
        .args(members)
        .output()
        .expect("tar runs");
    assert!(
        out.status.success(),
        "tar -x {} {members:?}: {}",
        archive.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `tar -xpf archive -C dest` (GNU tar; the compression is recognized by itself).
pub fn tar_x(archive: &Path, dest: &Path) {
    tar_x_members(archive, dest, &[]);
}
