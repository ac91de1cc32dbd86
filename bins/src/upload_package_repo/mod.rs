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
//!
//! Every package is read and checked before anything is uploaded, so a package that cannot be
//! indexed fails the run with nothing published. What a failed run can leave behind (packages
//! uploaded but not listed, content-addressed files without the top index that lists them, a
//! `Release` whose plain `Packages` copies were not written) is repaired by the next run: a
//! published package file that the published index does not list is replaced by the local one
//! (see `decide`). A run that has nothing to add writes nothing.

pub mod deb;
pub mod rpm;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use file_tree::FileError;
use futures::StreamExt as _;
use storage_backend::{
    Overwrite, S3StorageBackend, StorageBackend, TransferOptions, WriteCondition,
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

/// A package of this run that belongs in the repository index, read and checked: the local
/// file, its path below the repository root, its object, its digests, and (deb) its index
/// stanza.
#[derive(Debug, Clone)]
struct Package {
    path: PathBuf,
    rel: String,
    dest: StorageLocation,
    digests: deb::Digests,
    stanza: Option<String>,
}

/// What the published index records about one package file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    /// The checksum algorithm (`sha256`, `sha1`, `md5`; anything else is never a match).
    checksum_type: String,
    /// The checksum, lowercase hex.
    checksum: String,
}

impl Listed {
    /// Whether the file with `digests` is the one listed.
    fn matches(&self, digests: &deb::Digests) -> bool {
        let ours = match self.checksum_type.as_str() {
            "sha256" => &digests.sha256,
            "sha" | "sha1" => &digests.sha1,
            "md5" => &digests.md5,
            _ => return false,
        };
        *ours == self.checksum
    }

    /// The listed SHA-256, when that is the listed algorithm.
    fn sha256(&self) -> Option<&str> {
        (self.checksum_type == "sha256").then_some(self.checksum.as_str())
    }
}

/// What a run does with one of its packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Not published yet: upload it; `list` unless the index already lists this file.
    Upload { list: bool },
    /// Published with this content: `list` unless the index already does.
    Present { list: bool },
    /// Published with other content that the index lists: both stay as they are.
    Keep,
    /// Published with other content that no index lists (`unlisted`, left by a run that
    /// failed before listing it) or that does not match its own index entry: upload it over
    /// that, and `list` it unless the index already lists this file.
    Replace { list: bool, unlisted: bool },
}

impl Action {
    /// Whether the index must list the local file.
    fn lists(self) -> bool {
        matches!(
            self,
            Action::Upload { list: true }
                | Action::Present { list: true }
                | Action::Replace { list: true, .. }
        )
    }

    /// Whether the local file is uploaded.
    fn uploads(self) -> bool {
        matches!(self, Action::Upload { .. } | Action::Replace { .. })
    }
}

/// The object under a package's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Published<'a> {
    /// There is none.
    Absent,
    /// There is one, with the SHA-256 our uploads record (`None`: it has no record).
    Object(Option<&'a str>),
}

