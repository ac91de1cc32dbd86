use std::path::Path;
use std::sync::Arc;

use artifact_backend::{ArtifactBackend, Error, FlattenIndex, VERIFIED_DIR, verified_dir};
use artifacts::{ArchiveWriter, Compression, Layout};
use rock_ci_test_support::S3Server;
use rock_ci_test_support::incompressible_bytes;
use rock_ci_test_support::links::{self, Member};
use rock_ci_test_support::s3::SECRET_KEY;
use rock_ci_test_support::write_artifact;

use crate::{client, local, root, write};

fn entries(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    out.sort();
    out
}

/// A verified extracted copy of `fft_lib_gfx942.tar.xz` in `out` (whose digest is `sha256`)
/// is recorded and known to be current while the sidecar agrees; re-fetching replaces both;
/// the leftovers of an interrupted fetch are removed, nothing else.
async fn verified_copy_is_recorded(b: &ArtifactBackend, out: &Path, sha256: &str) {
    // The verified copy is recorded beside the output, which holds only what the archive
    // holds, and known to be current while the sidecar agrees.
    assert_eq!(entries(out), ["fft_lib_gfx942"]);
    let records = verified_dir(out).unwrap();
    assert_eq!(
        records,
        fs_err::canonicalize(out.parent().unwrap())
            .unwrap()
            .join(format!(
                ".{}{VERIFIED_DIR}",
                out.file_name().unwrap().to_string_lossy()
            ))
    );
    let marker = records.join("fft_lib_gfx942.tar.xz.tree");
    let recorded = fs_err::read_to_string(&marker).unwrap();
    assert!(
        recorded.starts_with(&format!("rock-ci extracted tree 1\nsha256 {sha256}\n")),
        "{recorded}"
    );
    assert!(
        b.extracted_is_current("fft_lib_gfx942.tar.xz", out)
            .await
            .unwrap()
    );
    fs_err::write(&marker, recorded.replace(sha256, &"0".repeat(64))).unwrap();
    assert!(
        !b.extracted_is_current("fft_lib_gfx942.tar.xz", out)
            .await
            .unwrap()
    );
    // Fetching again replaces the directory and the record.
    b.fetch_extracted("fft_lib_gfx942.tar.xz", out, Layout::Full, Arc::default())
        .await
        .unwrap();
    assert_eq!(entries(out), ["fft_lib_gfx942"]);
    assert!(
        b.extracted_is_current("fft_lib_gfx942.tar.xz", out)
            .await
            .unwrap()
    );
    // Leftovers of an interrupted fetch go, and the records earlier versions kept inside the
    // output; everything else stays.
    fs_err::create_dir_all(out.join(".fft_lib_gfx942.AbC123.partial/sub")).unwrap();
    fs_err::create_dir_all(out.join(VERIFIED_DIR)).unwrap();
    fs_err::write(out.join(VERIFIED_DIR).join("x.tar.xz.sha256"), "0\n").unwrap();
    fs_err::write(out.join(".keep.partial"), "a file, not a fetch's directory").unwrap();
    artifact_backend::remove_stale_partials(out).unwrap();
    assert_eq!(entries(out), [".keep.partial", "fft_lib_gfx942"]);
    fs_err::remove_file(out.join(".keep.partial")).unwrap();
    // Where the records cannot be written, the fetch still succeeds, unrecorded.
    fs_err::remove_dir_all(&records).unwrap();
    fs_err::write(&records, "in the way").unwrap();
    b.fetch_extracted("fft_lib_gfx942.tar.xz", out, Layout::Full, Arc::default())
        .await
        .unwrap();
    assert_eq!(entries(out), ["fft_lib_gfx942"]);
    assert!(
        !b.extracted_is_current("fft_lib_gfx942.tar.xz", out)
            .await
            .unwrap()
    );
    fs_err::remove_file(&records).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn streamed_fetch_extracts_flattens_and_verifies() {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let b = ArtifactBackend::s3(client(&server, SECRET_KEY).await, root("bkt", "", "50"));
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    fs_err::create_dir_all(&src).unwrap();
    write_artifact(
        &src.join("blas_lib_generic.tar.zst"),
        Compression::Zstd { level: 3 },
        "math-libs/BLAS/stage",
        &[("lib/libblas.so", "blas"), ("share/doc/README", "same")],
    );
    write_artifact(
        &src.join("fft_lib_gfx942.tar.xz"),
        Compression::Xz { preset: 1 },
        "math-libs/FFT/stage",
        &[("lib/libfft.so", "fft"), ("share/doc/README", "same")],
    );
    write_artifact(
        &src.join("bad_lib_generic.tar.zst"),
        Compression::Zstd { level: 3 },
        "x/stage",
        &[("lib/libblas.so", "different")],
    );
    for name in [
        "blas_lib_generic.tar.zst",
        "fft_lib_gfx942.tar.xz",
        "bad_lib_generic.tar.zst",
    ] {
        b.upload_artifact(&src.join(name), name).await.unwrap();
    }

    // Full layout: {output}/{name}/ with the manifest and the stage tree.
    let out = t.path().join("out");
    let got = b
        .fetch_extracted("fft_lib_gfx942.tar.xz", &out, Layout::Full, Arc::default())
        .await
        .unwrap();
    assert!(got.verified);
    assert_eq!(got.extracted.files, 2);
    assert_eq!(
        fs_err::read_to_string(out.join("fft_lib_gfx942/math-libs/FFT/stage/lib/libfft.so"))
            .unwrap(),
        "fft"
    );
    assert!(out.join("fft_lib_gfx942/artifact_manifest.txt").is_file());
    verified_copy_is_recorded(&b, &out, &got.sha256).await;

    // Flatten: both artifacts merge; an identical shared file is fine.
    let flat = t.path().join("flat");
    let index = Arc::new(FlattenIndex::default());
    b.fetch_extracted(
        "blas_lib_generic.tar.zst",
        &flat,
        Layout::Flatten,
        index.clone(),
    )
    .await
    .unwrap();
    b.fetch_extracted(
        "fft_lib_gfx942.tar.xz",
        &flat,
        Layout::Flatten,
        index.clone(),
    )
    .await
    .unwrap();
    assert_eq!(entries(&flat.join("lib")), ["libblas.so", "libfft.so"]);
    assert_eq!(
        fs_err::read_to_string(flat.join("share/doc/README")).unwrap(),
        "same"
    );
    assert_eq!(entries(&flat), ["lib", "share"]);
    // A different file at the same path is an error naming both artifacts.
    let err = b
        .fetch_extracted("bad_lib_generic.tar.zst", &flat, Layout::Flatten, index)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::FlattenConflict { .. }), "{err:?}");
    // The path as this system writes it (`lib\\libblas.so` on Windows).
    assert_eq!(
        err.to_string(),
        format!(
            "`{}` is in both `blas_lib_generic.tar.zst` and `bad_lib_generic.tar.zst` with different content",
            std::path::Path::new("lib").join("libblas.so").display()
        )
    );
    assert_eq!(
        fs_err::read_to_string(flat.join("lib/libblas.so")).unwrap(),
        "blas"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn corrupted_or_hostile_archives_leave_nothing() {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let b = ArtifactBackend::s3(client(&server, SECRET_KEY).await, root("bkt", "", "51"))
        // Unverifiable archives are let through, so that their contents are checked.
        .allow_unverified(true);
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src/core_lib_generic.tar.zst");
    fs_err::create_dir_all(src.parent().unwrap()).unwrap();
    write_artifact(
        &src,
        Compression::Zstd { level: 3 },
        "core/stage",
        &[("lib/libcore.so", "core")],
    );
    b.upload_artifact(&src, "core_lib_generic.tar.zst")
        .await
        .unwrap();
    // Replace the stored archive by another valid one: it unpacks, but the digest is wrong.
    let other = t.path().join("other.tar.zst");
    write_artifact(
        &other,
        Compression::Zstd { level: 3 },
        "core/stage",
        &[("lib/libcore.so", "evil")],
    );
    fs_err::copy(
        &other,
        server.root().join("bkt/51-linux/core_lib_generic.tar.zst"),
    )
    .unwrap();
    let out = t.path().join("out");
    for layout in [Layout::Full, Layout::Flatten] {
        let err = b
            .fetch_extracted("core_lib_generic.tar.zst", &out, layout, Arc::default())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
        assert!(entries(&out).is_empty(), "{:?}", entries(&out));
    }

    // A hostile archive (without a sidecar) is refused, naming archive and member.
    let hostile = t.path().join("evil_lib_generic.tar.zst");
    let mut w = ArchiveWriter::create(&hostile, Compression::Zstd { level: 3 }).unwrap();
    w.append_data("artifact_manifest.txt", b"s\n", 0o644)
        .unwrap();
    w.append_data("elsewhere/x", b"x", 0o644).unwrap();
    w.finish().unwrap();
    write(
        &server.root().join("bkt/51-linux/evil_lib_generic.tar.zst"),
        &fs_err::read(&hostile).unwrap(),
    );
    let err = b
        .fetch_extracted(
            "evil_lib_generic.tar.zst",
            &out,
            Layout::Full,
            Arc::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Refusing member `elsewhere/x` of `evil_lib_generic.tar.zst`: not below any path of the artifact manifest"
    );
    assert!(entries(&out).is_empty());

    let err = b
        .fetch_extracted(
            "missing_lib_generic.tar.zst",
            &out,
            Layout::Full,
            Arc::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    assert!(entries(&out).is_empty());
}

#[tokio::test]
async fn local_backend_streams_the_same_way() {
    let t = tempfile::tempdir().unwrap();
    // No sidecars here: unverified archives are allowed, and reported as such.
    let b = local(t.path(), "7").allow_unverified(true);
    write_artifact(
        &t.path().join("7-linux/a_run_generic.tar.xz"),
        Compression::Xz { preset: 0 },
        "a/stage",
        &[("bin/a", "#!/bin/sh\n")],
    );
    let out = t.path().join("out");
    let got = b
        .fetch_extracted("a_run_generic.tar.xz", &out, Layout::Full, Arc::default())
        .await
        .unwrap();
    assert!(!got.verified);
    assert_eq!(
        fs_err::read_to_string(out.join("a_run_generic/a/stage/bin/a")).unwrap(),
        "#!/bin/sh\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn decoder_thread_unpacks_the_same_and_fails_the_same() {
    let t = tempfile::tempdir().unwrap();
    let b = local(t.path(), "8");
    let run = t.path().join("8-linux");
    // Several decoded blocks: a 3.5 MiB file between many small ones, in both compressions.
    let big = incompressible_bytes(3_500_000, 7);
    for (name, compression) in [
        ("big_lib_generic.tar.zst", Compression::Zstd { level: 3 }),
        ("big_lib_gfx942.tar.xz", Compression::Xz { preset: 0 }),
    ] {
        fs_err::create_dir_all(&run).unwrap();
        let mut w = ArchiveWriter::create(&run.join(name), compression).unwrap();
        w.append_data("artifact_manifest.txt", b"s\n", 0o644)
            .unwrap();
        for i in 0..40 {
            w.append_data(&format!("s/a/f{i}"), format!("file {i}").as_bytes(), 0o644)
                .unwrap();
        }
        w.append_data("s/big.bin", &big, 0o755).unwrap();
        for i in 0..40 {
            w.append_data(
                &format!("s/b/g{i}"),
                &incompressible_bytes(9000 + i, i as u64),
                0o644,
            )
            .unwrap();
        }
        w.finish().unwrap();
        write_sidecar(&run, name, true);
    }
    let unpack = |decoder_thread| artifact_backend::Unpacking {
        layout: Layout::Full,
        decoder_thread,
        frame_workers: 2,
    };
    for name in ["big_lib_generic.tar.zst", "big_lib_gfx942.tar.xz"] {
        let (one, two) = (t.path().join("one"), t.path().join("two"));
        let a = b.fetch_extracted(name, &one, unpack(false), Arc::default());
        let c = b.fetch_extracted(name, &two, unpack(true), Arc::default());
        let (a, c) = (a.await.unwrap(), c.await.unwrap());
        assert!(a.verified && c.verified);
        assert_eq!((a.sha256, a.extracted.clone()), (c.sha256, c.extracted));
        assert_eq!(a.extracted.files, 81);
        let dir = extract_dir(name);
        let files = rock_ci_test_support::files_under(&one.join(dir));
        assert_eq!(files, rock_ci_test_support::files_under(&two.join(dir)));
        assert_eq!(files.len(), 82);
        for f in &files {
            assert_eq!(
                fs_err::read(one.join(dir).join(f)).unwrap(),
                fs_err::read(two.join(dir).join(f)).unwrap(),
                "{f}"
            );
        }
        assert_eq!(fs_err::read(two.join(dir).join("s/big.bin")).unwrap(), big);
    }

    // A damaged archive (bytes flipped in the middle, sidecar removed) and a truncated one
    // fail with the decoder on its own thread too, leaving nothing.
    let name = "big_lib_generic.tar.zst";
    let mut bytes = fs_err::read(run.join(name)).unwrap();
    fs_err::remove_file(run.join(format!("{name}.sha256sum"))).unwrap();
    let whole = bytes.clone();
    let mid = bytes.len() / 2;
    for byte in &mut bytes[mid..mid + 64] {
        *byte ^= 0x5a;
    }
    for damaged in [bytes, whole[..whole.len() - 100].to_vec()] {
        write(&run.join(name), &damaged);
        for decoder_thread in [false, true] {
            let out = t.path().join("damaged");
            let err = b
                .fetch_extracted(name, &out, unpack(decoder_thread), Arc::default())
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains(name),
                "decoder thread {decoder_thread}: {err}"
            );
            assert!(entries(&out).is_empty(), "{:?}", entries(&out));
        }
    }
}

fn extract_dir(name: &str) -> &str {
    artifact_backend::extract_dir_name(name)
}

/// With one unpacking permit and six transfers at once, the archives without a permit wait
/// downloaded in the spool, all are unpacked (bootstrap: merged trees, one marker per relpath),
/// and the spool is left empty.
#[tokio::test(flavor = "multi_thread")]
async fn transfers_beyond_the_unpacking_slots_wait_in_the_spool() {
    let server = S3Server::start();
    server.create_bucket("bkt");
    let b = ArtifactBackend::s3(client(&server, SECRET_KEY).await, root("bkt", "", "51"));
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    fs_err::create_dir_all(&src).unwrap();
    let keys: Vec<String> = (0..6)
        .map(|i| format!("a{i}_lib_generic.tar.zst"))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        let data = format!("{i}").repeat(100_000);
        write_artifact(
            &src.join(key),
            Compression::Zstd { level: 1 },
            &format!("pkg{}/stage", i % 2),
            &[(&format!("lib/lib{i}.so"), data.as_str())],
        );
        b.upload_artifact(&src.join(key), key).await.unwrap();
    }
    let out = t.path().join("build");
    fs_err::create_dir_all(&out).unwrap();
    let spool = t.path().join("spool");
    fs_err::create_dir_all(&spool).unwrap();
    let unpack = artifact_backend::UnpackSlots::new(1);
    let index = Arc::new(FlattenIndex::default());
    let fetches = keys.iter().map(|key| {
        b.fetch_extracted_limited(key, &out, Layout::Bootstrap, index.clone(), &unpack, &spool)
    });
    let results = futures::future::join_all(fetches).await;
    for r in &results {
        let got = r.as_ref().unwrap();
        assert!(got.verified, "{}", got.key);
        // Spooled or streamed, the digest is the archive's (spooled ones hashed only once, as
        // they were downloaded).
        let actual = storage_backend::sha256_file(&src.join(&got.key))
            .await
            .unwrap();
        assert_eq!(got.sha256, actual, "{}", got.key);
        assert_eq!(
            got.bytes,
            fs_err::metadata(src.join(&got.key)).unwrap().len()
        );
    }
    assert!(
        !out.join("pkg0/stage.prebuilt").exists(),
        "no marker before all are in place"
    );
    let markers = index.write_prebuilt_markers(&out).unwrap();
    assert_eq!(markers.len(), 2);
    for i in 0..6 {
        let path = out.join(format!("pkg{}/stage/lib/lib{i}.so", i % 2));
        assert_eq!(
            fs_err::read(&path).unwrap().len(),
            100_000,
            "{}",
            path.display()
        );
    }
    assert!(out.join("pkg0/stage.prebuilt").is_file());
    assert!(out.join("pkg1/stage.prebuilt").is_file());
    assert_eq!(
        fs_err::read_dir(&spool).unwrap().count(),
        0,
        "the spool is emptied"
    );
    let mut entries: Vec<String> = fs_err::read_dir(out.join("pkg0"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(
        entries,
        ["stage", "stage.prebuilt"],
        "nothing else in the build tree"
    );
}

/// Local archives wait for an unpacking permit and stream from where they lie, never copied:
/// the spool given is below a regular file, so any write into it fails the fetch.
#[tokio::test(flavor = "multi_thread")]
async fn local_archives_wait_for_a_permit_instead_of_the_spool() {
    let t = tempfile::tempdir().unwrap();
    let backend = local(t.path(), "52");
    let run = t.path().join("52-linux");
    fs_err::create_dir_all(&run).unwrap();
    let big = incompressible_bytes(3 << 20, 3);
    let keys: Vec<String> = (0..3)
        .map(|i| format!("b{i}_lib_generic.tar.zst"))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        let mut w = ArchiveWriter::create(&run.join(key), Compression::Zstd { level: 1 }).unwrap();
        w.append_data("artifact_manifest.txt", b"s\n", 0o644)
            .unwrap();
        w.append_data(&format!("s/big{i}.bin"), &big, 0o644)
            .unwrap();
        w.finish().unwrap();
        write_sidecar(&run, key, true);
    }
    let blocker = t.path().join("not-a-directory");
    write(&blocker, b"x");
    let spool = blocker.join("spool");
    let out = t.path().join("out");
    fs_err::create_dir_all(&out).unwrap();
    let unpack = artifact_backend::UnpackSlots::new(1);
    let fetches = keys.iter().map(|key| {
        backend.fetch_extracted_limited(key, &out, Layout::Full, Arc::default(), &unpack, &spool)
    });
    for (i, r) in futures::future::join_all(fetches)
        .await
        .into_iter()
        .enumerate()
    {
        let got = r.unwrap_or_else(|e| panic!("{i}: {e:?}"));
        assert!(got.verified, "{}", got.key);
        let file = out.join(format!("b{i}_lib_generic/s/big{i}.bin"));
        assert_eq!(fs_err::read(&file).unwrap(), big, "{}", file.display());
    }
}

/// A file two artifacts hold with the same content but other metadata (built a second apart,
/// one of them executable): the flattened tree holds the copy of the artifact whose name sorts
/// first, whichever is fetched first, so every fetch of the run gives the same tree.
#[tokio::test(flavor = "multi_thread")]
async fn a_shared_file_is_the_first_artifacts_copy_whatever_the_order() {
    let t = tempfile::tempdir().unwrap();
    let b = local(t.path(), "9");
    let run = t.path().join("9-linux");
    fs_err::create_dir_all(&run).unwrap();
    let (first, last) = ("a_lib_generic.tar.zst", "z_lib_generic.tar.zst");
    for (key, mtime, mode) in [(first, 1_700_000_000, 0o644), (last, 1_700_000_001, 0o755)] {
        let src = t.path().join(format!("src-{key}"));
        write(&src.join("common.txt"), b"the same in both\n");
        write(&src.join("own.txt"), key.as_bytes());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let perms = std::fs::Permissions::from_mode(mode);
            fs_err::set_permissions(src.join("common.txt"), perms).unwrap();
        }
        let _ = mode;
        let mut w = ArchiveWriter::create(&run.join(key), Compression::Zstd { level: 1 }).unwrap();
        w.append_data("artifact_manifest.txt", b"s\n", 0o644)
            .unwrap();
        w.append_normalized("s/share/common.txt", &src.join("common.txt"), mtime)
            .unwrap();
        w.append_normalized(&format!("s/share/{key}.txt"), &src.join("own.txt"), mtime)
            .unwrap();
        w.finish().unwrap();
        write_sidecar(&run, key, true);
    }
    for order in [[last, first], [first, last]] {
        let out = t.path().join(format!("out-{}", order[0]));
        let index = Arc::new(FlattenIndex::default());
        for key in order {
            let got = b
                .fetch_extracted(key, &out, Layout::Flatten, index.clone())
                .await
                .unwrap();
            assert!(got.verified, "{key}");
        }
        let common = out.join("share/common.txt");
        assert_eq!(fs_err::read(&common).unwrap(), b"the same in both\n");
        let mtime = fs_err::metadata(&common).unwrap().modified().unwrap();
        assert_eq!(
            mtime,
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
            "{order:?}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs_err::metadata(&common).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644, "{order:?}");
        }
        assert_eq!(
            entries(&out.join("share")),
            [
                "a_lib_generic.tar.zst.txt",
                "common.txt",
                "z_lib_generic.tar.zst.txt"
            ]
        );
        for key in order {
            let own = out.join(format!("share/{key}.txt"));
            assert_eq!(fs_err::read_to_string(own).unwrap(), key);
        }
    }
}

/// Writes the archive `{run}/{name}` of `members` (below the manifest path `s`) and its
/// sidecar: the archive's digest, or another one when `sidecar_matches` is false.
fn archive_with_sidecar(
    run: &Path,
    name: &str,
    members: &[(String, Vec<u8>)],
    sidecar_matches: bool,
) {
    fs_err::create_dir_all(run).unwrap();
    let mut w = ArchiveWriter::create(&run.join(name), Compression::Zstd { level: 1 }).unwrap();
    w.append_data("artifact_manifest.txt", b"s\n", 0o644)
        .unwrap();
    for (path, data) in members {
        w.append_data(&format!("s/{path}"), data, 0o644).unwrap();
    }
    w.finish().unwrap();
    write_sidecar(run, name, sidecar_matches);
}

/// Writes the sidecar `{run}/{name}.sha256sum`: the archive's digest, or another one when
/// `matches` is false.
fn write_sidecar(run: &Path, name: &str, matches: bool) {
    let digest = if matches {
        rock_ci_test_support::sha256_hex(&fs_err::read(run.join(name)).unwrap())
    } else {
        "0".repeat(64)
    };
    write(
        &run.join(format!("{name}.sha256sum")),
        format!("{digest}  {name}\n").as_bytes(),
    );
}

/// Flattened artifacts unpacked at once share one tree: files of several artifacts in the same
/// directories, an identical file in all of them (one waits for the other's verification to
/// compare), a file an earlier run left replaced. A bad artifact (wrong digest, found only once
/// it is unpacked) and a conflicting one leave the tree as it was, an earlier run's files
/// included.
#[tokio::test(flavor = "multi_thread")]
#[expect(
    clippy::too_many_lines,
    reason = "one shared tree, each failure checked against it"
)]
async fn flattened_artifacts_share_the_tree_and_a_bad_one_leaves_nothing_behind() {
    let t = tempfile::tempdir().unwrap();
    let b = local(t.path(), "9");
    let run = t.path().join("9-linux");
    let shared = incompressible_bytes(300_000, 1);
    let keys: Vec<String> = (0..6)
        .map(|i| format!("p{i}_lib_generic.tar.zst"))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        let mut members: Vec<(String, Vec<u8>)> = (0..150)
            .map(|j| (format!("lib/f{i}_{j}"), format!("{i}.{j}").into_bytes()))
            .collect();
        members.push(("share/doc/README".into(), shared.clone()));
        members.push((
            format!("share/p{i}/big"),
            incompressible_bytes(200_000, i as u64),
        ));
        archive_with_sidecar(&run, key, &members, true);
    }
    let out = t.path().join("out");
    // Left by an earlier run: a path of p0 (replaced) and one no artifact has (kept).
    write(&out.join("lib/f0_0"), b"old");
    write(&out.join("old/keep"), b"kept");
    let index = Arc::new(FlattenIndex::default());
    let fetches = keys
        .iter()
        .map(|k| b.fetch_extracted(k, &out, Layout::Flatten, index.clone()));
    for got in futures::future::join_all(fetches).await {
        assert!(got.unwrap().verified);
    }
    let files = rock_ci_test_support::files_under(&out);
    // 150 files and a big one per artifact, the shared README, the earlier run's `old/keep`.
    assert_eq!(files.len(), 6 * 151 + 2);
    for i in 0..6u64 {
        for j in [0, 77, 149] {
            assert_eq!(
                fs_err::read_to_string(out.join(format!("lib/f{i}_{j}"))).unwrap(),
                format!("{i}.{j}")
            );
        }
        assert_eq!(
            fs_err::read(out.join(format!("share/p{i}/big"))).unwrap(),
            incompressible_bytes(200_000, i)
        );
    }
    assert_eq!(fs_err::read(out.join("share/doc/README")).unwrap(), shared);
    assert_eq!(
        fs_err::read_to_string(out.join("old/keep")).unwrap(),
        "kept"
    );
    assert_eq!(entries(&out), ["lib", "old", "share"]);
    let before = rock_ci_test_support::tree_snapshot(&out);

    // Unpacked into the tree before its digest is known to be wrong: all of it taken away
    // again, directories it made too; the earlier run's `old/keep` stays as it was.
    let bad: Vec<(String, Vec<u8>)> = vec![
        ("lib/bad".into(), b"bad".to_vec()),
        ("new/deep/x".into(), b"x".to_vec()),
        ("old/keep".into(), b"overwritten".to_vec()),
        ("old/new".into(), b"new".to_vec()),
    ];
    archive_with_sidecar(&run, "bad_lib_generic.tar.zst", &bad, false);
    let err = b
        .fetch_extracted(
            "bad_lib_generic.tar.zst",
            &out,
            Layout::Flatten,
            index.clone(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
    // A local staging directory's files are named by their paths, the sidecar too.
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "`{}`",
            run.join("bad_lib_generic.tar.zst").display()
        )) && text.contains(&format!(
            "the sidecar `{}`",
            run.join("bad_lib_generic.tar.zst.sha256sum").display()
        )) && !text.contains("s3://"),
        "{text}"
    );
    assert_eq!(rock_ci_test_support::tree_snapshot(&out), before);

    // A file where another artifact has a directory: refused, naming both; nothing removed,
    // and nothing of the refused artifact left (its own paths included).
    let file_over_dir: Vec<(String, Vec<u8>)> = vec![
        ("clash-only/x".into(), b"x".to_vec()),
        ("lib/clash-only".into(), b"x".to_vec()),
        ("share/p3".into(), b"a file".to_vec()),
        ("share/doc/README".into(), shared.clone()),
    ];
    archive_with_sidecar(&run, "clash_lib_generic.tar.zst", &file_over_dir, true);
    let err = b
        .fetch_extracted(
            "clash_lib_generic.tar.zst",
            &out,
            Layout::Flatten,
            index.clone(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "`{}` is in both `p3_lib_generic.tar.zst` and `clash_lib_generic.tar.zst` with different content",
            Path::new("share").join("p3").display()
        )
    );
    assert_eq!(rock_ci_test_support::tree_snapshot(&out), before);

    // The same path twice in one archive: the later member wins, as with `tar -x`.
    let twice: Vec<(String, Vec<u8>)> = vec![
        ("lib/dup".into(), b"first".to_vec()),
        ("lib/dup".into(), b"second".to_vec()),
    ];
    archive_with_sidecar(&run, "dup_lib_generic.tar.zst", &twice, true);
    b.fetch_extracted("dup_lib_generic.tar.zst", &out, Layout::Flatten, index)
        .await
        .unwrap();
    assert_eq!(
        fs_err::read_to_string(out.join("lib/dup")).unwrap(),
        "second"
    );
}

