//! The staging example of spec §15.8 with real ELF files built by `cc`: SONAME chains, exe
//! symlinks, dangling links, RPATHs; then the staged trees are put side by side as pip would
//! install them, a library is loaded and a stub is run.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use rock_ci_test_support::elf::{cc, readelf_dynamic};

use crate::catalog::{ArtifactCatalog, CORE_EXCLUDES, core_filter, libraries_filter};
use crate::names::Logical;
use crate::populate::{Package, RpathDep};
use crate::stub::StubCache;

pub(crate) use rock_ci_test_support::rocm::stage;

pub(crate) fn mkdirs(p: &Path) {
    fs_err::create_dir_all(p).unwrap();
}

/// Artifacts of §15.8 (the kpack device part aside), plus a read-only file.
pub(crate) fn artifacts(root: &Path) {
    rock_ci_test_support::rocm::runtime_artifacts(root);
    let readonly = root.join("blas_lib_generic/stage/lib/readonly.txt");
    fs_err::write(&readonly, "ro").unwrap();
    fs_err::set_permissions(
        &readonly,
        std::os::unix::fs::PermissionsExt::from_mode(0o400),
    )
    .unwrap();
}

pub(crate) fn core_deps(subdirs: &[&str]) -> Vec<RpathDep> {
    subdirs
        .iter()
        .map(|s| RpathDep {
            platform: "_rocm_sdk_core".into(),
            subdir: (*s).into(),
        })
        .collect()
}

pub(crate) use rock_ci_test_support::files_under;

/// The artifacts of §15.8 under `tmp/artifacts` and the core package populated from them
/// under `tmp/dest`: (artifacts dir, dest dir, stub cache, core, core catalog).
pub(crate) fn staged_core(tmp: &Path) -> (PathBuf, PathBuf, StubCache, Package, ArtifactCatalog) {
    let (art, dest) = (tmp.join("artifacts"), tmp.join("dest"));
    artifacts(&art);
    let stubs = StubCache::new(None, tmp.join("stub"));
    let catalog = ArtifactCatalog::new(&art, core_filter, &[], &CORE_EXCLUDES).unwrap();
    let mut core = Package::new(
        Logical::Core,
        None,
        dest.join("rocm-sdk-core"),
        "_rocm_sdk_core".into(),
        core_deps(&["lib/llvm/lib", "lib/rocm_sysdeps/lib"]),
    );
    core.populate_runtime(&catalog, &stubs, true).unwrap();
    (art, dest, stubs, core, catalog)
}

/// A library whose SONAME names no file of the artifacts would vanish from the package (the
/// reference drops it silently): it is reported, the rest is packaged.
#[test]
fn a_library_without_its_soname_file_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let art = tmp.path().join("artifacts");
    artifacts(&art);
    cc(
        &art.join("core-hip_lib_generic/stage/lib"),
        "libfoo.so.1.0",
        "int foo(void) { return 1; }\n",
        &["-shared", "-fPIC", "-Wl,-soname,libfoo.so.1"],
    );
    fs_err::remove_file(art.join("core-hip_lib_generic/stage/lib/libfoo.so.1.0.c")).unwrap();
    let catalog = ArtifactCatalog::new(&art, core_filter, &[], &CORE_EXCLUDES).unwrap();
    let mut core = Package::new(
        Logical::Core,
        None,
        tmp.path().join("dest/rocm-sdk-core"),
        "_rocm_sdk_core".into(),
        core_deps(&["lib/llvm/lib"]),
    );
    core.populate_runtime(
        &catalog,
        &StubCache::new(None, tmp.path().join("stub")),
        true,
    )
    .unwrap();
    assert_eq!(
        core.dropped.get("lib/libfoo.so.1.0").map(String::as_str),
        Some("a shared library whose SONAME `libfoo.so.1` names no file of the artifacts")
    );
    // The libraries whose SONAME file is there are not reported.
    assert!(!core.dropped.contains_key("lib/libamdhip64.so.7.1.0"));
    assert!(core.materialized.contains_key("lib/libamdhip64.so.7"));
}

