//! Wheels written natively (spec §13.3): what a package ships and its metadata come from the
//! template's own `setup.py`, evaluated once by Python with `setup()` captured (no setuptools
//! build, no per-file Python); the zip — `.dist-info` with `METADATA`, `WHEEL`,
//! `entry_points.txt`, `top_level.txt` and `RECORD` last — is written here, deterministically.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::zipout::{Method, ZipOut};

/// The default deflate level of wheel entries: libdeflate's level 6, whose output is smaller
/// than what the reference's zlib (level 6) writes for the same files, at about a third of its
/// CPU (table in the crate README).
pub const DEFAULT_DEFLATE_LEVEL: u32 = 6;

use crate::Error;
use file_tree::FileError;

/// How [`build_wheel`] writes a wheel; `WheelOptions::default()`: `python3`, deflate at
/// [`DEFAULT_DEFLATE_LEVEL`], entries stamped with [`crate::DEFAULT_EPOCH`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WheelOptions {
    /// The Python that evaluates the package's `setup.py` (setuptools is not needed).
    pub python: String,
    /// Deflate level 1-9; 0 stores the entries uncompressed.
    pub deflate_level: u32,
    /// Modification time of every entry, in seconds since the epoch (`SOURCE_DATE_EPOCH`).
    pub mtime: u64,
}

impl Default for WheelOptions {
    fn default() -> Self {
        WheelOptions {
            python: "python3".to_owned(),
            deflate_level: DEFAULT_DEFLATE_LEVEL,
            mtime: crate::DEFAULT_EPOCH,
        }
    }
}

/// Writes the wheel of the package in `package_dir` (a `setup.py` calling
/// `setuptools.setup()`, and what it declares) into `dist_dir`, as `build_python_packages`
/// writes each of its wheels: `setup.py` evaluated once with its `setup()` call captured, the
/// zip written here deterministically with `RECORD` last. A package ships its modules, with
/// `include_package_data=True` every file below it, and the files `package_data` names (paths,
/// not patterns). Returns the wheel's path; the wheel is written under a temporary name and
/// renamed once complete.
///
/// # Errors
/// [`Error`] naming `setup.py` when Python fails on it, or the file that could not be read or
/// written.
pub fn build_wheel(
    package_dir: &Path,
    dist_dir: &Path,
    options: &WheelOptions,
) -> Result<PathBuf, Error> {
    let decl = read_setup(package_dir, &options.python, &[])?;
    let method = if options.deflate_level == 0 {
        Method::Stored
    } else {
        Method::Deflated(options.deflate_level.clamp(1, 9))
    };
    write_wheel(package_dir, &decl, dist_dir, method, options.mtime)
}

/// Evaluates `setup.py` with `setuptools.setup` replaced by a recorder (and a minimal
/// `setuptools` when none is installed); prints the arguments and the host platform as JSON.
const CAPTURE: &str = r#"
import contextlib, io, json, os, runpy, sys, sysconfig, types
pkgdir = os.path.abspath(sys.argv[1])
captured = {}
def setup(**kw):
    captured.update(kw)
try:
    import setuptools
except ImportError:
    setuptools = types.ModuleType("setuptools")
    def find_packages(where=".", exclude=(), include=("*",)):
        found = []
        def walk(d, prefix):
            for name in sorted(os.listdir(d)):
                full = os.path.join(d, name)
                if os.path.isdir(full) and name.isidentifier() and os.path.isfile(os.path.join(full, "__init__.py")):
                    found.append(prefix + name)
                    walk(full, prefix + name + ".")
        walk(where, "")
        return found
    setuptools.find_packages = find_packages
    sys.modules["setuptools"] = setuptools
setuptools.setup = setup
os.chdir(pkgdir)
sys.path.insert(0, pkgdir)
sys.argv = [os.path.join(pkgdir, "setup.py"), "bdist_wheel"]
with contextlib.redirect_stdout(io.StringIO()):
    runpy.run_path(sys.argv[0], run_name="__main__")
