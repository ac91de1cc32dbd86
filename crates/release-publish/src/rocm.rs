//! Publishing a ROCm release run to the core product repository: server-side copies of the
//! run's tarballs, Python packages and native package repositories out of the artifacts bucket.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use futures::StreamExt as _;
use storage_backend::{
    ClientOptions, ObjectHead, Reporter, S3Client, S3StorageBackend, StorageBackend,
    TransferOptions,
};
use storage_location::StorageLocation;
use workflow_outputs::{
    LEGACY_MULTI_ARCH_WHEEL_PREFIX, LEGACY_PER_FAMILY_WHEEL_PREFIXES, Platform, PythonIndex,
    ReleaseBucketType, ReleaseProduct, ReleaseType, S3BucketConfig, WorkflowOutputRoot,
};

use crate::{Error, package_name};

/// How the run's Python packages are published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PythonMode {
    /// Product-local keys in the core repository (`v5/rocm/core/{index}/{package}/{file}`),
    /// by file name: the directories below `python/` are flattened.
    Structured(PythonIndex),
    /// The legacy Python bucket at `v4/whl/{relative path}` (kpack-split builds).
    LegacyKpackSplit,
    /// The legacy Python bucket at `v3/whl-staging/…` and then `v3/whl/…` (per-family builds).
    LegacyPerFamily,
}

/// What a ROCm release publishes, from which run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RocmRelease {
    /// The release type (not `ci`).
    pub release_type: ReleaseType,
    /// The run's outputs in the artifacts bucket.
    pub run: WorkflowOutputRoot,
    /// The Python packages' destination.
    pub python: PythonMode,
    /// Whether the deb and rpm repositories are published.
    pub native_packages: bool,
    /// An ASAN build: `-asan` prefixes, no Python packages.
    pub asan: bool,
    /// The date of the native package directories (`YYYYMMDD`).
    pub date: String,
}

impl PythonMode {
    /// The mode of a run's flags: the structured layout in `index` when given, else the
    /// legacy layout of a kpack-split or a per-family build.
    pub fn of(structured: Option<PythonIndex>, kpack_split: bool) -> Self {
        match structured {
            Some(index) => PythonMode::Structured(index),
            None if kpack_split => PythonMode::LegacyKpackSplit,
            None => PythonMode::LegacyPerFamily,
        }
    }
}

/// A publication of a run as the command line asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunPublication {
    /// The run.
    pub run_id: String,
    /// Its platform (native packages are published from Linux runs only).
    pub platform: Platform,
    /// The release type (not `ci`).
    pub release_type: ReleaseType,
    /// Where the Python packages go.
    pub python: PythonMode,
    /// Leave out the deb and rpm repositories.
    pub skip_native_packages: bool,
    /// An ASAN build.
    pub asan: bool,
    /// Objects copied at once.
    pub concurrency: usize,
    /// Print the planned copies, copy nothing.
    pub dry_run: bool,
    /// The date of the native package directories (`YYYYMMDD`); today's UTC date when
    /// `None`. A run republished on a later day names its first day to land on the same keys.
    pub date: Option<String>,
}

impl RunPublication {
    /// Publishes run `run_id` on `platform` as a `release_type` release with its Python
    /// packages as `python` says: native packages included, not an ASAN build,
    /// [`storage_backend::DEFAULT_CONCURRENCY`] copies at once.
    pub fn new(
        run_id: impl Into<String>,
        platform: Platform,
        release_type: ReleaseType,
        python: PythonMode,
    ) -> Self {
        RunPublication {
            run_id: run_id.into(),
            platform,
            release_type,
            python,
            skip_native_packages: false,
            asan: false,
            concurrency: storage_backend::DEFAULT_CONCURRENCY,
            dry_run: false,
            date: None,
        }
    }
}

