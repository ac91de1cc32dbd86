use super::problem;

#[test]
fn names_windows_cannot_hold_are_explained() {
    for (name, why) in [
        ("a:b", "holds `:`"),
        ("what?", "holds `?`"),
        ("x*y", "holds `*`"),
        ("back\\slash", "holds `\\`"),
        ("pipe|d", "holds `|`"),
        ("quote\"d", "holds `\"`"),
        ("<tag>", "holds `<`"),
        ("tab\there", "control character 0x09"),
        ("trailing.", "ends with a dot or a space"),
        ("trailing ", "ends with a dot or a space"),
        ("CON", "reserved device name `CON`"),
        ("nul", "reserved device name `nul`"),
        ("Aux.h", "reserved device name `Aux`"),
        ("prn.tar.gz", "reserved device name `prn`"),
        ("COM1", "reserved device name `COM1`"),
        ("lpt9.log", "reserved device name `lpt9`"),
        ("COM¹", "reserved device name `COM¹`"),
        ("CON .txt", "reserved device name `CON`"),
        ("conin$", "reserved device name `conin$`"),
    ] {
        let got = problem(name).unwrap_or_else(|| panic!("`{name}` was accepted"));
        assert!(got.contains(why), "{name}: {got}");
        assert!(got.contains(&format!("`{name}`")), "{name}: {got}");
    }
}

#[test]
fn ordinary_names_pass() {
    for name in [
        "libamdhip64.so.7",
        "CONTRIBUTING.md",
        "console.h",
        "COM10",
        "COM0",
        "lpt",
        "nul_test.cpp",
        ".hidden",
        "gfx942:xnack+".replace(':', "_").as_str(),
        "naïve.txt",
        "a b",
    ] {
        assert_eq!(problem(name), None, "{name}");
    }
}
