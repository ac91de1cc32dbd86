//! `artifact_manager info` and `list-stages` (spec §4.9).

use build_topology::BuildTopology;

use super::{Checkout, Lines, unknown_stage};

/// `info --stage S [--amdgpu-families F]`: the stage, its inbound and produced artifacts.
pub fn info(
    checkout: &Checkout,
    stage: &str,
    families: Option<&str>,
    lines: &Lines,
) -> anyhow::Result<()> {
    let topology = checkout.load_topology()?;
    let Ok(found) = topology.stage(stage) else {
        return Err(unknown_stage(&topology, stage, lines));
    };
    lines.line(format!("Stage: {}", found.name));
    lines.line(format!("Type: {}", found.build_type.as_str()));
    lines.line(format!("Description: {}", found.description));
    lines.line(format!(
        "Artifact groups: {}",
        found.artifact_groups.join(", ")
    ));
    let list = |title: &str, names: std::collections::BTreeSet<&str>| {
        lines.line("");
        lines.line(format!("{title} artifacts ({}):", names.len()));
        for name in names {
            match topology.artifact(name) {
                Some(a) => lines.line(format!("  - {name} ({})", a.artifact_type.as_str())),
                None => lines.line(format!("  - {name}")),
            }
        }
    };
    list("Inbound", topology.inbound_artifacts(stage)?);
    list("Produced", topology.produced_artifacts(stage)?);
    if let Some(families) = families.filter(|f| !f.is_empty()) {
        lines.line("");
        let mut all = vec![artifacts::GENERIC_TARGET_FAMILY];
        all.extend(families.split(';'));
        lines.line(format!("Target families: {}", all.join(", ")));
    }
    Ok(())
}

/// `list-stages`: every stage in file order with its counts.
pub fn list_stages(checkout: &Checkout, lines: &Lines) -> anyhow::Result<()> {
    let topology: BuildTopology = checkout.load_topology()?;
    lines.line("Build stages:");
    for stage in topology.stages() {
        lines.line("");
        lines.line(format!("  {} ({})", stage.name, stage.build_type.as_str()));
        lines.line(format!("    {}", stage.description));
        lines.line(format!("    Groups: {}", stage.artifact_groups.join(", ")));
        lines.line(format!(
            "    Inbound: {} artifacts",
            topology.inbound_artifacts(&stage.name)?.len()
        ));
        lines.line(format!(
            "    Produces: {} artifacts",
            topology.produced_artifacts(&stage.name)?.len()
        ));
    }
    Ok(())
}