/// Every layout gives symlinks that read as their targets (on Windows, where the system makes
/// no link, copies with their targets' bytes): a target before or after its link, a chain of
/// links, a link to a directory. A 0444 member is read-only (on Windows its read-only
/// attribute), and neither a second fetch over the tree nor its removal is stopped by it. A
/// link to nothing fails the flattened fetch on Windows, naming it, and leaves the tree as it
/// was.
#[tokio::test(flavor = "multi_thread")]
async fn symlinks_and_read_only_files_in_every_layout() {
    let t = tempfile::tempdir().unwrap();
    let b = local(t.path(), "9");
    let run = t.path().join("9-linux");
    let key = "links_lib_generic.tar.zst";
    links::write_archive(&run.join(key), "s", links::LINKED);
    let read_only = |path: &Path| fs_err::metadata(path).unwrap().permissions().readonly();
    for layout in [Layout::Full, Layout::Flatten, Layout::Bootstrap] {
        let out = t.path().join(format!("out-{layout:?}"));
        let stage = match layout {
            Layout::Full => out.join("links_lib_generic/s"),
            Layout::Flatten => out.clone(),
            Layout::Bootstrap => out.join("s"),
        };
        // Twice: the second fetch goes over the first one's read-only file.
        for _ in 0..2 {
            b.fetch_extracted(key, &out, layout, Arc::new(FlattenIndex::default()))
                .await
                .unwrap_or_else(|e| panic!("{layout:?}: {e}"));
            for (name, content) in links::LINKED_READS {
                assert_eq!(
                    fs_err::read_to_string(stage.join(name)).unwrap(),
                    *content,
                    "{name} {layout:?}"
                );
            }
            // Links on Unix; on Windows (under Wine: always) copies where none was made.
            #[cfg(unix)]
            assert_eq!(
                fs_err::read_link(stage.join("link.txt")).unwrap(),
                Path::new("target.txt")
            );
            assert!(read_only(&stage.join("ro.txt")), "{layout:?}");
            assert!(!read_only(&stage.join("target.txt")), "{layout:?}");
        }
        file_tree::remove_tree(&out).unwrap();
        assert!(!out.exists(), "{layout:?}");
    }

    // A link to nothing, beside a read-only file the flattened fetch placed in the tree.
    links::write_archive(
        &run.join("dangling_lib_generic.tar.zst"),
        "s",
        &[
            ("lib/ro.txt", Member::File("read only", 0o444)),
            ("lib/gone", Member::Link("missing")),
        ],
    );
    let out = t.path().join("flat");
    write(&out.join("old/keep"), b"kept");
    let before = rock_ci_test_support::tree_snapshot(&out);
    let result = b
        .fetch_extracted(
            "dangling_lib_generic.tar.zst",
            &out,
            Layout::Flatten,
            Arc::new(FlattenIndex::default()),
        )
        .await;
    #[cfg(unix)]
    {
        result.unwrap();
        assert_eq!(
            fs_err::read_link(out.join("lib/gone")).unwrap(),
            Path::new("missing")
        );
    }
    #[cfg(not(unix))]
    {
        let err = result.unwrap_err().to_string();
        assert!(err.contains("Refusing member `s/lib/gone`"), "{err}");
        assert!(err.contains("`missing` is not in the archive"), "{err}");
        assert_eq!(rock_ci_test_support::tree_snapshot(&out), before);
    }
    let _ = before;
}

