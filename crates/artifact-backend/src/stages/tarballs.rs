//! `build_tarballs`: a run's artifacts as release tarballs, one per GPU family
//! (`therock-dist-{platform}-{family}-{version}.tar.gz`), a `-tests-` one each on request, and
//! a multi-arch one when the build split its device files per target (`KPACK_SPLIT_ARTIFACTS`
//! in `share/therock/therock_manifest.json`).
//!
//! Each tarball holds what `artifact_manager fetch --stage=all --amdgpu-families={family}
//! --expand-family-to-targets --flatten` would write, as `tar cfz` of that directory holds it,
//! but no flattened tree is written: each archive is downloaded once into the download cache
//! (verified), and its members stream from it into the tarball's tar stream, gzipped on every
//! core ([`artifacts::FlatTarWriter`], [`artifacts::ParallelGzWriter`]).

use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use build_topology::{
    Checkout, Targets, choose_files, parse_excluded_artifacts, parse_excluded_components,
};
use futures::StreamExt;

use super::{RunOptions, file_names, load_topology, read_run};
use crate::pipeline::{Lines, ReporterFactory, TransferError, download_cached};
use crate::{ArtifactBackend, Error};

/// The artifacts a tarball leaves out unless it is a `-tests-` one.
pub const EXCLUDED_ARTIFACTS: &str = "fftw3";
/// The components a tarball leaves out unless it is a `-tests-` one.
pub const EXCLUDED_COMPONENTS: &str = "test";
/// Where a flattened tree says how the build was configured.
pub const BUILD_MANIFEST: &str = "share/therock/therock_manifest.json";

/// A resolved `build_tarballs` command line; [`TarballsRequest::new`] gives the defaults.
#[derive(Clone)]
#[non_exhaustive]
pub struct TarballsRequest {
    /// The run and backend options.
    pub run: RunOptions,
    /// Where the topology and family table are.
    pub checkout: Checkout,
    /// The GPU families, one tarball each.
    pub families: Vec<String>,
    /// The version in the tarball names.
    pub package_version: String,
    /// Where the tarballs go (the download cache is `{output}/.work/download-cache`).
    pub output_dir: PathBuf,
    /// Also a `-tests-` tarball per family (and multi-arch), with every component.
    pub include_test_tarballs: bool,
    /// Archives downloaded at once.
    pub download_concurrency: usize,
    /// Threads gzipping each tarball.
    pub compress_workers: usize,
}

impl TarballsRequest {
    /// Tarballs of `families` of `run` into `output_dir`, named with `package_version`; no
    /// `-tests-` tarballs; `run.concurrency` downloads at once; gzip on every core.
    pub fn new(
        run: RunOptions,
        checkout: Checkout,
        families: Vec<String>,
        package_version: impl Into<String>,
        output_dir: impl Into<PathBuf>,
    ) -> Self {
        let download_concurrency = run.concurrency.max(1);
        TarballsRequest {
            run,
            checkout,
            families,
            package_version: package_version.into(),
            output_dir: output_dir.into(),
            include_test_tarballs: false,
            download_concurrency,
            compress_workers: crate::pipeline::default_extract_concurrency(),
        }
    }
}

/// A tarball written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuiltTarball {
    /// Its path.
    pub path: PathBuf,
    /// The archives it was made of.
    pub archives: Vec<String>,
    /// Its size.
    pub bytes: u64,
    /// Regular files in it, and their bytes.
    pub files: u64,
    /// Uncompressed bytes of its files.
    pub file_bytes: u64,
}

/// One tarball to make: its label (in the name) and the archives in it.
struct Planned {
    label: String,
    archives: Vec<String>,
}

/// The archives of `families` (expanded to their targets), with or without the tarball
/// exclusions.
struct Chooser<'a> {
    wanted_all: std::collections::BTreeSet<&'a str>,
    wanted_excluding: std::collections::BTreeSet<&'a str>,
    excluded_components: std::collections::BTreeSet<String>,
    listed: Vec<String>,
    checkout: &'a Checkout,
}

impl Chooser<'_> {
    fn choose(
        &self,
        families: &[String],
        excluding: bool,
        lines: &Lines<'_>,
    ) -> Result<Vec<String>, TransferError> {
        let targets = Targets {
            families: Some(families.join(";")),
            generic_only: false,
            targets: String::new(),
            expand: true,
        };
        let requested = targets.resolve(self.checkout, &mut lines.writer())?;
        let none = std::collections::BTreeSet::new();
        let (wanted, components) = if excluding {
            (&self.wanted_excluding, &self.excluded_components)
        } else {
            (&self.wanted_all, &none)
        };
        Ok(choose_files(wanted, &requested, &self.listed, components))
    }
}

