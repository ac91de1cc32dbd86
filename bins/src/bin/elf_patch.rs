//! `elf-patch`: stands in for `patchelf` in scripts, for the options the ROCm tooling uses.
//! Edits are made in-process and verified before anything is written; printed values are the
//! file's before the edit, as patchelf prints them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{CommandFactory as _, Parser};
use elf_patch::Edit;

/// Print or change the SONAME, RPATH/RUNPATH and NEEDED entries of ELF files.
#[derive(Debug, Parser)]
#[command(name = "elf-patch", version)]
#[expect(
    clippy::struct_excessive_bools,
    clippy::doc_markdown,
    reason = "command-line flags; the comments are help text"
)]
struct Args {
    /// Print DT_SONAME (nothing when there is none).
    #[arg(long)]
    print_soname: bool,
    /// Print DT_RUNPATH if present, else DT_RPATH (an empty line when neither exists).
    #[arg(long)]
    print_rpath: bool,
    /// Print the DT_NEEDED entries, one per line.
    #[arg(long)]
    print_needed: bool,
    /// Print the program interpreter.
    #[arg(long)]
    print_interpreter: bool,
    /// Replace the search path.
    #[arg(long, value_name = "RPATH")]
    set_rpath: Option<String>,
    /// Append to the search path (with `:`); may be given several times, applied in order.
    #[arg(long, value_name = "RPATH")]
    add_rpath: Vec<String>,
    /// Remove DT_RPATH and DT_RUNPATH (takes precedence over --set-rpath and --add-rpath).
    #[arg(long)]
    remove_rpath: bool,
    /// Keep only the search-path entries that are relative or hold a DT_NEEDED library (takes
    /// precedence over every other search-path edit).
    #[arg(long)]
    shrink_rpath: bool,
    /// With --shrink-rpath, also drop absolute entries starting with none of these
    /// (`:`-separated) prefixes.
    #[arg(long, value_name = "PREFIXES")]
    allowed_rpath_prefixes: Option<String>,
    /// Write the search path as DT_RPATH (converting DT_RUNPATH) instead of DT_RUNPATH.
    #[arg(long)]
    force_rpath: bool,
    /// Set DT_SONAME (added when missing).
    #[arg(long, value_name = "SONAME")]
    set_soname: Option<String>,
    /// Replace the DT_NEEDED entry LIBRARY by NEW_LIBRARY (and its version requirements).
    #[arg(long, num_args = 2, value_names = ["LIBRARY", "NEW_LIBRARY"])]
    replace_needed: Vec<String>,
    /// Write the result to FILE instead of editing the input (one input only).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The ELF files.
    #[arg(required = true, value_name = "FILENAME")]
    files: Vec<PathBuf>,
}

fn run(args: &Args) -> anyhow::Result<()> {
    let edit = Edit {
        set_rpath: args.set_rpath.clone(),
        add_rpath: args.add_rpath.clone(),
        force_rpath: args.force_rpath,
        set_soname: args.set_soname.clone(),
        replace_needed: args
            .replace_needed
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect(),
        remove_rpath: args.remove_rpath,
        shrink_rpath: args.shrink_rpath,
        allowed_rpath_prefixes: args
            .allowed_rpath_prefixes
            .iter()
            .flat_map(|p| p.split(':'))
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
    };
    let mut failures = Vec::new();
    let mut stdout = std::io::stdout().lock();
    for file in &args.files {
        let result = (|| -> anyhow::Result<()> {
            print_before(args, file, &mut stdout)?;
            if !edit.is_empty() || args.output.is_some() {
                elf_patch::patch_file_to(file, args.output.as_deref(), &edit)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            failures.push(format!("{e:#}"));
        }
    }
    match failures.len() {
        0 => Ok(()),
        1 => Err(anyhow::anyhow!(failures.remove(0))),
        n => Err(anyhow::anyhow!(
            "{n} files failed:\n  {}",
            failures.join("\n  ")
        )),
    }
}

/// Prints what was asked for, from the file as it is before any edit (patchelf prints each
/// value before applying the edits).
fn print_before(args: &Args, file: &Path, out: &mut impl Write) -> anyhow::Result<()> {
    let printing =
        args.print_interpreter || args.print_soname || args.print_rpath || args.print_needed;
    if !printing {
        return Ok(());
    }
    let info = elf_patch::read_file(file)?;
    if args.print_interpreter {
        let interp = info
            .interpreter
            .as_deref()
            .with_context(|| format!("{}: no program interpreter", file.display()))?;
        writeln!(out, "{interp}")?;
    }
    if args.print_soname
        && let Some(soname) = &info.soname
    {
        writeln!(out, "{soname}")?;
    }
    if args.print_rpath {
        writeln!(out, "{}", info.search_path().unwrap_or_default())?;
    }
    if args.print_needed {
        for needed in &info.needed {
            writeln!(out, "{needed}")?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.output.is_some() && args.files.len() != 1 {
        Args::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--output needs exactly one input file",
            )
            .exit();
    }
    rock_ci::exit_code(run(&args))
}
