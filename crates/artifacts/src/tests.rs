use std::path::Path;

use super::*;

fn triple(a: &ArtifactName) -> (&str, &str, &str) {
    (a.name(), a.component(), a.target_family())
}

// Spec §18.7: names.
#[test]
fn artifact_names() {
    type Case<'a> = (&'a str, Option<(&'a str, &'a str, &'a str)>);
    let dir = tempfile::tempdir().unwrap();
    let artifact_dir = dir.path().join("name_component_generic");
    fs_err::create_dir(&artifact_dir).unwrap();
    let from_dir = ArtifactName::from_path(&artifact_dir).unwrap();
    assert_eq!(triple(&from_dir), ("name", "component", "generic"));
    let from_file =
        ArtifactName::from_path(&dir.path().join("name_component_generic.tar.xz")).unwrap();
    assert_eq!(from_dir, from_file);
    {
        use std::hash::{BuildHasher, RandomState};
        let s = RandomState::new();
        assert_eq!(s.hash_one(&from_dir), s.hash_one(&from_file));
    }
    {
        use std::collections::HashSet;
        let set: HashSet<_> = [from_dir.clone(), from_file.clone()].into_iter().collect();
        assert_eq!(set.len(), 1);
    }
    assert_eq!(format!("{from_dir:?}"), "Artifact(name[component:generic])");

    let cases: &[Case<'_>] = &[
        (
            "name_component_generic.tar.xz",
            Some(("name", "component", "generic")),
        ),
        (
            "rccl_test_gfx942:xnack+.tar.zst",
            Some(("rccl", "test", "gfx942:xnack+")),
        ),
        ("a_b_c.d.tar.xz", Some(("a", "b", "c.d"))),
        (
            "amd-llvm_lib_generic.tar.zst",
            Some(("amd-llvm", "lib", "generic")),
        ),
        ("invalid_name.zip", None),
        ("underscore_name_component_generic.tar.xz", None),
        ("name_component_generic.tar.gz", None),
        ("name_component_generic", None),
        ("name_component_generic.tar.xz.sha256sum", None),
        ("_component_generic.tar.xz", None),
        ("name__generic.tar.xz", None),
        ("name_component_.tar.xz", None),
        ("name_component_generic.TAR.XZ", None),
        (".tar.xz", None),
    ];
    for (input, expected) in cases {
        let parsed = ArtifactName::from_filename(input);
        assert_eq!(parsed.as_ref().map(triple), *expected, "{input}");
    }
    // A path separator never parses as part of a field.
    assert_eq!(ArtifactName::from_dir_name("a/b_c_d"), None);
    assert_eq!(ArtifactName::from_dir_name("a_c_.."), None);
}

#[test]
fn artifact_name_formatting_round_trips() {
    let name = ArtifactName::new("rccl", "test", "gfx942:xnack+").unwrap();
    assert_eq!(name.dir_name(), "rccl_test_gfx942:xnack+");
    for format in ArchiveFormat::ALL {
        let file = name.file_name(format);
        assert_eq!(
            ArtifactName::from_filename_with_format(&file),
            Some((name.clone(), format))
        );
    }
    assert_eq!(
        name.file_name(ArchiveFormat::TarXz),
        "rccl_test_gfx942:xnack+.tar.xz"
    );
    assert_eq!(
        ArtifactName::from_dir_name(&name.dir_name()),
        Some(name.clone())
    );
    assert_eq!(
        "rccl_test_gfx942:xnack+".parse::<ArtifactName>().unwrap(),
        name
    );
    assert_eq!(
        "a_b".parse::<ArtifactName>().unwrap_err().to_string(),
        "`a_b` is not an artifact name: expected `{name}_{component}_{target_family}` with an optional `.tar.zst` or `.tar.xz` suffix"
    );
    assert_eq!(ArtifactName::new("a", "b_c", "d"), None);
}

// Spec §18.7: archives.
#[test]
fn archive_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("test.tar.zst", Compression::parse("zstd").unwrap()),
        ("test.tar.xz", Compression::parse("xz").unwrap()),
        ("level1.tar.zst", Compression::Zstd { level: 1 }),
    ];
    for (file, compression) in cases {
        let dest = dir.path().join(file);
        let mut writer = ArchiveWriter::create(&dest, compression).unwrap();
        writer.append_data("hello.txt", b"hello\n", 0o644).unwrap();
        writer.finish().unwrap();
        assert_eq!(list_members(&dest).unwrap(), vec!["hello.txt"]);
        assert_eq!(
            ArchiveFormat::from_path(&dest).unwrap(),
            compression.format().unwrap()
        );
    }
    // Nothing but the three archives is left in the directory.
    let mut left: Vec<_> = fs_err::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["level1.tar.zst", "test.tar.xz", "test.tar.zst"]);
}

