//! Device packages (spec §15.7), the devel package and its tarball (§15.8), profiler aliases
//! (§15.11).

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::Path;

use crate::catalog::{ArtifactCatalog, device_filter, libraries_filter};
use crate::devel::{links_manifest, profiler_fixups};
use crate::names::Logical;
use crate::populate::Package;
use crate::populate_tests::{core_deps, files_under, mkdirs, stage, staged_core};

#[test]
fn device_package_and_links_manifest_of_spec_15_7() {
    let tmp = tempfile::tempdir().unwrap();
    let art = tmp.path().join("artifacts");
    let generic = stage(&art, "blas_lib_generic");
    mkdirs(&generic.join("lib"));
    fs_err::write(generic.join("lib/librocblas.txt"), "x").unwrap();
    let gfx = stage(&art, "blas_lib_gfx942");
    mkdirs(&gfx.join(".kpack"));
    mkdirs(&gfx.join("lib/rocblas/library"));
    fs_err::write(gfx.join(".kpack/blas_lib_gfx942.kpack"), "k").unwrap();
    fs_err::write(gfx.join("lib/rocblas/library/Foo_gfx942.co"), "co").unwrap();

    let catalog = ArtifactCatalog::new(&art, device_filter("gfx942"), &[], &[]).unwrap();
    let mut device = Package::new(
        Logical::Device,
        Some("gfx942".into()),
        tmp.path().join("dest/rocm-sdk-device-gfx942"),
        "_rocm_sdk_libraries".into(),
        core_deps(&["lib", "lib/rocm_sysdeps/lib"]),
    );
    device
        .populate_device(&catalog, "7.10.0.dev0", true)
        .unwrap();
    let platform = device.platform_dir().unwrap();
    assert_eq!(
        files_under(&platform),
        [
            ".devel_links/gfx942.json",
            ".kpack/blas_lib_gfx942.kpack",
            "__init__.py",
            "lib/rocblas/library/Foo_gfx942.co"
        ]
    );
    assert_eq!(
        fs_err::read_to_string(platform.join(".devel_links/gfx942.json")).unwrap(),
        "{\n  \"version\": \"7.10.0.dev0\",\n  \"links\": [\n    {\n      \"relpath\": \".kpack/blas_lib_gfx942.kpack\",\n      \"target\": \"../../_rocm_sdk_libraries/.kpack/blas_lib_gfx942.kpack\"\n    },\n    {\n      \"relpath\": \"lib/rocblas/library/Foo_gfx942.co\",\n      \"target\": \"../../../../_rocm_sdk_libraries/lib/rocblas/library/Foo_gfx942.co\"\n    }\n  ]\n}"
    );
    assert_eq!(
        links_manifest("é", &[]),
        "{\n  \"version\": \"\\u00e9\",\n  \"links\": []\n}"
    );
}

/// Member name → what it is (`DIR`, `FILE`, or `-> target`), in archive order.
fn members(tarball: &Path) -> Vec<(String, String)> {
    let mut archive = tar::Archive::new(fs_err::File::open(tarball).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let kind = match e.header().entry_type() {
                tar::EntryType::Directory => "DIR".to_owned(),
                tar::EntryType::Symlink => {
                    format!("-> {}", e.link_name().unwrap().unwrap().display())
                }
                _ => "FILE".to_owned(),
            };
            (name, kind)
        })
        .collect()
}

