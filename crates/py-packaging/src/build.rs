//! The whole job (spec §4): stage every package from the artifacts, then write the wheels and
//! the `rocm` sdist, in the kpack-split or the legacy per-family flow.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use artifacts::ArtifactName;
use rayon::prelude::*;

use crate::Error;
use crate::catalog::{
    ArtifactCatalog, CORE_EXCLUDES, PROFILER_WHEEL_INCLUDES, core_filter, device_filter,
    libraries_filter, profiler_filter,
};
use crate::error::list_or_none;
use crate::names::{Logical, Naming, base_target};
use crate::params::Parameters;
use crate::populate::{Package, RpathDep};
use crate::stub::StubCache;
use crate::timing::{Stage, timed};
use crate::wheel::{SetupDecl, read_setup, write_wheel};
use crate::zipout::Method;
use file_tree::FileError;

/// Extra devel artifact names of the kpack flow.
const KPACK_DEVEL_EXTRAS: [&str; 9] = [
    "prim",
    "rocwmma",
    "libhipcxx",
    "flatbuffers",
    "nlohmann-json",
    "rocshmem",
    "hipthreads",
    "rocjitsu",
    "mirage",
];
/// Extra devel artifact names of the legacy flow.
const LEGACY_DEVEL_EXTRAS: [&str; 6] = [
    "prim",
    "rocwmma",
    "flatbuffers",
    "nlohmann-json",
    "rocjitsu",
    "mirage",
];

/// Where the libraries' ELF files look in core (both flows, in order).
const LIBRARY_DEPS: [&str; 4] = [
    "lib",
    "lib/rocm_sysdeps/lib",
    "lib/host-math/lib",
    "lib/llvm/lib",
];

/// The inputs of a run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// Exploded artifact directories.
    pub artifact_dir: PathBuf,
    /// Staging root; wheels go to `<dest>/dist[/<family>]`.
    pub dest_dir: PathBuf,
    /// Write wheels and the sdist (else only stage).
    pub build_packages: bool,
    /// The version of every package.
    pub version: String,
    /// The nonce appended to platform package names.
    pub version_suffix: String,
    /// `_devel.tar.xz` instead of `_devel.tar`.
    pub devel_tarball_compression: bool,
    /// Deflate wheel entries (else stored).
    pub wheel_compression: bool,
    /// The libdeflate level of wheel entries, 1–9 ([`crate::DEFAULT_DEFLATE_LEVEL`] writes wheels
    /// smaller than the reference's).
    pub deflate_level: u32,
    /// Linux targets (expanded), if given.
    pub linux_targets: Option<Vec<String>>,
    /// Windows targets (expanded), if given.
    pub windows_targets: Option<Vec<String>>,
    /// TheRock's `build_tools/packaging/python/templates`.
    pub templates_dir: PathBuf,
    /// The Python that evaluates the templates' `setup.py`.
    pub python: String,
    /// The C compiler for exe stubs (`$CC`).
    pub cc: Option<String>,
    /// Timestamp of archive members (`SOURCE_DATE_EPOCH`).
    pub source_date_epoch: u64,
}

impl BuildOptions {
    /// Builds version `version` of the packages of the artifacts in `artifact_dir` from the
    /// templates in `templates_dir` into `dest_dir`: wheels deflated at
    /// [`crate::DEFAULT_DEFLATE_LEVEL`] and the sdist written, no version suffix, an
    /// uncompressed devel tarball, the targets of the artifacts, `python3`, `cc`, archive
    /// members stamped [`crate::DEFAULT_EPOCH`].
    pub fn new(
        artifact_dir: impl Into<PathBuf>,
        dest_dir: impl Into<PathBuf>,
        templates_dir: impl Into<PathBuf>,
        version: impl Into<String>,
    ) -> Self {
        BuildOptions {
            artifact_dir: artifact_dir.into(),
            dest_dir: dest_dir.into(),
            build_packages: true,
            version: version.into(),
            version_suffix: String::new(),
            devel_tarball_compression: false,
            wheel_compression: true,
            deflate_level: crate::DEFAULT_DEFLATE_LEVEL,
            linux_targets: None,
            windows_targets: None,
            templates_dir: templates_dir.into(),
            python: "python3".to_owned(),
            cc: None,
            source_date_epoch: crate::DEFAULT_EPOCH,
        }
    }
}

