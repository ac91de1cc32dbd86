use std::io::{Read, Write};

use super::read::FramedDecoder;
use super::write::FramedEncoder;
use super::*;

/// Bytes that compress somewhat, different everywhere.
fn sample(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 3 == 0 {
                (x & 0xFF) as u8
            } else {
                b"abcdefg"[i % 7]
            }
        })
        .collect()
}

/// `data` written by the encoder with frames of `frame` bytes on `workers` threads.
fn encode(data: &[u8], frame: usize, workers: usize) -> Vec<u8> {
    let mut e = FramedEncoder::with_frame_size(Vec::new(), 3, workers, frame).unwrap();
    // In uneven pieces, as tar writes.
    for piece in data.chunks(7919) {
        e.write_all(piece).unwrap();
    }
    e.finish().unwrap()
}

fn decode(archive: &[u8], workers: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    // Small reads of a slowly filled buffer, as a download delivers it.
    let input = std::io::BufReader::with_capacity(1000, archive);
    FramedDecoder::new(input, workers).read_to_end(&mut out)?;
    Ok(out)
}

fn decode_err(archive: &[u8]) -> String {
    decode(archive, 2).unwrap_err().to_string()
}

/// The frames of `archive` as (start, header) pairs, the seek table last.
fn frames(archive: &[u8]) -> Vec<(usize, Frame)> {
    let mut input = archive;
    let mut found = Vec::new();
    loop {
        let start = archive.len() - input.len();
        let Some(frame) = read_frame_header(&mut input).unwrap() else {
            return found;
        };
        found.push((start, frame));
        match frame {
            Frame::Skippable { size, .. } => input = &input[size as usize..],
            Frame::Zstd { checksum, .. } => loop {
                let block = parse_block([input[0], input[1], input[2]]).unwrap();
                input = &input[3 + block.payload..];
                if block.last {
                    input = &input[if checksum { 4 } else { 0 }..];
                    break;
                }
            },
        }
    }
}

#[test]
fn frames_of_fixed_size_with_sizes_checksums_and_a_seek_table() {
    let data = sample(1_000_000);
    let archive = encode(&data, 300_000, 2);
    let found = frames(&archive);
    assert_eq!(found.len(), 5, "four frames and the seek table");
    let mut entries = Vec::new();
    for (i, window) in found.windows(2).enumerate() {
        let ((start, frame), (end, _)) = (window[0], window[1]);
        let Frame::Zstd {
            content_size,
            checksum,
            ..
        } = frame
        else {
            panic!("frame {i} is not a zstd frame");
        };
        let expected: usize = if i < 3 { 300_000 } else { 100_000 };
        assert_eq!(content_size, Some(expected as u64));
        assert!(checksum);
        // Each frame on its own is the zstd of its part.
        let part = zstd::decode_all(&archive[start..end]).unwrap();
        assert_eq!(part, data[i * 300_000..][..expected]);
        entries.push(SeekEntry {
            compressed: (end - start) as u64,
            decompressed: expected as u64,
            checksum: Some(u32::from_le_bytes(
                archive[end - 4..end].try_into().unwrap(),
            )),
        });
    }
    let (table_start, table) = found[4];
    assert_eq!(
        table,
        Frame::Skippable {
            magic: SEEK_TABLE_MAGIC,
            size: 4 * 12 + 9
        }
    );
    assert_eq!(
        parse_seek_table(&archive[table_start + 8..]).unwrap(),
        Some(entries)
    );
    assert_eq!(&archive[archive.len() - 4..], &SEEKABLE_MAGIC.to_le_bytes());
    // The zstd library reads it as one stream.
    assert_eq!(zstd::decode_all(&archive[..]).unwrap(), data);
}

#[test]
fn the_same_bytes_on_any_number_of_threads() {
    let data = sample(700_000);
    let inline = encode(&data, 100_000, 0);
    for workers in [1, 2, 5] {
        assert_eq!(encode(&data, 100_000, workers), inline, "{workers} workers");
    }
}

