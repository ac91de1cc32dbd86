//! `build_tarballs` on a run pushed to a local staging directory: its tarballs against
//! `artifact_manager fetch --flatten` plus `tar czf` of the same selection (members, content,
//! modes, symlinks, mtimes), read by every gzip and tar reader at hand; the failures.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::artifact_manager::exploded as artifact;
use crate::common::{assert_ok, run_tool, text, tool, write};

const TOPOLOGY: &str = r#"
[build_stages.foundation]
description = "Host libraries"
artifact_groups = ["base-group"]

[build_stages.libs]
description = "GPU libraries"
artifact_groups = ["libs-group"]
type = "per-arch"

[artifact_groups.base-group]

[artifact_groups.libs-group]
artifact_group_deps = ["base-group"]
type = "per-arch"

[artifacts.base]
artifact_group = "base-group"

[artifacts.core]
artifact_group = "base-group"

[artifacts.fftw3]
artifact_group = "base-group"

[artifacts.math]
artifact_group = "libs-group"
type = "target-specific"
artifact_deps = ["core"]
"#;

const FAMILIES: &str = "therock_add_amdgpu_target(gfx942 \"MI300\" FAMILY dcgpu-all gfx94X-dcgpu)\n\
     therock_add_amdgpu_target(gfx1100 \"RX 7900\" FAMILY gfx110X-all)\n";

const VERSION: &str = "7.1.0a20261207";

/// A long path (more than 100 bytes with `./`), as deep include trees have.
const LONG: &str = "include/rocm/some/deeply/nested/directory/of/headers/that/goes/on/for/a/while/and/then/some/more/header_with_a_long_name.h";

/// A staging directory with run 700 pushed: generic `base` (lib, test), `core` (lib, with a
/// file `base` has too, identical), `fftw3`; `math` for both families (lib, test).
struct Run {
    work: tempfile::TempDir,
}

impl Run {
    fn new(kpack_split: bool) -> Self {
        let work = tempfile::tempdir().unwrap();
        let root = work.path();
        write(&root.join("therock/BUILD_TOPOLOGY.toml"), TOPOLOGY);
        write(
            &root.join("therock/cmake/therock_amdgpu_targets.cmake"),
            FAMILIES,
        );
        let build = root.join("build");
        let manifest = format!(r#"{{"flags": {{"KPACK_SPLIT_ARTIFACTS": {kpack_split}}}}}"#);
        let long = format!("{LONG}-content\n");
        let shared = "the same in two artifacts\n".to_owned();
        // Large enough for several gzip members (one per 4 MiB).
        let big = rock_ci_test_support::incompressible_text(9 << 20, 7);
        artifact(
            &build,
            "base_lib_generic",
            "base/stage",
            &[
                ("bin/tool*", "#!/bin/sh\necho tool\n"),
                ("lib/libbase.so.1", "base library\n"),
                ("lib/libbase.so -> libbase.so.1", ""),
                ("share/therock/therock_manifest.json", &manifest),
                ("share/common.txt", &shared),
                (LONG, &long),
            ],
        );
        artifact(
            &build,
            "base_test_generic",
            "base/stage",
            &[("bin/test_base*", "#!/bin/sh\necho test\n")],
        );
        artifact(
            &build,
            "core_lib_generic",
            "core/stage",
            &[
                ("lib/libcore.so", &"core ".repeat(50_000)),
                ("lib/libcore_data.so", &big),
                ("share/common.txt", &shared),
                ("share/doc/core/readme.txt", "core docs\n"),
            ],
        );
        // The shared file of `core` made an hour after `base`'s: the tarball and the flattened
        // fetch both keep `base`'s copy (the archive that sorts first), whichever comes first.
        let later = std::time::SystemTime::now() + std::time::Duration::from_hours(1);
        fs_err::File::options()
            .write(true)
            .open(build.join("artifacts/core_lib_generic/core/stage/share/common.txt"))
            .unwrap()
            .set_modified(later)
            .unwrap();
        artifact(
            &build,
            "fftw3_lib_generic",
            "fftw3/stage",
            &[("lib/libfftw3.so", "fftw3\n")],
        );
        for (family, target) in [("gfx94X-dcgpu", "gfx942"), ("gfx110X-all", "gfx1100")] {
            artifact(
                &build,
                &format!("math_lib_{family}"),
                "math/stage",
                &[(
                    &format!("lib/math/kernels_{target}.co"),
                    &format!("{target} code\n"),
                )],
            );
            artifact(
                &build,
                &format!("math_test_{family}"),
                "math/stage",
                &[(&format!("bin/math_test_{target}*"), "#!/bin/sh\n")],
            );
        }
        let run = Run { work };
        let build = build.to_str().unwrap().to_owned();
        for stage in ["foundation", "libs"] {
            let out = run.tool(
                "artifact_manager",
                &[
                    "push",
                    "--stage",
                    stage,
                    "--build-dir",
                    &build,
                    "--run-id",
                    "700",
                ],
            );
            assert_ok(&out);
        }
        run
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.work.path().join(rel)
    }

    /// `name args` in the checkout, reading the staging directory.
    fn tool(&self, name: &str, args: &[&str]) -> Output {
        let staging = self.path("staging");
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--local-staging-dir",
            staging.to_str().unwrap(),
            "--platform",
            "linux",
        ]);
        let path = std::env::var("PATH").unwrap_or_default();
        run_tool(
            tool(name),
            &all,
            &[
                ("PATH", path.as_str()),
                ("GITHUB_REPOSITORY", "ROCm/TheRock"),
            ],
            &self.path("therock"),
        )
    }

    fn build_tarballs(&self, out: &Path, extra: &[&str]) -> Output {
        let mut args = vec![
            "--run-id",
            "700",
            "--dist-amdgpu-families",
            "gfx94X-dcgpu;gfx110X-all",
            "--package-version",
            VERSION,
            "--output-dir",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        self.tool("build_tarballs", &args)
    }
}