/// The manifest path of §2.2.
pub(crate) fn manifest_path(artifact_dir: &Path) -> PathBuf {
    artifact_dir.join(file_tree::native_path(
        "base_lib_generic/base/aux-overlay/stage/share/therock/therock_manifest.json",
    ))
}

/// Whether the build is kpack-split (§2.2).
pub(crate) fn is_kpack(artifact_dir: &Path) -> Result<bool, Error> {
    let path = manifest_path(artifact_dir);
    #[expect(
        clippy::disallowed_methods,
        reason = "the error names the manifest and the artifact directory itself"
    )]
    let text = std::fs::read_to_string(&path).map_err(|source| Error::MissingManifest {
        path: path.clone(),
        artifact_dir: artifact_dir.to_path_buf(),
        source,
    })?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| Error::Json { file: path, source })?;
    Ok(match doc.pointer("/flags/KPACK_SPLIT_ARTIFACTS") {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(serde_json::Value::String(s)) => !s.is_empty(),
        Some(serde_json::Value::Array(a)) => !a.is_empty(),
        Some(serde_json::Value::Object(o)) => !o.is_empty(),
        _ => false,
    })
}

/// §11.1: every target the host's list names must have artifacts.
pub(crate) fn check_kpack_completeness(
    opts: &BuildOptions,
    discovered: &BTreeSet<String>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let list = if cfg!(windows) {
        &opts.windows_targets
    } else {
        &opts.linux_targets
    };
    let Some(list) = list else {
        return Ok(());
    };
    let expected: BTreeSet<String> = list.iter().cloned().collect();
    let w = Error::Output;
    writeln!(
        out,
        "::: KPACK_SPLIT_ARTIFACTS expected device targets: {}",
        list_or_none(&expected)
    )
    .map_err(w)?;
    writeln!(
        out,
        "::: KPACK_SPLIT_ARTIFACTS discovered artifact targets: {}",
        list_or_none(discovered)
    )
    .map_err(w)?;
    let missing: Vec<&String> = expected.difference(discovered).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::IncompleteTargets {
        missing: missing.into_iter().cloned().collect(),
        expected,
        discovered: discovered.clone(),
        artifact_dir: opts.artifact_dir.clone(),
    })
}

/// Copies a template tree (symlinks kept as links, `__pycache__` directories left out) to `to`.
/// Where symlinks cannot be made (Windows), a link to a file is copied as that file.
fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    fs_err::create_dir_all(to).map_err(|e| FileError::write(to, e))?;
    let entries =
        file_tree::Walk::new(from).entries_where(|e| !(e.is_dir && e.name() == "__pycache__"))?;
    for e in entries {
        let dst = e.components.iter().fold(to.to_path_buf(), |p, c| p.join(c));
        if e.is_symlink {
            #[cfg(unix)]
            std::os::unix::fs::symlink(
                fs_err::read_link(&e.path).map_err(|err| FileError::read(&e.path, err))?,
                &dst,
            )
            .map_err(|err| FileError::write(&dst, err))?;
            #[cfg(not(unix))]
            fs_err::copy(&e.path, &dst).map_err(|err| FileError::write(&dst, err))?;
        } else if e.is_dir {
            fs_err::create_dir_all(&dst).map_err(|err| FileError::write(&dst, err))?;
        } else {
            fs_err::copy(&e.path, &dst).map_err(|err| FileError::write(&dst, err))?;
        }
    }
    Ok(())
}

