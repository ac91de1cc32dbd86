use super::*;

// Spec §5.4 `pretty_size` vectors.
#[test]
fn sizes() {
    let cases = [
        (0, "0 bytes"),
        (1, "1 byte"),
        (2, "2 bytes"),
        (1023, "1023 bytes"),
        (1024, "1 KB"),
        (1536, "1 KB"),
        (1_048_575, "1023 KB"),
        (1_048_576, "1 MB"),
        (5_368_709_121, "5 GB"),
        (3 * 1024_u64.pow(5), "3 PB"),
        (u64::MAX, "16383 PB"),
    ];
    for (bytes, text) in cases {
        assert_eq!(pretty_size(bytes), text, "{bytes}");
    }
}

#[test]
fn hrefs_and_escapes() {
    let cases = [
        ("TheRockReport.html", "TheRockReport.html"),
        ("b report+1.html", "b%20report%2B1.html"),
        ("sub dir.html/n.html", "sub%20dir.html/n.html"),
        ("a~b_c-d.e", "a~b_c-d.e"),
        ("<x>&\"'.html", "%3Cx%3E%26%22%27.html"),
        ("q?x#y%.html", "q%3Fx%23y%25.html"),
        ("caf\u{e9}.html", "caf%C3%A9.html"),
    ];
    for (path, encoded) in cases {
        assert_eq!(href(path), encoded, "{path}");
    }
    assert_eq!(
        escape_html("<img src=x onerror='a&b'>\".html"),
        "&lt;img src=x onerror=&#x27;a&amp;b&#x27;&gt;&quot;.html"
    );
}

#[test]
fn utc_times() {
    let cases = [
        (0, [1970, 1, 1, 0, 0, 0]),
        (1_787_393_472, [2026, 8, 22, 10, 11, 12]),
        (951_868_799, [2000, 2, 29, 23, 59, 59]),
        (4_107_542_400, [2100, 3, 1, 0, 0, 0]),
        (-1, [1969, 12, 31, 23, 59, 59]),
    ];
    for (secs, parts) in cases {
        assert_eq!(utc_parts(secs), Some(parts), "{secs}");
    }
    assert_eq!(utc_parts(i64::MAX), None);
    assert_eq!(utc_parts(i64::MIN), None);
}

// Spec §5.6 index-content vectors, for the files this page lists: every name escaped, the
// link relative to the page, the size and the UTC time.
#[test]
fn rows_in_order() {
    let at = Some(1_787_393_472);
    let entries = [
        IndexEntry {
            path: "TheRockReport.html".into(),
            size: 3,
            modified: at,
        },
        IndexEntry {
            path: "b report+1.html".into(),
            size: 1536,
            modified: at,
        },
        IndexEntry {
            path: "sub dir.html/<b>.html".into(),
            size: 2_000_000,
            modified: None,
        },
    ];
    let page = index_page("rep2 <&>", &entries);
    let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("<tr><td>")).collect();
    assert_eq!(
        rows,
        [
            "<tr><td><a href=\"TheRockReport.html\">TheRockReport.html</a></td><td class=\"size\" data-order=\"3\">3 bytes</td><td><time datetime=\"2026-08-22T10:11:12Z\">2026-08-22 10:11:12</time></td></tr>",
            "<tr><td><a href=\"b%20report%2B1.html\">b report+1.html</a></td><td class=\"size\" data-order=\"1536\">1 KB</td><td><time datetime=\"2026-08-22T10:11:12Z\">2026-08-22 10:11:12</time></td></tr>",
            "<tr><td><a href=\"sub%20dir.html/%3Cb%3E.html\">sub dir.html/&lt;b&gt;.html</a></td><td class=\"size\" data-order=\"2000000\">1 MB</td><td><time datetime=\"\">-</time></td></tr>",
        ]
    );
    assert!(page.contains("<title>rep2 &lt;&amp;&gt;</title>"));
    assert!(page.contains("<h1>rep2 &lt;&amp;&gt;</h1>"));
    assert!(!page.contains("<b>"));
    assert!(page.ends_with("</html>\n"));
    // The same entries give the same bytes.
    assert_eq!(page, index_page("rep2 <&>", &entries));
}

#[test]
fn empty_page_says_so() {
    let page = index_page("reports", &[]);
    assert!(page.contains("<tr><td colspan=\"3\">No files</td></tr>"));
    assert!(is_index_page(page.as_bytes()));
}

#[test]
fn recognizes_only_its_own_pages() {
    let page = index_page("r", &[]);
    assert!(is_index_page(page.as_bytes()));
    assert!(is_index_page(&page.as_bytes()[..MARKER_WINDOW]));
    assert!(!is_index_page(
        b"<!DOCTYPE html>\n<html><body>report</body></html>"
    ));
    assert!(!is_index_page(b""));
    // The marker later in a report (quoted, say) does not count.
    let quoted = format!(
        "<!DOCTYPE html>\n<pre>{}</pre>\n{page}",
        "x".repeat(MARKER_WINDOW)
    );
    assert!(!is_index_page(quoted.as_bytes()));
}
