//! APT repository metadata, generated here: the control stanza of a `.deb` (an `ar` archive
//! whose `control.tar[.gz|.xz|.zst]` member holds `./control`), the `Packages` index in the
//! field order of `dpkg-scanpackages`, its merge with an earlier index, and the `Release` file
//! with the checksums and the by-hash flag that let a client fetch indexes by content.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use file_tree::FileError;

/// Why a `.deb` cannot be indexed, or an APT index cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DebError {
    /// Opening the file failed (the error names it).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Reading the file failed.
    #[error(transparent)]
    File(#[from] FileError),
    /// The file is not an `ar` archive.
    #[error("not an ar archive (no `!<arch>` magic)")]
    NotAr,
    /// Reading a part of the archive failed.
    #[error("{what}")]
    Reading {
        /// The part.
        what: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A part of the archive ends early.
    #[error("{what} is cut short")]
    CutShort {
        /// The part.
        what: String,
    },
    /// The archive has no control member.
    #[error("no `control.tar` member")]
    NoControlMember,
    /// A member header is damaged.
    #[error("a damaged ar member header")]
    DamagedHeader,
    /// A member header has no valid size.
    #[error("member `{name}` has no valid size")]
    BadSize {
        /// The member.
        name: String,
    },
    /// The archive does not start with `debian-binary`.
    #[error("not a Debian binary package (no leading `debian-binary` member)")]
    NotDebian,
    /// The control member does not fit in memory.
    #[error("member `{name}` is too large")]
    TooLarge {
        /// The member.
        name: String,
    },
    /// The control member is compressed in an unknown way.
    #[error("unsupported control member `{name}`")]
    UnsupportedMember {
        /// The member.
        name: String,
    },
    /// The control member holds no `control` file.
    #[error("`{name}` holds no `control` file")]
    NoControl {
        /// The member.
        name: String,
    },
    /// The control file starts with a continuation line.
    #[error("a continuation line before any field: `{line}`")]
    ContinuationFirst {
        /// The line.
        line: String,
    },
    /// A control file line is no field.
    #[error("a line that is no field: `{line}`")]
    NotAField {
        /// The line.
        line: String,
    },
    /// The control file lacks a required field.
    #[error("the control file has no `{field}` field")]
    MissingField {
        /// `Package`, `Version` or `Architecture`.
        field: &'static str,
    },
    /// A `Packages` stanza without `Filename`.
    #[error("a stanza without `Filename` (it starts `{start}`)")]
    NoFilename {
        /// Its first line, escaped.
        start: String,
    },
}

impl DebError {
    fn reading(what: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let what = what.into();
        move |source| DebError::Reading { what, source }
    }
}

/// The fields of a binary package index stanza in the order `dpkg-scanpackages` writes them
/// (dpkg's `CTRL_INDEX_PKG` order); any other field follows in its control-file order.
const FIELD_ORDER: &[&str] = &[
    "Package",
    "Package-Type",
    "Source",
    "Version",
    "Kernel-Version",
    "Built-For-Profiles",
    "Auto-Built-Package",
    "Architecture",
    "Subarchitecture",
    "Installer-Menu-Item",
    "Build-Essential",
    "Essential",
    "Protected",
    "Origin",
    "Bugs",
    "Maintainer",
    "Installed-Size",
    "Pre-Depends",
    "Depends",
    "Recommends",
    "Suggests",
    "Enhances",
    "Conflicts",
    "Breaks",
    "Replaces",
    "Provides",
    "Built-Using",
    "Static-Built-Using",
    "Filename",
    "Size",
    "MD5sum",
    "SHA1",
    "SHA256",
    "Section",
    "Priority",
    "Multi-Arch",
    "Homepage",
    "Description",
    "Tag",
    "Task",
];

/// The digests and size of a file, as index stanzas and `Release` list them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digests {
    /// Size in bytes.
    pub size: u64,
    /// MD5, lowercase hex.
    pub md5: String,
    /// SHA-1, lowercase hex.
    pub sha1: String,
    /// SHA-256, lowercase hex.
    pub sha256: String,
}

