use super::*;

fn head(size: u64, etag: &str, sha: Option<&str>) -> ObjectHead {
    ObjectHead {
        size,
        etag: etag.to_owned(),
        sha256: sha.map(str::to_owned),
        content_type: None,
        metadata: std::collections::HashMap::new(),
    }
}

#[test]
fn content_comparison() {
    let a = head(3, "\"e1\"", Some("aa"));
    assert_eq!(same_content(&a, &head(3, "\"e2\"", Some("AA"))), Some(true));
    assert_eq!(
        same_content(&a, &head(3, "\"e1\"", Some("bb"))),
        Some(false)
    );
    assert_eq!(
        same_content(&a, &head(4, "\"e1\"", Some("aa"))),
        Some(false)
    );
    assert_eq!(same_content(&a, &head(3, "\"e1\"", None)), Some(true));
    assert_eq!(same_content(&a, &head(3, "\"e2\"", None)), None);
    assert_eq!(same_content(&head(3, "", None), &head(3, "", None)), None);
}

#[test]
fn phase_lines() {
    let phase = Phase {
        kind: PhaseKind::Native("deb"),
        source: StorageLocation::new("src", "1-linux/packages/deb"),
        destination: StorageLocation::new("dst", "v5/rocm/core/packages/deb/20260822-1"),
        copies: Vec::new(),
    };
    let mut out = Vec::new();
    phase.write_start(&mut out).unwrap();
    phase.write_done((2, 0), &mut out).unwrap();
    phase.write_done((1, 3), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Native deb packages: s3://src/1-linux/packages/deb -> s3://dst/v5/rocm/core/packages/deb/20260822-1\nCopied 2 files for deb packages\nCopied 1 files for deb packages (3 more already in place with the same content)\n"
    );
    assert!(phase.replaces_different());
}

#[test]
fn python_mode_of_the_flags() {
    assert_eq!(
        PythonMode::of(Some(PythonIndex::WhlNext), true),
        PythonMode::Structured(PythonIndex::WhlNext)
    );
    assert_eq!(PythonMode::of(None, true), PythonMode::LegacyKpackSplit);
    assert_eq!(PythonMode::of(None, false), PythonMode::LegacyPerFamily);
}
