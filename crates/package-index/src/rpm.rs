//! RPM repository metadata: `createrepo_c` writes the metadata of new packages and
//! `mergerepo_c` merges it with the repository already published (both from the
//! `createrepo-c` package, the generator Fedora's own tooling uses). Here: reading
//! `repomd.xml` and the `primary` metadata with an XML parser, checking the files
//! `repomd.xml` lists, and running the two tools.

use std::io::{self, Write};
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use quick_xml::events::{BytesStart, Event};

use crate::Error;

/// Why RPM metadata cannot be read, or an RPM tool failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RpmError {
    /// The text is not well-formed XML.
    #[error("malformed XML at byte {position}")]
    Xml {
        /// Where the reader stopped.
        position: u64,
        /// The parser's error.
        #[source]
        source: quick_xml::Error,
    },
    /// The document is not of the expected kind.
    #[error("no `<{0}>` element")]
    NoRoot(&'static str),
    /// A `<data>` entry of `repomd.xml` has no `type`.
    #[error("a `<data>` without `type`")]
    DataWithoutType,
    /// A `<data>` entry lacks an element.
    #[error("`{kind}` has no `<{element}>`")]
    DataWithout {
        /// Its type.
        kind: String,
        /// `checksum` or `location`.
        element: &'static str,
    },
    /// A `<data>` entry's element lacks an attribute.
    #[error("`{kind}` has {what}")]
    DataIncomplete {
        /// Its type.
        kind: String,
        /// What is missing: a checksum without `type`, a location without `href`.
        what: &'static str,
    },
    /// A `<data>` entry's file is not directly in `repodata/`.
    #[error("`{kind}` is at `{href}`, not a file directly in `repodata/`")]
    OutsideRepodata {
        /// Its type.
        kind: String,
        /// Its location.
        href: String,
    },
    /// A `<package>` of the primary metadata is incomplete.
    #[error("a package {what}")]
    PackageIncomplete {
        /// What is missing: `without <checksum>`, `checksum without type`, ...
        what: &'static str,
    },
    /// A `repomd.xml` records a checksum of an unknown algorithm.
    #[error("`{href}` uses the checksum type `{kind}`, which is not supported")]
    ChecksumType {
        /// The file.
        href: String,
        /// The algorithm.
        kind: String,
    },
    /// A metadata file is compressed in an unknown way.
    #[error("`{name}` is compressed in a way this tool does not read")]
    Compression {
        /// The file.
        name: String,
    },
    /// A metadata file cannot be decompressed.
    #[error("`{name}`")]
    Decompress {
        /// The file.
        name: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// `repomd.xml` lists no primary metadata.
    #[error("`{path}` lists no primary metadata")]
    NoPrimary {
        /// The `repomd.xml`.
        path: String,
    },
    /// A tool could not be started.
    #[error("Failed to run `{program}` (is it installed? Debian/Ubuntu: createrepo-c)")]
    ToolMissing {
        /// The tool.
        program: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A tool failed.
    #[error("`{command}` failed ({status})")]
    ToolFailed {
        /// The command line.
        command: String,
        /// How it ended.
        status: ExitStatus,
    },
}

/// One `<data>` entry of `repomd.xml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepomdEntry {
    /// Its `type` (`primary`, `filelists`, ...).
    pub kind: String,
    /// Its `location href`, relative to the repository root (`repodata/...`).
    pub href: String,
    /// The checksum algorithm (`sha256`, ...).
    pub checksum_type: String,
    /// The checksum of the stored (compressed) file, lowercase hex.
    pub checksum: String,
}

/// One package of a `primary` metadata file: where it is and the checksum recorded for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrimaryPackage {
    /// Its `location href`, relative to the repository root.
    pub href: String,
    /// The checksum algorithm (`sha256`, ...).
    pub checksum_type: String,
    /// The checksum of the package file, lowercase hex.
    pub checksum: String,
}

/// What an entry (`<data>` or `<package>`) holds, as its child elements say.
#[derive(Debug, Default)]
struct Entry {
    /// Its `type` attribute.
    kind: Option<String>,
    /// Whether it has a `<checksum>` child.
    has_checksum: bool,
    /// The `type` of its `<checksum>`.
    checksum_type: Option<String>,
    /// The text of its `<checksum>`.
    checksum: String,
    /// Whether it has a `<location>` child.
    has_location: bool,
    /// The `href` of its `<location>`.
    href: Option<String>,
}