#[test]
fn runtime_population_of_spec_15_8_loads_and_runs_when_installed() {
    let tmp = tempfile::tempdir().unwrap();
    let (art, dest, stubs, core, _) = staged_core(tmp.path());
    let platform = core.platform_dir().unwrap();
    assert_eq!(
        files_under(&platform),
        [
            "__init__.py",
            "include/hip/hip_runtime.h",
            "lib/libamdhip64.so.7",
            "lib/llvm/bin/clang",
            "lib/llvm/bin/clang-20"
        ]
    );
    let aliases: Vec<(&str, &str)> = core
        .soname_aliases
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        aliases,
        [
            ("lib/libamdhip64.so", "libamdhip64.so.7"),
            ("lib/libamdhip64.so.7.1.0", "libamdhip64.so.7")
        ]
    );
    // What is left out is said, with why.
    let dropped: Vec<(&str, &str)> = core
        .dropped
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        dropped,
        [
            ("lib/dangling", "a dangling symlink (to `nope`)"),
            ("lib/dirlink", "a symlink to a directory (`llvm`)")
        ]
    );
    let hip = readelf_dynamic(&platform.join("lib/libamdhip64.so.7"));
    assert_eq!(
        (hip.rpath.as_deref(), hip.runpath),
        (
            Some(
                "$ORIGIN:$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib:$ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib"
            ),
            None
        )
    );
    let clang = readelf_dynamic(&platform.join("lib/llvm/bin/clang-20"));
    assert_eq!(
        clang.rpath.as_deref(),
        Some(
            "$ORIGIN/../lib:$ORIGIN/../../../../_rocm_sdk_core/lib/llvm/lib:$ORIGIN/../../../../_rocm_sdk_core/lib/rocm_sysdeps/lib"
        )
    );
    assert_eq!(
        readelf_dynamic(&platform.join("lib/llvm/bin/clang")).rpath,
        None,
        "stubs are not patched"
    );

    let libs_catalog = ArtifactCatalog::new(&art, libraries_filter("gfx942"), &[], &[]).unwrap();
    let mut libraries = Package::new(
        Logical::Libraries,
        None,
        dest.join("rocm-sdk-libraries"),
        "_rocm_sdk_libraries".into(),
        core_deps(&[
            "lib",
            "lib/rocm_sysdeps/lib",
            "lib/host-math/lib",
            "lib/llvm/lib",
        ]),
    );
    libraries
        .populate_runtime(&libs_catalog, &stubs, true)
        .unwrap();
    let libs_platform = libraries.platform_dir().unwrap();
    assert_eq!(
        files_under(&libs_platform),
        ["__init__.py", "lib/librocblas.so.5", "lib/readonly.txt"]
    );
    let blas = readelf_dynamic(&libs_platform.join("lib/librocblas.so.5"));
    assert_eq!(
        blas.rpath.as_deref(),
        Some(
            "$ORIGIN/../../_rocm_sdk_core/lib:$ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib:$ORIGIN/../../_rocm_sdk_core/lib/host-math/lib:$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib"
        )
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &fs_err::metadata(libs_platform.join("lib/readonly.txt"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(
        mode & 0o777,
        0o600,
        "owner-write added to a read-only source"
    );

    check_installed(tmp.path(), &[&platform, &libs_platform]);
}

/// Puts the platform packages side by side as pip installs them, loads the library whose
/// dependency lives in core, and runs the exe stub directly and through a symlink.
fn check_installed(tmp: &Path, platforms: &[&Path]) {
    // As installed: the platform packages side by side in one site-packages.
    let site = tmp.join("site-packages");
    mkdirs(&site);
    for dir in platforms {
        let status = Command::new("cp")
            .arg("-a")
            .arg(dir)
            .arg(&site)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let loader = cc(
        tmp,
        "loader",
        "#include <dlfcn.h>\n#include <stdio.h>\nint main(int c, char **v) { void *h = dlopen(v[1], RTLD_NOW); if (!h) { printf(\"%s\\n\", dlerror()); return 1; } int (*f)(void) = (int (*)(void))dlsym(h, \"blas_value\"); printf(\"%d\\n\", f()); return 0; }\n",
        &["-ldl"],
    );
    let out = Command::new(&loader)
        .arg(site.join("_rocm_sdk_libraries/lib/librocblas.so.5"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "42\n",
        "libamdhip64 found through the RPATH"
    );
    // The stub runs its target from wherever it is installed, with the arguments.
    let out = Command::new(site.join("_rocm_sdk_core/lib/llvm/bin/clang"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "clang-20 --version\n");
    assert!(out.status.success());
    // ...also through a symlink to it placed elsewhere.
    let elsewhere = tmp.join("bin-clang");
    symlink(site.join("_rocm_sdk_core/lib/llvm/bin/clang"), &elsewhere).unwrap();
    let out = Command::new(&elsewhere).arg("x").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "clang-20 x\n");
}

#[test]
fn a_stub_whose_target_is_missing_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let stubs = StubCache::new(None, tmp.path().join("stub"));
    let dest = tmp.path().join("pkg/wrappers/tool");
    stubs.get().unwrap().write(&dest, "../bin/target").unwrap();
    let out = Command::new(&dest).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("could not exec ") && err.contains("pkg/wrappers/../bin/target"),
        "{err}"
    );
    // Then the target appears: a script printing its argument.
    mkdirs(&tmp.path().join("pkg/bin"));
    let target = tmp.path().join("pkg/bin/target");
    fs_err::write(&target, "#!/bin/sh\necho \"target ran:$1\"\n").unwrap();
    fs_err::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = Command::new(&dest).arg("absolute").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "target ran:absolute\n"
    );
    assert!(out.stderr.is_empty() && out.status.success());
    assert!(
        stubs
            .get()
            .unwrap()
            .write(&tmp.path().join("x"), &"a".repeat(5000))
            .is_err()
    );
}

/// A library and an object file above the size from which ELF files are edited from a
/// mapping: the library is written as the in-memory edit writes it, with the source's mtime;
/// the object file (no dynamic section) is copied as it is.
#[test]
fn large_elf_files_are_edited_from_a_mapping_as_small_ones_are() {
    use crate::populate::copy_with_edit;
    let tmp = tempfile::tempdir().unwrap();
    let source = "const char big[70 << 20] = {1};\nint big_at(int i) { return big[i]; }\n";
    let lib = cc(
        tmp.path(),
        "libbig.so.1",
        source,
        &["-shared", "-fPIC", "-Wl,-soname,libbig.so.1"],
    );
    let object = cc(tmp.path(), "big.o", source, &["-c", "-fPIC"]);
    let edit = crate::populate::runtime_edit("lib/libbig.so.1", &core_deps(&["lib/llvm/lib"]));
    for (file, edited) in [(&lib, true), (&object, false)] {
        let data = fs_err::read(file).unwrap();
        assert!(data.len() > 70 << 20, "{}", data.len());
        let dest = tmp.path().join("out").join(file.file_name().unwrap());
        copy_with_edit(file, &dest, Some(&edit)).unwrap();
        let expected = if edited {
            elf_patch::patch(&data, &edit).unwrap().unwrap()
        } else {
            data
        };
        assert!(
            fs_err::read(&dest).unwrap() == expected,
            "{}",
            dest.display()
        );
        assert_eq!(
            fs_err::metadata(&dest).unwrap().modified().unwrap(),
            fs_err::metadata(file).unwrap().modified().unwrap()
        );
    }
    let out = tmp.path().join("out/libbig.so.1");
    assert_eq!(
        readelf_dynamic(&out).rpath.as_deref(),
        Some("$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib")
    );
}