impl Digests {
    /// The digests of `data`.
    pub fn of(data: &[u8]) -> Self {
        use md5::Digest as _;
        Self {
            size: data.len() as u64,
            md5: hex::encode(md5::Md5::digest(data)),
            sha1: hex::encode(sha1::Sha1::digest(data)),
            sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(data)),
        }
    }

    /// The digests of the file at `path`, read in pieces.
    pub fn of_file(path: &Path) -> Result<Self, DebError> {
        use md5::Digest as _;
        let mut file = fs_err::File::open(path)?;
        let (mut md5, mut sha1) = (md5::Md5::new(), sha1::Sha1::new());
        let mut sha256 = <sha2::Sha256 as sha2::Digest>::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut size = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(|e| FileError::read(path, e))?;
            if n == 0 {
                break;
            }
            md5.update(&buf[..n]);
            sha1.update(&buf[..n]);
            sha2::Digest::update(&mut sha256, &buf[..n]);
            size += n as u64;
        }
        Ok(Self {
            size,
            md5: hex::encode(md5.finalize()),
            sha1: hex::encode(sha1.finalize()),
            sha256: hex::encode(sha2::Digest::finalize(sha256)),
        })
    }
}

/// Reads `len` bytes of `reader` whole, or fails naming `what`.
fn read_exact_vec(reader: &mut dyn Read, len: usize, what: &str) -> Result<Vec<u8>, DebError> {
    let mut buf = Vec::new();
    reader
        .take(len as u64)
        .read_to_end(&mut buf)
        .map_err(DebError::reading(what))?;
    if buf.len() != len {
        return Err(DebError::CutShort { what: what.into() });
    }
    Ok(buf)
}

/// The `debian-binary` check and the `control.tar*` member (name, bytes) of the `ar` archive
/// `reader`; the other members (the data, possibly large) are skipped, not read.
fn control_member<R: Read + Seek>(reader: &mut R) -> Result<(String, Vec<u8>), DebError> {
    let magic = read_exact_vec(reader, 8, "the archive header").map_err(|_| DebError::NotAr)?;
    if magic != b"!<arch>\n" {
        return Err(DebError::NotAr);
    }
    let mut first = true;
    loop {
        let mut header = [0u8; 60];
        let mut got = 0;
        while got < header.len() {
            match reader.read(&mut header[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return Err(DebError::reading("reading an ar member header")(e)),
            }
        }
        if got == 0 {
            return Err(DebError::NoControlMember);
        }
        if got < header.len() || &header[58..60] != b"`\n" {
            return Err(DebError::DamagedHeader);
        }
        let field = |range: std::ops::Range<usize>| {
            String::from_utf8_lossy(&header[range])
                .trim_end()
                .to_owned()
        };
        let name = field(0..16);
        let name = name.strip_suffix('/').unwrap_or(&name).to_owned();
        let size: u64 = field(48..58)
            .parse()
            .map_err(|_| DebError::BadSize { name: name.clone() })?;
        if first && name != "debian-binary" {
            return Err(DebError::NotDebian);
        }
        first = false;
        if name.starts_with("control.tar") {
            let len =
                usize::try_from(size).map_err(|_| DebError::TooLarge { name: name.clone() })?;
            let body = read_exact_vec(reader, len, &format!("member `{name}`"))?;
            return Ok((name, body));
        }
        let skip =
            i64::try_from(size + size % 2).map_err(|_| DebError::BadSize { name: name.clone() })?;
        let end = reader
            .seek(SeekFrom::Current(skip))
            .map_err(DebError::reading(format!("member `{name}`")))?;
        let total = reader
            .seek(SeekFrom::End(0))
            .map_err(DebError::reading(format!("member `{name}`")))?;
        if end > total + size % 2 {
            return Err(DebError::CutShort {
                what: format!("member `{name}`"),
            });
        }
        reader
            .seek(SeekFrom::Start(end))
            .map_err(DebError::reading(format!("member `{name}`")))?;
    }
}

/// The cause of a failure inside the control member `name`.
fn in_member(name: &str) -> impl FnOnce(io::Error) -> DebError {
    DebError::reading(format!("`{name}`"))
}

/// The text of the `control` file of the binary package `data` (the bytes of a `.deb`).
pub fn control_of(data: &[u8]) -> Result<String, DebError> {
    control_of_reader(&mut std::io::Cursor::new(data))
}

/// The text of the `control` file of the binary package read from `reader`.
pub fn control_of_reader<R: Read + Seek>(reader: &mut R) -> Result<String, DebError> {
    let (name, body) = control_member(reader)?;
    let body = body.as_slice();
    let reader: Box<dyn Read + '_> = match name.as_str() {
        "control.tar" => Box::new(body),
        "control.tar.gz" => Box::new(flate2::read::GzDecoder::new(body)),
        "control.tar.xz" => Box::new(liblzma::read::XzDecoder::new(body)),
        "control.tar.zst" => {
            Box::new(zstd::stream::read::Decoder::new(body).map_err(in_member(&name))?)
        }
        other => {
            return Err(DebError::UnsupportedMember {
                name: other.to_owned(),
            });
        }
    };
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(in_member(&name))? {
        let mut entry = entry.map_err(in_member(&name))?;
        let path = entry
            .path()
            .map_err(in_member(&name))?
            .to_string_lossy()
            .into_owned();
        if path.trim_start_matches("./") == "control" {
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .map_err(DebError::reading(format!("`{name}`/control")))?;
            return Ok(text);
        }
    }
    Err(DebError::NoControl { name })
}

