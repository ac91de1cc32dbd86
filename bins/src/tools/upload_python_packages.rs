//! Drop-in `upload_python_packages.py`: upload built wheels and sdists with the pages pip reads
//! (`--find-links` and a simple index), and export the URL for later jobs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use package_index::python::{self, Plan};
use rock_ci::{RunRequest, block_on, resolve_run_root};
use workflow_outputs::{Platform, WorkflowOutputRoot};

/// Upload Python packages to S3 or a local directory.
#[derive(Debug, Parser)]
#[command(version, args_override_self = true)]
struct Args {
    /// Directory of built packages (its `dist/` subdirectory when there is one).
    #[arg(long)]
    input_packages_dir: PathBuf,
    /// Artifact group (e.g. gfx94X-dcgpu); required unless --multiarch.
    #[arg(long, default_value = "")]
    artifact_group: String,
    /// Workflow run id.
    #[arg(long)]
    run_id: String,
    /// Upload to this bucket instead of the run's (no fork prefix).
    #[arg(long)]
    bucket: Option<String>,
    /// Multi-arch layout: no artifact group in the path; per-family indexes.
    #[arg(long)]
    multiarch: bool,
    #[command(flatten)]
    upload: rock_ci::uploads::UploadArgs,
    #[command(flatten)]
    limits: rock_ci::NetworkLimits,
    #[command(flatten)]
    log: rock_ci::Verbosity,
}

fn usage_error(message: &str) -> ! {
    clap::Error::raw(
        clap::error::ErrorKind::ArgumentConflict,
        format!("{message}\n"),
    )
    .exit()
}

pub(crate) fn main() -> ExitCode {
    let args: Args = rock_ci::parse_args();
    args.log.init_logging();
    if args.upload.output_dir.is_some() && args.bucket.is_some() {
        usage_error("--output-dir and --bucket are mutually exclusive");
    }
    if !args.multiarch {
        if args.artifact_group.is_empty() {
            usage_error("--artifact-group is required for single-arch builds");
        }
        if let Err(e) =
            rock_ci::uploads::check_key_component(&args.artifact_group, "artifact group")
        {
            usage_error(&e);
        }
    }
    if args.multiarch && !args.artifact_group.is_empty() {
        tracing::warn!(
            "--artifact-group {} is not used with --multiarch: the multi-arch layout has no group in its paths",
            args.artifact_group
        );
    }
    let lookup = args.limits.over(github_actions::process_env);
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    block_on(run(&args, &lookup, &mut stdout, &mut stderr))
}

/// Uploads the packages and their pages: progress to `out`, the bucket resolution to `log`.
async fn run(
    args: &Args,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> anyhow::Result<()> {
    let output_dir = args.upload.output_dir.as_deref();
    let options = args.upload.options();
    let plan = Plan {
        packages_dir: rock_ci::uploads::existing_dir(
            &args.input_packages_dir,
            "Packages root directory",
        )?,
        artifact_group: args.artifact_group.clone(),
        run_id: args.run_id.clone(),
        multiarch: args.multiarch,
        output_dir: args.upload.output_dir.clone(),
        dry_run: options.dry_run,
    };
    plan.print(out)?;

    // The named bucket (no fork prefix, host platform), else the run's.
    let (root, region) = if let Some(bucket) = &args.bucket {
        let root = WorkflowOutputRoot::new(bucket.clone(), "", &args.run_id, Platform::host())?;
        (root, storage_backend::DEFAULT_REGION.to_owned())
    } else {
        let request = RunRequest {
            run_id: args.run_id.clone(),
            platform: Platform::host(),
            repository: None,
            release_type: None,
            lookup_workflow_run: false,
        };
        let (root, selection) = resolve_run_root(&request, lookup, log)?;
        (root, selection.config().region().to_owned())
    };
    let group = if args.multiarch {
        ""
    } else {
        &args.artifact_group
    };
    let location = root.python_packages(group);
    let backend =
        rock_ci::uploads::backend(output_dir, options, &region, args.log.quiet, lookup).await?;
    if args.upload.preflight {
        return rock_ci::uploads::preflight(&backend, &location, output_dir, out).await;
    }
    let shown = rock_ci::uploads::shown(output_dir, &location);
    let layout = python::publish(&backend, &plan, &location, &shown, out).await?;
    if output_dir.is_none() {
        python::set_outputs(
            &location,
            &layout,
            Platform::host(),
            options.dry_run,
            lookup,
            out,
        )?;
    }
    writeln!(out)?;
    writeln!(out, "[INFO] Done!")?;
    Ok(())
}
