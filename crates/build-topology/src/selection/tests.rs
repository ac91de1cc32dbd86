//! Spec §12.1 vectors: requested targets, file choice and exclusion lists.

use std::collections::{BTreeMap, BTreeSet};

use artifacts::base_target;

use super::*;

fn requested(
    families: Option<&str>,
    targets: &str,
    generic_only: bool,
    expand: bool,
    map: &[(&str, &[&str])],
) -> (Vec<String>, String) {
    let map: BTreeMap<&str, Vec<String>> = map
        .iter()
        .map(|(f, t)| (*f, t.iter().map(|s| (*s).to_owned()).collect()))
        .collect();
    let mut out = Vec::new();
    let got = Targets {
        families: families.map(str::to_owned),
        generic_only,
        targets: targets.to_owned(),
        expand,
    }
    .requested(&|f| map.get(f).cloned().unwrap_or_default(), &mut out)
    .unwrap();
    (got, String::from_utf8(out).unwrap())
}

const REAL_MAP: &[(&str, &[&str])] = &[
    ("gfx94X-dcgpu", &["gfx942"]),
    ("gfx942", &["gfx942"]),
    ("gfx110X-all", &["gfx1100", "gfx1101", "gfx1102", "gfx1103"]),
    ("gfx1151", &["gfx1151"]),
];

#[test]
fn requested_targets() {
    let (got, printed) = requested(None, "", true, false, &[]);
    assert_eq!(got, ["generic"]);
    assert_eq!(printed, "Using generic (host) artifacts only\n");
    let (got, printed) = requested(None, "gfx942, gfx1100", true, false, &[]);
    assert_eq!(got, ["generic"]);
    assert_eq!(
        printed,
        "Using generic (host) artifacts only\n\
         WARNING: --generic-only ignores --amdgpu-targets gfx942,gfx1100\n"
    );
    assert_eq!(
        requested(Some("gfx110X-all"), "", false, false, REAL_MAP).0,
        ["generic", "gfx110X-all"]
    );
    let got = requested(Some("gfx110X-all"), "", false, true, REAL_MAP).0;
    for t in [
        "generic",
        "gfx110X-all",
        "gfx1100",
        "gfx1101",
        "gfx1102",
        "gfx1103",
    ] {
        assert!(got.iter().any(|g| g == t), "{t} in {got:?}");
    }
    let got = requested(Some("gfx94X-dcgpu"), "", false, true, REAL_MAP).0;
    assert_eq!(got.iter().filter(|t| *t == "gfx942").count(), 1);
    let (got, printed) = requested(Some("custom-family"), "", false, true, &[]);
    assert_eq!(got, ["generic", "custom-family"]);
    assert!(
        printed.contains("'custom-family' is not in the family table"),
        "{printed}"
    );
    let got = requested(Some("gfx110X-all"), "gfx1100,gfx1101", false, false, &[]).0;
    assert_eq!(got, ["generic", "gfx110X-all", "gfx1100", "gfx1101"]);
    assert_eq!(
        requested(Some("gfx94X-dcgpu;gfx110X-all"), "", false, true, REAL_MAP).0,
        [
            "generic",
            "gfx94X-dcgpu",
            "gfx110X-all",
            "gfx942",
            "gfx1100",
            "gfx1101",
            "gfx1102",
            "gfx1103"
        ]
    );
    assert_eq!(
        requested(
            Some("gfx94X-dcgpu;;"),
            " gfx942 , ,gfx90a",
            false,
            false,
            &[]
        )
        .0,
        ["generic", "gfx94X-dcgpu", "", "", "gfx942", "gfx90a"]
    );
    assert_eq!(requested(None, "gfx942", true, false, &[]).0, ["generic"]);
    assert_eq!(
        requested(Some("gfx1151"), "", false, true, REAL_MAP).0,
        ["generic", "gfx1151"]
    );
}

