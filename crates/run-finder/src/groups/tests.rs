//! The `check_if_artifacts_exist` vectors of spec §12.3.

use regex::Regex;

use super::{GroupMatch, select_group, unique_groups};

/// A family table in the cmake file's syntax, parsed by the real parser.
const CMAKE: &str = r#"
therock_add_amdgpu_target(gfx942 "MI300A/MI300X CDNA" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)
therock_add_amdgpu_target(gfx950 "MI355X CDNA" FAMILY dcgpu-all gfx950-all gfx950-dcgpu)
therock_add_amdgpu_target(gfx1100 "AMD RX 7900 XTX" FAMILY igpu-all gfx110X-all gfx110X-dgpu)
therock_add_amdgpu_target(gfx1201 "AMD RX 9070" FAMILY dgpu-all gfx120X-all)
"#;

fn check(files: &[&str], group: &str, targets: &[&str], required: &[&str]) -> GroupMatch {
    let map = build_topology::FamilyMap::parse(CMAKE);
    let files: Vec<String> = files.iter().map(|s| (*s).to_owned()).collect();
    let targets: Vec<String> = targets.iter().map(|s| (*s).to_owned()).collect();
    let required: Vec<Regex> = required.iter().map(|r| Regex::new(r).unwrap()).collect();
    select_group(&files, group, map.targets_of(group), &targets, &required)
}

fn names(m: &GroupMatch) -> Vec<&str> {
    m.artifact_filenames.iter().map(String::as_str).collect()
}

#[test]
fn spec_vectors() {
    let m = check(
        &[
            "base_lib_generic.tar.zst",
            "rocblas_lib_gfx94X-dcgpu.tar.zst",
        ],
        "gfx94X-dcgpu",
        &[],
        &[],
    );
    assert!(m.is_present());
    assert_eq!(
        names(&m),
        [
            "base_lib_generic.tar.zst",
            "rocblas_lib_gfx94X-dcgpu.tar.zst"
        ]
    );

    let m = check(&["base_lib_generic.tar.zst"], "gfx94X-dcgpu", &[], &[]);
    assert!(!m.is_present());
    assert!(m.artifact_filenames.is_empty());

    let m = check(
        &[
            "base_lib_generic.tar.zst",
            "rocblas_lib_gfx942:xnack+.tar.zst",
        ],
        "gfx94X-dcgpu",
        &["gfx942"],
        &[],
    );
    assert!(m.is_present());
    assert!(names(&m).contains(&"rocblas_lib_gfx942:xnack+.tar.zst"));

    let llvm = r"^amd-llvm_.*_generic\.tar\.(zst|xz)$";
    let m = check(
        &[
            "base_lib_generic.tar.zst",
            "rocblas_lib_gfx94X-dcgpu.tar.zst",
        ],
        "gfx94X-dcgpu",
        &[],
        &[llvm],
    );
    assert!(!m.is_present());
    assert_eq!(m.missing_patterns, [llvm]);

    // Family expansion: gfx94X-dcgpu holds gfx942.
    let m = check(
        &["base_lib_generic.tar.zst", "rocblas_lib_gfx942.tar.zst"],
        "gfx94X-dcgpu",
        &[],
        &[],
    );
    assert!(m.is_present());
    assert_eq!(
        names(&m),
        ["base_lib_generic.tar.zst", "rocblas_lib_gfx942.tar.zst"]
    );

    let m = check(
        &[
            "base_lib_generic.tar.xz",
            "rocblas_lib_gfx950-dcgpu-asan.tar.xz",
        ],
        "gfx950-dcgpu-asan",
        &[],
        &[],
    );
    assert!(m.is_present());
    assert_eq!(m.artifact_filenames.len(), 2);

    let m = check(
        &[
            "base_lib_generic.tar.zst",
            "blas_lib_gfx942.tar.zst",
            "blas_lib_gfx1100.tar.zst",
            "README",
        ],
        "gfx94X-dcgpu",
        &["gfx942"],
        &["^amd-llvm_"],
    );
    assert!(!m.is_present());
    assert_eq!(
        names(&m),
        ["base_lib_generic.tar.zst", "blas_lib_gfx942.tar.zst"]
    );
    assert_eq!(m.missing_patterns, ["^amd-llvm_"]);
}

#[test]
fn matching_is_case_insensitive_by_base_architecture() {
    // Both sides lowercased; the variant after `:` is ignored on both sides.
    let m = check(
        &["blas_lib_GFX942.tar.zst", "base_lib_Generic.tar.zst"],
        "gfx94X-dcgpu",
        &[],
        &[],
    );
    assert_eq!(
        names(&m),
        ["base_lib_Generic.tar.zst", "blas_lib_GFX942.tar.zst"]
    );
    let m = check(
        &["blas_lib_gfx942.tar.zst"],
        "other",
        &["gfx942:xnack-"],
        &[],
    );
    assert!(m.is_present());
    // Another family's archive is not taken.
    let m = check(&["blas_lib_gfx1100.tar.zst"], "gfx94X-dcgpu", &[], &[]);
    assert!(!m.is_present());
    // The generic group needs no target-specific archive.
    let m = check(&["base_lib_generic.tar.zst"], "GENERIC", &[], &[]);
    assert!(m.is_present());
    // An unknown family expands to nothing (non-strict) but still matches its own name.
    let m = check(&["blas_lib_gfx9999.tar.zst"], "gfx9999", &[], &[]);
    assert!(m.is_present());
}

#[test]
fn groups_are_deduplicated_in_first_seen_order() {
    let groups: Vec<String> = ["b", "a", "b", "c", "a"].map(str::to_owned).to_vec();
    assert_eq!(unique_groups(&groups), ["b", "a", "c"]);
}