/// One run.
pub(crate) struct Builder<'o> {
    opts: &'o BuildOptions,
    params: Parameters,
    catalog: ArtifactCatalog,
    stubs: StubCache,
    dist_info_template: String,
    /// Packages populated so far, in order (for devel ownership look-ups).
    registered: Vec<Package>,
    runtime_artifact_names: BTreeSet<String>,
    /// Files written to a `dist` directory.
    pub outputs: Vec<PathBuf>,
    /// The interpreter's `sys.executable`, once checked (for the build lines).
    executable: String,
}

/// A word as Python's `shlex.quote` writes it.
fn shell_quote(word: &str) -> String {
    if word.is_empty() {
        return "''".to_owned();
    }
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if word.chars().all(safe) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', "'\"'\"'"))
}

/// Prints the `::: Building python package {name}: {command}` line of a staged package, with
/// the setuptools command the reference runs for it (`sdist` for `rocm`, else
/// `bdist_wheel`).
fn announce(
    staging: &Path,
    dist: &Path,
    python: &str,
    stored: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let name = staging
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The reference creates the dist directory first and prints resolved paths.
    fs_err::create_dir_all(dist).map_err(|e| FileError::write(dist, e))?;
    let absolute = |p: &Path| {
        fs_err::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
            .to_string_lossy()
            .into_owned()
    };
    let mut argv = vec![python.to_owned(), absolute(&staging.join("setup.py"))];
    if name == "rocm" {
        argv.push("sdist".to_owned());
    } else {
        argv.push("bdist_wheel".to_owned());
        if stored {
            argv.extend(["--compression".to_owned(), "stored".to_owned()]);
        }
    }
    argv.extend(["-v".to_owned(), "--dist-dir".to_owned(), absolute(dist)]);
    let command: Vec<String> = argv.iter().map(|w| shell_quote(w)).collect();
    writeln!(
        out,
        "::: Building python package {name}: {}",
        command.join(" ")
    )
    .map_err(Error::Output)
}

/// The `  + {artifact}: {dir}` lines of a package's artifacts.
fn artifact_lines(out: &mut dyn Write, catalog: &ArtifactCatalog) -> Result<(), Error> {
    for (name, dir) in &catalog.basedirs {
        writeln!(
            out,
            "  + Artifact({}[{}:{}]): {}",
            name.name(),
            name.component(),
            name.target_family(),
            dir.display()
        )
        .map_err(Error::Output)?;
    }
    Ok(())
}

/// The `::: Populating {what} {logical}[{target}]: {staging}` line and its artifact lines.
fn populating(
    out: &mut dyn Write,
    what: &str,
    logical: Logical,
    target: Option<&str>,
    staging: &Path,
    catalog: &ArtifactCatalog,
) -> Result<(), Error> {
    writeln!(
        out,
        "::: Populating {what} {}[{}]: {}",
        logical.as_str(),
        target.unwrap_or("None"),
        staging.display()
    )
    .map_err(Error::Output)?;
    artifact_lines(out, catalog)
}

impl<'o> Builder<'o> {
    /// Reads the artifact catalog and the `_dist_info.py` template.
    pub(crate) fn new(opts: &'o BuildOptions, kpack: bool) -> Result<Self, Error> {
        let catalog = ArtifactCatalog::new(&opts.artifact_dir, |_| true, &[], &[])?;
        let all_target_families = catalog
            .artifact_names()
            .map(ArtifactName::target_family)
            .filter(|t| *t != "generic")
            .map(str::to_owned)
            .collect();
        let template = opts
            .templates_dir
            .join(file_tree::native_path("rocm/src/rocm_sdk/_dist_info.py"));
        let dist_info_template =
            fs_err::read_to_string(&template).map_err(|e| FileError::read(&template, e))?;
        Ok(Builder {
            opts,
            params: Parameters {
                version: opts.version.clone(),
                naming: Naming {
                    nonce: opts.version_suffix.clone(),
                    kpack,
                },
                all_target_families,
                linux_targets: opts.linux_targets.clone(),
                windows_targets: opts.windows_targets.clone(),
            },
            catalog,
            stubs: StubCache::new(opts.cc.clone(), opts.dest_dir.join(".rock-ci-stub")),
            dist_info_template,
            registered: Vec::new(),
            runtime_artifact_names: BTreeSet::new(),
            outputs: Vec::new(),
            executable: opts.python.clone(),
        })
    }

