use super::*;

#[test]
fn versions_compare_normalized() {
    let same = [
        ("1.0", "1.0.0"),
        ("1", "1.0"),
        ("1.0rc1", "1.0-RC.1"),
        ("1.0a", "1.0alpha0"),
        ("1.0c2", "1.0rc2"),
        ("1.0.post1", "1.0-1"),
        ("1.0-r", "1.0post0"),
        ("1.0.dev", "1.0dev0"),
        ("0!1.0", "v1.0"),
        ("7.14.0.dev0+13caf791", "7.14.dev0+13CAF791"),
        ("1.0+ubuntu-1", "1.0+ubuntu.01"),
        ("01.002", "1.2"),
    ];
    for (a, b) in same {
        assert_eq!(Version::parse(a), Version::parse(b), "{a} {b}");
        assert!(Version::parse(a).is_some(), "{a}");
    }
    for (a, b) in [
        ("1.0", "1.0.1"),
        ("1.0rc1", "1.0"),
        ("1.0", "1.0.post0"),
        ("1!1.0", "1.0"),
        ("1.0+a", "1.0"),
        ("1.0.dev1", "1.0.dev2"),
    ] {
        assert_ne!(Version::parse(a), Version::parse(b), "{a} {b}");
    }
    for bad in ["", "x", "1.0-", "1..0", "1.0+", "1.0+a..b", "1.0 beta 1 2"] {
        assert_eq!(Version::parse(bad), None, "{bad}");
    }
}

#[test]
fn file_names() {
    for good in [
        "rocm_sdk_core-7.2.0-py3-none-linux_x86_64.whl",
        "torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl",
        "Demo_Pkg-1.0rc1-1abc-py3-none-any.whl",
        "a.b-1-py2.py3-none-any.whl",
    ] {
        assert!(parse_file_name(good).is_ok(), "{good}");
    }
    for (bad, why) in [
        ("garbage.whl", "1 `-`-separated parts"),
        ("a-1.0-x-py3-none-any-y.whl", "7 `-`-separated parts"),
        ("a-1.0--none-any.whl", "part 3 is empty"),
        ("a__b-1.0-py3-none-any.whl", "`a__b`"),
        ("a+b-1.0-py3-none-any.whl", "`a+b`"),
        ("a-one-py3-none-any.whl", "`one` is not a PEP 440 version"),
        ("a-1.0-x1-py3-none-any.whl", "build tag `x1`"),
        ("a-1.0-py3-none-any.zip", "`.whl`"),
    ] {
        let err = parse_file_name(bad).unwrap_err().to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn metadata_headers() {
    assert_eq!(
        metadata_fields(
            "Metadata-Version: 2.1\nname:  Foo.Bar \nVersion: 1.0\nName: other\n\nName: body\n"
        ),
        (Some("Foo.Bar".into()), Some("1.0".into()))
    );
    assert_eq!(
        metadata_fields("Metadata-Version: 2.1\n\nName: x\n"),
        (None, None)
    );
}
