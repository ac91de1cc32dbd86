#![cfg_attr(
    windows,
    expect(
        unused_imports,
        dead_code,
        reason = "used by the tests that run on Unix only"
    )
)]

use super::{ArtifactCatalog, EntryKind, PROFILER_WHEEL_INCLUDES, core_filter, device_filter};
use artifacts::ArtifactName;

fn name(n: &str, c: &str, t: &str) -> ArtifactName {
    ArtifactName::new(n, c, t).unwrap()
}

#[test]
fn artifact_dir_names_of_spec_15_3() {
    for (dir, want) in [
        (
            "name_component_generic",
            Some(("name", "component", "generic")),
        ),
        (
            "blas_lib_gfx942:xnack+",
            Some(("blas", "lib", "gfx942:xnack+")),
        ),
        ("hip-dev_lib_generic", Some(("hip-dev", "lib", "generic"))),
        ("a_b_c_d", None),
        ("a_b", None),
        ("_lib_generic", None),
    ] {
        let got = ArtifactName::from_dir_name(dir);
        let got = got
            .as_ref()
            .map(|a| (a.name(), a.component(), a.target_family()));
        assert_eq!(got, want, "{dir}");
    }
}

#[test]
fn filters_of_spec_15_10() {
    let device = device_filter("gfx942");
    for (n, c, t, want) in [
        ("blas", "lib", "gfx942", true),
        ("rccl", "lib", "gfx942", true),
        ("hipkernelprovider", "lib", "gfx942", true),
        ("blas", "lib", "generic", false),
        ("blas", "lib", "gfx1100", false),
        ("blas", "test", "gfx942", false),
        ("core-hip", "lib", "gfx942", false),
        ("blas", "lib", "gfx942:xnack+", true),
        ("blas", "lib", "gfx950:xnack+", false),
        ("rpp", "lib", "gfx942", false),
    ] {
        assert_eq!(device(&name(n, c, t)), want, "{n} {c} {t}");
    }
    assert!(core_filter(&name("rocjitsu-hotswap", "lib", "generic")));
    assert!(!core_filter(&name("rocjitsu", "lib", "generic")));
    assert!(!core_filter(&name("rocjitsu-hotswap", "run", "generic")));
    assert!(core_filter(&name("core-hip", "dev", "generic")));
    assert!(core_filter(&name("base", "run", "gfx942")));
}

fn artifact(root: &std::path::Path, dir: &str, files: &[(&str, &str)]) {
    let stage = root.join(dir).join("stage");
    fs_err::create_dir_all(&stage).unwrap();
    fs_err::write(
        root.join(dir).join("artifact_manifest.txt"),
        "stage\n\nmissing\n",
    )
    .unwrap();
    for (rel, text) in files {
        let p = stage.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, text).unwrap();
    }
}

// The tree holds a symlink, which Windows makes only with a privilege.
#[cfg(unix)]
#[test]
fn catalog_overlays_artifacts_in_sorted_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    artifact(
        root,
        "rocprofiler-systems_lib_generic",
        &[
            ("lib/librocprof-sys.so.1", "a"),
            ("lib/libprofiler-hub.so.0", "b"),
            ("lib/libunrelated-dependency.so.1", "c"),
        ],
    );
    artifact(root, "blas_lib_generic", &[("lib/x.txt", "generic")]);
    artifact(
        root,
        "blas_lib_gfx942",
        &[("lib/x.txt", "gfx942"), ("lib/y.txt", "y")],
    );
    fs_err::create_dir_all(root.join("not_an_artifact_name_at_all")).unwrap();
    fs_err::create_dir_all(root.join("fft_lib_generic")).unwrap(); // no manifest
    fs_err::write(root.join("rand_lib_generic"), "a file").unwrap();
    std::os::unix::fs::symlink("x.txt", root.join("blas_lib_gfx942/stage/lib/link")).unwrap();

    let profiler =
        ArtifactCatalog::new(root, super::profiler_filter, &PROFILER_WHEEL_INCLUDES, &[]).unwrap();
    let got: Vec<&str> = profiler.matches().map(|(r, _)| r).collect();
    assert_eq!(got, ["lib/libprofiler-hub.so.0", "lib/librocprof-sys.so.1"]);

    let all = ArtifactCatalog::new(root, |_| true, &[], &[]).unwrap();
    let names: Vec<String> = all.artifact_names().map(ArtifactName::dir_name).collect();
    assert_eq!(
        names,
        [
            "blas_lib_generic",
            "blas_lib_gfx942",
            "rocprofiler-systems_lib_generic"
        ]
    );
    let x = all.matches().find(|(r, _)| *r == "lib/x.txt").unwrap().1;
    assert_eq!(
        fs_err::read_to_string(&x.path).unwrap(),
        "gfx942",
        "the last artifact in sorted order wins"
    );
    let rels: Vec<&str> = all.matches().map(|(r, _)| r).collect();
    assert_eq!(rels[0], "lib", "parents first");
    assert_eq!(
        all.matches()
            .find(|(r, _)| *r == "lib/link")
            .unwrap()
            .1
            .kind,
        EntryKind::Symlink
    );
    let excluded = ArtifactCatalog::new(root, |_| true, &[], &["lib/*.txt"]).unwrap();
    assert!(excluded.matches().all(|(r, _)| !r.contains(".txt")));
}
