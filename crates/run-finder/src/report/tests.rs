//! The output of results: text blocks, the JSON document, the Python `repr` of groups.

use super::{ArtifactRunInfo, print_outcome, python_list_repr, write_results};

#[test]
fn python_repr_of_groups() {
    let list =
        |v: &[&str]| python_list_repr(&v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    assert_eq!(
        list(&["gfx94X-dcgpu", "gfx120X-all"]),
        "['gfx94X-dcgpu', 'gfx120X-all']"
    );
    assert_eq!(list(&["it's"]), r#"["it's"]"#);
    assert_eq!(list(&[]), "[]");
}

#[test]
fn result_fields() {
    let info = ArtifactRunInfo {
        git_commit_sha: "abc".into(),
        github_repository_name: "ROCm/TheRock".into(),
        external_repo: "ROCm-TheRock/".into(),
        platform: "linux".into(),
        artifact_group: "gfx94X-dcgpu".into(),
        workflow_file_name: "ci.yml".into(),
        workflow_run_id: "7".into(),
        workflow_run_status: "completed".into(),
        workflow_run_conclusion: None,
        workflow_run_html_url: String::new(),
        s3_bucket: "therock-ci-artifacts-external".into(),
        amdgpu_targets: vec![],
        required_artifact_patterns: vec![],
        artifact_filenames: vec!["a_b_generic.tar.zst".into()],
    };
    assert_eq!(
        info.s3_uri(),
        "s3://therock-ci-artifacts-external/ROCm-TheRock/7-linux/"
    );
    assert_eq!(
        info.s3_index_url(),
        "https://therock-ci-artifacts-external.s3.amazonaws.com/ROCm-TheRock/7-linux/index.html"
    );
    let json = info.to_json();
    assert_eq!(json.len(), 19);
    assert_eq!(json["workflow_run_conclusion"], serde_json::Value::Null);
    let mut text = Vec::new();
    info.print(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("  Workflow run status: completed\n"),
        "{text}"
    );
    assert!(!text.contains("AMDGPU targets"), "{text}");
    assert!(
        text.ends_with("  Artifacts:\n    a_b_generic.tar.zst\n\n"),
        "{text}"
    );
}

#[test]
fn results_document_and_blocks() {
    let info = |group: &str| ArtifactRunInfo {
        git_commit_sha: "abc".into(),
        github_repository_name: "ROCm/TheRock".into(),
        external_repo: String::new(),
        platform: "linux".into(),
        artifact_group: group.into(),
        workflow_file_name: "ci.yml".into(),
        workflow_run_id: "7".into(),
        workflow_run_status: "completed".into(),
        workflow_run_conclusion: Some("success".into()),
        workflow_run_html_url: "https://github.com/ROCm/TheRock/actions/runs/7".into(),
        s3_bucket: "therock-ci-artifacts".into(),
        amdgpu_targets: vec!["gfx942".into()],
        required_artifact_patterns: vec![],
        artifact_filenames: vec![],
    };
    let results = [info("gfx94X-dcgpu"), info("generic")];
    let mut out = Vec::new();
    write_results(&results, true, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("{\n  \"results\": [\n    {\n      \"amdgpu_targets\": [\n        \"gfx942\"\n      ],\n"), "{text}");
    assert!(
        text.ends_with("\n  ],\n  \"status\": \"found\"\n}\n"),
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["results"][1]["artifact_group"], "generic");
    assert_eq!(doc["results"][0]["workflow_run_conclusion"], "success");
    assert_eq!(doc["results"][0]["s3_path"], "7-linux/");

    let mut out = Vec::new();
    write_results(&results, false, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.matches("Artifact info:\n").count(), 2, "{text}");
    assert!(text.contains("  AMDGPU targets:      gfx942\n"), "{text}");
    assert!(
        text.contains("  Workflow run status: completed (success)\n"),
        "{text}"
    );
    assert!(text.contains("  Artifact count:      0\n\n"), "{text}");
    assert!(!text.contains("  Artifacts:"), "{text}");

    // The outcome: the results on `out`, or the not-found line on `err`.
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert!(print_outcome(&results, false, "none", &mut out, &mut err).unwrap());
    assert_eq!(String::from_utf8(out).unwrap(), text);
    assert!(err.is_empty());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert!(!print_outcome(&[], true, "none", &mut out, &mut err).unwrap());
    assert!(out.is_empty());
    assert_eq!(err, b"none\n");
}