#[test]
fn archive_errors() {
    let Err(err) = open_archive(Path::new("/x/test.tar.gz")) else {
        panic!("opened")
    };
    assert_eq!(
        err.to_string(),
        "Unknown archive format: `/x/test.tar.gz` (expected a `.tar.zst` or `.tar.xz` file)"
    );
    let err = Compression::parse("gzip").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unknown compression type: `gzip` (expected one of [xz, zstd])"
    );
    let err = list_members(Path::new("/nonexistent/a.tar.xz")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/a.tar.xz"), "{err}");
}

#[test]
fn abandoned_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("a.tar.zst");
    fs_err::write(&dest, b"previous").unwrap();
    let mut writer = ArchiveWriter::create(&dest, Compression::Zstd { level: 1 }).unwrap();
    writer.append_data("x", b"data", 0o644).unwrap();
    drop(writer);
    assert_eq!(fs_err::read(&dest).unwrap(), b"previous");
    assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 1);
}

// Spec §18.8: base architecture and matching.
#[test]
fn base_targets() {
    let cases = [
        ("", ""),
        (":xnack+", ":xnack+"),
        ("gfx942", "gfx942"),
        ("gfx942:xnack+", "gfx942"),
        ("garbage-*&%^$", "garbage-*&%^$"),
    ];
    for (input, base) in cases {
        assert_eq!(base_target(input), base);
    }
    let sel = TargetSelection::new(None, ["gfx942"]);
    for (target, expected) in [
        ("", false),
        ("garbage-*&%^$", false),
        ("gfx942", true),
        ("gfx942:xnack+", true),
        ("generic", true),
    ] {
        assert_eq!(sel.matches_target(target), expected, "{target}");
    }
}

