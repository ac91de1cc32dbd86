#[test]
fn totals_line_names_artifacts_bytes_time_rate_and_retries() {
    let line = super::fetched_totals_line(15, 16, 3 << 20, std::time::Duration::from_secs(2), 1);
    assert_eq!(
        line,
        "Fetched 15 of 16 artifacts (3.0 MiB) in 2.0 s (1.5 MiB/s), 1 retry"
    );
    let line = super::fetched_totals_line(0, 0, 0, std::time::Duration::ZERO, 4);
    assert_eq!(
        line,
        "Fetched 0 of 0 artifacts (0.0 MiB) in 0.0 s (0.0 MiB/s), 4 retries"
    );
}

/// A writer whose every write fails as a closed pipe does.
struct Closed;

impl std::io::Write for Closed {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn lines_keep_the_first_write_error_and_go_on() {
    let mut out = Vec::new();
    let lines = super::Lines::new(&mut out);
    lines.line("one");
    std::io::Write::write_all(&mut lines.writer(), b"two\n").unwrap();
    assert!(lines.take_error().is_none());
    drop(lines);
    assert_eq!(String::from_utf8(out).unwrap(), "one\ntwo\n");

    let mut closed = Closed;
    let lines = super::Lines::new(&mut closed);
    lines.line("lost");
    std::io::Write::write_all(&mut lines.writer(), b"lost too\n").unwrap();
    assert!(lines.try_line("strict").is_err());
    let kept = lines.take_error().unwrap();
    assert_eq!(kept.kind(), std::io::ErrorKind::BrokenPipe);
    assert!(lines.take_error().is_none());
}

#[test]
fn errors_say_whether_they_are_usage_or_already_reported() {
    use super::TransferError;
    assert!(TransferError::Usage("no run id".to_owned()).is_usage());
    assert!(!TransferError::Usage("no run id".to_owned()).is_reported());
    assert!(TransferError::Reported("3 failed".to_owned()).is_reported());
    assert!(!TransferError::Reported("3 failed".to_owned()).is_usage());
    let stage = TransferError::from(build_topology::CheckoutError::StageNotFound("x".to_owned()));
    assert!(stage.is_reported());
    assert_eq!(stage.to_string(), "Stage 'x' not found");
    assert!(!TransferError::Failed(vec!["a: b".to_owned()]).is_reported());
    assert_eq!(
        TransferError::Failed(vec!["a: gone".to_owned(), "b: bad".to_owned()]).to_string(),
        "2 of the selected artifacts could not be fetched:\n  a: gone\n  b: bad"
    );
}
