use super::*;

/// The names in `dir`, sorted (for the tests of every module).
pub(crate) fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn names_the_file_and_chains_the_cause_once() {
    let err = FileError::write("/x/y", std::io::Error::other("disk full"));
    assert_eq!(err.to_string(), "Failed to write `/x/y`");
    let source = std::error::Error::source(&err).expect("a cause");
    assert_eq!(source.to_string(), "disk full");
    assert!(std::error::Error::source(source).is_none());
}
