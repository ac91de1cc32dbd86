#![cfg_attr(
    windows,
    expect(dead_code, reason = "used by the tests that run on Unix only")
)]

use super::Parameters;
use crate::names::{Logical, Naming};

fn params(disk: &[&str], linux: Option<&[&str]>, windows: Option<&[&str]>) -> Parameters {
    let list = |l: Option<&[&str]>| l.map(|l| l.iter().map(|s| (*s).to_owned()).collect());
    Parameters {
        version: "0.0.1.test".into(),
        naming: Naming::default(),
        all_target_families: disk.iter().map(|s| (*s).to_owned()).collect(),
        linux_targets: list(linux),
        windows_targets: list(windows),
    }
}

#[test]
fn target_family_views_of_spec_15_5() {
    let p = params(&["gfx942", "gfx1100"], None, None);
    assert_eq!(p.available_target_families(), ["gfx1100", "gfx942"]);
    assert_eq!(p.default_target_family().as_deref(), Some("gfx1100"));
    assert!(p.linux_list().is_empty() && p.windows_list().is_empty());
    let p = params(&[], None, None);
    assert!(p.available_target_families().is_empty());
    assert_eq!(p.default_target_family(), None);
    let p = params(
        &[],
        Some(&["gfx942", "gfx950", "gfx1100"]),
        Some(&["gfx1100", "gfx1102"]),
    );
    assert_eq!(
        p.available_target_families(),
        ["gfx1100", "gfx1102", "gfx942", "gfx950"]
    );
    assert_eq!(p.default_target_family().as_deref(), Some("gfx1100"));
    let p = params(&["gfx942"], Some(&["gfx1100"]), Some(&["gfx1100"]));
    assert_eq!(p.available_target_families(), ["gfx1100"]);
    let p = params(
        &[],
        Some(&["gfx950", "gfx942", "gfx942"]),
        Some(&["gfx1100"]),
    );
    assert_eq!(
        (p.linux_list(), p.windows_list()),
        (
            vec!["gfx942".into(), "gfx950".into()],
            vec!["gfx1100".into()]
        )
    );
    let p = params(&[], Some(&["gfx942", "gfx950"]), None);
    assert_eq!(p.available_target_families(), ["gfx942", "gfx950"]);
    assert_eq!(p.default_target_family().as_deref(), Some("gfx942"));
    for (linux, windows, want) in [
        (&["gfx900", "gfx942"][..], &["gfx942"][..], "gfx942"),
        (
            &["gfx942", "gfx1100", "gfx1200"][..],
            &["gfx1200", "gfx1100"][..],
            "gfx1100",
        ),
        (&["gfx942"][..], &["gfx1100"][..], "gfx1100"),
    ] {
        let p = params(&[], Some(linux), Some(windows));
        assert_eq!(
            p.default_target_family().as_deref(),
            Some(want),
            "{linux:?} {windows:?}"
        );
    }
    let p = params(&[], None, Some(&["gfx1200", "gfx1100"]));
    assert_eq!(p.default_target_family().as_deref(), Some("gfx1100"));
    // Same CLI lists, different catalogs: identical files.
    let a = params(&["gfx942"], Some(&["gfx1100"]), Some(&["gfx1100"]));
    let b = params(
        &["gfx90a", "gfx950"],
        Some(&["gfx1100"]),
        Some(&["gfx1100"]),
    );
    assert_eq!(
        a.dist_info_contents("T\n", Logical::Meta, None, false)
            .unwrap(),
        b.dist_info_contents("T\n", Logical::Meta, None, false)
            .unwrap()
    );
}

/// A stand-in for the template's definitions, enough to execute the generated lines.
const TEMPLATE: &str = "class E:\n    def __init__(self, t): self.dist_package_template = t\n\
ALL_PACKAGES = {k: E(k) for k in ['meta', 'core', 'libraries', 'device', 'devel', 'profiler']}\n\
__version__ = 'DEFAULT'\nPY_PACKAGE_SUFFIX_NONCE = '_DEFAULT'\nDEFAULT_TARGET_FAMILY = 'DEFAULT'\n\
AVAILABLE_TARGET_FAMILIES = []\nLINUX_TARGET_FAMILIES = []\nWINDOWS_TARGET_FAMILIES = []\n\
SENTINEL = {}\n";

