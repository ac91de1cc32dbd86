use super::*;

const MB: u64 = 1_000_000;

/// Feeds `speed` with `rate` bytes per second from `from` for `secs`, one update per 100 ms;
/// returns the time and the bytes done at the end.
fn feed(speed: &mut Speed, from: (Instant, u64), rate: u64, secs: u64) -> (Instant, u64) {
    let (mut now, mut done) = from;
    for _ in 0..secs * 10 {
        now += Duration::from_millis(100);
        done += rate / 10;
        speed.record(done, now);
    }
    (now, done)
}

#[test]
fn rate_counts_from_the_first_byte_not_from_the_bar() {
    let start = Instant::now();
    let mut speed = Speed::new(Shown::Rate);
    // Three seconds of listing and requests before any byte, as the overall bar sees them.
    let mut now = start;
    for _ in 0..30 {
        now += Duration::from_millis(100);
        speed.record(0, now);
    }
    let (now, done) = feed(&mut speed, (now, 0), 10 * MB, 1);
    let rate = speed.per_sec(now).unwrap();
    assert!((rate - 10e6).abs() < 0.5e6, "{rate}");
    // 40 MB left at 10 MB/s.
    let left = speed.time_left(done, 50 * MB, now).unwrap();
    assert!((left.as_secs_f64() - 4.0).abs() < 0.3, "{left:?}");
}

#[test]
fn nothing_is_shown_until_the_bytes_settle() {
    let start = Instant::now();
    let mut speed = Speed::new(Shown::Rate);
    speed.record(0, start);
    assert_eq!(speed.per_sec(start + Duration::from_secs(2)), None);
    let (now, done) = feed(&mut speed, (start, 0), 10 * MB, 0);
    assert_eq!(speed.per_sec(now), None);
    speed.record(done + MB, now + Duration::from_millis(300));
    assert_eq!(speed.per_sec(now + Duration::from_millis(300)), None);
    assert_eq!(
        speed.time_left(MB, 10 * MB, now + Duration::from_millis(300)),
        None
    );
    assert!(speed.per_sec(now + SETTLE).is_some());
}

#[test]
fn rate_follows_a_change_of_speed_and_falls_when_bytes_stop() {
    let start = Instant::now();
    let mut speed = Speed::new(Shown::Rate);
    speed.record(0, start);
    let at = feed(&mut speed, (start, 0), MB, 20);
    let at = feed(&mut speed, at, 10 * MB, 6);
    let rate = speed.per_sec(at.0).unwrap();
    assert!(rate > 9.5e6, "{rate}");
    // A stall: the rate goes to zero over the window and the time left is unknown.
    let later = at.0 + WINDOW + Duration::from_secs(1);
    speed.record(at.1, later);
    assert_eq!(speed.per_sec(later), Some(0.0));
    assert_eq!(speed.time_left(at.1, at.1 + MB, later), None);
    // The samples kept stay bounded by the window.
    assert!(speed.samples.len() <= 2 + (WINDOW.as_millis() / 100) as usize);
}

#[test]
fn a_restart_from_zero_starts_the_measure_again() {
    let start = Instant::now();
    let mut speed = Speed::new(Shown::Rate);
    speed.record(0, start);
    let at = feed(&mut speed, (start, 0), 10 * MB, 3);
    speed.record(0, at.0);
    assert_eq!(speed.per_sec(at.0 + Duration::from_secs(1)), None);
}

#[test]
fn short_durations_read_at_a_glance() {
    assert_eq!(short_duration(Duration::from_millis(200)), "1s");
    assert_eq!(short_duration(Duration::from_secs(42)), "42s");
    assert_eq!(short_duration(Duration::from_secs(185)), "3m05s");
    assert_eq!(short_duration(Duration::from_mins(127)), "2h07m");
}