// Spec §18.8: selections over listings.
#[test]
#[expect(clippy::too_many_lines, reason = "a table of vectors")]
fn selections() {
    type Case<'a> = (&'a [&'a str], Option<&'a str>, &'a [&'a str], &'a [&'a str]);
    let cases: &[Case<'_>] = &[
        (
            &[
                "rocblas_lib_gfx94X.tar.xz",
                "rocblas_lib_gfx110X.tar.xz",
                "amd-llvm_lib_generic.tar.xz",
                "hipblas_lib_gfx94X.tar.xz",
            ],
            Some("gfx94X"),
            &[],
            &[
                "rocblas_lib_gfx94X.tar.xz",
                "amd-llvm_lib_generic.tar.xz",
                "hipblas_lib_gfx94X.tar.xz",
            ],
        ),
        (
            &[
                "blas_lib_generic.tar.zst",
                "blas_lib_gfx942.tar.zst",
                "blas_lib_gfx1100.tar.zst",
                "blas_test_generic.tar.zst",
                "blas_test_gfx942.tar.zst",
            ],
            Some("gfx94X-dcgpu"),
            &["gfx942"],
            &[
                "blas_lib_generic.tar.zst",
                "blas_lib_gfx942.tar.zst",
                "blas_test_generic.tar.zst",
                "blas_test_gfx942.tar.zst",
            ],
        ),
        (
            &[
                "blas_lib_gfx94X-dcgpu.tar.xz",
                "fft_lib_gfx942.tar.zst",
                "amd-llvm_lib_generic.tar.xz",
                "rand_lib_gfx110X-all.tar.xz",
            ],
            Some("gfx94X-dcgpu"),
            &["gfx942"],
            &[
                "blas_lib_gfx94X-dcgpu.tar.xz",
                "fft_lib_gfx942.tar.zst",
                "amd-llvm_lib_generic.tar.xz",
            ],
        ),
        (
            &[
                "blas_lib_gfx94X-dcgpu.tar.xz",
                "blas_lib_gfx942.tar.zst",
                "amd-llvm_lib_generic.tar.xz",
            ],
            Some("gfx94X-dcgpu"),
            &[],
            &[
                "blas_lib_gfx94X-dcgpu.tar.xz",
                "amd-llvm_lib_generic.tar.xz",
            ],
        ),
        (
            &[
                "blas_lib_generic.tar.zst",
                "blas_lib_gfx942.tar.zst",
                "blas_lib_gfx90a.tar.zst",
                "blas_lib_gfx1100.tar.zst",
            ],
            Some("gfx94X-dcgpu"),
            &["gfx942", "gfx90a"],
            &[
                "blas_lib_generic.tar.zst",
                "blas_lib_gfx942.tar.zst",
                "blas_lib_gfx90a.tar.zst",
            ],
        ),
        (
            &[
                "blas_lib_generic.tar.zst",
                "README.md",
                "some_random_file.txt",
                "blas_lib_gfx942.tar.zst",
            ],
            Some("gfx94X-dcgpu"),
            &["gfx942"],
            &["blas_lib_generic.tar.zst", "blas_lib_gfx942.tar.zst"],
        ),
        (
            &[
                "blas_lib_generic.tar.zst",
                "blas_lib_gfx942.tar.zst",
                "blas_test_gfx942.tar.zst",
                "rccl_test_gfx942:xnack+.tar.zst",
                "rccl_lib_gfx942:xnack-.tar.zst",
                "blas_lib_gfx1100.tar.zst",
            ],
            None,
            &["gfx942"],
            &[
                "blas_lib_generic.tar.zst",
                "blas_lib_gfx942.tar.zst",
                "blas_test_gfx942.tar.zst",
                "rccl_test_gfx942:xnack+.tar.zst",
                "rccl_lib_gfx942:xnack-.tar.zst",
            ],
        ),
        (
            &[
                "blas_lib_generic.tar.zst",
                "blas_lib_gfx942.tar.zst",
                "rccl_test_gfx942:xnack+.tar.zst",
            ],
            None,
            &["gfx942:xnack+"],
            &[
                "blas_lib_generic.tar.zst",
                "blas_lib_gfx942.tar.zst",
                "rccl_test_gfx942:xnack+.tar.zst",
            ],
        ),
    ];
    for (listing, group, targets, kept) in cases {
        let sel = TargetSelection::new(*group, targets.iter().copied());
        let got: Vec<&str> = listing
            .iter()
            .copied()
            .filter(|f| ArtifactName::from_filename(f).is_some_and(|a| sel.matches(&a)))
            .collect();
        assert_eq!(got, *kept, "{group:?} {targets:?}");
    }
    let sel = TargetSelection::new(Some("gfx94X-dcgpu"), ["gfx942", ""]);
    assert_eq!(
        sel.families().collect::<Vec<_>>(),
        ["generic", "gfx942", "gfx94X-dcgpu"]
    );
}

#[test]
fn normalized_archives_are_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs_err::create_dir_all(src.join("sub")).unwrap();
    fs_err::write(src.join("a.log"), b"alpha").unwrap();
    fs_err::write(src.join("sub/.ninja_log"), b"# ninja log v6\n").unwrap();
    // Symlinks only where they can be made without a privilege.
    #[cfg(unix)]
    std::os::unix::fs::symlink("a.log", src.join("link.log")).unwrap();
    #[cfg(unix)]
    const RELS: [&str; 3] = ["a.log", "link.log", "sub/.ninja_log"];
    #[cfg(not(unix))]
    const RELS: [&str; 2] = ["a.log", "sub/.ninja_log"];
    let write = |name: &str| {
        let dest = dir.path().join(name);
        let mut w = ArchiveWriter::create(&dest, Compression::Gzip { level: 9 }).unwrap();
        for rel in RELS {
            w.append_normalized(rel, &src.join(rel), 0).unwrap();
        }
        w.finish().unwrap();
        fs_err::read(&dest).unwrap()
    };
    let first = write("one.tar.gz");
    // Touch the sources: the archive must not change.
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs_err::write(src.join("a.log"), b"alpha").unwrap();
    let second = write("two.tar.gz");
    assert_eq!(first, second);
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&first[..]));
    let mut seen = Vec::new();
    for entry in archive.entries().unwrap() {
        let entry = entry.unwrap();
        let h = entry.header();
        seen.push((
            entry.path().unwrap().display().to_string(),
            h.mtime().unwrap(),
            h.uid().unwrap(),
        ));
    }
    let expected: Vec<(String, u64, u64)> = RELS.iter().map(|r| ((*r).to_owned(), 0, 0)).collect();
    assert_eq!(seen, expected);
}

