//! `build_python_packages` end to end: real ELF artifacts built with `cc`, the project's own
//! fixture templates, both flows; the result is installed with pip into a fresh venv and used
//! (imports, a library loaded with ctypes whose dependency lives in the core wheel, the exe
//! stub run through a console script, the devel tarball's links); two builds are
//! byte-identical.

use crate::common::Launch as _;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rock_ci_test_support::elf::run_ok;
use rock_ci_test_support::rocm::artifact_set;

pub(crate) fn templates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/py-packaging/testdata/templates")
}

/// A venv made with `setuptools` at `spec`, once per test run and `spec`, under the
/// target's temporary directory.
fn venv_with_setuptools(spec: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "py-packaging-venv-{}",
        spec.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', "_")
    ));
    let python = dir.join("bin/python");
    if python.is_file() {
        return python;
    }
    let temp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let venv = temp.path().join("venv");
    run_ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    run_ok(
        Command::new(venv.join("bin/python"))
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .arg(format!("setuptools{spec}"))
            .arg("wheel"),
    );
    // Another test may have made it meanwhile: either copy will do.
    let _ = fs_err::rename(&venv, &dir);
    python
}

/// The interpreter the builds use: a setuptools at least as new as the `rocm` sdist needs.
pub(crate) fn python() -> PathBuf {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| venv_with_setuptools(&format!(">={}", py_packaging::MIN_SETUPTOOLS)))
        .clone()
}

fn build(artifacts: &Path, dest: &Path, extra: &[&str]) -> Output {
    Command::new(crate::common::tool("build_python_packages"))
        .arg("--python")
        .arg(python())
        .arg("--artifact-dir")
        .arg(artifacts)
        .arg("--dest-dir")
        .arg(dest)
        .arg("--templates-dir")
        .arg(templates())
        .args(["--version", "1.2.3"])
        .args(extra)
        .env("ROCM_SDK_WHEEL_PLATFORM_TAG", "linux_x86_64")
        .run_output()
        .unwrap()
}

/// Builds; asserts success and returns stdout.
fn build_ok(artifacts: &Path, dest: &Path, extra: &[&str]) -> String {
    let out = build(artifacts, dest, extra);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    stdout
}

