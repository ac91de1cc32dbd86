//! `upload_tarballs`: uploads release tarballs to the run's `tarballs/` prefix with a
//! `.sha256sum` sidecar each, and exports the URL of the multi-arch tarball (spec §15, §7).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use file_tree::FileError;
use storage_backend::TransferOptions;
use workflow_outputs::{Platform, ReleaseType, WorkflowOutputRoot};

use crate::uploads::shown;
use crate::{RunRequest, resolve_run_root};

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
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
    /// No progress bars.
    pub quiet: bool,
}

fn is_tarball(name: &str) -> bool {
    name.ends_with(".tar.gz")
}

/// The multi-arch tarball among the top-level `names` (sorted): the first whose name starts
/// with `therock-dist-{platform}-multiarch-` and does not contain `-tests-`.
pub fn multiarch_tarball(names: &[String], platform: Platform) -> Option<&str> {
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

/// Every `*.tar.gz` below `dir` (symlinks and files below dot-directories left out) as
/// (file, path relative to `dir`), sorted.
fn tarballs_below(dir: &Path) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let entries = storage_backend::patterns::walk(dir)
        .with_context(|| format!("Failed to list `{}`", dir.display()))?;
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
        .map(|(path, comps)| (path, comps.join("/")))
        .collect())
}

/// The digest of `tarball`, checked against `{tarball}.sha256sum` when there is one.
async fn digest(tarball: &Path) -> anyhow::Result<String> {
    let sha = storage_backend::sha256_file(tarball).await?;
    let sidecar = PathBuf::from(format!("{}.sha256sum", tarball.display()));
    if sidecar.is_file() {
        let text = fs_err::read_to_string(&sidecar).map_err(|e| FileError::read(&sidecar, e))?;
        let expected = storage_backend::parse_sha256sum(&text)
            .with_context(|| format!("`{}` holds no SHA-256 digest", sidecar.display()))?;
        if expected != sha {
            bail!(
                "`{}` does not match its sidecar `{}`: the file has {sha}, the sidecar says {expected}",
                tarball.display(),
                sidecar.display()
            );
        }
    }
    Ok(sha)
}

fn size_mb(path: &Path) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "a size shown with one decimal")]
    fs_err::metadata(path).map_or(0.0, |m| m.len() as f64 / 1_048_576.0)
}

/// Runs the whole job: progress to `out`, the bucket resolution to `log`.
pub async fn run(
    plan: &Plan,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> anyhow::Result<()> {
    let dir = crate::uploads::existing_dir(&plan.input_tarballs_dir, "Tarballs directory")?;
    let tarballs = tarballs_below(&dir)?;
    let top: Vec<String> = tarballs
        .iter()
        .filter(|(_, rel)| !rel.contains('/'))
        .map(|(_, rel)| rel.clone())
        .collect();
    if top.is_empty() {
        bail!("No .tar.gz files found in `{}`", dir.display());
    }
    writeln!(out, "Found {} tarballs in {}:", top.len(), dir.display())?;
    for name in &top {
        writeln!(out, "  {name} ({:.1} MB)", size_mb(&dir.join(name)))?;
    }
    // Checked before anything is uploaded.
    let Some(multiarch) = multiarch_tarball(&top, plan.platform) else {
        bail!(
            "No multiarch tarball in `{}`: none is named `therock-dist-{}-multiarch-*.tar.gz` (without `-tests-`); nothing was uploaded",
            dir.display(),
            plan.platform
        );
    };

    let request = RunRequest {
        run_id: plan.run_id.clone(),
        platform: plan.platform,
        repository: None,
        release_type: plan.release_type,
        lookup_workflow_run: false,
    };
    let (root, selection) = resolve_run_root(&request, lookup, log)?;
    let dest = root.tarballs();
    let backend = crate::uploads::backend(
        plan.output_dir.as_deref(),
        plan.options,
        selection.config().region(),
        plan.quiet,
        lookup,
    )
    .await?;
    if plan.preflight {
        return crate::uploads::preflight(&backend, &dest, plan.output_dir.as_deref(), out).await;
    }
    writeln!(
        out,
        "Destination: {}",
        shown(plan.output_dir.as_deref(), &dest)
    )?;

    // The sidecars are written to a directory of their own, never into the input.
    let tmp = std::env::temp_dir();
    let sidecars =
        file_tree::temp_dir_in(&tmp, "rock-ci-sidecars").map_err(|e| FileError::write(&tmp, e))?;
    let mut files = Vec::new();
    let mut sidecar_files = Vec::new();
    for (i, (path, rel)) in tarballs.iter().enumerate() {
        let sha = digest(path).await?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let sidecar = sidecars.path().join(format!("{i}.sha256sum"));
        fs_err::write(&sidecar, sidecar_text(&sha, &name))
            .map_err(|e| FileError::write(&sidecar, e))?;
        files.push((path.clone(), dest.join(rel)));
        sidecar_files.push((sidecar, dest.join(&format!("{rel}.sha256sum"))));
    }
    let report = backend
        .upload_files(files)
        .await
        .context("Failed to upload the tarballs; no sidecar was uploaded")?;
    backend
        .upload_files(sidecar_files)
        .await
        .context("Failed to upload the .sha256sum sidecars")?;
    writeln!(
        out,
        "Uploaded {} files ({} unchanged), each with its .sha256sum sidecar",
        report.transferred, report.skipped
    )?;
    publish(&root, multiarch, plan.options.dry_run, lookup, out)
}

/// Sets the `tarball_urls` step output (a dry run prints it instead).
fn publish(
    root: &WorkflowOutputRoot,
    multiarch: &str,
    dry_run: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let url = root.tarball(multiarch).https_url();
    let value = tarball_urls(&url);
    let outputs = [("tarball_urls", value.as_str())];
    if dry_run {
        writeln!(
            out,
            "[DRY RUN] Would set github output:\n{}",
            github_actions::outputs_json(&outputs)
        )?;
    } else {
        let (text, written) = github_actions::set_outputs_reporting(&outputs, lookup)?;
        write!(out, "{text}")?;
        if !written {
            tracing::warn!("{}", github_actions::OUTPUTS_NOT_SET_WARNING.trim());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiarch_selection() {
        let names: Vec<String> = [
            "therock-dist-linux-gfx94X-dcgpu-7.14.0.tar.gz",
            "therock-dist-linux-multiarch-tests-7.14.0.tar.gz",
            "therock-dist-linux-multiarch-7.14.0.dev0+13caf791.tar.gz",
            "therock-dist-windows-multiarch-7.14.0.tar.gz",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            multiarch_tarball(&names, Platform::Linux),
            Some("therock-dist-linux-multiarch-7.14.0.dev0+13caf791.tar.gz")
        );
        assert_eq!(
            multiarch_tarball(&names, Platform::Windows),
            Some("therock-dist-windows-multiarch-7.14.0.tar.gz")
        );
        assert_eq!(multiarch_tarball(&names[..2], Platform::Linux), None);
        assert_eq!(
            tarball_urls("https://b/x%2By.tar.gz"),
            r#"{"multiarch": "https://b/x%2By.tar.gz"}"#
        );
    }
}
