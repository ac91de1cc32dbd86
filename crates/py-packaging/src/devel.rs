//! Device packages and their link manifests (spec §8.4–§8.5), the devel package and its
//! tarball (§8.6–§8.7), and the profiler fix-ups (§8.8).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use artifacts::{ArchiveWriter, Compression};
use elf_patch::{Edit, FileType};
use rayon::prelude::*;

use crate::Error;
use crate::catalog::{ArtifactCatalog, EntryKind};
use crate::populate::{Package, copy_with_edit, runtime_edit};
use file_tree::FileError;

/// A JSON string literal as Python's `json.dumps` writes it (non-ASCII as `\uXXXX`).
fn json_string(s: &str) -> String {
    let text = serde_json::to_string(s).expect("strings serialize");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                crate::push(&mut out, format_args!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// The `.devel_links/<T>.json` document: `json.dumps({"version": V, "links": [...]},
/// indent=2)`, keys in that order, no final newline (spec §8.5).
pub(crate) fn links_manifest(version: &str, links: &[(String, String)]) -> String {
    let mut out = format!(
        "{{\n  \"version\": {},\n  \"links\": ",
        json_string(version)
    );
    if links.is_empty() {
        out.push_str("[]");
    } else {
        out.push_str("[\n");
        let items: Vec<String> = links
            .iter()
            .map(|(relpath, target)| {
                format!(
                    "    {{\n      \"relpath\": {},\n      \"target\": {}\n    }}",
                    json_string(relpath),
                    json_string(target)
                )
            })
            .collect();
        out.push_str(&items.join(",\n"));
        out.push_str("\n  ]");
    }
    out.push_str("\n}");
    out
}

fn up(relpath: &str) -> String {
    "../".repeat(relpath.split('/').filter(|c| !c.is_empty()).count())
}

#[cfg(unix)]
fn make_symlink(target: &str, link: &Path) -> Result<(), Error> {
    if fs_err::symlink_metadata(link).is_ok() {
        fs_err::remove_file(link).map_err(|e| FileError::write(link, e))?;
    }
    if let Some(parent) = link.parent() {
        fs_err::create_dir_all(parent).map_err(|e| FileError::write(parent, e))?;
    }
    Ok(std::os::unix::fs::symlink(target, link).map_err(|e| FileError::write(link, e))?)
}

#[cfg(not(unix))]
fn make_symlink(target: &str, link: &Path) -> Result<(), Error> {
    Err(Error::NoSymlinks {
        link: link.to_path_buf(),
        target: target.to_owned(),
    })
}

/// The links of a devel tree being staged, which the tarball stores as symlinks. On Unix they
/// are symlinks. Where making one needs a privilege (Windows), each is a stand-in file holding
/// the link text, known by its path here: the tree only exists to be written to the tarball,
/// and is removed then.
#[derive(Default)]
struct DevelLinks {
    /// Stand-in path → link text.
    #[cfg(not(unix))]
    stand_ins: HashMap<PathBuf, String>,
}

impl DevelLinks {
    /// Makes `link` a link to `target`, replacing what is there.
    #[cfg(unix)]
    #[expect(
        clippy::unused_self,
        reason = "the Windows stand-ins are recorded in self"
    )]
    fn make(&mut self, target: &str, link: &Path) -> Result<(), Error> {
        make_symlink(target, link)
    }

    #[cfg(not(unix))]
    fn make(&mut self, target: &str, link: &Path) -> Result<(), Error> {
        if fs_err::symlink_metadata(link).is_ok() {
            fs_err::remove_file(link).map_err(|e| FileError::write(link, e))?;
        }
        if let Some(parent) = link.parent() {
            fs_err::create_dir_all(parent).map_err(|e| FileError::write(parent, e))?;
        }
        fs_err::write(link, target).map_err(|e| FileError::write(link, e))?;
        self.stand_ins.insert(link.to_path_buf(), target.to_owned());
        Ok(())
    }

    /// A walk of `dir` (stand-ins read as the symlinks they stand for) and, per entry, its
    /// link text when it is a link: each symlink is read once.
    #[cfg_attr(
        unix,
        expect(
            clippy::unused_self,
            reason = "the Windows stand-ins are recorded in self"
        )
    )]
    fn walk(&self, dir: &Path) -> Result<(Vec<file_tree::Entry>, Vec<Option<PathBuf>>), Error> {
        let mut entries = file_tree::walk(dir)?;
        let mut texts = Vec::with_capacity(entries.len());
        for e in &mut entries {
            #[cfg(not(unix))]
            if let Some(text) = self.stand_ins.get(&e.path) {
                e.is_symlink = true;
                e.is_file = false;
                e.is_symlink_to_file = e.path.parent().is_some_and(|p| p.join(text).is_file());
                texts.push(Some(PathBuf::from(text)));
                continue;
            }
            texts.push(if e.is_symlink {
                Some(fs_err::read_link(&e.path).map_err(|err| FileError::read(&e.path, err))?)
            } else {
                None
            });
        }
        Ok((entries, texts))
    }
}