// Runs python3, which the Windows test machine (Wine) has none of.
#[cfg(unix)]
#[test]
fn generated_files_execute_to_the_same_values_and_hostile_text_stays_data() {
    let hostile_nonce = "'; SENTINEL['pwned'] = True; x = '";
    let hostile_target = "gfx942');SENTINEL['pwned']=True;x=('";
    let mut p = params(&[hostile_target, "gfx1100"], None, None);
    p.naming = Naming {
        nonce: hostile_nonce.into(),
        kpack: true,
    };
    p.version = "7.0.0\n#\"'\\".into();
    let text = p
        .dist_info_contents(TEMPLATE, Logical::Device, Some(hostile_target), false)
        .unwrap();
    let script = format!(
        "{text}import json\nprint(json.dumps([__version__, PY_PACKAGE_SUFFIX_NONCE, DEFAULT_TARGET_FAMILY, \
             AVAILABLE_TARGET_FAMILIES, THIS_TARGET_FAMILY, LIBRARIES_PY_PACKAGE_NAME, \
             ALL_PACKAGES['libraries'].dist_package_template, 'pwned' in SENTINEL]))\n"
    );
    let out = rock_ci_test_support::python(&script, &[]);
    let got: serde_json::Value = serde_json::from_str(&out).unwrap();
    let want = serde_json::json!([
        p.version,
        hostile_nonce,
        p.default_target_family(),
        p.available_target_families(),
        hostile_target,
        format!("_rocm_sdk_libraries{hostile_nonce}"),
        "rocm-sdk-libraries",
        false
    ]);
    assert_eq!(got, want);
}

#[test]
fn dist_info_tails_of_spec_15_6() {
    let mut p = params(&["gfx942", "gfx1100"], None, None);
    p.version = "7.10.0.dev0".into();
    p.naming.kpack = true;
    let device = p
        .dist_info_contents("TEMPLATE\n", Logical::Device, Some("gfx942"), false)
        .unwrap();
    assert_eq!(
        device,
        "TEMPLATE\n__version__ = '7.10.0.dev0'\nPY_PACKAGE_SUFFIX_NONCE = ''\n\
             ALL_PACKAGES[\"libraries\"].dist_package_template = \"rocm-sdk-libraries\"\n\
             DEFAULT_TARGET_FAMILY = 'gfx1100'\nAVAILABLE_TARGET_FAMILIES.append('gfx1100')\n\
             AVAILABLE_TARGET_FAMILIES.append('gfx942')\nTHIS_TARGET_FAMILY = 'gfx942'\n\
             THIS_PACKAGE_ENTRY = ALL_PACKAGES['device']\n\
             LIBRARIES_PY_PACKAGE_NAME = '_rocm_sdk_libraries'\n"
    );
    let meta = p
        .dist_info_contents("TEMPLATE\n", Logical::Meta, None, false)
        .unwrap();
    assert!(meta.ends_with(
            "AVAILABLE_TARGET_FAMILIES.append('gfx942')\nTHIS_TARGET_FAMILY = None\nTHIS_PACKAGE_ENTRY = ALL_PACKAGES['meta']\n"
        ));

    let mut p = params(
        &[],
        Some(&["gfx942", "gfx1100", "gfx950"]),
        Some(&["gfx1100", "gfx1102"]),
    );
    p.version = "7.0.0".into();
    p.naming = Naming {
        nonce: "rc1".into(),
        kpack: true,
    };
    let meta = p
        .dist_info_contents("", Logical::Meta, None, false)
        .unwrap();
    assert!(meta.starts_with(
            "__version__ = '7.0.0'\nPY_PACKAGE_SUFFIX_NONCE = 'rc1'\n\
             ALL_PACKAGES[\"libraries\"].dist_package_template = \"rocm-sdk-libraries\"\n\
             DEFAULT_TARGET_FAMILY = 'gfx1100'\n\
             AVAILABLE_TARGET_FAMILIES.append('gfx1100')\nAVAILABLE_TARGET_FAMILIES.append('gfx1102')\n\
             AVAILABLE_TARGET_FAMILIES.append('gfx942')\nAVAILABLE_TARGET_FAMILIES.append('gfx950')\n\
             LINUX_TARGET_FAMILIES.append('gfx1100')\nLINUX_TARGET_FAMILIES.append('gfx942')\n\
             LINUX_TARGET_FAMILIES.append('gfx950')\n\
             WINDOWS_TARGET_FAMILIES.append('gfx1100')\nWINDOWS_TARGET_FAMILIES.append('gfx1102')\n"
        ), "{meta}");

    let p = params(&["gfx120X-all", "gfx94X-dcgpu"], None, None);
    let restricted = p
        .dist_info_contents("", Logical::Meta, Some("gfx120X-all"), true)
        .unwrap();
    assert_eq!(
        restricted,
        "__version__ = '0.0.1.test'\nPY_PACKAGE_SUFFIX_NONCE = ''\n\
             THIS_TARGET_FAMILY = 'gfx120X-all'\nTHIS_PACKAGE_ENTRY = ALL_PACKAGES['meta']\n\
             DEFAULT_TARGET_FAMILY = 'gfx120X-all'\nAVAILABLE_TARGET_FAMILIES.append('gfx120X-all')\n"
    );
    let unrestricted = p.dist_info_contents("", Logical::Meta, None, true).unwrap();
    assert!(unrestricted.contains("gfx94X-dcgpu") && unrestricted.contains("gfx120X-all"));
    let devel = p
        .dist_info_contents("", Logical::Devel, Some("gfx94X-dcgpu"), false)
        .unwrap();
    assert!(devel.ends_with(
        "THIS_TARGET_FAMILY = 'gfx94X-dcgpu'\nTHIS_PACKAGE_ENTRY = ALL_PACKAGES['devel']\n"
    ));
}