/// Publishes a run: resolves its output root in the artifacts bucket (the selection report
/// to `log`), plans every copy with the publication's date (else today's UTC date) for the
/// native package directories, and [`copy`]s (the `[DRY RUN]` lines to `out` in a dry run),
/// telling how many objects were already published.
///
/// # Errors
/// [`Error::RunRoot`], the backend's errors, and those of [`RocmRelease::plan`] and [`copy`].
pub async fn publish_run(
    publication: &RunPublication,
    reporter: Arc<dyn Reporter>,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), Error> {
    let request = github_actions::RunRequest {
        run_id: publication.run_id.clone(),
        platform: publication.platform,
        repository: None,
        release_type: Some(publication.release_type),
        lookup_workflow_run: false,
    };
    // Its bucket decision reads the event payload: on the blocking pool.
    let env = github_actions::captured(lookup, &github_actions::CURRENT_RUN_ROOT_VARS);
    let (resolved, report) = storage_backend::blocking(move || {
        let mut report = Vec::new();
        let resolved = github_actions::resolve_run_root(&request, &env, &mut report);
        (resolved, report)
    })
    .await;
    log.write_all(&report).map_err(Error::Output)?;
    let (run, _) = resolved?;
    let date = publication.date.clone().unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        file_tree::utc_date_stamp(secs).unwrap_or_default()
    });
    let release = RocmRelease {
        release_type: publication.release_type,
        run,
        python: publication.python,
        native_packages: publication.platform == Platform::Linux
            && !publication.skip_native_packages,
        asan: publication.asan,
        date,
    };
    let destination = release.destination()?;
    let mut options = TransferOptions::default();
    options.concurrency = publication.concurrency;
    let s3 = if publication.dry_run {
        // A dry run writes nothing: it lists the sources with the credentials there are, or
        // unsigned when there are none (the artifacts buckets are publicly readable).
        let reading = ClientOptions::reading(destination.region());
        S3StorageBackend::new(S3Client::connect_with(&reading, lookup).await?, options)
    } else {
        let backend =
            StorageBackend::for_upload(None, options, destination.region(), reporter, lookup)
                .await?;
        let StorageBackend::S3(s3) = backend else {
            unreachable!("no staging directory was given");
        };
        s3
    };
    let plan = match release.plan(&s3).await {
        Err(Error::Storage(source)) if publication.dry_run && !source.is_usage() => {
            return Err(Error::DryRunListing {
                bucket: release.run.bucket().to_owned(),
                source,
            });
        }
        plan => plan?,
    };
    let dry_run = if publication.dry_run {
        Some(&mut *out)
    } else {
        None
    };
    let report = copy(&s3, &plan, publication.concurrency, dry_run, log).await?;
    if report.unchanged > 0 {
        writeln!(
            log,
            "{} objects were already published with the same content and left as they were",
            report.unchanged
        )
        .map_err(Error::Output)?;
    }
    Ok(())
}

/// What one group of copies is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseKind {
    /// The tarballs.
    Tarballs,
    /// The Python packages in the structured layout.
    PythonStructured,
    /// The Python packages to one legacy prefix (`v4/whl`, `v3/whl-staging`, `v3/whl`).
    PythonLegacy(String),
    /// A native package repository (`deb`, `rpm`).
    Native(&'static str),
}

/// One group of copies, with the source and destination prefixes it reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// What is copied.
    pub kind: PhaseKind,
    /// The source prefix.
    pub source: StorageLocation,
    /// The destination prefix.
    pub destination: StorageLocation,
    /// Every copy, source to destination.
    pub copies: Vec<(StorageLocation, StorageLocation)>,
}

impl Phase {
    /// Whether a destination holding other bytes may be replaced: only the native package
    /// repositories, whose index files (`dists/`, `repodata/`) change from run to run.
    fn replaces_different(&self) -> bool {
        matches!(self.kind, PhaseKind::Native(_))
    }

