use super::*;

#[test]
fn nightly_dates() {
    assert_eq!(nightly_date("7.15.0a20260722"), Some((2026, 7, 22)));
    assert_eq!(nightly_date("7.15.0a20240229"), Some((2024, 2, 29)));
    // Impossible dates sort as undated instead of aborting the search.
    assert_eq!(nightly_date("7.15.0a20261340"), None);
    assert_eq!(nightly_date("7.15.0a20250229"), None);
    assert_eq!(nightly_date("7.15.0"), None);
}

#[test]
fn release_tarballs_are_named_by_platform_group_and_version() {
    let mut out = Vec::new();
    let t = for_release(
        Platform::Linux,
        "gfx94X-dcgpu",
        "7.15.0.dev0+deadbeef",
        &mut out,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Retrieving dev multi-arch artifacts from s3://therock-dev-tarball/v4/tarball/\n"
    );
    assert_eq!(
        t.location().s3_uri(),
        "s3://therock-dev-tarball/v4/tarball/therock-dist-linux-gfx94X-dcgpu-7.15.0.dev0+deadbeef.tar.gz"
    );
    let err = for_release(Platform::Linux, "g", "7.15.0", &mut Vec::new()).unwrap_err();
    assert!(matches!(err, Error::NotARelease(_)), "{err:?}");
}
