//! Drop-in `write_product_release_bucket_info.py`: writes a product's package repository
//! bucket, the IAM role to assume for publishing to it, its region and the pip index URL as the
//! step outputs `bucket`, `iam_role`, `aws_region` and `package_index_url` (what
//! `configure_aws_product_publication_credentials` reads).

use std::process::ExitCode;

use clap::Parser;
use workflow_outputs::{ReleaseProduct, ReleaseType};

/// Determine the IAM role ARN, region and index URL of a product's release bucket.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Release type used to select the product bucket.
    #[arg(long, value_parser = rock_ci::parse_publishing_release_type)]
    release_type: ReleaseType,
    /// Product whose bucket is selected.
    #[arg(long, value_parser = rock_ci::parse_release_product)]
    product: ReleaseProduct,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

fn run(args: &Args) -> anyhow::Result<()> {
    let lookup = github_actions::process_env;
    let config = workflow_outputs::product_release_bucket_config(args.release_type, args.product)?;
    let [bucket, iam_role, region] = config.access_outputs()?;
    let index_url = workflow_outputs::release_package_index_url(args.release_type)?;
    let outputs = [bucket, iam_role, region, ("package_index_url", index_url)];
    let outputs = outputs.each_ref().map(|(k, v)| (*k, v.as_str()));
    let mut stdout = std::io::stdout().lock();
    github_actions::report_outputs(&outputs, &lookup, &mut stdout, Some(&mut std::io::stderr()))?;
    Ok(())
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    rock_ci::exit_code(run(&args))
}
