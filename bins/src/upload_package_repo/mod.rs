//! `upload_package_repo`: turns a directory of built `.deb` or `.rpm` packages into an APT or
//! YUM/DNF repository in the run's S3 prefix, merged with the repository already there
//! (spec §8, weaknesses §11.5).
//!
//! Publishing never shows a client an index that points at a missing or different file: the
//! packages go up first, then the content-addressed index files (`by-hash/SHA256/…` for APT,
//! `repodata/{sha256}-*.xml.gz` for RPM), then the top index (`Release`, `repomd.xml`), which
//! is written only if it is still the version the merge started from (`If-Match` /
//! `If-None-Match`). When another publisher got there first the merge is done again on top of
//! its index, so neither loses packages. An existing index that cannot be read, or that does
//! not match the checksums its top index lists, is an error, never "no repository yet".

pub mod deb;
pub mod rpm;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use file_tree::FileError;
use storage_backend::{
    S3ErrorKind, S3StorageBackend, StorageBackend, TransferOptions, WriteCondition,
};
use storage_location::StorageLocation;
use workflow_outputs::{Platform, WorkflowOutputRoot};

use crate::{RunRequest, resolve_run_root};

/// How often the merge is done again when other publishers keep replacing the top index.
pub const PUBLISH_ATTEMPTS: usize = 5;

/// Where the APT indexes are, below the repository root.
const DEB_BINARY_DIR: &str = "dists/stable/main/binary-amd64";
/// The `Release` file, below the repository root.
const DEB_RELEASE: &str = "dists/stable/Release";
/// The package directory of the APT repository.
const DEB_POOL: &str = "pool/main";
/// The architecture directory of the RPM repository.
const RPM_ARCH_DIR: &str = "x86_64";
/// The metadata directory of the RPM repository, below the repository root.
const RPM_REPODATA: &str = "x86_64/repodata";

/// `--pkg-type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PkgType {
    /// An APT repository of `.deb` packages.
    Deb,
    /// A YUM/DNF repository of `.rpm` packages.
    Rpm,
}

impl PkgType {
    /// `deb` or `rpm`.
    pub fn name(self) -> &'static str {
        match self {
            PkgType::Deb => "deb",
            PkgType::Rpm => "rpm",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            PkgType::Deb => ".deb",
            PkgType::Rpm => ".rpm",
        }
    }
}

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The kind of repository.
    pub pkg_type: PkgType,
    /// The run whose prefix receives the repository.
    pub run_id: String,
    /// The directory of built packages (its files are moved into the repository layout).
    pub package_dir: PathBuf,
    /// No progress bars.
    pub quiet: bool,
}

/// A package file of this run that the published index lists: the local file and its path
/// below the repository root.
#[derive(Debug, Clone)]
struct Indexed {
    path: PathBuf,
    rel: String,
}

/// The URL clients install from: the repository root for APT, its `x86_64` directory (the one
/// holding `repodata/`) for RPM.
pub fn install_url(location: &StorageLocation, pkg_type: PkgType) -> String {
    match pkg_type {
        PkgType::Deb => location.https_url(),
        PkgType::Rpm => format!("{}/{RPM_ARCH_DIR}", location.https_url()),
    }
}

