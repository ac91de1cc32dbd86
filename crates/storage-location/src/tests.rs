use super::*;

// Spec §18.1.
#[test]
fn reference_vectors() {
    let loc = StorageLocation::new("my-bucket", "12345-linux/file.tar.xz");
    assert_eq!(loc.s3_uri(), "s3://my-bucket/12345-linux/file.tar.xz");
    assert_eq!(
        loc.https_url(),
        "https://my-bucket.s3.amazonaws.com/12345-linux/file.tar.xz"
    );
    let log = StorageLocation::new("my-bucket", "12345-linux/logs/group/build.log");
    assert_eq!(
        log.local_path(Path::new("/tmp/staging")).unwrap(),
        PathBuf::from("/tmp/staging/12345-linux/logs/group/build.log")
    );
    // Immutability is structural: the fields are private and there are no setters.
    assert_eq!(loc.bucket(), "my-bucket");
    assert_eq!(loc.relative_path(), "12345-linux/file.tar.xz");
}

#[test]
fn https_url_encoding() {
    let cases = [
        ("a/b.tar.xz", "a/b.tar.xz"),
        (
            "python/rocm-7.14.0.dev0+13caf791.tar.gz",
            "python/rocm-7.14.0.dev0%2B13caf791.tar.gz",
        ),
        ("a b", "a%20b"),
        ("100%", "100%25"),
        ("q?x#y", "q%3Fx%23y"),
        ("gfx942:xnack+", "gfx942:xnack%2B"),
        ("caf\u{e9}", "caf%C3%A9"),
        ("tab\tnl\n", "tab%09nl%0A"),
        ("a&b", "a%26b"),
        ("~user/(1)", "~user/(1)"),
        ("", ""),
    ];
    for (key, encoded) in cases {
        let loc = StorageLocation::new("b", key);
        assert_eq!(
            loc.https_url(),
            format!("https://b.s3.amazonaws.com/{encoded}"),
            "key {key:?}"
        );
        // The s3 URI stays raw.
        assert_eq!(loc.s3_uri(), format!("s3://b/{key}"));
    }
}

#[test]
fn empty_key_renders_bucket_root() {
    let loc = StorageLocation::new("b", "");
    assert_eq!(loc.s3_uri(), "s3://b/");
    assert_eq!(loc.https_url(), "https://b.s3.amazonaws.com/");
    assert_eq!(
        loc.local_path(Path::new("/s")).unwrap(),
        PathBuf::from("/s")
    );
}

#[test]
fn local_path_stays_below_staging_dir() {
    let staging = Path::new("/s");
    let abs = StorageLocation::new("b", "/etc/passwd");
    assert_eq!(
        abs.local_path(staging).unwrap(),
        PathBuf::from("/s/etc/passwd")
    );
    let dots = StorageLocation::new("b", "a/./b//c");
    assert_eq!(dots.local_path(staging).unwrap(), PathBuf::from("/s/a/b/c"));
    let escape = StorageLocation::new("b", "a/../../etc");
    let err = escape.local_path(staging).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Key `a/../../etc` has a `..` component and would leave the staging directory"
    );
}

#[test]
fn join_and_equality() {
    let root = StorageLocation::new("b", "1-linux");
    assert_eq!(
        root.join("x.tar.xz"),
        StorageLocation::new("b", "1-linux/x.tar.xz")
    );
    assert_eq!(root.join("/x"), StorageLocation::new("b", "1-linux/x"));
    assert_eq!(
        StorageLocation::new("b", "").join("x"),
        StorageLocation::new("b", "x")
    );
    assert_ne!(
        StorageLocation::new("a", "k"),
        StorageLocation::new("b", "k")
    );
    assert_eq!(root.to_string(), "s3://b/1-linux");
}

#[test]
fn url_secrets_are_the_user_part_as_written_and_decoded() {
    assert_eq!(
        super::url_secrets("https://me:p%40ss@host:9000/x?y@z"),
        ["me:p%40ss", "p%40ss", "me:p@ss", "p@ss"]
    );
    assert_eq!(super::url_secrets("http://token@host/"), ["token", "token"]);
    assert!(super::url_secrets("https://host/a@b").is_empty());
    assert!(super::url_secrets("host:9000").is_empty());
    // A bad escape is kept as it is.
    assert_eq!(
        super::url_secrets("u:%zz@h"),
        ["u:%zz", "%zz", "u:%zz", "%zz"]
    );
}

#[test]
fn bucket_names_follow_s3_naming_rules() {
    use crate::check_bucket_name;
    for good in [
        "therock-ci-artifacts",
        "therock-ci-artifacts-external",
        "abc",
        "a.b-c.1",
        &"a".repeat(63),
        "1.2.3",
    ] {
        assert!(check_bucket_name(good).is_ok(), "{good}");
    }
    for (bad, rule) in [
        ("therock-ci-artifacts/evil", "only lowercase"),
        ("Bad_Bucket!", "only lowercase"),
        ("with space", "only lowercase"),
        ("", "3 to 63"),
        ("ab", "3 to 63"),
        (&"a".repeat(64), "3 to 63"),
        ("-abc", "begins and ends"),
        ("abc.", "begins and ends"),
        ("a..b", "two dots"),
        ("192.168.5.4", "IP address"),
        ("xn--abc", "reserved"),
        ("abc-s3alias", "reserved"),
    ] {
        let err = check_bucket_name(bad).unwrap_err();
        assert!(err.rule().contains(rule), "{bad}: {err}");
        assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
    }
}
