use super::*;

const REPOMD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<repomd xmlns="http://linux.duke.edu/metadata/repo" xmlns:rpm="http://linux.duke.edu/metadata/rpm">
  <revision>1</revision>
  <data type="primary">
<checksum type="sha256">AB12</checksum>
<open-checksum type="sha256">ffff</open-checksum>
<location href="repodata/ab12-primary.xml.gz"/>
<size>652</size>
  </data>
  <data type="other">
<checksum type="sha">cd</checksum>
<location href="repodata/other.xml.gz"/>
  </data>
</repomd>
"#;

#[test]
fn primary_packages() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<metadata xmlns="http://linux.duke.edu/metadata/common" packages="2">
<package type="rpm">
  <name>a</name>
  <checksum type="sha256" pkgid="YES">AB</checksum>
  <location href="a-1.0-1.x86_64.rpm"/>
</package>
<package type="rpm">
  <name>b</name>
  <checksum type="sha" pkgid="YES">cd</checksum>
  <location href="sub/b&amp;c-1.0-1.x86_64.rpm"/>
</package>
</metadata>
"#;
    assert_eq!(
        parse_primary(xml).unwrap(),
        [
            PrimaryPackage {
                href: "a-1.0-1.x86_64.rpm".into(),
                checksum_type: "sha256".into(),
                checksum: "ab".into(),
            },
            PrimaryPackage {
                href: "sub/b&c-1.0-1.x86_64.rpm".into(),
                checksum_type: "sha".into(),
                checksum: "cd".into(),
            },
        ]
    );
    assert!(parse_primary("<repomd/>").is_err());
    assert!(
        parse_primary("<metadata><package type=\"rpm\"><name>x</name></package></metadata>")
            .unwrap_err()
            .to_string()
            .contains("without `<checksum>`")
    );
    let gz = crate::deb::gzip(xml.as_bytes());
    assert_eq!(decompress("x-primary.xml.gz", &gz).unwrap(), xml);
    assert!(decompress("x-primary.xml.bz2", b"").is_err());
}

#[test]
fn repomd_entries() {
    let entries = parse_repomd(REPOMD).unwrap();
    assert_eq!(
        entries[0],
        RepomdEntry {
            kind: "primary".into(),
            href: "repodata/ab12-primary.xml.gz".into(),
            checksum_type: "sha256".into(),
            checksum: "ab12".into(),
        }
    );
    assert_eq!(entries[1].checksum_type, "sha");
    assert!(parse_repomd("<html/>").is_err());
    let outside = REPOMD.replace("repodata/other.xml.gz", "../x");
    assert!(
        parse_repomd(&outside)
            .unwrap_err()
            .to_string()
            .contains("not a file directly")
    );
    let e = RepomdEntry {
        kind: "x".into(),
        href: "repodata/x".into(),
        checksum_type: "sha256".into(),
        checksum: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into(),
    };
    assert!(checksum_matches(&e, b"abc").unwrap());
    assert!(!checksum_matches(&e, b"abd").unwrap());
}

#[test]
fn repomd_with_single_quotes_and_reordered_markup() {
    // Single-quoted attributes, attributes in another order, `<location>` before
    // `<checksum>`, an entity in an attribute, comments and a nested element that is no
    // child of `<data>`.
    let xml = "<?xml version='1.0' encoding='UTF-8'?>\n<repomd xmlns='http://linux.duke.edu/metadata/repo'>\n  <!-- <data type='fake'> -->\n  <data type='primary'>\n    <location xml:base='x' href='repodata/ab12-primary.xml.gz'/>\n    <size>652</size>\n    <open-checksum type='sha256'>ffff</open-checksum>\n    <checksum pkgid='x' type='sha256'>\n      AB12\n    </checksum>\n  </data>\n  <data href='ignored' type='other&amp;more'><checksum type=\"sha\">cd</checksum><location href=\"repodata/o&amp;p.xml.gz\"></location></data>\n</repomd>";
    assert_eq!(
        parse_repomd(xml).unwrap(),
        [
            RepomdEntry {
                kind: "primary".into(),
                href: "repodata/ab12-primary.xml.gz".into(),
                checksum_type: "sha256".into(),
                checksum: "ab12".into(),
            },
            RepomdEntry {
                kind: "other&more".into(),
                href: "repodata/o&p.xml.gz".into(),
                checksum_type: "sha".into(),
                checksum: "cd".into(),
            },
        ]
    );
    // Only `<checksum>`, never `<open-checksum>`, is the stored file's checksum.
    let open_only = "<repomd><data type='primary'><open-checksum type='sha256'>ff</open-checksum><location href='repodata/p.xml.gz'/></data></repomd>";
    assert_eq!(
        parse_repomd(open_only).unwrap_err().to_string(),
        "`primary` has no `<checksum>`"
    );
    let no_href = "<repomd><data type='primary'><checksum type='sha256'>ff</checksum><location base='x'/></data></repomd>";
    assert_eq!(
        parse_repomd(no_href).unwrap_err().to_string(),
        "`primary` has a location without `href`"
    );
    assert!(matches!(
        parse_repomd("<repomd><data type='x'></repomd>"),
        Err(RpmError::Xml { .. })
    ));
    assert!(matches!(parse_repomd(""), Err(RpmError::NoRoot("repomd"))));
}

#[test]
fn primary_with_single_quotes_and_reordered_markup() {
    let xml = "<metadata xmlns='http://linux.duke.edu/metadata/common' xmlns:rpm='http://linux.duke.edu/metadata/rpm' packages='1'>\n<package type='rpm'><location href='a&apos;b-1.0-1.x86_64.rpm'/><format><rpm:checksum type='md5'>no</rpm:checksum><location href='nested.rpm'/></format><checksum pkgid='YES' type='sha256'>Ef01</checksum><name>a</name></package>\n</metadata>";
    assert_eq!(
        parse_primary(xml).unwrap(),
        [PrimaryPackage {
            href: "a'b-1.0-1.x86_64.rpm".into(),
            checksum_type: "sha256".into(),
            checksum: "ef01".into(),
        }]
    );
    assert_eq!(
        parse_primary(
            "<metadata><package><checksum>x</checksum><location href='a.rpm'/></package></metadata>"
        )
        .unwrap_err()
        .to_string(),
        "a package checksum without `type`"
    );
}