/// The fields of one deb822 paragraph as (name, value); a value keeps its continuation lines
/// (`\n` plus the line as written).
fn fields(paragraph: &str) -> Result<Vec<(String, String)>, DebError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in paragraph.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            let (_, value) = out
                .last_mut()
                .ok_or_else(|| DebError::ContinuationFirst { line: line.into() })?;
            value.push('\n');
            value.push_str(line);
        } else {
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| DebError::NotAField { line: line.into() })?;
            out.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    Ok(out)
}

/// The index stanza of a package whose control file is `control`, stored at `filename`
/// (relative to the repository root) with `digests`: every control field, the file's fields
/// added, in the order of `dpkg-scanpackages`; lines joined by `\n`, no trailing newline.
pub fn stanza(control: &str, filename: &str, digests: &Digests) -> Result<String, DebError> {
    let mut fields = fields(control)?;
    for required in ["Package", "Version", "Architecture"] {
        if !fields
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case(required) && !v.is_empty())
        {
            return Err(DebError::MissingField { field: required });
        }
    }
    fields.retain(|(n, _)| {
        !["Filename", "Size", "MD5sum", "SHA1", "SHA256"]
            .iter()
            .any(|f| f.eq_ignore_ascii_case(n))
    });
    fields.extend([
        ("Filename".to_owned(), filename.to_owned()),
        ("Size".to_owned(), digests.size.to_string()),
        ("MD5sum".to_owned(), digests.md5.clone()),
        ("SHA1".to_owned(), digests.sha1.clone()),
        ("SHA256".to_owned(), digests.sha256.clone()),
    ]);
    let rank = |name: &str| {
        FIELD_ORDER
            .iter()
            .position(|f| f.eq_ignore_ascii_case(name))
    };
    // Known fields first in dpkg's order (with dpkg's spelling), the rest as they came.
    let mut known: Vec<(usize, String, String)> = Vec::new();
    let mut other = Vec::new();
    for (name, value) in fields {
        match rank(&name) {
            Some(i) => known.push((i, FIELD_ORDER[i].to_owned(), value)),
            None => other.push((name, value)),
        }
    }
    known.sort_by_key(|(i, _, _)| *i);
    let lines: Vec<String> = known
        .into_iter()
        .map(|(_, n, v)| (n, v))
        .chain(other)
        .map(|(n, v)| format!("{n}: {v}"))
        .collect();
    Ok(lines.join("\n"))
}

