//! `elf-patch`: stands in for `patchelf` in scripts, for the options the ROCm tooling uses.
//! Edits are made in-process and verified before anything is written; printed values are the
//! file's before the edit, as patchelf prints them.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser};
use elf_patch::{Edit, Print};

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
    let mut edit = Edit::default();
    edit.set_rpath.clone_from(&args.set_rpath);
    edit.add_rpath.clone_from(&args.add_rpath);
    edit.force_rpath = args.force_rpath;
    edit.set_soname.clone_from(&args.set_soname);
    edit.replace_needed = args
        .replace_needed
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    edit.remove_rpath = args.remove_rpath;
    edit.shrink_rpath = args.shrink_rpath;
    edit.allowed_rpath_prefixes =
        Edit::prefixes_of(args.allowed_rpath_prefixes.as_deref().unwrap_or_default());
    let print = Print {
        interpreter: args.print_interpreter,
        soname: args.print_soname,
        rpath: args.print_rpath,
        needed: args.print_needed,
    };
    let mut stdout = std::io::stdout().lock();
    elf_patch::run_files(
        &args.files,
        print,
        &edit,
        args.output.as_deref(),
        &mut stdout,
    )?;
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
