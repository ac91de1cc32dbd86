use github_actions::{
    OUTPUTS_NOT_SET_WARNING, SummaryOutcome, append_step_summary_with, format_outputs,
    outputs_json, report_outputs, set_outputs_with, str2bool, write_root_outputs,
};
use workflow_outputs::{Platform, WorkflowOutputRoot};

use crate::env;

#[test]
fn step_summary_appends_and_mirrors() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    let runner_temp = dir.path().join("runner");
    fs_err::create_dir(&runner_temp).unwrap();
    let lookup = env(&[
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ("RUNNER_TEMP", runner_temp.to_str().unwrap()),
    ]);
    append_step_summary_with("### Section A", &lookup).unwrap();
    let outcome = append_step_summary_with("### Section B", &lookup).unwrap();
    assert_eq!(
        outcome,
        SummaryOutcome::Written {
            mirror: Some(runner_temp.join("job_summary.md"))
        }
    );
    assert_eq!(
        fs_err::read_to_string(&summary).unwrap(),
        "### Section A\n\n### Section B\n\n"
    );
    assert_eq!(
        fs_err::read_to_string(runner_temp.join("job_summary.md")).unwrap(),
        "### Section A\n\n### Section B\n\n"
    );
}

#[test]
fn step_summary_without_configuration_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lookup = env(&[("RUNNER_TEMP", dir.path().to_str().unwrap())]);
    assert_eq!(
        append_step_summary_with("x", &lookup).unwrap(),
        SummaryOutcome::NotConfigured
    );
    assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 0);
    let summary = dir.path().join("s.md");
    let lookup = env(&[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())]);
    assert_eq!(
        append_step_summary_with("x", &lookup).unwrap(),
        SummaryOutcome::Written { mirror: None }
    );
}

#[test]
fn step_summary_write_error_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("missing-dir").join("s.md");
    let lookup = env(&[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())]);
    let err = append_step_summary_with("x", &lookup).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("Failed to append to `{}`", summary.display())
    );
}

#[test]
fn outputs_single_and_multiline() {
    assert_eq!(format_outputs(&[("a", "1"), ("b", "")]), "a=1\nb=\n");
    assert_eq!(
        format_outputs(&[("m", "x\ny")]),
        "m<<EOF_mag1c\nx\ny\nEOF_mag1c\n"
    );
    // A value containing the delimiter gets another one.
    assert_eq!(
        format_outputs(&[("m", "x\nEOF_mag1c\ny")]),
        "m<<EOF_mag1c_1\nx\nEOF_mag1c\ny\nEOF_mag1c_1\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out");
    let lookup = env(&[("GITHUB_OUTPUT", file.to_str().unwrap())]);
    assert!(set_outputs_with(&[("k", "v")], &lookup).unwrap());
    assert!(set_outputs_with(&[("j", "w")], &lookup).unwrap());
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "k=v\nj=w\n");
    assert!(!set_outputs_with(&[("k", "v")], &env(&[])).unwrap());
}

#[test]
fn str2bool_words() {
    for t in [
        "1", "true", "T", " yes ", "Y", "on", "enable", "ENABLED", "found",
    ] {
        assert!(str2bool(t).unwrap(), "{t}");
    }
    for f in [
        "",
        "0",
        "false",
        "F",
        "no",
        "n",
        "off",
        "disable",
        "disabled",
        "notfound",
        "None",
        "null",
        "nil",
        "undefined",
        "N/A",
    ] {
        assert!(!str2bool(f).unwrap(), "{f}");
    }
    assert_eq!(
        str2bool(" Maybe ").unwrap_err().to_string(),
        "Invalid string value for boolean conversion: `maybe`"
    );
}

#[test]
fn outputs_json_is_the_reference_block() {
    assert_eq!(
        outputs_json(&[("bucket", "b"), ("q", "say \"hi\"")]),
        "{\n  \"bucket\": \"b\",\n  \"q\": \"say \\\"hi\\\"\"\n}"
    );
}

