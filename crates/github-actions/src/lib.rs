//! The GitHub Actions edge: what the tools learn from and tell the workflow they run in.
//!
//! - [`is_current_run_pr_from_fork`]: whether the event payload describes a pull request
//!   from a fork (such runs never get the bucket's write role).
//! - [`append_step_summary`] and [`set_outputs`]: the `GITHUB_STEP_SUMMARY` and
//!   `GITHUB_OUTPUT` files.
//! - [`GithubClient`]: the REST look-ups (a workflow run, the runs of a commit, a branch's
//!   recent commits, a ref's commit), honouring `GITHUB_API_URL`, with retries on server
//!   errors and rate limits and every page of paginated answers.
//! - [`resolve_run_root`] and [`select_bucket`]: a run's output root and artifacts bucket
//!   from the caller's repository and release type (else the environment's) and the fork
//!   evidence (the API's run, else the event payload), with the reference's report block.
//! - [`layout_text`] and [`layout_json`]: a run's output layout as `ci_layout` prints it.
//! - [`str2bool`]: the boolean words of workflow inputs.
//!
//! Every function that reads the environment has a `_with` twin taking a lookup function.
//!
//! ```
//! use rock_ci_github_actions::{format_outputs, str2bool};
//!
//! assert!(str2bool(" Yes ")?);
//! assert!(!str2bool("")?);
//! assert_eq!(format_outputs(&[("bucket", "therock-ci-artifacts")]), "bucket=therock-ci-artifacts\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

mod api;
mod env;
mod event;
mod layout;
mod outputs;
mod run_root;

pub use api::{
    ApiError, DEFAULT_API_URL, DEFAULT_SERVER_URL, GithubClient, HeadRepository, RetryPolicy,
    WorkflowRun, check_commit_sha, check_run_id,
};
pub use env::{CURRENT_RUN_ROOT_VARS, EnvVars, captured, process_env, secret_values};
pub use event::{EventError, is_current_run_pr_from_fork, is_pr_from_fork, is_pr_from_fork_with};
pub use layout::{
    LayoutError, LayoutRequest, LayoutView, layout_json, layout_text, write_layout,
    write_root_outputs,
};
pub use outputs::{
    InvalidBool, OUTPUTS_NOT_SET_WARNING, ReportError, SummaryOutcome, WriteError,
    append_step_summary, append_step_summary_with, format_outputs, outputs_json, report_outputs,
    set_outputs, set_outputs_reporting, set_outputs_with, str2bool,
};
pub use run_root::{
    RunFacts, RunRequest, RunRootError, resolve_run_root, select_bucket, select_bucket_for_run,
    select_run_bucket,
};
pub use storage_location::redact_url;

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
