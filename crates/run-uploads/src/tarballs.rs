//! `upload_tarballs`: uploads release tarballs to the run's `tarballs/` prefix with a
//! `.sha256sum` sidecar each, and exports the URL of the multi-arch tarball (spec §15, §7).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use file_tree::FileError;
use storage_backend::{
    Reporter, StorageBackend, StorageLocation, TransferOptions, blocking, shown,
};
use workflow_outputs::{Platform, ReleaseType, WorkflowOutputRoot};

use crate::{Error, steps};

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// The directory of tarballs.
    pub input_tarballs_dir: PathBuf,
    /// The workflow run id.
    pub run_id: String,
    /// The platform (`linux` or `windows`).
    pub platform: Platform,
    /// The release type; `None` reads `RELEASE_TYPE` (else `ci`).
    pub release_type: Option<ReleaseType>,
    /// Local staging directory instead of S3.
    pub output_dir: Option<PathBuf>,
    /// Only check that the destination is reachable and writable.
    pub preflight: bool,
    /// Transfer options (dry run, overwrite, concurrency).
    pub options: TransferOptions,
}

impl Plan {
    /// Uploads the tarballs of `input_tarballs_dir` to run `run_id` on `platform`: to S3 with
    /// the default transfer options, the release type from the environment.
    pub fn new(
        input_tarballs_dir: impl Into<PathBuf>,
        run_id: impl Into<String>,
        platform: Platform,
    ) -> Self {
        Plan {
            input_tarballs_dir: input_tarballs_dir.into(),
            run_id: run_id.into(),
            platform,
            release_type: None,
            output_dir: None,
            preflight: false,
            options: TransferOptions::default(),
        }
    }
}

fn is_tarball(name: &str) -> bool {
    name.ends_with(".tar.gz")
}

/// The multi-arch tarball among the top-level `names` (sorted): the first whose name starts
/// with `therock-dist-{platform}-multiarch-` and does not contain `-tests-`.
pub(crate) fn multiarch_tarball(names: &[String], platform: Platform) -> Option<&str> {
    let prefix = format!("therock-dist-{platform}-multiarch-");
    names
        .iter()
        .map(String::as_str)
        .find(|n| !n.contains("-tests-") && n.starts_with(&prefix))
}

/// The `tarball_urls` output: `{"multiarch": "<url>"}` (with the reference's `": "`).
pub fn tarball_urls(url: &str) -> String {
    let quoted = serde_json::Value::String(url.to_owned()).to_string();
    format!("{{\"multiarch\": {quoted}}}")
}

/// The sidecar text of `name` with digest `sha`, as `sha256sum` writes it.
fn sidecar_text(sha: &str, name: &str) -> String {
    format!("{sha}  {name}\n")
}

/// A tarball found below the input directory.
struct Tarball {
    /// The file.
    path: PathBuf,
    /// Its path relative to the input directory, `/`-separated.
    relative: String,
}

/// Every `*.tar.gz` below `dir` (symlinks and files below dot-directories left out), sorted.
fn tarballs_below(dir: &Path) -> Result<Vec<Tarball>, Error> {
    let entries = storage_backend::patterns::walk(dir).map_err(|source| Error::List {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut found: Vec<(PathBuf, Vec<String>)> = entries
        .into_iter()
        .filter(|e| {
            e.is_file
                && !e.is_symlink
                && is_tarball(e.name())
                && !e.components.iter().any(|c| c.starts_with('.'))
        })
        .map(|e| (e.path, e.components))
        .collect();
    found.sort_by(|a, b| storage_backend::patterns::cmp_components(&a.1, &b.1));
    Ok(found
        .into_iter()
        .map(|(path, comps)| Tarball {
            path,
            relative: comps.join("/"),
        })
        .collect())
}

/// The digest of `tarball`, checked against `{tarball}.sha256sum` when there is one.
async fn digest(tarball: &Path) -> Result<String, Error> {
    let sha = storage_backend::sha256_file(tarball).await?;
    let sidecar = PathBuf::from(format!("{}.sha256sum", tarball.display()));
    let text = {
        let sidecar = sidecar.clone();
        blocking(move || {
            if !sidecar.is_file() {
                return Ok(None);
            }
            fs_err::read_to_string(&sidecar)
                .map(Some)
                .map_err(|e| FileError::read(&sidecar, e))
        })
        .await?
    };
    if let Some(text) = text {
        let expected = storage_backend::parse_sha256sum(&text)
            .ok_or_else(|| Error::NoDigest(sidecar.clone()))?;
        if expected != sha {
            return Err(Error::SidecarMismatch {
                tarball: tarball.to_path_buf(),
                sidecar,
                actual: sha,
                expected,
            });
        }
    }
    Ok(sha)
}

fn size_mb(path: &Path) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "a size shown with one decimal")]
    fs_err::metadata(path).map_or(0.0, |m| m.len() as f64 / 1_048_576.0)
}

/// The tarballs below `dir` and, for each top-level one, its name and size in MB.
type Listing = (Vec<Tarball>, Vec<(String, f64)>);

