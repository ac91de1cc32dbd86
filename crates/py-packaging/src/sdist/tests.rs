use super::{is_text_member, release};

#[test]
fn release_numbers() {
    assert_eq!(release("77.0.1"), [77, 0, 1]);
    assert_eq!(release("80.9.0.post1"), [80, 9, 0]);
    assert_eq!(release("80.0rc1"), [80, 0]);
    assert!(release("").is_empty());
}

#[test]
fn text_members_of_spec_15_14() {
    for (name, want) in [
        ("rocm-1.0/PKG-INFO", true),
        ("rocm-1.0/src/rocm.egg-info/PKG-INFO", true),
        ("rocm-1.0/setup.cfg", true),
        ("rocm-1.0/README.MD", true),
        ("rocm-1.0/MANIFEST.in", true),
        ("rocm-1.0/requires.TXT", true),
        ("rocm-1.0/src/rocm_sdk/_devel.py", true),
        ("rocm-1.0/LICENSE", false),
        ("rocm-1.0/x.tar", false),
        ("rocm-1.0/.gitignore", false),
    ] {
        assert_eq!(is_text_member(name), want, "{name}");
    }
}
