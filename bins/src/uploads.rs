//! What the uploading tools share: the transfer flags, the backend they upload with (S3 or a
//! local staging directory), how a destination is named to the user, the preflight, and one
//! error that lists every failure of a run that carried on past them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use storage_backend::{
    ClientOptions, Direction, Overwrite, S3Client, StorageBackend, TransferOptions,
};
use storage_location::StorageLocation;

/// `--overwrite` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OverwriteArg {
    /// Replace existing objects (the reference's behaviour).
    #[default]
    Always,
    /// Refuse to replace; the error lists every key that existed.
    Never,
    /// Skip objects whose recorded SHA-256 equals the file's.
    IfDifferent,
}

impl From<OverwriteArg> for Overwrite {
    fn from(arg: OverwriteArg) -> Self {
        match arg {
            OverwriteArg::Always => Overwrite::Always,
            OverwriteArg::Never => Overwrite::Never,
            OverwriteArg::IfDifferent => Overwrite::IfDifferent,
        }
    }
}

/// The transfer flags of the uploaders that take `--output-dir` and `--dry-run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UploadArgs {
    /// Stage into this local directory instead of S3.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Print every planned upload, upload nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Check that the destination is reachable and writable, then exit.
    #[arg(long)]
    pub preflight: bool,
    /// What to do with objects that already exist.
    #[arg(long, value_enum, default_value = "always")]
    pub overwrite: OverwriteArg,
    /// Files uploaded at once.
    #[arg(long, default_value_t = storage_backend::DEFAULT_CONCURRENCY, value_parser = crate::positive::<usize>())]
    pub upload_concurrency: usize,
}

impl UploadArgs {
    /// The transfer options these flags ask for.
    pub fn options(&self) -> TransferOptions {
        TransferOptions {
            concurrency: self.upload_concurrency.max(1),
            overwrite: self.overwrite.into(),
            dry_run: self.dry_run,
            ..TransferOptions::default()
        }
    }
}

