use std::path::Path;

use github_actions::{EventError, is_pr_from_fork, is_pr_from_fork_with};

use crate::env;

fn payload(dir: &Path, name: &str, json: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    fs_err::write(&path, json).unwrap();
    path
}

#[test]
fn fork_detection_from_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "pull_request",
            r#"{"pull_request":{"head":{"repo":{"fork":true}}}}"#,
            true,
        ),
        (
            "pull_request",
            r#"{"pull_request":{"head":{"repo":{"fork":false}}}}"#,
            false,
        ),
        (
            "pull_request_target",
            r#"{"pull_request":{"head":{"repo":{"fork":true}}}}"#,
            true,
        ),
        // A deleted fork: head.repo is null.
        (
            "pull_request",
            r#"{"pull_request":{"head":{"repo":null}}}"#,
            true,
        ),
        ("pull_request", r#"{"pull_request":{"head":{}}}"#, true),
        (
            "pull_request",
            r#"{"pull_request":{"head":{"repo":{}}}}"#,
            false,
        ),
        ("pull_request", r#"{"action":"opened"}"#, false),
        (
            "push",
            r#"{"pull_request":{"head":{"repo":{"fork":true}}}}"#,
            false,
        ),
        ("workflow_dispatch", r"not json at all", false),
    ];
    for (i, (event, json, fork)) in cases.iter().enumerate() {
        let path = payload(dir.path(), &format!("{i}.json"), json);
        assert_eq!(
            is_pr_from_fork(Some(event), Some(&path)).unwrap(),
            *fork,
            "{event} {json}"
        );
    }
    // `fork` counts by its Python truthiness, as in the reference's `bool(...)`.
    let truthiness = [
        ("\"true\"", true),
        ("\"false\"", true),
        ("1", true),
        ("[0]", true),
        ("\"\"", false),
        ("0", false),
        ("null", false),
    ];
    for (value, fork) in truthiness {
        let json = format!(r#"{{"pull_request":{{"head":{{"repo":{{"fork":{value}}}}}}}}}"#);
        let path = payload(dir.path(), "truthiness.json", &json);
        assert_eq!(
            is_pr_from_fork(Some("pull_request"), Some(&path)).unwrap(),
            fork,
            "{json}"
        );
    }
    assert!(!is_pr_from_fork(None, None).unwrap());
    assert!(!is_pr_from_fork(Some("pull_request"), None).unwrap());
    // An empty path is no path.
    let lookup = env(&[
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", ""),
    ]);
    assert!(!is_pr_from_fork_with(&lookup).unwrap());
}

#[test]
fn bad_payloads_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let err = is_pr_from_fork(Some("pull_request"), Some(&missing)).unwrap_err();
    assert!(matches!(err, EventError::Missing(_)));
    assert_eq!(
        err.to_string(),
        format!(
            "GITHUB_EVENT_PATH is set to `{}` but no such file exists",
            missing.display()
        )
    );

    let bad = payload(dir.path(), "bad.json", "{");
    let err = is_pr_from_fork(Some("pull_request"), Some(&bad)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("The event payload `{}` is not valid JSON", bad.display())
    );

    let list = payload(dir.path(), "list.json", "[1, 2]");
    let err = is_pr_from_fork(Some("pull_request"), Some(&list)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "The event payload `{}` is not a JSON object",
            list.display()
        )
    );

    // A directory cannot be read as a file.
    let err = is_pr_from_fork(Some("pull_request"), Some(dir.path())).unwrap_err();
    assert!(matches!(err, EventError::Read { .. }), "{err:?}");
    assert!(err.to_string().contains(&dir.path().display().to_string()));
}
