//! Glob patterns, one matcher for every dialect the tools accept:
//!
//! - [`fnmatch`]: Python's `fnmatch.fnmatchcase` over a whole string (`*` and `?` cross `/`);
//! - [`PathGlob::rglob`]: pathlib's `rglob(pattern)` over the components of a relative path;
//! - [`PathGlob::recursive`]: TheRock's `RecursiveGlobPattern` (anchored at the root, `?` is a
//!   run of characters, no classes).

use std::cmp::Ordering;

/// One element of a compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// This character.
    Char(char),
    /// Any run of characters (`*`).
    Run,
    /// Any one character (`?`).
    One,
    /// A class (`[a-z]`, `[!abc]`): inclusive ranges, negated or not.
    Class {
        ranges: Vec<(char, char)>,
        negate: bool,
    },
}

impl Token {
    fn accepts(&self, c: char) -> bool {
        match self {
            Token::Char(lit) => *lit == c,
            Token::Run | Token::One => true,
            Token::Class { ranges, negate } => {
                ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negate
            }
        }
    }
}

/// Compiles fnmatch syntax: `*`, `?`, `[abc]`, `[a-z]`, `[!abc]` (a `]` first in a class is
/// a member; an unclosed `[` is a literal).
fn compile_fnmatch(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                if tokens.last() != Some(&Token::Run) {
                    tokens.push(Token::Run);
                }
                i += 1;
            }
            '?' => {
                tokens.push(Token::One);
                i += 1;
            }
            '[' => {
                if let Some((len, class)) = compile_class(&chars[i..]) {
                    tokens.push(class);
                    i += len;
                } else {
                    tokens.push(Token::Char('['));
                    i += 1;
                }
            }
            c => {
                tokens.push(Token::Char(c));
                i += 1;
            }
        }
    }
    tokens
}

/// Parses the class at the start of `pattern` (which begins with `[`): its length and token,
/// or `None` if it is not closed.
fn compile_class(pattern: &[char]) -> Option<(usize, Token)> {
    let mut i = 1;
    let negate = pattern.get(i) == Some(&'!');
    if negate {
        i += 1;
    }
    let start = i;
    let mut ranges = Vec::new();
    loop {
        let &lo = pattern.get(i)?;
        if lo == ']' && i > start {
            return Some((i + 1, Token::Class { ranges, negate }));
        }
        if pattern.get(i + 1) == Some(&'-') && pattern.get(i + 2).is_some_and(|&hi| hi != ']') {
            ranges.push((lo, pattern[i + 2]));
            i += 3;
        } else {
            ranges.push((lo, lo));
            i += 1;
        }
    }
}

/// Whether `tokens` match the whole of `text` (iterative, backtracking to the last run).
fn match_tokens(tokens: &[Token], text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut run: Option<(usize, usize)> = None;
    while t < text.len() {
        match tokens.get(p) {
            Some(Token::Run) => {
                run = Some((p, t));
                p += 1;
            }
            Some(token) if token.accepts(text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match run {
                Some((rp, rt)) => {
                    p = rp + 1;
                    t = rt + 1;
                    run = Some((rp, rt + 1));
                }
                None => return false,
            },
        }
    }
    tokens[p..].iter().all(|token| *token == Token::Run)
}

/// Python's `fnmatch.fnmatchcase`: the whole of `text` against `pattern`. `*` is any run of
/// characters and `?` any one character, both crossing `/`; `[abc]`, `[a-z]`, `[!abc]` are
/// classes (an unclosed `[` is a literal); case-sensitive on every platform.
///
/// ```
/// assert!(rock_ci_file_tree::fnmatch("*.tar.gz", "sub/a.tar.gz"));
/// assert!(!rock_ci_file_tree::fnmatch("*.WHL", "a.whl"));
/// ```
pub fn fnmatch(pattern: &str, text: &str) -> bool {
    match_tokens(&compile_fnmatch(pattern), text)
}

/// A glob over the components of a relative path: `**` as a whole component spans zero or
/// more components, every other component of the pattern matches exactly one component.
///
/// ```
/// use rock_ci_file_tree::PathGlob;
///
/// let glob = PathGlob::rglob("sub/*.txt");
/// assert!(glob.matches(&["x", "sub", "a.txt"]));
/// assert!(!glob.matches(&["sub", "deep", "a.txt"]));
/// assert!(PathGlob::recursive("**/cmake/**").matches_path("lib/cmake/hip/hip-config.cmake"));
/// ```
#[derive(Debug, Clone)]
pub struct PathGlob {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone)]
enum Segment {
    AnyDepth,
    Component(Vec<Token>),
}

impl PathGlob {
    /// pathlib's `rglob(pattern)`: a path matches when it matches `**/{pattern}`; empty and
    /// `.` components of the pattern are ignored, components are fnmatch globs.
    pub fn rglob(pattern: &str) -> Self {
        let mut segments = vec![Segment::AnyDepth];
        for part in pattern.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if part == "**" {
                if !matches!(segments.last(), Some(Segment::AnyDepth)) {
                    segments.push(Segment::AnyDepth);
                }
            } else {
                segments.push(Segment::Component(compile_fnmatch(part)));
            }
        }
        Self { segments }
    }

    /// TheRock's `RecursiveGlobPattern`: anchored at the root; in a pattern of several
    /// components a `**` component spans zero or more components (a pattern that is only `**`
    /// is one component); within a component `*` and `?` are both any run of characters and
    /// every other character is literal (no classes).
    pub fn recursive(pattern: &str) -> Self {
        let parts: Vec<&str> = pattern.split('/').collect();
        let mut segments = Vec::new();
        for part in &parts {
            if *part == "**" && parts.len() > 1 {
                if !matches!(segments.last(), Some(Segment::AnyDepth)) {
                    segments.push(Segment::AnyDepth);
                }
            } else {
                let mut tokens = Vec::new();
                for c in part.chars() {
                    match c {
                        '*' | '?' => {
                            if tokens.last() != Some(&Token::Run) {
                                tokens.push(Token::Run);
                            }
                        }
                        c => tokens.push(Token::Char(c)),
                    }
                }
                segments.push(Segment::Component(tokens));
            }
        }
        Self { segments }
    }

    /// Whether the relative path given as components matches.
    pub fn matches<S: AsRef<str>>(&self, components: &[S]) -> bool {
        match_segments(&self.segments, components)
    }

    /// Whether the `/`-joined relative path `relpath` matches.
    pub fn matches_path(&self, relpath: &str) -> bool {
        let components: Vec<&str> = relpath.split('/').collect();
        self.matches(&components)
    }
}

fn match_segments<S: AsRef<str>>(segments: &[Segment], components: &[S]) -> bool {
    match segments.split_first() {
        None => components.is_empty(),
        Some((Segment::AnyDepth, rest)) => {
            (0..=components.len()).any(|skip| match_segments(rest, &components[skip..]))
        }
        Some((Segment::Component(tokens), rest)) => {
            components.split_first().is_some_and(|(first, tail)| {
                match_tokens(tokens, first.as_ref()) && match_segments(rest, tail)
            })
        }
    }
}

/// Orders relative paths component by component: `A/z < a/b < a-b/x < a.txt` (the order of a
/// sorted walk, parents before their children).
pub fn cmp_components<S: AsRef<str>>(a: &[S], b: &[S]) -> Ordering {
    a.iter().map(AsRef::as_ref).cmp(b.iter().map(AsRef::as_ref))
}

#[cfg(test)]
mod tests;
