//! Multi-frame `.tar.zst` archives and the zstd readers and writers around them: this crate's
//! archives (frames, a seek table) unpack with `tar -I zstd`, `zstd -d` then `tar`, and Python's
//! `pyzstd.ZstdFile` under `tarfile` (what TheRock's scripts read them with) as this crate
//! unpacks them; archives of `zstd` (one frame, with or without a content size), `zstd -T0`
//! and `pzstd` unpack with this crate as `tar -x` unpacks them.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Command;

use artifacts::{Compression, Layout, extract_artifact, pack_artifact_dir};
use rock_ci_test_support::tar_tree::{exact_snapshot, gnu_tar_artifact, tar_x, write_sample_tree};

const RELPATH: &str = "p/stage";

/// The sample tree and, in a directory of its own, 20 MiB of libraries (three frames).
fn large_tree(root: &Path) {
    write_sample_tree(root, RELPATH, "frames");
    let lib = root.join(RELPATH).join("big");
    fs_err::create_dir(&lib).unwrap();
    let text = rock_ci_test_support::incompressible_text(12 << 20, 7);
    fs_err::write(lib.join("libbig.so"), text).unwrap();
    fs_err::write(
        lib.join("libsparse.so"),
        rock_ci_test_support::incompressible_bytes(64 << 10, 9).repeat(128),
    )
    .unwrap();
    run(Command::new("touch")
        .args(["-h", "-d", "@1700000040.5"])
        .arg(&lib));
}

fn run(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Unpacks the `.tar.zst` `archive` with this crate into `dest`.
fn extract(archive: &Path, dest: &Path) {
    fs_err::create_dir_all(dest).unwrap();
    let file = fs_err::File::open(archive).unwrap();
    let stream =
        artifacts::decoder(artifacts::ArchiveFormat::TarZst, BufReader::new(file)).unwrap();
    let name = archive.to_string_lossy().into_owned();
    extract_artifact(&name, stream, dest, Layout::Full).unwrap();
}

/// `(zstd frames, skippable frames)` of `archive`, as `zstd -lv` counts them.
fn frame_counts(archive: &Path) -> (u32, u32) {
    let listing = run(Command::new("zstd").arg("-lv").arg(archive));
    // Each line only when there is such a frame.
    let count = |label: &str| {
        listing
            .lines()
            .find_map(|l| l.trim().strip_prefix(label))
            .map_or(0, |n| n.trim().parse().unwrap())
    };
    (count("# Zstandard Frames:"), count("# Skippable Frames:"))
}

/// The entries the archive has members for: not the relpath's own directories (made when
/// unpacked).
fn members(snapshot: Vec<(String, String)>) -> Vec<(String, String)> {
    snapshot
        .into_iter()
        .filter(|(path, _)| path != "p" && path != RELPATH)
        .collect()
}

/// Where `scripts/test-tools` installs pyzstd.
fn pyzstd_path() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/pyzstd");
    assert!(
        path.join("pyzstd").is_dir(),
        "pyzstd is not in {} (scripts/test-tools installs it)",
        path.display()
    );
    path
}

/// The entries as Python's `tarfile` unpacks them: no times to the nanosecond (Python keeps
/// floats) and no times of symlinks (it sets their targets').
fn without_times(snapshot: Vec<(String, String)>) -> Vec<(String, String)> {
    snapshot
        .into_iter()
        .map(|(path, what)| {
            let kept: Vec<&str> = what.split(' ').collect();
            let at = kept.iter().position(|w| *w == "mtime").unwrap();
            let mut kept = kept;
            kept.drain(at..at + 2);
            (path, kept.join(" "))
        })
        .collect()
}