/// Runs `build_tarballs`: lines to `out`, download progress to the reporter `progress`
/// makes; the tarballs written, in the order they were made.
pub async fn build_tarballs(
    request: &TarballsRequest,
    progress: &ReporterFactory,
    out: &mut dyn Write,
) -> Result<Vec<BuiltTarball>, TransferError> {
    let lines = Lines::new(out);
    if request.families.is_empty() {
        return Err(TransferError::Usage(
            "no GPU families given (--dist-amdgpu-families)".to_owned(),
        ));
    }
    write_plan_header(request, &lines);
    let topology = load_topology(&request.checkout).await?;
    let all = topology.artifacts_to_fetch(build_topology::ALL_STAGES)?;
    // The tool's own default: a topology without one of these artifacts has nothing to leave
    // out (the reference's `artifact_manager` would refuse the name).
    let known: Vec<&str> = EXCLUDED_ARTIFACTS
        .split(',')
        .filter(|a| topology.artifact_names().any(|n| n == *a))
        .collect();
    let excluded_artifacts = parse_excluded_artifacts(&known.join(","), &topology)?;
    let excluded_components = parse_excluded_components(EXCLUDED_COMPONENTS)?;
    let run_id = request.run.run_id()?;
    let (backend, listed) = read_run(&request.run, &run_id, &lines).await?;
    let base_uri = backend.base_uri();
    let chooser = Chooser {
        wanted_excluding: all
            .iter()
            .copied()
            .filter(|a| !excluded_artifacts.contains(*a))
            .collect(),
        wanted_all: all,
        excluded_components,
        listed: file_names(&listed),
        checkout: &request.checkout,
    };
    let (plans, multiarch) = plan(request, &chooser, &lines)?;
    if let Some(empty) = plans.iter().find(|p| p.archives.is_empty()) {
        let message = format!(
            "no archive for the {} tarball in run {run_id} at {base_uri} ({} archives there)",
            empty.label,
            listed.len()
        );
        lines.line(format!("ERROR: {message}"));
        return Err(TransferError::Reported(message));
    }
    let cache = download_cache(request).await?;
    let mut keys: Vec<String> = plans
        .iter()
        .chain(
            multiarch
                .iter()
                .take(1 + usize::from(request.include_test_tarballs)),
        )
        .flat_map(|p| p.archives.iter().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    download_all(request, &backend, &listed, &keys, &cache, progress, &lines).await?;

    let mut built = Vec::new();
    let mut plans = plans.into_iter();
    let first = plans.next().expect("one family at least");
    let (tarball, manifest) = make(request, &cache, &first, true, &lines).await?;
    built.push(tarball);
    for plan in plans {
        built.push(make(request, &cache, &plan, false, &lines).await?.0);
    }
    if manifest.as_deref().is_some_and(kpack_split) {
        lines.line("::: KPACK_SPLIT_ARTIFACTS detected — building multi-arch tarball");
        let [all, tests] = multiarch;
        built.push(make(request, &cache, &all, false, &lines).await?.0);
        if request.include_test_tarballs {
            built.push(make(request, &cache, &tests, false, &lines).await?.0);
        }
    }
    write_done(request, &built, &lines);
    lines
        .take_error()
        .map_or(Ok(built), |e| Err(TransferError::Write(e)))
}

/// The lines that say what the run is asked for.
fn write_plan_header(request: &TarballsRequest, lines: &Lines<'_>) {
    let platform = request.run.platform;
    lines.line(format!(
        "Building tarballs for {} families: {}",
        request.families.len(),
        request.families.join(", ")
    ));
    lines.line(format!("  Platform: {platform}"));
    lines.line(format!("  Version: {}", request.package_version));
    lines.line(format!("  Output: {}", request.output_dir.display()));
    lines.line(format!(
        "  Include test tarballs: {}",
        if request.include_test_tarballs {
            "True"
        } else {
            "False"
        }
    ));
}

/// The tarballs of each family (and their `-tests-` twins), then the multi-arch pair.
fn plan(
    request: &TarballsRequest,
    chooser: &Chooser<'_>,
    lines: &Lines<'_>,
) -> Result<(Vec<Planned>, [Planned; 2]), TransferError> {
    let mut plans = Vec::new();
    for family in &request.families {
        let one = std::slice::from_ref(family);
        plans.push(Planned {
            label: family.clone(),
            archives: chooser.choose(one, true, lines)?,
        });
        if request.include_test_tarballs {
            plans.push(Planned {
                label: format!("{family}-tests"),
                archives: chooser.choose(one, false, lines)?,
            });
        }
    }
    // The multi-arch tarballs take no archive the family ones do not.
    let multiarch = [
        Planned {
            label: "multiarch".to_owned(),
            archives: chooser.choose(&request.families, true, lines)?,
        },
        Planned {
            label: "multiarch-tests".to_owned(),
            archives: chooser.choose(&request.families, false, lines)?,
        },
    ];
    Ok((plans, multiarch))
}

/// The closing lines: the tarballs made, by name, with their sizes.
fn write_done(request: &TarballsRequest, built: &[BuiltTarball], lines: &Lines<'_>) {
    lines.line(format!(
        "\nDone. Tarballs in {}:",
        request.output_dir.display()
    ));
    let mut listing: Vec<&BuiltTarball> = built.iter().collect();
    listing.sort_by(|a, b| a.path.cmp(&b.path));
    for tarball in listing {
        lines.line(format!(
            "  {} ({})",
            tarball
                .path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            mib(tarball.bytes)
        ));
    }
}

/// `{b}` bytes as MiB to a tenth, as the reference prints sizes.
fn mib(b: u64) -> String {
    format!("{}.{} MB", b / 1_048_576, (b % 1_048_576) * 10 / 1_048_576)
}

/// Whether build manifest `json` turns `KPACK_SPLIT_ARTIFACTS` on (`flags`, truthy as in
/// Python: `true`, a non-zero number, a non-empty string or collection).
fn kpack_split(json: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(json) else {
        return false;
    };
    match value
        .get("flags")
        .and_then(|f| f.get("KPACK_SPLIT_ARTIFACTS"))
    {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|n| n != 0.0),
        Some(serde_json::Value::String(s)) => !s.is_empty(),
        Some(serde_json::Value::Array(a)) => !a.is_empty(),
        Some(serde_json::Value::Object(o)) => !o.is_empty(),
    }
}