const LISTING: &[&str] = &[
    "blas_lib_gfx942.tar.zst",
    "blas_lib_gfx942.tar.xz",
    "blas_lib_gfx942:xnack+.tar.zst",
    "blas_test_gfx942.tar.zst",
    "blas_lib_generic.tar.xz",
    "blas_lib_gfx94X-dcgpu.tar.zst",
    "blas_lib_gfx1100.tar.zst",
    "fft_lib_generic.tar.zst",
    "README.md",
    "blas_lib_gfx942.tar.zst.sha256sum",
    "rocblas_lib_gfx942.tar.zst",
    "blas_dbg_gfx942.tar.zst",
];

fn choose(names: &[&str], targets: &[&str], excluded: &[&str]) -> Vec<String> {
    let names: BTreeSet<&str> = names.iter().copied().collect();
    let targets: Vec<String> = targets.iter().map(|s| (*s).to_owned()).collect();
    let available: Vec<String> = LISTING.iter().map(|s| (*s).to_owned()).collect();
    let excluded: BTreeSet<String> = excluded.iter().map(|s| (*s).to_owned()).collect();
    choose_files(&names, &targets, &available, &excluded)
}

#[test]
fn file_choice() {
    assert_eq!(
        choose(&["blas"], &["generic", "gfx942"], &[]),
        [
            "blas_dbg_gfx942.tar.zst",
            "blas_lib_generic.tar.xz",
            "blas_lib_gfx942.tar.zst",
            "blas_lib_gfx942:xnack+.tar.zst",
            "blas_test_gfx942.tar.zst"
        ]
    );
    assert_eq!(
        choose(&["blas"], &["generic", "gfx94X-dcgpu"], &[]),
        ["blas_lib_generic.tar.xz", "blas_lib_gfx94X-dcgpu.tar.zst"]
    );
    assert_eq!(
        choose(
            &["blas", "fft"],
            &["generic", "gfx942:xnack-"],
            &["test", "dbg"]
        ),
        [
            "blas_lib_generic.tar.xz",
            "blas_lib_gfx942.tar.zst",
            "blas_lib_gfx942:xnack+.tar.zst",
            "fft_lib_generic.tar.zst"
        ]
    );
    assert_eq!(
        choose(&["blas"], &["generic"], &[]),
        ["blas_lib_generic.tar.xz"]
    );
    // The xz twin is taken when it is the only one.
    let names: BTreeSet<&str> = ["x"].into_iter().collect();
    let available = vec!["x_lib_generic.tar.xz".to_owned()];
    assert_eq!(
        choose_files(
            &names,
            &["generic".to_owned()],
            &available,
            &BTreeSet::new()
        ),
        ["x_lib_generic.tar.xz"]
    );
}

#[test]
fn exclusion_lists() {
    assert_eq!(
        parse_excluded_components("test; dbg,").unwrap(),
        ["dbg", "test"].into_iter().map(str::to_owned).collect()
    );
    assert_eq!(
        parse_excluded_components("test,foo,bar")
            .unwrap_err()
            .to_string(),
        "Invalid artifact component(s): bar, foo. Valid components are: lib, run, dev, dbg, doc, test"
    );
    let topology: BuildTopology = str::parse(
        "[build_stages.s]\nartifact_groups = [\"g\"]\n[artifact_groups.g]\n\
         [artifacts.blas]\nartifact_group = \"g\"\n[artifacts.fft]\nartifact_group = \"g\"\n",
    )
    .unwrap();
    assert_eq!(
        parse_excluded_artifacts("blas,nope", &topology)
            .unwrap_err()
            .to_string(),
        "Invalid artifact name(s): nope. Valid artifacts are: blas, fft"
    );
    assert!(
        parse_excluded_artifacts(" fft ;", &topology)
            .unwrap()
            .contains("fft")
    );
    assert_eq!(base_target(":xnack+"), ":xnack+");
    assert_eq!(base_target("gfx942:foo"), "gfx942");
    assert_eq!(base_target(""), "");
}

#[test]
fn uncovered_artifacts_are_named() {
    let wanted: BTreeSet<&str> = ["blas", "fft", "rand"].into_iter().collect();
    let chosen = vec![
        "blas_lib_generic.tar.zst".to_owned(),
        "fft_dev_gfx942.tar.zst".to_owned(),
    ];
    assert_eq!(uncovered(&wanted, &chosen), ["rand"]);
}
