use super::*;

#[test]
fn project_names() {
    for (file, project) in [
        (
            "rocm_sdk_core-7.2.0-py3-none-linux_x86_64.whl",
            Some("rocm-sdk-core"),
        ),
        ("rocm-7.14.0.dev0+13caf791.tar.gz", Some("rocm")),
        ("Foo.Bar__baz-1.0.tar.gz", Some("foo-bar-baz")),
        (
            "torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl",
            Some("torch"),
        ),
        ("notes.txt", None),
        ("-1.0.tar.gz", None),
    ] {
        assert_eq!(project_name(file).as_deref(), project, "{file}");
    }
}

#[test]
fn pages_link_with_digests() {
    let links = [
        Link {
            name: "a_b-1.0+x-py3-none-any.whl".into(),
            href: "a_b-1.0+x-py3-none-any.whl".into(),
            sha256: "00".into(),
        },
        Link {
            name: "core-1.0.tar.gz".into(),
            href: "../core-1.0.tar.gz".into(),
            sha256: "11".into(),
        },
    ];
    let pages = pages("T <x>", &links);
    let paths: Vec<&str> = pages.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "index.html",
            "simple/index.html",
            "simple/a-b/index.html",
            "simple/core/index.html"
        ]
    );
    assert_eq!(
        pages[0].1,
        "<!DOCTYPE html>\n<html>\n<head>\n  <meta charset=\"utf-8\">\n  <title>T &lt;x&gt;</title>\n</head>\n<body>\n  <h1>T &lt;x&gt;</h1>\n  <a href=\"a_b-1.0%2Bx-py3-none-any.whl#sha256=00\">a_b-1.0+x-py3-none-any.whl</a><br>\n  <a href=\"../core-1.0.tar.gz#sha256=11\">core-1.0.tar.gz</a><br>\n</body>\n</html>\n"
    );
    assert!(pages[1].1.contains("<a href=\"a-b/\">a-b</a><br>"));
    assert!(
        pages[3]
            .1
            .contains("<a href=\"../../../core-1.0.tar.gz#sha256=11\">core-1.0.tar.gz</a>")
    );
}
