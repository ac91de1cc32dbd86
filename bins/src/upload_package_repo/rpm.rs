//! RPM repository metadata: `createrepo_c` writes the metadata of new packages and
//! `mergerepo_c` merges it with the repository already published (both from the
//! `createrepo-c` package, the generator Fedora's own tooling uses). Here: reading
//! `repomd.xml`, checking the files it lists, and running the two tools.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

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

fn attribute(tag: &str, name: &str) -> Option<String> {
    let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_owned())
}

/// The `<data>` entries of the `repomd.xml` text `text`. Every entry needs a type, a
/// checksum and a location below `repodata/` with a plain file name.
pub fn parse_repomd(text: &str) -> Result<Vec<RepomdEntry>, String> {
    if !text.contains("<repomd") {
        return Err("no `<repomd>` element".into());
    }
    let mut out = Vec::new();
    for block in text.split("<data ").skip(1) {
        let block = block.split("</data>").next().unwrap_or_default();
        let head = block.split('>').next().unwrap_or_default();
        let kind = attribute(head, "type").ok_or("a `<data>` without `type`")?;
        let checksum_at = block
            .find("<checksum ")
            .ok_or_else(|| format!("`{kind}` has no `<checksum>`"))?;
        let checksum_tag = &block[checksum_at..];
        let checksum_type = attribute(checksum_tag.split('>').next().unwrap_or_default(), "type")
            .ok_or_else(|| format!("`{kind}` has a checksum without `type`"))?;
        let checksum = checksum_tag
            .split_once('>')
            .and_then(|(_, rest)| rest.split_once('<'))
            .map(|(value, _)| value.trim().to_ascii_lowercase())
            .ok_or_else(|| format!("`{kind}` has an unreadable `<checksum>`"))?;
        let location_at = block
            .find("<location ")
            .ok_or_else(|| format!("`{kind}` has no `<location>`"))?;
        let href = attribute(&block[location_at..], "href")
            .ok_or_else(|| format!("`{kind}` has a location without `href`"))?;
        let name = href.strip_prefix("repodata/").unwrap_or_default();
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(format!(
                "`{kind}` is at `{href}`, not a file directly in `repodata/`"
            ));
        }
        out.push(RepomdEntry {
            kind,
            href,
            checksum_type,
            checksum,
        });
    }
    Ok(out)
}

/// Whether `data` has the checksum `entry` records.
pub fn checksum_matches(entry: &RepomdEntry, data: &[u8]) -> Result<bool, String> {
    use md5::Digest as _;
    let actual = match entry.checksum_type.as_str() {
        "sha256" => hex::encode(<sha2::Sha256 as sha2::Digest>::digest(data)),
        "sha" | "sha1" => hex::encode(sha1::Sha1::digest(data)),
        "md5" => hex::encode(md5::Md5::digest(data)),
        other => {
            return Err(format!(
                "`{}` uses the checksum type `{other}`, which is not supported",
                entry.href
            ));
        }
    };
    Ok(actual == entry.checksum)
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

/// `text` with the five predefined XML entities replaced.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The packages of the `primary` metadata text `xml`.
pub fn parse_primary(xml: &str) -> Result<Vec<PrimaryPackage>, String> {
    if !xml.contains("<metadata") {
        return Err("no `<metadata>` element".into());
    }
    let mut out = Vec::new();
    for block in xml.split("<package ").skip(1) {
        let block = block.split("</package>").next().unwrap_or_default();
        let checksum_at = block
            .find("<checksum ")
            .ok_or("a package without `<checksum>`")?;
        let checksum_tag = &block[checksum_at..];
        let checksum_type = attribute(checksum_tag.split('>').next().unwrap_or_default(), "type")
            .ok_or("a package checksum without `type`")?;
        let checksum = checksum_tag
            .split_once('>')
            .and_then(|(_, rest)| rest.split_once('<'))
            .map(|(value, _)| value.trim().to_ascii_lowercase())
            .ok_or("an unreadable package `<checksum>`")?;
        let location_at = block
            .find("<location ")
            .ok_or("a package without `<location>`")?;
        let href =
            attribute(&block[location_at..], "href").ok_or("a package location without `href`")?;
        out.push(PrimaryPackage {
            href: unescape(&href),
            checksum_type,
            checksum,
        });
    }
    Ok(out)
}

/// The text of a metadata file stored compressed as its name says (`.gz`, `.xz`, `.zst`, or
/// plain).
pub fn decompress(name: &str, mut data: &[u8]) -> Result<String, String> {
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
            return Err(format!(
                "`{name}` is compressed in a way this tool does not read"
            ));
        }
    };
    result.map_err(|e| format!("`{name}`: {e}"))?;
    Ok(text)
}