/// File name → bytes of everything under `dist`.
fn dist_files(dist: &Path) -> BTreeMap<String, Vec<u8>> {
    rock_ci_test_support::files_under(dist)
        .into_iter()
        .map(|rel| {
            let bytes = fs_err::read(dist.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect()
}

/// A fresh venv with the packages of `dist` installed as `requirement`.
pub(crate) fn install(
    dir: &Path,
    find_links: impl AsRef<std::ffi::OsStr>,
    requirement: &str,
    target_family: &str,
) -> PathBuf {
    let venv = venv_for_sdists(dir);
    run_ok(
        Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--no-index",
                "--no-build-isolation",
                "--find-links",
            ])
            .arg(find_links)
            .arg(requirement)
            .env("ROCM_SDK_TARGET_FAMILY", target_family)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    );
    venv
}

/// A fresh venv `{dir}/venv` that builds the `rocm` sdist without build isolation (setuptools
/// 70.1 and later build wheels by themselves): the index it installs from has no setuptools.
pub(crate) fn venv_for_sdists(dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    run_ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    let python = venv.join("bin/python");
    let has_build_tools = Command::new(&python)
        .args(["-c", "import setuptools.command.bdist_wheel"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    if !has_build_tools.success() {
        run_ok(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "-q",
            "--upgrade",
            "setuptools>=70.1",
        ]));
    }
    venv
}

const USE: &str = r#"
import ctypes, importlib.util, pathlib, subprocess, sys, tarfile
import rocm_sdk, rocm_sdk_core, rocm_sdk_devel
libraries = sys.argv[1]
root = pathlib.Path(importlib.util.find_spec(libraries).origin).parent
lib = ctypes.CDLL(str(root / "lib" / "librocblas.so.5"))
print("blas", lib.blas_value())
print(subprocess.run([str(pathlib.Path(sys.executable).parent / "demo-clang"), "hello"], capture_output=True, text=True, check=True).stdout.strip())
devel = pathlib.Path(rocm_sdk_devel.__file__).parent / "_devel.tar"
with tarfile.open(devel) as t:
    for m in t.getmembers():
        if m.issym():
            print("link", m.name, m.linkname)
print("version", rocm_sdk.__version__)
"#;

fn check_installed(venv: &Path, libraries_package: &str) {
    let out = run_ok(
        Command::new(venv.join("bin/python"))
            .args(["-c", USE, libraries_package])
            .env_remove("LD_LIBRARY_PATH"),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("blas 42\n"), "{text}");
    assert!(text.contains("clang-20 hello\n"), "{text}");
    assert!(
        text.contains("link _rocm_sdk_devel/lib/libamdhip64.so libamdhip64.so.7\n"),
        "{text}"
    );
    assert!(
        text.contains("link _rocm_sdk_devel/lib/librocblas.so.5 ../../_rocm_sdk_libraries"),
        "{text}"
    );
    assert!(
        text.contains("link _rocm_sdk_devel/include/hip/hip_runtime.h ../../../_rocm_sdk_core/include/hip/hip_runtime.h\n"),
        "{text}"
    );
    assert!(text.contains("version 1.2.3\n"), "{text}");
}

/// The kpack fixture artifacts in `tmp/artifacts`, built into `tmp/dest`: both, and stdout.
fn kpack_build(tmp: &Path) -> (PathBuf, PathBuf, String) {
    let artifacts = tmp.join("artifacts");
    artifact_set(&artifacts, true);
    let dest = tmp.join("dest");
    let stdout = build_ok(&artifacts, &dest, &[]);
    (artifacts, dest, stdout)
}

#[test]
fn kpack_flow_installs_and_runs_and_rebuilds_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let (artifacts, dest, stdout) = kpack_build(tmp.path());
    assert!(
        stdout
            .contains("::: Detected KPACK_SPLIT_ARTIFACTS \u{2014} producing host + device wheels")
    );
    assert!(stdout.ends_with(&format!(
        "::: Finished building packages at '{}' with version '1.2.3'\n",
        dest.display()
    )));
    // The links the packages cannot carry are named, not dropped silently.
    for line in [
        "WARNING: not packaged: lib/dangling: a dangling symlink (to `nope`)\n",
        "WARNING: not packaged: lib/dirlink: a symlink to a directory (`llvm`)\n",
    ] {
        assert_eq!(stdout.matches(line).count(), 1, "{line} in {stdout}");
    }
    let files = dist_files(&dest.join("dist"));
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "rocm-1.2.3.tar.gz",
            "rocm_profiler-1.2.3-py3-none-linux_x86_64.whl",
            "rocm_sdk_core-1.2.3-py3-none-linux_x86_64.whl",
            "rocm_sdk_devel-1.2.3-py3-none-linux_x86_64.whl",
            "rocm_sdk_device_gfx942-1.2.3-py3-none-linux_x86_64.whl",
            "rocm_sdk_libraries-1.2.3-py3-none-linux_x86_64.whl"
        ]
    );
    let again = tmp.path().join("again");
    assert!(build(&artifacts, &again, &[]).status.success());
    assert_eq!(
        dist_files(&again.join("dist")),
        files,
        "two builds, same bytes"
    );

    let venv = install(
        tmp.path(),
        dest.join("dist"),
        "rocm[libraries,devel,device]",
        "gfx942",
    );
    check_installed(&venv, "_rocm_sdk_libraries");
    let kpack = Command::new(venv.join("bin/python"))
        .args(["-c", "import importlib.util, pathlib; p = pathlib.Path(importlib.util.find_spec('_rocm_sdk_libraries').origin).parent; print((p / '.kpack' / 'blas_lib_gfx942.kpack').read_text().strip(), (p / '.devel_links' / 'gfx942.json').is_file())"])
        .run_output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&kpack.stdout), "kpack True\n");
}

