//! What the release publishers of locally built packages (`publish_pytorch_to_release_bucket`,
//! `publish_jax_to_release_bucket`) share: their flags and their run over release-publish.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use release_publish::{LocalRelease, PackageLayout};
use storage_backend::{StorageBackend, TransferOptions};
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

/// Publishes the packages of `args.source_dir` for `product` and sets the step output
/// `package_index_url` once every file is in place. `label` names one file in the log lines
/// (`PyTorch wheel`), `plural` the directory upload of the legacy layout (`PyTorch wheels`).
///
/// # Errors
/// release-publish's errors (a bad name, a conflict, a failed upload), storage-backend's
/// connection errors, and an outputs file that cannot be written.
pub async fn publish_packages(
    args: &PublishPackagesArgs,
    product: ReleaseProduct,
    (label, plural): (&str, &str),
) -> anyhow::Result<()> {
    let lookup = args.limits.over(github_actions::process_env);
    let release = LocalRelease {
        release_type: args.release_type,
        product,
        layout: if args.structured {
            PackageLayout::Structured(args.python_index)
        } else {
            PackageLayout::Legacy
        },
    };
    let bucket = release.bucket()?;
    let index_url = release.package_index_url()?;
    let plan = release.plan(&args.source_dir)?;
    let mut log: Box<dyn Write> = if args.log.quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stderr())
    };
    if args.structured {
        plan.print(label, &mut log)?;
    } else {
        writeln!(
            log,
            "{plural}: {} -> s3://{}/{}",
            args.source_dir.display(),
            bucket.name(),
            workflow_outputs::LEGACY_MULTI_ARCH_WHEEL_PREFIX
        )?;
    }
    let suffix = if args.structured { " (structured)" } else { "" };
    if args.dry_run {
        plan.print_dry_run(&mut std::io::stdout().lock())
            .context("Failed to write to stdout")?;
        writeln!(log, "Uploaded {} wheel files{suffix}", plan.files.len())?;
    } else {
        let options = TransferOptions {
            concurrency: args.upload_concurrency,
            ..TransferOptions::default()
        };
        let backend =
            crate::uploads::backend(None, options, bucket.region(), args.log.quiet, &lookup)
                .await?;
        let StorageBackend::S3(s3) = backend else {
            unreachable!("no staging directory was given");
        };
        let report = release_publish::publish(&s3, &plan, args.upload_concurrency).await?;
        if report.unchanged > 0 {
            writeln!(
                log,
                "{} of them already published with the same content, left as they were",
                report.unchanged
            )?;
        }
        writeln!(
            log,
            "Uploaded {} wheel files{suffix}",
            report.uploaded + report.unchanged
        )?;
    }
    drop(log);
    let outputs = [("package_index_url", index_url.as_str())];
    let (text, written) = github_actions::set_outputs_reporting(&outputs, &lookup)?;
    if !written {
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            github_actions::OUTPUTS_NOT_SET_WARNING
        );
    }
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("Failed to write to stdout")?;
    Ok(())
}
