//! The artifact catalog (spec §2.1, §3): exploded artifact directories overlaid into one
//! relative-path namespace, glob include/exclude matching, and the artifact filters of §5.
//!
//! Unlike the reference (filesystem order), artifact directories and directory entries are
//! visited in sorted order, so the winner of a path two artifacts both provide is always the
//! one whose directory name sorts last, and every output is the same from run to run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use artifacts::ArtifactName;
use file_tree::PathGlob;

use crate::Error;

/// Compiled globs of the reference's `RecursiveGlobPattern` (§3).
#[derive(Debug, Clone, Default)]
struct Globs(Vec<PathGlob>);

impl Globs {
    fn new(globs: &[&str]) -> Self {
        Globs(globs.iter().map(|g| PathGlob::recursive(g)).collect())
    }

    /// Whether any glob matches the relative path given as components.
    fn any(&self, components: &[String]) -> bool {
        self.0.iter().any(|g| g.matches(components))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What a catalog entry is on disk (symlinks not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A real directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (to anything, even a directory, or dangling).
    Symlink,
}

/// One path of the overlaid namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The file on disk (inside the artifact that provided it last).
    pub path: PathBuf,
    /// Its kind.
    pub kind: EntryKind,
}

/// Selected artifact directories overlaid into one namespace.
#[derive(Debug, Clone, Default)]
pub struct ArtifactCatalog {
    /// `(artifact, manifest path that exists)`, in sorted artifact order.
    pub basedirs: Vec<(ArtifactName, PathBuf)>,
    entries: Vec<(String, Vec<String>, Entry)>,
    index: HashMap<String, usize>,
    includes: Globs,
    excludes: Globs,
}

impl ArtifactCatalog {
    /// Catalogs the artifact directories of `artifact_dir` that `filter` accepts; `includes`
    /// (when not empty) and `excludes` select the relative paths [`Self::matches`] yields.
    pub fn new(
        artifact_dir: &Path,
        filter: impl Fn(&ArtifactName) -> bool,
        includes: &[&str],
        excludes: &[&str],
    ) -> Result<Self, Error> {
        let mut catalog = ArtifactCatalog {
            includes: Globs::new(includes),
            excludes: Globs::new(excludes),
            ..Self::default()
        };
        for dir in file_tree::list(artifact_dir)? {
            let Some(name) = ArtifactName::from_dir_name(dir.name()) else {
                continue;
            };
            if !dir.path.is_dir() || !filter(&name) {
                continue;
            }
            let manifest = dir.path.join(artifacts::MANIFEST_NAME);
            let Ok(text) = fs_err::read_to_string(&manifest) else {
                continue;
            };
            for line in text.split('\n').filter(|l| !l.is_empty()) {
                let base = dir.path.join(line);
                if base.is_dir() {
                    catalog.basedirs.push((name.clone(), base.clone()));
                    catalog.scan(&base)?;
                }
            }
        }
        Ok(catalog)
    }

