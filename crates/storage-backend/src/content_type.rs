//! Content types by file name, from one fixed table (spec §6.2): the same answer on every host.

/// The types the reference forces, and the common types its Linux host's `mimetypes` gave.
const TABLE: &[(&str, &str)] = &[
    // Forced by the reference.
    ("gz", "application/gzip"),
    ("html", "text/html"),
    ("log", "text/plain"),
    ("md", "text/plain"),
    ("whl", "application/zip"),
    ("xz", "application/x-xz"),
    ("zst", "application/zstd"),
    // Common types.
    ("css", "text/css"),
    ("csv", "text/csv"),
    ("htm", "text/html"),
    ("jpeg", "image/jpeg"),
    ("jpg", "image/jpeg"),
    ("js", "text/javascript"),
    ("json", "application/json"),
    ("pdf", "application/pdf"),
    ("png", "image/png"),
    ("svg", "image/svg+xml"),
    ("tar", "application/x-tar"),
    ("tgz", "application/x-tar"),
    ("txt", "text/plain"),
    ("xml", "application/xml"),
    ("zip", "application/zip"),
];

/// The type of anything else.
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

/// The content type of a file, by the lowercased last suffix of its name (a dotfile such as
/// `.ninja_log` has none).
pub fn infer_content_type(file_name: &str) -> &'static str {
    let name = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    let suffix = match name.rfind('.') {
        Some(0) | None => return DEFAULT_CONTENT_TYPE,
        Some(i) => name[i + 1..].to_ascii_lowercase(),
    };
    TABLE
        .iter()
        .find(|(s, _)| *s == suffix)
        .map_or(DEFAULT_CONTENT_TYPE, |(_, t)| t)
}

#[cfg(test)]
mod tests;