/// Relative `--artifact-dir`, `--dest-dir` and `--python` are taken from the working
/// directory, as the reference takes them, although the templates' `setup.py` runs elsewhere.
#[test]
fn relative_paths_are_taken_from_the_working_directory() {
    let tmp = tempfile::tempdir().unwrap();
    artifact_set(&tmp.path().join("artifacts"), true);
    let venv = python().parent().unwrap().parent().unwrap().to_path_buf();
    std::os::unix::fs::symlink(&venv, tmp.path().join("venv")).unwrap();
    let out = Command::new(crate::common::tool("build_python_packages"))
        .current_dir(tmp.path())
        .args(["--python", "venv/bin/python", "--artifact-dir", "artifacts"])
        .args([
            "--dest-dir",
            "dest",
            "--version",
            "1.2.3",
            "--templates-dir",
        ])
        .arg(templates())
        .env("ROCM_SDK_WHEEL_PLATFORM_TAG", "linux_x86_64")
        .run_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(dist_files(&tmp.path().join("dest/dist")).len(), 6);
}

#[test]
fn legacy_flow_installs_and_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("artifacts");
    artifact_set(&artifacts, false);
    let dest = tmp.path().join("dest");
    let out = build(
        &artifacts,
        &dest,
        &["--no-wheel-compression", "--devel-tarball-compression"],
    );
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let files = dist_files(&dest.join("dist"));
    assert!(
        files.contains_key("rocm_sdk_libraries_gfx94x_dcgpu-1.2.3-py3-none-linux_x86_64.whl"),
        "{:?}",
        files.keys()
    );
    assert!(files.contains_key("rocm-1.2.3.tar.gz"));
    let devel = dest.join("rocm-sdk-devel/src/rocm_sdk_devel/_devel.tar.xz");
    assert!(devel.is_file());
    let venv = install(
        tmp.path(),
        dest.join("dist"),
        "rocm[libraries]",
        "gfx94X-dcgpu",
    );
    let out = run_ok(Command::new(venv.join("bin/python")).args([
        "-c",
        "import ctypes, importlib.util, pathlib; p = pathlib.Path(importlib.util.find_spec('_rocm_sdk_libraries_gfx94X_dcgpu').origin).parent; print(ctypes.CDLL(str(p / 'lib' / 'librocblas.so.5')).blas_value())",
    ]));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
}

/// `--deflate-level` trades wheel size for time; the wheels stay valid and the same content.
#[test]
fn deflate_level_sets_the_wheel_compression() {
    let tmp = tempfile::tempdir().unwrap();
    let (artifacts, dest, _) = kpack_build(tmp.path());
    let fast = tmp.path().join("fast");
    build_ok(&artifacts, &fast, &["--deflate-level", "1"]);
    let (best, quick) = (
        dist_files(&dest.join("dist")),
        dist_files(&fast.join("dist")),
    );
    let core = "rocm_sdk_core-1.2.3-py3-none-linux_x86_64.whl";
    assert!(best[core].len() < quick[core].len(), "level 9 is smaller");
    let contents = |dist: &Path| {
        rock_ci_test_support::python(
            "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print(sorted((i.filename, i.CRC) for i in z.infolist()))",
            &[dist.join(core).as_os_str()],
        )
    };
    assert_eq!(contents(&dest.join("dist")), contents(&fast.join("dist")));
    for bad in ["0", "10"] {
        let out = build(
            &artifacts,
            &tmp.path().join("bad"),
            &["--deflate-level", bad],
        );
        assert_eq!(out.status.code(), Some(2), "level {bad}");
    }
}

