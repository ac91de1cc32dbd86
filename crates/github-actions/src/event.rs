use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::env::{EnvVars, non_empty, process_env};

/// Why the event payload could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// The payload file does not exist.
    #[error("GITHUB_EVENT_PATH is set to `{}` but no such file exists", .0.display())]
    Missing(PathBuf),
    /// The payload file exists but cannot be read.
    #[error("Failed to read the event payload `{}`", path.display())]
    Read {
        /// The payload file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The payload is not JSON.
    #[error("The event payload `{}` is not valid JSON", path.display())]
    Json {
        /// The payload file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The payload is JSON but not an object.
    #[error("The event payload `{}` is not a JSON object", .0.display())]
    NotAnObject(PathBuf),
}

/// Events whose payload describes a pull request.
const PULL_REQUEST_EVENTS: &[&str] = &["pull_request", "pull_request_target"];

/// Whether the current run (from [`EnvVars::GITHUB_EVENT_NAME`] and
/// [`EnvVars::GITHUB_EVENT_PATH`]) is a pull request from a fork.
pub fn is_current_run_pr_from_fork() -> Result<bool, EventError> {
    is_pr_from_fork_with(&process_env)
}

/// As [`is_current_run_pr_from_fork`], reading variables through `lookup`.
pub fn is_pr_from_fork_with(lookup: &dyn Fn(&str) -> Option<String>) -> Result<bool, EventError> {
    let event_name = lookup(EnvVars::GITHUB_EVENT_NAME);
    let event_path = non_empty(lookup, EnvVars::GITHUB_EVENT_PATH).map(PathBuf::from);
    is_pr_from_fork(event_name.as_deref(), event_path.as_deref())
}

/// Whether an event is a pull request from a fork.
///
/// Only `pull_request` and `pull_request_target` events can be; without a payload path the
/// answer is no. In the payload, `pull_request.head.repo.fork` decides by its truthiness in
/// Python, as in the reference (so the string `"true"` is a fork); a `head.repo` that is
/// `null` or absent (the fork was deleted) counts as a fork, so that such a run never gets
/// the write role of the base repository.
pub fn is_pr_from_fork(
    event_name: Option<&str>,
    event_path: Option<&Path>,
) -> Result<bool, EventError> {
    let Some(event_name) = event_name else {
        return Ok(false);
    };
    if !PULL_REQUEST_EVENTS.contains(&event_name) {
        return Ok(false);
    }
    let Some(path) = event_path else {
        return Ok(false);
    };
    let payload = read_payload(path)?;
    let Some(pull_request) = payload.get("pull_request").filter(|v| v.is_object()) else {
        return Ok(false);
    };
    let head_repo = pull_request.get("head").and_then(|h| h.get("repo"));
    Ok(match head_repo {
        None | Some(Value::Null) => true,
        Some(repo) => repo.get("fork").is_some_and(truthy),
    })
}

/// Python's truthiness of a JSON value, as the reference's `bool(...)` of the `fork` field:
/// `null`, `false`, `0`, `""`, `[]` and `{}` are false; anything else (`"true"`, but also
/// `"false"`) is true.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn read_payload(path: &Path) -> Result<Value, EventError> {
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(EventError::Missing(path.to_path_buf()));
        }
        Err(source) => {
            return Err(EventError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let value: Value = serde_json::from_str(&text).map_err(|source| EventError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(EventError::NotAnObject(path.to_path_buf()))
    }
}