/// A tar.gz's members: name → (kind, mode, mtime of files and links, size, SHA-256 or link
/// target). Directories' times are left out: a flattened tree's directories get the time of
/// their making.
fn members(path: &Path) -> BTreeMap<String, String> {
    let file = fs_err::File::open(path).unwrap();
    let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(file));
    let mut out = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
        let header = entry.header().clone();
        let mode = header.mode().unwrap();
        let what = match header.entry_type() {
            tar::EntryType::Directory => format!("dir {mode:o}"),
            tar::EntryType::Symlink => format!(
                "symlink {mode:o} {} -> {}",
                header.mtime().unwrap(),
                String::from_utf8_lossy(&entry.link_name_bytes().unwrap())
            ),
            tar::EntryType::Link => format!(
                "hardlink -> {}",
                String::from_utf8_lossy(&entry.link_name_bytes().unwrap())
            ),
            tar::EntryType::Regular => {
                let mut data = Vec::new();
                entry.read_to_end(&mut data).unwrap();
                format!(
                    "file {mode:o} {} {} {}",
                    header.mtime().unwrap(),
                    data.len(),
                    rock_ci_test_support::sha256_hex(&data)
                )
            }
            other => format!("{other:?}"),
        };
        assert!(
            out.insert(name.clone(), what).is_none(),
            "{name} twice in {}",
            path.display()
        );
    }
    out
}

fn tarball(dir: &Path, label: &str) -> PathBuf {
    dir.join(format!("therock-dist-linux-{label}-{VERSION}.tar.gz"))
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tar.gz"))
        .collect();
    names.sort();
    names
}

