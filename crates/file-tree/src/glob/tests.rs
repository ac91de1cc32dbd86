use super::*;

#[test]
fn fnmatch_vectors() {
    let cases = [
        ("*.tar.gz", "a.tar.gz", true),
        ("*.tar.gz", "sub/a.tar.gz", true),
        ("*.tar.gz", "index.html", false),
        ("a?c", "a/c", true),
        ("[ab]x", "bx", true),
        ("[!ab]x", "bx", false),
        ("[!ab]x", "cx", true),
        ("[a-c]", "b", true),
        ("[a-c]", "d", false),
        ("[abc", "[abc", true),
        ("[abc", "a", false),
        ("**", "x/y", true),
        ("*.WHL", "a.whl", false),
        ("a\\b", "a\\b", true),
        ("[]]", "]", true),
        ("", "", true),
        ("*", "", true),
    ];
    for (p, t, m) in cases {
        assert_eq!(fnmatch(p, t), m, "{p} {t}");
    }
}

#[test]
fn fnmatch_of_wheel_names() {
    let pattern = "rocm_sdk_core-0.0.1.test-*.whl";
    assert!(fnmatch(
        pattern,
        "rocm_sdk_core-0.0.1.test-py3-none-linux_x86_64.whl"
    ));
    assert!(!fnmatch(pattern, "rocm_sdk_core-0.0.1.test.whl"));
    assert!(!fnmatch(pattern, "rocm_sdk_core-0.0.1.test-x.whl.part"));
    assert!(fnmatch("rocm-0.0.1.test.tar.gz", "rocm-0.0.1.test.tar.gz"));
}

// TheRock's `RecursiveGlobPattern` as its regex translation behaves (spec §15.2).
#[test]
fn recursive_globs_of_spec_15_2() {
    for (glob, cases) in [
        (
            "**/cmake/**",
            &[
                ("cmake", true),
                ("lib/cmake", true),
                ("lib/cmake/hip/hip-config.cmake", true),
                ("share/rocm/cmake/x", true),
                ("lib/cmakefoo", false),
                ("cmakefoo/x", false),
            ][..],
        ),
        (
            "bin/rocprof-*",
            &[
                ("bin/rocprof-compute", true),
                ("bin/rocprof-sys-run", true),
                ("bin/rocprof-", true),
                ("bin/rocprofv3", false),
                ("bin/sub/rocprof-x", false),
                ("x/bin/rocprof-x", false),
            ][..],
        ),
        (
            "share/**/rocprofiler-systems/**",
            &[
                ("share/rocprofiler-systems", true),
                ("share/doc/rocprofiler-systems/README", true),
                ("share/a/b/rocprofiler-systems", true),
                ("share/rocprofiler-systems-x", false),
            ][..],
        ),
        (
            "include/rocprofiler-systems/**",
            &[
                ("include/rocprofiler-systems", true),
                ("include/rocprofiler-systems/a/b.h", true),
                ("include/rocprofiler-systemsx", false),
            ][..],
        ),
        (
            "lib/libprofiler-hub.so*",
            &[
                ("lib/libprofiler-hub.so.0", true),
                ("lib/libprofiler-hub.so", true),
                ("lib/libprofiler-hubXso", false),
                ("lib/libprofiler-hub.so/x", false),
            ][..],
        ),
        ("**", &[("lib", true), ("lib/x", false)][..]),
        ("a?b", &[("axxb", true), ("a/b", false), ("ab", true)][..]),
        (
            "lib/*.so.?",
            &[
                ("lib/a.so.1", true),
                ("lib/a.so.12", true),
                ("lib/a.so.", true),
                ("lib/a.so", false),
                ("lib/x/a.so.1", false),
            ][..],
        ),
        ("lib/[ab]", &[("lib/[ab]", true), ("lib/a", false)][..]),
    ] {
        let g = PathGlob::recursive(glob);
        for (path, want) in cases {
            assert_eq!(g.matches_path(path), *want, "{glob} on {path}");
        }
    }
}

#[test]
fn rglob_components() {
    let cases: &[(&str, &str, bool)] = &[
        ("*", "a/b/c", true),
        ("sub/*", "x/sub/y", true),
        ("sub/*", "sub/deep/y", false),
        ("sub/**/*", "sub/deep/y", true),
        ("./a//b", "x/a/b", true),
        ("a?", "a/", false),
        ("[!.]*", ".hid", false),
    ];
    for (pattern, path, want) in cases {
        assert_eq!(
            PathGlob::rglob(pattern).matches_path(path),
            *want,
            "{pattern} {path}"
        );
    }
}

#[test]
fn component_order() {
    let mut paths: Vec<Vec<String>> = ["a.txt", "a-b/x", "a/b", "A/z"]
        .iter()
        .map(|p| p.split('/').map(str::to_owned).collect())
        .collect();
    paths.sort_by(|a, b| cmp_components(a, b));
    let joined: Vec<String> = paths.iter().map(|p| p.join("/")).collect();
    assert_eq!(joined, ["A/z", "a/b", "a-b/x", "a.txt"]);
}
