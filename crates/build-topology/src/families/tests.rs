use super::FamilyMap;

const CMAKE: &str = r#"
# A comment with therock_add_amdgpu_target(ignored) inside is still a call in the reference.
therock_add_amdgpu_target(gfx908 "MI100" FAMILY dcgpu-all gfx90X-all gfx90X-dcgpu
  EXCLUDE_TARGET_PROJECTS hipBLASLt)
therock_add_amdgpu_target(gfx90a "MI210/250" FAMILY dcgpu-all gfx90X-all gfx90X-dcgpu)
therock_add_amdgpu_target(gfx942 "MI300A/MI300X" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)
therock_add_amdgpu_target(gfx950 "MI355X" FAMILY dcgpu-all gfx950-all gfx950-dcgpu)
therock_add_amdgpu_target(gfx1100 "AMD RX 7900 XTX" FAMILY dgpu-all gfx110X-all gfx110X-dgpu)
therock_add_amdgpu_target(gfx1101 "AMD RX 7800 XT" FAMILY dgpu-all gfx110X-all # trailing
  gfx110X-dgpu)
therock_add_amdgpu_target(gfx1102 "AMD RX 7700S" FAMILY dgpu-all gfx110X-all gfx110X-dgpu)
therock_add_amdgpu_target(gfx1103 "AMD Radeon 780M" FAMILY igpu-all gfx110X-all gfx110X-igpu)
therock_add_amdgpu_target(gfx1200 "AMD RX 9060" FAMILY dgpu-all gfx120X-all)
therock_add_amdgpu_target(gfx1201 "AMD RX 9070" FAMILY dgpu-all gfx120X-all)
"#;

#[test]
fn families_expand_to_targets() {
    let map = FamilyMap::parse(CMAKE);
    let expand = |f: &[&str]| {
        map.expand(&f.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
            .unwrap()
    };
    assert_eq!(expand(&["gfx94X-dcgpu"]), ["gfx942"]);
    assert_eq!(
        expand(&["gfx110X-all"]),
        ["gfx1100", "gfx1101", "gfx1102", "gfx1103"]
    );
    assert_eq!(expand(&["gfx120X-all"]), ["gfx1200", "gfx1201"]);
    assert_eq!(
        expand(&["dcgpu-all"]),
        ["gfx908", "gfx90a", "gfx942", "gfx950"]
    );
    assert_eq!(expand(&["gfx942"]), ["gfx942"]);
    assert_eq!(
        expand(&["gfx942", "gfx94X-dcgpu", "gfx1100"]),
        ["gfx942", "gfx1100"]
    );
    let err = map.expand(&["nope".to_owned()]).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "Unknown AMD GPU families: ['nope']. Known families: dcgpu-all, dgpu-all, gfx1100,"
        ),
        "{err}"
    );
    assert!(!err.contains("hipBLASLt"));
}

#[test]
fn variant_groups_stand_for_their_family() {
    let map = FamilyMap::parse(CMAKE);
    assert_eq!(map.family_of_group("gfx94X-dcgpu"), Some("gfx94X-dcgpu"));
    assert_eq!(
        map.family_of_group("gfx94X-dcgpu-asan"),
        Some("gfx94X-dcgpu")
    );
    assert_eq!(
        map.family_of_group("gfx110X-all-host-asan"),
        Some("gfx110X-all")
    );
    assert_eq!(map.family_of_group("gfx942-tsan"), Some("gfx942"));
    // No family before a dash: not a variant of anything.
    assert_eq!(map.family_of_group("gfx94X-dcgpuasan"), None);
    assert_eq!(map.family_of_group("gfx94X-dcgpu-"), None);
    assert_eq!(map.family_of_group("multi-arch-release"), None);
}
