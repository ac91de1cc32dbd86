use super::*;

#[test]
fn summary() {
    let index = StorageLocation::new(
        "therock-ci-artifacts",
        "12345-linux/logs/manifest-diff/index.html",
    );
    assert_eq!(
        summary_line(&index),
        "[Report (S3)](https://therock-ci-artifacts.s3.amazonaws.com/12345-linux/logs/manifest-diff/index.html)"
    );
}

// The reports are the `*.html` files at any depth, links to files included; what the
// index lists is exactly what is uploaded.
// The tree holds symlinks, which Windows makes only with a privilege.
#[cfg(unix)]
#[test]
fn reports_and_stale_index_pages() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    for (name, text) in [
        ("TheRockReport.html", "abc"),
        ("sub/n.html", "n"),
        ("big.html.gz", "gz"),
        ("X.HTML", "upper"),
        ("skip.txt", "t"),
        ("index.html", "old"),
    ] {
        let path = d.join(name);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(&path, text).unwrap();
    }
    fs_err::create_dir_all(d.join("dir.html")).unwrap();
    fs_err::write(d.join("old.html"), file_tree::index_page("x", &[])).unwrap();
    fs_err::os::unix::fs::symlink("TheRockReport.html", d.join("link.html")).unwrap();
    fs_err::os::unix::fs::symlink("sub", d.join("linked-dir")).unwrap();
    let (reports, stale) = reports_below(d, "index.html").unwrap();
    let listed: Vec<(&str, u64)> = reports
        .iter()
        .map(|r| (r.entry.path.as_str(), r.entry.size))
        .collect();
    assert_eq!(
        listed,
        [
            ("TheRockReport.html", 3),
            ("link.html", 3),
            ("sub/n.html", 1)
        ]
    );
    assert_eq!(stale, ["old.html"]);
}
