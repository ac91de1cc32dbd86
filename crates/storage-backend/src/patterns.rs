//! The pattern languages of the reference (spec §5): "rglob" patterns for local trees and
//! fnmatch patterns for S3 listings, plus the directory walk they apply to.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

/// Matches `text` against a glob `pattern`: `*` any run of characters, `?` one character,
/// `[abc]`, `[a-z]`, `[!abc]` classes (an unclosed `[` is a literal). When `cross_slash` is
/// false, wildcards and classes never match `/`.
fn glob_match(pattern: &[char], text: &[char], cross_slash: bool) -> bool {
    // Iterative matcher with backtracking to the last `*`.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let c = text[t];
        let step = match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
                continue;
            }
            Some('?') => (cross_slash || c != '/').then_some(1),
            Some('[') => match class_match(&pattern[p..], c) {
                Some((len, matched)) => (matched && (cross_slash || c != '/')).then_some(len),
                None => (c == '[').then_some(1),
            },
            Some(&lit) => (lit == c).then_some(1),
            None => None,
        };
        if let Some(len) = step {
            p += len;
            t += 1;
        } else if let Some((sp, st)) = star {
            if !cross_slash && text[st] == '/' {
                return false;
            }
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Parses a class at the start of `pattern` (which begins with `[`). Returns its length and
/// whether `c` is in it, or `None` if the class is not closed.
fn class_match(pattern: &[char], c: char) -> Option<(usize, bool)> {
    let mut i = 1;
    let negate = matches!(pattern.get(i), Some('!'));
    if negate {
        i += 1;
    }
    let start = i;
    let mut matched = false;
    loop {
        let &lo = pattern.get(i)?;
        if lo == ']' && i > start {
            return Some((i + 1, matched != negate));
        }
        if pattern.get(i + 1) == Some(&'-') && pattern.get(i + 2).is_some_and(|&hi| hi != ']') {
            let hi = pattern[i + 2];
            matched |= lo <= c && c <= hi;
            i += 3;
        } else {
            matched |= lo == c;
            i += 1;
        }
    }
}

/// fnmatch (spec §5.2): the whole `path` against `pattern`; `*` and `?` cross `/`,
/// case-sensitive on every platform.
pub fn fnmatch(pattern: &str, path: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = path.chars().collect();
    glob_match(&p, &t, true)
}

/// An "rglob" pattern (spec §5.1): an entry matches when its `/`-joined path relative to the
/// walk root matches `**/{pattern}`, where `**` is zero or more whole components and every
/// other segment matches exactly one component.
#[derive(Debug, Clone)]
pub struct RglobPattern {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone)]
enum Segment {
    AnyDepth,
    Glob(Vec<char>),
}

impl RglobPattern {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Self {
        let mut segments = vec![Segment::AnyDepth];
        for part in pattern.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if part == "**" {
                if !matches!(segments.last(), Some(Segment::AnyDepth)) {
                    segments.push(Segment::AnyDepth);
                }
            } else {
                segments.push(Segment::Glob(part.chars().collect()));
            }
        }
        Self { segments }
    }

    /// Whether the relative path given as components matches.
    pub fn matches(&self, components: &[&str]) -> bool {
        let comps: Vec<Vec<char>> = components.iter().map(|c| c.chars().collect()).collect();
        match_segments(&self.segments, &comps)
    }
}

fn match_segments(segments: &[Segment], comps: &[Vec<char>]) -> bool {
    match segments.split_first() {
        None => comps.is_empty(),
        Some((Segment::AnyDepth, rest)) => {
            (0..=comps.len()).any(|skip| match_segments(rest, &comps[skip..]))
        }
        Some((Segment::Glob(g), rest)) => comps
            .split_first()
            .is_some_and(|(c, tail)| glob_match(g, c, false) && match_segments(rest, tail)),
    }
}

/// One entry of a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// Absolute (or root-joined) path.
    pub path: PathBuf,
    /// Components relative to the root.
    pub components: Vec<String>,
    /// A regular file that is not a symlink.
    pub is_file: bool,
    /// A symlink (to anything).
    pub is_symlink: bool,
    /// A symlink whose target is a regular file.
    pub is_symlink_to_file: bool,
}

impl WalkEntry {
    /// The relative path, `/`-joined.
    pub fn relative(&self) -> String {
        self.components.join("/")
    }
}

/// Every entry below `root` (files, directories, symlinks), not descending into symlinked
/// directories. Unreadable directories are errors.
pub fn walk(root: &Path) -> std::io::Result<Vec<WalkEntry>> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, prefix)) = stack.pop() {
        for entry in fs_err::read_dir(&dir)? {
            let entry = entry?;
            let file_type = entry.file_type()?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let mut components = prefix.clone();
            components.push(name);
            let path = entry.path();
            let is_symlink = file_type.is_symlink();
            let is_symlink_to_file =
                is_symlink && fs_err::metadata(&path).is_ok_and(|m| m.is_file());
            if file_type.is_dir() {
                stack.push((path.clone(), components.clone()));
            }
            out.push(WalkEntry {
                path,
                components,
                is_file: file_type.is_file(),
                is_symlink,
                is_symlink_to_file,
            });
        }
    }
    Ok(out)
}

/// Entries of `entries` matching any of `include` (all when empty) and none of `exclude`.
pub fn select<'a>(
    entries: &'a [WalkEntry],
    include: &[String],
    exclude: &[String],
) -> Vec<&'a WalkEntry> {
    let compile = |ps: &[String]| ps.iter().map(|p| RglobPattern::new(p)).collect::<Vec<_>>();
    let (inc, exc) = (compile(include), compile(exclude));
    entries
        .iter()
        .filter(|e| {
            let comps: Vec<&str> = e.components.iter().map(String::as_str).collect();
            (inc.is_empty() || inc.iter().any(|p| p.matches(&comps)))
                && !exc.iter().any(|p| p.matches(&comps))
        })
        .collect()
}

/// Orders relative paths component by component (spec §5.4): `A/z < a/b < a-b/x < a.txt`.
pub fn cmp_components(a: &[String], b: &[String]) -> Ordering {
    a.cmp(b)
}

#[cfg(test)]
mod tests {
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
    fn component_order() {
        let mut paths: Vec<Vec<String>> = ["a.txt", "a-b/x", "a/b", "A/z"]
            .iter()
            .map(|p| p.split('/').map(str::to_owned).collect())
            .collect();
        paths.sort_by(|a, b| cmp_components(a, b));
        let joined: Vec<String> = paths.iter().map(|p| p.join("/")).collect();
        assert_eq!(joined, ["A/z", "a/b", "a-b/x", "a.txt"]);
    }
}
