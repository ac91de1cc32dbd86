#![cfg_attr(
    windows,
    expect(dead_code, reason = "used by the tests that run on Unix only")
)]

use super::{Method, PIECE, ZipOut};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Pseudo-random bytes (xorshift), reproducible.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed.to_le_bytes()[0]
        })
        .collect()
}

/// Files of `sizes`: a random 16 KiB block repeated (matches reach across pieces).
fn files(dir: &Path, sizes: &[usize]) -> Vec<(String, PathBuf, u32)> {
    let block = noise(16 << 10, 7);
    sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let data: Vec<u8> = block.iter().copied().cycle().skip(i).take(len).collect();
            let path = dir.join(format!("f{i}"));
            fs_err::write(&path, &data).unwrap();
            (
                format!("pkg/f{i}"),
                path,
                if i == 0 { 0o755 } else { 0o644 },
            )
        })
        .collect()
}

/// Limits of a test archive: zip64 from `zip64` bytes on, deflated entries streamed from
/// `whole` bytes on, `budget` bytes read ahead, `threads` compressors.
#[derive(Clone, Copy)]
struct Limits {
    zip64: Option<u64>,
    whole: u64,
    budget: u64,
    threads: usize,
}

const DEFAULT: Limits = Limits {
    zip64: None,
    whole: super::WHOLE_LIMIT,
    budget: super::BUDGET,
    threads: 2,
};

fn write_with(
    dir: &Path,
    name: &str,
    entries: &[(String, PathBuf, u32)],
    method: Method,
    limits: Limits,
) -> PathBuf {
    let path = dir.join(name);
    let file = fs_err::File::create(&path).unwrap().into_parts().0;
    let mut zip =
        ZipOut::new(file, &path, 0x6000, 0x5821).with_memory_limits(limits.whole, limits.budget);
    if let Some(limit) = limits.zip64 {
        zip = zip.with_zip64_limit(limit);
    }
    zip.add_files(entries, method, limits.threads).unwrap();
    zip.add_bytes("pkg/small.txt", b"text\n", 0o644, method)
        .unwrap();
    drop(zip.finish().unwrap());
    path
}

fn write(
    dir: &Path,
    name: &str,
    entries: &[(String, PathBuf, u32)],
    method: Method,
    limit: Option<u64>,
) -> PathBuf {
    let limits = Limits {
        zip64: limit,
        ..DEFAULT
    };
    write_with(dir, name, entries, method, limits)
}

/// Python's zipfile checks every CRC and lists name, size, mode, method.
const LIST: &str = r"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
for i in z.infolist():
    print(i.filename, i.file_size, oct(i.external_attr >> 16), i.compress_type, i.date_time)
";

