//! What the `elf-patch` command does with its files: print the requested values of each, as
//! patchelf prints them (from the file before any edit), then apply one edit to each, going on
//! after a failed file.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Edit, Error, patch_file_to, read_file};

/// The values to print for each file, in patchelf's order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "one switch per printed value"
)]
pub struct Print {
    /// The program interpreter (`--print-interpreter`); a file without one is an error.
    pub interpreter: bool,
    /// `DT_SONAME`, nothing when there is none (`--print-soname`).
    pub soname: bool,
    /// [`crate::DynamicInfo::search_path`], an empty line when there is none
    /// (`--print-rpath`).
    pub rpath: bool,
    /// The `DT_NEEDED` entries, one per line (`--print-needed`).
    pub needed: bool,
}

impl Print {
    fn any(self) -> bool {
        self.interpreter || self.soname || self.rpath || self.needed
    }
}

/// Writes the values `print` asks for of the ELF file at `file` to `out`, one per line.
///
/// # Errors
/// [`read_file`]'s errors, [`Error::NoInterpreter`], and [`Error::Output`] when `out` fails.
pub fn print_values(file: &Path, print: Print, out: &mut dyn Write) -> Result<(), Error> {
    if !print.any() {
        return Ok(());
    }
    let info = read_file(file)?;
    let mut lines = Vec::new();
    if print.interpreter {
        let interp = info
            .interpreter
            .as_deref()
            .ok_or_else(|| Error::NoInterpreter {
                path: file.to_path_buf(),
            })?;
        lines.push(interp);
    }
    if print.soname
        && let Some(soname) = &info.soname
    {
        lines.push(soname);
    }
    if print.rpath {
        lines.push(info.search_path().unwrap_or_default());
    }
    if print.needed {
        lines.extend(info.needed.iter().map(String::as_str));
    }
    for line in lines {
        writeln!(out, "{line}").map_err(Error::Output)?;
    }
    Ok(())
}

/// For each of `files` in order: prints its values ([`print_values`]), then applies `edit`
/// with [`patch_file_to`] (into `output` when given) unless the edit is empty and there is no
/// output. A failed file does not stop the others.
///
/// # Errors
/// The one file's error, or [`Error::Failed`] with each failure when several failed.
pub fn run_files(
    files: &[PathBuf],
    print: Print,
    edit: &Edit,
    output: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let mut failures: Vec<Error> = files
        .iter()
        .filter_map(|file| {
            print_values(file, print, out).err().or_else(|| {
                (!edit.is_empty() || output.is_some())
                    .then(|| patch_file_to(file, output, edit).err())
                    .flatten()
            })
        })
        .collect();
    match failures.len() {
        0 => Ok(()),
        1 => Err(failures.remove(0)),
        _ => Err(Error::Failed(failures)),
    }
}

// The fixtures are ELF libraries built with `cc`: about Linux itself.
#[cfg(all(test, unix))]
mod tests;