/// The step summary: how to add the repository and install from it, and the logs' link.
pub fn summary(pkg_type: PkgType, url: &str, logs_url: Option<&str>) -> String {
    let fence = "```";
    let body = match pkg_type {
        PkgType::Deb => format!(
            "# Add the repository\necho \"deb [trusted=yes] {url} stable main\" | \\\n    sudo tee /etc/apt/sources.list.d/therock.list\nsudo apt update\n\n# Install packages\nsudo apt install <package-name>"
        ),
        PkgType::Rpm => format!(
            "# Add the repository\nsudo tee /etc/yum.repos.d/therock.repo << 'EOF'\n[therock]\nname=TheRock\nbaseurl={url}\nenabled=1\ngpgcheck=0\nEOF\n\n# Install packages\nsudo dnf install <package-name>"
        ),
    };
    let mut text = format!(
        "### {} Package Build Results\n\n[Package Repository]({url})\n\n{fence}bash\n{body}\n{fence}\n",
        pkg_type.name().to_uppercase()
    );
    if let Some(logs) = logs_url {
        let _ = write!(text, "\n[Packaging Logs]({logs})\n");
    }
    text
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Moves the top-level packages of `dir` into the repository layout (`pool/main/` for deb,
/// `x86_64/` for rpm), replacing files of the same name there.
fn arrange(dir: &Path, pkg_type: PkgType, out: &mut dyn Write) -> anyhow::Result<()> {
    let target = match pkg_type {
        PkgType::Deb => {
            writeln!(out, "Creating APT repository...")?;
            fs_err::create_dir_all(dir.join(DEB_BINARY_DIR))?;
            dir.join(DEB_POOL)
        }
        PkgType::Rpm => {
            writeln!(out, "Creating RPM repository...")?;
            dir.join(RPM_ARCH_DIR)
        }
    };
    fs_err::create_dir_all(&target)?;
    for entry in file_tree::list(dir)? {
        if entry.is_file && !entry.is_symlink && entry.name().ends_with(pkg_type.suffix()) {
            let to = target.join(entry.name());
            fs_err::rename(&entry.path, &to).map_err(|e| FileError::write(&to, e))?;
        }
    }
    Ok(())
}

/// A file the upload walk leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Skip {
    /// Without a word (`index.html`: the bucket makes its own indexes).
    Silently,
    /// With this line.
    Saying(String),
}

/// Whether the file name is a package's, as the reference's case-sensitive suffix test says.
#[expect(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the reference's suffix tests are case-sensitive"
)]
fn is_package(name: &str) -> bool {
    name.ends_with(".deb") || name.ends_with(".rpm")
}

/// Why the upload walk leaves a file out, as the reference says it; `None` to upload it.
fn skip_reason(name: &str, key: &str) -> Option<Skip> {
    if name == "index.html" {
        return Some(Skip::Silently);
    }
    if name.to_ascii_lowercase().ends_with(".txt") {
        return Some(Skip::Saying(format!(
            "Skipping build manifest file (local only): {name}"
        )));
    }
    let metadata = key.contains("/repodata/")
        || key.ends_with("/repodata")
        || (key.contains("/dists/")
            && ["Packages", "Packages.gz", "Release", "InRelease"].contains(&name));
    metadata.then(|| Skip::Saying(format!("Skipping metadata file (will regenerate): {name}")))
}

/// Uploads the package directory (packages first, skipping those already published with the
/// same content) and returns the packages the index must list.
async fn upload_walk(
    backend: &StorageBackend,
    s3: &S3StorageBackend,
    dir: &Path,
    location: &StorageLocation,
    pkg_type: PkgType,
    out: &mut dyn Write,
) -> anyhow::Result<Vec<Indexed>> {
    writeln!(out, "Uploading to {}/", location.s3_uri())?;
    writeln!(out, "Deduplication: ON")?;
    let (mut packages, mut others, mut indexed, mut skipped) =
        (Vec::new(), Vec::new(), Vec::new(), 0usize);
    for entry in file_tree::walk(dir)? {
        if entry.is_dir || entry.is_symlink {
            continue;
        }
        let (name, rel) = (entry.name().to_owned(), entry.relative());
        let dest = location.join(&rel);
        if let Some(skip) = skip_reason(&name, dest.relative_path()) {
            if let Skip::Saying(line) = skip {
                writeln!(out, "{line}")?;
            }
            continue;
        }
        if !is_package(&name) {
            writeln!(out, "Uploading: {}", dest.relative_path())?;
            others.push((entry.path, dest));
            continue;
        }
        let listed = name.ends_with(pkg_type.suffix())
            && match pkg_type {
                PkgType::Deb => true,
                PkgType::Rpm => rel == format!("{RPM_ARCH_DIR}/{name}"),
            };
        let sha = storage_backend::sha256_file(&entry.path).await?;
        if let Some(head) = s3.head_object(&dest).await? {
            writeln!(out, "Skipping existing package: {name}")?;
            skipped += 1;
            if head.sha256.as_deref() == Some(sha.as_str()) {
                if listed {
                    indexed.push(Indexed {
                        path: entry.path,
                        rel,
                    });
                }
            } else {
                writeln!(
                    out,
                    "  the published {name} differs from the local file (or was uploaded without a recorded SHA-256): it is kept, and so is its index entry"
                )?;
            }
        } else {
            writeln!(out, "Uploading: {}", dest.relative_path())?;
            if listed {
                indexed.push(Indexed {
                    path: entry.path.clone(),
                    rel,
                });
            } else {
                writeln!(
                    out,
                    "  {name} is outside the repository layout: uploaded, not indexed"
                )?;
            }
            packages.push((entry.path, dest));
        }
    }
    let names: Vec<String> = packages.iter().map(|(p, _)| file_name(p)).collect();
    let report = backend
        .upload_files(packages)
        .await
        .context("Failed to upload the packages; the published index was not changed")?;
    let rest = backend
        .upload_files(others)
        .await
        .context("Failed to upload the other files of the package directory; the published index was not changed")?;
    writeln!(
        out,
        "Uploaded: {}, Skipped: {skipped}",
        report.transferred + rest.transferred
    )?;
    if !names.is_empty() {
        let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
        writeln!(out, "Uploaded packages: [{}]", quoted.join(", "))?;
    }
    Ok(indexed)
}