// Runs python3, which the Windows test machine (Wine) has none of.
#[cfg(unix)]
#[test]
fn entries_are_one_stream_each_that_python_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let entries = files(tmp.path(), &[0, 1, PIECE, 3 * PIECE + 5, 100]);
    let zip = write(tmp.path(), "a.zip", &entries, Method::Deflated(9), None);
    let listing = rock_ci_test_support::python(LIST, &[zip.as_os_str()]);
    assert_eq!(
        listing,
        "pkg/f0 0 0o100755 8 (2024, 1, 1, 12, 0, 0)\npkg/f1 1 0o100644 8 (2024, 1, 1, 12, 0, 0)\n\
         pkg/f2 1048576 0o100644 8 (2024, 1, 1, 12, 0, 0)\npkg/f3 3145733 0o100644 8 (2024, 1, 1, 12, 0, 0)\n\
         pkg/f4 100 0o100644 8 (2024, 1, 1, 12, 0, 0)\npkg/small.txt 5 0o100644 8 (2024, 1, 1, 12, 0, 0)\n"
    );
    // The bytes come back as they were.
    let mut archive = zip::ZipArchive::new(fs_err::File::open(&zip).unwrap()).unwrap();
    for (name, path, _) in &entries {
        let mut data = Vec::new();
        archive
            .by_name(name)
            .unwrap()
            .read_to_end(&mut data)
            .unwrap();
        assert!(data == fs_err::read(path).unwrap(), "{name}");
    }
    // Each entry is one libdeflate stream of the whole file, and about what zlib's 9 writes:
    // matches reach across the whole entry.
    let f3 = archive.by_name("pkg/f3").unwrap().compressed_size();
    let data = fs_err::read(&entries[3].1).unwrap();
    let whole = super::deflate_whole(&mut super::compressor(9), &data).unwrap();
    assert_eq!(f3, whole.len() as u64);
    let mut one = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(9));
    std::io::Write::write_all(&mut one, &data).unwrap();
    let single = one.finish().unwrap().len() as u64;
    assert!(f3 <= single + single / 50, "{f3} vs {single}");
    // Same inputs, same bytes, on one compressor or two; stored entries too.
    let again = write(tmp.path(), "b.zip", &entries, Method::Deflated(9), None);
    assert!(fs_err::read(&again).unwrap() == fs_err::read(&zip).unwrap());
    let one_thread = Limits {
        threads: 1,
        ..DEFAULT
    };
    let serial = write_with(
        tmp.path(),
        "c.zip",
        &entries,
        Method::Deflated(9),
        one_thread,
    );
    assert!(fs_err::read(&serial).unwrap() == fs_err::read(&zip).unwrap());
    let stored = write(tmp.path(), "s.zip", &entries, Method::Stored, None);
    let listing = rock_ci_test_support::python(LIST, &[stored.as_os_str()]);
    assert!(listing.contains("pkg/f3 3145733 0o100644 0 "), "{listing}");
}

#[test]
fn incompressible_entries_cost_their_size_and_read_back() {
    // Deflate falls back to stored blocks inside the stream: the size plus their headers.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("random");
    fs_err::write(&path, noise(3 * PIECE, 11)).unwrap();
    let entries = [("r".to_owned(), path.clone(), 0o644)];
    for level in [9, 6, 1, 0] {
        let zip = write(tmp.path(), "r.zip", &entries, Method::Deflated(level), None);
        let mut archive = zip::ZipArchive::new(fs_err::File::open(&zip).unwrap()).unwrap();
        let mut file = archive.by_name("r").unwrap();
        assert!(
            file.compressed_size() <= 3 * PIECE as u64 + 1024,
            "level {level}"
        );
        let mut data = Vec::new();
        file.read_to_end(&mut data).unwrap();
        assert!(data == fs_err::read(&path).unwrap(), "level {level}");
    }
}

// Runs python3, which the Windows test machine (Wine) has none of.
#[cfg(unix)]
#[test]
fn zip64_fields_where_sizes_and_offsets_need_them() {
    let tmp = tempfile::tempdir().unwrap();
    let entries = files(tmp.path(), &[10, 5000, 3 * PIECE, 20]);
    // With a 4 KiB limit: big entries, late offsets and the directory need zip64 fields.
    for method in [Method::Stored, Method::Deflated(1)] {
        let zip = write(tmp.path(), "z64.zip", &entries, method, Some(4096));
        let listing = rock_ci_test_support::python(LIST, &[zip.as_os_str()]);
        assert!(listing.contains("pkg/f2 3145728 "), "{listing}");
        let code = if method == Method::Stored { 0 } else { 8 };
        let last = format!("pkg/small.txt 5 0o100644 {code} (2024, 1, 1, 12, 0, 0)\n");
        assert!(listing.ends_with(&last), "{listing}");
        let bytes = fs_err::read(&zip).unwrap();
        assert!(
            bytes.windows(4).any(|w| w == [0x50, 0x4b, 0x06, 0x06]),
            "zip64 end record"
        );
        check_records(&bytes, &entries);
    }
    // Streamed deflate entries with zip64 extras filled in at their end.
    let limits = Limits {
        zip64: Some(4096),
        whole: 4096,
        ..DEFAULT
    };
    let zip = write_with(
        tmp.path(),
        "z64s.zip",
        &entries,
        Method::Deflated(6),
        limits,
    );
    let listing = rock_ci_test_support::python(LIST, &[zip.as_os_str()]);
    assert!(listing.contains("pkg/f2 3145728 0o100644 8 "), "{listing}");
    check_records(&fs_err::read(&zip).unwrap(), &entries);
}