#[test]
fn empty_and_exact_multiples() {
    for len in [0, 1, 100_000, 200_000, 200_001] {
        let data = sample(len);
        let archive = encode(&data, 100_000, 2);
        let zstd_frames = frames(&archive).len() - 1;
        assert_eq!(zstd_frames, len.div_ceil(100_000).max(1), "{len}");
        assert_eq!(zstd::decode_all(&archive[..]).unwrap(), data, "{len}");
        for workers in [1, 2, 4] {
            assert_eq!(decode(&archive, workers).unwrap(), data, "{len}");
        }
    }
}

#[test]
fn reads_any_zstd_stream() {
    let data = sample(400_000);
    // One frame without a content size (streamed, as Python's pyzstd writes), one with.
    let streamed = {
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        e.include_checksum(true).unwrap();
        e.write_all(&data).unwrap();
        e.finish().unwrap()
    };
    assert!(matches!(
        frames(&streamed)[0].1,
        Frame::Zstd {
            content_size: None,
            ..
        }
    ));
    let whole = zstd::bulk::compress(&data, 3).unwrap();
    // Frames of both kinds and skippable frames between them, in any order.
    let skippable = |n: u8| {
        let mut f = (SKIPPABLE_MAGIC + u32::from(n)).to_le_bytes().to_vec();
        f.extend_from_slice(&5u32.to_le_bytes());
        f.extend_from_slice(b"hello");
        f
    };
    let mixed = [
        skippable(3),
        whole.clone(),
        streamed.clone(),
        skippable(0xE),
        whole.clone(),
        whole.clone(),
        streamed.clone(),
        skippable(0),
    ]
    .concat();
    let cases = [(&streamed, 1), (&whole, 1), (&mixed, 5)];
    for (archive, copies) in cases {
        assert_eq!(zstd::decode_all(&archive[..]).unwrap(), data.repeat(copies));
        for workers in [1, 3] {
            assert_eq!(decode(archive, workers).unwrap(), data.repeat(copies));
        }
    }
}

#[test]
fn a_seek_table_after_other_frames_and_a_skippable_frame_in_the_middle() {
    let data = sample(500_000);
    let archive = encode(&data, 100_000, 2);
    let found = frames(&archive);
    // A skippable frame between frames 2 and 3: read as zstd reads it, but the seek table no
    // longer lists every frame.
    let at = found[2].0;
    let mut spliced = archive[..at].to_vec();
    spliced.extend_from_slice(&(SKIPPABLE_MAGIC + 1).to_le_bytes());
    spliced.extend_from_slice(&3u32.to_le_bytes());
    spliced.extend_from_slice(b"abc");
    spliced.extend_from_slice(&archive[at..]);
    assert_eq!(zstd::decode_all(&spliced[..]).unwrap(), data);
    let err = decode_err(&spliced);
    assert!(
        err.contains("the seek table lists 5 frames, the archive has 6 before it"),
        "{err}"
    );
    // Without the seek table, the frames alone.
    let table_at = found.last().unwrap().0;
    let mut untabled = spliced[..table_at + spliced.len() - archive.len()].to_vec();
    assert_eq!(decode(&untabled, 2).unwrap(), data);
    // A skippable frame of the seek table's magic that is not a seek table: skipped.
    untabled.extend_from_slice(&SEEK_TABLE_MAGIC.to_le_bytes());
    untabled.extend_from_slice(&4u32.to_le_bytes());
    untabled.extend_from_slice(b"abcd");
    assert_eq!(decode(&untabled, 2).unwrap(), data);
}