/// Whether `entry` (with link text `text` when it is a link) is a directory or a link that
/// resolves to one.
fn resolves_to_dir(entry: &file_tree::Entry, text: Option<&PathBuf>) -> bool {
    match text {
        Some(text) => entry
            .path
            .parent()
            .is_some_and(|parent| parent.join(text).is_dir()),
        None => entry.is_dir,
    }
}

/// The edit that writes an ELF's existing search path as `DT_RPATH` (spec §10.5), if it has
/// one.
pub(crate) fn normalize_edit(path: &Path) -> Result<Option<Edit>, Error> {
    let data = fs_err::read(path).map_err(|e| FileError::read(path, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if !matches!(
        elf_patch::classify_bytes(&name, &data),
        FileType::Exe | FileType::So
    ) {
        return Ok(None);
    }
    let Ok(info) = elf_patch::read_bytes(&data) else {
        return Ok(None);
    };
    Ok(info.search_path().filter(|p| !p.is_empty()).map(|p| {
        let mut edit = Edit::default();
        edit.set_rpath = Some(p.to_owned());
        edit.force_rpath = true;
        edit
    }))
}

impl Package {
    /// Stages a kpack device package (spec §8.4): every matched path is copied (symlinks
    /// dereferenced, ELF RPATHs extended), and `platform/<name>/.devel_links/<target>.json`
    /// lists where the devel package links each file.
    pub(crate) fn populate_device(
        &mut self,
        catalog: &ArtifactCatalog,
        version: &str,
        elf_fixups: bool,
    ) -> Result<(), Error> {
        let platform = self.platform_dir()?;
        let target = self.target.clone().ok_or(Error::NoTarget {
            package: self.logical.as_str(),
        })?;
        let mut links = Vec::new();
        let mut copies = Vec::new();
        for (relpath, entry) in catalog.matches() {
            if self.materialized.contains_key(relpath) {
                continue;
            }
            let dest = platform.join(relpath);
            let is_dir = entry.path.is_dir();
            if is_dir {
                fs_err::create_dir_all(&dest).map_err(|e| FileError::write(&dest, e))?;
                continue;
            }
            let source = if entry.kind == EntryKind::Symlink {
                fs_err::canonicalize(&entry.path).map_err(|e| FileError::read(&entry.path, e))?
            } else {
                entry.path.clone()
            };
            links.push((
                relpath.to_owned(),
                format!("{}{}/{relpath}", up(relpath), self.platform_name),
            ));
            copies.push((relpath.to_owned(), source, dest));
        }
        let deps = &self.rpath_deps;
        copies.par_iter().try_for_each(|(relpath, source, dest)| {
            let edit = elf_fixups.then(|| runtime_edit(relpath, deps));
            copy_with_edit(source, dest, edit.as_ref())
        })?;
        self.materialized
            .extend(copies.into_iter().map(|(r, _, d)| (r, d)));
        let manifest = platform
            .join(".devel_links")
            .join(format!("{}.json", artifacts::base_target(&target)));
        fs_err::create_dir_all(manifest.parent().expect("has a parent"))
            .map_err(|e| FileError::write(&manifest, e))?;
        fs_err::write(&manifest, links_manifest(version, &links))
            .map_err(|e| FileError::write(&manifest, e))?;
        Ok(())
    }

    /// Stages the devel package (spec §8.6) from `catalog` (the devel artifact selection):
    /// paths another package ships become relative symlinks into it, SONAME aliases become
    /// links to the SONAME, the rest is copied (ELF search paths normalized to `DT_RPATH`).
    /// Then writes the tarball (§8.7), announced on `out`, and removes the platform tree.
    /// Returns the tarball.
    pub(crate) fn populate_devel(
        &mut self,
        catalog: &ArtifactCatalog,
        registered: &[&Package],
        compression: bool,
        mtime: u64,
        elf_fixups: bool,
        out: &mut dyn std::io::Write,
    ) -> Result<PathBuf, Error> {
        let platform = self.platform_dir()?;
        let visible: Vec<&&Package> = registered
            .iter()
            .filter(|p| match (&self.target, &p.target) {
                (Some(mine), Some(theirs)) => mine == theirs,
                _ => true,
            })
            .collect();
        let mut copies = Vec::new();
        let mut links = DevelLinks::default();
        for (relpath, entry) in catalog.matches() {
            let dest = platform.join(relpath);
            if entry.kind == EntryKind::Dir {
                fs_err::create_dir_all(&dest).map_err(|e| FileError::write(&dest, e))?;
                continue;
            }
            if let Some(soname) = visible.iter().find_map(|p| p.soname_aliases.get(relpath)) {
                links.make(soname, &dest)?;
            } else if let Some(owner) = visible
                .iter()
                .find(|p| p.materialized.contains_key(relpath))
            {
                links.make(
                    &format!("{}{}/{relpath}", up(relpath), owner.platform_name),
                    &dest,
                )?;
            } else if entry.kind == EntryKind::Symlink {
                let text =
                    fs_err::read_link(&entry.path).map_err(|e| FileError::read(&entry.path, e))?;
                links.make(&text.to_string_lossy(), &dest)?;
            } else {
                copies.push((relpath.to_owned(), entry.path.clone(), dest));
            }
        }
        crate::timing::timed(crate::timing::Stage::Populate, || {
            copies.par_iter().try_for_each(|(_, source, dest)| {
                let edit = if elf_fixups {
                    normalize_edit(source)?
                } else {
                    None
                };
                copy_with_edit(source, dest, edit.as_ref())
            })
        })?;
        self.materialized
            .extend(copies.into_iter().map(|(r, _, d)| (r, d)));

        let pure = crate::names::Logical::Devel.entry().pure_py_package;
        let name = if compression {
            "_devel.tar.xz"
        } else {
            "_devel.tar"
        };
        let tarball = self.staging.join("src").join(pure).join(name);
        fs_err::create_dir_all(tarball.parent().expect("has a parent"))
            .map_err(|e| FileError::write(&tarball, e))?;
        let mode = if compression {
            Compression::Xz {
                preset: artifacts::DEFAULT_XZ_PRESET,
            }
        } else {
            Compression::None
        };
        writeln!(
            out,
            "::: Building secondary devel tarball: {}",
            tarball.display()
        )
        .map_err(Error::Output)?;
        crate::timing::timed(crate::timing::Stage::DevelTarball, || {
            let mut writer = ArchiveWriter::create(&tarball, mode)?;
            let root = self.staging.join("platform");
            write_tree(&mut writer, &root, &platform, mtime, &links)?;
            writer.finish()?;
            Ok::<_, Error>(())
        })?;
        // Readable by all, as a file Python's `tarfile` creates under the usual umask (the
        // archive writer's temporary file is private).
        #[cfg(unix)]
        fs_err::set_permissions(
            &tarball,
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .map_err(|e| FileError::write(&tarball, e))?;
        fs_err::remove_dir_all(&platform).map_err(|e| FileError::write(&platform, e))?;
        Ok(tarball)
    }
}

/// Adds the members below `dir` in the order of [`member_order`].
fn write_tree(
    writer: &mut ArchiveWriter,
    root: &Path,
    dir: &Path,
    mtime: u64,
    links: &DevelLinks,
) -> Result<(), Error> {
    let (entries, texts) = links.walk(dir)?;
    let base = dir.strip_prefix(root).expect("below the root");
    for i in member_order(&entries, &texts) {
        let e = &entries[i];
        let arcname = e
            .components
            .iter()
            .fold(base.to_path_buf(), |p, c| p.join(c))
            .to_string_lossy()
            .replace('\\', "/");
        // A stand-in is stored as the symlink it stands for.
        #[cfg(not(unix))]
        if let Some(text) = &texts[i] {
            writer.append_symlink(&arcname, &text.to_string_lossy(), mtime)?;
            continue;
        }
        writer.append_normalized(&arcname, &e.path, mtime)?;
    }
    Ok(())
}

/// The member order of the devel tarball, as indices into `entries` (a walk of the tree).
///
/// The base is the reference's walk: per directory its files (and links to files, dangling
/// links), then its sub-directories (and links to directories), then the contents of each real
/// sub-directory; names sorted within each group. Then every symlink whose target is another
/// member is preceded by that target (and the target's parent directories), so that the
/// expansion, which hardlinks a link only when its target already exists, hardlinks every link
/// to a file of the tree. A target is moved forward only after a file of the top directory has
/// been added: the expansion empties a directory when it first meets a file in it.
/// `texts` holds each entry's link text when it is a link.
fn member_order(entries: &[file_tree::Entry], texts: &[Option<PathBuf>]) -> Vec<usize> {
    let index: HashMap<&[String], usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.components.as_slice(), i))
        .collect();
    let mut children: HashMap<&[String], Vec<usize>> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let parent = &e.components[..e.components.len() - 1];
        children.entry(parent).or_default().push(i);
    }
    // The walk lists the real directories in the order the reference descends into them.
    let dirs = std::iter::once(&[][..]).chain(
        entries
            .iter()
            .filter(|e| e.is_dir)
            .map(|e| e.components.as_slice()),
    );
    let mut base = Vec::with_capacity(entries.len());
    for d in dirs {
        let Some(members) = children.get(d) else {
            continue;
        };
        let (subdirs, files): (Vec<usize>, Vec<usize>) = members
            .iter()
            .partition(|&&i| resolves_to_dir(&entries[i], texts[i].as_ref()));
        base.extend(files.into_iter().chain(subdirs));
    }
    let mut targets = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(text) = &texts[i]
            && let Some(t) = link_member(&index, entries, &e.components, text)
        {
            targets.insert(i, t);
        }
    }
    let mut order = Ordering {
        entries,
        index: &index,
        targets: &targets,
        first_top_file: base
            .iter()
            .copied()
            .find(|&i| entries[i].components.len() == 1 && entries[i].is_file),
        top_seen: false,
        state: vec![Mark::Pending; entries.len()],
        out: Vec::with_capacity(entries.len()),
    };
    for i in base {
        order.emit(i);
    }
    order.out
}

