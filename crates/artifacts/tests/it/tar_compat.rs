//! Archives written by GNU tar, Python's `tarfile` and this crate unpack as `tar -x` unpacks
//! them: contents, modes, modification times to the nanosecond (directories and symlinks too),
//! links, names with a backslash, and nothing else.

use std::io::BufReader;
use std::path::Path;

use artifacts::{Compression, Layout, extract_artifact, pack_artifact_dir};
use rock_ci_test_support::tar_tree::{
    BACKSLASH_FILE, exact_snapshot, gnu_tar_artifact, python_tar_artifact,
    snapshot_without_dir_attributes, tar_x, write_sample_tree,
};

const RELPATH: &str = "p/stage";

/// Unpacks `archive` (a plain `.tar`, or `.tar.zst` / `.tar.xz`) with this crate into `dest`.
fn extract(archive: &Path, dest: &Path, layout: Layout) {
    fs_err::create_dir_all(dest).unwrap();
    let file = fs_err::File::open(archive).unwrap();
    let name = archive.to_string_lossy().into_owned();
    if archive.extension().is_some_and(|e| e == "tar") {
        extract_artifact(&name, BufReader::new(file), dest, layout).unwrap();
    } else {
        let format = artifacts::ArchiveFormat::from_path(archive).unwrap();
        let stream = artifacts::decoder(format, BufReader::new(file)).unwrap();
        extract_artifact(&name, stream, dest, layout).unwrap();
    }
}

/// The members' mtimes as Python's `tarfile` reads them, one `name mtime` line each (as a
/// float: Python writes a PAX record for every time, whole seconds too).
fn python_mtimes(archive: &Path) -> String {
    rock_ci_test_support::python(
        "import sys, tarfile\n\
         for m in tarfile.open(sys.argv[1]):\n\
         \x20   print(m.name, repr(float(m.mtime)))\n",
        &[archive.as_os_str()],
    )
}

/// The entries of a snapshot that are not the relpath's own directories.
fn below_relpath(snapshot: Vec<(String, String)>) -> Vec<(String, String)> {
    snapshot
        .into_iter()
        .filter(|(path, _)| path != "p" && path != RELPATH)
        .collect()
}

#[test]
fn archives_unpack_as_tar_x_unpacks_them() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_sample_tree(&src, RELPATH, "sample");
    let source = exact_snapshot(&src);
    assert!(
        source
            .iter()
            .any(|(path, _)| path == &format!("{RELPATH}/{BACKSLASH_FILE}")),
        "{source:?}"
    );

    let gnu = work.path().join("gnu.tar");
    gnu_tar_artifact(&src, "p", &gnu);
    let python = work.path().join("python.tar");
    python_tar_artifact(&src, "p", &python);
    let ours = work.path().join("ours.tar.zst");
    pack_artifact_dir(&src, &ours, Compression::Zstd { level: 3 }, 0).unwrap();

    // Archive, whether it holds the times to the nanosecond (GNU tar's and ours do; Python's
    // holds its floats), whether it has members for the relpath's own directories (ours, as
    // the reference's, holds only what is below them: both unpack them at the time of
    // extraction).
    for (archive, exact, relpath_dirs) in [
        (&gnu, true, true),
        (&python, false, true),
        (&ours, true, false),
    ] {
        let comparable = |snapshot| {
            if relpath_dirs {
                snapshot
            } else {
                below_relpath(snapshot)
            }
        };
        let what = archive.file_name().unwrap().to_string_lossy().into_owned();
        let by_tar = work.path().join(format!("tar-{what}"));
        tar_x(archive, &by_tar);
        if exact {
            assert_eq!(
                below_relpath(exact_snapshot(&by_tar)),
                below_relpath(source.clone()),
                "tar -x of {what}"
            );
        }
        let full = work.path().join(format!("full-{what}"));
        extract(archive, &full, Layout::Full);
        assert_eq!(
            comparable(exact_snapshot(&full)),
            comparable(exact_snapshot(&by_tar)),
            "{what}"
        );

        // Bootstrap unpacks the stored paths too; its trees are merged (directory attributes
        // are the merge's), so the rest must match.
        let bootstrap = work.path().join(format!("bootstrap-{what}"));
        extract(archive, &bootstrap, Layout::Bootstrap);
        assert_eq!(
            snapshot_without_dir_attributes(&bootstrap),
            snapshot_without_dir_attributes(&by_tar),
            "{what}"
        );
        let flat = work.path().join(format!("flat-{what}"));
        extract(archive, &flat, Layout::Flatten);
        assert_eq!(
            snapshot_without_dir_attributes(&flat),
            snapshot_without_dir_attributes(&by_tar.join(RELPATH)),
            "{what}"
        );
    }

    // Python reads the same times from this crate's archive as from its own.
    let decompressed = work.path().join("ours.tar");
    let status = std::process::Command::new("zstd")
        .args(["-q", "-d", "-o"])
        .arg(&decompressed)
        .arg(&ours)
        .status()
        .unwrap();
    assert!(status.success());
    let mut from_ours: Vec<String> = python_mtimes(&decompressed)
        .lines()
        .map(|l| l.trim_end_matches('/').to_owned())
        .collect();
    let mut from_python: Vec<String> = python_mtimes(&python)
        .lines()
        .filter(|l| !l.starts_with("p ") && !l.starts_with("p/stage "))
        .map(str::to_owned)
        .collect();
    from_ours.sort();
    from_python.sort();
    assert_eq!(from_ours, from_python);
    assert!(
        from_ours
            .iter()
            .any(|l| l == "p/stage/bin/tool 1700000000.1234567"),
        "{from_ours:?}"
    );
}