for key in ("extras_require", "entry_points"):
    if isinstance(captured.get(key), dict):
        captured[key] = [[k, v] for k, v in captured[key].items()]
json.dump({"setup": captured, "platform": sysconfig.get_platform()}, sys.stdout, default=list)
"#;

/// What a template's `setup()` call declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SetupDecl {
    /// `name`.
    pub name: String,
    /// `version`.
    pub version: String,
    /// `description`.
    pub description: Option<String>,
    /// `python_requires`.
    pub python_requires: Option<String>,
    /// `packages`.
    pub packages: Vec<String>,
    /// `package_dir`.
    pub package_dir: BTreeMap<String, String>,
    /// `package_data`.
    pub package_data: BTreeMap<String, Vec<String>>,
    /// `include_package_data`.
    pub include_package_data: bool,
    /// `install_requires`.
    pub install_requires: Vec<String>,
    /// `extras_require`, in declaration order.
    pub extras_require: Vec<(String, Vec<String>)>,
    /// `entry_points`: group → `name = target` lines.
    pub entry_points: Vec<(String, Vec<String>)>,
    /// `options["bdist_wheel"]["plat_name"]`, else the host's `sysconfig.get_platform()`.
    pub plat_name: String,
}

fn strings(v: Option<&serde_json::Value>) -> Vec<String> {
    match v {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        Some(serde_json::Value::String(s)) => s.lines().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// A mapping, as an object or (declaration order kept) as a list of `[key, value]` pairs.
fn pairs(v: Option<&serde_json::Value>) -> Vec<(String, Vec<String>)> {
    match v {
        Some(serde_json::Value::Object(m)) => m
            .iter()
            .map(|(k, v)| (k.clone(), strings(Some(v))))
            .collect(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|pair| Some((pair.get(0)?.as_str()?.to_owned(), strings(pair.get(1)))))
            .collect(),
        _ => Vec::new(),
    }
}

/// Runs the template's `setup.py` in `staging` once with `python` and returns its
/// declaration. `env` is added to Python's environment.
pub(crate) fn read_setup(
    staging: &Path,
    python: &str,
    env: &[(String, String)],
) -> Result<SetupDecl, Error> {
    let stdout = crate::run_python(python, CAPTURE, staging, staging, env, "setup.py")?;
    // Extras and entry points arrive as lists of pairs: serde_json keeps maps sorted.
    let doc: serde_json::Value =
        serde_json::from_str(&stdout).map_err(|source| Error::SetupArguments {
            package: staging.to_path_buf(),
            source,
        })?;
    let s = &doc["setup"];
    let text = |k: &str| {
        s.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let map = |k: &str| -> BTreeMap<String, String> {
        s.get(k)
            .and_then(serde_json::Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let plat_name = s
        .pointer("/options/bdist_wheel/plat_name")
        .and_then(serde_json::Value::as_str)
        .or_else(|| doc["platform"].as_str())
        .unwrap_or("any")
        .to_owned();
    Ok(SetupDecl {
        name: text("name").ok_or_else(|| Error::SetupField {
            package: staging.to_path_buf(),
            field: "name",
        })?,
        version: text("version").ok_or_else(|| Error::SetupField {
            package: staging.to_path_buf(),
            field: "version",
        })?,
        description: text("description"),
        python_requires: text("python_requires"),
        packages: strings(s.get("packages")),
        package_dir: map("package_dir"),
        package_data: pairs(s.get("package_data")).into_iter().collect(),
        include_package_data: s
            .get("include_package_data")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        install_requires: strings(s.get("install_requires")),
        extras_require: pairs(s.get("extras_require")),
        entry_points: pairs(s.get("entry_points")),
        plat_name,
    })
}

/// The wheel tag's platform: lower case, `-` and `.` → `_`.
pub(crate) fn platform_tag(plat_name: &str) -> String {
    plat_name.to_lowercase().replace(['-', '.'], "_")
}

/// The distribution name as wheel file names spell it: runs of `-_.` → `_`, lower case.
pub fn escaped_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

impl SetupDecl {
    /// The directory of package `pkg` (dotted), relative to the staging dir.
    fn package_path(&self, pkg: &str) -> PathBuf {
        if let Some(dir) = self.package_dir.get(pkg) {
            return PathBuf::from(dir);
        }
        let mut parts: Vec<&str> = pkg.split('.').collect();
        let mut tail = Vec::new();
        while let Some(last) = parts.pop() {
            tail.insert(0, last);
            let prefix = parts.join(".");
            if let Some(dir) = self.package_dir.get(&prefix) {
                return tail.iter().fold(PathBuf::from(dir), |p, c| p.join(c));
            }
        }
        tail.iter().fold(PathBuf::new(), |p, c| p.join(c))
    }

    /// Archive name → file, for everything the wheel ships (spec §13.3), sorted.
    pub(crate) fn files(&self, staging: &Path) -> Result<BTreeMap<String, PathBuf>, Error> {
        let package_dirs: BTreeSet<PathBuf> = self
            .packages
            .iter()
            .map(|p| staging.join(self.package_path(p)))
            .collect();
        let mut files = BTreeMap::new();
        for pkg in &self.packages {
            let dir = staging.join(self.package_path(pkg));
            let arc = pkg.replace('.', "/");
            if !dir.is_dir() {
                return Err(Error::MissingPackageDir {
                    package: pkg.clone(),
                    dir,
                });
            }
            collect(
                &dir,
                &arc,
                self.include_package_data,
                &package_dirs,
                &mut files,
            )?;
            for rel in self.package_data.get(pkg).into_iter().flatten() {
                let path = dir.join(rel);
                if path.is_file() {
                    files.insert(format!("{arc}/{}", rel.replace('\\', "/")), path);
                }
            }
        }
        Ok(files)
    }
}

/// Adds the modules of `dir` (and, with `data`, every other file below it that no other
/// package owns, symlinks followed) under `arc`.
fn collect(
    dir: &Path,
    arc: &str,
    data: bool,
    package_dirs: &BTreeSet<PathBuf>,
    files: &mut BTreeMap<String, PathBuf>,
) -> Result<(), Error> {
    let ext = |e: &file_tree::Entry| {
        Path::new(e.name())
            .extension()
            .and_then(|x| x.to_str())
            .map(str::to_owned)
    };
    let entries = file_tree::Walk::new(dir)
        .follow_links(true)
        .max_depth(if data { usize::MAX } else { 1 })
        .entries_where(|e| {
            let skipped =
                e.name() == "__pycache__" || matches!(ext(e).as_deref(), Some("pyc" | "egg-info"));
            !skipped && (!e.is_dir || (data && !package_dirs.contains(&e.path)))
        })?;
    for e in entries {
        if e.is_file && (data || (e.depth() == 1 && ext(&e).as_deref() == Some("py"))) {
            files.insert(format!("{arc}/{}", e.relative()), e.path);
        }
    }
    Ok(())
}

/// An extra's name as setuptools writes it (PEP 685 `safe_extra`): runs of characters other
/// than ASCII letters and digits become `-`, no `-` at either end, lower case.
pub(crate) fn safe_extra(extra: &str) -> String {
    let mut out = String::with_capacity(extra.len());
    for c in extra.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// Whether an environment marker has an `or` outside parentheses and quotes.
pub(crate) fn top_level_or(marker: &str) -> bool {
    let (mut depth, mut quote) = (0usize, None);
    for (i, c) in marker.char_indices() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, _) if depth == 0 && marker[i..].starts_with(" or ") => return true,
            _ => {}
        }
    }
    false
}

/// `METADATA` as setuptools (≥ 77, metadata 2.4) writes it for the same `setup()`: the fields
/// in its order, every requirement after `Requires-Python`, each extra's requirements after
/// its `Provides-Extra`, then a `Dynamic:` line for every field `setup()` filled.
fn metadata(decl: &SetupDecl) -> String {
    let mut m = format!(
        "Metadata-Version: 2.4\nName: {}\nVersion: {}\n",
        decl.name, decl.version
    );
    let summary = decl.description.as_deref().filter(|d| !d.is_empty());
    if let Some(d) = summary {
        // setuptools keeps the first line of a multi-line summary.
        let line = if d.contains('\n') {
            d.trim()
                .split_once('\n')
                .map_or(d.trim(), |(first, _)| first)
        } else {
            d
        };
        crate::push(&mut m, format_args!("Summary: {line}\n"));
    }
    if let Some(r) = &decl.python_requires {
        crate::push(&mut m, format_args!("Requires-Python: {r}\n"));
    }
    for r in &decl.install_requires {
        crate::push(&mut m, format_args!("Requires-Dist: {r}\n"));
    }
    for (extra, reqs) in &decl.extras_require {
        let extra = safe_extra(extra);
        crate::push(&mut m, format_args!("Provides-Extra: {extra}\n"));
        for r in reqs {
            let line = match r.split_once(';') {
                // `packaging` keeps the parentheses only around an `or` at the top level.
                Some((req, marker)) if top_level_or(marker) => {
                    format!(
                        "{}; ({}) and extra == \"{extra}\"",
                        req.trim(),
                        marker.trim()
                    )
                }
                Some((req, marker)) => {
                    format!("{}; {} and extra == \"{extra}\"", req.trim(), marker.trim())
                }
                None => format!("{r}; extra == \"{extra}\""),
            };
            crate::push(&mut m, format_args!("Requires-Dist: {line}\n"));
        }
    }
    // setuptools' `_POSSIBLE_DYNAMIC_FIELDS` order, for the fields a template can set.
    let dynamic = [
        ("provides-extra", !decl.extras_require.is_empty()),
        ("requires-dist", !decl.install_requires.is_empty()),
        (
            "requires-python",
            decl.python_requires
                .as_deref()
                .is_some_and(|r| !r.is_empty()),
        ),
        ("summary", summary.is_some()),
    ];
    for (field, set) in dynamic {
        if set {
            crate::push(&mut m, format_args!("Dynamic: {field}\n"));
        }
    }
    m
}

/// `entry_points.txt` as setuptools renders it: groups sorted by name, each group's entries
/// sorted by name then target, `name = target` lines, one blank line between groups, one
/// final newline. `None` without entry points (setuptools writes no file then).
fn entry_points(decl: &SetupDecl) -> Option<String> {
    let mut groups: BTreeMap<&str, BTreeSet<(String, String)>> = BTreeMap::new();
    for (group, lines) in &decl.entry_points {
        for line in lines.iter().map(|l| l.trim()) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, target) = line.split_once('=').unwrap_or((line, ""));
            groups
                .entry(group.as_str())
                .or_default()
                .insert((name.trim().to_owned(), target.trim().to_owned()));
        }
    }
    if groups.is_empty() {
        return None;
    }
    let sections: Vec<String> = groups
        .iter()
        .map(|(group, entries)| {
            let lines: Vec<String> = entries
                .iter()
                .map(|(name, target)| format!("{name} = {target}"))
                .collect();
            format!("[{group}]\n{}\n", lines.join("\n"))
        })
        .collect();
    Some(sections.join("\n"))
}

/// The zip timestamp of `SOURCE_DATE_EPOCH` seconds (clamped to the zip range).
fn zip_time(epoch: u64) -> zip::DateTime {
    let days = epoch / 86_400;
    let secs = epoch % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = i64::try_from(days).unwrap_or(i64::MAX / 2) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let year = u16::try_from(year.clamp(1980, 2107)).expect("clamped");
    zip::DateTime::from_date_and_time(
        year,
        u8::try_from(month).expect("1..=12"),
        u8::try_from(day).expect("1..=31"),
        u8::try_from(secs / 3600).expect("0..24"),
        u8::try_from(secs % 3600 / 60).expect("0..60"),
        u8::try_from(secs % 60).expect("0..60"),
    )
    .unwrap_or_default()
}

fn record_row(arc: &str, sha256: &[u8], size: u64) -> String {
    let field = if arc.contains(',') || arc.contains('"') {
        format!("\"{}\"", arc.replace('"', "\"\""))
    } else {
        arc.to_owned()
    };
    let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha256);
    format!("{field},sha256={digest},{size}\n")
}

