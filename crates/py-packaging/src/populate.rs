//! The population engine of the runtime packages (spec §8.1–§8.3): the catalog's paths are
//! copied into the package's platform tree, SONAME symlink chains collapse to the file named
//! by the SONAME (the other names become aliases the devel package recreates), symlinks to
//! executables become exe stubs, and every ELF gets its RPATH extended towards its dependency
//! packages and written as `DT_RPATH` — in-process, one read and one write per file, files in
//! parallel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use elf_patch::{Edit, FileType};
use rayon::prelude::*;

use crate::Error;
use crate::catalog::{ArtifactCatalog, EntryKind};
use crate::names::Logical;
use crate::stub::StubCache;
use file_tree::FileError;

/// A directory of another package a package's ELF files find libraries in: `subdir` of the
/// platform package `platform` (e.g. `_rocm_sdk_core`, `lib/llvm/lib`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RpathDep {
    /// The dependency's platform package name.
    pub platform: String,
    /// A directory inside it.
    pub subdir: String,
}

/// One package instance being staged.
#[derive(Debug, Clone)]
pub(crate) struct Package {
    /// Which package.
    pub logical: Logical,
    /// Its target family or GPU target, if target-specific.
    pub target: Option<String>,
    /// `<dest>/<staging name>`.
    pub staging: PathBuf,
    /// The platform package (`_rocm_sdk_core{N}`).
    pub platform_name: String,
    /// Where its ELF files look for libraries, in order.
    pub rpath_deps: Vec<RpathDep>,
    /// Relative path → written file.
    pub materialized: BTreeMap<String, PathBuf>,
    /// Relative path → the SONAME it is an alias of (not written).
    pub soname_aliases: BTreeMap<String, String>,
    /// Relative path → why it is not in the package (the reference drops these silently).
    pub dropped: BTreeMap<String, String>,
}

/// What to do with one catalog path.
enum Job {
    Copy { relpath: String, source: PathBuf },
    Stub { relpath: String, link_text: String },
}

/// The RPATH entries of a file at `relpath` inside a platform package (spec §10.4): as many
/// `..` as `relpath` has components, then the dependency's platform package and subdirectory.
pub(crate) fn rpath_entries(relpath: &str, deps: &[RpathDep]) -> Vec<String> {
    let up = vec![".."; relpath.split('/').filter(|c| !c.is_empty()).count()].join("/");
    deps.iter()
        .map(|d| format!("$ORIGIN/{up}/{}/{}", d.platform, d.subdir))
        .collect()
}

/// The edit of a runtime ELF: the dependency entries appended to its search path, written as
/// `DT_RPATH` (the reference's `--add-rpath` calls then `--set-rpath --force-rpath`).
pub(crate) fn runtime_edit(relpath: &str, deps: &[RpathDep]) -> Edit {
    let mut edit = Edit::default();
    edit.add_rpath = rpath_entries(relpath, deps);
    edit.force_rpath = true;
    edit
}

/// ELF files from this size on are edited one at a time, mapped rather than read.
const LARGE_ELF: u64 = 64 << 20;
static LARGE_ELF_EDITS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Copies `source` to `dest` (mode kept plus owner-write, mtime kept); an executable or shared
/// object gets `edit` applied on the way, when it has a dynamic section (a static program has
/// no search path to extend).
pub(crate) fn copy_with_edit(source: &Path, dest: &Path, edit: Option<&Edit>) -> Result<(), Error> {
    let meta = fs_err::metadata(source).map_err(|e| FileError::read(source, e))?;
    #[cfg(unix)]
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) | 0o200;
    #[cfg(not(unix))]
    let mode = 0o644;
    let edit = match edit {
        Some(edit) if starts_with_elf_magic(source)? => edit,
        _ => return copy_as_is(source, dest, &meta, mode),
    };
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let edits = |data: &[u8]| {
        matches!(
            elf_patch::classify_bytes(&name, data),
            FileType::Exe | FileType::So
        ) && elf_patch::Elf::parse(data).is_ok_and(|e| e.has_string_table())
    };
    if meta.len() >= LARGE_ELF {
        // Large files are edited one at a time (as the reference's patchelf runs), mapped: the
        // edited copy and the pages of the tables read are held, not the file twice.
        let _large = LARGE_ELF_EDITS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let image = elf_patch::MappedFile::open(source).map_err(|e| large_error(source, e))?;
        let patched = if edits(image.bytes()) {
            crate::timing::timed(crate::timing::Stage::Elf, || image.patch(edit))
                .map_err(|e| large_error(source, e))?
        } else {
            None
        };
        drop(image);
        return match patched {
            Some(data) => write_edited(dest, &data, mode, &meta),
            None => copy_as_is(source, dest, &meta, mode),
        };
    }
    let mut data = fs_err::read(source).map_err(|e| FileError::read(source, e))?;
    if edits(&data) {
        match crate::timing::timed(crate::timing::Stage::Elf, || elf_patch::patch(&data, edit)) {
            Ok(Some(patched)) => data = patched,
            Ok(None) => {}
            Err(e) => {
                return Err(Error::Rpath {
                    file: source.to_path_buf(),
                    source: e,
                });
            }
        }
    }
    write_edited(dest, &data, mode, &meta)
}