/// The devel tarball members of spec §15.8 (plus the read-only file of this fixture).
fn spec_15_8_members() -> BTreeSet<(String, String)> {
    [
        ("__init__.py", "FILE"),
        ("lib", "DIR"),
        ("include", "DIR"),
        ("lib/libamdhip64.so", "-> libamdhip64.so.7"),
        ("lib/librocblas.so", "-> librocblas.so.5"),
        (
            "lib/librocblas.so.5",
            "-> ../../_rocm_sdk_libraries/lib/librocblas.so.5",
        ),
        ("lib/dangling", "-> nope"),
        ("lib/librocblas.so.5.0", "-> librocblas.so.5"),
        (
            "lib/libamdhip64.so.7",
            "-> ../../_rocm_sdk_core/lib/libamdhip64.so.7",
        ),
        ("lib/libamdhip64.so.7.1.0", "-> libamdhip64.so.7"),
        ("lib/cmake", "DIR"),
        ("lib/dirlink", "-> llvm"),
        ("lib/llvm", "DIR"),
        ("lib/cmake/hip", "DIR"),
        ("lib/cmake/hip/hip-config.cmake", "FILE"),
        ("lib/llvm/bin", "DIR"),
        (
            "lib/llvm/bin/clang-20",
            "-> ../../../../_rocm_sdk_core/lib/llvm/bin/clang-20",
        ),
        (
            "lib/llvm/bin/clang",
            "-> ../../../../_rocm_sdk_core/lib/llvm/bin/clang",
        ),
        ("include/rocblas", "DIR"),
        ("include/hip", "DIR"),
        ("include/rocblas/rocblas.h", "FILE"),
        (
            "include/hip/hip_runtime.h",
            "-> ../../../_rocm_sdk_core/include/hip/hip_runtime.h",
        ),
        (
            "lib/readonly.txt",
            "-> ../../_rocm_sdk_libraries/lib/readonly.txt",
        ),
    ]
    .into_iter()
    .map(|(n, k)| (format!("_rocm_sdk_devel/{n}"), k.to_owned()))
    .collect()
}

/// Stages the generic devel package in `staging` from `catalog`; returns the tarball.
fn generic_devel(
    staging: &Path,
    catalog: &ArtifactCatalog,
    registered: &[&Package],
) -> std::path::PathBuf {
    let mut devel = Package::new(
        Logical::Devel,
        None,
        staging.to_path_buf(),
        "_rocm_sdk_devel".into(),
        Vec::new(),
    );
    devel
        .populate_devel(
            catalog,
            registered,
            false,
            1_700_000_000,
            true,
            &mut std::io::sink(),
        )
        .unwrap()
}

#[test]
fn devel_package_of_spec_15_8() {
    let tmp = tempfile::tempdir().unwrap();
    let (art, dest, stubs, core, core_catalog) = staged_core(tmp.path());
    let mut libs = Package::new(
        Logical::Libraries,
        None,
        dest.join("rocm-sdk-libraries"),
        "_rocm_sdk_libraries".into(),
        core_deps(&["lib"]),
    );
    let libs_catalog = ArtifactCatalog::new(&art, libraries_filter("gfx942"), &[], &[]).unwrap();
    libs.populate_runtime(&libs_catalog, &stubs, true).unwrap();

    let runtime: BTreeSet<String> = core_catalog
        .artifact_names()
        .chain(libs_catalog.artifact_names())
        .map(|a| a.name().to_owned())
        .chain(["prim".to_owned()])
        .collect();
    assert_eq!(
        runtime.iter().map(String::as_str).collect::<Vec<_>>(),
        ["blas", "core-hip", "prim"]
    );
    let devel_catalog = ArtifactCatalog::new(
        &art,
        |a| runtime.contains(a.name()) && a.target_family() == "generic",
        &[],
        &[],
    )
    .unwrap();
    let tarball = generic_devel(
        &dest.join("rocm-sdk-devel"),
        &devel_catalog,
        &[&core, &libs],
    );
    assert!(tarball.ends_with("rocm-sdk-devel/src/rocm_sdk_devel/_devel.tar"));
    assert!(
        !dest
            .join("rocm-sdk-devel/platform/_rocm_sdk_devel")
            .exists()
    );
    assert!(dest.join("rocm-sdk-devel/platform").is_dir());

    let got = members(&tarball);
    let want = spec_15_8_members();
    assert_eq!(got.iter().cloned().collect::<BTreeSet<_>>(), want);
    assert_eq!(got.len(), want.len(), "no duplicates");
    // Parents precede children; within a directory, files precede sub-directories.
    let position = |n: &str| got.iter().position(|(m, _)| m == n).unwrap();
    for (name, _) in &got {
        if let Some((parent, _)) = name.rsplit_once('/')
            && parent != "_rocm_sdk_devel"
        {
            assert!(position(parent) < position(name), "{parent} before {name}");
        }
    }
    assert!(position("_rocm_sdk_devel/lib/dangling") < position("_rocm_sdk_devel/lib/cmake"));
    // Same inputs, same bytes.
    let first = fs_err::read(&tarball).unwrap();
    let second = generic_devel(
        &tmp.path().join("again/rocm-sdk-devel"),
        &devel_catalog,
        &[&core, &libs],
    );
    assert_eq!(fs_err::read(second).unwrap(), first);
}