/// The member a symlink at `components` with link text `text` names, if it is a file or a
/// link of the tree reached through real directories only (so the lexical path is the path
/// the file system resolves).
fn link_member(
    index: &HashMap<&[String], usize>,
    entries: &[file_tree::Entry],
    components: &[String],
    text: &Path,
) -> Option<usize> {
    if text.is_absolute() {
        return None;
    }
    let mut cur: Vec<String> = components[..components.len() - 1].to_vec();
    let parts: Vec<String> = text
        .to_string_lossy()
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .map(str::to_owned)
        .collect();
    let (last, dirs) = parts.split_last()?;
    for p in dirs {
        if p == ".." {
            cur.pop()?;
        } else {
            cur.push(p.clone());
            let e = &entries[*index.get(cur.as_slice())?];
            if !e.is_dir || e.is_symlink {
                return None;
            }
        }
    }
    if last == ".." {
        return None;
    }
    cur.push(last.clone());
    let t = *index.get(cur.as_slice())?;
    (!entries[t].is_dir).then_some(t)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Pending,
    Visiting,
    Done,
}

/// The state of [`member_order`].
struct Ordering<'a> {
    entries: &'a [file_tree::Entry],
    index: &'a HashMap<&'a [String], usize>,
    targets: &'a HashMap<usize, usize>,
    first_top_file: Option<usize>,
    top_seen: bool,
    state: Vec<Mark>,
    out: Vec<usize>,
}