#[test]
fn bad_inputs_fail_with_the_reference_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("empty");
    fs_err::create_dir_all(&artifacts).unwrap();
    let out = build(&artifacts, &tmp.path().join("dest"), &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!(
        "therock_manifest.json not found at {}/base_lib_generic/base/aux-overlay/stage/share/therock/therock_manifest.json. Is base_lib_generic present in {}?",
        artifacts.display(),
        artifacts.display()
    )), "{err}");
    // No profiler artifact on Linux.
    let art = tmp.path().join("noprof");
    artifact_set(&art, true);
    fs_err::remove_dir_all(art.join("rocprofiler-systems_lib_generic")).unwrap();
    let out = build(&art, &tmp.path().join("dest2"), &["--no-build-packages"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "No profiler artifacts found; refusing to build an empty rocm-profiler package"
        )
    );
    // A missing template.
    let out = Command::new(crate::common::tool("build_python_packages"))
        .args(["--artifact-dir", "x", "--dest-dir", "y", "--version", "1"])
        .arg("--templates-dir")
        .arg(tmp.path())
        .current_dir(tmp.path())
        .run_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // Usage errors exit 2.
    let usage = Command::new(crate::common::tool("build_python_packages"))
        .arg("--dest")
        .arg("d")
        .run_output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    // An ambiguous prefix names the candidates, as argparse does.
    let usage = Command::new(crate::common::tool("build_python_packages"))
        .args(["--d", "x"])
        .run_output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let err = String::from_utf8_lossy(&usage.stderr);
    assert!(
        err.contains("ambiguous option: --d could match --dest-dir, --devel-tarball-compression"),
        "{err}"
    );
}

#[test]
fn legacy_flow_with_two_families_writes_meta_and_devel_per_family() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("artifacts");
    artifact_set(&artifacts, false);
    let second = rock_ci_test_support::rocm::stage(&artifacts, "blas_lib_gfx120X-all");
    fs_err::create_dir_all(second.join("lib/rocblas/library")).unwrap();
    fs_err::write(second.join("lib/rocblas/library/Kernels_gfx1201.co"), "co").unwrap();
    let dest = tmp.path().join("dest");
    let out = build(&artifacts, &dest, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = dist_files(&dest.join("dist")).into_keys().collect();
    assert_eq!(
        names,
        [
            "gfx120X-all/rocm-1.2.3.tar.gz",
            "gfx120X-all/rocm_sdk_devel-1.2.3-py3-none-linux_x86_64.whl",
            "gfx94X-dcgpu/rocm-1.2.3.tar.gz",
            "gfx94X-dcgpu/rocm_sdk_devel-1.2.3-py3-none-linux_x86_64.whl",
            "rocm_profiler-1.2.3-py3-none-linux_x86_64.whl",
            "rocm_sdk_core-1.2.3-py3-none-linux_x86_64.whl",
            "rocm_sdk_libraries_gfx120x_all-1.2.3-py3-none-linux_x86_64.whl",
            "rocm_sdk_libraries_gfx94x_dcgpu-1.2.3-py3-none-linux_x86_64.whl"
        ]
    );
    // The meta package staged last is restricted to its family.
    let dist_info = fs_err::read_to_string(dest.join("rocm/src/rocm_sdk/_dist_info.py")).unwrap();
    assert!(dist_info.ends_with(
        "THIS_TARGET_FAMILY = 'gfx94X-dcgpu'\nTHIS_PACKAGE_ENTRY = ALL_PACKAGES['meta']\nDEFAULT_TARGET_FAMILY = 'gfx94X-dcgpu'\nAVAILABLE_TARGET_FAMILIES.append('gfx94X-dcgpu')\n"
    ), "{dist_info}");
    assert!(!dist_info.contains("gfx120X-all"));
}

