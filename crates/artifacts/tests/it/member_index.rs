//! The member index of multi-frame `.tar.zst` archives: read from the archive's tail alone, it
//! lists every member as the archive holds it (path, type, mode, size, link target, where its
//! headers start) and every frame (where it is, its sizes, the SHA-256 of its bytes).

use std::io::Read as _;
use std::path::Path;

use artifacts::member_index::{IndexError, MemberIndex, MemberKind};
use artifacts::{Compression, pack_artifact_dir};
use rock_ci_test_support::tar_tree::write_sample_tree;

/// A tree of the sample members and, in a directory of its own, 20 MiB of text (three frames).
fn tree(root: &Path) {
    write_sample_tree(root, "p/stage", "index");
    let big = root.join("p/stage/big");
    fs_err::create_dir(&big).unwrap();
    fs_err::write(
        big.join("libbig.so"),
        rock_ci_test_support::incompressible_text(20 << 20, 3),
    )
    .unwrap();
    fs_err::write(big.join("z-after.txt"), "after the big one\n").unwrap();
}

/// An offset as an index into the archive's bytes.
fn at(offset: u64) -> usize {
    usize::try_from(offset).unwrap()
}

/// The index read from the last `n` bytes of `archive`, growing `n` as the reader asks.
fn index_from_tail(archive: &[u8], mut n: usize) -> (MemberIndex, String, usize) {
    loop {
        let tail = &archive[archive.len() - n.min(archive.len())..];
        match MemberIndex::from_tail(tail, archive.len() as u64, None) {
            Ok((index, sha)) => return (index, sha, tail.len()),
            Err(IndexError::NeedTail(more)) => {
                assert!(at(more) > n, "asks for more than it had: {more} after {n}");
                n = at(more);
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// The members of `index` are those of the archive's tar stream, each parsed from its start
/// alone, one after the other.
fn members_as_the_stream_holds_them(archive: &[u8], index: &MemberIndex) {
    let mut stream = Vec::new();
    zstd::stream::read::Decoder::new(archive)
        .unwrap()
        .read_to_end(&mut stream)
        .unwrap();
    let mut expected = Vec::new();
    let mut all = tar::Archive::new(&stream[..]);
    for entry in all.entries().unwrap() {
        let mut entry = entry.unwrap();
        let link = entry
            .link_name()
            .unwrap()
            .map(|l| l.to_string_lossy().into_owned());
        expected.push((
            entry
                .path()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches('/')
                .to_owned(),
            MemberKind::of(entry.header().entry_type()),
            entry.header().mode().unwrap() & 0o7777,
            entry.size(),
            link,
        ));
        std::io::copy(&mut entry, &mut std::io::sink()).unwrap();
    }
    let listed: Vec<_> = index
        .members
        .iter()
        .map(|m| (m.path.clone(), m.kind, m.mode, m.size, m.link.clone()))
        .collect();
    assert_eq!(listed, expected);
    for m in &index.members {
        let mut at = tar::Archive::new(&stream[at(m.start)..at(m.end)]);
        let mut entries = at.entries().unwrap();
        let first = entries.next().expect("a member at its start").unwrap();
        assert_eq!(
            first
                .path()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches('/'),
            m.path
        );
        assert_eq!(first.size(), m.size);
    }
    for pair in index.members.windows(2) {
        assert_eq!(pair[0].end, pair[1].start, "members follow each other");
    }
}

#[test]
fn the_index_from_the_tail_lists_every_member_and_frame_as_the_archive_holds_them() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    tree(&src);
    let path = work.path().join("a.tar.zst");
    let packed = pack_artifact_dir(&src, &path, Compression::Zstd { level: 3 }, 2).unwrap();
    let archive = fs_err::read(&path).unwrap();
    let recorded = packed
        .archive
        .member_index_sha256
        .clone()
        .expect("an index");

    // From a tail of 16 bytes on: the reader says how much it needs.
    let (index, sha, read) = index_from_tail(&archive, 16);
    assert_eq!(sha, recorded, "the digest the writer reported");
    assert!(read < 64 << 10, "a tail of {read} bytes");
    assert!(matches!(
        MemberIndex::from_tail(
            &archive[archive.len() - read..],
            archive.len() as u64,
            Some(&"0".repeat(64))
        ),
        Err(IndexError::Mismatch { .. })
    ));

    // Each frame is where the index says, with its digest.
    assert_eq!(index.frames.len(), 3);
    for f in &index.frames {
        let bytes = &archive[at(f.offset)..at(f.offset + f.compressed)];
        assert_eq!(artifacts::member_index::frame_sha256(bytes), f.sha256);
        let decoded = zstd::stream::decode_all(bytes).unwrap();
        assert_eq!(decoded.len() as u64, f.decompressed);
    }

    members_as_the_stream_holds_them(&archive, &index);
    // The big library spans every frame; the file after it, only the last.
    let big = index
        .members
        .iter()
        .find(|m| m.path.ends_with("libbig.so"))
        .unwrap();
    assert_eq!(index.frames_for(big.start, big.end), 0..3);
    let after = index
        .members
        .iter()
        .find(|m| m.path.ends_with("z-after.txt"))
        .unwrap();
    assert_eq!(index.frames_for(after.start, after.end), 2..3);

    // What the index costs.
    let index_frame = archive.len() as u64
        - index
            .frames
            .last()
            .map(|f| f.offset + f.compressed)
            .unwrap();
    assert!(
        index_frame < 4096,
        "index and seek table: {index_frame} bytes"
    );
}

/// The bytes of the seek table frame that ends `archive` (its footer: entry count, flags).
fn seek_table_len(archive: &[u8]) -> usize {
    let footer = &archive[archive.len() - 9..];
    let entries = u32::from_le_bytes(footer[..4].try_into().unwrap()) as usize;
    let entry = if footer[4] & 0x80 != 0 { 12 } else { 8 };
    8 + entries * entry + 9
}

#[test]
fn a_damaged_index_is_refused_and_other_archives_have_none() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_sample_tree(&src, "p/stage", "damaged");
    let path = work.path().join("a.tar.zst");
    let packed = pack_artifact_dir(&src, &path, Compression::Zstd { level: 3 }, 0).unwrap();
    let archive = fs_err::read(&path).unwrap();
    let (index, _, _) = index_from_tail(&archive, archive.len());
    // One byte of the compressed index text changed: its digest no longer matches.
    let index_text_byte = at(index
        .frames
        .last()
        .map(|f| f.offset + f.compressed)
        .unwrap())
        + 12;
    let mut damaged = archive.clone();
    damaged[index_text_byte] ^= 0x55;
    let recorded = packed.archive.member_index_sha256.unwrap();
    assert!(matches!(
        MemberIndex::from_tail(&damaged, damaged.len() as u64, Some(&recorded)),
        Err(IndexError::Mismatch { .. })
    ));
    // Without a recorded digest (a local staging directory) the index frame's own content
    // checksum finds the damage, wherever it is in the compressed text (a change to bits the
    // decoder never reads leaves the same index).
    let text_start = index_text_byte - 4;
    let text_end = archive.len() - seek_table_len(&archive) - 8;
    let mut unchanged = 0;
    for byte in text_start..text_end {
        let mut damaged = archive.clone();
        damaged[byte] ^= 0x04;
        match MemberIndex::from_tail(&damaged, damaged.len() as u64, None) {
            Err(err) => assert!(matches!(err, IndexError::Damaged(_)), "{byte}: {err}"),
            Ok((read, _)) => {
                assert_eq!(read, index, "a change at byte {byte} went unseen");
                unchanged += 1;
            }
        }
    }
    assert!(unchanged * 20 < text_end - text_start, "{unchanged}");
    // xz and gzip archives have none.
    for (compression, name) in [
        (Compression::Xz { preset: 1 }, "a.tar.xz"),
        (Compression::Gzip { level: 1 }, "a.tar.gz"),
    ] {
        let other = work.path().join(name);
        let packed = pack_artifact_dir(&src, &other, compression, 0).unwrap();
        assert_eq!(packed.archive.member_index_sha256, None);
        let bytes = fs_err::read(&other).unwrap();
        assert!(matches!(
            MemberIndex::from_tail(&bytes, bytes.len() as u64, None),
            Err(IndexError::Missing)
        ));
    }
}

#[test]
fn selected_members_from_their_frames_alone_unpack_as_tar_x_unpacks_them() {
    use rock_ci_test_support::tar_tree::{snapshot_without_dir_attributes, tar_x_members};
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    tree(&src);
    let path = work.path().join("a_lib_generic.tar.zst");
    pack_artifact_dir(&src, &path, Compression::Zstd { level: 3 }, 2).unwrap();
    let archive = fs_err::read(&path).unwrap();
    let (index, _, _) = index_from_tail(&archive, 16);
    assert!(index.prologue.is_some(), "the manifest's bytes");
    assert_eq!(index.relpaths(), ["p/stage"]);

    // A symlink by its path below the relpath brings its target (a hard link here, which
    // brings the file it links to); a glob across `/` by the archive path.
    let globs = [
        "lib/libx.so".to_owned(),
        "*/big/z-after.txt".to_owned(),
        "nothing*".to_owned(),
    ];
    let selection = index.select(&globs);
    assert_eq!(selection.unmatched, ["nothing*"]);
    let mut paths: Vec<&str> = selection
        .members
        .iter()
        .map(|&i| index.members[i].path.as_str())
        .collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            "p/stage/big/z-after.txt",
            "p/stage/lib/libx-hard.so.1",
            "p/stage/lib/libx.so",
            "p/stage/lib/libx.so.1"
        ]
    );

    // Only the frames that hold them, each checked against the index, then decoded.
    let runs = index.frame_runs(&selection.members);
    let mut content = Vec::new();
    for run in &runs {
        for f in &index.frames[run.clone()] {
            let bytes = &archive[at(f.offset)..at(f.offset + f.compressed)];
            content.push(f.decode(bytes).map(|c| (f.content_offset, c)));
        }
    }
    let frames: usize = runs.iter().map(ExactSizeIterator::len).sum();
    assert_eq!((frames, index.frames.len()), (1, 3), "the last frame only");
    let content = content
        .into_iter()
        .map(|c| c.map_err(std::io::Error::other));
    let mut tar = Vec::new();
    std::io::Read::read_to_end(
        &mut index.member_tar(&selection.members, content).unwrap(),
        &mut tar,
    )
    .unwrap();
    let ours = work.path().join("ours");
    fs_err::create_dir(&ours).unwrap();
    artifacts::extract_artifact(
        "a_lib_generic.tar.zst",
        &tar[..],
        &ours,
        artifacts::Layout::Full,
    )
    .unwrap();

    // GNU tar, given the same members of the whole archive.
    let plain = work.path().join("a.tar");
    fs_err::write(&plain, zstd::stream::decode_all(&archive[..]).unwrap()).unwrap();
    let by_tar = work.path().join("tar");
    let mut names = vec!["artifact_manifest.txt"];
    names.extend(paths.iter().copied());
    tar_x_members(&plain, &by_tar, &names);
    assert_eq!(
        snapshot_without_dir_attributes(&ours),
        snapshot_without_dir_attributes(&by_tar)
    );
}

