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

#[test]
fn a_member_tar_takes_each_span_from_the_frame_that_holds_it_or_says_it_was_not_fetched() {
    use std::io::Read as _;
    // A stream of 4 members of 100 bytes each (not real tar: the reader only moves bytes).
    let stream: Vec<u8> = (0..400u32).map(|i| (i % 251) as u8).collect();
    let mut index = MemberIndex {
        prologue: Some(b"HEAD".to_vec()),
        ..MemberIndex::default()
    };
    for (i, start) in (0..400).step_by(100).enumerate() {
        let member = IndexedMember::new(format!("m{i}"), MemberKind::File, start, start + 100);
        index.members.push(member);
    }
    let frames = |ranges: &[(usize, usize)]| -> Vec<io::Result<(u64, Vec<u8>)>> {
        ranges
            .iter()
            .map(|&(from, to)| Ok((from as u64, stream[from..to].to_vec())))
            .collect()
    };
    // The tar of members 1 and 3 from `frames`, read to its end.
    let read_all = |frames: Vec<io::Result<(u64, Vec<u8>)>>| {
        let mut out = Vec::new();
        index
            .member_tar(&[1, 3], frames)
            .unwrap()
            .read_to_end(&mut out)
            .map(|_| out)
    };

    // Members 1 and 3 from frames 50..250 and 250..400 (a gap and a span across frames).
    let out = read_all(frames(&[(50, 250), (250, 400)])).unwrap();
    let mut expected = b"HEAD".to_vec();
    expected.extend_from_slice(&stream[100..200]);
    expected.extend_from_slice(&stream[300..400]);
    expected.extend_from_slice(&[0; 1024]);
    assert_eq!(out, expected);

    // Frames that leave member 3's first bytes out.
    let err = read_all(frames(&[(50, 250), (320, 400)])).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("bytes at 300"), "{err}");

    // Frames that end inside it; a frame's own error is the stream's.
    let err = read_all(frames(&[(50, 250), (250, 350)])).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    let mut failing = frames(&[(50, 250)]);
    failing.push(Err(io::Error::other("frame 2 is not the index's")));
    let err = read_all(failing).unwrap_err();
    assert!(err.to_string().contains("frame 2"), "{err}");

    // Without a prologue there is no manifest to put first.
    index.prologue = None;
    assert!(matches!(
        index.member_tar(&[1], frames(&[])),
        Err(IndexError::Damaged(_))
    ));
}
