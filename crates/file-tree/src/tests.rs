use super::*;

#[test]
fn names_the_file_and_chains_the_cause_once() {
    let err = FileError::write("/x/y", std::io::Error::other("disk full"));
    assert_eq!(err.to_string(), "Failed to write `/x/y`");
    let source = std::error::Error::source(&err).expect("a cause");
    assert_eq!(source.to_string(), "disk full");
    assert!(std::error::Error::source(source).is_none());
}
