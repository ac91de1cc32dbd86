use super::*;

#[test]
fn tarball_names() {
    let cases = [
        (
            "therock-dist-linux-gfx94X-dcgpu-7.15.0a20260722.tar.gz",
            Some(("linux", "gfx94X-dcgpu", "7.15.0a20260722")),
        ),
        (
            "therock-dist-windows-gfx110X-all-7.15.0rc20260722.tar.gz",
            Some(("windows", "gfx110X-all", "7.15.0rc20260722")),
        ),
        (
            "therock-dist-linux-gfx90a-7.15.0.dev0+deadbeef.tar.gz",
            Some(("linux", "gfx90a", "7.15.0.dev0+deadbeef")),
        ),
        (
            "therock-dist-windows-multiarch-7.15.0.tar.gz",
            Some(("windows", "multiarch", "7.15.0")),
        ),
        ("therock-dist-linux-gfx94X-dcgpu-not-a-version.tar.gz", None),
    ];
    for (name, expected) in cases {
        assert_eq!(parse_tarball_name(name), expected, "{name}");
    }
    assert_eq!(
        tarball_name("linux", "gfx94X-dcgpu", "7.15.0a20260722"),
        "therock-dist-linux-gfx94X-dcgpu-7.15.0a20260722.tar.gz"
    );
    let loc = tarball_location("therock-dev-tarball", "x.tar.gz");
    assert_eq!(loc.s3_uri(), "s3://therock-dev-tarball/v4/tarball/x.tar.gz");
    assert_eq!(tarball_name_of_key(loc.relative_path()), Some("x.tar.gz"));
    assert_eq!(tarball_name_of_key("v4/tarballx"), None);
    assert_eq!(
        tarball_listing_prefix("linux"),
        "v4/tarball/therock-dist-linux-"
    );
}

#[test]
fn release_kinds_and_dates() {
    assert_eq!(
        ReleaseKind::of_version("7.15.0a20260722"),
        Some(ReleaseKind::Nightly)
    );
    assert_eq!(
        ReleaseKind::of_version("6.4.0rc20250416"),
        Some(ReleaseKind::Nightly)
    );
    assert_eq!(
        ReleaseKind::of_version("7.15.0.dev0+deadbeef"),
        Some(ReleaseKind::Dev)
    );
    for bad in [
        "7.15.0",
        "7.15.0a2026072",
        "x7.15.0a20260722",
        "7.15.0.dev0+XYZ",
        "",
    ] {
        assert_eq!(ReleaseKind::of_version(bad), None, "{bad}");
    }
    assert_eq!(
        ReleaseKind::Nightly.bucket().name(),
        "therock-nightly-tarball"
    );
    assert_eq!(ReleaseKind::Dev.bucket().name(), "therock-dev-tarball");
    assert_eq!(nightly_date_digits("7.15.0a20260722"), Some("20260722"));
    assert_eq!(nightly_date_digits("7.15.0rc20261340"), Some("20261340"));
    assert_eq!(nightly_date_digits("7.15.0"), None);
}
