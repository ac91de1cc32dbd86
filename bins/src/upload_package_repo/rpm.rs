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
