//! A package repository: turns a directory of built `.deb` or `.rpm` packages into an APT or
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
//!
//! [`prepare`] arranges and checks the packages of a directory (nothing is uploaded);
//! [`publish()`] uploads them and publishes the merged index.

mod publish;

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use file_tree::FileError;
use futures::StreamExt as _;
use storage_location::StorageLocation;

use crate::error::{full, say};
use crate::{Error, deb, rpm};

pub use publish::{publish, transfer_options};

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

/// The kind of packages and repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    /// `.deb` or `.rpm`.
    pub fn suffix(self) -> &'static str {
        match self {
            PkgType::Deb => ".deb",
            PkgType::Rpm => ".rpm",
        }
    }
}

/// A package of this run that belongs in the repository index, read and checked: the local
/// file, its path below the repository root, its object, its digests, and (deb) its index
/// stanza.
#[derive(Debug, Clone)]
pub(crate) struct Package {
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
fn arrange(dir: &Path, pkg_type: PkgType, out: &mut dyn Write) -> Result<(), Error> {
    let target = match pkg_type {
        PkgType::Deb => {
            say!(out, "Creating APT repository...")?;
            fs_err::create_dir_all(dir.join(file_tree::native_path(DEB_BINARY_DIR)))?;
            dir.join(file_tree::native_path(DEB_POOL))
        }
        PkgType::Rpm => {
            say!(out, "Creating RPM repository...")?;
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
fn scan(dir: &Path, location: &StorageLocation, pkg_type: PkgType) -> Result<Scan, Error> {
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
fn no_packages(dir: &Path, pkg_type: PkgType) -> Error {
    let place = match pkg_type {
        PkgType::Deb => "",
        PkgType::Rpm => " (its top level or its `x86_64/` directory)",
    };
    Error::NoPackages {
        dir: dir.to_path_buf(),
        suffix: pkg_type.suffix(),
        place,
    }
}

/// Hard-links (or copies) the files of `packages` into `dir` under their file names.
fn link_packages<'a>(
    packages: impl IntoIterator<Item = &'a Package>,
    dir: &Path,
) -> Result<(), Error> {
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
    log: &mut dyn Write,
) -> Result<Vec<Package>, Error> {
    let total = found.len();
    say!(
        out,
        "Checking {total} {} packages...",
        pkg_type.name().to_uppercase()
    )?;
    let results: Vec<_> = futures::stream::iter(found)
        .map(|(path, rel)| async move {
            let (p, r) = (path.clone(), rel.clone());
            let result = storage_backend::blocking(move || match pkg_type {
                PkgType::Deb => deb::read_package(&p, &r).map(|(d, s)| (d, Some(s))),
                PkgType::Rpm => deb::Digests::of_file(&p).map(|d| (d, None)),
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
            Err(e) => failures.push((path, full(&e))),
        }
    }
    if pkg_type == PkgType::Rpm && failures.is_empty() {
        let (linked, at) = (packages.clone(), repo.to_path_buf());
        storage_backend::blocking(move || link_packages(&linked, &at)).await?;
        rpm::createrepo(repo, log).await?;
        let at = repo.to_path_buf();
        let read: std::collections::BTreeSet<String> =
            storage_backend::blocking(move || rpm::primary_of_repo(&at))
                .await?
                .into_iter()
                .map(|p| p.href)
                .collect();
        failures.extend(
            packages
                .iter()
                .filter(|p| !read.contains(&file_name(&p.path)))
                .map(|p| {
                    (
                        p.path.clone(),
                        "`createrepo_c` cannot read it (its messages are above)".to_owned(),
                    )
                }),
        );
    }
    if !failures.is_empty() {
        return Err(Error::UnreadablePackages { total, failures });
    }
    Ok(packages)
}

/// The packages of a directory, arranged in the repository layout and checked, ready to
/// publish.
#[derive(Debug)]
pub struct Prepared {
    pkg_type: PkgType,
    location: StorageLocation,
    packages: Vec<Package>,
    scan: Scan,
    /// Scratch space: the metadata `createrepo_c` wrote for all packages (rpm), the published
    /// and merged metadata.
    work: tempfile::TempDir,
}

impl Prepared {
    /// The repository's place.
    pub fn location(&self) -> &StorageLocation {
        &self.location
    }

    /// The repository of every package of this run (`createrepo_c` wrote its metadata).
    fn all_repo(&self) -> PathBuf {
        self.work.path().join("all")
    }
}

/// Moves the top-level packages of `dir` into the repository layout (`pool/main/` for deb,
/// `x86_64/` for rpm) and reads every package, before anything is uploaded; the packages to
/// publish at `location` (the repository root). Progress goes to `out`, the messages of
/// `createrepo_c` to `log`. A directory without a package, or with one that cannot be
/// indexed, is an error.
pub async fn prepare(
    dir: &Path,
    pkg_type: PkgType,
    location: StorageLocation,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<Prepared, Error> {
    arrange(dir, pkg_type, out)?;
    let mut scan = scan(dir, &location, pkg_type)?;
    if scan.packages.is_empty() {
        return Err(no_packages(dir, pkg_type));
    }
    let work = file_tree::temp_dir_in(&std::env::temp_dir(), "rock-ci-package-repo")
        .map_err(|e| FileError::write(std::env::temp_dir(), e))?;
    let all_repo = work.path().join("all");
    let found = std::mem::take(&mut scan.packages);
    let packages = check_packages(found, &location, pkg_type, &all_repo, out, log).await?;
    Ok(Prepared {
        pkg_type,
        location,
        packages,
        scan,
        work,
    })
}

/// The packaging logs of the package directory `dir`: its `logs/` directory when it holds
/// `*.log` files (printing how many are uploaded), else `None` (printing why not).
#[expect(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the reference's glob `*.log` is case-sensitive"
)]
pub fn log_dir(dir: &Path, out: &mut dyn Write) -> Result<Option<PathBuf>, Error> {
    let logs = dir.join("logs");
    if !logs.is_dir() {
        say!(
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
        say!(
            out,
            "[INFO] No log files found in {}. Skipping log upload.",
            logs.display()
        )?;
        return Ok(None);
    }
    say!(out, "Uploading {count} packaging log files...")?;
    Ok(Some(logs))
}

#[cfg(test)]
mod tests;
