use super::*;

// Spec §18.5 and §6.2.
#[test]
fn vectors() {
    let cases = [
        ("index.html", "text/html"),
        ("manifest.json", "application/json"),
        ("build.log", "text/plain"),
        ("summary.md", "text/plain"),
        ("ninja.tar.gz", "application/gzip"),
        ("core.tar.xz", "application/x-xz"),
        ("core.tar.zst", "application/zstd"),
        ("rocm-1.0-py3-none-any.whl", "application/zip"),
        ("data.xyz123", "application/octet-stream"),
        ("core.tar.xz.sha256sum", "application/octet-stream"),
        ("page.HTML", "text/html"),
        ("x.tgz", "application/x-tar"),
        ("x.bz2", "application/octet-stream"),
        ("x.yaml", "application/octet-stream"),
        (".ninja_log", "application/octet-stream"),
        ("dir.d/noext", "application/octet-stream"),
        ("logs/x.svg", "image/svg+xml"),
        ("x.", "application/octet-stream"),
    ];
    for (name, ty) in cases {
        assert_eq!(infer_content_type(name), ty, "{name}");
    }
}