/// The download cache the reference uses too, `{output}/.work/download-cache`, made.
async fn download_cache(request: &TarballsRequest) -> Result<std::path::PathBuf, TransferError> {
    let cache = request.output_dir.join(".work").join("download-cache");
    let made = cache.clone();
    storage_backend::blocking(move || fs_err::create_dir_all(&made))
        .await
        .map_err(|source| TransferError::CannotWrite {
            dir: request.output_dir.clone(),
            source,
        })?;
    Ok(cache)
}

/// Downloads `keys` into `cache` (each verified; copies already there and vouched for by
/// their sidecar are kept), `download_concurrency` at once. Every failure is named.
async fn download_all(
    request: &TarballsRequest,
    backend: &ArtifactBackend,
    listed: &[crate::ArtifactEntry],
    keys: &[String],
    cache: &Path,
    progress: &ReporterFactory,
    lines: &Lines<'_>,
) -> Result<(), TransferError> {
    lines.line(format!(
        "\nDownloading {} artifacts into {}...",
        keys.len(),
        cache.display()
    ));
    let bytes = listed
        .iter()
        .filter(|e| keys.contains(&e.file_name))
        .map(|e| e.size)
        .sum();
    let backend = backend.clone().with_reporter(progress(keys.len(), bytes));
    let started = std::time::Instant::now();
    let mut results = futures::stream::iter(keys)
        .map(|key| {
            let backend = &backend;
            async move { (key, download_cached(backend, key, cache).await) }
        })
        .buffer_unordered(request.download_concurrency.max(1));
    let (mut done, mut fetched, mut failures) = (0, 0, Vec::new());
    while let Some((key, result)) = results.next().await {
        match result {
            Ok(outcome) => {
                done += 1;
                fetched += outcome.bytes;
                lines.line(outcome.line);
            }
            Err(e) => {
                let cause = crate::pipeline::chain_text(&e);
                lines.line(format!("  !! Failed to fetch {key}: {cause}"));
                failures.push(key.clone());
            }
        }
    }
    lines.line(storage_backend::totals_line(
        "Fetched",
        (done, keys.len()),
        "artifacts",
        fetched,
        started.elapsed(),
        backend.retries(),
    ));
    if failures.is_empty() {
        return Ok(());
    }
    failures.sort();
    let message = format!(
        "Only fetched {done}/{} artifacts - {} failed: {}",
        keys.len(),
        failures.len(),
        failures.join(", ")
    );
    lines.line(format!("ERROR: {message}"));
    Err(TransferError::Reported(message))
}

