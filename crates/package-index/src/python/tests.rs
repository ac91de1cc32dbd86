use super::*;
use storage_location::StorageLocation;
use workflow_outputs::Platform;

#[test]
fn summaries() {
    let loc = StorageLocation::new("b", "1-linux/python");
    assert_eq!(
        summary(&loc, &Layout::Single, Platform::Linux),
        "[ROCm Python packages](https://b.s3.amazonaws.com/1-linux/python/index.html)\n```bash\npip install rocm[libraries,devel] --pre \\\n    --find-links=https://b.s3.amazonaws.com/1-linux/python/index.html\n```\n"
    );
    let per = summary(
        &loc,
        &Layout::PerFamily(vec!["f1".into(), "f2".into()]),
        Platform::Windows,
    );
    assert_eq!(
        per,
        "ROCm Python packages (multi-arch build)\n\nPer-family indexes:\n- [f1](https://b.s3.amazonaws.com/1-linux/python/f1/index.html)\n- [f2](https://b.s3.amazonaws.com/1-linux/python/f2/index.html)\n\n```bash\npip install rocm[libraries,devel] --pre ^\n    --find-links=https://b.s3.amazonaws.com/1-linux/python/f1/index.html\n```\n\n```bash\npip install rocm[libraries,devel] --pre ^\n    --find-links=https://b.s3.amazonaws.com/1-linux/python/f2/index.html\n```\n"
    );
    assert!(summary(&loc, &Layout::Flat, Platform::Linux).starts_with(
        "[ROCm Python packages (kpack-split)](https://b.s3.amazonaws.com/1-linux/python/index.html)\nReplace `<YOUR_TARGET>`"
    ));
}

#[test]
fn step_outputs_per_layout() {
    let loc = StorageLocation::new("b", "1-linux/python");
    let single = step_outputs(&loc, &Layout::Single);
    assert_eq!(
        single.line,
        "[INFO] Single-arch index URL: https://b.s3.amazonaws.com/1-linux/python/index.html"
    );
    assert_eq!(
        single.outputs,
        [
            (
                "package_find_links_url",
                "https://b.s3.amazonaws.com/1-linux/python/index.html".to_owned()
            ),
            ("kpack_split", "false".to_owned())
        ]
    );
    assert_eq!(step_outputs(&loc, &Layout::Flat).outputs[1].1, "true");
    let per = step_outputs(&loc, &Layout::PerFamily(vec!["f".into()]));
    assert_eq!(
        per.outputs[0].1,
        "https://b.s3.amazonaws.com/1-linux/python"
    );
    assert_eq!(per.outputs[1].1, "false");
}

#[test]
fn set_outputs_transcripts() {
    let loc = StorageLocation::new("b", "1-linux/python");
    let url = "https://b.s3.amazonaws.com/1-linux/python/index.html";
    let mut out = Vec::new();
    set_outputs(
        &loc,
        &Layout::Single,
        Platform::Linux,
        true,
        &|_| None,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with(&format!(
        "[INFO] Single-arch index URL: {url}\nSet github actions output\n-------------------------\n[DRY RUN] Would set github output:\n"
    )));
    assert!(text.contains("Write github actions build summary\n"));
    assert!(text.contains("[DRY RUN] Would write the job summary:\n[ROCm Python packages]"));

    // Not configured: both warnings, nothing written.
    let mut out = Vec::new();
    set_outputs(
        &loc,
        &Layout::Flat,
        Platform::Linux,
        false,
        &|_| None,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(&format!(
        "Setting github output:\n{}\n{}\n",
        github_actions::outputs_json(&[("package_find_links_url", url), ("kpack_split", "true")]),
        github_actions::OUTPUTS_NOT_SET_WARNING
    )));
    assert!(text.contains("Writing job summary:\n[ROCm Python packages (kpack-split)]"));
    assert!(
        text.ends_with("  Warning: GITHUB_STEP_SUMMARY env var not set, can't write job summary\n")
    );

    // Configured: the files are written and the outputs echoed.
    let dir = tempfile::tempdir().unwrap();
    let (outputs, summary_file) = (dir.path().join("o"), dir.path().join("s"));
    let (o, s) = (outputs.clone(), summary_file.clone());
    let lookup = move |var: &str| match var {
        "GITHUB_OUTPUT" => Some(o.to_string_lossy().into_owned()),
        "GITHUB_STEP_SUMMARY" => Some(s.to_string_lossy().into_owned()),
        _ => None,
    };
    let mut out = Vec::new();
    set_outputs(
        &loc,
        &Layout::Single,
        Platform::Linux,
        false,
        &lookup,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(&format!(
        "OUTPUT package_find_links_url={url}\nOUTPUT kpack_split=false\n"
    )));
    assert_eq!(
        fs_err::read_to_string(&outputs).unwrap(),
        format!("package_find_links_url={url}\nkpack_split=false\n")
    );
    assert!(
        fs_err::read_to_string(&summary_file)
            .unwrap()
            .starts_with("[ROCm Python packages]")
    );
}
