use super::{default_version, parse_family_list};

#[test]
fn lists_parse_as_the_reference() {
    assert_eq!(
        parse_family_list("gfx94X-dcgpu;gfx110X-all").unwrap(),
        ["gfx94X-dcgpu", "gfx110X-all"]
    );
    assert_eq!(parse_family_list(" ; , "), None);
    assert_eq!(parse_family_list("a,,b;").unwrap(), ["a", "b"]);
}

#[test]
fn default_version_from_version_json() {
    let ok = r#"{"rocm-version": "10.2.0", "release-metadata": {"base-date": ""}}"#;
    assert_eq!(default_version(ok).unwrap(), "10.2.0.dev0");
    assert_eq!(
        default_version(
            r#"{"rocm-version": "7.1.0", "release-metadata": {"base-date": "20240229"}}"#
        )
        .unwrap(),
        "7.1.0.dev0"
    );
    for bad in [
        "{}",
        r#"{"rocm-version": ""}"#,
        r#"{"rocm-version": 7}"#,
        r#"{"rocm-version": "7", "release-metadata": []}"#,
        r#"{"rocm-version": "7", "release-metadata": {"base-date": "20230229"}}"#,
        r#"{"rocm-version": "7", "release-metadata": {"base-date": "2024-1-1"}}"#,
    ] {
        assert!(default_version(bad).is_err(), "{bad}");
    }
    assert_eq!(
        default_version("{}").unwrap_err().to_string(),
        "rocm-version must be set in version.json"
    );
}