/// What to do with a package whose digests are `ours`, given the published index's entry
/// for its path (`listed`) and the published object.
fn decide(ours: &deb::Digests, listed: Option<&Listed>, published: Published<'_>) -> Action {
    let listed_as_ours = listed.is_some_and(|l| l.matches(ours));
    let Published::Object(recorded) = published else {
        return Action::Upload {
            list: !listed_as_ours,
        };
    };
    if recorded == Some(ours.sha256.as_str()) {
        return Action::Present {
            list: !listed_as_ours,
        };
    }
    match listed {
        None => Action::Replace {
            list: true,
            unlisted: true,
        },
        // Listed as this file; an object without a record is trusted to be it.
        Some(_) if listed_as_ours => match recorded {
            None => Action::Present { list: false },
            Some(_) => Action::Replace {
                list: false,
                unlisted: false,
            },
        },
        Some(l) => match (recorded, l.sha256()) {
            // The published file is not the one its entry lists: the entry is wrong anyway.
            (Some(r), Some(x)) if r != x => Action::Replace {
                list: true,
                unlisted: false,
            },
            _ => Action::Keep,
        },
    }
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

/// Packages read at once while they are checked.
const CHECK_CONCURRENCY: usize = 4;

/// The files of the package directory, in walk order.
#[derive(Debug, Default)]
struct Scan {
    /// Packages that belong in the index: the local file and its path below the repository
    /// root.
    packages: Vec<(PathBuf, String)>,
    /// Every other file to upload, with its path below the repository root and whether it
    /// is a package (one outside the repository layout: uploaded, not indexed).
    others: Vec<(PathBuf, String, bool)>,
    /// The lines saying which files are left out.
    notes: Vec<String>,
}

/// Sorts the files of the arranged package directory `dir` by what happens to them.
fn scan(dir: &Path, location: &StorageLocation, pkg_type: PkgType) -> anyhow::Result<Scan> {
    let mut scan = Scan::default();
    for entry in file_tree::walk(dir)? {
        if entry.is_dir || entry.is_symlink {
            continue;
        }
        let (name, rel) = (entry.name().to_owned(), entry.relative());
        if let Some(skip) = skip_reason(&name, location.join(&rel).relative_path()) {
            if let Skip::Saying(line) = skip {
                scan.notes.push(line);
            }
            continue;
        }
        let indexed = name.ends_with(pkg_type.suffix())
            && match pkg_type {
                PkgType::Deb => true,
                PkgType::Rpm => rel == format!("{RPM_ARCH_DIR}/{name}"),
            };
        if indexed {
            scan.packages.push((entry.path, rel));
        } else {
            let package = is_package(&name);
            scan.others.push((entry.path, rel, package));
        }
    }
    Ok(scan)
}

/// The error of a package directory without a package to publish.
fn no_packages(dir: &Path, pkg_type: PkgType) -> anyhow::Error {
    let place = match pkg_type {
        PkgType::Deb => "",
        PkgType::Rpm => " (its top level or its `x86_64/` directory)",
    };
    anyhow::anyhow!(
        "No `{}` package to publish in `{}`{place}; nothing was uploaded",
        pkg_type.suffix(),
        dir.display()
    )
}

/// Hard-links (or copies) the files of `packages` into `dir` under their file names.
fn link_packages<'a>(
    packages: impl IntoIterator<Item = &'a Package>,
    dir: &Path,
) -> anyhow::Result<()> {
    fs_err::create_dir_all(dir)?;
    for package in packages {
        let to = dir.join(file_name(&package.path));
        if fs_err::hard_link(&package.path, &to).is_err() {
            fs_err::copy(&package.path, &to)?;
        }
    }
    Ok(())
}