    /// Overlays the tree below `base`: a path seen before takes the new entry.
    fn scan(&mut self, base: &Path) -> Result<(), Error> {
        for e in file_tree::walk(base)? {
            let kind = if e.is_symlink {
                EntryKind::Symlink
            } else if e.is_dir {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            let relpath = e.relative();
            let entry = Entry { path: e.path, kind };
            if let Some(&i) = self.index.get(&relpath) {
                self.entries[i].2 = entry;
            } else {
                self.index.insert(relpath.clone(), self.entries.len());
                self.entries.push((relpath, e.components, entry));
            }
        }
        Ok(())
    }

    /// The artifacts that contributed a directory.
    pub fn artifact_names(&self) -> impl Iterator<Item = &ArtifactName> {
        self.basedirs.iter().map(|(n, _)| n)
    }

    /// Every path passing the includes and excludes, parents before children.
    pub fn matches(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries.iter().filter_map(|(rel, components, entry)| {
            let included = self.includes.is_empty() || self.includes.any(components);
            (included && !self.excludes.any(components)).then_some((rel.as_str(), entry))
        })
    }
}

/// Artifact names of the core package (§5).
pub(crate) const CORE_NAMES: [&str; 27] = [
    "amd-dbgapi",
    "amd-llvm",
    "aqlprofile",
    "base",
    "core-amdsmi",
    "core-hip",
    "core-kpack",
    "core-ocl",
    "core-hipinfo",
    "core-runtime",
    "hipfile",
    "hipify",
    "host-blas",
    "host-suite-sparse",
    "rocdecode",
    "rocgdb",
    "rocjpeg",
    "rocprofiler-sdk",
    "rocr-debug-agent",
    "sysdeps",
    "sysdeps-amd-mesa",
    "sysdeps-expat",
    "sysdeps-gmp",
    "sysdeps-mpfr",
    "sysdeps-ncurses",
    "sysdeps-util-linux",
    "wsl-rocdxg",
];

/// Artifact names of the libraries package.
pub(crate) const LIB_NAMES: [&str; 10] = [
    "blas",
    "fft",
    "hipdnn",
    "miopen",
    "miopenprovider",
    "hipblasltprovider",
    "hipkernelprovider",
    "rand",
    "rccl",
    "rpp",
];

/// Paths the core package leaves to the profiler package.
pub(crate) const CORE_EXCLUDES: [&str; 8] = [
    "**/cmake/**",
    "bin/rocprof-*",
    "include/rocprofiler-systems/**",
    "lib/librocprof-sys*",
    "lib/python/site-packages/rocprofsys/**",
    "lib/rocprofiler-systems/**",
    "libexec/rocprofiler-systems/**",
    "share/**/rocprofiler-systems/**",
];

/// The paths of the profiler package.
pub(crate) const PROFILER_WHEEL_INCLUDES: [&str; 12] = [
    "bin/rocprof-sys-*",
    "include/rocprofiler-systems/**",
    "lib/librocprof-sys*",
    "lib/libprofiler-hub.so*",
    "lib/python/site-packages/rocprofsys/**",
    "lib/rocprofiler-systems/**",
    "libexec/rocprofiler-systems/**",
    "share/**/rocprofiler-systems/**",
    "bin/rocprof-*",
    "libexec/rocprofiler-compute/**",
    "lib/rocprofiler-compute/**",
    "share/**/rocprofiler-compute/**",
];

/// The core package's artifacts.
pub(crate) fn core_filter(a: &ArtifactName) -> bool {
    (CORE_NAMES.contains(&a.name()) && matches!(a.component(), "lib" | "run"))
        || (a.name() == "rocjitsu-hotswap" && a.component() == "lib")
        || (matches!(a.name(), "core-hip" | "core-ocl") && a.component() == "dev")
}

/// The libraries package's artifacts for target family `family` (plus generic ones).
pub(crate) fn libraries_filter(family: &str) -> impl Fn(&ArtifactName) -> bool + '_ {
    move |a| {
        LIB_NAMES.contains(&a.name())
            && a.component() == "lib"
            && (a.target_family() == family || a.target_family() == "generic")
    }
}

/// The device package's artifacts for GPU target `target` (xnack variants merged).
pub(crate) fn device_filter(target: &str) -> impl Fn(&ArtifactName) -> bool + '_ {
    move |a| {
        LIB_NAMES.contains(&a.name())
            && a.name() != "rpp"
            && a.component() == "lib"
            && a.target_family() != "generic"
            && crate::names::base_target(a.target_family()) == target
    }
}

/// The profiler package's artifacts.
pub(crate) fn profiler_filter(a: &ArtifactName) -> bool {
    matches!(a.name(), "rocprofiler-compute" | "rocprofiler-systems")
        && matches!(a.component(), "lib" | "run")
}

#[cfg(test)]
mod tests;