#[test]
fn a_lying_seek_table_is_an_error() {
    let data = sample(500_000);
    let archive = encode(&data, 100_000, 2);
    let table_at = frames(&archive).last().unwrap().0;
    let entries = table_at + 8;
    // Each field of each entry one off: a compressed size, a decompressed size, a checksum.
    for (field, what) in [(0, "compressed"), (4, "decompressed"), (8, "checksum")] {
        for frame in [0, 4] {
            let mut lying = archive.clone();
            let at = entries + frame * 12 + field;
            lying[at] ^= 1;
            let err = decode_err(&lying);
            assert!(
                err.contains(&format!("the seek table does not match frame {frame}")),
                "{what}: {err}"
            );
            // Where its frame is.
            assert!(err.contains(&format!("at byte {table_at}")), "{err}");
        }
    }
    // A count of frames that is not the archive's.
    let mut lying = archive.clone();
    let count = archive.len() - SEEK_TABLE_FOOTER;
    lying[count] = 4;
    let err = decode_err(&lying);
    assert!(
        err.contains("a seek table of 4 frames in 60 bytes of entries"),
        "{err}"
    );
    // A descriptor with reserved bits.
    let mut lying = archive.clone();
    lying[count + 4] |= 0x10;
    let err = decode_err(&lying);
    assert!(err.contains("reserved descriptor bits"), "{err}");
}

#[test]
fn a_truncated_frame_is_an_error() {
    let data = sample(300_000);
    let archive = encode(&data, 100_000, 2);
    let found = frames(&archive);
    let boundaries: Vec<usize> = found.iter().map(|(start, _)| *start).collect();
    let table_at = *boundaries.last().unwrap();
    // Every length that ends inside a frame (the seek table too).
    for len in (1..archive.len())
        .step_by(97)
        .chain([table_at + 3, archive.len() - 1])
    {
        if boundaries.contains(&len) {
            continue;
        }
        let err = decode_err(&archive[..len]);
        assert!(err.contains("zstd frame"), "{len}: {err}");
        assert!(err.contains("ends inside"), "{len}: {err}");
    }
    // Inside a frame decoded as a stream.
    let streamed = zstd::stream::encode_all(&data[..], 3).unwrap();
    let err = decode_err(&streamed[..streamed.len() - 10]);
    assert!(
        err.contains("zstd frame 0 (at byte 0): the zstd stream ends inside the frame"),
        "{err}"
    );
}

#[test]
fn a_wrong_content_size_is_an_error() {
    let data = sample(250_000);
    let archive = encode(&data, 100_000, 2);
    let found = frames(&archive);
    // Frames 0 and 2 (100000 and 50000 bytes) declare one byte more, then one less.
    for (frame, delta) in [(0usize, 1i32), (2, -1), (2, 1)] {
        let (start, Frame::Zstd { header_len, .. }) = found[frame] else {
            panic!("not a zstd frame");
        };
        let mut lying = archive.clone();
        // The content size field: 2 bytes (less 256) or 4 here, the header's last.
        let (len, bias) = match archive[start + 4] >> 6 {
            1 => (2, 256),
            2 => (4, 0),
            other => panic!("content size flag {other}"),
        };
        let field = start + header_len - len;
        let mut le = [0u8; 4];
        le[..len].copy_from_slice(&lying[field..field + len]);
        let declared = u32::from_le_bytes(le) + bias;
        let declared = declared.checked_add_signed(delta).unwrap();
        lying[field..field + len].copy_from_slice(&(declared - bias).to_le_bytes()[..len]);
        // With the seek table, which the frame no longer matches.
        let err = decode_err(&lying);
        assert!(
            err.contains(&format!("frame {frame}")),
            "{frame} {delta}: {err}"
        );
        // Without it, the frame's own.
        let table_at = found.last().unwrap().0;
        let err = decode(&lying[..table_at], 2).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "zstd frame {frame} (at byte {start}): declares {declared} bytes"
            )),
            "{frame} {delta}: {err}"
        );
        // Decoded as a stream (one worker): zstd's own check of the size.
        let err = decode(&lying[..table_at], 1).unwrap_err().to_string();
        assert!(
            err.contains(&format!("zstd frame {frame} (at byte {start}): ")),
            "{frame} {delta}: {err}"
        );
    }
}

#[test]
fn garbage_after_the_frames_is_an_error() {
    let mut archive = encode(&sample(1000), 100_000, 0);
    archive.extend_from_slice(b"not zstd");
    let err = decode_err(&archive);
    assert!(err.contains("zstd frame 2"), "{err}");
    assert!(err.contains("not a zstd frame"), "{err}");
}