/// Reads every package before anything is uploaded: its digests, and for deb its control data
/// (with `Package`, `Version` and `Architecture`) as an index stanza; for rpm `createrepo_c`
/// writes the metadata of all of them into `repo`, and each must be in it. One that cannot
/// be read fails the run, naming every such file.
async fn check_packages(
    found: Vec<(PathBuf, String)>,
    location: &StorageLocation,
    pkg_type: PkgType,
    repo: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<Vec<Package>> {
    let total = found.len();
    writeln!(
        out,
        "Checking {total} {} packages...",
        pkg_type.name().to_uppercase()
    )?;
    let results: Vec<_> = futures::stream::iter(found)
        .map(|(path, rel)| async move {
            let (p, r) = (path.clone(), rel.clone());
            let result = storage_backend::blocking(move || match pkg_type {
                PkgType::Deb => deb::read_package(&p, &r).map(|(d, s)| (d, Some(s))),
                PkgType::Rpm => deb::Digests::of_file(&p)
                    .map(|d| (d, None))
                    .map_err(|e| format!("{e:#}")),
            })
            .await;
            (path, rel, result)
        })
        .buffered(CHECK_CONCURRENCY)
        .collect()
        .await;
    let (mut packages, mut failures) = (Vec::new(), Vec::new());
    for (path, rel, result) in results {
        match result {
            Ok((digests, stanza)) => packages.push(Package {
                dest: location.join(&rel),
                path,
                rel,
                digests,
                stanza,
            }),
            Err(e) => failures.push(format!("`{}`: {e}", path.display())),
        }
    }
    if pkg_type == PkgType::Rpm && failures.is_empty() {
        link_packages(&packages, repo)?;
        rpm::createrepo(repo, &mut std::io::stderr())?;
        let read: std::collections::BTreeSet<String> = rpm::primary_of_repo(repo)?
            .into_iter()
            .map(|p| p.href)
            .collect();
        failures.extend(
            packages
                .iter()
                .filter(|p| !read.contains(&file_name(&p.path)))
                .map(|p| {
                    format!(
                        "`{}`: `createrepo_c` cannot read it (its messages are above)",
                        p.path.display()
                    )
                }),
        );
    }
    if !failures.is_empty() {
        bail!(
            "{} of the {total} packages cannot be read; nothing was uploaded:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
    Ok(packages)
}

/// The other files of the package directory to upload (and how many are left out as
/// published unchanged), a line for each.
async fn plan_others(
    s3: &S3StorageBackend,
    others: &[(PathBuf, String, bool)],
    location: &StorageLocation,
    out: &mut dyn Write,
) -> anyhow::Result<(Vec<(PathBuf, StorageLocation)>, usize)> {
    let (mut rest, mut skipped) = (Vec::new(), 0usize);
    for (path, rel, package) in others {
        let dest = location.join(rel);
        let sha = storage_backend::sha256_file(path).await?;
        let stored = s3
            .stored_sha256(&dest)
            .await
            .with_context(|| format!("Failed to read `{}`", dest.s3_uri()))?;
        if stored.as_deref() == Some(sha.as_str()) {
            if *package {
                writeln!(out, "Skipping existing package: {}", file_name(path))?;
            } else {
                writeln!(out, "Skipping unchanged: {}", dest.relative_path())?;
            }
            skipped += 1;
            continue;
        }
        writeln!(out, "Uploading: {}", dest.relative_path())?;
        if *package {
            writeln!(
                out,
                "  {} is outside the repository layout: uploaded, not indexed",
                file_name(path)
            )?;
        }
        rest.push((path.clone(), dest));
    }
    Ok((rest, skipped))
}

/// Uploads this run's packages as [`decide`] says, then the other files of the package
/// directory unless published unchanged, a line for each; the packages the index must list.
async fn upload_phase<'a>(
    backend: &StorageBackend,
    s3: &S3StorageBackend,
    packages: &'a [Package],
    listing: &BTreeMap<String, Listed>,
    scan: &Scan,
    location: &StorageLocation,
    out: &mut dyn Write,
) -> anyhow::Result<Vec<&'a Package>> {
    writeln!(out, "Uploading to {}/", location.s3_uri())?;
    writeln!(out, "Deduplication: ON")?;
    for note in &scan.notes {
        writeln!(out, "{note}")?;
    }
    let concurrency = backend.options().concurrency.max(1);
    let heads: Vec<_> = futures::stream::iter(packages)
        .map(|p| s3.head_object(&p.dest))
        .buffered(concurrency)
        .collect()
        .await;
    let (mut uploads, mut additions, mut skipped) = (Vec::new(), Vec::new(), 0usize);
    for (package, head) in packages.iter().zip(heads) {
        let head = head.with_context(|| format!("Failed to read `{}`", package.dest.s3_uri()))?;
        let (name, key) = (file_name(&package.path), package.dest.relative_path());
        let published = head.as_ref().map_or(Published::Absent, |h| {
            Published::Object(h.sha256.as_deref())
        });
        let action = decide(&package.digests, listing.get(&package.rel), published);
        match action {
            Action::Upload { .. } => writeln!(out, "Uploading: {key}")?,
            Action::Present { .. } => {
                writeln!(out, "Skipping existing package: {name}")?;
                skipped += 1;
            }
            Action::Keep => {
                writeln!(out, "Skipping existing package: {name}")?;
                writeln!(
                    out,
                    "  the published {name} differs from the local file and the published index lists it: it is kept, and so is its index entry"
                )?;
                skipped += 1;
            }
            Action::Replace { unlisted, .. } => {
                writeln!(out, "Replacing: {key}")?;
                if unlisted {
                    writeln!(
                        out,
                        "  the published {name} differs from the local file and no published index lists it (a run that failed left it): replaced"
                    )?;
                } else {
                    writeln!(
                        out,
                        "  the published {name} does not match its entry in the published index: replaced"
                    )?;
                }
            }
        }
        if action.uploads() {
            uploads.push(package);
        }
        if action.lists() {
            additions.push(package);
        }
    }
    let (rest, unchanged) = plan_others(s3, &scan.others, location, out).await?;
    skipped += unchanged;

    let results: Vec<_> = futures::stream::iter(&uploads)
        .map(|p| async move {
            let result = backend
                .upload_file_hashed(&p.path, &p.dest, Some(p.digests.sha256.clone()))
                .await;
            (p.dest.s3_uri(), result)
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let mut failed = Vec::new();
    for (uri, result) in results {
        if let Err(e) = result {
            failed.push(format!("`{uri}`: {}", storage_backend::chain(&e)));
        }
    }
    if !failed.is_empty() {
        bail!(
            "Failed to upload the packages; the published index was not changed:\n  {}",
            failed.join("\n  ")
        );
    }
    let report = backend
        .upload_files(rest)
        .await
        .context("Failed to upload the other files of the package directory; the published index was not changed")?;
    writeln!(
        out,
        "Uploaded: {}, Skipped: {}",
        uploads.len() + report.transferred,
        skipped + report.skipped
    )?;
    if !uploads.is_empty() {
        let quoted: Vec<String> = uploads
            .iter()
            .map(|p| format!("'{}'", file_name(&p.path)))
            .collect();
        writeln!(out, "Uploaded packages: [{}]", quoted.join(", "))?;
    }
    Ok(additions)
}

/// Whether `err` is an S3 conditional request that found the object changed.
fn is_conflict(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<storage_backend::Error>()
            .is_some_and(storage_backend::Error::is_conflict)
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

/// The published APT index as a run found it.
#[derive(Debug)]
struct DebIndex {
    /// The `Packages` stanzas by `Filename`; `None` for a new repository.
    stanzas: Option<BTreeMap<String, String>>,
    /// The bytes of `Packages` the stanzas come from (checked against `Release`).
    packages: Vec<u8>,
    /// The published `Release`, if any.
    release: Option<String>,
    /// Whether `Release` says `Acquire-By-Hash: yes` (one this tool wrote).
    by_hash: bool,
    /// The condition of the write that replaces `Release`.
    condition: WriteCondition,
}

impl DebIndex {
    /// What the index lists, by path below the repository root.
    fn listing(&self) -> BTreeMap<String, Listed> {
        let Some(stanzas) = &self.stanzas else {
            return BTreeMap::new();
        };
        stanzas
            .iter()
            .map(|(file, stanza)| {
                let listed = match deb::stanza_sha256(stanza) {
                    Some(checksum) => Listed {
                        checksum_type: "sha256".into(),
                        checksum,
                    },
                    None => Listed {
                        checksum_type: "none".into(),
                        checksum: String::new(),
                    },
                };
                (file.clone(), listed)
            })
            .collect()
    }
}

/// The published APT index.
async fn read_deb_index(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    out: &mut dyn Write,
) -> anyhow::Result<DebIndex> {
    let release_loc = location.join(DEB_RELEASE);
    let packages_loc = location.join(&format!("{DEB_BINARY_DIR}/Packages"));
    writeln!(
        out,
        "Downloading existing Packages file from S3: {}",
        packages_loc.s3_uri()
    )?;
    let (release, condition) = read_top(s3, &release_loc).await?;
    let (data, release, by_hash) = match release {
        None => {
            // No Release: a new repository, or one whose first publication stopped early.
            match s3
                .get_small(&packages_loc)
                .await
                .with_context(|| format!("Failed to read `{}`", packages_loc.s3_uri()))?
            {
                None => {
                    writeln!(out, "No existing repository (no Release, no Packages)")?;
                    return Ok(DebIndex {
                        stanzas: None,
                        packages: Vec::new(),
                        release: None,
                        by_hash: false,
                        condition,
                    });
                }
                Some(bytes) => (bytes, None, false),
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
            (data, Some(release), by_hash)
        }
    };
    let text = deb::utf8(data.clone(), &packages_loc.s3_uri())?;
    let stanzas = deb::parse_packages(&text)
        .map_err(|e| anyhow::anyhow!("`{}`: {e}", packages_loc.s3_uri()))
        .context("The published index cannot be read; it was left as it is")?;
    writeln!(
        out,
        "✅ Downloaded existing Packages file ({} packages)",
        stanzas.len()
    )?;
    Ok(DebIndex {
        stanzas: Some(stanzas),
        packages: data,
        release,
        by_hash,
        condition,
    })
}

/// The published RPM index as a run found it.
#[derive(Debug)]
struct RpmIndex {
    /// A directory holding the published `repodata/`; `None` for a new repository.
    old: Option<PathBuf>,
    /// The packages its primary metadata lists.
    packages: Vec<rpm::PrimaryPackage>,
    /// The condition of the write that replaces `repomd.xml`.
    condition: WriteCondition,
}

impl RpmIndex {
    /// What the index lists, by path below the repository root.
    fn listing(&self) -> BTreeMap<String, Listed> {
        self.packages
            .iter()
            .map(|p| {
                (
                    format!("{RPM_ARCH_DIR}/{}", p.href),
                    Listed {
                        checksum_type: p.checksum_type.clone(),
                        checksum: p.checksum.clone(),
                    },
                )
            })
            .collect()
    }
}

/// The published RPM metadata, checked against `repomd.xml` and written into `dir/repodata`.
async fn read_rpm_index(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    dir: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<RpmIndex> {
    let repomd_loc = location.join(&format!("{RPM_REPODATA}/repomd.xml"));
    writeln!(
        out,
        "Downloading existing repository metadata from S3: {}/",
        location.join(RPM_REPODATA).s3_uri()
    )?;
    let (repomd, condition) = read_top(s3, &repomd_loc).await?;
    let Some(repomd) = repomd else {
        writeln!(out, "No existing metadata files found")?;
        return Ok(RpmIndex {
            old: None,
            packages: Vec::new(),
            condition,
        });
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
    let packages = rpm::primary_of_repo(dir)
        .with_context(|| format!("`{}`", repomd_loc.s3_uri()))
        .context("The published index cannot be read; it was left as it is")?;
    writeln!(
        out,
        "✅ Found {} existing metadata files to merge",
        entries.len() + 1
    )?;
    Ok(RpmIndex {
        old: Some(dir.to_path_buf()),
        packages,
        condition,
    })
}

/// The published APT index, read again while a conditional read finds it being replaced.
async fn first_deb_index(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    out: &mut dyn Write,
) -> anyhow::Result<DebIndex> {
    for _ in 0..PUBLISH_ATTEMPTS {
        match read_deb_index(s3, location, out).await {
            Err(e) if is_conflict(&e) => {}
            other => return other,
        }
    }
    Err(kept_changing(&location.join(DEB_RELEASE)))
}

/// The published RPM index, read again while a conditional read finds it being replaced.
async fn first_rpm_index(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    work: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<RpmIndex> {
    for attempt in 0..PUBLISH_ATTEMPTS {
        let dir = work.join(format!("published-{attempt}"));
        match read_rpm_index(s3, location, &dir, out).await {
            Err(e) if is_conflict(&e) => {}
            other => return other,
        }
    }
    Err(kept_changing(
        &location.join(&format!("{RPM_REPODATA}/repomd.xml")),
    ))
}

/// The error when the top index changed under every read of it.
fn kept_changing(top: &StorageLocation) -> anyhow::Error {
    anyhow::anyhow!(
        "`{}` was replaced {PUBLISH_ATTEMPTS} times while this run read it; nothing was uploaded: run again",
        top.s3_uri()
    )
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
        Err(e) if e.is_conflict() => {
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
        Err(e) if e.is_conflict() => {
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

/// Checks, just before the top index is written, that each package it is to list is still
/// the file of this run: another publisher may have replaced one meanwhile.
async fn verify_additions(s3: &S3StorageBackend, additions: &[&Package]) -> anyhow::Result<()> {
    let heads: Vec<_> = futures::stream::iter(additions)
        .map(|p| s3.head_object(&p.dest))
        .buffered(storage_backend::DEFAULT_CONCURRENCY)
        .collect()
        .await;
    for (package, head) in additions.iter().zip(heads) {
        let head = head.with_context(|| format!("Failed to read `{}`", package.dest.s3_uri()))?;
        if head.as_ref().and_then(|h| h.sha256.as_deref()) != Some(&package.digests.sha256) {
            bail!(
                "`{}` is no longer the file this run uploaded (another publisher replaced it meanwhile); the published index was not changed: run again",
                package.dest.s3_uri()
            );
        }
    }
    Ok(())
}

/// Makes the plain `Packages` and `Packages.gz` (for clients that do not fetch by hash) the
/// files the published `Release` lists, when a run stopped after `Release` left them behind.
async fn converge_plain(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    index: &DebIndex,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let Some(release) = index.release.as_deref().filter(|_| index.by_hash) else {
        return Ok(());
    };
    let binary = location.join(DEB_BINARY_DIR);
    for name in ["Packages", "Packages.gz"] {
        let Some(entry) = deb::release_entry(release, &format!("main/binary-amd64/{name}")).0
        else {
            continue;
        };
        let plain = binary.join(name);
        let head = s3
            .head_object(&plain)
            .await
            .with_context(|| format!("Failed to read `{}`", plain.s3_uri()))?;
        if head.and_then(|h| h.sha256).as_deref() == Some(entry.sha256.as_str()) {
            continue;
        }
        let mut data = if name == "Packages" {
            index.packages.clone()
        } else {
            deb::gzip(&index.packages)?
        };
        if deb::Digests::of(&data).sha256 != entry.sha256 {
            let by_hash = binary.join(&format!("by-hash/SHA256/{}", entry.sha256));
            data = read_listed(s3, &by_hash, &location.join(DEB_RELEASE).s3_uri()).await?;
            if deb::Digests::of(&data).sha256 != entry.sha256 {
                bail!(
                    "`{}` does not match the SHA256 `{}` lists for it",
                    by_hash.s3_uri(),
                    location.join(DEB_RELEASE).s3_uri()
                );
            }
        }
        s3.put_bytes(data, &plain)
            .await
            .with_context(|| format!("Failed to write `{}`", plain.s3_uri()))?;
        writeln!(
            out,
            "  Uploaded: {} (it was not the file `Release` lists)",
            plain.relative_path()
        )?;
    }
    Ok(())
}

/// Merges `additions` into the published APT index and publishes it: by-hash files, then
/// `Release` (conditional), then the plain `Packages` and `Packages.gz`. When the merge adds
/// nothing the index is left as it is (only a stale plain copy is brought up to date).
async fn publish_deb(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    additions: &[&Package],
    mut index: DebIndex,
    job_type: &str,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "Updating DEB repository metadata (merge mode with checksums)..."
    )?;
    let release_loc = location.join(DEB_RELEASE);
    let binary = location.join(DEB_BINARY_DIR);
    for attempt in 1..=PUBLISH_ATTEMPTS {
        if attempt > 1 {
            index = match read_deb_index(s3, location, out).await {
                Err(e) if is_conflict(&e) => continue,
                other => other?,
            };
        }
        let mut merged = index.stanzas.clone().unwrap_or_default();
        for package in additions {
            merged.insert(
                package.rel.clone(),
                package.stanza.clone().unwrap_or_default(),
            );
        }
        if merged.is_empty() || (index.release.is_some() && index.stanzas.as_ref() == Some(&merged))
        {
            writeln!(out, "No new DEB packages uploaded (all deduplicated)")?;
            writeln!(out, "The published metadata is left as it is")?;
            return converge_plain(s3, location, &index, out).await;
        }
        writeln!(
            out,
            "Generated Packages entries for {} DEB packages",
            additions.len()
        )?;
        if let Some(old) = &index.stanzas {
            writeln!(out, "Merging old and new Packages files...")?;
            writeln!(out, "  Old metadata: {} packages", old.len())?;
            writeln!(out, "  New metadata: {} packages", additions.len())?;
            writeln!(
                out,
                "✅ Merged Packages files: {} total packages",
                merged.len()
            )?;
        } else {
            writeln!(out, "First upload - using new Packages file")?;
        }
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
        verify_additions(s3, additions).await?;
        if !put_top(
            s3,
            release.into_bytes(),
            &release_loc,
            &index.condition,
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
            .context("`Release` is published; the plain `Packages` was not updated (clients fetching by hash are not affected; the next run updates it)")?;
        s3.put_bytes(gz, &binary.join("Packages.gz"))
            .await
            .context("`Release` is published; the plain `Packages.gz` was not updated (clients fetching by hash are not affected; the next run updates it)")?;
        writeln!(out, "✅ DEB repository metadata updated: 5 files")?;
        return Ok(());
    }
    Err(gave_up(&release_loc))
}

/// Merges `additions` into the published RPM metadata and publishes it: the content-addressed
/// metadata files, then `repomd.xml` (conditional). `made` is a repository whose metadata
/// `createrepo_c` already wrote for exactly these packages, if there is one. When nothing is
/// to be added the metadata is left as it is.
async fn publish_rpm(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    additions: &[&Package],
    made: Option<&Path>,
    mut index: RpmIndex,
    work: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(out, "Updating RPM repository metadata (merge mode)...")?;
    if additions.is_empty() {
        writeln!(out, "No new RPM packages uploaded (all deduplicated)")?;
        writeln!(out, "The published metadata is left as it is")?;
        return Ok(());
    }
    writeln!(
        out,
        "Generating metadata for {} uploaded RPM packages...",
        additions.len()
    )?;
    let mut tool_log = std::io::stderr();
    let new_repo = if let Some(made) = made {
        made.to_path_buf()
    } else {
        let subset = work.join("new");
        link_packages(additions.iter().copied(), &subset)?;
        rpm::createrepo(&subset, &mut tool_log)?;
        subset
    };
    let repomd_loc = location.join(&format!("{RPM_REPODATA}/repomd.xml"));
    for attempt in 1..=PUBLISH_ATTEMPTS {
        if attempt > 1 {
            let dir = work.join(format!("old-{attempt}"));
            index = match read_rpm_index(s3, location, &dir, out).await {
                Err(e) if is_conflict(&e) => continue,
                other => other?,
            };
        }
        let repodata = if let Some(old) = &index.old {
            writeln!(out, "Merging old and new repository metadata...")?;
            let merged = work.join(format!("merged-{attempt}"));
            rpm::mergerepo(old, &new_repo, &merged, &mut tool_log)?;
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
        verify_additions(s3, additions).await?;
        let repomd = fs_err::read(repodata.join("repomd.xml"))?;
        if put_top(s3, repomd, &repomd_loc, &index.condition, attempt, out).await? {
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
    let mut scan = scan(&dir, &location, plan.pkg_type)?;
    if scan.packages.is_empty() {
        return Err(no_packages(&dir, plan.pkg_type));
    }
    let work = file_tree::temp_dir_in(&std::env::temp_dir(), "rock-ci-package-repo")
        .map_err(|e| FileError::write(std::env::temp_dir(), e))?;
    let all_repo = work.path().join("all");
    let found = std::mem::take(&mut scan.packages);
    let packages = check_packages(found, &location, plan.pkg_type, &all_repo, out).await?;

    // Files already published unchanged are not written again.
    let options = TransferOptions {
        overwrite: Overwrite::IfDifferent,
        ..TransferOptions::default()
    };
    let backend = crate::uploads::backend(
        None,
        options,
        selection.config().region(),
        plan.quiet,
        lookup,
    )
    .await?;
    let StorageBackend::S3(s3) = &backend else {
        bail!("upload_package_repo publishes to S3 only");
    };
    match plan.pkg_type {
        PkgType::Deb => {
            let index = first_deb_index(s3, &location, out).await?;
            let additions = upload_phase(
                &backend,
                s3,
                &packages,
                &index.listing(),
                &scan,
                &location,
                out,
            )
            .await?;
            publish_deb(s3, &location, &additions, index, &job_type, out).await?;
        }
        PkgType::Rpm => {
            let index = first_rpm_index(s3, &location, work.path(), out).await?;
            let additions = upload_phase(
                &backend,
                s3,
                &packages,
                &index.listing(),
                &scan,
                &location,
                out,
            )
            .await?;
            let made = (additions.len() == packages.len()).then_some(all_repo.as_path());
            publish_rpm(s3, &location, &additions, made, index, work.path(), out).await?;
        }
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
    fn what_happens_to_a_package() {
        let ours = deb::Digests::of(b"ours");
        let other = deb::Digests::of(b"other");
        let sha = |d: &deb::Digests| Listed {
            checksum_type: "sha256".into(),
            checksum: d.sha256.clone(),
        };
        let md5 = Listed {
            checksum_type: "md5".into(),
            checksum: ours.md5.clone(),
        };
        let (o, x) = (ours.sha256.as_str(), other.sha256.as_str());
        let (absent, unrecorded) = (Published::Absent, Published::Object(None));
        let cases: [(Option<Listed>, Published<'_>, Action); 13] = [
            // Not published.
            (None, absent, Action::Upload { list: true }),
            (Some(sha(&ours)), absent, Action::Upload { list: false }),
            (Some(sha(&other)), absent, Action::Upload { list: true }),
            // Published, this file.
            (
                None,
                Published::Object(Some(o)),
                Action::Present { list: true },
            ),
            (
                Some(sha(&ours)),
                Published::Object(Some(o)),
                Action::Present { list: false },
            ),
            (
                Some(md5.clone()),
                Published::Object(Some(o)),
                Action::Present { list: false },
            ),
            (
                Some(sha(&other)),
                Published::Object(Some(o)),
                Action::Present { list: true },
            ),
            // Published, unknown or other content, listed as this file.
            (
                Some(sha(&ours)),
                unrecorded,
                Action::Present { list: false },
            ),
            (
                Some(sha(&ours)),
                Published::Object(Some(x)),
                Action::Replace {
                    list: false,
                    unlisted: false,
                },
            ),
            // Listed as the published file: kept.
            (Some(sha(&other)), Published::Object(Some(x)), Action::Keep),
            (Some(sha(&other)), unrecorded, Action::Keep),
            // The published file is not what its entry says.
            (
                Some(sha(&other)),
                Published::Object(Some("f00d")),
                Action::Replace {
                    list: true,
                    unlisted: false,
                },
            ),
            // Left by a run that failed before listing it.
            (
                None,
                unrecorded,
                Action::Replace {
                    list: true,
                    unlisted: true,
                },
            ),
        ];
        for (listed, published, want) in cases {
            assert_eq!(
                decide(&ours, listed.as_ref(), published),
                want,
                "{listed:?} {published:?}"
            );
        }
        assert_eq!(
            decide(&ours, None, Published::Object(Some(x))),
            Action::Replace {
                list: true,
                unlisted: true
            }
        );
        assert!(!Action::Keep.lists() && !Action::Keep.uploads());
        assert!(Action::Present { list: true }.lists());
        assert!(!Action::Present { list: true }.uploads());
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