/// The stanzas of a `Packages` index keyed by their `Filename`. Lines are right-trimmed;
/// a stanza without `Filename` makes the index unusable here, and so does text that is not
/// UTF-8 (the caller names the object).
pub fn parse_packages(text: &str) -> Result<BTreeMap<String, String>, DebError> {
    let mut out = BTreeMap::new();
    let mut current: Vec<&str> = Vec::new();
    let mut flush = |current: &mut Vec<&str>| -> Result<(), DebError> {
        if current.is_empty() {
            return Ok(());
        }
        let filename = current
            .iter()
            .find_map(|l| l.strip_prefix("Filename:"))
            .map(str::trim)
            .ok_or_else(|| DebError::NoFilename {
                start: current[0].escape_debug().to_string(),
            })?;
        out.insert(filename.to_owned(), current.join("\n"));
        current.clear();
        Ok(())
    };
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            flush(&mut current)?;
        } else {
            current.push(line);
        }
    }
    flush(&mut current)?;
    Ok(out)
}

/// The `Packages` index of `stanzas`: sorted by `Filename`, each stanza followed by an empty
/// line.
pub fn packages_text(stanzas: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for stanza in stanzas.values() {
        out.push_str(stanza);
        out.push_str("\n\n");
    }
    out
}

/// `data` compressed with gzip at level 9, as `gzip -9c` does (no name, no time).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing into a `Vec` does not fail.
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default()
}

/// The `Release` file of the repository: the reference's header fields, `Acquire-By-Hash:
/// yes`, and the `MD5Sum`, `SHA1` and `SHA256` lists of `files` (path below `dists/stable`,
/// digests). `date` is the `Date:` value.
pub fn release_text(job_type: &str, date: &str, files: &[(&str, &Digests)]) -> String {
    let mut out = format!(
        "Origin: AMD ROCm\nLabel: ROCm {job_type} Packages\nSuite: stable\nCodename: stable\nArchitectures: amd64\nComponents: main\nDescription: ROCm APT Repository\nDate: {date}\nAcquire-By-Hash: yes\n"
    );
    type Pick = fn(&Digests) -> &str;
    let sections: [(&str, Pick); 3] = [
        ("MD5Sum", |d| &d.md5),
        ("SHA1", |d| &d.sha1),
        ("SHA256", |d| &d.sha256),
    ];
    for (section, pick) in sections {
        if files.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{section}:");
        for (path, digests) in files {
            let _ = writeln!(out, " {} {:16} {path}", pick(digests), digests.size);
        }
    }
    out
}

/// What a `Release` file says about one index file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseEntry {
    /// Its SHA-256.
    pub sha256: String,
    /// Its size.
    pub size: u64,
}

/// The `SHA256` entry of `path` in the `Release` text `release`, and whether the release
/// says `Acquire-By-Hash: yes`.
pub fn release_entry(release: &str, path: &str) -> (Option<ReleaseEntry>, bool) {
    let by_hash = release.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.eq_ignore_ascii_case("Acquire-By-Hash") && v.trim().eq_ignore_ascii_case("yes")
        })
    });
    let mut in_sha256 = false;
    for line in release.lines() {
        if !line.starts_with([' ', '\t']) {
            in_sha256 = line.trim_end() == "SHA256:";
            continue;
        }
        if !in_sha256 {
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        if let [sha256, size, name] = parts[..]
            && name == path
            && let Ok(size) = size.parse()
        {
            return (
                Some(ReleaseEntry {
                    sha256: sha256.to_ascii_lowercase(),
                    size,
                }),
                by_hash,
            );
        }
    }
    (None, by_hash)
}

/// The digests and the index stanza of the package file at `path`, to be stored at
/// `filename`; the error says why it cannot be indexed (the caller names the file).
pub fn read_package(path: &Path, filename: &str) -> Result<(Digests, String), DebError> {
    let digests = Digests::of_file(path)?;
    let mut file = fs_err::File::open(path)?;
    let control = control_of_reader(&mut file)?;
    let stanza = stanza(&control, filename, &digests)?;
    Ok((digests, stanza))
}

/// The `SHA256` value of an index stanza, lowercase; `None` when it has none.
pub fn stanza_sha256(stanza: &str) -> Option<String> {
    stanza.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("SHA256")
            .then(|| value.trim().to_ascii_lowercase())
    })
}

#[cfg(test)]
mod tests;