    /// Whether `to` is an index file of a native package repository (below `dists/` or
    /// `repodata/` of the destination), which is copied after every package.
    fn is_index(&self, to: &StorageLocation) -> bool {
        let PhaseKind::Native(_) = self.kind else {
            return false;
        };
        let prefix = format!(
            "{}/",
            self.destination.relative_path().trim_end_matches('/')
        );
        to.relative_path()
            .strip_prefix(&prefix)
            .is_some_and(|rel| rel.starts_with("dists/") || rel.starts_with("repodata/"))
    }

    fn write_start(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let (src, dst) = (self.source.s3_uri(), self.destination.s3_uri());
        match &self.kind {
            PhaseKind::Tarballs => writeln!(out, "Tarballs: {src} -> {dst}"),
            PhaseKind::PythonStructured => {
                for (from, to) in &self.copies {
                    writeln!(out, "Python package: {} -> {}", from.s3_uri(), to.s3_uri())?;
                }
                Ok(())
            }
            PhaseKind::PythonLegacy(_) => writeln!(out, "Python packages: {src} -> {dst}"),
            PhaseKind::Native(ty) => writeln!(out, "Native {ty} packages: {src} -> {dst}"),
        }
    }

    /// The phase's closing line: `n` objects copied, and `unchanged` more found in place with
    /// the same content (said only when there are any).
    fn write_done(
        &self,
        (n, unchanged): (usize, usize),
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let also = if unchanged == 0 {
            String::new()
        } else {
            format!(" ({unchanged} more already in place with the same content)")
        };
        match &self.kind {
            PhaseKind::Tarballs => writeln!(out, "Copied {n} tarballs{also}"),
            PhaseKind::PythonStructured => {
                writeln!(out, "Copied {n} python package files (structured){also}")
            }
            PhaseKind::PythonLegacy(subdir) => {
                writeln!(out, "Copied {n} python package files to {subdir}{also}")
            }
            PhaseKind::Native(ty) => writeln!(out, "Copied {n} files for {ty} packages{also}"),
        }
    }
}

/// Every copy of a publication, in phases: tarballs, Python packages, deb, rpm.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopyPlan {
    /// The phases, in order.
    pub phases: Vec<Phase>,
    /// The Python packages are skipped (ASAN builds): said after the tarballs.
    pub python_skipped: bool,
}

impl CopyPlan {
    /// Writes what follows `phase`: the skipped Python packages after the tarballs.
    fn after_phase(&self, phase: &Phase, log: &mut dyn Write) -> Result<(), Error> {
        if self.python_skipped && phase.kind == PhaseKind::Tarballs {
            writeln!(log, "Skipping python packages for ASAN build variant")
                .map_err(Error::Output)?;
        }
        Ok(())
    }
}

/// What a publication copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CopyReport {
    /// Objects copied (or planned, in a dry run).
    pub copied: usize,
    /// Objects whose destination already held the same bytes.
    pub unchanged: usize,
}

impl RocmRelease {
    /// The core product repository.
    pub fn destination(&self) -> Result<S3BucketConfig, Error> {
        Ok(workflow_outputs::product_release_bucket_config(
            self.release_type,
            ReleaseProduct::Core,
        )?)
    }

