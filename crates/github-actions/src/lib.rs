//! The GitHub Actions edge: what the tools learn from and tell the workflow they run in.
//!
//! - [`is_current_run_pr_from_fork`]: whether the event payload describes a pull request
//!   from a fork (such runs never get the bucket's write role).
//! - [`append_step_summary`] and [`set_outputs`]: the `GITHUB_STEP_SUMMARY` and
//!   `GITHUB_OUTPUT` files.
//! - [`GithubClient`]: the REST look-ups (a workflow run, the runs of a commit, a branch's
//!   recent commits, a ref's commit), honouring `GITHUB_API_URL`, with retries on server
//!   errors and rate limits and every page of paginated answers.
//! - [`str2bool`]: the boolean words of workflow inputs.
//!
//! Every function that reads the environment has a `_with` twin taking a lookup function.
//!
//! ```
//! use github_actions::{format_outputs, str2bool};
//!
//! assert!(str2bool(" Yes ")?);
//! assert!(!str2bool("")?);
//! assert_eq!(format_outputs(&[("bucket", "therock-ci-artifacts")]), "bucket=therock-ci-artifacts\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod api;
mod env;
mod event;
mod outputs;

pub use api::{
    ApiError, DEFAULT_API_URL, DEFAULT_SERVER_URL, GithubClient, HeadRepository, RetryPolicy,
    WorkflowRun, check_run_id,
};
pub use env::{EnvVars, process_env};
pub use event::{EventError, is_current_run_pr_from_fork, is_pr_from_fork, is_pr_from_fork_with};
pub use outputs::{
    InvalidBool, OUTPUTS_NOT_SET_WARNING, SummaryOutcome, WriteError, append_step_summary,
    append_step_summary_with, format_outputs, outputs_json, set_outputs, set_outputs_reporting,
    set_outputs_with, str2bool,
};
pub use storage_location::redact_url;