/// Writes the tarball of `plan` from the archives in `cache`: under a temporary name in the
/// output directory, renamed into place once complete. With `capture`, also the flattened
/// build manifest.
async fn make(
    request: &TarballsRequest,
    cache: &Path,
    plan: &Planned,
    capture: bool,
    lines: &Lines<'_>,
) -> Result<(BuiltTarball, Option<Vec<u8>>), TransferError> {
    let name = format!(
        "therock-dist-{}-{}-{}.tar.gz",
        request.run.platform, plan.label, request.package_version
    );
    let dest = request.output_dir.join(&name);
    lines.line(format!(
        "\nWriting {name} from {} artifacts...",
        plan.archives.len()
    ));
    let started = std::time::Instant::now();
    let (cache, archives, workers) = (
        cache.to_path_buf(),
        plan.archives.clone(),
        request.compress_workers,
    );
    let written = {
        let dest = dest.clone();
        storage_backend::blocking(move || write_tarball(&dest, &cache, &archives, workers, capture))
            .await?
    };
    let (bytes, totals, manifest) = written;
    lines.line(format!(
        "  ++ Created {name} ({}, {} files, {} of files, {:.1} s)",
        mib(bytes),
        totals.files,
        mib(totals.bytes),
        started.elapsed().as_secs_f64()
    ));
    Ok((
        BuiltTarball {
            path: dest,
            archives: plan.archives.clone(),
            bytes,
            files: totals.files,
            file_bytes: totals.bytes,
        },
        manifest,
    ))
}

/// What writing one tarball gave: its size, what it holds, the captured build manifest.
type Written = (u64, artifacts::Extracted, Option<Vec<u8>>);

/// [`make`]'s blocking part.
fn write_tarball(
    dest: &Path,
    cache: &Path,
    archives: &[String],
    workers: usize,
    capture: bool,
) -> Result<Written, Error> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let file_error = |e| Error::File(file_tree::FileError::write(dest, e));
    let temp = file_tree::temp_file_in(dir, ".tarball").map_err(file_error)?;
    let file = temp.as_file().try_clone().map_err(file_error)?;
    let gz = artifacts::ParallelGzWriter::new(BufWriter::with_capacity(1 << 20, file), workers, 6);
    let mut tar = artifacts::FlatTarWriter::new(gz, dest);
    if capture {
        tar = tar.capturing(BUILD_MANIFEST);
    }
    for key in archives {
        let path = cache.join(key);
        let format = artifacts::ArchiveFormat::from_path(&path)?;
        let file = fs_err::File::open(&path).map_err(|e| file_tree::FileError::read(&path, e))?;
        let stream = artifacts::decoder(format, BufReader::with_capacity(1 << 17, file))
            .map_err(|e| file_tree::FileError::read(&path, e))?;
        tar.add_archive(key, stream)?;
    }
    let totals = tar.totals().clone();
    let manifest = tar.captured().map(<[u8]>::to_vec);
    let buffered = tar.finish()?.finish().map_err(file_error)?;
    let file = buffered
        .into_inner()
        .map_err(|e| file_error(e.into_error()))?;
    file.sync_all().map_err(file_error)?;
    let bytes = file.metadata().map_err(file_error)?.len();
    temp.persist(dest).map_err(|e| file_error(e.error))?;
    Ok((bytes, totals, manifest))
}

#[cfg(test)]
mod tests {
    use super::kpack_split;

    #[test]
    fn kpack_split_is_read_as_python_reads_it() {
        for (json, split) in [
            (r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": true}}"#, true),
            (r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": false}}"#, false),
            (r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": 1}}"#, true),
            (r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": "ON"}}"#, true),
            (r#"{"flags": {}}"#, false),
            (r#"{"other": 1}"#, false),
            ("not json", false),
        ] {
            assert_eq!(kpack_split(json.as_bytes()), split, "{json}");
        }
    }
}
