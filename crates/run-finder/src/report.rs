//! The result records of a search and how the tools print them: a text block per result, a
//! JSON document, and the Python `repr` of the group list in the not-found message.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::Value;

/// Where one artifact group was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRunInfo {
    /// The commit the run built.
    pub git_commit_sha: String,
    /// `owner/repo`.
    pub github_repository_name: String,
    /// `""` or `{owner}-{name}/` (runs in the external bucket).
    pub external_repo: String,
    /// `linux` or `windows`.
    pub platform: String,
    /// The group asked for.
    pub artifact_group: String,
    /// The workflow file.
    pub workflow_file_name: String,
    /// The run id.
    pub workflow_run_id: String,
    /// `completed`, `in_progress`, ... (`unknown` when the API gave none).
    pub workflow_run_status: String,
    /// `success`, `failure`, ..., none while the run is not completed.
    pub workflow_run_conclusion: Option<String>,
    /// The run's web page.
    pub workflow_run_html_url: String,
    /// The artifacts bucket.
    pub s3_bucket: String,
    /// `--amdgpu-target` values.
    pub amdgpu_targets: Vec<String>,
    /// `--require-artifact` patterns.
    pub required_artifact_patterns: Vec<String>,
    /// The selected archives, sorted.
    pub artifact_filenames: Vec<String>,
}

impl ArtifactRunInfo {
    /// `https://github.com/{repo}/commit/{sha}`.
    pub fn git_commit_url(&self) -> String {
        format!(
            "https://github.com/{}/commit/{}",
            self.github_repository_name, self.git_commit_sha
        )
    }

    /// `{external_repo}{run_id}-{platform}/`.
    pub fn s3_path(&self) -> String {
        format!(
            "{}{}-{}/",
            self.external_repo, self.workflow_run_id, self.platform
        )
    }

    /// `s3://{bucket}/{s3_path}`.
    pub fn s3_uri(&self) -> String {
        format!("s3://{}/{}", self.s3_bucket, self.s3_path())
    }

    /// The run's `index.html` over HTTPS.
    pub fn s3_index_url(&self) -> String {
        format!(
            "https://{}.s3.amazonaws.com/{}index.html",
            self.s3_bucket,
            self.s3_path()
        )
    }

    /// The JSON object of one result (keys sorted when serialized).
    pub fn to_json(&self) -> BTreeMap<&'static str, Value> {
        let s = |v: &str| Value::String(v.to_owned());
        let list = |v: &[String]| Value::Array(v.iter().map(|x| s(x)).collect());
        BTreeMap::from([
            ("amdgpu_targets", list(&self.amdgpu_targets)),
            ("artifact_filenames", list(&self.artifact_filenames)),
            ("artifact_group", s(&self.artifact_group)),
            ("external_repo", s(&self.external_repo)),
            ("git_commit_sha", s(&self.git_commit_sha)),
            ("git_commit_url", s(&self.git_commit_url())),
            ("github_repository_name", s(&self.github_repository_name)),
            ("missing_required_artifact_patterns", Value::Array(vec![])),
            ("platform", s(&self.platform)),
            (
                "required_artifact_patterns",
                list(&self.required_artifact_patterns),
            ),
            ("s3_bucket", s(&self.s3_bucket)),
            ("s3_index_url", s(&self.s3_index_url())),
            ("s3_path", s(&self.s3_path())),
            ("s3_uri", s(&self.s3_uri())),
            ("workflow_file_name", s(&self.workflow_file_name)),
            (
                "workflow_run_conclusion",
                self.workflow_run_conclusion
                    .as_deref()
                    .map_or(Value::Null, s),
            ),
            ("workflow_run_html_url", s(&self.workflow_run_html_url)),
            ("workflow_run_id", s(&self.workflow_run_id)),
            ("workflow_run_status", s(&self.workflow_run_status)),
        ])
    }

    /// The human-readable block, followed by a blank line.
    pub fn print(&self, out: &mut dyn Write) -> io::Result<()> {
        let status = match &self.workflow_run_conclusion {
            Some(c) if !c.is_empty() => format!("{} ({c})", self.workflow_run_status),
            _ => self.workflow_run_status.clone(),
        };
        writeln!(out, "Artifact info:")?;
        writeln!(
            out,
            "  Git repository:      {}",
            self.github_repository_name
        )?;
        writeln!(out, "  Git commit:          {}", self.git_commit_sha)?;
        writeln!(out, "  Git commit URL:      {}", self.git_commit_url())?;
        writeln!(out, "  Platform:            {}", self.platform)?;
        writeln!(out, "  Artifact group:      {}", self.artifact_group)?;
        if !self.amdgpu_targets.is_empty() {
            writeln!(
                out,
                "  AMDGPU targets:      {}",
                self.amdgpu_targets.join(", ")
            )?;
        }
        writeln!(out, "  Workflow name:       {}", self.workflow_file_name)?;
        writeln!(out, "  Workflow run ID:     {}", self.workflow_run_id)?;
        writeln!(out, "  Workflow run URL:    {}", self.workflow_run_html_url)?;
        writeln!(out, "  Workflow run status: {status}")?;
        writeln!(out, "  S3 Bucket:           {}", self.s3_bucket)?;
        writeln!(out, "  S3 Path:             {}", self.s3_path())?;
        writeln!(out, "  S3 Index:            {}", self.s3_index_url())?;
        writeln!(
            out,
            "  Artifact count:      {}",
            self.artifact_filenames.len()
        )?;
        if !self.artifact_filenames.is_empty() {
            writeln!(out, "  Artifacts:")?;
            for name in &self.artifact_filenames {
                writeln!(out, "    {name}")?;
            }
        }
        writeln!(out)
    }
}

/// Writes `results` to `out` and flushes it: with `json`, the document
/// `{"results": [...], "status": "found"}` (two-space indentation, keys sorted, a final
/// newline); else the text block of each result.
pub fn write_results(
    results: &[ArtifactRunInfo],
    json: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    if json {
        let doc = BTreeMap::from([
            (
                "results",
                Value::Array(
                    results
                        .iter()
                        .map(|r| {
                            Value::Object(
                                r.to_json()
                                    .into_iter()
                                    .map(|(k, v)| (k.to_owned(), v))
                                    .collect(),
                            )
                        })
                        .collect(),
                ),
            ),
            ("status", Value::String("found".to_owned())),
        ]);
        let mut text = serde_json::to_string_pretty(&doc).map_err(io::Error::from)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        for r in results {
            r.print(out)?;
        }
    }
    out.flush()
}

/// Prints what a search found: the results to `out` as [`write_results`] does, or, when there
/// are none, the line `not_found` to `err` (a failure to write that line is ignored: the
/// caller's exit status says it). Returns whether anything was found.
///
/// # Errors
/// When `out` cannot be written.
pub fn print_outcome(
    results: &[ArtifactRunInfo],
    json: bool,
    not_found: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<bool> {
    if results.is_empty() {
        let _ = writeln!(err, "{not_found}");
        return Ok(false);
    }
    write_results(results, json, out)?;
    Ok(true)
}

/// A Python `repr` of a list of strings, as the reference prints `artifact_group=[...]`.
pub(crate) fn python_list_repr(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            let quote = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut out = String::from(quote);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '\r' => out.push_str("\\r"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        })
        .collect();
    format!("[{}]", quoted.join(", "))
}

#[cfg(test)]
mod tests;
