//! Paths as Windows programs show them: Python's `pathlib` prints `B:\build\logs` for
//! `Path("B:/build") / "logs"`, and `Path.resolve()` never shows the `\\?\` prefix that the
//! system's canonical form carries. On Unix both functions return the path unchanged.

use std::path::{Path, PathBuf};

/// `path` with every `/` turned into the native separator (on Windows `\`; elsewhere the
/// path as it is), so that a path given as `B:/build` and joined with `logs` prints as
/// `B:\build\logs`. A relative key such as `a/b/c` becomes a native relative path.
#[must_use]
pub fn native_path(path: impl Into<PathBuf>) -> PathBuf {
    let path = path.into();
    #[cfg(windows)]
    {
        let text = path.to_string_lossy();
        if text.contains('/') && path.to_str().is_some() {
            return PathBuf::from(text.replace('/', "\\"));
        }
    }
    path
}

/// `path` made absolute with symlinks resolved (`std::fs::canonicalize`), shown as Python's
/// `Path.resolve()` shows it: on Windows without the `\\?\` prefix where the rest is an
/// ordinary drive (`C:\x`) or network (`\\server\share\x`) path. The system adds the prefix
/// back by itself wherever a path is longer than its limit.
///
/// # Errors
/// The error of `canonicalize` (the path does not exist, a component is not a directory).
pub fn resolved(path: &Path) -> std::io::Result<PathBuf> {
    path.canonicalize().map(without_verbatim_prefix)
}

/// `path` without a `\\?\` prefix where the rest is an ordinary drive or network path (the
/// prefix is only ever present on Windows).
#[must_use]
pub fn without_verbatim_prefix(path: PathBuf) -> PathBuf {
    let Some(text) = path.to_str() else {
        return path;
    };
    if let Some(rest) = text.strip_prefix(r"\\?\UNC\") {
        return PathBuf::from(format!(r"\\{rest}"));
    }
    match text.strip_prefix(r"\\?\") {
        Some(rest) if is_drive_absolute(rest) => PathBuf::from(rest),
        _ => path,
    }
}

/// `C:\...`: a drive letter, a colon and a backslash.
fn is_drive_absolute(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\'
}

#[cfg(test)]
mod tests;
