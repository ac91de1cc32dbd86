//! The layout of a run's outputs as a workflow step reads it: a text table or a JSON document
//! of [`WorkflowOutputRoot::layout`], with the bucket decision.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use storage_location::{StorageLocation, UnsafeKeyError};
use workflow_outputs::{BucketSelection, WorkflowOutputRoot};

use crate::{RunRequest, RunRootError, resolve_run_root};

/// Why a layout could not be rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// A location would leave the local staging directory (a `..` in a name).
    #[error(transparent)]
    UnsafeKey(#[from] UnsafeKeyError),
    /// The local root cannot be named (a bad run id) or the write role of the bucket cannot.
    #[error(transparent)]
    Outputs(#[from] workflow_outputs::Error),
    /// The run's output root could not be resolved.
    #[error(transparent)]
    RunRoot(#[from] RunRootError),
    /// The layout could not be written.
    #[error("Failed to write the layout to stdout")]
    Write(#[source] std::io::Error),
    /// The step outputs or summary could not be written.
    #[error(transparent)]
    Step(#[from] crate::WriteError),
    /// The document could not be serialized.
    #[error("Failed to serialize the layout as JSON")]
    Json(#[source] serde_json::Error),
}

impl LayoutError {
    /// Whether what the caller gave is at fault (exit 2): a run id or URL setting that is no
    /// valid value.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::RunRoot(e) if e.is_usage())
    }
}

/// What `ci_layout` shows: a run's layout in S3 (resolved as [`resolve_run_root`] does) or in
/// a local staging directory (bucket `local`).
#[derive(Debug, Clone)]
pub struct LayoutRequest<'a> {
    /// The run.
    pub run: RunRequest,
    /// The local staging directory, instead of S3.
    pub local_staging_dir: Option<&'a Path>,
    /// The artifact group whose logs and manifests are shown.
    pub artifact_group: &'a str,
    /// A multi-arch stage and GPU family whose log directory is shown too.
    pub stage: Option<(&'a str, &'a str)>,
    /// The JSON document ([`layout_json`]) instead of the text table ([`layout_text`]).
    pub json: bool,
}

/// Writes the layout of `request` to `out` (the bucket decision to `log`), then sets the root's
/// step outputs and summary ([`write_root_outputs`]).
///
/// # Errors
/// [`LayoutError`]: the run root, the layout, `out`, and the step files.
pub fn write_layout(
    request: &LayoutRequest<'_>,
    lookup: &dyn Fn(&str) -> Option<String>,
    log: &mut dyn std::io::Write,
    out: &mut dyn std::io::Write,
) -> Result<(), LayoutError> {
    let run = &request.run;
    let (root, selection) = if request.local_staging_dir.is_some() {
        let root = WorkflowOutputRoot::for_local(Some(&run.run_id), Some(run.platform), None)?;
        (root, None)
    } else {
        let (root, selection) = resolve_run_root(run, lookup, log)?;
        (root, Some(selection))
    };
    let entries = root.layout(request.artifact_group, request.stage);
    let view = match request.local_staging_dir {
        Some(dir) => LayoutView::Local(dir),
        None => LayoutView::S3,
    };
    let text = if request.json {
        layout_json(&root, &entries, view, selection.as_ref())?
    } else {
        layout_text(&entries, view)?
    };
    out.write_all(text.as_bytes()).map_err(LayoutError::Write)?;
    write_root_outputs(&root, lookup)?;
    Ok(())
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
