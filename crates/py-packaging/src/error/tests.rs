use super::Error;
use file_tree::FileError;

/// Every message of `err`'s chain, outermost first.
fn chain(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
    std::iter::successors(Some(err), |e| e.source())
        .map(ToString::to_string)
        .collect()
}

#[test]
fn each_cause_is_printed_once() {
    let cause = || std::io::Error::other("disk full");
    let file = Error::from(FileError::write("/w/x.whl", cause()));
    assert_eq!(chain(&file), ["Failed to write `/w/x.whl`", "disk full"]);
    let spawn = Error::Spawn {
        program: "python3".into(),
        source: cause(),
    };
    assert_eq!(chain(&spawn), ["Failed to run `python3`", "disk full"]);
    let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
    let parse = Error::Json {
        file: "version.json".into(),
        source: json,
    };
    let messages = chain(&parse);
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0], "Invalid JSON in `version.json`");
    let shared = Error::Stub(std::sync::Arc::new(file));
    assert_eq!(chain(&shared), ["Failed to write `/w/x.whl`", "disk full"]);
    for (i, m) in chain(&shared).iter().enumerate().skip(1) {
        assert!(!chain(&shared)[i - 1].contains(m.as_str()), "{m} repeated");
    }
}