/// CRC-32 of zip, bit by bit (independent of the writer's).
fn crc32_bitwise(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// One central directory record, zip64 extras applied.
#[derive(Debug)]
struct Record {
    name: String,
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    offset: u64,
}

/// The central directory of `zip`, read by hand from the end records.
fn central_directory(zip: &[u8]) -> Vec<Record> {
    let eocd = zip.len() - 22;
    assert_eq!(
        u32_at(zip, eocd),
        0x0605_4b50,
        "no comment, end record last"
    );
    let (mut count, mut start) = (
        u64::from(u16_at(zip, eocd + 10)),
        u64::from(u32_at(zip, eocd + 16)),
    );
    if start == u64::from(u32::MAX) || count == 0xFFFF {
        let locator = eocd - 20;
        assert_eq!(u32_at(zip, locator), 0x0706_4b50);
        let record = usize::try_from(u64_at(zip, locator + 8)).unwrap();
        assert_eq!(u32_at(zip, record), 0x0606_4b50);
        count = u64_at(zip, record + 32);
        start = u64_at(zip, record + 48);
    }
    let mut at = usize::try_from(start).unwrap();
    let mut records = Vec::new();
    for _ in 0..count {
        assert_eq!(u32_at(zip, at), 0x0201_4b50);
        let name_len = usize::from(u16_at(zip, at + 28));
        let extra_len = usize::from(u16_at(zip, at + 30));
        let name = String::from_utf8(zip[at + 46..at + 46 + name_len].to_vec()).unwrap();
        let mut extra = &zip[at + 46 + name_len..at + 46 + name_len + extra_len];
        if !extra.is_empty() {
            assert_eq!(u16_at(extra, 0), 1, "zip64 extra");
            extra = &extra[4..];
        }
        let mut field = |short: u32| {
            if short == u32::MAX {
                let v = u64_at(extra, 0);
                extra = &extra[8..];
                v
            } else {
                u64::from(short)
            }
        };
        let size = field(u32_at(zip, at + 24));
        let compressed = field(u32_at(zip, at + 20));
        let offset = field(u32_at(zip, at + 42));
        records.push(Record {
            name,
            method: u16_at(zip, at + 10),
            crc: u32_at(zip, at + 16),
            compressed,
            size,
            offset,
        });
        at += 46 + name_len + extra_len;
    }
    records
}

/// Each entry's central record holds its CRC and sizes, its local header the same, and its
/// data inflates (raw deflate, flate2) back to the file's bytes.
fn check_records(zip: &[u8], entries: &[(String, PathBuf, u32)]) {
    let records = central_directory(zip);
    assert_eq!(records.len(), entries.len() + 1, "the files and small.txt");
    for r in &records {
        let original = match entries.iter().find(|(name, _, _)| *name == r.name) {
            Some((_, path, _)) => fs_err::read(path).unwrap(),
            None => b"text\n".to_vec(),
        };
        assert_eq!(r.size, original.len() as u64, "{}", r.name);
        assert_eq!(r.crc, crc32_bitwise(&original), "{}", r.name);
        let local = usize::try_from(r.offset).unwrap();
        assert_eq!(u32_at(zip, local), 0x0403_4b50, "{}", r.name);
        assert_eq!(u16_at(zip, local + 8), r.method, "{}", r.name);
        assert_eq!(u32_at(zip, local + 14), r.crc, "{}", r.name);
        let name_len = usize::from(u16_at(zip, local + 26));
        let extra_len = usize::from(u16_at(zip, local + 28));
        let (size, compressed) = if u32_at(zip, local + 22) == u32::MAX {
            let extra = local + 30 + name_len;
            (u64_at(zip, extra + 4), u64_at(zip, extra + 12))
        } else {
            (
                u64::from(u32_at(zip, local + 22)),
                u64::from(u32_at(zip, local + 18)),
            )
        };
        assert_eq!((size, compressed), (r.size, r.compressed), "{}", r.name);
        let start = local + 30 + name_len + extra_len;
        let data = &zip[start..start + usize::try_from(r.compressed).unwrap()];
        let payload = match r.method {
            0 => data.to_vec(),
            8 => {
                let mut out = Vec::new();
                flate2::read::DeflateDecoder::new(data)
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            other => panic!("method {other} of {}", r.name),
        };
        assert!(payload == original, "{} inflates back", r.name);
    }
}

#[test]
fn central_records_hold_the_crc_and_sizes_of_stored_and_deflated_entries() {
    let tmp = tempfile::tempdir().unwrap();
    // Code-like and random bytes, empty and multi-piece, of several sizes.
    let mut entries = files(tmp.path(), &[0, 7, 5 * PIECE / 2, 300_000]);
    let random = tmp.path().join("random");
    fs_err::write(&random, noise(PIECE + 3, 5)).unwrap();
    entries.push(("pkg/random".to_owned(), random, 0o644));
    for method in [Method::Stored, Method::Deflated(6), Method::Deflated(0)] {
        let zip = write(tmp.path(), "m.zip", &entries, method, None);
        let bytes = fs_err::read(&zip).unwrap();
        check_records(&bytes, &entries);
        let code = if method == Method::Stored { 0 } else { 8 };
        assert!(central_directory(&bytes).iter().all(|r| r.method == code));
    }
    // Deflated at level 6, the repetitive entry shrinks.
    let zip = write(tmp.path(), "d.zip", &entries, Method::Deflated(6), None);
    let records = central_directory(&fs_err::read(&zip).unwrap());
    let big = records.iter().find(|r| r.name == "pkg/f2").unwrap();
    assert!(big.compressed < big.size / 20, "{big:?}");
}

// Runs python3, which the Windows test machine (Wine) has none of.
#[cfg(unix)]
#[test]
fn read_ahead_and_streaming_keep_the_order_and_the_bytes() {
    // Entries over the read-ahead budget go one at a time beside the small ones, entries over
    // the whole-entry limit are streamed: the archive is the same archive of the same bytes.
    let tmp = tempfile::tempdir().unwrap();
    let entries = files(
        tmp.path(),
        &[
            3 * PIECE,
            10,
            PIECE / 2,
            2 * PIECE,
            0,
            PIECE / 3,
            4 * PIECE + 1,
        ],
    );
    let tight = Limits {
        budget: PIECE as u64,
        ..DEFAULT
    };
    let ahead = write_with(tmp.path(), "t.zip", &entries, Method::Deflated(6), tight);
    let roomy = write(tmp.path(), "r.zip", &entries, Method::Deflated(6), None);
    assert!(fs_err::read(&ahead).unwrap() == fs_err::read(&roomy).unwrap());
    check_records(&fs_err::read(&ahead).unwrap(), &entries);
    let streamed = Limits {
        whole: 2 * PIECE as u64,
        ..tight
    };
    let zip = write_with(tmp.path(), "s.zip", &entries, Method::Deflated(6), streamed);
    let bytes = fs_err::read(&zip).unwrap();
    check_records(&bytes, &entries);
    let names: Vec<String> = central_directory(&bytes)
        .into_iter()
        .map(|r| r.name)
        .collect();
    let mut expected: Vec<String> = entries.iter().map(|(n, _, _)| n.clone()).collect();
    expected.push("pkg/small.txt".to_owned());
    assert_eq!(names, expected);
    let listing = rock_ci_test_support::python(LIST, &[zip.as_os_str()]);
    assert!(listing.contains("pkg/f6 4194305 0o100644 8 "), "{listing}");
}