    /// Lists every source and plans every copy before anything is written: every Python file
    /// name is parsed, two sources for one destination are refused, and a phase without
    /// sources is an error ([`Error::NothingToPublish`]).
    pub async fn plan(&self, backend: &S3StorageBackend) -> Result<CopyPlan, Error> {
        let store = StorageBackend::S3(backend.clone());
        let dst = self.destination()?;
        let mut phases = Vec::new();
        let tarballs = self.run.tarballs();
        let prefix =
            StorageLocation::new(dst.name(), workflow_outputs::core_tarball_prefix(self.asan));
        let copies = relative_copies(&store, &tarballs, &["*.tar.gz"], &prefix).await?;
        phases.push(nonempty(
            Phase {
                kind: PhaseKind::Tarballs,
                source: tarballs,
                destination: prefix,
                copies,
            },
            "tarballs",
        )?);
        if !self.asan {
            self.python_phases(&store, &dst, &mut phases).await?;
        }
        if self.native_packages {
            for (ty, what) in [("deb", "deb packages"), ("rpm", "rpm packages")] {
                let source = self.run.native_linux_packages(ty);
                let prefix = StorageLocation::new(
                    dst.name(),
                    workflow_outputs::core_native_packages_prefix(
                        self.release_type,
                        self.asan,
                        ty,
                        &self.date,
                        self.run.run_id(),
                    ),
                );
                let copies = relative_copies(&store, &source, &[], &prefix).await?;
                phases.push(nonempty(
                    Phase {
                        kind: PhaseKind::Native(ty),
                        source,
                        destination: prefix,
                        copies,
                    },
                    what,
                )?);
            }
        }
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (from, to) in phases.iter().flat_map(|p| &p.copies) {
            if let Some(first) = seen.insert(to.s3_uri(), from.s3_uri()) {
                return Err(Error::Collision {
                    destination: to.s3_uri(),
                    first,
                    second: from.s3_uri(),
                });
            }
        }
        Ok(CopyPlan {
            phases,
            python_skipped: self.asan,
        })
    }

    /// The phases of the Python packages (one, or one per legacy prefix).
    async fn python_phases(
        &self,
        store: &StorageBackend,
        dst: &S3BucketConfig,
        phases: &mut Vec<Phase>,
    ) -> Result<(), Error> {
        let python = self.run.python_packages("");
        let subdirs: &[&str] = match self.python {
            PythonMode::Structured(index) => {
                let listed = list(store, &python, &["*.whl", "*.tar.gz", "*.zip"]).await?;
                let mut copies = Vec::new();
                for src in listed {
                    let file = src
                        .relative_path()
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    if !workflow_outputs::is_python_package_file(&file) {
                        continue;
                    }
                    let package = package_name(&file)?;
                    let to = workflow_outputs::product_package_location(
                        dst.name(),
                        ReleaseProduct::Core,
                        index,
                        &package,
                        &file,
                    );
                    copies.push((src, to));
                }
                let destination = StorageLocation::new(dst.name(), format!("v5/rocm/core/{index}"));
                phases.push(nonempty(
                    Phase {
                        kind: PhaseKind::PythonStructured,
                        source: python,
                        destination,
                        copies,
                    },
                    "python packages",
                )?);
                return Ok(());
            }
            PythonMode::LegacyKpackSplit => &[LEGACY_MULTI_ARCH_WHEEL_PREFIX],
            PythonMode::LegacyPerFamily => &LEGACY_PER_FAMILY_WHEEL_PREFIXES,
        };
        let legacy =
            workflow_outputs::release_bucket_config(self.release_type, ReleaseBucketType::Python)?;
        for subdir in subdirs {
            let prefix = StorageLocation::new(legacy.name(), (*subdir).to_owned());
            let copies = relative_copies(store, &python, &["*.whl", "*.tar.gz"], &prefix).await?;
            phases.push(nonempty(
                Phase {
                    kind: PhaseKind::PythonLegacy((*subdir).to_owned()),
                    source: python.clone(),
                    destination: prefix,
                    copies,
                },
                "python packages",
            )?);
        }
        Ok(())
    }
}

/// The objects below `source` matching `include` (all when empty), in key order.
async fn list(
    store: &StorageBackend,
    source: &StorageLocation,
    include: &[&str],
) -> Result<Vec<StorageLocation>, Error> {
    let include: Vec<String> = include.iter().map(|p| (*p).to_owned()).collect();
    Ok(store.list_files(source, &include).await?)
}

/// Each object below `source` matching `include`, paired with the same relative path below
/// `dest`.
async fn relative_copies(
    store: &StorageBackend,
    source: &StorageLocation,
    include: &[&str],
    dest: &StorageLocation,
) -> Result<Vec<(StorageLocation, StorageLocation)>, Error> {
    let prefix = format!("{}/", source.relative_path().trim_end_matches('/'));
    Ok(list(store, source, include)
        .await?
        .into_iter()
        .map(|from| {
            let rel = from
                .relative_path()
                .strip_prefix(&prefix)
                .unwrap_or(from.relative_path())
                .to_owned();
            let to = dest.join(&rel);
            (from, to)
        })
        .collect())
}

