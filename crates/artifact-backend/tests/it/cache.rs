//! A fetch again into the same output directory: an artifact directory is skipped only while
//! it holds what its archive holds; a damaged one is unpacked again.

use std::path::Path;
use std::sync::Arc;

use artifact_backend::pipeline::{FetchRequest, fetch};
use artifacts::{ArchiveWriter, Compression};
use workflow_outputs::Platform;

use crate::local;

const KEY: &str = "base_lib_generic.tar.zst";

/// The archive `base_lib_generic.tar.zst` of run 9001 in the staging directory `staging`:
/// files in nested directories, an executable, a symlink.
async fn stage_archive(staging: &Path) {
    let src = staging.join("src").join(KEY);
    fs_err::create_dir_all(src.parent().unwrap()).unwrap();
    let mut w = ArchiveWriter::create(&src, Compression::Zstd { level: 3 }).unwrap();
    w.append_data("artifact_manifest.txt", b"base/stage\n", 0o644)
        .unwrap();
    w.append_data("base/stage/include/header.h", b"#pragma once\n", 0o644)
        .unwrap();
    w.append_data("base/stage/sub/inner.txt", b"inner", 0o644)
        .unwrap();
    w.append_data("base/stage/bin/tool", b"#!/bin/sh\n", 0o755)
        .unwrap();
    w.append_symlink("base/stage/link", "sub/inner.txt", 1_700_000_000)
        .unwrap();
    w.finish().unwrap();
    local(staging, "9001")
        .upload_artifact(&src, KEY)
        .await
        .unwrap();
}

/// `fetch_artifacts --run-id 9001 --output-dir {out}` from the staging directory: its lines.
async fn fetch_into(staging: &Path, out: &Path) -> String {
    let mut request = FetchRequest::new("9001", out);
    request.platform = Platform::Linux;
    request.download_concurrency = 2;
    request.extract_concurrency = 2;
    request.local_staging_dir = Some(staging.to_path_buf());
    let mut lines = Vec::new();
    fetch(
        &request,
        &|_| None,
        &|_, _| Arc::new(storage_backend::NoReporter),
        &mut lines,
    )
    .await
    .unwrap();
    String::from_utf8(lines).unwrap()
}

/// Something done to the extracted directory or its record.
type Damage<'a> = Box<dyn Fn() + 'a>;

fn cached(lines: &str) -> bool {
    lines.contains(&format!(
        "== Cached '{KEY}' in 'base_lib_generic' (sha256 verified earlier)"
    ))
}

fn extracted(lines: &str) -> bool {
    lines.contains(&format!("++ Extracted '{KEY}' to 'base_lib_generic'"))
}

/// Each damage to an extracted artifact directory (an entry missing, added or changed; a
/// record of an earlier version or one that cannot be read) makes the next fetch unpack it
/// again, leaving the directory as the archive holds it; an untouched directory is skipped.
#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_artifact_directory_is_extracted_again() {
    let t = tempfile::tempdir().unwrap();
    let staging = t.path().join("staging");
    stage_archive(&staging).await;
    let out = t.path().join("out");
    let dir = out.join("base_lib_generic");
    let stage = dir.join("base/stage");
    let first = fetch_into(&staging, &out).await;
    assert!(extracted(&first), "{first}");
    let archived = rock_ci_test_support::tree_snapshot(&dir);
    let untouched = fetch_into(&staging, &out).await;
    assert!(cached(&untouched), "{untouched}");

    let records = artifact_backend::verified_dir(&out).unwrap();
    let record = records.join(format!("{KEY}.tree"));
    #[cfg_attr(
        not(unix),
        expect(unused_mut, reason = "the Unix-only damages are added")
    )]
    let mut damages: Vec<(&str, Damage<'_>)> = vec![
        (
            "a file removed",
            Box::new(|| fs_err::remove_file(stage.join("sub/inner.txt")).unwrap()),
        ),
        (
            "bytes appended to a file",
            Box::new(|| {
                use std::io::Write as _;
                let mut f = fs_err::OpenOptions::new()
                    .append(true)
                    .open(stage.join("include/header.h"))
                    .unwrap();
                f.write_all(b"int x;\n").unwrap();
            }),
        ),
        (
            "a file added",
            Box::new(|| fs_err::write(dir.join("extra.txt"), "extra").unwrap()),
        ),
        (
            "a directory removed",
            Box::new(|| fs_err::remove_dir_all(stage.join("include")).unwrap()),
        ),
        (
            "the record of an earlier version (the digest alone)",
            Box::new(|| {
                let text = fs_err::read_to_string(&record).unwrap();
                let sha = text
                    .lines()
                    .nth(1)
                    .unwrap()
                    .strip_prefix("sha256 ")
                    .unwrap();
                fs_err::write(records.join(format!("{KEY}.sha256")), format!("{sha}\n")).unwrap();
                fs_err::remove_file(&record).unwrap();
            }),
        ),
        (
            "a record that cannot be read",
            Box::new(|| fs_err::write(&record, [0xff, 0xfe, 0x00]).unwrap()),
        ),
    ];
    #[cfg(unix)]
    {
        damages.push((
            "a symlink pointing elsewhere",
            Box::new(|| {
                fs_err::remove_file(stage.join("link")).unwrap();
                std::os::unix::fs::symlink("include/header.h", stage.join("link")).unwrap();
            }),
        ));
        damages.push((
            "a file's mode changed",
            Box::new(|| {
                use std::os::unix::fs::PermissionsExt as _;
                fs_err::set_permissions(
                    stage.join("bin/tool"),
                    std::fs::Permissions::from_mode(0o700),
                )
                .unwrap();
            }),
        ));
    }
    for (what, damage) in &damages {
        damage();
        let again = fetch_into(&staging, &out).await;
        assert!(extracted(&again) && !cached(&again), "{what}: {again}");
        assert_eq!(
            rock_ci_test_support::tree_snapshot(&dir),
            archived,
            "{what}"
        );
        // Recorded anew: the next fetch skips it.
        let untouched = fetch_into(&staging, &out).await;
        assert!(cached(&untouched), "{what}: {untouched}");
    }
    // Nothing of an earlier version's record is left beside the new one.
    assert!(!records.join(format!("{KEY}.sha256")).exists());
}