#[test]
fn profiler_aliases_of_spec_15_11() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    mkdirs(&p.join("lib"));
    for f in ["libprofiler-hub.so.0", "librocprof-sys.so.1.2.3"] {
        fs_err::write(p.join("lib").join(f), "x").unwrap();
    }
    mkdirs(&p.join("libexec/rocprofiler-compute"));
    fs_err::write(
        p.join("libexec/rocprofiler-compute/rocprof-compute"),
        "#!/bin/sh\n",
    )
    .unwrap();
    profiler_fixups(p).unwrap();
    let link = |n: &str| {
        fs_err::read_link(p.join(n))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    assert_eq!(link("lib/libprofiler-hub.so"), "libprofiler-hub.so.0");
    assert_eq!(link("lib/librocprof-sys.so.1.2"), "librocprof-sys.so.1.2.3");
    assert_eq!(
        link("bin/rocprof-compute"),
        "../libexec/rocprofiler-compute/rocprof-compute"
    );

    let q = tmp.path().join("existing");
    mkdirs(&q.join("lib"));
    for f in ["libprofiler-hub.so.0", "libprofiler-hub.so.99"] {
        fs_err::write(q.join("lib").join(f), "x").unwrap();
    }
    symlink("libprofiler-hub.so.99", q.join("lib/libprofiler-hub.so")).unwrap();
    profiler_fixups(&q).unwrap();
    assert_eq!(
        fs_err::read_link(q.join("lib/libprofiler-hub.so"))
            .unwrap()
            .to_string_lossy(),
        "libprofiler-hub.so.99"
    );
}

/// The devel expansion of spec §12.3 on a tarball (POSIX): each member in order; a symlink
/// becomes a hardlink when its target already exists as a file, except the preserved
/// compiler names in `bin/`. Prints every expanded path with its kind.
const EXPAND: &str = r#"
import os, pathlib, shutil, sys, tarfile
tar, site = sys.argv[1], pathlib.Path(sys.argv[2])
preserved = {"amdclang", "amdclang++", "amdclang-cl", "amdclang-cpp", "amdflang", "amdlld", "amdllvm"}
extract = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
cleaned = set()
def clean(d):
    cleaned.add(d)
    if d.exists():
        shutil.rmtree(d)
with tarfile.open(tar) as tf:
    while ti := tf.next():
        dest = site / ti.name
        if ti.isfile() or ti.issym():
            if dest.parent not in cleaned:
                clean(dest.parent)
            if ti.issym():
                dest.parent.mkdir(parents=True, exist_ok=True)
                target = dest.parent / ti.linkname
                if dest.name in preserved and dest.parent.name == "bin" and dest.parent.parent.name.startswith("_rocm_sdk_devel"):
                    dest.symlink_to(ti.linkname)
                elif target.is_file():
                    dest.hardlink_to(target)
                else:
                    tf.extract(ti, path=site, **extract)
            else:
                tf.extract(ti, path=site, **extract)
        elif ti.isdir():
            if dest not in cleaned:
                clean(dest)
            tf.extract(ti, path=site, **extract)
