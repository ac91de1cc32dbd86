//! Which names of archive members cannot exist on Windows. Extraction there refuses such a
//! member, naming it, rather than writing some other name (Windows drops trailing dots and
//! spaces, and opens the device for `NUL` or `con.txt` wherever they are).

/// Why `component` (one name between separators) cannot be a file or directory name on
/// Windows; `None` when it can.
pub(crate) fn problem(component: &str) -> Option<String> {
    if let Some(c) = component
        .chars()
        .find(|c| matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*' | '\\') || c.is_control())
    {
        return Some(format!(
            "`{component}` holds {}, which Windows does not allow in a name",
            match c {
                c if c.is_control() => format!("the control character {:#04x}", u32::from(c)),
                c => format!("`{c}`"),
            }
        ));
    }
    if component.ends_with(['.', ' ']) && component != "." && component != ".." {
        return Some(format!(
            "`{component}` ends with a dot or a space, which Windows drops from a name"
        ));
    }
    // A device name is reserved with any extension (`NUL.txt`) and trailing spaces (`CON `).
    let stem = component
        .split('.')
        .next()
        .unwrap_or(component)
        .trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    let device = matches!(
        upper.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) || ((upper.starts_with("COM") || upper.starts_with("LPT"))
        && stem.chars().count() == 4
        && stem
            .chars()
            .nth(3)
            .is_some_and(|d| matches!(d, '1'..='9' | '¹' | '²' | '³')));
    device.then(|| format!("`{component}` is the reserved device name `{stem}` on Windows"))
}

#[cfg(test)]
mod tests;