    /// The catalog's target families (non-generic).
    pub(crate) fn all_target_families(&self) -> &BTreeSet<String> {
        &self.params.all_target_families
    }

    fn core_platform(&self) -> Result<String, Error> {
        self.params.naming.platform_py_package(Logical::Core, None)
    }

    fn deps(&self, subdirs: &[&str]) -> Result<Vec<RpathDep>, Error> {
        let core = self.core_platform()?;
        Ok(subdirs
            .iter()
            .map(|s| RpathDep {
                platform: core.clone(),
                subdir: (*s).to_owned(),
            })
            .collect())
    }

    /// Copies the template of `logical` to `<dest>/<dist name>` and writes its
    /// `_dist_info.py` (§6.2, §6.4).
    fn stage(
        &self,
        logical: Logical,
        target: Option<&str>,
        restrict: bool,
        out: &mut dyn Write,
    ) -> Result<PathBuf, Error> {
        let entry = logical.entry();
        let template = self.opts.templates_dir.join(entry.template_dir);
        if !template.is_dir() {
            return Err(Error::MissingTemplate { template });
        }
        let staging = self
            .opts
            .dest_dir
            .join(self.params.naming.dist_name(logical, target)?);
        if fs_err::symlink_metadata(&staging).is_ok() {
            fs_err::remove_dir_all(&staging).map_err(|e| FileError::write(&staging, e))?;
        }
        let w = Error::Output;
        writeln!(
            out,
            "::: Creating package '{}': {}",
            entry.template_dir,
            staging.display()
        )
        .map_err(w)?;
        copy_tree(&template, &staging)?;
        let dist_info = staging
            .join("src")
            .join(entry.pure_py_package)
            .join("_dist_info.py");
        writeln!(out, "  Writing dist info: {}", dist_info.display()).map_err(w)?;
        fs_err::create_dir_all(dist_info.parent().expect("has a parent"))
            .map_err(|e| FileError::write(&dist_info, e))?;
        let text =
            self.params
                .dist_info_contents(&self.dist_info_template, logical, target, restrict)?;
        fs_err::write(&dist_info, text).map_err(|e| FileError::write(&dist_info, e))?;
        Ok(staging)
    }

    fn dist(&self, family: Option<&str>) -> PathBuf {
        let dist = self.opts.dest_dir.join("dist");
        family.map_or(dist.clone(), |f| dist.join(f))
    }

    /// Writes the `rocm` sdist of the staged meta package.
    fn build_sdist(
        &mut self,
        staging: &Path,
        dist: &Path,
        out: &mut dyn Write,
    ) -> Result<(), Error> {
        if !self.opts.build_packages {
            return Ok(());
        }
        announce(staging, dist, &self.executable, false, out)?;
        let built = timed(Stage::Sdist, || {
            crate::sdist::build_sdist(
                staging,
                dist,
                &self.opts.python,
                self.opts.source_date_epoch,
            )
        })?;
        self.outputs.push(built);
        Ok(())
    }

