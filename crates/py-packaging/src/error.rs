//! The errors of the packaging steps: each names the thing that is wrong and chains its cause
//! once (a cause is a `source`, never also part of the message).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use file_tree::FileError;

/// What went wrong. The messages are the reference's where it has one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a local file failed.
    #[error(transparent)]
    File(#[from] FileError),
    /// Writing an archive failed.
    #[error(transparent)]
    Archive(#[from] artifacts::Error),
    /// No package templates: none given and no checkout found.
    #[error(
        "no package templates: pass --templates-dir or --therock-dir, or run inside a TheRock checkout"
    )]
    NoTemplates,
    /// `version.json` or the GPU family table is needed and no checkout was given or found.
    #[error("--therock-dir is needed to read version.json and the GPU family table")]
    NoCheckout,
    /// The working directory cannot be read.
    #[error(transparent)]
    CurrentDir(std::io::Error),
    /// The GPU family table cannot be read.
    #[error(transparent)]
    Checkout(#[from] build_topology::CheckoutError),
    /// A family list names families the table does not know.
    #[error(transparent)]
    UnknownFamilies(#[from] build_topology::UnknownFamilies),
    /// `SOURCE_DATE_EPOCH` is no whole number of seconds.
    #[error("SOURCE_DATE_EPOCH={value:?} is not a number of seconds")]
    SourceDateEpoch {
        /// The value.
        value: String,
        /// Why it does not parse.
        #[source]
        source: std::num::ParseIntError,
    },
    /// Writing the progress lines failed.
    #[error("Failed to write the progress output")]
    Output(#[source] std::io::Error),
    /// TheRock's build manifest is not among the artifacts.
    #[error(
        "therock_manifest.json not found at {}. Is base_lib_generic present in {}?",
        path.display(),
        artifact_dir.display()
    )]
    MissingManifest {
        /// Where it was looked for.
        path: PathBuf,
        /// The artifact directory.
        artifact_dir: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// A JSON document does not parse.
    #[error("Invalid JSON in `{}`", file.display())]
    Json {
        /// The file (or what it is).
        file: PathBuf,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// `version.json` sets no `rocm-version`.
    #[error("rocm-version must be set in version.json")]
    NoRocmVersion,
    /// A field of `version.json` is malformed.
    #[error(
        "{field} in version.json must be {expected}{}",
        got.as_ref().map(|g| format!(", got {g:?}")).unwrap_or_default()
    )]
    VersionField {
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
        /// What it is, when that helps.
        got: Option<String>,
    },
    /// A logical package name that does not exist.
    #[error(
        "Logical package name {name} not found (of dict_keys([{}]))",
        quoted(known)
    )]
    UnknownPackage {
        /// The name asked for.
        name: String,
        /// The known names.
        known: Vec<String>,
    },
    /// A target-specific package was asked for without a target.
    #[error("Package {package} is target specific, but no target specified")]
    NoTarget {
        /// The logical package.
        package: &'static str,
    },
    /// The template of a package is missing.
    #[error("Python package template {} does not exist", template.display())]
    MissingTemplate {
        /// The template directory.
        template: PathBuf,
    },
    /// No profiler artifact was found where the profiler package is required.
    #[error("No profiler artifacts found; refusing to build an empty rocm-profiler package")]
    NoProfilerArtifacts,
    /// The artifacts lack GPU targets the host's target list names.
    #[error(
        "KPACK_SPLIT_ARTIFACTS target completeness check failed: missing fetched artifact targets: {}. Expected targets: {}. Discovered artifact targets in {}: {}. The fetched/extracted artifact catalog is incomplete; refusing to build a partial device wheel set.",
        missing.join(", "),
        list_or_none(expected),
        artifact_dir.display(),
        list_or_none(discovered)
    )]
    IncompleteTargets {
        /// The targets without artifacts.
        missing: Vec<String>,
        /// The targets of the host's list.
        expected: BTreeSet<String>,
        /// The targets of the artifacts.
        discovered: BTreeSet<String>,
        /// The artifact directory.
        artifact_dir: PathBuf,
    },
    /// Packages a publisher needs are missing from a `dist` directory.
    #[error(
        "Required kpack-split Python packages are missing from {}: {}. Present files: {}. Refusing to publish an incomplete Python package set.",
        dist.display(),
        missing.join(", "),
        list_or_none(present)
    )]
    IncompleteDist {
        /// The `dist` directory.
        dist: PathBuf,
        /// The patterns no file matches.
        missing: Vec<String>,
        /// The files there.
        present: BTreeSet<String>,
    },
    /// A program could not be started.
    #[error("Failed to run `{program}`")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A Python step on a staged package failed.
    #[error("{}: {what} failed: {stderr}", package.display())]
    Python {
        /// The staged package directory.
        package: PathBuf,
        /// The step.
        what: String,
        /// Python's standard error.
        stderr: String,
    },
    /// `setup()` of a staged package printed arguments that do not parse.
    #[error("{}: unreadable setup() arguments", package.display())]
    SetupArguments {
        /// The staged package directory.
        package: PathBuf,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// `setup()` of a staged package lacks a required argument.
    #[error("{}: setup() has no {field}", package.display())]
    SetupField {
        /// The staged package directory.
        package: PathBuf,
        /// The argument.
        field: &'static str,
    },
    /// A Python package `setup()` declares has no directory.
    #[error("package {package}: directory {} does not exist", dir.display())]
    MissingPackageDir {
        /// The dotted package name.
        package: String,
        /// The directory it should be in.
        dir: PathBuf,
    },
    /// Writing a wheel's zip failed.
    #[error("Failed to write the wheel `{}`", wheel.display())]
    Zip {
        /// The wheel (or the file whose entry was being compressed).
        wheel: PathBuf,
        /// Why.
        #[source]
        source: zip::result::ZipError,
    },
    /// The interpreter's setuptools would write a different `rocm` sdist.
    #[error(
        "`{python}` ({executable}) has {}; the rocm sdist needs setuptools >= {minimum} (older versions write a different PKG-INFO). Install a newer setuptools for this interpreter or choose another with --python",
        if found.is_empty() { "no setuptools".to_owned() } else { format!("setuptools {found}") }
    )]
    OldSetuptools {
        /// `--python` as given.
        python: String,
        /// The interpreter's `sys.executable`.
        executable: String,
        /// The setuptools version found (empty: none).
        found: String,
        /// The oldest suitable version.
        minimum: &'static str,
    },
    /// The sdist build wrote no `rocm` sdist.
    #[error("No rocm sdist produced in {}", dist.display())]
    NoSdist {
        /// The `dist` directory.
        dist: PathBuf,
    },
    /// A member of the sdist could not be read back.
    #[error("Could not extract regular file {member} from {}", sdist.display())]
    SdistMember {
        /// The member's name.
        member: String,
        /// The sdist.
        sdist: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The normalized sdist came out empty.
    #[error("Normalized sdist missing or empty: {}", sdist.display())]
    EmptySdist {
        /// The sdist.
        sdist: PathBuf,
    },
    /// An ELF file's search path could not be rewritten.
    #[error("{}: cannot extend the RPATH", file.display())]
    Rpath {
        /// The ELF file.
        file: PathBuf,
        /// Why.
        #[source]
        source: elf_patch::ElfError,
    },
    /// The C compiler failed on the exe link stub.
    #[error("`{compiler}` failed to build the exe link stub: {stderr}")]
    StubCompiler {
        /// The compiler.
        compiler: String,
        /// Its standard error.
        stderr: String,
    },
    /// The compiled exe link stub has no usable target slot.
    #[error("the compiled exe stub's target slot is {problem}")]
    StubSlot {
        /// `missing` or `truncated`.
        problem: &'static str,
    },
    /// A link target does not fit an exe link stub.
    #[error("{}: link target too long for an exe stub ({len} bytes)", link.display())]
    StubTargetTooLong {
        /// The stub being written.
        link: PathBuf,
        /// The target's length.
        len: usize,
    },
    /// Building the exe link stub failed earlier in the run.
    #[error(transparent)]
    Stub(Arc<Error>),
    /// Symlinks cannot be made on this host.
    #[error("{}: symlinks to {target} need a POSIX host", link.display())]
    NoSymlinks {
        /// The link.
        link: PathBuf,
        /// Its target.
        target: String,
    },
}

/// The items quoted and joined as Python prints a list of strings (without the brackets).
fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("'{i}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The items joined with `, `, or `(none)`.
pub(crate) fn list_or_none(items: &BTreeSet<String>) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.iter().cloned().collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests;
