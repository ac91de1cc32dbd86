//! `build_python_packages --no-build-packages` on an artifact set shaped like a Windows build
//! (DLLs and programs that are PE files, no symlinks, no profiler artifacts), on every system:
//! the host's family list is the one checked, the profiler package is skipped on Windows and
//! refused elsewhere, and the PE files are staged byte for byte (never patched as ELF).
//! Staging needs no Python, so this runs as a Windows program too.

use crate::common::Launch as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{text, write};

fn templates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/py-packaging/testdata/templates")
}

/// A small PE image's first bytes: what a Windows DLL or program starts with.
fn pe_bytes(tag: &str) -> Vec<u8> {
    let mut bytes = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00".to_vec();
    bytes.resize(0x3c, 0);
    bytes.extend_from_slice(&0x80u32.to_le_bytes());
    bytes.resize(0x80, 0);
    bytes.extend_from_slice(b"PE\0\0\x64\x86");
    bytes.extend_from_slice(tag.as_bytes());
    bytes.resize(4096, 0xcc);
    bytes
}

/// `{root}/{artifact}/stage` with its manifest, and `files` (relative path, bytes) in it.
fn artifact(root: &Path, artifact: &str, files: &[(&str, Vec<u8>)]) {
    let dir = root.join(artifact);
    write(&dir.join("artifact_manifest.txt"), "stage\n");
    for (path, bytes) in files {
        let dest = dir.join("stage").join(path);
        fs_err::create_dir_all(dest.parent().unwrap()).unwrap();
        fs_err::write(dest, bytes).unwrap();
    }
}

/// A kpack-split set for `gfx1151` as a Windows build fetches it: core runtime and headers,
/// a generic and a device blas library, and the base manifest; no profiler artifacts.
fn windows_shaped_set(root: &Path) {
    artifact(
        root,
        "core-hip_lib_generic",
        &[
            ("bin/amdhip64_7.dll", pe_bytes("amdhip64")),
            ("bin/hipInfo.exe", pe_bytes("hipInfo")),
        ],
    );
    artifact(
        root,
        "core-hip_dev_generic",
        &[
            ("include/hip/hip_runtime.h", b"// hip\n".to_vec()),
            ("lib/amdhip64.lib", b"!<arch>\n".to_vec()),
        ],
    );
    artifact(
        root,
        "blas_lib_generic",
        &[("bin/rocblas.dll", pe_bytes("rocblas"))],
    );
    artifact(
        root,
        "blas_lib_gfx1151",
        &[
            (".kpack/blas_lib_gfx1151.kpack", b"kpack\n".to_vec()),
            (
                "bin/rocblas/library/Kernels_gfx1151.co",
                b"code object\n".to_vec(),
            ),
        ],
    );
    rock_ci_test_support::base_artifact(root, true);
}

/// A checkout holding only the GPU family table the family lists are expanded with.
fn checkout(root: &Path) -> PathBuf {
    write(
        &root.join("cmake/therock_amdgpu_targets.cmake"),
        "therock_add_amdgpu_target(gfx942 \"MI300X\" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)\n\
         therock_add_amdgpu_target(gfx1151 \"Strix Halo\" FAMILY igpu-all gfx115X-all gfx115X-igpu)\n",
    );
    root.to_path_buf()
}

/// `build_python_packages` of `artifacts` into `dest` with the test templates, version 1.2.3.
fn build_command(artifacts: &Path, dest: &Path) -> Command {
    let mut command = Command::new(crate::common::tool("build_python_packages"));
    command
        .arg("--artifact-dir")
        .arg(artifacts)
        .arg("--dest-dir")
        .arg(dest)
        .arg("--templates-dir")
        .arg(templates())
        .args(["--version", "1.2.3"]);
    command
}

/// Stages only (no Python), with the family lists `families` expanded by a checkout's table.
fn stage(artifacts: &Path, dest: &Path, families: &[&str]) -> Output {
    let therock = checkout(&dest.with_extension("therock"));
    build_command(artifacts, dest)
        .arg("--therock-dir")
        .arg(therock)
        .arg("--no-build-packages")
        .args(families)
        .run_output()
        .unwrap()
}

#[test]
fn the_hosts_families_are_checked_and_windows_skips_the_profiler() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("artifacts");
    windows_shaped_set(&artifacts);

    // Both platforms' lists: the device targets found (gfx1151) are Windows'. Windows checks
    // its own list and goes on; Linux checks gfx942 and refuses the incomplete set.
    let dest = tmp.path().join("dest");
    let both = [
        "--linux-amdgpu-families",
        "gfx94X-dcgpu",
        "--windows-amdgpu-families",
        "gfx115X-all",
    ];
    let out = stage(&artifacts, &dest, &both);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    if cfg!(windows) {
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout.contains("::: KPACK_SPLIT_ARTIFACTS expected device targets: gfx1151\n"),
            "{stdout}"
        );
        assert!(
            stdout.contains(
                "::: No profiler artifacts found on Windows; skipping rocm-profiler package\n"
            ),
            "{stdout}"
        );
        check_staged(&artifacts, &dest);
        let dist_info =
            fs_err::read_to_string(dest.join("rocm/src/rocm_sdk/_dist_info.py")).unwrap();
        assert!(
            dist_info.contains("LINUX_TARGET_FAMILIES.append('gfx942')"),
            "{dist_info}"
        );
    } else {
        assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
        assert!(
            stdout.contains("::: KPACK_SPLIT_ARTIFACTS expected device targets: gfx942\n"),
            "{stdout}"
        );
        assert!(
            stderr.contains("missing fetched artifact targets: gfx942."),
            "{stderr}"
        );
    }

    // Windows' list alone: Linux has none to check, and refuses to build without profiler
    // artifacts, where Windows skips that package.
    let dest = tmp.path().join("dest-windows-only");
    let out = stage(&artifacts, &dest, &both[2..]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    if cfg!(windows) {
        assert!(out.status.success(), "{stdout}{stderr}");
        check_staged(&artifacts, &dest);
    } else {
        assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
        assert!(
            stderr.contains(
                "No profiler artifacts found; refusing to build an empty rocm-profiler package"
            ),
            "{stderr}"
        );
    }
}