/// Whether `err` is an S3 conditional request that found the object changed.
fn is_conflict(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<storage_backend::Error>()
            .is_some_and(|e| e.s3_kind() == Some(S3ErrorKind::Conflict))
    })
}

/// The current version of the top index at `loc`: its bytes and the condition that a write
/// replacing exactly that version needs; `None` bytes (and "absent") when there is none.
async fn read_top(
    s3: &S3StorageBackend,
    loc: &StorageLocation,
) -> anyhow::Result<(Option<Vec<u8>>, WriteCondition)> {
    let Some(head) = s3
        .head_object(loc)
        .await
        .with_context(|| format!("Failed to read `{}`", loc.s3_uri()))?
    else {
        return Ok((None, WriteCondition::Absent));
    };
    let body = s3
        .get(loc, None, Some(&head.etag))
        .await
        .with_context(|| format!("Failed to read `{}`", loc.s3_uri()))?;
    let parts = body
        .collect()
        .await
        .with_context(|| format!("Failed to read `{}`", loc.s3_uri()))?;
    Ok((Some(parts.concat()), WriteCondition::Matches(head.etag)))
}

/// An object the top index lists: it must be there.
async fn read_listed(
    s3: &S3StorageBackend,
    loc: &StorageLocation,
    by: &str,
) -> anyhow::Result<Vec<u8>> {
    s3.get_small(loc)
        .await
        .with_context(|| format!("Failed to read `{}`", loc.s3_uri()))?
        .with_context(|| format!("`{by}` lists `{}`, which is missing", loc.s3_uri()))
}

/// The published `Packages` stanzas (none for a new repository) and the condition of the
/// write that replaces its `Release`.
async fn read_deb_index(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    out: &mut dyn Write,
) -> anyhow::Result<(Option<BTreeMap<String, String>>, WriteCondition)> {
    let release_loc = location.join(DEB_RELEASE);
    let packages_loc = location.join(&format!("{DEB_BINARY_DIR}/Packages"));
    writeln!(
        out,
        "Downloading existing Packages file from S3: {}",
        packages_loc.s3_uri()
    )?;
    let (release, condition) = read_top(s3, &release_loc).await?;
    let text = match release {
        None => {
            // No Release: a new repository, or one whose first publication stopped early.
            match s3
                .get_small(&packages_loc)
                .await
                .with_context(|| format!("Failed to read `{}`", packages_loc.s3_uri()))?
            {
                None => {
                    writeln!(out, "No existing repository (no Release, no Packages)")?;
                    return Ok((None, condition));
                }
                Some(bytes) => deb::utf8(bytes, &packages_loc.s3_uri())?,
            }
        }
        Some(bytes) => {
            let release = deb::utf8(bytes, &release_loc.s3_uri())?;
            let (entry, by_hash) = deb::release_entry(&release, "main/binary-amd64/Packages");
            let source = match &entry {
                Some(e) if by_hash => {
                    location.join(&format!("{DEB_BINARY_DIR}/by-hash/SHA256/{}", e.sha256))
                }
                _ => packages_loc.clone(),
            };
            let data = read_listed(s3, &source, &release_loc.s3_uri()).await?;
            if let Some(e) = &entry {
                let actual = deb::Digests::of(&data);
                if actual.sha256 != e.sha256 || actual.size != e.size {
                    bail!(
                        "`{}` does not match the SHA256 and size `{}` lists for it (another publisher may be writing the repository; run again)",
                        source.s3_uri(),
                        release_loc.s3_uri()
                    );
                }
            }
            deb::utf8(data, &source.s3_uri())?
        }
    };
    let stanzas = deb::parse_packages(&text)
        .map_err(|e| anyhow::anyhow!("`{}`: {e}", packages_loc.s3_uri()))
        .context("The published index cannot be read; it was left as it is")?;
    writeln!(
        out,
        "✅ Downloaded existing Packages file ({} packages)",
        stanzas.len()
    )?;
    Ok((Some(stanzas), condition))
}