impl Ordering<'_> {
    fn emit(&mut self, i: usize) {
        if self.state[i] != Mark::Pending {
            return;
        }
        self.state[i] = Mark::Visiting;
        let components = &self.entries[i].components;
        for k in 1..components.len() {
            if let Some(&parent) = self.index.get(&components[..k]) {
                self.emit(parent);
            }
        }
        if let Some(&t) = self.targets.get(&i)
            && self.state[t] == Mark::Pending
        {
            match self.first_top_file {
                Some(first) if !self.top_seen && first != i => {
                    self.emit(first);
                }
                _ => {}
            }
            if self.top_seen || self.entries[t].components.len() == 1 {
                self.emit(t);
            }
        }
        if components.len() == 1 && !self.entries[i].is_dir {
            self.top_seen = true;
        }
        self.state[i] = Mark::Done;
        self.out.push(i);
    }
}

/// The profiler fix-ups (spec §8.8) in `platform`: `libfoo.so.N` gets a `libfoo.so` alias
/// link (the last dot-suffix dropped) unless one exists, and `bin/rocprof-compute` links to
/// the libexec launcher when only the latter exists.
pub(crate) fn profiler_fixups(platform: &Path) -> Result<(), Error> {
    let lib = platform.join("lib");
    if lib.is_dir() {
        let patterns = ["librocprof-sys", "libprofiler-hub"];
        for e in file_tree::list(&lib)? {
            let name = e.name();
            let matches = patterns
                .iter()
                .any(|p| name.starts_with(p) && name[p.len()..].contains(".so."));
            if !matches || e.is_symlink {
                continue;
            }
            let Some((alias, _)) = name.rsplit_once('.') else {
                continue;
            };
            let alias_path = lib.join(alias);
            if !alias_path.exists() && fs_err::symlink_metadata(&alias_path).is_err() {
                make_symlink(name, &alias_path)?;
            }
        }
    }
    let launcher = platform.join(file_tree::native_path(
        "libexec/rocprofiler-compute/rocprof-compute",
    ));
    let bin = platform.join("bin").join("rocprof-compute");
    if launcher.exists() && fs_err::symlink_metadata(&bin).is_err() {
        make_symlink("../libexec/rocprofiler-compute/rocprof-compute", &bin)?;
    }
    Ok(())
}