    /// Writes the wheels of several staged packages: their `setup.py` evaluated in parallel,
    /// then one wheel after the other, each compressed on every core.
    fn build_wheels(
        &mut self,
        stagings: &[PathBuf],
        dist: &Path,
        out: &mut dyn Write,
    ) -> Result<(), Error> {
        if !self.opts.build_packages {
            return Ok(());
        }
        for staging in stagings {
            announce(
                staging,
                dist,
                &self.executable,
                !self.opts.wheel_compression,
                out,
            )?;
        }
        let opts = self.opts;
        let decls: Vec<SetupDecl> = timed(Stage::Wheels, || {
            stagings
                .par_iter()
                .map(|staging| read_setup(staging, &opts.python, &[]))
                .collect::<Result<_, Error>>()
        })?;
        for (staging, decl) in stagings.iter().zip(&decls) {
            let built = timed(Stage::Wheels, || {
                let method = if opts.wheel_compression {
                    Method::Deflated(opts.deflate_level.clamp(1, 9))
                } else {
                    Method::Stored
                };
                write_wheel(staging, decl, dist, method, opts.source_date_epoch)
            })?;
            self.outputs.push(built);
        }
        Ok(())
    }

    fn runtime(
        &mut self,
        logical: Logical,
        target: Option<&str>,
        catalog: &ArtifactCatalog,
        deps: &[&str],
        out: &mut dyn Write,
    ) -> Result<PathBuf, Error> {
        let staging = self.stage(logical, target, false, out)?;
        populating(out, "runtime files", logical, target, &staging, catalog)?;
        let platform = self.params.naming.platform_py_package(logical, target)?;
        let mut pkg = Package::new(
            logical,
            target.map(str::to_owned),
            staging.clone(),
            platform,
            self.deps(deps)?,
        );
        timed(Stage::Populate, || {
            pkg.populate_runtime(catalog, &self.stubs, !cfg!(windows))
        })?;
        for (relpath, why) in &pkg.dropped {
            writeln!(out, "WARNING: not packaged: {relpath}: {why}").map_err(Error::Output)?;
        }
        self.runtime_artifact_names
            .extend(catalog.artifact_names().map(|a| a.name().to_owned()));
        if logical == Logical::Profiler {
            crate::devel::profiler_fixups(&pkg.platform_dir()?)?;
        }
        self.registered.push(pkg);
        Ok(staging)
    }

    fn devel(
        &mut self,
        target: Option<&str>,
        extras: &[&str],
        exclude_components: &[&str],
        out: &mut dyn Write,
    ) -> Result<PathBuf, Error> {
        let staging = self.stage(Logical::Devel, target, false, out)?;
        let names: BTreeSet<String> = self
            .runtime_artifact_names
            .iter()
            .cloned()
            .chain(extras.iter().map(|s| (*s).to_owned()))
            .filter(|n| n != "rocprofiler-compute" && n != "rocprofiler-systems")
            .collect();
        writeln!(
            out,
            ":: Devel artifact inclusions: {}",
            names.iter().cloned().collect::<Vec<_>>().join(", ")
        )
        .map_err(Error::Output)?;
        let catalog = ArtifactCatalog::new(
            &self.opts.artifact_dir,
            |a| {
                names.contains(a.name())
                    && !exclude_components.contains(&a.component())
                    && (a.target_family() == "generic" || Some(a.target_family()) == target)
            },
            &[],
            &[],
        )?;
        let platform = self
            .params
            .naming
            .platform_py_package(Logical::Devel, target)?;
        let mut pkg = Package::new(
            Logical::Devel,
            target.map(str::to_owned),
            staging.clone(),
            platform,
            Vec::new(),
        );
        writeln!(
            out,
            "::: Populating devel package {}",
            pkg.platform_dir()?.display()
        )
        .map_err(Error::Output)?;
        artifact_lines(out, &catalog)?;
        let registered: Vec<&Package> = self.registered.iter().collect();
        pkg.populate_devel(
            &catalog,
            &registered,
            self.opts.devel_tarball_compression,
            self.opts.source_date_epoch,
            !cfg!(windows),
            out,
        )?;
        Ok(staging)
    }