for p in sorted(site.rglob("*")):
    kind = "symlink" if p.is_symlink() else "dir" if p.is_dir() else "file" if p.stat().st_nlink == 1 else "hardlink"
    print(p.relative_to(site).as_posix(), kind)
"#;

/// A devel package of one artifact whose links mostly sort before their targets: returns
/// the staging dir and the tarball.
fn devel_with_forward_links(tmp: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let art = tmp.join("artifacts");
    let s = stage(&art, "prim_dev_generic");
    for d in ["lib", "share", "bin"] {
        mkdirs(&s.join(d));
    }
    fs_err::write(s.join("lib/libfoo.so.1.2"), "foo").unwrap();
    fs_err::write(s.join("share/data.txt"), "data").unwrap();
    fs_err::write(s.join("bin/clang-real"), "clang").unwrap();
    for (link, target) in [
        ("lib/libfoo.so", "libfoo.so.1"),
        ("lib/libfoo.so.1", "libfoo.so.1.2"),
        ("lib/a_data", "../share/data.txt"),
        ("lib/dirlink", "../share"),
        ("lib/dangling", "nope"),
        ("lib/cycle1", "cycle2"),
        ("lib/cycle2", "cycle1"),
        ("ALINK", "share/data.txt"),
        ("bin/amdclang", "clang-real"),
    ] {
        symlink(target, s.join(link)).unwrap();
    }
    let catalog = ArtifactCatalog::new(&art, |_| true, &[], &[]).unwrap();
    let staging = tmp.join("dest/rocm-sdk-devel");
    let tarball = generic_devel(&staging, &catalog, &[]);
    (staging, tarball)
}

#[test]
fn devel_links_to_files_of_the_tree_expand_to_hardlinks() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, tarball) = devel_with_forward_links(tmp.path());
    let site = tmp.path().join("site");
    mkdirs(&site);
    let listing = rock_ci_test_support::python(EXPAND, &[tarball.as_os_str(), site.as_os_str()]);
    let want = [
        "_rocm_sdk_devel dir",
        "_rocm_sdk_devel/ALINK hardlink",
        "_rocm_sdk_devel/__init__.py file",
        "_rocm_sdk_devel/bin dir",
        "_rocm_sdk_devel/bin/amdclang symlink",
        "_rocm_sdk_devel/bin/clang-real file",
        "_rocm_sdk_devel/lib dir",
        "_rocm_sdk_devel/lib/a_data hardlink",
        "_rocm_sdk_devel/lib/cycle1 symlink",
        "_rocm_sdk_devel/lib/cycle2 symlink",
        "_rocm_sdk_devel/lib/dangling symlink",
        "_rocm_sdk_devel/lib/dirlink symlink",
        "_rocm_sdk_devel/lib/libfoo.so hardlink",
        "_rocm_sdk_devel/lib/libfoo.so.1 hardlink",
        "_rocm_sdk_devel/lib/libfoo.so.1.2 hardlink",
        "_rocm_sdk_devel/share dir",
        "_rocm_sdk_devel/share/data.txt hardlink",
    ];
    assert_eq!(listing.lines().collect::<Vec<_>>(), want, "{listing}");
    // Targets precede their links; parents still precede their children.
    let got: Vec<String> = members(&tarball).into_iter().map(|(n, _)| n).collect();
    let position = |n: &str| {
        got.iter()
            .position(|m| m == &format!("_rocm_sdk_devel/{n}"))
            .unwrap()
    };
    assert!(position("lib/libfoo.so.1.2") < position("lib/libfoo.so.1"));
    assert!(position("lib/libfoo.so.1") < position("lib/libfoo.so"));
    assert!(position("share/data.txt") < position("lib/a_data"));
    assert!(position("__init__.py") < position("share"));
    assert!(position("share") < position("share/data.txt"));
}

#[test]
fn devel_tarball_is_readable_by_all() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, tarball) = devel_with_forward_links(tmp.path());
    let mode = fs_err::metadata(&tarball).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o644
    );
}
