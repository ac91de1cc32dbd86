//! The blocking steps of the jobs that read the environment (the event payload, the job
//! summary, the step outputs), run on the blocking pool with the variables they read.

use std::io::Write;

use github_actions::{CURRENT_RUN_ROOT_VARS, EnvVars, RunRequest, captured};
use storage_backend::blocking;
use workflow_outputs::{BucketSelection, Platform, ReleaseType, WorkflowOutputRoot};

use crate::Error;

/// The output root and bucket of the current run `run_id` (fork evidence from its event
/// payload), with the selection report written to `log`.
pub(crate) async fn current_run_root(
    run_id: &str,
    platform: Platform,
    release_type: Option<ReleaseType>,
    lookup: &dyn Fn(&str) -> Option<String>,
    log: &mut dyn Write,
) -> Result<(WorkflowOutputRoot, BucketSelection), Error> {
    let request = RunRequest {
        run_id: run_id.to_owned(),
        platform,
        repository: None,
        release_type,
        lookup_workflow_run: false,
    };
    let env = captured(lookup, &CURRENT_RUN_ROOT_VARS);
    let (resolved, report) = blocking(move || {
        let mut report = Vec::new();
        let resolved = github_actions::resolve_run_root(&request, &env, &mut report);
        (resolved, report)
    })
    .await;
    log.write_all(&report)?;
    Ok(resolved?)
}

/// Whether the current run is a pull request from a fork (from its event payload).
pub(crate) async fn is_pr_from_fork(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<bool, Error> {
    let env = captured(
        lookup,
        &[EnvVars::GITHUB_EVENT_NAME, EnvVars::GITHUB_EVENT_PATH],
    );
    blocking(move || github_actions::is_pr_from_fork_with(&env))
        .await
        .map_err(Error::Event)
}

/// Appends `line` to the job summary (nothing when there is no summary file).
pub(crate) async fn append_step_summary(
    line: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), Error> {
    let env = captured(
        lookup,
        &[EnvVars::GITHUB_STEP_SUMMARY, EnvVars::RUNNER_TEMP],
    );
    let line = line.to_owned();
    blocking(move || github_actions::append_step_summary_with(&line, &env)).await?;
    Ok(())
}

/// Sets step outputs as [`github_actions::set_outputs_reporting`] does: its text, and whether
/// they were written.
pub(crate) async fn set_outputs(
    outputs: Vec<(String, String)>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, bool), Error> {
    let env = captured(lookup, &[EnvVars::GITHUB_OUTPUT]);
    let reported = blocking(move || {
        let pairs: Vec<(&str, &str)> = outputs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        github_actions::set_outputs_reporting(&pairs, &env)
    })
    .await?;
    Ok(reported)
}

/// The backend of an upload job: the staging directory `output_dir`, else S3 in `region`.
/// With `preflight` (the destination to prove writable) only the preflight runs, its line
/// printed to `out`, and there is no backend to go on with (`None`).
pub(crate) async fn backend_or_preflight(
    output_dir: Option<&std::path::Path>,
    options: storage_backend::TransferOptions,
    region: &str,
    reporter: std::sync::Arc<dyn storage_backend::Reporter>,
    lookup: &dyn Fn(&str) -> Option<String>,
    preflight: Option<&storage_location::StorageLocation>,
    out: &mut dyn std::io::Write,
) -> Result<Option<storage_backend::StorageBackend>, crate::Error> {
    let backend =
        storage_backend::StorageBackend::for_upload(output_dir, options, region, reporter, lookup)
            .await?;
    if let Some(dest) = preflight {
        let line = backend.preflight_upload(dest, output_dir).await?;
        writeln!(out, "{line}")?;
        return Ok(None);
    }
    Ok(Some(backend))
}