/// `Date:` of a `Release` file: now, in UTC, with English names.
fn release_date() -> String {
    httpdate::fmt_http_date(std::time::SystemTime::now()).replace("GMT", "UTC")
}

/// Writes a content-addressed object; one already there under that name has these bytes.
async fn put_content_addressed(
    s3: &S3StorageBackend,
    data: Vec<u8>,
    dest: &StorageLocation,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match s3.put_bytes_if(data, dest, &WriteCondition::Absent).await {
        Ok(_) => writeln!(out, "  Uploaded: {}", dest.relative_path())?,
        Err(e) if e.s3_kind() == Some(S3ErrorKind::Conflict) => {
            writeln!(out, "  Already there: {}", dest.relative_path())?;
        }
        Err(e) => {
            return Err(anyhow::Error::new(e).context("The top index was not changed"));
        }
    }
    Ok(())
}

/// Writes the top index under `condition`: `Ok(false)` when someone else replaced it first.
async fn put_top(
    s3: &S3StorageBackend,
    data: Vec<u8>,
    dest: &StorageLocation,
    condition: &WriteCondition,
    attempt: usize,
    out: &mut dyn Write,
) -> anyhow::Result<bool> {
    match s3.put_bytes_if(data, dest, condition).await {
        Ok(_) => {
            writeln!(out, "  Uploaded: {}", dest.relative_path())?;
            Ok(true)
        }
        Err(e) if e.s3_kind() == Some(S3ErrorKind::Conflict) => {
            writeln!(
                out,
                "⚠️  Another publisher replaced {} meanwhile; merging again on top of it ({attempt}/{PUBLISH_ATTEMPTS})",
                dest.relative_path()
            )?;
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// The error after every attempt lost to other publishers.
fn gave_up(top: &StorageLocation) -> anyhow::Error {
    anyhow::anyhow!(
        "`{}` was replaced by other publishers {PUBLISH_ATTEMPTS} times while this run merged into it; the packages are uploaded but not listed: run again",
        top.s3_uri()
    )
}

/// Merges this run's packages into the published APT index and publishes it: by-hash files,
/// then `Release` (conditional), then the plain `Packages` and `Packages.gz`.
async fn publish_deb(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    indexed: &[Indexed],
    job_type: &str,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "Updating DEB repository metadata (merge mode with checksums)..."
    )?;
    if indexed.is_empty() {
        writeln!(out, "No new DEB packages uploaded (all deduplicated)")?;
        writeln!(out, "The published metadata is left as it is")?;
        return Ok(());
    }
    let mut new = BTreeMap::new();
    for package in indexed {
        new.insert(
            package.rel.clone(),
            deb::stanza_of_file(&package.path, &package.rel)?,
        );
    }
    writeln!(
        out,
        "Generated Packages entries for {} DEB packages",
        new.len()
    )?;
    let release_loc = location.join(DEB_RELEASE);
    let binary = location.join(DEB_BINARY_DIR);
    for attempt in 1..=PUBLISH_ATTEMPTS {
        let (old, condition) = match read_deb_index(s3, location, out).await {
            Err(e) if is_conflict(&e) => continue,
            other => other?,
        };
        let merged = if let Some(mut stanzas) = old {
            writeln!(out, "Merging old and new Packages files...")?;
            writeln!(out, "  Old metadata: {} packages", stanzas.len())?;
            writeln!(out, "  New metadata: {} packages", new.len())?;
            stanzas.extend(new.clone());
            writeln!(
                out,
                "✅ Merged Packages files: {} total packages",
                stanzas.len()
            )?;
            stanzas
        } else {
            writeln!(out, "First upload - using new Packages file")?;
            new.clone()
        };
        let packages = deb::packages_text(&merged).into_bytes();
        let gz = deb::gzip(&packages)?;
        let (pd, gd) = (deb::Digests::of(&packages), deb::Digests::of(&gz));
        let release = deb::release_text(
            job_type,
            &release_date(),
            &[
                ("main/binary-amd64/Packages", &pd),
                ("main/binary-amd64/Packages.gz", &gd),
            ],
        );
        writeln!(
            out,
            "✅ Release file generated with checksums: MD5, SHA1, SHA256"
        )?;
        for (data, digests) in [(&packages, &pd), (&gz, &gd)] {
            let dest = binary.join(&format!("by-hash/SHA256/{}", digests.sha256));
            put_content_addressed(s3, data.clone(), &dest, out).await?;
        }
        if !put_top(
            s3,
            release.into_bytes(),
            &release_loc,
            &condition,
            attempt,
            out,
        )
        .await?
        {
            continue;
        }
        // For clients that do not fetch by hash.
        s3.put_bytes(packages, &binary.join("Packages"))
            .await
            .context("`Release` is published; the plain `Packages` was not updated (clients fetching by hash are not affected)")?;
        s3.put_bytes(gz, &binary.join("Packages.gz"))
            .await
            .context("`Release` is published; the plain `Packages.gz` was not updated (clients fetching by hash are not affected)")?;
        writeln!(out, "✅ DEB repository metadata updated: 5 files")?;
        return Ok(());
    }
    Err(gave_up(&release_loc))
}

/// The published RPM metadata, checked against `repomd.xml` and written into `dir/repodata`,
/// and the condition of the write that replaces `repomd.xml`; `None` for a new repository.
async fn read_rpm_index(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    dir: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<(Option<PathBuf>, WriteCondition)> {
    let repomd_loc = location.join(&format!("{RPM_REPODATA}/repomd.xml"));
    writeln!(
        out,
        "Downloading existing repository metadata from S3: {}/",
        location.join(RPM_REPODATA).s3_uri()
    )?;
    let (repomd, condition) = read_top(s3, &repomd_loc).await?;
    let Some(repomd) = repomd else {
        writeln!(out, "No existing metadata files found")?;
        return Ok((None, condition));
    };
    let text = deb::utf8(repomd.clone(), &repomd_loc.s3_uri())?;
    let entries = rpm::parse_repomd(&text)
        .map_err(|e| anyhow::anyhow!("`{}`: {e}", repomd_loc.s3_uri()))
        .context("The published index cannot be read; it was left as it is")?;
    let repodata = dir.join("repodata");
    fs_err::create_dir_all(&repodata)?;
    for entry in &entries {
        let loc = location.join(&format!("{RPM_ARCH_DIR}/{}", entry.href));
        let data = read_listed(s3, &loc, &repomd_loc.s3_uri()).await?;
        if !rpm::checksum_matches(entry, &data).map_err(|e| anyhow::anyhow!(e))? {
            bail!(
                "`{}` does not match the checksum `{}` lists for it (another publisher may be writing the repository; run again)",
                loc.s3_uri(),
                repomd_loc.s3_uri()
            );
        }
        let path = dir.join(&entry.href);
        fs_err::write(&path, data)?;
        writeln!(out, "  Downloaded: {}", file_name(&path))?;
    }
    fs_err::write(repodata.join("repomd.xml"), repomd)?;
    writeln!(
        out,
        "✅ Found {} existing metadata files to merge",
        entries.len() + 1
    )?;
    Ok((Some(dir.to_path_buf()), condition))
}

/// Merges this run's packages into the published RPM metadata and publishes it: the
/// content-addressed metadata files, then `repomd.xml` (conditional).
async fn publish_rpm(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    indexed: &[Indexed],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(out, "Updating RPM repository metadata (merge mode)...")?;
    if indexed.is_empty() {
        writeln!(out, "No new RPM packages uploaded (all deduplicated)")?;
        writeln!(out, "The published metadata is left as it is")?;
        return Ok(());
    }
    let work = file_tree::temp_dir_in(&std::env::temp_dir(), "rock-ci-rpm-repo")
        .map_err(|e| FileError::write(std::env::temp_dir(), e))?;
    let new_repo = work.path().join("new");
    fs_err::create_dir_all(&new_repo)?;
    for package in indexed {
        let to = new_repo.join(file_name(&package.path));
        if fs_err::hard_link(&package.path, &to).is_err() {
            fs_err::copy(&package.path, &to)?;
        }
    }
    writeln!(
        out,
        "Generating metadata for {} uploaded RPM packages...",
        indexed.len()
    )?;
    let mut tool_log = std::io::stderr();
    rpm::createrepo(&new_repo, &mut tool_log)?;
    let repomd_loc = location.join(&format!("{RPM_REPODATA}/repomd.xml"));
    for attempt in 1..=PUBLISH_ATTEMPTS {
        let old_dir = work.path().join(format!("old-{attempt}"));
        let (old, condition) = match read_rpm_index(s3, location, &old_dir, out).await {
            Err(e) if is_conflict(&e) => continue,
            other => other?,
        };
        let repodata = if let Some(old) = old {
            writeln!(out, "Merging old and new repository metadata...")?;
            let merged = work.path().join(format!("merged-{attempt}"));
            rpm::mergerepo(&old, &new_repo, &merged, &mut tool_log)?;
            merged.join("repodata")
        } else {
            writeln!(out, "First upload - using new repository metadata")?;
            new_repo.join("repodata")
        };
        let mut files: Vec<PathBuf> = file_tree::list(&repodata)?
            .into_iter()
            .filter(|e| e.is_file && e.name() != "repomd.xml")
            .map(|e| e.path)
            .collect();
        files.sort();
        for file in &files {
            let dest = location.join(&format!("{RPM_REPODATA}/{}", file_name(file)));
            put_content_addressed(s3, fs_err::read(file)?, &dest, out).await?;
        }
        let repomd = fs_err::read(repodata.join("repomd.xml"))?;
        if put_top(s3, repomd, &repomd_loc, &condition, attempt, out).await? {
            writeln!(
                out,
                "✅ RPM repository metadata updated: {} files",
                files.len() + 1
            )?;
            return Ok(());
        }
    }
    Err(gave_up(&repomd_loc))
}

/// Uploads `{dir}/logs` to the packaging log directory when it holds `*.log` files; the URL of
/// its index page.
#[expect(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the reference's glob `*.log` is case-sensitive"
)]
async fn upload_logs(
    backend: &StorageBackend,
    dir: &Path,
    root: &WorkflowOutputRoot,
    pkg_type: PkgType,
    out: &mut dyn Write,
) -> anyhow::Result<Option<String>> {
    let logs = dir.join("logs");
    if !logs.is_dir() {
        writeln!(
            out,
            "[INFO] Log directory {} not found. Skipping log upload.",
            logs.display()
        )?;
        return Ok(None);
    }
    let count = file_tree::list(&logs)?
        .iter()
        .filter(|e| e.is_file && e.name().ends_with(".log"))
        .count();
    if count == 0 {
        writeln!(
            out,
            "[INFO] No log files found in {}. Skipping log upload.",
            logs.display()
        )?;
        return Ok(None);
    }
    writeln!(out, "Uploading {count} packaging log files...")?;
    let dest = root.native_linux_packages_log_dir(pkg_type.name());
    crate::uploads::upload_logs(backend, &logs, &dest, None, out).await?;
    let url = root
        .native_linux_packages_log_index(pkg_type.name())
        .https_url();
    writeln!(out, "Packaging logs uploaded to: {url}")?;
    Ok(Some(url))
}

/// Runs the whole job: progress to `out`, the bucket resolution to `log`.
pub async fn run(
    plan: &Plan,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> anyhow::Result<()> {
    let dir = crate::uploads::existing_dir(&plan.package_dir, "Package directory")?;
    let request = RunRequest {
        run_id: plan.run_id.clone(),
        platform: Platform::Linux,
        repository: None,
        release_type: None,
        lookup_workflow_run: false,
    };
    let (root, selection) = resolve_run_root(&request, lookup, log)?;
    let location = root.native_linux_packages(plan.pkg_type.name());
    let url = install_url(&location, plan.pkg_type);
    let job_type = lookup("RELEASE_TYPE").unwrap_or_else(|| "ci".to_owned());

    arrange(&dir, plan.pkg_type, out)?;
    let backend = crate::uploads::backend(
        None,
        TransferOptions::default(),
        selection.config().region(),
        plan.quiet,
        lookup,
    )
    .await?;
    let StorageBackend::S3(s3) = &backend else {
        bail!("upload_package_repo publishes to S3 only");
    };
    let indexed = upload_walk(&backend, s3, &dir, &location, plan.pkg_type, out).await?;
    match plan.pkg_type {
        PkgType::Deb => publish_deb(s3, &location, &indexed, &job_type, out).await?,
        PkgType::Rpm => publish_rpm(s3, &location, &indexed, out).await?,
    }

    writeln!(out, "Package repository URL: {url}")?;
    github_actions::set_outputs_with(&[("package_repository_url", &url)], lookup)?;
    let logs_url = upload_logs(&backend, &dir, &root, plan.pkg_type, out).await?;
    if let Some(logs_url) = &logs_url {
        github_actions::set_outputs_with(&[("packaging_logs_url", logs_url)], lookup)?;
    }
    github_actions::append_step_summary_with(
        &summary(plan.pkg_type, &url, logs_url.as_deref()),
        lookup,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_rules() {
        let cases = [
            ("index.html", "p/index.html", Some(Skip::Silently)),
            (
                "MANIFEST.TXT",
                "p/MANIFEST.TXT",
                Some(Skip::Saying(
                    "Skipping build manifest file (local only): MANIFEST.TXT".into(),
                )),
            ),
            (
                "repomd.xml",
                "p/x86_64/repodata/repomd.xml",
                Some(Skip::Saying(
                    "Skipping metadata file (will regenerate): repomd.xml".into(),
                )),
            ),
            (
                "Packages.gz",
                "p/dists/stable/main/binary-amd64/Packages.gz",
                Some(Skip::Saying(
                    "Skipping metadata file (will regenerate): Packages.gz".into(),
                )),
            ),
            ("Packages", "p/pool/main/Packages", None),
            ("a.deb", "p/pool/main/a.deb", None),
        ];
        for (name, key, want) in cases {
            assert_eq!(skip_reason(name, key), want, "{key}");
        }
    }

    #[test]
    fn summaries_and_urls() {
        let loc = StorageLocation::new("b", "1-linux/packages/rpm");
        let url = install_url(&loc, PkgType::Rpm);
        assert_eq!(
            url,
            "https://b.s3.amazonaws.com/1-linux/packages/rpm/x86_64"
        );
        assert_eq!(
            summary(PkgType::Rpm, &url, Some("L")),
            format!(
                "### RPM Package Build Results\n\n[Package Repository]({url})\n\n```bash\n# Add the repository\nsudo tee /etc/yum.repos.d/therock.repo << 'EOF'\n[therock]\nname=TheRock\nbaseurl={url}\nenabled=1\ngpgcheck=0\nEOF\n\n# Install packages\nsudo dnf install <package-name>\n```\n\n[Packaging Logs](L)\n"
            )
        );
        assert!(summary(PkgType::Deb, "U", None).contains(
            "echo \"deb [trusted=yes] U stable main\" | \\\n    sudo tee /etc/apt/sources.list.d/therock.list\nsudo apt update\n"
        ));
    }
}