/// Every tarball against `fetch --flatten` + `tar czf` of the same selection, and every
/// reader at hand.
#[cfg(unix)]
#[test]
fn tarballs_hold_what_a_flattened_fetch_and_tar_czf_hold() {
    let run = Run::new(true);
    let out = run.path("tarballs");
    let built = run.build_tarballs(&out, &["--include-test-tarballs"]);
    assert_ok(&built);
    let log = text(&built.stdout);
    assert!(log.contains("KPACK_SPLIT_ARTIFACTS detected"), "{log}");
    let labels = [
        ("gfx94X-dcgpu", "gfx94X-dcgpu", true),
        ("gfx94X-dcgpu-tests", "gfx94X-dcgpu", false),
        ("gfx110X-all", "gfx110X-all", true),
        ("gfx110X-all-tests", "gfx110X-all", false),
        ("multiarch", "gfx94X-dcgpu;gfx110X-all", true),
        ("multiarch-tests", "gfx94X-dcgpu;gfx110X-all", false),
    ];
    let mut expected: Vec<String> = labels
        .iter()
        .map(|(label, ..)| format!("therock-dist-linux-{label}-{VERSION}.tar.gz"))
        .collect();
    expected.sort();
    assert_eq!(names(&out), expected);
    // Each archive was fetched once, into the shared cache.
    assert_eq!(log.matches("  ++ Downloaded ").count(), 8, "{log}");

    for (label, families, excluding) in labels {
        let flat = run.path(&format!("flat/{label}"));
        let families_arg = format!("--amdgpu-families={families}");
        let mut args = vec![
            "fetch",
            "--run-id",
            "700",
            "--stage=all",
            &families_arg,
            "--expand-family-to-targets",
            "--flatten",
            "--output-dir",
            flat.to_str().unwrap(),
        ];
        if excluding {
            args.extend(["--exclude-components=test", "--exclude-artifacts=fftw3"]);
        }
        assert_ok(&run.tool("artifact_manager", &args));
        let reference = run.path(&format!("reference-{label}.tar.gz"));
        let tar = std::process::Command::new("tar")
            .arg("czf")
            .arg(&reference)
            .arg(".")
            .current_dir(&flat)
            .output()
            .unwrap();
        assert_ok(&tar);
        let ours = tarball(&out, label);
        let (mine, theirs) = (members(&ours), members(&reference));
        assert_eq!(mine, theirs, "{label}");
        // What the selection implies, not only what the fetch made.
        let has = |name: &str| mine.contains_key(name);
        assert!(
            has("./lib/libbase.so") && has("./share/common.txt"),
            "{label}"
        );
        assert!(has(&format!("./{LONG}")), "{label}");
        assert_eq!(has("./bin/test_base"), !excluding, "{label}");
        assert_eq!(has("./lib/libfftw3.so"), !excluding, "{label}");
        assert_eq!(
            has("./lib/math/kernels_gfx1100.co"),
            families.contains("gfx110X"),
            "{label}"
        );
        assert_eq!(
            has("./lib/math/kernels_gfx942.co"),
            families.contains("gfx94X"),
            "{label}"
        );
        readers_accept(&ours, &flat, &run.path(&format!("x/{label}")));
    }
}

/// GNU tar, gzip, Python's tarfile and bsdtar read `tarball` whole (several gzip members),
/// and GNU tar's and bsdtar's extractions are the flattened tree `flat`.
#[cfg(unix)]
fn readers_accept(tarball: &Path, flat: &Path, scratch: &Path) {
    let run = |program: &str, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert_ok(&out);
        out
    };
    let path = tarball.to_str().unwrap();
    run("gzip", &["-t", path]);
    // Each 4 MiB block is a gzip member of its own: the readers must take them all.
    let members_in = fs_err::read(tarball)
        .unwrap()
        .windows(3)
        .filter(|w| *w == [0x1f, 0x8b, 8])
        .count();
    assert!(members_in >= 3, "{members_in} gzip members in {path}");
    let extracted = scratch.join("gnu");
    fs_err::create_dir_all(&extracted).unwrap();
    run("tar", &["-xzf", path, "-C", extracted.to_str().unwrap()]);
    let files = |snapshot: Vec<(String, String)>| -> Vec<(String, String)> {
        // Directories' times are those of their making on both sides.
        snapshot
            .into_iter()
            .filter(|(_, d)| !d.starts_with("dir"))
            .collect()
    };
    assert_eq!(
        files(rock_ci_test_support::tree_snapshot(&extracted)),
        files(rock_ci_test_support::tree_snapshot(flat))
    );
    let listed = run(
        "python3",
        &[
            "-c",
            "import sys, tarfile\nwith tarfile.open(sys.argv[1], 'r:gz') as t:\n    print(len(t.getmembers()))",
            path,
        ],
    );
    let count = members(tarball).len();
    assert_eq!(text(&listed.stdout).trim(), count.to_string());
    let listed = run("bsdtar", &["-tzf", path]);
    assert_eq!(text(&listed.stdout).lines().count(), count);
    let extracted = scratch.join("bsd");
    fs_err::create_dir_all(&extracted).unwrap();
    run("bsdtar", &["-xzf", path, "-C", extracted.to_str().unwrap()]);
    assert_eq!(
        files(rock_ci_test_support::tree_snapshot(&extracted)),
        files(rock_ci_test_support::tree_snapshot(flat))
    );
}

