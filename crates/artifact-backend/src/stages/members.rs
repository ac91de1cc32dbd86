//! `artifact_manager list-members`: what a run's archives hold, from their member indexes,
//! without downloading them (archives without one are downloaded whole and read).

use std::io::Write;

use artifacts::member_index::IndexedMember;
use futures::StreamExt as _;

use super::{RunOptions, read_run};
use crate::pipeline::{Lines, TransferError, compile};

/// What `list-members` lists.
#[derive(Clone)]
#[non_exhaustive]
pub struct ListMembersRequest {
    /// The run.
    pub run: RunOptions,
    /// Regexes searched in the archives' file names (all archives when empty).
    pub include: Vec<String>,
    /// JSON on the output instead of lines (`--format json`).
    pub json: bool,
}

impl ListMembersRequest {
    /// Every archive of `run`, as lines.
    pub fn new(run: RunOptions) -> Self {
        ListMembersRequest {
            run,
            include: Vec::new(),
            json: false,
        }
    }
}

/// The members of one archive.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveMembers {
    /// The archive's file name.
    pub archive: String,
    /// Its members, in archive order.
    pub members: Vec<IndexedMember>,
    /// Whether they come from its member index (else the archive was downloaded whole).
    pub indexed: bool,
}

/// Lists the members of the run's archives from their indexes (only each archive's end is
/// read), one line per member (`TYPE SIZE PATH[ -> LINK]`) after a line per archive, or a
/// JSON array with `--format json`. An archive without an index (pushed by another tool, xz)
/// is downloaded whole, verified, and read ([`crate::ArtifactBackend::archive_members`]).
///
/// # Errors
/// As the fetches: the run, its listing, an index that is damaged or does not match its
/// recorded digest.
pub async fn list_members(
    request: &ListMembersRequest,
    out: &mut dyn Write,
) -> Result<Vec<ArchiveMembers>, TransferError> {
    if request.json {
        // The output is the JSON alone.
        let mut sink = Vec::new();
        let found = indexes(request, &Lines::new(&mut sink)).await?;
        let json = serde_json::Value::Array(found.iter().map(archive_json).collect());
        writeln!(out, "{json:#}").map_err(TransferError::Write)?;
        return Ok(found);
    }
    let lines = Lines::new(out);
    let found = indexes(request, &lines).await?;
    for archive in &found {
        let how = if archive.indexed {
            ""
        } else {
            " (no member index: read from the whole archive)"
        };
        lines.line(format!(
            "{}: {} members{how}",
            archive.archive,
            archive.members.len()
        ));
        for m in &archive.members {
            let link = m
                .link
                .as_deref()
                .map(|l| format!(" -> {l}"))
                .unwrap_or_default();
            lines.line(format!(
                "  {:<8} {:>12} {}{link}",
                m.kind.name(),
                m.size,
                m.path
            ));
        }
    }
    match lines.take_error() {
        Some(e) => Err(TransferError::Write(e)),
        None => Ok(found),
    }
}

/// The chosen archives of the run and their members, sorted by name.
async fn indexes(
    request: &ListMembersRequest,
    lines: &Lines<'_>,
) -> Result<Vec<ArchiveMembers>, TransferError> {
    let include = compile(&request.include, "include")?;
    let run_id = request.run.run_id()?;
    let (backend, listed) = read_run(&request.run, &run_id, lines).await?;
    let chosen: Vec<String> = listed
        .into_iter()
        .map(|e| e.file_name)
        .filter(|name| include.is_empty() || include.iter().any(|r| r.is_match(name)))
        .collect();
    let backend = &backend;
    let mut found: Vec<ArchiveMembers> = futures::stream::iter(chosen)
        .map(|archive| async move {
            let (members, indexed) = backend.archive_members(&archive).await?;
            Ok::<_, crate::Error>(ArchiveMembers {
                archive,
                members,
                indexed,
            })
        })
        .buffered(request.run.concurrency.max(1))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    found.sort_by(|a, b| a.archive.cmp(&b.archive));
    Ok(found)
}

fn archive_json(archive: &ArchiveMembers) -> serde_json::Value {
    let members: Vec<serde_json::Value> = archive
        .members
        .iter()
        .map(|m| {
            serde_json::json!({
                "path": m.path,
                "type": m.kind.name(),
                "size": m.size,
                "mode": format!("{:o}", m.mode),
                "link": m.link,
            })
        })
        .collect();
    serde_json::json!({
        "archive": archive.archive,
        "indexed": archive.indexed,
        "members": members,
    })
}