    /// Core and profiler (§4), then the kpack or legacy flow.
    pub(crate) fn run(&mut self, out: &mut dyn Write) -> Result<(), Error> {
        let core_catalog =
            ArtifactCatalog::new(&self.opts.artifact_dir, core_filter, &[], &CORE_EXCLUDES)?;
        let mut wheels = vec![self.runtime(
            Logical::Core,
            None,
            &core_catalog,
            &["lib/llvm/lib", "lib/rocm_sysdeps/lib"],
            out,
        )?];
        let profiler_catalog = ArtifactCatalog::new(
            &self.opts.artifact_dir,
            profiler_filter,
            &PROFILER_WHEEL_INCLUDES,
            &[],
        )?;
        if !profiler_catalog.basedirs.is_empty() {
            wheels.push(self.runtime(
                Logical::Profiler,
                None,
                &profiler_catalog,
                &["lib", "lib/llvm/lib", "lib/rocm_sysdeps/lib"],
                out,
            )?);
        } else if cfg!(windows) {
            writeln!(
                out,
                "::: No profiler artifacts found on Windows; skipping rocm-profiler package"
            )
            .map_err(Error::Output)?;
        } else {
            return Err(Error::NoProfilerArtifacts);
        }
        if self.params.naming.kpack {
            self.kpack_flow(wheels, out)
        } else {
            self.legacy_flow(wheels, out)
        }
    }

    /// §4.1: host libraries, one device package per GPU target, meta, devel.
    fn kpack_flow(&mut self, mut wheels: Vec<PathBuf>, out: &mut dyn Write) -> Result<(), Error> {
        let catalog = ArtifactCatalog::new(
            &self.opts.artifact_dir,
            libraries_filter("generic"),
            &[],
            &[],
        )?;
        wheels.push(self.runtime(Logical::Libraries, None, &catalog, &LIBRARY_DEPS, out)?);
        let dist = self.dist(None);
        self.build_wheels(&wheels, &dist, out)?;
        let targets: BTreeSet<String> = self
            .params
            .all_target_families
            .iter()
            .map(|t| base_target(t).to_owned())
            .collect();
        for t in targets {
            let staging = self.stage(Logical::Device, Some(&t), false, out)?;
            let platform = self
                .params
                .naming
                .platform_py_package(Logical::Libraries, None)?;
            let mut pkg = Package::new(
                Logical::Device,
                Some(t.clone()),
                staging.clone(),
                platform,
                self.deps(&["lib", "lib/rocm_sysdeps/lib"])?,
            );
            let catalog =
                ArtifactCatalog::new(&self.opts.artifact_dir, device_filter(&t), &[], &[])?;
            populating(
                out,
                "device files",
                Logical::Device,
                Some(&t),
                &staging,
                &catalog,
            )?;
            timed(Stage::Populate, || {
                pkg.populate_device(&catalog, &self.opts.version, !cfg!(windows))
            })?;
            self.registered.push(pkg);
            self.build_wheels(&[staging], &dist, out)?;
        }
        let meta = self.stage(Logical::Meta, None, false, out)?;
        self.build_sdist(&meta, &dist, out)?;
        let devel = self.devel(None, &KPACK_DEVEL_EXTRAS, &["test"], out)?;
        self.build_wheels(&[devel], &dist, out)?;
        Ok(())
    }

    /// §4.2: one libraries package per family, then meta and devel per family.
    fn legacy_flow(&mut self, mut wheels: Vec<PathBuf>, out: &mut dyn Write) -> Result<(), Error> {
        let families: Vec<String> = self.params.all_target_families.iter().cloned().collect();
        let multi = families.len() > 1;
        for f in &families {
            let catalog =
                ArtifactCatalog::new(&self.opts.artifact_dir, libraries_filter(f), &[], &[])?;
            wheels.push(self.runtime(Logical::Libraries, Some(f), &catalog, &LIBRARY_DEPS, out)?);
        }
        let dist = self.dist(None);
        self.build_wheels(&wheels, &dist, out)?;
        for f in &families {
            let dist = self.dist(multi.then_some(f.as_str()));
            let meta = self.stage(Logical::Meta, multi.then_some(f.as_str()), multi, out)?;
            self.build_sdist(&meta, &dist, out)?;
        }
        for f in &families {
            let dist = self.dist(multi.then_some(f.as_str()));
            let devel = self.devel(Some(f), &LEGACY_DEVEL_EXTRAS, &[], out)?;
            self.build_wheels(&[devel], &dist, out)?;
        }
        Ok(())
    }

