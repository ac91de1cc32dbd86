use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{BuildOptions, check_kpack_completeness, check_required_dist, is_kpack};

/// Options with `targets` as the kpack targets of this platform (Linux's, or Windows').
fn opts(targets: Option<&[&str]>) -> BuildOptions {
    let targets: Option<Vec<String>> = targets.map(|l| l.iter().map(|s| (*s).to_owned()).collect());
    let (linux_targets, windows_targets) = if cfg!(windows) {
        (None, targets)
    } else {
        (targets, None)
    };
    // The defaults of `BuildOptions::new`, with the targets and the epoch fixed.
    let mut options = BuildOptions::new("/ART", "/DEST", PathBuf::new(), "0.0.1.test");
    options.linux_targets = linux_targets;
    options.windows_targets = windows_targets;
    options.source_date_epoch = 0;
    options
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn kpack_completeness_of_spec_15_12() {
    let mut out = Vec::new();
    check_kpack_completeness(
        &opts(Some(&["gfx1100", "gfx1101"])),
        &set(&["gfx1100", "gfx1101"]),
        &mut out,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "::: KPACK_SPLIT_ARTIFACTS expected device targets: gfx1100, gfx1101\n::: KPACK_SPLIT_ARTIFACTS discovered artifact targets: gfx1100, gfx1101\n"
    );
    let err = check_kpack_completeness(
        &opts(Some(&["gfx1100", "gfx1101"])),
        &set(&["gfx1100"]),
        &mut Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "KPACK_SPLIT_ARTIFACTS target completeness check failed: missing fetched artifact targets: gfx1101. Expected targets: gfx1100, gfx1101. Discovered artifact targets in /ART: gfx1100. The fetched/extracted artifact catalog is incomplete; refusing to build a partial device wheel set."
    );
    let mut out = Vec::new();
    check_kpack_completeness(&opts(None), &set(&[]), &mut out).unwrap();
    assert!(out.is_empty(), "no list for this host: skipped");
}

/// With both platforms' lists given, the host's is checked and the other one is left out, as
/// the reference picks by `sys.platform`: on Windows the Windows families, elsewhere Linux's.
#[test]
fn kpack_completeness_checks_the_hosts_families_only() {
    let mut both = opts(None);
    both.linux_targets = Some(vec!["gfx942".to_owned()]);
    both.windows_targets = Some(vec!["gfx1151".to_owned()]);
    let (host, other) = if cfg!(windows) {
        ("gfx1151", "gfx942")
    } else {
        ("gfx942", "gfx1151")
    };
    let mut out = Vec::new();
    check_kpack_completeness(&both, &set(&[host]), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "::: KPACK_SPLIT_ARTIFACTS expected device targets: {host}\n::: KPACK_SPLIT_ARTIFACTS discovered artifact targets: {host}\n"
        )
    );
    let err = check_kpack_completeness(&both, &set(&[other]), &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("missing fetched artifact targets: {host}.")),
        "{err}"
    );
}

fn dist(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        fs_err::write(dir.path().join(f), "x").unwrap();
    }
    dir
}

#[test]
fn required_dist_of_spec_15_12() {
    let full = [
        "rocm-0.0.1.test.tar.gz",
        "rocm_sdk_core-0.0.1.test-py3-none-linux_x86_64.whl",
        "rocm_sdk_libraries-0.0.1.test-py3-none-linux_x86_64.whl",
        "rocm_sdk_device_gfx1100-0.0.1.test-py3-none-linux_x86_64.whl",
    ];
    let targets = vec!["gfx1100".to_owned()];
    let check = |files: &[&str], has_dev: bool| {
        let d = dist(files);
        check_required_dist(d.path(), "0.0.1.test", Some(&targets), has_dev)
            .map_err(|e| e.to_string())
    };
    check(&full, false).unwrap();
    assert!(
        check(&full[1..], false)
            .unwrap_err()
            .contains("rocm-0.0.1.test.tar.gz")
    );
    assert!(
        check(&full[..3], false)
            .unwrap_err()
            .contains("rocm_sdk_device_gfx1100")
    );
    assert!(check(&full, true).unwrap_err().contains("rocm_sdk_devel"));
    let d = dist(&full[1..2]);
    let err = check_required_dist(d.path(), "0.0.1.test", Some(&targets), true)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "Required kpack-split Python packages are missing from {}: rocm-0.0.1.test.tar.gz, rocm_sdk_libraries-0.0.1.test-*.whl, rocm_sdk_device_gfx1100-0.0.1.test-*.whl, rocm_sdk_devel-0.0.1.test-*.whl. Present files: rocm_sdk_core-0.0.1.test-py3-none-linux_x86_64.whl. Refusing to publish an incomplete Python package set.",
            d.path().display()
        )
    );
}

#[test]
fn manifest_flag_and_its_absence() {
    let err = is_kpack(Path::new("/ART")).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "therock_manifest.json not found at {}. Is base_lib_generic present in /ART?",
            Path::new("/ART")
                .join(
                    [
                        "base_lib_generic",
                        "base",
                        "aux-overlay",
                        "stage",
                        "share",
                        "therock",
                        "therock_manifest.json"
                    ]
                    .iter()
                    .collect::<std::path::PathBuf>()
                )
                .display()
        )
    );
    let dir = tempfile::tempdir().unwrap();
    let path = super::manifest_path(dir.path());
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    for (text, want) in [
        (r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": true}}"#, true),
        (r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": 0}}"#, false),
        (r#"{"flags": {}}"#, false),
        ("{}", false),
    ] {
        fs_err::write(&path, text).unwrap();
        assert_eq!(is_kpack(dir.path()).unwrap(), want, "{text}");
    }
}