/// The fetch pipeline returns what it fetched, by file name, not only its lines; a dry run
/// fetches nothing and returns nothing.
#[tokio::test(flavor = "multi_thread")]
async fn the_pipeline_returns_what_it_fetched() {
    let t = tempfile::tempdir().unwrap();
    let staging = t.path().join("staging");
    let run = staging.join(format!("77-{}", workflow_outputs::Platform::host()));
    for name in ["b_lib_generic.tar.zst", "a_lib_generic.tar.zst"] {
        archive_with_sidecar(&run, name, &[("x".into(), name.as_bytes().to_vec())], true);
    }
    let mut request = artifact_backend::pipeline::FetchRequest::new("77", t.path().join("out"));
    request.local_staging_dir = Some(staging);
    let progress = |_: usize, _: u64| -> Arc<dyn artifact_backend::Reporter> {
        Arc::new(storage_backend::NoReporter)
    };
    let lookup = |_: &str| None;
    let mut out = Vec::new();
    let fetched = artifact_backend::pipeline::fetch(&request, &lookup, &progress, &mut out)
        .await
        .unwrap();
    let names: Vec<&str> = fetched.iter().map(|f| f.file_name.as_str()).collect();
    assert_eq!(names, ["a_lib_generic.tar.zst", "b_lib_generic.tar.zst"]);
    assert!(fetched.iter().all(|f| f.bytes > 0), "{fetched:?}");
    assert_eq!(
        fs_err::read_to_string(t.path().join("out/a_lib_generic/s/x")).unwrap(),
        "a_lib_generic.tar.zst"
    );
    request.dry_run = true;
    let fetched = artifact_backend::pipeline::fetch(&request, &lookup, &progress, &mut out)
        .await
        .unwrap();
    assert!(fetched.is_empty());
}