    /// §11.2: the kpack-split set a publisher needs is complete.
    pub(crate) fn check_required_dist(&self) -> Result<(), Error> {
        let list = if cfg!(windows) {
            &self.opts.windows_targets
        } else {
            &self.opts.linux_targets
        };
        let has_dev = self
            .catalog
            .artifact_names()
            .any(|a| a.component() == "dev");
        check_required_dist(
            &self.dist(None),
            &self.opts.version,
            list.as_deref(),
            has_dev,
        )
    }
}

/// §11.2 on `dist`: the sdist, core, libraries, a device wheel per host target and, when any
/// artifact is a `dev` component, the devel wheel.
pub(crate) fn check_required_dist(
    dist: &Path,
    version: &str,
    host_targets: Option<&[String]>,
    has_dev: bool,
) -> Result<(), Error> {
    let v = version;
    let mut patterns = vec![
        format!("rocm-{v}.tar.gz"),
        format!("rocm_sdk_core-{v}-*.whl"),
        format!("rocm_sdk_libraries-{v}-*.whl"),
    ];
    for t in host_targets.into_iter().flatten() {
        patterns.push(format!("rocm_sdk_device_{t}-{v}-*.whl"));
    }
    if has_dev {
        patterns.push(format!("rocm_sdk_devel-{v}-*.whl"));
    }
    let present: BTreeSet<String> = file_tree::list(dist)
        .map(|entries| {
            entries
                .into_iter()
                .filter(|e| e.path.is_file())
                .map(|e| e.relative())
                .collect()
        })
        .unwrap_or_default();
    let missing: Vec<&String> = patterns
        .iter()
        .filter(|p| !present.iter().any(|f| file_tree::fnmatch(p, f)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::IncompleteDist {
        dist: dist.to_path_buf(),
        missing: missing.into_iter().cloned().collect(),
        present,
    })
}

/// Runs the whole job (§4): kpack detection, completeness check, staging, building, the
/// required-set check, and the `:::` lines on `out`.
pub fn run(opts: &BuildOptions, out: &mut dyn Write) -> Result<Vec<PathBuf>, Error> {
    let kpack = is_kpack(&opts.artifact_dir)?;
    let w = Error::Output;
    if kpack {
        writeln!(
            out,
            "::: Detected KPACK_SPLIT_ARTIFACTS \u{2014} producing host + device wheels"
        )
        .map_err(w)?;
    }
    fs_err::create_dir_all(&opts.dest_dir).map_err(|e| FileError::write(&opts.dest_dir, e))?;
    let mut builder = Builder::new(opts, kpack)?;
    if opts.build_packages {
        builder.executable = crate::sdist::check_setuptools(&opts.python, &opts.dest_dir)?;
    }
    if kpack {
        let discovered = builder.all_target_families().clone();
        check_kpack_completeness(opts, &discovered, out)?;
    }
    builder.run(out)?;
    if kpack && opts.build_packages {
        builder.check_required_dist()?;
    }
    let _ = fs_err::remove_dir_all(opts.dest_dir.join(".rock-ci-stub"));
    writeln!(
        out,
        "::: Finished building packages at '{}' with version '{}'",
        opts.dest_dir.display(),
        opts.version
    )
    .map_err(w)?;
    Ok(builder.outputs)
}

#[cfg(test)]
mod tests;