/// The backend to upload with: a local staging directory when `output_dir` is given, else S3
/// through a client for `region` configured from `lookup` (endpoint, credentials, limits).
/// Progress bars unless `quiet` (and only on a terminal).
pub async fn backend(
    output_dir: Option<&Path>,
    options: TransferOptions,
    region: &str,
    quiet: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<StorageBackend, storage_backend::Error> {
    let progress = Arc::new(crate::progress::Progress::for_stderr(quiet));
    backend_reporting(output_dir, options, region, progress, lookup).await
}

/// [`backend`] reporting to `progress`, which the caller keeps to tell the totals.
pub async fn backend_reporting(
    output_dir: Option<&Path>,
    options: TransferOptions,
    region: &str,
    progress: Arc<crate::progress::Progress>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<StorageBackend, storage_backend::Error> {
    if let Some(dir) = output_dir {
        return Ok(StorageBackend::local(dir, options).with_reporter(progress));
    }
    let client_options = ClientOptions {
        region: Some(region.to_owned()),
        max_idle_connections: options.concurrency * options.part_concurrency,
        ..ClientOptions::default()
    };
    let client = S3Client::connect_with(&client_options, lookup).await?;
    Ok(StorageBackend::s3(client, options).with_reporter(progress))
}

/// Where `location` is for the user: its path in the local staging directory `output_dir`,
/// else its S3 URI.
pub fn shown(output_dir: Option<&Path>, location: &StorageLocation) -> String {
    match output_dir {
        Some(dir) => location
            .local_path(dir)
            .map_or_else(|_| location.s3_uri(), |p| p.display().to_string()),
        None => location.s3_uri(),
    }
}

/// Proves that `root` can be written to (credentials, bucket, a probe object written and
/// deleted), printing `[INFO] Preflight ok: …` to `out`.
pub async fn preflight(
    backend: &StorageBackend,
    root: &StorageLocation,
    output_dir: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    backend
        .preflight(Direction::Upload, root)
        .await
        .with_context(|| {
            format!(
                "Preflight of uploads to `{}` failed",
                shown(output_dir, root)
            )
        })?;
    writeln!(
        out,
        "[INFO] Preflight ok: {} is reachable and writable",
        shown(output_dir, root)
    )?;
    Ok(())
}

/// `dir` made absolute, if it is a directory; else the error ``{what} not found: `{dir}` ``.
pub fn existing_dir(dir: &Path, what: &str) -> anyhow::Result<PathBuf> {
    fs_err::canonicalize(dir)
        .ok()
        .filter(|p| p.is_dir())
        .with_context(|| format!("{what} not found: `{}`", dir.display()))
}

/// The mtime of archive members: `SOURCE_DATE_EPOCH` when it is a number, else 0.
pub fn source_date_epoch(lookup: &dyn Fn(&str) -> Option<String>) -> u64 {
    lookup("SOURCE_DATE_EPOCH")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `{build}/logs` when it is a directory; otherwise prints the reference's
/// `[INFO] Log directory … not found. Skipping upload.` and gives `None`.
pub fn log_dir(build_dir: &Path, out: &mut dyn Write) -> std::io::Result<Option<PathBuf>> {
    let logs = build_dir.join("logs");
    if logs.is_dir() {
        return Ok(Some(logs));
    }
    writeln!(
        out,
        "[INFO] Log directory {} not found. Skipping upload.",
        logs.display()
    )?;
    Ok(None)
}

/// Uploads the log directory `logs` to `dest`, all but anything under a directory named
/// `ccache` (those logs go up as their archive), printing
/// `[INFO] Uploaded {n} log files to {dest} ({m} unchanged)`.
pub async fn upload_logs(
    backend: &StorageBackend,
    logs: &Path,
    dest: &StorageLocation,
    output_dir: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let report = backend
        .upload_directory(logs, dest, &[], &["ccache/**/*".to_owned()])
        .await
        .with_context(|| format!("Failed to upload the logs in `{}`", logs.display()))?;
    writeln!(
        out,
        "[INFO] Uploaded {} log files to {} ({} unchanged)",
        report.transferred,
        shown(output_dir, dest),
        report.skipped
    )?;
    Ok(())
}

/// `Ok` without failures, else one error listing each of them.
pub fn combine(mut failures: Vec<anyhow::Error>) -> anyhow::Result<()> {
    if failures.len() <= 1 {
        return failures.pop().map_or(Ok(()), Err);
    }
    Err(anyhow::anyhow!(
        "{}",
        failures
            .iter()
            .map(|e| format!("{e:#}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

/// Checks a value that becomes one component of an S3 key (a stage or family name): not `.`
/// or `..`, and no `/`, `\`, whitespace or control character. `what` names the flag.
pub fn check_key_component(value: &str, what: &str) -> Result<(), String> {
    if value == "." || value == ".." {
        return Err(format!("{what} `{value}` is not a name"));
    }
    if let Some(c) = value
        .chars()
        .find(|c| matches!(c, '/' | '\\') || c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "{what} `{}` contains `{}`, which cannot be part of an S3 key component",
            value.escape_debug(),
            c.escape_debug()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_key_component;

    #[test]
    fn key_components() {
        for ok in ["", "math-libs", "gfx94X-dcgpu", "compiler-runtime", "a.b"] {
            assert_eq!(check_key_component(ok, "--stage"), Ok(()), "{ok}");
        }
        for bad in ["..", ".", "a/b", "a\\b", "a b", "a\nb", "\t"] {
            assert!(check_key_component(bad, "--stage").is_err(), "{bad:?}");
        }
        assert_eq!(
            check_key_component("../x", "--amdgpu-family").unwrap_err(),
            "--amdgpu-family `../x` contains `/`, which cannot be part of an S3 key component"
        );
    }
}
