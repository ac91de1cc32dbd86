//! An HTML index page of the files below a directory: one row per file (a link relative to the
//! page, its size, its modification time in UTC), names escaped, the same bytes on every host.
//! A pure function of its entries; reading the directory is the caller's job.

use std::fmt::Write as _;

/// The `content` of the page's `<meta name="generator">`: how a page written by
/// [`index_page`] is recognized later ([`is_index_page`]).
pub const GENERATOR: &str = "rock-ci index page";

/// Bytes of a file's start that [`is_index_page`] needs to see.
pub const MARKER_WINDOW: usize = 512;

/// One file listed on an index page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The file's path relative to the page's directory, `/`-separated.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time in seconds since the Unix epoch (UTC), when known.
    pub modified: Option<i64>,
}

/// The index page titled `title` listing `entries` in the order given.
///
/// ```
/// use rock_ci_file_tree::{IndexEntry, index_page, is_index_page};
///
/// let page = index_page(
///     "reports",
///     &[IndexEntry { path: "sub/a b.html".into(), size: 1536, modified: Some(0) }],
/// );
/// assert!(page.contains(r#"<a href="sub/a%20b.html">sub/a b.html</a>"#));
/// assert!(page.contains("<td class=\"size\" data-order=\"1536\">1 KB</td>"));
/// assert!(page.contains(r#"<time datetime="1970-01-01T00:00:00Z">1970-01-01 00:00:00</time>"#));
/// assert!(is_index_page(page.as_bytes()));
/// ```
pub fn index_page(title: &str, entries: &[IndexEntry]) -> String {
    let title = escape_html(title);
    let mut page = format!(
        "<!DOCTYPE html>\n\
         <html lang=\"en\">\n\
         <head>\n\
         <meta charset=\"utf-8\">\n\
         <meta name=\"generator\" content=\"{GENERATOR}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n\
         <style>\n\
         body {{ font-family: system-ui, sans-serif; margin: 2em; }}\n\
         table {{ border-collapse: collapse; }}\n\
         th, td {{ padding: 0.3em 1em; text-align: left; }}\n\
         td.size {{ text-align: right; }}\n\
         tbody tr:nth-child(even) {{ background: #f3f3f3; }}\n\
         </style>\n\
         </head>\n\
         <body>\n\
         <h1>{title}</h1>\n\
         <table>\n\
         <thead><tr><th>Name</th><th>Size</th><th>Modified (UTC)</th></tr></thead>\n\
         <tbody>\n"
    );
    if entries.is_empty() {
        page.push_str("<tr><td colspan=\"3\">No files</td></tr>\n");
    }
    for entry in entries {
        let (datetime, shown) = match entry.modified.and_then(utc_parts) {
            Some(p) => (
                format!(
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                    p[0], p[1], p[2], p[3], p[4], p[5]
                ),
                format!(
                    "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
                    p[0], p[1], p[2], p[3], p[4], p[5]
                ),
            ),
            None => (String::new(), "-".to_owned()),
        };
        let _ = writeln!(
            page,
            "<tr><td><a href=\"{}\">{}</a></td><td class=\"size\" data-order=\"{}\">{}</td><td><time datetime=\"{datetime}\">{shown}</time></td></tr>",
            href(&entry.path),
            escape_html(&entry.path),
            entry.size,
            pretty_size(entry.size),
        );
    }
    page.push_str("</tbody>\n</table>\n</body>\n</html>\n");
    page
}

/// Whether `head` (the first [`MARKER_WINDOW`] bytes of a file, or all of a shorter one) is
/// the start of a page written by [`index_page`].
pub fn is_index_page(head: &[u8]) -> bool {
    let marker = format!("<meta name=\"generator\" content=\"{GENERATOR}\">");
    let head = &head[..head.len().min(MARKER_WINDOW)];
    head.starts_with(b"<!DOCTYPE html>\n")
        && head.windows(marker.len()).any(|w| w == marker.as_bytes())
}

/// A size as the reference's indexer prints it: the largest unit of PB, TB, GB, MB, KB
/// (powers of 1024) that fits, truncated (`1536` is `1 KB`), else `N bytes` (`1 byte`).
pub fn pretty_size(bytes: u64) -> String {
    const UNITS: [(&str, u32); 5] = [("PB", 5), ("TB", 4), ("GB", 3), ("MB", 2), ("KB", 1)];
    for (unit, power) in UNITS {
        let scale = 1024_u64.pow(power);
        if bytes >= scale {
            return format!("{} {unit}", bytes / scale);
        }
    }
    if bytes == 1 {
        "1 byte".to_owned()
    } else {
        format!("{bytes} bytes")
    }
}

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by character references.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

/// A relative path as a URL path: every byte of its UTF-8 form but ASCII letters, digits,
/// `_.-~` and the separator `/` percent-encoded (`a b+1.html` is `a%20b%2B1.html`).
pub fn href(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~/".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The UTC date of `secs` after the Unix epoch as `YYYYMMDD`, for years 0 to 9999.
pub fn utc_date_stamp(secs: i64) -> Option<String> {
    utc_parts(secs).map(|[year, month, day, ..]| format!("{year:04}{month:02}{day:02}"))
}

/// `[year, month, day, hour, minute, second]` in UTC of `secs` after the Unix epoch, for
/// years 0 to 9999.
fn utc_parts(secs: i64) -> Option<[i64; 6]> {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date in the proleptic Gregorian calendar (eras of 400 years, each
    // starting on 1 March so that the leap day ends a year).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (0..=9999)
        .contains(&year)
        .then_some([year, month, day, rem / 3600, rem % 3600 / 60, rem % 60])
}

#[cfg(test)]
mod tests;