/// The error of classifying, reading or editing the ELF file `source`.
fn large_error(source: &Path, e: elf_patch::Error) -> Error {
    match e {
        elf_patch::Error::Elf { source: reason, .. } => Error::Rpath {
            file: source.to_path_buf(),
            source: reason,
        },
        elf_patch::Error::Io { source: reason, .. } => FileError::read(source, reason).into(),
        // Not a regular file (the path was replaced since it was looked at), and so on.
        other => FileError::read(source, std::io::Error::other(other.to_string())).into(),
    }
}

/// Copies `source` to `dest` unchanged: the kernel copies the bytes (no pass through this
/// process); `dest` gets `mode` and the mtime of `meta`.
fn copy_as_is(
    source: &Path,
    dest: &Path,
    meta: &std::fs::Metadata,
    mode: u32,
) -> Result<(), Error> {
    if let Some(parent) = dest.parent() {
        fs_err::create_dir_all(parent).map_err(|e| FileError::write(parent, e))?;
    }
    if fs_err::symlink_metadata(dest).is_ok() {
        fs_err::remove_file(dest).map_err(|e| FileError::write(dest, e))?;
    }
    fs_err::copy(source, dest).map_err(|e| FileError::write(dest, e))?;
    #[cfg(unix)]
    fs_err::set_permissions(dest, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .map_err(|e| FileError::write(dest, e))?;
    #[cfg(not(unix))]
    let _ = mode;
    set_mtime(dest, meta)
}

/// Writes `data` as `dest` with `mode` and the mtime of `meta`.
fn write_edited(
    dest: &Path,
    data: &[u8],
    mode: u32,
    meta: &std::fs::Metadata,
) -> Result<(), Error> {
    if let Some(parent) = dest.parent() {
        fs_err::create_dir_all(parent).map_err(|e| FileError::write(parent, e))?;
    }
    crate::write_file(dest, data, mode)?;
    set_mtime(dest, meta)
}

/// Whether the file at `path` begins with the ELF magic (a shorter file does not).
fn starts_with_elf_magic(path: &Path) -> Result<bool, Error> {
    let mut magic = [0u8; 4];
    let mut file = fs_err::File::open(path).map_err(|e| FileError::read(path, e))?;
    match std::io::Read::read_exact(&mut file, &mut magic) {
        Ok(()) => Ok(&magic == b"\x7fELF"),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(FileError::read(path, e).into()),
    }
}

/// Gives `dest` the modification time of `meta` (the source's).
fn set_mtime(dest: &Path, meta: &std::fs::Metadata) -> Result<(), Error> {
    if let Ok(mtime) = meta.modified() {
        let file = fs_err::File::options()
            .write(true)
            .open(dest)
            .map_err(|e| FileError::write(dest, e))?;
        file.file()
            .set_modified(mtime)
            .map_err(|e| FileError::write(dest, e))?;
    }
    Ok(())
}

/// The SONAME of a shared object, or `None` (read from its headers, not the whole file).
fn soname_of(path: &Path) -> Result<Option<String>, Error> {
    elf_patch::file_soname(path)
        .map(|s| s.filter(|s| !s.is_empty()))
        .map_err(|e| FileError::read(path, e).into())
}

impl Package {
    /// A package staged under `staging` with platform package `platform_name`.
    pub(crate) fn new(
        logical: Logical,
        target: Option<String>,
        staging: PathBuf,
        platform_name: String,
        rpath_deps: Vec<RpathDep>,
    ) -> Self {
        Package {
            logical,
            target,
            staging,
            platform_name,
            rpath_deps,
            materialized: BTreeMap::new(),
            soname_aliases: BTreeMap::new(),
            dropped: BTreeMap::new(),
        }
    }

    /// `<staging>/platform/<platform_name>`, created with an empty `__init__.py`.
    pub(crate) fn platform_dir(&self) -> Result<PathBuf, Error> {
        let dir = self.staging.join("platform").join(&self.platform_name);
        fs_err::create_dir_all(&dir).map_err(|e| FileError::write(&dir, e))?;
        let init = dir.join("__init__.py");
        if !init.exists() {
            fs_err::write(&init, "").map_err(|e| FileError::write(&init, e))?;
        }
        Ok(dir)
    }

    /// Stages the runtime files of `catalog` (spec §8.1). Paths this package already has are
    /// skipped. Returns the number of files written.
    pub(crate) fn populate_runtime(
        &mut self,
        catalog: &ArtifactCatalog,
        stubs: &StubCache,
        elf_fixups: bool,
    ) -> Result<usize, Error> {
        let platform = self.platform_dir()?;
        let mut jobs = Vec::new();
        for (relpath, entry) in catalog.matches() {
            if self.materialized.contains_key(relpath) || self.soname_aliases.contains_key(relpath)
            {
                continue;
            }
            let basename = relpath.rsplit('/').next().unwrap_or(relpath);
            match entry.kind {
                EntryKind::Dir => {
                    let dir = platform.join(relpath);
                    fs_err::create_dir_all(&dir).map_err(|e| FileError::write(&dir, e))?;
                }
                EntryKind::Symlink => {
                    let link = || {
                        fs_err::read_link(&entry.path)
                            .map(|t| t.display().to_string())
                            .unwrap_or_default()
                    };
                    let Ok(resolved) = fs_err::canonicalize(&entry.path) else {
                        self.dropped.insert(
                            relpath.to_owned(),
                            format!("a dangling symlink (to `{}`)", link()),
                        );
                        continue;
                    };
                    if resolved.is_dir() {
                        self.dropped.insert(
                            relpath.to_owned(),
                            format!("a symlink to a directory (`{}`)", link()),
                        );
                        continue;
                    }
                    let kind =
                        elf_patch::file_type(&resolved).map_err(|e| large_error(&resolved, e))?;
                    if kind == FileType::So
                        && let Some(soname) = soname_of(&resolved)?
                        && soname != basename
                    {
                        self.soname_aliases.insert(relpath.to_owned(), soname);
                        continue;
                    }
                    if kind == FileType::Exe {
                        let text = fs_err::read_link(&entry.path)
                            .map_err(|e| FileError::read(&entry.path, e))?;
                        jobs.push(Job::Stub {
                            relpath: relpath.to_owned(),
                            link_text: text.to_string_lossy().into_owned(),
                        });
                    } else {
                        jobs.push(Job::Copy {
                            relpath: relpath.to_owned(),
                            source: resolved,
                        });
                    }
                }
                EntryKind::File => {
                    let kind = elf_patch::file_type(&entry.path)
                        .map_err(|e| large_error(&entry.path, e))?;
                    if kind == FileType::So
                        && let Some(soname) = soname_of(&entry.path)?
                        && soname != basename
                    {
                        self.soname_aliases.insert(relpath.to_owned(), soname);
                        continue;
                    }
                    jobs.push(Job::Copy {
                        relpath: relpath.to_owned(),
                        source: entry.path.clone(),
                    });
                }
            }
        }
        let deps = &self.rpath_deps;
        let written: Vec<(String, PathBuf)> = jobs
            .into_par_iter()
            .map(|job| match job {
                Job::Copy { relpath, source } => {
                    let dest = platform.join(&relpath);
                    let edit = elf_fixups.then(|| runtime_edit(&relpath, deps));
                    copy_with_edit(&source, &dest, edit.as_ref())?;
                    Ok((relpath, dest))
                }
                Job::Stub { relpath, link_text } => {
                    let dest = platform.join(&relpath);
                    stubs.get()?.write(&dest, &link_text)?;
                    Ok((relpath, dest))
                }
            })
            .collect::<Result<_, Error>>()?;
        let n = written.len();
        self.materialized.extend(written);
        self.report_aliases_of_nothing();
        Ok(n)
    }

    /// An alias stands for the file named by its SONAME beside it: without that file, the
    /// library itself is missing from the package, which [`Package::dropped`] says.
    fn report_aliases_of_nothing(&mut self) {
        for (relpath, soname) in &self.soname_aliases {
            let sibling = match relpath.rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/{soname}"),
                None => soname.clone(),
            };
            if !self.materialized.contains_key(&sibling)
                && !self.soname_aliases.contains_key(&sibling)
            {
                self.dropped.entry(relpath.clone()).or_insert_with(|| {
                    format!(
                        "a shared library whose SONAME `{soname}` names no file of the artifacts"
                    )
                });
            }
        }
    }
}
