//! Artifact archives of symlinks and read-only files, as `push` stores them from a Linux build
//! tree whatever platform it is pushed for: what the symlink tests of every fetch mode unpack,
//! on Unix and on Windows (where the system makes no link and a copy of the target stands in).

use std::path::Path;

use artifacts::{ArchiveWriter, Compression};

/// A member of such an archive: a file with its content and mode, or a symlink with its text.
#[derive(Debug, Clone, Copy)]
pub enum Member {
    /// A regular file: content, mode.
    File(&'static str, u32),
    /// A symlink: its text.
    Link(&'static str),
}

/// A link after its target and one before it, a chain of links, a link to a directory (with a
/// subdirectory), a link up and down again, a 0444 file.
pub const LINKED: &[(&str, Member)] = &[
    ("target.txt", Member::File("target", 0o644)),
    ("link.txt", Member::Link("target.txt")),
    ("early.txt", Member::Link("later.txt")),
    ("later.txt", Member::File("later", 0o644)),
    ("chain1", Member::Link("chain2")),
    ("chain2", Member::Link("target.txt")),
    ("dirlink", Member::Link("dir")),
    ("dir/f", Member::File("in dir", 0o644)),
    ("dir/sub/g", Member::File("deeper", 0o644)),
    ("up/alias", Member::Link("../dir/f")),
    ("ro.txt", Member::File("read only", 0o444)),
];

/// How the paths of [`LINKED`] read once unpacked: each link as its target.
pub const LINKED_READS: &[(&str, &str)] = &[
    ("target.txt", "target"),
    ("link.txt", "target"),
    ("early.txt", "later"),
    ("chain1", "target"),
    ("chain2", "target"),
    ("dirlink/f", "in dir"),
    ("dirlink/sub/g", "deeper"),
    ("up/alias", "in dir"),
    ("ro.txt", "read only"),
];

/// Writes the artifact archive `path` (zstd) of `members` below the manifest path `stage`, and
/// its `.sha256sum` sidecar beside it.
pub fn write_archive(path: &Path, stage: &str, members: &[(&str, Member)]) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    let mut w = ArchiveWriter::create(path, Compression::Zstd { level: 1 }).unwrap();
    w.append_data(
        "artifact_manifest.txt",
        format!("{stage}\n").as_bytes(),
        0o644,
    )
    .unwrap();
    for (name, member) in members {
        let name = format!("{stage}/{name}");
        match member {
            Member::File(content, mode) => w.append_data(&name, content.as_bytes(), *mode),
            Member::Link(text) => w.append_symlink(&name, text, 1_700_000_000),
        }
        .unwrap();
    }
    w.finish().unwrap();
    let file_name = path.file_name().unwrap().to_string_lossy();
    let digest = crate::sha256_hex(&fs_err::read(path).unwrap());
    fs_err::write(
        path.with_file_name(format!("{file_name}.sha256sum")),
        format!("{digest}  {file_name}\n"),
    )
    .unwrap();
}
