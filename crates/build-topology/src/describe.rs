//! The descriptions `artifact_manager info` and `list-stages` print (spec §4.9), and the lines
//! that name an unknown stage.

use std::collections::BTreeSet;
use std::io::Write;

use crate::{BuildTopology, CheckoutError};

/// Writes the unknown-stage lines (`ERROR: Stage '…' not found` and the available stages)
/// and returns the failure, which [`CheckoutError::is_reported`]. A closed output does not
/// change the failure.
pub fn unknown_stage(topology: &BuildTopology, stage: &str, out: &mut dyn Write) -> CheckoutError {
    let _ = writeln!(out, "ERROR: Stage '{stage}' not found").and_then(|()| {
        writeln!(
            out,
            "Available stages: {}",
            topology.stage_names().collect::<Vec<_>>().join(", ")
        )
    });
    CheckoutError::StageNotFound(stage.to_owned())
}

/// `info --stage S [--amdgpu-families F]`: the stage, its inbound and produced artifacts, and
/// the target families when given (only echoed).
pub fn write_stage_info(
    topology: &BuildTopology,
    stage: &str,
    families: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), CheckoutError> {
    let Ok(found) = topology.stage(stage) else {
        return Err(unknown_stage(topology, stage, out));
    };
    let w = CheckoutError::Write;
    writeln!(out, "Stage: {}", found.name).map_err(w)?;
    writeln!(out, "Type: {}", found.build_type.as_str()).map_err(w)?;
    writeln!(out, "Description: {}", found.description).map_err(w)?;
    writeln!(out, "Artifact groups: {}", found.artifact_groups.join(", ")).map_err(w)?;
    let mut list = |title: &str, names: BTreeSet<&str>| -> std::io::Result<()> {
        writeln!(out)?;
        writeln!(out, "{title} artifacts ({}):", names.len())?;
        for name in names {
            match topology.artifact(name) {
                Some(a) => writeln!(out, "  - {name} ({})", a.artifact_type.as_str())?,
                None => writeln!(out, "  - {name}")?,
            }
        }
        Ok(())
    };
    list("Inbound", topology.inbound_artifacts(stage)?).map_err(w)?;
    list("Produced", topology.produced_artifacts(stage)?).map_err(w)?;
    if let Some(families) = families.filter(|f| !f.is_empty()) {
        writeln!(out).map_err(w)?;
        let mut all = vec![artifacts::GENERIC_TARGET_FAMILY];
        all.extend(families.split(';'));
        writeln!(out, "Target families: {}", all.join(", ")).map_err(w)?;
    }
    Ok(())
}

/// `list-stages`: every stage in file order with its counts.
pub fn write_stage_list(
    topology: &BuildTopology,
    out: &mut dyn Write,
) -> Result<(), CheckoutError> {
    let w = CheckoutError::Write;
    writeln!(out, "Build stages:").map_err(w)?;
    for stage in topology.stages() {
        writeln!(out).map_err(w)?;
        writeln!(out, "  {} ({})", stage.name, stage.build_type.as_str()).map_err(w)?;
        writeln!(out, "    {}", stage.description).map_err(w)?;
        writeln!(out, "    Groups: {}", stage.artifact_groups.join(", ")).map_err(w)?;
        writeln!(
            out,
            "    Inbound: {} artifacts",
            topology.inbound_artifacts(&stage.name)?.len()
        )
        .map_err(w)?;
        writeln!(
            out,
            "    Produces: {} artifacts",
            topology.produced_artifacts(&stage.name)?.len()
        )
        .map_err(w)?;
    }
    Ok(())
}