#[test]
fn our_archives_unpack_with_every_zstd_reader() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    large_tree(&src);
    let ours = work.path().join("ours.tar.zst");
    pack_artifact_dir(&src, &ours, Compression::Zstd { level: 3 }, 2).unwrap();
    assert_eq!(
        frame_counts(&ours),
        (3, 2),
        "three frames, the member index and the seek table"
    );

    let by_us = work.path().join("by-us");
    extract(&ours, &by_us);
    let expected = members(exact_snapshot(&by_us));
    assert_eq!(expected, members(exact_snapshot(&src)), "as it was");

    // GNU tar through the zstd program, and zstd then tar.
    let by_tar = work.path().join("tar-I-zstd");
    fs_err::create_dir(&by_tar).unwrap();
    run(Command::new("tar")
        .args(["-I", "zstd", "-xpf"])
        .arg(&ours)
        .arg("-C")
        .arg(&by_tar));
    assert_eq!(
        members(exact_snapshot(&by_tar)),
        expected,
        "tar -I zstd -xf"
    );
    let plain = work.path().join("ours.tar");
    run(Command::new("zstd")
        .args(["-q", "-d", "-o"])
        .arg(&plain)
        .arg(&ours));
    let by_zstd = work.path().join("zstd-d");
    tar_x(&plain, &by_zstd);
    assert_eq!(
        members(exact_snapshot(&by_zstd)),
        expected,
        "zstd -d, tar -xf"
    );
    // pzstd, which reads skippable frames as frames of its own format.
    let plain_pzstd = work.path().join("ours-pzstd.tar");
    run(Command::new("pzstd")
        .args(["-q", "-d", "-o"])
        .arg(&plain_pzstd)
        .arg(&ours));
    assert_eq!(
        fs_err::read(&plain_pzstd).unwrap(),
        fs_err::read(&plain).unwrap(),
        "pzstd -d as zstd -d"
    );

    // TheRock's reader: pyzstd's ZstdFile under tarfile, as a stream and with seeking.
    for (mode, dir) in [("r|", "stream"), ("r:", "seeking")] {
        let by_python = work.path().join(format!("pyzstd-{dir}"));
        fs_err::create_dir(&by_python).unwrap();
        let out = Command::new("python3")
            .env("PYTHONPATH", pyzstd_path())
            .arg("-c")
            .arg(
                "import sys, tarfile, pyzstd\n\
                 archive, mode, dest = sys.argv[1:4]\n\
                 with pyzstd.ZstdFile(archive) as f, tarfile.open(fileobj=f, mode=mode) as t:\n\
                 \x20   kw = {'filter': 'fully_trusted'} if hasattr(tarfile, 'fully_trusted_filter') else {}\n\
                 \x20   t.extractall(dest, **kw)\n",
            )
            .arg(&ours)
            .arg(mode)
            .arg(&by_python)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            without_times(members(exact_snapshot(&by_python))),
            without_times(expected.clone()),
            "pyzstd {mode}"
        );
    }
}

#[test]
fn archives_of_the_zstd_programs_unpack_as_tar_x_unpacks_them() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    large_tree(&src);
    let plain = work.path().join("gnu.tar");
    gnu_tar_artifact(&src, "p", &plain);
    let expected = {
        let dir = work.path().join("tar-x");
        tar_x(&plain, &dir);
        exact_snapshot(&dir)
    };
    let zst = |name: &str| work.path().join(format!("{name}.tar.zst"));
    // One frame with its content size; without (from a pipe); on all cores; pzstd's frames,
    // each after a skippable frame of its size.
    run(Command::new("zstd")
        .args(["-q", "-o"])
        .arg(zst("zstd"))
        .arg(&plain));
    run(Command::new("sh")
        .arg("-c")
        .arg("zstd -q -c < \"$1\" > \"$2\"")
        .arg("sh")
        .arg(&plain)
        .arg(zst("zstd-pipe")));
    run(Command::new("zstd")
        .args(["-q", "-T0", "-o"])
        .arg(zst("zstd-T0"))
        .arg(&plain));
    run(Command::new("pzstd")
        .args(["-q", "-p", "2", "-o"])
        .arg(zst("pzstd"))
        .arg(&plain));
    assert_eq!(frame_counts(&zst("zstd")), (1, 0));
    let (pzstd_frames, pzstd_skips) = frame_counts(&zst("pzstd"));
    assert!(
        pzstd_frames >= 1 && pzstd_skips == pzstd_frames,
        "{pzstd_frames} {pzstd_skips}"
    );
    for name in ["zstd", "zstd-pipe", "zstd-T0", "pzstd"] {
        let dest = work.path().join(format!("ours-{name}"));
        extract(&zst(name), &dest);
        assert_eq!(exact_snapshot(&dest), expected, "{name}");
    }
}
