use super::*;

#[test]
fn paths_with_tabs_newlines_and_percents_round_trip() {
    for text in [
        "plain/path",
        "a%b",
        "tab\there",
        "line\nbreak\r",
        "%09 literal",
        "",
    ] {
        assert_eq!(unescape(&escape(text)).as_deref(), Some(text));
    }
    assert_eq!(unescape("bad%zz"), None);
    assert_eq!(unescape("cut%0"), None);
}

#[test]
fn frames_for_a_range_are_the_ones_that_overlap_it() {
    let frame = |content_offset, decompressed| IndexedFrame {
        offset: 0,
        compressed: 1,
        content_offset,
        decompressed,
        sha256: "0".repeat(64),
    };
    let index = MemberIndex {
        frames: vec![frame(0, 10), frame(10, 10), frame(20, 5)],
        ..MemberIndex::default()
    };
    assert_eq!(index.frames_for(0, 10), 0..1);
    assert_eq!(index.frames_for(9, 11), 0..2);
    assert_eq!(index.frames_for(10, 20), 1..2);
    assert_eq!(index.frames_for(12, 25), 1..3);
    assert_eq!(index.frames_for(24, 25), 2..3);
}

#[test]
fn a_tail_without_an_index_or_too_short_says_so() {
    assert!(matches!(
        MemberIndex::from_tail(b"abc", 3, None),
        Err(IndexError::NeedTail(3))
    ));
    let plain = vec![0u8; 64];
    assert!(matches!(
        MemberIndex::from_tail(&plain, 64, None),
        Err(IndexError::Missing)
    ));
}
