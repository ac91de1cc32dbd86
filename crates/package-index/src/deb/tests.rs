use super::*;

#[test]
fn stanza_in_dpkg_order() {
    let control = "Package: amdrocm-foo\nVersion: 1.0\nDescription: Foo\n long text\n .\n more\nX-Custom: y\nDepends: libc6\nArchitecture: amd64\nmaintainer: Me <me@example.com>\n";
    let d = Digests::of(b"abc");
    let s = stanza(control, "pool/main/f.deb", &d).unwrap();
    assert_eq!(
        s,
        format!(
            "Package: amdrocm-foo\nVersion: 1.0\nArchitecture: amd64\nMaintainer: Me <me@example.com>\nDepends: libc6\nFilename: pool/main/f.deb\nSize: 3\nMD5sum: 900150983cd24fb0d6963f7d28e17f72\nSHA1: a9993e364706816aba3e25717850c26c9cd0d89d\nSHA256: {}\nDescription: Foo\n long text\n .\n more\nX-Custom: y",
            d.sha256
        )
    );
    assert!(stanza("Version: 1\n", "x", &d).is_err());
    for (missing, control) in [
        ("Version", "Package: a\nArchitecture: amd64\n"),
        ("Architecture", "Package: a\nVersion: 1\n"),
        ("Version", "Package: a\nVersion:\nArchitecture: amd64\n"),
    ] {
        assert_eq!(
            stanza(control, "x", &d).unwrap_err().to_string(),
            format!("the control file has no `{missing}` field")
        );
    }
    assert_eq!(stanza_sha256(&s), Some(d.sha256.clone()));
    assert_eq!(stanza_sha256("Package: a\nSHA1: x\n"), None);
}

#[test]
fn packages_round_trip_and_merge() {
    let text =
        "Package: a\nFilename: pool/main/b.deb  \n\n\nPackage: c\nFilename: pool/main/a.deb\n";
    let map = parse_packages(text).unwrap();
    assert_eq!(
        map.keys().collect::<Vec<_>>(),
        ["pool/main/a.deb", "pool/main/b.deb"]
    );
    assert_eq!(
        packages_text(&map),
        "Package: c\nFilename: pool/main/a.deb\n\nPackage: a\nFilename: pool/main/b.deb\n\n"
    );
    assert!(
        parse_packages("Package: x\nVersion: 1\n")
            .unwrap_err()
            .to_string()
            .contains("without `Filename`")
    );
}

#[test]
fn release_lists_checksums() {
    let p = Digests::of(b"Package: a\n");
    let gz = Digests::of(b"zz");
    let r = release_text(
        "ci",
        "Mon, 01 Jan 2024 00:00:00 UTC",
        &[
            ("main/binary-amd64/Packages", &p),
            ("main/binary-amd64/Packages.gz", &gz),
        ],
    );
    assert!(
        r.starts_with("Origin: AMD ROCm\nLabel: ROCm ci Packages\n"),
        "{r}"
    );
    assert!(
        r.contains(&format!(
            "SHA256:\n {}               11 main/binary-amd64/Packages\n",
            p.sha256
        )),
        "{r}"
    );
    let (entry, by_hash) = release_entry(&r, "main/binary-amd64/Packages");
    assert!(by_hash);
    assert_eq!(
        entry,
        Some(ReleaseEntry {
            sha256: p.sha256.clone(),
            size: 11
        })
    );
    assert_eq!(release_entry(&r, "nope").0, None);
    assert!(!release_entry("Origin: x\n", "x").1);
}

#[test]
fn damaged_packages_are_refused() {
    assert!(
        control_of(b"garbage")
            .unwrap_err()
            .to_string()
            .contains("not an ar archive")
    );
    assert!(
        control_of(b"!<arch>\ndebian-binary   0           0     0     100644  4         `\n2.0\n")
            .unwrap_err()
            .to_string()
            .contains("no `control.tar` member")
    );
    let header = |name: &str, size: usize| {
        format!("{name:<16}0           0     0     100644  {size:<10}`\n")
    };
    let cut = format!(
        "!<arch>\n{}2.0\n{}abc",
        header("debian-binary", 4),
        header("control.tar.gz", 10)
    );
    assert!(
        control_of(cut.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("cut short")
    );
    let skipped = format!("!<arch>\n{}2.0", header("debian-binary", 4));
    assert!(
        control_of(skipped.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("cut short")
    );
    let first = format!("!<arch>\n{}abcd", header("data.tar.xz", 4));
    assert!(
        control_of(first.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("no leading `debian-binary`")
    );
}
