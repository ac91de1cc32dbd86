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