#[test]
fn report_outputs_transcript_and_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out");
    let lookup = env(&[("GITHUB_OUTPUT", file.to_str().unwrap())]);
    let (mut out, mut warn) = (Vec::new(), Vec::new());
    report_outputs(&[("k", "v")], &lookup, &mut out, Some(&mut warn)).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Setting github output:\n{\n  \"k\": \"v\"\n}\nOUTPUT k=v\n"
    );
    assert!(warn.is_empty());
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "k=v\n");

    // Not configured: the warning goes to `warn`, or after the transcript when there is none.
    let (mut out, mut warn) = (Vec::new(), Vec::new());
    report_outputs(&[("k", "v")], &env(&[]), &mut out, Some(&mut warn)).unwrap();
    assert_eq!(
        String::from_utf8(warn).unwrap(),
        format!("{OUTPUTS_NOT_SET_WARNING}\n")
    );
    let mut out = Vec::new();
    report_outputs(&[("k", "v")], &env(&[]), &mut out, None).unwrap();
    assert!(
        String::from_utf8(out)
            .unwrap()
            .ends_with(&format!("}}\n{OUTPUTS_NOT_SET_WARNING}\n"))
    );
}

#[test]
fn root_outputs_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let (outputs, summary) = (dir.path().join("out"), dir.path().join("summary.md"));
    let lookup = env(&[
        ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ]);
    let root = WorkflowOutputRoot::new(
        "bkt".to_owned(),
        workflow_outputs::ExternalRepo::NONE,
        "42",
        Platform::Linux,
    )
    .unwrap();
    write_root_outputs(&root, &lookup).unwrap();
    let root_loc = root.root();
    assert_eq!(
        fs_err::read_to_string(&outputs).unwrap(),
        format!(
            "bucket=bkt\nprefix={}\ns3_root={}\nhttps_root={}\n",
            root.prefix(),
            root_loc.s3_uri(),
            root_loc.https_url()
        )
    );
    let text = fs_err::read_to_string(&summary).unwrap();
    assert!(text.starts_with("### CI outputs of run 42\n\n- bucket: `bkt`\n- root: ["));
}

#[test]
fn local_layout_is_written_with_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("out");
    let lookup = env(&[("GITHUB_OUTPUT", outputs.to_str().unwrap())]);
    let request = github_actions::LayoutRequest {
        run: github_actions::RunRequest {
            run_id: "42".to_owned(),
            platform: Platform::Linux,
            repository: None,
            release_type: None,
            lookup_workflow_run: false,
        },
        local_staging_dir: Some(dir.path()),
        artifact_group: "generic",
        stage: None,
        json: false,
    };
    let (mut log, mut out) = (Vec::new(), Vec::new());
    github_actions::write_layout(&request, &lookup, &mut log, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(&dir.path().display().to_string()), "{text}");
    assert!(log.is_empty());
    assert!(
        fs_err::read_to_string(&outputs)
            .unwrap()
            .starts_with("bucket=local\n")
    );
}

#[test]
fn secret_values_of_the_github_environment() {
    let lookup = env(&[
        ("GH_TOKEN", "ghp_token"),
        ("GITHUB_API_URL", "https://u:pw@ghe.example/api/v3"),
        ("GITHUB_RUN_ID", "42"),
    ]);
    let secrets = github_actions::secret_values(&lookup);
    assert_eq!(secrets[0], "ghp_token");
    assert!(secrets.iter().any(|s| s == "pw"), "{secrets:?}");
    assert!(!secrets.iter().any(|s| s == "42"), "{secrets:?}");
}

#[test]
fn captured_answers_only_its_variables() {
    let lookup = env(&[("GITHUB_REPOSITORY", "ROCm/TheRock"), ("OTHER", "x")]);
    let owned = github_actions::captured(&lookup, &github_actions::CURRENT_RUN_ROOT_VARS);
    assert_eq!(owned("GITHUB_REPOSITORY").as_deref(), Some("ROCm/TheRock"));
    assert_eq!(owned("OTHER"), None);
    assert_eq!(owned("RELEASE_TYPE"), None);
}