/// The packages the `primary` file of the repository in `dir` (the one its
/// `repodata/repomd.xml` lists) holds.
pub fn primary_of_repo(dir: &Path) -> anyhow::Result<Vec<PrimaryPackage>> {
    let repomd_path = dir.join("repodata/repomd.xml");
    let repomd = fs_err::read_to_string(&repomd_path)?;
    let entries =
        parse_repomd(&repomd).map_err(|e| anyhow::anyhow!("`{}`: {e}", repomd_path.display()))?;
    let primary = entries
        .iter()
        .find(|e| e.kind == "primary")
        .with_context(|| format!("`{}` lists no primary metadata", repomd_path.display()))?;
    let path = dir.join(&primary.href);
    let text = decompress(&primary.href, &fs_err::read(&path)?).map_err(|e| anyhow::anyhow!(e))?;
    parse_primary(&text).map_err(|e| anyhow::anyhow!("`{}`: {e}", path.display()))
}

/// Runs `program` with `args` in `cwd`, printing `Running: …` to `out` first; its output goes
/// to stderr. A missing program or a failed run is an error naming it.
pub fn run_tool(
    program: &str,
    args: &[&str],
    cwd: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(out, "Running: {program} {}", args.join(" "))?;
    let status = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .with_context(|| {
            format!("Failed to run `{program}` (is it installed? Debian/Ubuntu: createrepo-c)")
        })?;
    if !status.success() {
        bail!("`{program} {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Writes the metadata of the packages in `dir` into `dir/repodata`, with content-addressed
/// file names.
pub fn createrepo(dir: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    run_tool("createrepo_c", &["--no-database", "."], dir, out)
}

/// Merges the repositories `old` and `new` (each a directory with `repodata/`) into
/// `merged/repodata`, keeping every version of a package (`--all`), with content-addressed
/// file names and locations relative to the repository.
pub fn mergerepo(old: &Path, new: &Path, merged: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
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
        out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPOMD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<repomd xmlns="http://linux.duke.edu/metadata/repo" xmlns:rpm="http://linux.duke.edu/metadata/rpm">
  <revision>1</revision>
  <data type="primary">
    <checksum type="sha256">AB12</checksum>
    <open-checksum type="sha256">ffff</open-checksum>
    <location href="repodata/ab12-primary.xml.gz"/>
    <size>652</size>
  </data>
  <data type="other">
    <checksum type="sha">cd</checksum>
    <location href="repodata/other.xml.gz"/>
  </data>
</repomd>
"#;

    #[test]
    fn primary_packages() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<metadata xmlns="http://linux.duke.edu/metadata/common" packages="2">
<package type="rpm">
  <name>a</name>
  <checksum type="sha256" pkgid="YES">AB</checksum>
  <location href="a-1.0-1.x86_64.rpm"/>
</package>
<package type="rpm">
  <name>b</name>
  <checksum type="sha" pkgid="YES">cd</checksum>
  <location href="sub/b&amp;c-1.0-1.x86_64.rpm"/>
</package>
</metadata>
"#;
        assert_eq!(
            parse_primary(xml).unwrap(),
            [
                PrimaryPackage {
                    href: "a-1.0-1.x86_64.rpm".into(),
                    checksum_type: "sha256".into(),
                    checksum: "ab".into(),
                },
                PrimaryPackage {
                    href: "sub/b&c-1.0-1.x86_64.rpm".into(),
                    checksum_type: "sha".into(),
                    checksum: "cd".into(),
                },
            ]
        );
        assert!(parse_primary("<repomd/>").is_err());
        assert!(
            parse_primary("<metadata><package type=\"rpm\"><name>x</name></package></metadata>")
                .unwrap_err()
                .contains("without `<checksum>`")
        );
        let gz = super::super::deb::gzip(xml.as_bytes()).unwrap();
        assert_eq!(decompress("x-primary.xml.gz", &gz).unwrap(), xml);
        assert!(decompress("x-primary.xml.bz2", b"").is_err());
    }

    #[test]
    fn repomd_entries() {
        let entries = parse_repomd(REPOMD).unwrap();
        assert_eq!(
            entries[0],
            RepomdEntry {
                kind: "primary".into(),
                href: "repodata/ab12-primary.xml.gz".into(),
                checksum_type: "sha256".into(),
                checksum: "ab12".into(),
            }
        );
        assert_eq!(entries[1].checksum_type, "sha");
        assert!(parse_repomd("<html/>").is_err());
        let outside = REPOMD.replace("repodata/other.xml.gz", "../x");
        assert!(
            parse_repomd(&outside)
                .unwrap_err()
                .contains("not a file directly")
        );
        let e = RepomdEntry {
            kind: "x".into(),
            href: "repodata/x".into(),
            checksum_type: "sha256".into(),
            checksum: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into(),
        };
        assert_eq!(checksum_matches(&e, b"abc"), Ok(true));
        assert_eq!(checksum_matches(&e, b"abd"), Ok(false));
    }
}
