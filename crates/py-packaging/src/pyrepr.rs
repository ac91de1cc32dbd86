//! Python's `repr()` of a `str` (spec §6.5), so generated Python files are byte-identical to
//! the reference's and hostile strings stay inert data.

use crate::push;
use unicode_general_category::{GeneralCategory, get_general_category};

/// Whether Python's `str.isprintable()` holds for `c`.
fn printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::Surrogate
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::SpaceSeparator
    )
}

/// `repr(s)` as `CPython` writes it.
pub(crate) fn repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x100 => push(&mut out, format_args!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x1_0000 => push(&mut out, format_args!("\\u{:04x}", c as u32)),
            c => push(&mut out, format_args!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// `repr(value)` for an optional string (`None`).
pub(crate) fn repr_opt(value: Option<&str>) -> String {
    value.map_or_else(|| "None".to_owned(), repr)
}

#[cfg(test)]
mod tests;
