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