/// Lists the input directory (made absolute) on the blocking pool.
async fn listing(input: &Path) -> Result<(PathBuf, Listing), Error> {
    let input = input.to_path_buf();
    blocking(move || {
        let dir = file_tree::existing_dir(&input, "Tarballs directory")?;
        let tarballs = tarballs_below(&dir)?;
        let top = tarballs
            .iter()
            .filter(|t| !t.relative.contains('/'))
            .map(|t| (t.relative.clone(), size_mb(&dir.join(&t.relative))))
            .collect();
        Ok((dir, (tarballs, top)))
    })
    .await
}

/// Runs the whole job: its lines to `out`, the bucket resolution to `log`, transfers reported
/// to `reporter`.
///
/// # Errors
/// A missing input directory, no tarball or no multi-arch tarball (nothing uploaded), a
/// digest that differs from its sidecar's, a failed look-up, connection or upload.
pub async fn run(
    plan: &Plan,
    reporter: Arc<dyn Reporter>,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), Error> {
    let (dir, (tarballs, top)) = listing(&plan.input_tarballs_dir).await?;
    if top.is_empty() {
        return Err(Error::NoTarballs(dir));
    }
    writeln!(out, "Found {} tarballs in {}:", top.len(), dir.display())?;
    for (name, mb) in &top {
        writeln!(out, "  {name} ({mb:.1} MB)")?;
    }
    let names: Vec<String> = top.into_iter().map(|(name, _)| name).collect();
    // Checked before anything is uploaded.
    let Some(multiarch) = multiarch_tarball(&names, plan.platform) else {
        return Err(Error::NoMultiarchTarball {
            dir,
            platform: plan.platform,
        });
    };

    let (root, selection) =
        steps::current_run_root(&plan.run_id, plan.platform, plan.release_type, lookup, log)
            .await?;
    let dest = root.tarballs();
    let output_dir = plan.output_dir.as_deref();
    let preflight = plan.preflight.then_some(&dest);
    let backend = steps::backend_or_preflight(
        output_dir,
        plan.options,
        selection.config().region(),
        reporter,
        lookup,
        preflight,
        out,
    )
    .await?;
    let Some(backend) = backend else {
        return Ok(());
    };
    writeln!(out, "Destination: {}", shown(output_dir, &dest))?;

    // The sidecars are written to a directory of their own, never into the input, removed
    // on the blocking pool when done.
    let tmp = std::env::temp_dir();
    let sidecars = blocking(move || {
        file_tree::temp_dir_in(&tmp, "rock-ci-sidecars").map_err(|e| FileError::write(&tmp, e))
    })
    .await?;
    let uploaded = upload_with_sidecars(&backend, &tarballs, &dest, sidecars.path(), out).await;
    blocking(move || drop(sidecars)).await;
    uploaded?;
    publish(&root, multiarch, plan.options.dry_run, lookup, out).await
}

/// Uploads `tarballs` to `dest`, then a `.sha256sum` sidecar of each (written in `sidecars`),
/// each digest checked against the sidecar beside its tarball if there is one.
async fn upload_with_sidecars(
    backend: &StorageBackend,
    tarballs: &[Tarball],
    dest: &StorageLocation,
    sidecars: &Path,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let mut files = Vec::new();
    let mut sidecar_files = Vec::new();
    for (i, tarball) in tarballs.iter().enumerate() {
        let sha = digest(&tarball.path).await?;
        let name = tarball
            .path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let sidecar = sidecars.join(format!("{i}.sha256sum"));
        let text = sidecar_text(&sha, &name);
        let written = sidecar.clone();
        blocking(move || fs_err::write(&written, text).map_err(|e| FileError::write(&written, e)))
            .await?;
        files.push((tarball.path.clone(), dest.join(&tarball.relative)));
        sidecar_files.push((
            sidecar,
            dest.join(&format!("{}.sha256sum", tarball.relative)),
        ));
    }
    let report = backend.upload_files(files).await.map_err(Error::Tarballs)?;
    backend
        .upload_files(sidecar_files)
        .await
        .map_err(Error::Sidecars)?;
    writeln!(
        out,
        "Uploaded {} files ({} unchanged), each with its .sha256sum sidecar",
        report.transferred, report.skipped
    )?;
    Ok(())
}

/// Sets the `tarball_urls` step output (a dry run prints it instead).
async fn publish(
    root: &WorkflowOutputRoot,
    multiarch: &str,
    dry_run: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let url = root.tarball(multiarch).https_url();
    let value = tarball_urls(&url);
    if dry_run {
        writeln!(
            out,
            "[DRY RUN] Would set github output:\n{}",
            github_actions::outputs_json(&[("tarball_urls", value.as_str())])
        )?;
    } else {
        let (text, written) =
            steps::set_outputs(vec![("tarball_urls".to_owned(), value)], lookup).await?;
        write!(out, "{text}")?;
        if !written {
            tracing::warn!("{}", github_actions::OUTPUTS_NOT_SET_WARNING.trim());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
