//! Single members of a run's archives, read through the member index: only the frames that
//! hold them are downloaded, each checked against the index before it is decoded.

use std::path::Path;
use std::sync::Arc;

use artifact_backend::{ArtifactBackend, Error, FlattenIndex};
use artifacts::Compression;
use rock_ci_test_support::S3Server;
use rock_ci_test_support::s3::SECRET_KEY;

use crate::{client, root, write};

const KEY: &str = "core_lib_generic.tar.zst";
const RUN_PREFIX: &str = "555-linux";

/// An exploded artifact: a 24 MiB library (three frames and more), a small library beside
/// it with a symlink to it (on Unix), and a file after them.
fn exploded(dir: &Path) {
    write(&dir.join("artifact_manifest.txt"), b"core/stage\n");
    let stage = dir.join("core/stage");
    write(
        &stage.join("lib/libbig.so"),
        &rock_ci_test_support::incompressible_bytes(24 << 20, 5),
    );
    write(&stage.join("lib/libsmall.so.1"), b"small library");
    #[cfg(unix)]
    std::os::unix::fs::symlink("libsmall.so.1", stage.join("lib/libsmall.so")).unwrap();
    write(&stage.join("share/z-last.txt"), b"after the libraries");
}

/// The archive of [`exploded`], pushed with its digests to `server`'s run 555.
async fn pushed(server: &S3Server, work: &Path) -> (ArtifactBackend, Vec<u8>) {
    server.create_bucket("therock-ci-artifacts");
    let src = work.join("src");
    exploded(&src);
    let archive = work.join(KEY);
    let packed =
        artifacts::pack_artifact_dir(&src, &archive, Compression::Zstd { level: 1 }, 2).unwrap();
    let backend = ArtifactBackend::s3(
        client(server, SECRET_KEY).await,
        root("therock-ci-artifacts", "", "555"),
    );
    backend
        .upload_artifact_indexed(
            &archive,
            KEY,
            Some(packed.archive.sha256),
            packed.archive.member_index_sha256.as_deref(),
        )
        .await
        .unwrap();
    (backend, fs_err::read(&archive).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_member_costs_its_frames_and_the_index_only() {
    let server = S3Server::start();
    let work = tempfile::tempdir().unwrap();
    let (backend, archive) = pushed(&server, work.path()).await;
    let out = work.path().join("out");
    let before = server.requests();
    let globs = ["lib/libsmall.so*".to_owned(), "nothing".to_owned()];
    let fetched = backend
        .fetch_members(KEY, &globs, &out, None)
        .await
        .unwrap();
    assert!(fetched.indexed);
    // A HEAD, the tail, one ranged GET of the one frame that holds the small library.
    assert_eq!(server.requests() - before, 3);
    assert_eq!(fetched.unmatched, ["nothing"]);
    assert_eq!(fetched.frames.0, 1, "{:?}", fetched.frames);
    assert!(fetched.frames.1 >= 4, "{:?}", fetched.frames);
    assert!(
        fetched.bytes * 3 < archive.len() as u64,
        "{} of {} bytes",
        fetched.bytes,
        archive.len()
    );
    let dir = out.join("core_lib_generic");
    assert_eq!(
        fs_err::read(dir.join("core/stage/lib/libsmall.so.1")).unwrap(),
        b"small library"
    );
    #[cfg(unix)]
    assert_eq!(
        fs_err::read_link(dir.join("core/stage/lib/libsmall.so")).unwrap(),
        Path::new("libsmall.so.1")
    );
    assert!(!dir.join("core/stage/lib/libbig.so").exists());
    assert!(!dir.join("core/stage/share").exists());

    // The big library, flattened.
    let flat = work.path().join("flat");
    let before = server.requests();
    let fetched = backend
        .fetch_members(
            KEY,
            &["core/stage/lib/libbig.so".to_owned()],
            &flat,
            Some(Arc::new(FlattenIndex::default())),
        )
        .await
        .unwrap();
    assert_eq!(fetched.members, 1);
    // Its frames (one run) as ranged GETs of 1 MiB, after the HEAD and the tail.
    assert!(fetched.frames.0 >= 3, "{:?}", fetched.frames);
    assert_eq!(
        server.requests() - before,
        2 + fetched.bytes.div_ceil(1 << 20),
        "{} bytes",
        fetched.bytes
    );
    assert_eq!(
        fs_err::read(flat.join("lib/libbig.so")).unwrap(),
        rock_ci_test_support::incompressible_bytes(24 << 20, 5)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lying_server_and_a_wrong_index_are_named() {
    let server = S3Server::start();
    let work = tempfile::tempdir().unwrap();
    let (backend, archive) = pushed(&server, work.path()).await;
    let stored = server
        .root()
        .join("therock-ci-artifacts")
        .join(RUN_PREFIX)
        .join(KEY);
    let (index, _) =
        artifacts::member_index::MemberIndex::from_tail(&archive, archive.len() as u64, None)
            .unwrap();

    // One byte of the frame that holds the small library (the last) altered where the server
    // keeps it.
    let last = index.frames.last().unwrap().offset;
    let mut altered = archive.clone();
    altered[usize::try_from(last).unwrap() + 100] ^= 0x40;
    fs_err::write(&stored, &altered).unwrap();
    let err = backend
        .fetch_members(
            KEY,
            &["*libsmall.so.1".to_owned()],
            &work.path().join("a"),
            None,
        )
        .await
        .unwrap_err();
    let shown = storage_backend::chain(&err);
    assert!(matches!(err, Error::MemberIndex { .. }), "{shown}");
    assert!(
        shown.contains(KEY) && shown.contains(&format!("the frame at byte {last}")),
        "{shown}"
    );
    assert!(!work.path().join("a/core_lib_generic").exists());

    // The index itself altered: it no longer has the digest recorded with the object.
    let mut altered = archive.clone();
    let index_at = usize::try_from(
        index
            .frames
            .last()
            .map(|f| f.offset + f.compressed)
            .unwrap(),
    )
    .unwrap();
    altered[index_at + 20] ^= 0x40;
    fs_err::write(&stored, &altered).unwrap();
    let err = backend
        .fetch_members(
            KEY,
            &["*libsmall.so.1".to_owned()],
            &work.path().join("b"),
            None,
        )
        .await
        .unwrap_err();
    let shown = storage_backend::chain(&err);
    assert!(shown.contains(KEY) && shown.contains("SHA-256"), "{shown}");
}

#[tokio::test]
async fn members_of_a_local_staging_dir_and_of_an_archive_without_an_index() {
    let work = tempfile::tempdir().unwrap();
    let staging = work.path().join("staging");
    let src = work.path().join("src");
    exploded(&src);
    let run = staging.join(RUN_PREFIX);
    fs_err::create_dir_all(&run).unwrap();
    for (name, compression) in [
        (KEY, Compression::Zstd { level: 1 }),
        ("core_lib_gfx942.tar.xz", Compression::Xz { preset: 0 }),
    ] {
        let packed = artifacts::pack_artifact_dir(&src, &run.join(name), compression, 0).unwrap();
        write(
            &run.join(format!("{name}.sha256sum")),
            format!("{}  {name}\n", packed.archive.sha256).as_bytes(),
        );
    }
    let backend = crate::local(&staging, "555");
    let out = work.path().join("out");
    let fetched = backend
        .fetch_members(KEY, &["share/*".to_owned()], &out, None)
        .await
        .unwrap();
    assert_eq!((fetched.members, fetched.frames.0), (1, 1));
    assert_eq!(
        fs_err::read(out.join("core_lib_generic/core/stage/share/z-last.txt")).unwrap(),
        b"after the libraries"
    );
    // An xz archive has no index: read whole, and only the members written.
    let fetched = backend
        .fetch_members(
            "core_lib_gfx942.tar.xz",
            &["share/*".to_owned(), "lib/libsmall.so".to_owned()],
            &out,
            None,
        )
        .await
        .unwrap();
    assert!(!fetched.indexed);
    let dir = out.join("core_lib_gfx942");
    let mut written = crate::names_in(&dir.join("core/stage"));
    written.sort();
    let expected: &[&str] = if cfg!(unix) {
        &["lib", "share"]
    } else {
        &["share"]
    };
    assert_eq!(written, expected);
    assert_eq!(
        fs_err::read(dir.join("core/stage/share/z-last.txt")).unwrap(),
        b"after the libraries"
    );
    assert!(!dir.join("core/stage/lib/libbig.so").exists());
    #[cfg(unix)]
    assert_eq!(
        fs_err::read(dir.join("core/stage/lib/libsmall.so")).unwrap(),
        b"small library",
        "the symlink and its target"
    );
    // Nothing left beside the output but the two artifacts.
    let mut left = crate::names_in(&out);
    left.sort();
    assert_eq!(left, ["core_lib_generic", "core_lib_gfx942"]);

    // Listed: from the index, and from the whole xz archive; the same members either way.
    let (indexed, from_index) = backend.archive_members(KEY).await.unwrap();
    let (whole, from_whole) = backend
        .archive_members("core_lib_gfx942.tar.xz")
        .await
        .unwrap();
    assert!(from_index && !from_whole);
    let described = |members: &[artifacts::member_index::IndexedMember]| -> Vec<String> {
        members
            .iter()
            .map(|m| format!("{} {} {} {:?}", m.path, m.kind.name(), m.size, m.link))
            .collect()
    };
    assert_eq!(described(&whole), described(&indexed));
    assert!(
        whole
            .iter()
            .any(|m| m.path == "core/stage/share/z-last.txt")
    );
    // A whole archive that is not what its sidecar says is refused, not listed.
    let xz = run.join("core_lib_gfx942.tar.xz");
    let mut bytes = fs_err::read(&xz).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    fs_err::write(&xz, &bytes).unwrap();
    let err = backend
        .archive_members("core_lib_gfx942.tar.xz")
        .await
        .unwrap_err();
    assert!(err.is_wrong_content(), "{err}");
}