/// Writes the wheel of the package staged in `staging` into `dist_dir`: entries stored or
/// deflated as `method` says, every entry stamped `mtime` (seconds since the epoch), mode bits kept.
/// The platform tag is the template's `plat_name` (which honours
/// `ROCM_SDK_WHEEL_PLATFORM_TAG`). Returns the wheel's path; it is written under a temporary
/// name and renamed when complete.
pub(crate) fn write_wheel(
    staging: &Path,
    decl: &SetupDecl,
    dist_dir: &Path,
    method: Method,
    mtime: u64,
) -> Result<PathBuf, Error> {
    let name = escaped_name(&decl.name);
    let version = decl.version.replace('-', "_");
    let tag = format!("py3-none-{}", platform_tag(&decl.plat_name));
    let wheel_name = format!("{name}-{version}-{tag}.whl");
    let dist_info = format!("{name}-{version}.dist-info");
    let files = decl.files(staging)?;

    fs_err::create_dir_all(dist_dir).map_err(|e| FileError::write(dist_dir, e))?;
    let dest = dist_dir.join(&wheel_name);
    let temp = tempfile::Builder::new()
        .prefix(&format!(".{wheel_name}."))
        .tempfile_in(dist_dir)
        .map_err(|e| FileError::write(dist_dir, e))?;
    let time = zip_time(mtime);
    let mut zip = ZipOut::new(
        temp.as_file()
            .try_clone()
            .map_err(|e| FileError::write(&dest, e))?,
        &dest,
        time.timepart(),
        time.datepart(),
    );
    let entries: Vec<(String, PathBuf, u32)> = files
        .into_iter()
        .map(|(arc, path)| {
            let meta = fs_err::metadata(&path).map_err(|e| FileError::read(&path, e))?;
            #[cfg(unix)]
            let executable =
                std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0;
            #[cfg(not(unix))]
            let executable = {
                let _ = meta;
                false
            };
            Ok((arc, path, if executable { 0o755 } else { 0o644 }))
        })
        .collect::<Result<_, Error>>()?;
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut written = zip.add_files(&entries, method, threads)?;
    let top_level: BTreeSet<&str> = decl
        .packages
        .iter()
        .map(|p| p.split('.').next().unwrap_or(p))
        .collect();
    let mut top = top_level.into_iter().collect::<Vec<_>>().join("\n");
    top.push('\n');
    let wheel = format!(
        "Wheel-Version: 1.0\nGenerator: rock-ci ({})\nRoot-Is-Purelib: true\nTag: {tag}\n\n",
        env!("CARGO_PKG_VERSION")
    );
    let mut small = vec![
        (format!("{dist_info}/METADATA"), metadata(decl)),
        (format!("{dist_info}/WHEEL"), wheel),
    ];
    if let Some(ep) = entry_points(decl) {
        small.push((format!("{dist_info}/entry_points.txt"), ep));
    }
    small.push((format!("{dist_info}/top_level.txt"), top));
    for (arc, text) in &small {
        written.push(zip.add_bytes(arc, text.as_bytes(), 0o644, method)?);
    }
    let record_name = format!("{dist_info}/RECORD");
    let mut record: String = written
        .iter()
        .map(|w| record_row(&w.name, &w.sha256, w.size))
        .collect();
    crate::push(&mut record, format_args!("{record_name},,\n"));
    zip.add_bytes(&record_name, record.as_bytes(), 0o644, method)?;
    drop(zip.finish()?);
    #[cfg(unix)]
    fs_err::set_permissions(
        temp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .map_err(|e| FileError::write(&dest, e))?;
    temp.persist(&dest)
        .map_err(|e| FileError::write(&dest, e.error))?;
    Ok(dest)
}