#[test]
fn members_of_archives_of_other_writers_read_whole_unpack_as_tar_x_unpacks_them() {
    use artifacts::member_index::{SpanReader, index_tar_stream};
    use rock_ci_test_support::tar_tree::{
        gnu_tar_artifact, python_tar_artifact, snapshot_without_dir_attributes, tar_x_members,
    };
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_sample_tree(&src, "p/stage", "others");
    let globs = ["lib/libx.so".to_owned(), "share/doc/*".to_owned()];
    let gnu = work.path().join("gnu.tar");
    gnu_tar_artifact(&src, "p", &gnu);
    let python = work.path().join("python.tar");
    python_tar_artifact(&src, "p", &python);
    for (name, archive) in [("gnu", &gnu), ("python", &python)] {
        let stream = fs_err::read(archive).unwrap();
        let index = index_tar_stream(&stream[..]).unwrap();
        assert_eq!(index.relpaths(), ["p/stage"], "{name}");
        let selection = index.select(&globs);
        assert!(selection.unmatched.is_empty(), "{name}");
        let spans: Vec<(u64, u64)> = std::iter::once(&index.members[0])
            .chain(selection.members.iter().map(|&i| &index.members[i]))
            .map(|m| (m.start, m.end))
            .collect();
        let ours = work.path().join(format!("{name}-ours"));
        fs_err::create_dir(&ours).unwrap();
        artifacts::extract_artifact(
            name,
            &mut SpanReader::new(&stream[..], spans),
            &ours,
            artifacts::Layout::Full,
        )
        .unwrap();
        let mut names = vec!["artifact_manifest.txt".to_owned()];
        names.extend(
            selection
                .members
                .iter()
                .map(|&i| index.members[i].path.clone()),
        );
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let by_tar = work.path().join(format!("{name}-tar"));
        tar_x_members(archive, &by_tar, &names);
        assert_eq!(
            snapshot_without_dir_attributes(&ours),
            snapshot_without_dir_attributes(&by_tar),
            "{name}: {names:?}"
        );
        assert!(names.len() >= 5, "{name}: {names:?}");
    }
}
