use super::*;

#[test]
fn skip_rules() {
    let cases = [
        ("index.html", "p/index.html", Some(Skip::Silently)),
        (
            "MANIFEST.TXT",
            "p/MANIFEST.TXT",
            Some(Skip::Saying(
                "Skipping build manifest file (local only): MANIFEST.TXT".into(),
            )),
        ),
        (
            "repomd.xml",
            "p/x86_64/repodata/repomd.xml",
            Some(Skip::Saying(
                "Skipping metadata file (will regenerate): repomd.xml".into(),
            )),
        ),
        (
            "Packages.gz",
            "p/dists/stable/main/binary-amd64/Packages.gz",
            Some(Skip::Saying(
                "Skipping metadata file (will regenerate): Packages.gz".into(),
            )),
        ),
        ("Packages", "p/pool/main/Packages", None),
        ("a.deb", "p/pool/main/a.deb", None),
    ];
    for (name, key, want) in cases {
        assert_eq!(skip_reason(name, key), want, "{key}");
    }
}

#[test]
fn what_happens_to_a_package() {
    let ours = deb::Digests::of(b"ours");
    let other = deb::Digests::of(b"other");
    let sha = |d: &deb::Digests| Listed {
        checksum_type: "sha256".into(),
        checksum: d.sha256.clone(),
    };
    let md5 = Listed {
        checksum_type: "md5".into(),
        checksum: ours.md5.clone(),
    };
    let (o, x) = (ours.sha256.as_str(), other.sha256.as_str());
    let (absent, unrecorded) = (Published::Absent, Published::Object(None));
    let cases: [(Option<Listed>, Published<'_>, Action); 13] = [
        // Not published.
        (None, absent, Action::Upload { list: true }),
        (Some(sha(&ours)), absent, Action::Upload { list: false }),
        (Some(sha(&other)), absent, Action::Upload { list: true }),
        // Published, this file.
        (
            None,
            Published::Object(Some(o)),
            Action::Present { list: true },
        ),
        (
            Some(sha(&ours)),
            Published::Object(Some(o)),
            Action::Present { list: false },
        ),
        (
            Some(md5.clone()),
            Published::Object(Some(o)),
            Action::Present { list: false },
        ),
        (
            Some(sha(&other)),
            Published::Object(Some(o)),
            Action::Present { list: true },
        ),
        // Published, unknown or other content, listed as this file.
        (
            Some(sha(&ours)),
            unrecorded,
            Action::Present { list: false },
        ),
        (
            Some(sha(&ours)),
            Published::Object(Some(x)),
            Action::Replace {
                list: false,
                unlisted: false,
            },
        ),
        // Listed as the published file: kept.
        (Some(sha(&other)), Published::Object(Some(x)), Action::Keep),
        (Some(sha(&other)), unrecorded, Action::Keep),
        // The published file is not what its entry says.
        (
            Some(sha(&other)),
            Published::Object(Some("f00d")),
            Action::Replace {
                list: true,
                unlisted: false,
            },
        ),
        // Left by a run that failed before listing it.
        (
            None,
            unrecorded,
            Action::Replace {
                list: true,
                unlisted: true,
            },
        ),
    ];
    for (listed, published, want) in cases {
        assert_eq!(
            decide(&ours, listed.as_ref(), published),
            want,
            "{listed:?} {published:?}"
        );
    }
    assert_eq!(
        decide(&ours, None, Published::Object(Some(x))),
        Action::Replace {
            list: true,
            unlisted: true
        }
    );
    assert!(!Action::Keep.lists() && !Action::Keep.uploads());
    assert!(Action::Present { list: true }.lists());
    assert!(!Action::Present { list: true }.uploads());
}

#[test]
fn summaries_and_urls() {
    let loc = StorageLocation::new("b", "1-linux/packages/rpm");
    let url = install_url(&loc, PkgType::Rpm);
    assert_eq!(
        url,
        "https://b.s3.amazonaws.com/1-linux/packages/rpm/x86_64"
    );
    assert_eq!(
        summary(PkgType::Rpm, &url, Some("L")),
        format!(
            "### RPM Package Build Results\n\n[Package Repository]({url})\n\n```bash\n# Add the repository\nsudo tee /etc/yum.repos.d/therock.repo << 'EOF'\n[therock]\nname=TheRock\nbaseurl={url}\nenabled=1\ngpgcheck=0\nEOF\n\n# Install packages\nsudo dnf install <package-name>\n```\n\n[Packaging Logs](L)\n"
        )
    );
    assert!(summary(PkgType::Deb, "U", None).contains(
        "echo \"deb [trusted=yes] U stable main\" | \\\n    sudo tee /etc/apt/sources.list.d/therock.list\nsudo apt update\n"
    ));
}
