//! What the release publishers of locally built packages (`publish_pytorch_to_release_bucket`,
//! `publish_jax_to_release_bucket`) share: their flags and their run over release-publish.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use release_publish::{LocalRelease, PackageLayout, Writers};
use workflow_outputs::{PythonIndex, ReleaseProduct, ReleaseType};

/// The flags of a publisher of locally built packages.
#[derive(Debug, Clone, clap::Args)]
pub struct PublishPackagesArgs {
    /// Directory of built wheels (its top level in the structured layout; recursive otherwise).
    #[arg(long)]
    pub source_dir: PathBuf,
    /// Release type; selects the bucket.
    #[arg(long, value_parser = crate::parse_publishing_release_type)]
    pub release_type: ReleaseType,
    /// Product-local layout in the product repository (`v5/rocm/{product}/{index}/{package}/`).
    #[arg(long)]
    pub structured: bool,
    /// Python index of the structured layout.
    #[arg(long, default_value = "whl-next", value_parser = crate::parse_python_index)]
    pub python_index: PythonIndex,
    /// Print every planned upload and set the output; no AWS access at all.
    #[arg(long)]
    pub dry_run: bool,
    /// Files uploaded at once.
    #[arg(long, default_value_t = storage_backend::DEFAULT_CONCURRENCY, value_parser = crate::positive::<usize>())]
    pub upload_concurrency: usize,
    /// Network time limits and retries.
    #[command(flatten)]
    pub limits: crate::NetworkLimits,
    /// Log verbosity.
    #[command(flatten)]
    pub log: crate::Verbosity,
}

/// Publishes the packages of `args.source_dir` for `product` with release-publish's
/// [`LocalRelease::start`] and [`release_publish::LocalPublication::finish`]. `labels` name one
/// file and the directory in the log lines (`PyTorch wheel`, `PyTorch wheels`).
///
/// # Errors
/// release-publish's errors (a bad name, a conflict, a failed upload, the outputs file) and
/// storage-backend's connection errors.
pub async fn publish_packages(
    args: &PublishPackagesArgs,
    product: ReleaseProduct,
    labels: (&str, &str),
) -> anyhow::Result<()> {
    let lookup = args.limits.over(github_actions::process_env);
    let release = LocalRelease::new(
        args.release_type,
        product,
        if args.structured {
            PackageLayout::Structured(args.python_index)
        } else {
            PackageLayout::Legacy
        },
    );
    let mut log: Box<dyn Write> = if args.log.quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stderr())
    };
    let publication = release.start(&args.source_dir, labels, &mut log)?;
    let progress = Arc::new(crate::progress::Progress::for_stderr(args.log.quiet));
    let writers = Writers {
        log: &mut log,
        out: &mut std::io::stdout(),
        warn: &mut std::io::stderr(),
    };
    publication
        .finish(
            args.dry_run,
            args.upload_concurrency,
            progress,
            &lookup,
            writers,
        )
        .await?;
    Ok(())
}