/// The value of the attribute `name` of `element`, unescaped; `None` when it has none.
fn attribute(element: &BytesStart<'_>, name: &str) -> Result<Option<String>, quick_xml::Error> {
    match element.try_get_attribute(name)? {
        Some(attribute) => Ok(Some(
            attribute
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)?
                .into_owned(),
        )),
        None => Ok(None),
    }
}

/// The entries (children named `entry` of the root element named `root`) of the XML text
/// `xml`: their `type`, and the `<checksum>` and `<location>` among their direct children.
fn entries(xml: &str, root: &'static str, entry: &str) -> Result<Vec<Entry>, RpmError> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut out = Vec::new();
    // The local names of the open elements.
    let mut open: Vec<Vec<u8>> = Vec::new();
    let mut current: Option<Entry> = None;
    let mut in_checksum = false;
    let mut seen_root = false;
    let malformed = |reader: &quick_xml::Reader<&[u8]>, source| RpmError::Xml {
        position: reader.buffer_position(),
        source,
    };
    loop {
        let event = reader.read_event().map_err(|e| malformed(&reader, e))?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let name = e.local_name().as_ref().to_vec();
                if open.is_empty() {
                    if seen_root || name != root.as_bytes() {
                        return Err(RpmError::NoRoot(root));
                    }
                    seen_root = true;
                }
                let read = |name: &str| attribute(e, name).map_err(|err| malformed(&reader, err));
                match (open.len(), current.as_mut()) {
                    (1, _) if name == entry.as_bytes() => {
                        current = Some(Entry {
                            kind: read("type")?,
                            ..Entry::default()
                        });
                    }
                    (2, Some(item)) if name == b"checksum" && !item.has_checksum => {
                        item.has_checksum = true;
                        item.checksum_type = read("type")?;
                        in_checksum = matches!(event, Event::Start(_));
                    }
                    (2, Some(item)) if name == b"location" && !item.has_location => {
                        item.has_location = true;
                        item.href = read("href")?;
                    }
                    _ => {}
                }
                if matches!(event, Event::Start(_)) {
                    open.push(name);
                } else if open.len() == 1 && name == entry.as_bytes() {
                    out.extend(current.take());
                }
            }
            Event::Text(ref text) if in_checksum => {
                let text = text.decode().map_err(|e| malformed(&reader, e.into()))?;
                if let Some(item) = current.as_mut() {
                    item.checksum.push_str(&text);
                }
            }
            Event::End(_) => {
                in_checksum = false;
                open.pop();
                if open.len() == 1 {
                    out.extend(current.take());
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root {
        return Err(RpmError::NoRoot(root));
    }
    Ok(out)
}

/// The `<data>` entries of the `repomd.xml` text `text`. Every entry needs a type, a
/// checksum and a location below `repodata/` with a plain file name.
pub fn parse_repomd(text: &str) -> Result<Vec<RepomdEntry>, RpmError> {
    let mut out = Vec::new();
    for entry in entries(text, "repomd", "data")? {
        let kind = entry.kind.ok_or(RpmError::DataWithoutType)?;
        let without = |element| RpmError::DataWithout {
            kind: kind.clone(),
            element,
        };
        let incomplete = |what| RpmError::DataIncomplete {
            kind: kind.clone(),
            what,
        };
        if !entry.has_checksum {
            return Err(without("checksum"));
        }
        let checksum_type = entry
            .checksum_type
            .ok_or_else(|| incomplete("a checksum without `type`"))?;
        if !entry.has_location {
            return Err(without("location"));
        }
        let href = entry
            .href
            .ok_or_else(|| incomplete("a location without `href`"))?;
        let name = href.strip_prefix("repodata/").unwrap_or_default();
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(RpmError::OutsideRepodata { kind, href });
        }
        out.push(RepomdEntry {
            kind,
            href,
            checksum_type,
            checksum: entry.checksum.trim().to_ascii_lowercase(),
        });
    }
    Ok(out)
}

/// Whether `data` has the checksum `entry` records.
pub fn checksum_matches(entry: &RepomdEntry, data: &[u8]) -> Result<bool, RpmError> {
    use md5::Digest as _;
    let actual = match entry.checksum_type.as_str() {
        "sha256" => hex::encode(<sha2::Sha256 as sha2::Digest>::digest(data)),
        "sha" | "sha1" => hex::encode(sha1::Sha1::digest(data)),
        "md5" => hex::encode(md5::Md5::digest(data)),
        other => {
            return Err(RpmError::ChecksumType {
                href: entry.href.clone(),
                kind: other.to_owned(),
            });
        }
    };
    Ok(actual == entry.checksum)
}

/// The packages of the `primary` metadata text `xml`.
pub fn parse_primary(xml: &str) -> Result<Vec<PrimaryPackage>, RpmError> {
    let mut out = Vec::new();
    for entry in entries(xml, "metadata", "package")? {
        let incomplete = |what| RpmError::PackageIncomplete { what };
        if !entry.has_checksum {
            return Err(incomplete("without `<checksum>`"));
        }
        let checksum_type = entry
            .checksum_type
            .ok_or_else(|| incomplete("checksum without `type`"))?;
        if !entry.has_location {
            return Err(incomplete("without `<location>`"));
        }
        let href = entry
            .href
            .ok_or_else(|| incomplete("location without `href`"))?;
        out.push(PrimaryPackage {
            href,
            checksum_type,
            checksum: entry.checksum.trim().to_ascii_lowercase(),
        });
    }
    Ok(out)
}

/// The text of a metadata file stored compressed as its name says (`.gz`, `.xz`, `.zst`, or
/// plain).
pub fn decompress(name: &str, mut data: &[u8]) -> Result<String, RpmError> {
    use std::io::Read as _;
    let mut text = String::new();
    let extension = Path::new(name)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let result = match extension.as_str() {
        "gz" => flate2::read::GzDecoder::new(data).read_to_string(&mut text),
        "xz" => liblzma::read::XzDecoder::new(data).read_to_string(&mut text),
        "zst" => {
            zstd::stream::read::Decoder::new(data).and_then(|mut d| d.read_to_string(&mut text))
        }
        "xml" => data.read_to_string(&mut text),
        _ => {
            return Err(RpmError::Compression { name: name.into() });
        }
    };
    result.map_err(|source| RpmError::Decompress {
        name: name.into(),
        source,
    })?;
    Ok(text)
}

/// The packages the `primary` file of the repository in `dir` (the one its
/// `repodata/repomd.xml` lists) holds. Reads files: call it off the async threads.
pub fn primary_of_repo(dir: &Path) -> Result<Vec<PrimaryPackage>, Error> {
    let repomd_path = dir.join("repodata").join("repomd.xml");
    let repomd = fs_err::read_to_string(&repomd_path)?;
    let shown = repomd_path.display().to_string();
    let entries = parse_repomd(&repomd).map_err(|e| Error::within(&shown, e))?;
    let primary = entries
        .iter()
        .find(|e| e.kind == "primary")
        .ok_or(RpmError::NoPrimary { path: shown })?;
    let path = dir.join(&primary.href);
    let text = decompress(&primary.href, &fs_err::read(&path)?)?;
    parse_primary(&text).map_err(|e| Error::within(path.display().to_string(), e))
}

/// Runs `program` with `args` in `cwd`, printing `Running: …` to `log` first; its output goes
/// to stderr. A missing program or a failed run is an error naming it.
pub async fn run_tool(
    program: &str,
    args: &[&str],
    cwd: &Path,
    log: &mut dyn Write,
) -> Result<(), Error> {
    let command = format!("{program} {}", args.join(" "));
    writeln!(log, "Running: {command}").map_err(Error::Output)?;
    let mut child = std::process::Command::new(program);
    child
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(io::stderr()));
    let program = program.to_owned();
    let status = storage_backend::blocking(move || child.status())
        .await
        .map_err(|source| RpmError::ToolMissing { program, source })?;
    if !status.success() {
        return Err(RpmError::ToolFailed { command, status }.into());
    }
    Ok(())
}

/// Writes the metadata of the packages in `dir` into `dir/repodata`, with content-addressed
/// file names.
pub async fn createrepo(dir: &Path, log: &mut dyn Write) -> Result<(), Error> {
    run_tool("createrepo_c", &["--no-database", "."], dir, log).await
}

/// Merges the repositories `old` and `new` (each a directory with `repodata/`) into
/// `merged/repodata`, keeping every version of a package (`--all`), with content-addressed
/// file names and locations relative to the repository.
pub async fn mergerepo(
    old: &Path,
    new: &Path,
    merged: &Path,
    log: &mut dyn Write,
) -> Result<(), Error> {
    let (old, new, merged) = (
        old.to_string_lossy(),
        new.to_string_lossy(),
        merged.to_string_lossy(),
    );
    run_tool(
        "mergerepo_c",
        &[
            "--no-database",
            "--omit-baseurl",
            "--all",
            "--repo",
            &old,
            "--repo",
            &new,
            "--outputdir",
            &merged,
        ],
        Path::new("/"),
        log,
    )
    .await
}

#[cfg(test)]
mod tests;
