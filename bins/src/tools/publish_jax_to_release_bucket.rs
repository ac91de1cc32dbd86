//! Drop-in `publish_jax_to_release_bucket.py`: publishes the JAX wheels a release build made
//! to the JAX product repository (`therock-repo-amd-{stream}-jax`) and sets the step output
//! `package_index_url` that the test jobs install from.

use std::process::ExitCode;

use clap::Parser;
use workflow_outputs::ReleaseProduct;

/// Publish JAX wheels to the JAX release bucket.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    #[command(flatten)]
    publish: rock_ci::publish::PublishPackagesArgs,
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.publish.log.init_logging();
    rock_ci::block_on(rock_ci::publish::publish_packages(
        &args.publish,
        ReleaseProduct::Jax,
        ("JAX wheel", "JAX wheels"),
    ))
}
