//! What the uploading tools share: the transfer flags, and the backend they upload with (S3
//! or a local staging directory) with progress bars. How a destination is named to the user
//! and the preflight are storage-backend's, the log upload run-uploads'.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use storage_backend::{Overwrite, StorageBackend, TransferOptions};

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
        let mut options = TransferOptions::default();
        options.concurrency = self.upload_concurrency.max(1);
        options.overwrite = self.overwrite.into();
        options.dry_run = self.dry_run;
        options
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
    StorageBackend::for_upload(output_dir, options, region, progress, lookup).await
}
