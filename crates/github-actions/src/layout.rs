//! The layout of a run's outputs as a workflow step reads it: a text table or a JSON document
//! of [`WorkflowOutputRoot::layout`], with the bucket decision.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use storage_location::{StorageLocation, UnsafeKeyError};
use workflow_outputs::{BucketSelection, WorkflowOutputRoot};

/// Why a layout could not be rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// A location would leave the local staging directory (a `..` in a name).
    #[error(transparent)]
    UnsafeKey(#[from] UnsafeKeyError),
    /// The write role of the bucket cannot be named.
    #[error(transparent)]
    Outputs(#[from] workflow_outputs::Error),
    /// The document could not be serialized.
    #[error("Failed to serialize the layout as JSON")]
    Json(#[source] serde_json::Error),
}

/// Where the locations of a layout are shown.
#[derive(Debug, Clone, Copy)]
pub enum LayoutView<'a> {
    /// As `s3://` URIs.
    S3,
    /// As paths below a local staging directory.
    Local(&'a Path),
}

impl LayoutView<'_> {
    fn render(self, location: &StorageLocation) -> Result<String, LayoutError> {
        Ok(match self {
            LayoutView::S3 => location.s3_uri(),
            LayoutView::Local(dir) => location.local_path(dir)?.display().to_string(),
        })
    }
}

/// One `{name:<32} {location}` line per entry.
///
/// # Errors
/// [`LayoutError::UnsafeKey`] when a local path would leave the staging directory.
pub fn layout_text(
    entries: &[(String, StorageLocation)],
    view: LayoutView<'_>,
) -> Result<String, LayoutError> {
    let mut text = String::new();
    for (name, location) in entries {
        let _ = writeln!(text, "{name:<32} {}", view.render(location)?);
    }
    Ok(text)
}

/// The JSON document of a layout (two-space indentation, keys sorted, a final newline):
/// `bucket`, `prefix`, `run_id`, `platform`, `is_pr_from_fork` and `write_access_iam_role`
/// (both `null` without a `selection`), and `locations`: per entry its `relative_path`,
/// `location` (as `view` shows it) and `https_url`.
///
/// # Errors
/// [`LayoutError`]: an unsafe local path, a write role without an account.
pub fn layout_json(
    root: &WorkflowOutputRoot,
    entries: &[(String, StorageLocation)],
    view: LayoutView<'_>,
    selection: Option<&BucketSelection>,
) -> Result<String, LayoutError> {
    let mut locations = serde_json::Map::new();
    for (name, location) in entries {
        locations.insert(
            name.clone(),
            json!({
                "relative_path": location.relative_path(),
                "location": view.render(location)?,
                "https_url": location.https_url(),
            }),
        );
    }
    let iam_role = match selection {
        Some(s) => s.config().write_access_iam_role()?,
        None => None,
    };
    let doc = json!({
        "bucket": root.bucket(),
        "prefix": root.prefix(),
        "run_id": root.run_id(),
        "platform": root.platform().as_str(),
        "is_pr_from_fork": selection.map(BucketSelection::is_pr_from_fork),
        "write_access_iam_role": iam_role,
        "locations": locations,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(LayoutError::Json)?;
    Ok(text + "\n")
}

/// Sets the step outputs `bucket`, `prefix`, `s3_root` and `https_root` of `root`, and
/// appends a `### CI outputs of run …` block linking the root to the job summary, finding the
/// files through `lookup`.
///
/// # Errors
/// The outputs or summary file could not be written.
pub fn write_root_outputs(
    root: &WorkflowOutputRoot,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), crate::WriteError> {
    let root_loc = root.root();
    let outputs = [
        ("bucket", root.bucket().to_owned()),
        ("prefix", root.prefix()),
        ("s3_root", root_loc.s3_uri()),
        ("https_root", root_loc.https_url()),
    ];
    let outputs: Vec<(&str, &str)> = outputs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    crate::set_outputs_with(&outputs, lookup)?;
    crate::append_step_summary_with(
        &format!(
            "### CI outputs of run {}\n\n- bucket: `{}`\n- root: [{}]({}/)",
            root.run_id(),
            root.bucket(),
            root_loc.s3_uri(),
            root_loc.https_url()
        ),
        lookup,
    )?;
    Ok(())
}