fn nonempty(phase: Phase, what: &'static str) -> Result<Phase, Error> {
    if phase.copies.is_empty() {
        Err(Error::NothingToPublish {
            what,
            prefix: phase.source.s3_uri(),
        })
    } else {
        Ok(phase)
    }
}

/// Carries out `plan`, `concurrency` copies at a time, writing the reference's progress lines
/// to `log`, phase by phase in its order (tarballs, Python packages, deb, rpm). The copies of
/// every phase share one pool, so the large objects of one phase overlap the small ones of the
/// next; the index files of the native package repositories (`dists/`, `repodata/`) are
/// copied last, only once every other object is in place, so a repository never names a
/// package that is not there yet. A copy is server-side and keeps the object's content type
/// and metadata (multipart above 5 GiB). A destination that already holds the same bytes
/// (equal recorded SHA-256, or equal size and `ETag`) is left alone, so a rerun of a finished
/// publication copies nothing and a rerun of a half-finished one completes it; one holding
/// other bytes is an [`Error::Conflict`] (native package repositories excepted: their index
/// files are meant to be replaced). Every copied object is checked at the destination (size,
/// digest). In a dry run, `[DRY RUN] copy {src} -> {dst}` lines go to `dry_run` instead.
/// When a copy fails, every other copy of its wave is still attempted, the lines of the
/// phases before the first failed one are written, the index files are not copied, and the
/// error names every failed destination.
pub async fn copy(
    backend: &S3StorageBackend,
    plan: &CopyPlan,
    concurrency: usize,
    dry_run: Option<&mut dyn Write>,
    log: &mut dyn Write,
) -> Result<CopyReport, Error> {
    let mut report = CopyReport::default();
    if let Some(out) = dry_run {
        for phase in &plan.phases {
            phase.write_start(log).map_err(Error::Output)?;
            for (from, to) in &phase.copies {
                writeln!(out, "[DRY RUN] copy {} -> {}", from.s3_uri(), to.s3_uri())
                    .map_err(Error::Output)?;
            }
            phase
                .write_done((phase.copies.len(), 0), log)
                .map_err(Error::Output)?;
            report.copied += phase.copies.len();
        }
        return Ok(report);
    }
    let (objects, indexes): (Vec<_>, Vec<_>) = plan
        .phases
        .iter()
        .enumerate()
        .flat_map(|(n, phase)| phase.copies.iter().map(move |copy| (n, phase, copy)))
        .partition(|(_, phase, (_, to))| !phase.is_index(to));
    // Per phase: (copied, found in place unchanged).
    let mut done = vec![(0, 0); plan.phases.len()];
    let mut failures = Vec::new();
    for wave in [objects, indexes] {
        let total = wave.len();
        let results: Vec<(usize, String, Result<bool, Error>)> = futures::stream::iter(wave)
            .map(|(n, phase, (from, to))| async move {
                let replace = phase.replaces_different();
                (n, to.s3_uri(), copy_one(backend, from, to, replace).await)
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        for (n, destination, result) in results {
            match result {
                Ok(true) => {
                    done[n].0 += 1;
                    report.copied += 1;
                }
                Ok(false) => {
                    done[n].1 += 1;
                    report.unchanged += 1;
                }
                Err(e) => failures.push((n, destination, e)),
            }
        }
        if !failures.is_empty() {
            let first = failures.iter().map(|f| f.0).min().unwrap_or_default();
            for (phase, n) in plan.phases[..first].iter().zip(&done) {
                phase.write_start(log).map_err(Error::Output)?;
                phase.write_done(*n, log).map_err(Error::Output)?;
                plan.after_phase(phase, log)?;
            }
            plan.phases[first].write_start(log).map_err(Error::Output)?;
            let mut failures: Vec<(String, Error)> =
                failures.into_iter().map(|(_, d, e)| (d, e)).collect();
            failures.sort_by(|a, b| a.0.cmp(&b.0));
            if failures.len() == 1 {
                return Err(failures.pop().expect("one failure").1);
            }
            return Err(Error::Failed { total, failures });
        }
    }
    for (phase, n) in plan.phases.iter().zip(done) {
        phase.write_start(log).map_err(Error::Output)?;
        phase.write_done(n, log).map_err(Error::Output)?;
        plan.after_phase(phase, log)?;
    }
    Ok(report)
}

/// Whether two objects hold the same bytes: equal recorded SHA-256 and size when both record
/// one, else equal size and non-empty `ETag`.
fn same_content(a: &ObjectHead, b: &ObjectHead) -> Option<bool> {
    if a.size != b.size {
        return Some(false);
    }
    match (&a.sha256, &b.sha256) {
        (Some(x), Some(y)) => Some(x.eq_ignore_ascii_case(y)),
        _ if !a.etag.is_empty() && a.etag == b.etag => Some(true),
        _ => None,
    }
}

fn describe(head: &ObjectHead) -> String {
    match &head.sha256 {
        Some(sha) => format!("{} bytes, sha256 {sha}", head.size),
        None => format!("{} bytes, ETag {}", head.size, head.etag),
    }
}

/// The SHA-256 of the object at `loc`: the one recorded with it, else that of its bytes.
async fn content_sha256(
    backend: &S3StorageBackend,
    loc: &StorageLocation,
    head: &ObjectHead,
) -> Result<String, Error> {
    Ok(match &head.sha256 {
        Some(recorded) => recorded.to_ascii_lowercase(),
        None => backend.content_sha256(loc, head).await?,
    })
}

/// Copies `from` to `to` unless `to` already holds the same bytes (`Ok(false)`); checks the
/// result.
async fn copy_one(
    backend: &S3StorageBackend,
    from: &StorageLocation,
    to: &StorageLocation,
    replace: bool,
) -> Result<bool, Error> {
    let Some(source) = backend.head_object(from).await? else {
        return Err(Error::Verify {
            destination: to.s3_uri(),
            source_file: from.s3_uri(),
            expected: "the source object".to_owned(),
            found: "no source object".to_owned(),
        });
    };
    if let Some(existing) = backend.head_object(to).await? {
        let same = match same_content(&source, &existing) {
            Some(same) => same,
            // Replaced anyway: not worth reading.
            None if replace => false,
            // The same size, a digest missing on one side and other ETags (other part sizes,
            // another tool's upload): the bytes decide.
            None => {
                let digest = content_sha256(backend, from, &source).await?;
                let theirs = content_sha256(backend, to, &existing).await?;
                if digest == theirs {
                    return Ok(false);
                }
                return Err(Error::Conflict {
                    destination: to.s3_uri(),
                    source_file: from.s3_uri(),
                    sha256: digest,
                    existing: format!("{} bytes of sha256 {theirs}", existing.size),
                });
            }
        };
        if same {
            return Ok(false);
        }
        if !replace {
            return Err(Error::Conflict {
                destination: to.s3_uri(),
                source_file: from.s3_uri(),
                sha256: source
                    .sha256
                    .clone()
                    .unwrap_or_else(|| "not recorded".to_owned()),
                existing: describe(&existing),
            });
        }
    }
    backend.copy_known(from, &source, to).await?;
    let written = backend.head_object(to).await?;
    let ok = written.as_ref().is_some_and(|w| {
        w.size == source.size && (source.sha256.is_none() || w.sha256 == source.sha256)
    });
    if ok {
        Ok(true)
    } else {
        Err(Error::Verify {
            destination: to.s3_uri(),
            source_file: from.s3_uri(),
            expected: describe(&source),
            found: written
                .as_ref()
                .map_or_else(|| "nothing".to_owned(), describe),
        })
    }
}

#[cfg(test)]
mod tests;
