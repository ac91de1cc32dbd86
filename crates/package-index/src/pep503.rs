//! The pages pip reads: a `--find-links` page (`index.html`) and a PEP 503 simple index
//! (`simple/index.html` and one `simple/{project}/index.html` per project), every link with
//! the file's `#sha256=` digest.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use storage_location::encode_key;

use crate::wheel;

/// The name of the pages pip reads.
pub const INDEX_HTML: &str = "index.html";
/// The directory of the PEP 503 simple index beside each `index.html`.
pub const SIMPLE_DIR: &str = "simple";

/// One package a page links: its file name and its path relative to the page's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The file name.
    pub name: String,
    /// The path from the page's directory (`x.whl`, `../x.whl`).
    pub href: String,
    /// Its SHA-256 (lowercase hex); empty when unknown (the link then has no digest).
    pub sha256: String,
}

/// Whether the file name is a package's (a wheel or an sdist), as the reference's
/// case-sensitive globs say.
#[expect(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the reference's globs `*.whl`, `*.tar.gz` are case-sensitive"
)]
pub fn is_package(name: &str) -> bool {
    name.ends_with(".whl") || name.ends_with(".tar.gz")
}

/// The project name of a wheel or sdist file name, normalized as PEP 503 says (lowercase,
/// runs of `-`, `_`, `.` as one `-`); `None` for a name that is neither.
pub fn project_name(file_name: &str) -> Option<String> {
    let raw = if let Some(stem) = file_name.strip_suffix(".whl") {
        stem.split('-').next()?
    } else {
        file_name.strip_suffix(".tar.gz")?.rsplit_once('-')?.0
    };
    if raw.is_empty() {
        return None;
    }
    Some(wheel::canonical_name(raw))
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, anchors: impl IntoIterator<Item = (String, String)>) -> String {
    let title = html_escape(title);
    let mut html = format!(
        "<!DOCTYPE html>\n<html>\n<head>\n  <meta charset=\"utf-8\">\n  <title>{title}</title>\n</head>\n<body>\n  <h1>{title}</h1>\n"
    );
    for (href, text) in anchors {
        let _ = writeln!(
            html,
            "  <a href=\"{}\">{}</a><br>",
            html_escape(&href),
            html_escape(&text)
        );
    }
    html.push_str("</body>\n</html>\n");
    html
}

fn anchor(prefix: &str, link: &Link) -> (String, String) {
    let digest = if link.sha256.is_empty() {
        String::new()
    } else {
        format!("#sha256={}", link.sha256)
    };
    (
        format!("{prefix}{}{digest}", encode_key(&link.href)),
        link.name.clone(),
    )
}

/// The pages of one directory, as (path relative to that directory, contents): the
/// `--find-links` page `index.html`, and the simple index `simple/index.html` with one
/// `simple/{project}/index.html` per project. `links` are in page order.
pub fn pages(title: &str, links: &[Link]) -> Vec<(String, String)> {
    let mut out = vec![(
        INDEX_HTML.to_owned(),
        page(title, links.iter().map(|l| anchor("", l))),
    )];
    let mut projects: BTreeMap<String, Vec<&Link>> = BTreeMap::new();
    for link in links {
        if let Some(project) = project_name(&link.name) {
            projects.entry(project).or_default().push(link);
        }
    }
    out.push((
        format!("{SIMPLE_DIR}/{INDEX_HTML}"),
        page(
            &format!("Simple index: {title}"),
            projects.keys().map(|p| (format!("{p}/"), p.clone())),
        ),
    ));
    for (project, links) in &projects {
        out.push((
            format!("{SIMPLE_DIR}/{project}/{INDEX_HTML}"),
            page(
                &format!("Links for {project}"),
                links.iter().map(|l| anchor("../../", l)),
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests;
