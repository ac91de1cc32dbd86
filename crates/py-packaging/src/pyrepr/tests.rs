use super::repr;

/// Strings over a mix of ASCII, quotes, controls, separators, private use and astral
/// characters, checked against the machine's `CPython`.
#[test]
#[expect(
    clippy::cast_possible_truncation,
    reason = "indices into a short alphabet from a small pseudo-random generator"
)]
// Runs python3, which the Windows test machine (Wine) has none of.
#[cfg(unix)]
fn agrees_with_cpython_on_generated_strings() {
    let alphabet: Vec<char> = "ab'\"\\ \t\n\r\u{0}\u{1f}\u{7f}\u{85}\u{a0}\u{ad}é中\u{200b}\u{2028}\u{3000}\u{e000}\u{fffe}\u{1f600}\u{f0000}\u{10ffff}"
            .chars()
            .collect();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut strings = Vec::new();
    for _ in 0..2000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 8) as usize;
        let s: String = (0..len)
            .map(|i| alphabet[((seed >> (8 + 5 * i)) as usize) % alphabet.len()])
            .collect();
        strings.push(s);
    }
    let input = serde_json::to_string(&strings).unwrap();
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import json,sys\nfor s in json.load(sys.stdin): print(json.dumps(repr(s)))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(input.as_bytes())?;
            child.wait_with_output()
        })
        .expect("python3");
    assert!(out.status.success());
    let expected: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(expected.len(), strings.len());
    for (s, want) in strings.iter().zip(&expected) {
        assert_eq!(&repr(s), want, "{s:?}");
    }
}

#[test]
fn matches_cpython() {
    for (input, want) in [
        ("gfx942", "'gfx942'"),
        ("", "''"),
        ("it's", "\"it's\""),
        ("both ' and \"", "'both \\' and \"'"),
        ("a\\b", "'a\\\\b'"),
        ("tab\tnl\ncr\r", "'tab\\tnl\\ncr\\r'"),
        ("\u{7}\u{7f}\u{a0}", "'\\x07\\x7f\\xa0'"),
        ("é ü 中", "'é ü 中'"),
        ("\u{200b}\u{2028}\u{3000}", "'\\u200b\\u2028\\u3000'"),
        ("\u{e000}", "'\\ue000'"),
        ("\u{f0000}", "'\\U000f0000'"),
        (
            "'; SENTINEL['pwned'] = True; x = '",
            "\"'; SENTINEL['pwned'] = True; x = '\"",
        ),
        (
            "gfx942');SENTINEL['pwned']=True;x=('",
            "\"gfx942');SENTINEL['pwned']=True;x=('\"",
        ),
        ("'\"", "'\\'\"'"),
    ] {
        assert_eq!(repr(input), want, "{input:?}");
    }
}