#[test]
fn an_archive_cut_between_frames_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a_b_generic.tar.zst");
    let big = sample(FRAME_SIZE * 2 + 12345);
    let mut writer =
        crate::ArchiveWriter::create(&path, crate::Compression::Zstd { level: 1 }).unwrap();
    writer
        .append_data(crate::MANIFEST_NAME, b"p\n", 0o644)
        .unwrap();
    writer.append_data("p/big", &big, 0o644).unwrap();
    writer.append_data("p/small", b"small", 0o644).unwrap();
    writer.finish().unwrap();
    let archive = fs_err::read(&path).unwrap();
    let found = frames(&archive);
    assert_eq!(
        found.len(),
        5,
        "three frames, the member index and the seek table"
    );
    let unpack = |bytes: &[u8], to: &str| {
        let stream = crate::decoder(crate::ArchiveFormat::TarZst, bytes).unwrap();
        let dest = dir.path().join(to);
        fs_err::create_dir(&dest).unwrap();
        crate::extract_artifact("a_b_generic.tar.zst", stream, &dest, crate::Layout::Full)
            .map(|_| fs_err::read(dest.join("p/big")).unwrap() == big)
    };
    assert!(unpack(&archive, "whole").unwrap());
    // Without the seek table, and without the index too: every frame is there, the tree
    // whole.
    assert!(unpack(&archive[..found[4].0], "untabled").unwrap());
    assert!(unpack(&archive[..found[3].0], "unindexed").unwrap());
    // Without the last frame, or the last two: a valid zstd stream, a cut tar (inside a
    // member, or at its end).
    let mut cut_after_small = archive[..found[2].0].to_vec();
    let mut tail = Vec::new();
    {
        // The last frame re-written to end right after `p/small`'s data, before the zero
        // blocks: the stream is whole zstd, the tar is cut at a member's end.
        let last = zstd::decode_all(&archive[found[2].0..found[3].0]).unwrap();
        let data_end = last.iter().rposition(|b| *b != 0).unwrap() + 1;
        let end = data_end.div_ceil(512) * 512;
        assert!(end < last.len(), "zero blocks follow");
        tail.extend_from_slice(&zstd::bulk::compress(&last[..end], 1).unwrap());
    }
    cut_after_small.extend_from_slice(&tail);
    let cut = [
        (&archive[..found[1].0], "unexpected EOF"),
        (&archive[..found[2].0], "unexpected EOF"),
        (
            &cut_after_small[..],
            "ends before its end-of-archive blocks",
        ),
    ];
    for (i, (bytes, message)) in cut.into_iter().enumerate() {
        let err = unpack(bytes, &format!("cut{i}")).unwrap_err();
        let err = format!("{err}: {}", std::error::Error::source(&err).unwrap());
        assert!(err.contains("a_b_generic.tar.zst"), "{err}");
        assert!(err.contains(message), "{err}");
    }
}

#[test]
fn a_frame_over_the_buffered_size_is_decoded_as_a_stream() {
    let big = sample(usize::try_from(MAX_BUFFERED_FRAME).unwrap() + 1);
    let small = sample(1000);
    let first = zstd::bulk::compress(&big, 1).unwrap();
    assert!(matches!(
        frames(&first)[0].1,
        Frame::Zstd { content_size: Some(n), .. } if n > MAX_BUFFERED_FRAME
    ));
    let second = zstd::bulk::compress(&small, 1).unwrap();
    let entry = |frame: &[u8], len: usize| SeekEntry {
        compressed: frame.len() as u64,
        decompressed: len as u64,
        checksum: None,
    };
    let table = seek_table(&[entry(&first, big.len()), entry(&second, small.len())]).unwrap();
    let archive = [&first[..], &second, &table].concat();
    assert_eq!(decode(&archive, 2).unwrap(), [&big[..], &small].concat());
    // The streamed frame's sizes are checked against the table too.
    let wrong = seek_table(&[entry(&first, big.len() - 1), entry(&second, small.len())]).unwrap();
    let err = decode_err(&[&first[..], &second, &wrong].concat());
    assert!(err.contains("does not match frame 0"), "{err}");
}
