use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::env::{EnvVars, non_empty, process_env};

/// A step summary or output file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("Failed to append to `{}`", path.display())]
pub struct WriteError {
    path: PathBuf,
    #[source]
    source: io::Error,
}

/// What [`append_step_summary`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryOutcome {
    /// Appended to the step summary file, and to the mirror file when one is named.
    Written {
        /// The mirror file written (`$RUNNER_TEMP/job_summary.md`), if any.
        mirror: Option<PathBuf>,
    },
    /// [`EnvVars::GITHUB_STEP_SUMMARY`] is not set: nothing written.
    NotConfigured,
}

fn append(path: &Path, text: &str) -> Result<(), WriteError> {
    let result = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.flush()
        });
    result.map_err(|source| WriteError {
        path: path.to_path_buf(),
        source,
    })
}

/// Appends `summary` and a blank line to the step summary file named by
/// [`EnvVars::GITHUB_STEP_SUMMARY`], mirrored to `$RUNNER_TEMP/job_summary.md` when
/// [`EnvVars::RUNNER_TEMP`] is set.
pub fn append_step_summary(summary: &str) -> Result<SummaryOutcome, WriteError> {
    append_step_summary_with(summary, &process_env)
}

/// As [`append_step_summary`], reading variables through `lookup`.
pub fn append_step_summary_with(
    summary: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<SummaryOutcome, WriteError> {
    let Some(file) = non_empty(lookup, EnvVars::GITHUB_STEP_SUMMARY) else {
        tracing::info!("GITHUB_STEP_SUMMARY is not set, not writing the job summary");
        return Ok(SummaryOutcome::NotConfigured);
    };
    let block = format!("{summary}\n\n");
    append(Path::new(&file), &block)?;
    let mirror =
        non_empty(lookup, EnvVars::RUNNER_TEMP).map(|dir| Path::new(&dir).join("job_summary.md"));
    if let Some(mirror) = &mirror {
        append(mirror, &block)?;
    } else {
        tracing::info!("RUNNER_TEMP is not set, not mirroring the job summary");
    }
    Ok(SummaryOutcome::Written { mirror })
}

/// Sets step outputs by appending to the file named by [`EnvVars::GITHUB_OUTPUT`]. Returns
/// whether they were written (`false` when the variable is not set).
pub fn set_outputs(outputs: &[(&str, &str)]) -> Result<bool, WriteError> {
    set_outputs_with(outputs, &process_env)
}

/// As [`set_outputs`], reading variables through `lookup`.
pub fn set_outputs_with(
    outputs: &[(&str, &str)],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<bool, WriteError> {
    let Some(file) = non_empty(lookup, EnvVars::GITHUB_OUTPUT) else {
        tracing::info!("GITHUB_OUTPUT is not set, not setting step outputs");
        return Ok(false);
    };
    append(Path::new(&file), &format_outputs(outputs))?;
    Ok(true)
}

/// The reference's warning when [`EnvVars::GITHUB_OUTPUT`] is not set.
pub const OUTPUTS_NOT_SET_WARNING: &str =
    "  Warning: GITHUB_OUTPUT env var not set, can't set github outputs";

/// Sets `outputs` as the reference's `gha_set_output` does and returns what it prints:
/// `Setting github output:` with [`outputs_json`], then `OUTPUT {key}={value}` for each
/// single-line value once written. The flag is `false` when [`EnvVars::GITHUB_OUTPUT`] is not
/// set (nothing written, no `OUTPUT` line): the caller prints [`OUTPUTS_NOT_SET_WARNING`] where
/// its warnings go.
pub fn set_outputs_reporting(
    outputs: &[(&str, &str)],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, bool), WriteError> {
    let mut text = format!("Setting github output:\n{}\n", outputs_json(outputs));
    let written = set_outputs_with(outputs, lookup)?;
    if written {
        for (key, value) in outputs {
            if !value.contains(['\n', '\r']) {
                let _ = writeln!(text, "OUTPUT {key}={value}");
            }
        }
    }
    Ok((text, written))
}

/// The text appended to the outputs file: `key=value` lines, and a heredoc for values with a
/// line break, whose delimiter is chosen so that it appears in no line of the value.
pub fn format_outputs(outputs: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for (key, value) in outputs {
        if value.contains(['\n', '\r']) {
            let mut delimiter = String::from("EOF_mag1c");
            let mut n = 0u32;
            while value.lines().any(|l| l == delimiter) {
                n += 1;
                delimiter = format!("EOF_mag1c_{n}");
            }
            let _ = writeln!(text, "{key}<<{delimiter}\n{value}\n{delimiter}");
        } else {
            let _ = writeln!(text, "{key}={value}");
        }
    }
    text
}

/// A string that is neither a true nor a false word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid string value for boolean conversion: `{0}`")]
pub struct InvalidBool(pub String);

/// `outputs` as the reference prints them under `Setting github output:`: a JSON object with
/// two-space indentation, keys in the order given.
pub fn outputs_json(outputs: &[(&str, &str)]) -> String {
    let quoted = |s: &str| serde_json::Value::from(s).to_string();
    let lines: Vec<String> = outputs
        .iter()
        .map(|(key, value)| format!("  {}: {}", quoted(key), quoted(value)))
        .collect();
    format!("{{\n{}\n}}", lines.join(",\n"))
}

/// Parses the boolean words the workflows use: empty is false; otherwise, trimmed and
/// lowercased, one of `1 true t yes y on enable enabled found` or
/// `0 false f no n off disable disabled notfound none null nil undefined n/a`.
pub fn str2bool(value: &str) -> Result<bool, InvalidBool> {
    let normalized = value.trim().to_lowercase();
    match normalized.as_str() {
        "1" | "true" | "t" | "yes" | "y" | "on" | "enable" | "enabled" | "found" => Ok(true),
        "" | "0" | "false" | "f" | "no" | "n" | "off" | "disable" | "disabled" | "notfound"
        | "none" | "null" | "nil" | "undefined" | "n/a" => Ok(false),
        _ => Err(InvalidBool(normalized)),
    }
}

/// [`report_outputs`] could not finish: the outputs file or the transcript failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The outputs file could not be written.
    #[error(transparent)]
    Outputs(#[from] WriteError),
    /// The transcript could not be written to its writer (stdout for the tools).
    #[error("Failed to write to stdout")]
    Stdout(#[source] io::Error),
}

/// Sets `outputs` with [`set_outputs_reporting`] and writes its transcript to `out`, then
/// [`OUTPUTS_NOT_SET_WARNING`] to `warn` (to `out` when `None`) when
/// [`EnvVars::GITHUB_OUTPUT`] is not set. A warning that cannot be written is dropped.
pub fn report_outputs(
    outputs: &[(&str, &str)],
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    warn: Option<&mut dyn Write>,
) -> Result<(), ReportError> {
    let (text, written) = set_outputs_reporting(outputs, lookup)?;
    out.write_all(text.as_bytes())
        .map_err(ReportError::Stdout)?;
    if !written {
        let _ = match warn {
            Some(warn) => writeln!(warn, "{OUTPUTS_NOT_SET_WARNING}"),
            None => writeln!(out, "{OUTPUTS_NOT_SET_WARNING}"),
        };
    }
    Ok(())
}