/// The `:::` lines of `stdout` with the destination and the interpreter as placeholders.
fn transcript(stdout: &str, dest: &Path) -> String {
    let python = python();
    stdout
        .lines()
        .filter(|l| l.starts_with(":::"))
        .map(|l| {
            let l = l.replace(&python.display().to_string(), "{PYTHON}");
            l.replace(&dest.display().to_string(), "{DEST}") + "\n"
        })
        .collect()
}

fn recorded(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/py-packaging/testdata/transcripts")
        .join(name);
    fs_err::read_to_string(path).unwrap()
}

#[test]
fn log_lines_follow_the_reference_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs_err::canonicalize(tmp.path()).unwrap();
    let artifacts = root.join("artifacts");
    artifact_set(&artifacts, true);
    let dest = root.join("dest");
    let stdout = build_ok(&artifacts, &dest, &["--no-wheel-compression"]);
    assert_eq!(transcript(&stdout, &dest), recorded("kpack.txt"));

    let legacy = root.join("legacy");
    artifact_set(&legacy, false);
    let second = rock_ci_test_support::rocm::stage(&legacy, "blas_lib_gfx120X-all");
    fs_err::write(second.join("marker.txt"), "x").unwrap();
    let dest = root.join("dest-legacy");
    let stdout = build_ok(&legacy, &dest, &["--devel-tarball-compression"]);
    let want = recorded("legacy-two-families.txt");
    assert_eq!(transcript(&stdout, &dest), want);
}

/// Prints `METADATA` and `entry_points.txt` (or `-`) of the wheel at `argv[1]`.
const DIST_INFO: &str = r#"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for suffix in ("/METADATA", "/entry_points.txt"):
    names = [n for n in z.namelist() if n.endswith(".dist-info" + suffix)]
    print(z.read(names[0]).decode() if names else "-", end="\x00")
"#;

#[test]
fn wheel_metadata_is_what_setuptools_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, dest, _) = kpack_build(tmp.path());
    let python = python();
    // setuptools builds the same staged packages into another directory.
    let reference = tmp.path().join("setuptools-dist");
    for (package, wheel) in [
        ("rocm-sdk-core", "rocm_sdk_core"),
        ("rocm-profiler", "rocm_profiler"),
        ("rocm-sdk-device-gfx942", "rocm_sdk_device_gfx942"),
    ] {
        run_ok(
            Command::new(&python)
                .args(["setup.py", "-q", "bdist_wheel", "--dist-dir"])
                .arg(&reference)
                .current_dir(dest.join(package))
                .env("ROCM_SDK_WHEEL_PLATFORM_TAG", "linux_x86_64"),
        );
        let name = format!("{wheel}-1.2.3-py3-none-linux_x86_64.whl");
        let ours = run_ok(
            Command::new(&python)
                .args(["-c", DIST_INFO])
                .arg(dest.join("dist").join(&name)),
        );
        let theirs = run_ok(
            Command::new(&python)
                .args(["-c", DIST_INFO])
                .arg(reference.join(&name)),
        );
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "{package}"
        );
    }
}

#[test]
fn an_old_setuptools_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("artifacts");
    artifact_set(&artifacts, true);
    let old = venv_with_setuptools("==68.0.0");
    let out = Command::new(crate::common::tool("build_python_packages"))
        .arg("--python")
        .arg(&old)
        .arg("--artifact-dir")
        .arg(&artifacts)
        .arg("--dest-dir")
        .arg(tmp.path().join("dest"))
        .arg("--templates-dir")
        .arg(templates())
        .args(["--version", "1.2.3"])
        .run_output()
        .unwrap();
    rock_ci_test_support::assert_fails_with(
        &out,
        1,
        &format!(
            "`{}` ({}) has setuptools 68.0.0; the rocm sdist needs setuptools >= {}",
            old.display(),
            old.display(),
            py_packaging::MIN_SETUPTOOLS
        ),
        "old setuptools",
    );
    assert!(!tmp.path().join("dest/dist").exists(), "nothing built");
}
