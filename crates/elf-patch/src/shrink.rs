//! `--shrink-rpath`: patchelf's rule for which search-path entries to keep.

use std::io::Read as _;
use std::path::Path;

/// The entries of `path` (`:`-separated, a trailing empty entry dropped) that patchelf 0.19's
/// `--shrink-rpath` keeps: every entry not starting with `/` (`$ORIGIN/..`, relative ones);
/// an absolute entry (the empty one counts as `/`) only when it starts with one of
/// `allowed_prefixes` (when any are given) and holds a library of `needed` not found in an
/// earlier entry, as an ELF file whose `e_machine` is `machine`. `machine_of` reads a file's
/// `e_machine` (`None` when it is missing or not ELF).
pub(crate) fn shrink(
    path: &[u8],
    needed: &[Vec<u8>],
    machine: u16,
    allowed_prefixes: &[String],
    machine_of: &dyn Fn(&Path) -> Option<u16>,
) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = path.split(|b| *b == b':').collect();
    if parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    let mut found = vec![false; needed.len()];
    let mut kept = Vec::new();
    let mut keep = |dir: &[u8]| {
        if !kept.is_empty() {
            kept.push(b':');
        }
        kept.extend_from_slice(dir);
    };
    for dir in parts {
        if dir.first().is_some_and(|b| *b != b'/') {
            keep(dir);
            continue;
        }
        if !allowed_prefixes.is_empty()
            && !allowed_prefixes
                .iter()
                .any(|p| dir.starts_with(p.as_bytes()))
        {
            continue;
        }
        let mut holds_one = false;
        for (lib, seen) in needed.iter().zip(found.iter_mut()) {
            if *seen {
                continue;
            }
            let mut candidate = dir.to_vec();
            candidate.push(b'/');
            candidate.extend_from_slice(lib);
            if path_of(&candidate).and_then(machine_of) == Some(machine) {
                *seen = true;
                holds_one = true;
            }
        }
        if holds_one {
            keep(dir);
        }
    }
    kept
}

/// The path the bytes of a search-path entry name: any bytes on unix; on Windows only UTF-8
/// (other bytes name no file there).
#[cfg_attr(
    unix,
    expect(clippy::unnecessary_wraps, reason = "`None` is for Windows")
)]
fn path_of(bytes: &[u8]) -> Option<&Path> {
    #[cfg(unix)]
    return Some(Path::new(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes),
    ));
    #[cfg(not(unix))]
    return std::str::from_utf8(bytes).ok().map(Path::new);
}

/// The `e_machine` of the ELF file at `path` in its own byte order; `None` when it cannot be
/// read or is not ELF.
pub(crate) fn machine_of(path: &Path) -> Option<u16> {
    let mut head = [0u8; 20];
    fs_err::File::open(path).ok()?.read_exact(&mut head).ok()?;
    if !crate::is_elf(&head) {
        return None;
    }
    let bytes = [head[18], head[19]];
    match head[5] {
        object::elf::ELFDATA2MSB => Some(u16::from_be_bytes(bytes)),
        _ => Some(u16::from_le_bytes(bytes)),
    }
}

#[cfg(test)]
mod tests;