/// The same set with a profiler artifact stages on every system, and the devel tarball is the
/// same there: files another package ships are stored as relative symlinks into it (on
/// Windows, where the staged tree holds no symlinks, as well).
#[test]
fn the_devel_tarball_links_into_the_other_packages_on_every_system() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("artifacts");
    windows_shaped_set(&artifacts);
    artifact(
        &artifacts,
        "rocprofiler-systems_lib_generic",
        &[("bin/rocprof-sys.dll", pe_bytes("rocprof"))],
    );
    let dest = tmp.path().join("dest");
    let families = [
        "--linux-amdgpu-families",
        "gfx115X-all",
        "--windows-amdgpu-families",
        "gfx115X-all",
    ];
    let out = stage(&artifacts, &dest, &families);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let tarball = dest.join("rocm-sdk-devel/src/rocm_sdk_devel/_devel.tar");
    let mut archive = tar::Archive::new(fs_err::File::open(&tarball).unwrap());
    let members: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let h = e.header();
            let link = e
                .link_name()
                .unwrap()
                .map(|l| format!(" -> {}", l.display()))
                .unwrap_or_default();
            format!(
                "{} {:?} {:o}{link}",
                e.path().unwrap().display(),
                h.entry_type(),
                h.mode().unwrap()
            )
        })
        .collect();
    let core = "_rocm_sdk_core";
    assert_eq!(
        members,
        [
            "_rocm_sdk_devel/__init__.py Regular 644".to_owned(),
            "_rocm_sdk_devel/bin Directory 755".to_owned(),
            "_rocm_sdk_devel/include Directory 755".to_owned(),
            "_rocm_sdk_devel/lib Directory 755".to_owned(),
            "_rocm_sdk_devel/share Directory 755".to_owned(),
            format!("_rocm_sdk_devel/bin/amdhip64_7.dll Symlink 777 -> ../../{core}/bin/amdhip64_7.dll"),
            format!("_rocm_sdk_devel/bin/hipInfo.exe Symlink 777 -> ../../{core}/bin/hipInfo.exe"),
            "_rocm_sdk_devel/bin/rocblas.dll Symlink 777 -> ../../_rocm_sdk_libraries/bin/rocblas.dll".to_owned(),
            "_rocm_sdk_devel/include/hip Directory 755".to_owned(),
            format!("_rocm_sdk_devel/include/hip/hip_runtime.h Symlink 777 -> ../../../{core}/include/hip/hip_runtime.h"),
            format!("_rocm_sdk_devel/lib/amdhip64.lib Symlink 777 -> ../../{core}/lib/amdhip64.lib"),
            "_rocm_sdk_devel/share/therock Directory 755".to_owned(),
            format!("_rocm_sdk_devel/share/therock/therock_manifest.json Symlink 777 -> ../../../{core}/share/therock/therock_manifest.json"),
        ]
    );
    assert!(
        !dest
            .join("rocm-sdk-devel/platform/_rocm_sdk_devel")
            .exists(),
        "the staged devel tree is removed once in the tarball"
    );
}

/// What a Windows staging holds: the PE files as fetched, the device code in its package, the
/// families of both platforms in the generated metadata, and no profiler package.
fn check_staged(artifacts: &Path, dest: &Path) {
    let core = dest.join("rocm-sdk-core/platform/_rocm_sdk_core");
    for file in ["bin/amdhip64_7.dll", "bin/hipInfo.exe"] {
        assert_eq!(
            fs_err::read(core.join(file)).unwrap(),
            fs_err::read(artifacts.join("core-hip_lib_generic/stage").join(file)).unwrap(),
            "{file} staged unchanged"
        );
    }
    let libraries = dest.join("rocm-sdk-libraries/platform/_rocm_sdk_libraries");
    assert_eq!(
        fs_err::read(libraries.join("bin/rocblas.dll")).unwrap(),
        pe_bytes("rocblas")
    );
    let device = dest.join("rocm-sdk-device-gfx1151/platform/_rocm_sdk_libraries");
    assert_eq!(
        fs_err::read(device.join("bin/rocblas/library/Kernels_gfx1151.co")).unwrap(),
        b"code object\n"
    );
    assert!(
        !dest.join("rocm-profiler").exists(),
        "no profiler package on Windows"
    );
    let dist_info = fs_err::read_to_string(dest.join("rocm/src/rocm_sdk/_dist_info.py")).unwrap();
    assert!(
        dist_info.contains("WINDOWS_TARGET_FAMILIES.append('gfx1151')"),
        "{dist_info}"
    );
}

/// Building packages runs the templates' `setup.py` with `--python`, by default the name Python
/// has on the system (`python` on Windows, `python3` elsewhere); where there is none, the run
/// stops before staging, naming it.
#[test]
fn the_default_python_is_the_systems_name_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("artifacts");
    windows_shaped_set(&artifacts);
    let dest = tmp.path().join("dest");
    let out = build_command(&artifacts, &dest)
        .env_clear()
        .env("PATH", tmp.path())
        .run_output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let python = if cfg!(windows) { "python" } else { "python3" };
    assert!(
        stderr.contains(&format!("Failed to run `{python}`")),
        "{stderr}"
    );
    assert!(!dest.join("rocm-sdk-core").exists(), "nothing staged");
}
