use super::*;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    for d in ["sub/deep", "x/sub", "ccache/n", ".hid"] {
        fs_err::create_dir_all(r.join(d)).unwrap();
    }
    for f in [
        "a.log",
        "sub/n.html",
        "sub/deep/d.txt",
        "x/sub/y.txt",
        "ccache/c.log",
        "ccache/n/m.log",
        ".hid/h.txt",
        ".dot",
    ] {
        fs_err::write(r.join(f), f).unwrap();
    }
    std::os::unix::fs::symlink("sub", r.join("linkdir")).unwrap();
    std::os::unix::fs::symlink("a.log", r.join("link.log")).unwrap();
    dir
}

// Spec §5.1: the verified table.
#[test]
fn rglob_vectors() {
    let dir = tree();
    let entries = walk(dir.path()).unwrap();
    let run = |p: &str| {
        let mut got: Vec<String> = select(&entries, &[p.to_owned()], &[])
            .iter()
            .map(|e| e.relative())
            .collect();
        got.sort();
        got
    };
    assert_eq!(run("*").len(), 17);
    assert!(run("*").contains(&"linkdir".to_owned()));
    assert!(!run("*").iter().any(|p| p.starts_with("linkdir/")));
    let cases: &[(&str, &[&str])] = &[
        ("sub/*", &["sub/deep", "sub/n.html", "x/sub/y.txt"]),
        (
            "sub/**/*",
            &["sub/deep", "sub/deep/d.txt", "sub/n.html", "x/sub/y.txt"],
        ),
        (
            "ccache/**/*",
            &["ccache/c.log", "ccache/n", "ccache/n/m.log"],
        ),
        (
            "*.log",
            &["a.log", "ccache/c.log", "ccache/n/m.log", "link.log"],
        ),
        ("deep/*", &["sub/deep/d.txt"]),
        (".*", &[".dot", ".hid"]),
    ];
    for (pattern, expected) in cases {
        assert_eq!(run(pattern), *expected, "{pattern}");
    }
}

#[test]
fn sorted_parents_first_with_kinds() {
    let dir = tree();
    let entries = walk(dir.path()).unwrap();
    let rels: Vec<String> = entries.iter().map(Entry::relative).collect();
    let mut sorted = rels.clone();
    sorted.sort_by(|a, b| {
        crate::cmp_components(
            &a.split('/').collect::<Vec<_>>(),
            &b.split('/').collect::<Vec<_>>(),
        )
    });
    assert_eq!(rels, sorted);
    let get = |rel: &str| entries.iter().find(|e| e.relative() == rel).unwrap();
    let link = get("linkdir");
    assert!(link.is_symlink && !link.is_dir && !link.is_file && !link.is_symlink_to_file);
    let link = get("link.log");
    assert!(link.is_symlink && !link.is_file && link.is_symlink_to_file);
    assert!(get("sub").is_dir && get("sub/deep/d.txt").is_file);
    assert_eq!(
        get("sub/deep/d.txt").path,
        dir.path().join("sub/deep/d.txt")
    );
    assert_eq!(get("sub/deep/d.txt").name(), "d.txt");

    let top: Vec<String> = list(dir.path())
        .unwrap()
        .iter()
        .map(Entry::relative)
        .collect();
    assert_eq!(
        top,
        [
            ".dot", ".hid", "a.log", "ccache", "link.log", "linkdir", "sub", "x"
        ]
    );
}

#[test]
fn following_links_and_pruning() {
    let dir = tree();
    std::os::unix::fs::symlink("missing", dir.path().join("dangling")).unwrap();
    let entries = Walk::new(dir.path())
        .follow_links(true)
        .entries_where(|e| e.name() != "ccache")
        .unwrap();
    let get = |rel: &str| entries.iter().find(|e| e.relative() == rel);
    let linked = get("linkdir/deep/d.txt").expect("the linked directory is walked");
    assert!(linked.is_file && !linked.is_symlink);
    let link = get("linkdir").unwrap();
    assert!(link.is_dir && link.is_symlink);
    let dangling = get("dangling").unwrap();
    assert!(dangling.is_symlink && !dangling.is_file && !dangling.is_dir);
    assert!(get("ccache").is_none() && get("ccache/c.log").is_none());
}

#[test]
fn a_missing_root_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = walk(&missing).unwrap_err();
    assert_eq!(err.path, missing);
    assert_eq!(err.source.kind(), std::io::ErrorKind::NotFound);
}