/// Without `KPACK_SPLIT_ARTIFACTS` there is no multi-arch tarball; without
/// `--include-test-tarballs` no `-tests-` one.
#[test]
fn one_tarball_per_family_without_the_split() {
    let run = Run::new(false);
    let out = run.path("tarballs");
    assert_ok(&run.build_tarballs(&out, &[]));
    assert_eq!(
        names(&out),
        [
            format!("therock-dist-linux-gfx110X-all-{VERSION}.tar.gz"),
            format!("therock-dist-linux-gfx94X-dcgpu-{VERSION}.tar.gz"),
        ]
    );
    let members = members(&tarball(&out, "gfx110X-all"));
    assert!(members.contains_key("./lib/libcore.so"));
    assert!(!members.contains_key("./lib/math/kernels_gfx942.co"));
    // A second build reuses the verified cache: nothing is downloaded again.
    let again = run.build_tarballs(&out, &[]);
    assert_ok(&again);
    let log = text(&again.stdout);
    assert!(!log.contains("++ Downloaded"), "{log}");
    assert_eq!(log.matches("== Cached").count(), 4, "{log}");
}

/// Two artifacts with different content at one path: the build fails naming both, and no
/// tarball (not even a partial one) is left.
#[test]
fn a_flatten_conflict_fails_naming_both_artifacts() {
    let run = Run::new(false);
    let build = run.path("build2");
    artifact(
        &build,
        "core_lib_generic",
        "core/stage",
        &[("lib/libbase.so.1", "another base library\n")],
    );
    let build = build.to_str().unwrap().to_owned();
    assert_ok(&run.tool(
        "artifact_manager",
        &[
            "push",
            "--stage",
            "foundation",
            "--build-dir",
            &build,
            "--run-id",
            "700",
        ],
    ));
    let out = run.path("tarballs");
    let failed = run.build_tarballs(&out, &[]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stdout));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains("lib/libbase.so.1")
            && stderr.contains("base_lib_generic")
            && stderr.contains("core_lib_generic"),
        "{stderr}"
    );
    assert!(names(&out).is_empty(), "{:?}", names(&out));
    let leftovers: Vec<_> = fs_err::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != ".work")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Bad input exits 2 naming it, before anything is written.
#[test]
fn bad_input_is_a_usage_error() {
    let run = Run::new(false);
    let out = run.path("tarballs");
    for (families, platform) in [(" ; ", "linux"), ("gfx94X-dcgpu", "macos")] {
        let failed = run_tool(
            tool("build_tarballs"),
            &[
                "--run-id",
                "700",
                "--dist-amdgpu-families",
                families,
                "--platform",
                platform,
                "--package-version",
                VERSION,
                "--output-dir",
                out.to_str().unwrap(),
            ],
            &[],
            &run.path("therock"),
        );
        assert_eq!(failed.status.code(), Some(2), "{}", text(&failed.stderr));
        assert!(!out.exists());
    }
}