#[test]
fn compression_levels_are_checked_against_their_kind() {
    assert_eq!(
        Compression::at_level("zstd", None).unwrap(),
        Compression::Zstd {
            level: DEFAULT_ZSTD_LEVEL
        }
    );
    assert_eq!(
        Compression::at_level("xz", None).unwrap(),
        Compression::Xz {
            preset: DEFAULT_XZ_PRESET
        }
    );
    assert_eq!(
        Compression::at_level("zstd", Some(-7)).unwrap(),
        Compression::Zstd { level: -7 }
    );
    assert_eq!(
        Compression::at_level("xz", Some(9)).unwrap(),
        Compression::Xz { preset: 9 }
    );
    for (kind, level, message) in [
        (
            "zstd",
            23,
            "--compression-level 23: zstd levels are -7 to 22",
        ),
        (
            "zstd",
            -8,
            "--compression-level -8: zstd levels are -7 to 22",
        ),
        ("xz", 10, "--compression-level 10: xz presets are 0 to 9"),
        ("xz", -1, "--compression-level -1: xz presets are 0 to 9"),
    ] {
        let err = Compression::at_level(kind, Some(level)).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
    assert!(matches!(
        Compression::at_level("gz", Some(1)),
        Err(Error::UnknownCompression(_))
    ));
}

/// Files written on Windows have no mode: programs and directories are stored 0755, other
/// files 0644, read-only ones without write.
#[test]
fn modes_of_files_written_on_windows() {
    use crate::archive::windows_mode;
    for (name, is_dir, readonly, mode) in [
        ("bin/hipcc.exe", false, false, 0o755),
        ("bin/RUN.BAT", false, false, 0o755),
        ("bin/env.cmd", false, true, 0o555),
        ("bin/x.com", false, false, 0o755),
        ("lib/amdhip64_7.dll", false, false, 0o644),
        ("include/hip.h", false, true, 0o444),
        ("bin/hipcc", false, false, 0o644),
        ("lib", true, false, 0o755),
    ] {
        assert_eq!(
            windows_mode(Path::new(name), is_dir, readonly),
            mode,
            "{name}"
        );
    }
}

/// An artifact packed on Windows holds the modes Linux consumers need: its programs executable.
#[cfg(windows)]
#[test]
fn artifacts_packed_on_windows_keep_programs_executable() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("x_lib_generic");
    fs_err::create_dir_all(src.join("p/stage/bin")).unwrap();
    fs_err::write(src.join(MANIFEST_NAME), "p/stage\n").unwrap();
    fs_err::write(src.join("p/stage/bin/tool.exe"), "MZ").unwrap();
    fs_err::write(src.join("p/stage/bin/notes.txt"), "n").unwrap();
    let dest = t.path().join("x_lib_generic.tar.zst");
    pack_artifact_dir(&src, &dest, Compression::Zstd { level: 3 }, 1).unwrap();
    let mut archive = open_archive(&dest).unwrap();
    let modes: Vec<(String, u32)> = archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.path().unwrap().to_string_lossy().into_owned(),
                e.header().mode().unwrap(),
            )
        })
        .collect();
    assert!(
        modes.contains(&("p/stage/bin/tool.exe".to_owned(), 0o755)),
        "{modes:?}"
    );
    assert!(
        modes.contains(&("p/stage/bin/notes.txt".to_owned(), 0o644)),
        "{modes:?}"
    );
    assert!(
        modes.contains(&("p/stage/bin".to_owned(), 0o755))
            || modes.contains(&("p/stage/bin/".to_owned(), 0o755)),
        "{modes:?}"
    );
}
