//! Publishing a checked package repository to S3: the uploads, the reads of the published
//! index, the merge, and the conditional writes of its files in order.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use futures::StreamExt as _;
use storage_backend::{
    Overwrite, S3StorageBackend, StorageBackend, TransferOptions, WriteCondition,
};
use storage_location::StorageLocation;

use super::{
    Action, DEB_BINARY_DIR, DEB_RELEASE, Listed, PUBLISH_ATTEMPTS, Package, PkgType, Prepared,
    Published, RPM_ARCH_DIR, RPM_REPODATA, Scan, decide, file_name, link_packages,
};
use crate::error::say;
use crate::{Error, deb, rpm};

/// The transfer options of a repository's uploads: files already published unchanged are not
/// written again.
pub fn transfer_options() -> TransferOptions {
    let mut options = TransferOptions::default();
    options.overwrite = Overwrite::IfDifferent;
    options
}

/// Uploads the packages of `prepared` with `backend` (S3, with [`transfer_options`]) and
/// publishes the merged index: by-hash files, then `Release` (deb), or the content-addressed
/// metadata, then `repomd.xml` (rpm), each top index written only over the version the merge
/// started from. `job_type` names the `Release` label (deb). Progress goes to `out`, the
/// messages of the RPM tools to `log`.
pub async fn publish(
    backend: &StorageBackend,
    prepared: &Prepared,
    job_type: &str,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), Error> {
    let StorageBackend::S3(s3) = backend else {
        return Err(Error::NotS3);
    };
    let (packages, location) = (&prepared.packages, &prepared.location);
    match prepared.pkg_type {
        PkgType::Deb => {
            let index = first_deb_index(s3, location, out).await?;
            let additions = upload_phase(
                backend,
                s3,
                packages,
                &index.listing(),
                &prepared.scan,
                location,
                out,
            )
            .await?;
            publish_deb(s3, location, &additions, index, job_type, out).await
        }
        PkgType::Rpm => {
            let work = prepared.work.path();
            let index = first_rpm_index(s3, location, work, out).await?;
            let additions = upload_phase(
                backend,
                s3,
                packages,
                &index.listing(),
                &prepared.scan,
                location,
                out,
            )
            .await?;
            let all_repo = prepared.all_repo();
            let made = (additions.len() == packages.len()).then_some(all_repo.as_path());
            publish_rpm(s3, location, &additions, made, index, work, out, log).await
        }
    }
}

/// Fails unless `bytes` are UTF-8; names the object `uri`.
fn utf8(bytes: Vec<u8>, uri: &str) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
        uri: uri.to_owned(),
        valid_up_to: e.utf8_error().valid_up_to(),
    })
}

/// The error of a published index that cannot be read: `source` in the object `uri`.
fn unreadable(uri: String, source: impl Into<Error>) -> Error {
    Error::UnreadableIndex(Box::new(Error::within(uri, source)))
}

/// The bytes of the local file `path`, read off the async threads.
async fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    let path = path.to_path_buf();
    Ok(storage_backend::blocking(move || fs_err::read(path)).await?)
}

/// Writes `data` to the local file `path`, off the async threads.
async fn write_file(path: &Path, data: Vec<u8>) -> Result<(), Error> {
    let path = path.to_path_buf();
    Ok(storage_backend::blocking(move || fs_err::write(path, data)).await?)
}

/// The other files of the package directory to upload (and how many are left out as
/// published unchanged), a line for each.
async fn plan_others(
    s3: &S3StorageBackend,
    others: &[(PathBuf, String, bool)],
    location: &StorageLocation,
    out: &mut dyn Write,
) -> Result<(Vec<(PathBuf, StorageLocation)>, usize), Error> {
    let (mut rest, mut skipped) = (Vec::new(), 0usize);
    for (path, rel, package) in others {
        let dest = location.join(rel);
        let sha = storage_backend::sha256_file(path).await?;
        let stored = s3
            .stored_sha256(&dest)
            .await
            .map_err(Error::read(dest.s3_uri()))?;
        if stored.as_deref() == Some(sha.as_str()) {
            if *package {
                say!(out, "Skipping existing package: {}", file_name(path))?;
            } else {
                say!(out, "Skipping unchanged: {}", dest.relative_path())?;
            }
            skipped += 1;
            continue;
        }
        say!(out, "Uploading: {}", dest.relative_path())?;
        if *package {
            say!(
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
) -> Result<Vec<&'a Package>, Error> {
    say!(out, "Uploading to {}/", location.s3_uri())?;
    say!(out, "Deduplication: ON")?;
    for note in &scan.notes {
        say!(out, "{note}")?;
    }
    let concurrency = backend.options().concurrency.max(1);
    let heads: Vec<_> = futures::stream::iter(packages)
        .map(|p| s3.head_object(&p.dest))
        .buffered(concurrency)
        .collect()
        .await;
    let (mut uploads, mut additions, mut skipped) = (Vec::new(), Vec::new(), 0usize);
    for (package, head) in packages.iter().zip(heads) {
        let head = head.map_err(Error::read(package.dest.s3_uri()))?;
        let (name, key) = (file_name(&package.path), package.dest.relative_path());
        let published = head.as_ref().map_or(Published::Absent, |h| {
            Published::Object(h.sha256.as_deref())
        });
        let action = decide(&package.digests, listing.get(&package.rel), published);
        match action {
            Action::Upload { .. } => say!(out, "Uploading: {key}")?,
            Action::Present { .. } => {
                say!(out, "Skipping existing package: {name}")?;
                skipped += 1;
            }
            Action::Keep => {
                say!(out, "Skipping existing package: {name}")?;
                say!(
                    out,
                    "  the published {name} differs from the local file and the published index lists it: it is kept, and so is its index entry"
                )?;
                skipped += 1;
            }
            Action::Replace { unlisted, .. } => {
                say!(out, "Replacing: {key}")?;
                if unlisted {
                    say!(
                        out,
                        "  the published {name} differs from the local file and no published index lists it (a run that failed left it): replaced"
                    )?;
                } else {
                    say!(
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
    let mut failures = Vec::new();
    for (uri, result) in results {
        if let Err(e) = result {
            failures.push((uri, e));
        }
    }
    if !failures.is_empty() {
        return Err(Error::PackagesNotUploaded { failures });
    }
    let report = backend
        .upload_files(rest)
        .await
        .map_err(Error::OthersNotUploaded)?;
    say!(
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
        say!(out, "Uploaded packages: [{}]", quoted.join(", "))?;
    }
    Ok(additions)
}

/// The current version of the top index at `loc`: its bytes and the condition that a write
/// replacing exactly that version needs; `None` bytes (and "absent") when there is none.
async fn read_top(
    s3: &S3StorageBackend,
    loc: &StorageLocation,
) -> Result<(Option<Vec<u8>>, WriteCondition), Error> {
    let Some(head) = s3
        .head_object(loc)
        .await
        .map_err(Error::read(loc.s3_uri()))?
    else {
        return Ok((None, WriteCondition::Absent));
    };
    let body = s3
        .get(loc, None, Some(&head.etag))
        .await
        .map_err(Error::read(loc.s3_uri()))?;
    let parts = body.collect().await.map_err(Error::read(loc.s3_uri()))?;
    Ok((Some(parts.concat()), WriteCondition::Matches(head.etag)))
}

/// An object the top index lists: it must be there.
async fn read_listed(
    s3: &S3StorageBackend,
    loc: &StorageLocation,
    by: &str,
) -> Result<Vec<u8>, Error> {
    s3.get_small(loc)
        .await
        .map_err(Error::read(loc.s3_uri()))?
        .ok_or_else(|| Error::MissingListed {
            by: by.to_owned(),
            uri: loc.s3_uri(),
        })
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
) -> Result<DebIndex, Error> {
    let release_loc = location.join(DEB_RELEASE);
    let packages_loc = location.join(&format!("{DEB_BINARY_DIR}/Packages"));
    say!(
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
                .map_err(Error::read(packages_loc.s3_uri()))?
            {
                None => {
                    say!(out, "No existing repository (no Release, no Packages)")?;
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
            let release = utf8(bytes, &release_loc.s3_uri())?;
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
                    return Err(Error::IndexMismatch {
                        uri: source.s3_uri(),
                        release: release_loc.s3_uri(),
                    });
                }
            }
            (data, Some(release), by_hash)
        }
    };
    let text = utf8(data.clone(), &packages_loc.s3_uri())?;
    let stanzas = deb::parse_packages(&text).map_err(|e| unreadable(packages_loc.s3_uri(), e))?;
    say!(
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
) -> Result<RpmIndex, Error> {
    let repomd_loc = location.join(&format!("{RPM_REPODATA}/repomd.xml"));
    say!(
        out,
        "Downloading existing repository metadata from S3: {}/",
        location.join(RPM_REPODATA).s3_uri()
    )?;
    let (repomd, condition) = read_top(s3, &repomd_loc).await?;
    let Some(repomd) = repomd else {
        say!(out, "No existing metadata files found")?;
        return Ok(RpmIndex {
            old: None,
            packages: Vec::new(),
            condition,
        });
    };
    let text = utf8(repomd.clone(), &repomd_loc.s3_uri())?;
    let entries = rpm::parse_repomd(&text).map_err(|e| unreadable(repomd_loc.s3_uri(), e))?;
    let repodata = dir.join("repodata");
    fs_err::create_dir_all(&repodata)?;
    for entry in &entries {
        let loc = location.join(&format!("{RPM_ARCH_DIR}/{}", entry.href));
        let data = read_listed(s3, &loc, &repomd_loc.s3_uri()).await?;
        if !rpm::checksum_matches(entry, &data)? {
            return Err(Error::MetadataMismatch {
                uri: loc.s3_uri(),
                repomd: repomd_loc.s3_uri(),
            });
        }
        let path = dir.join(&entry.href);
        write_file(&path, data).await?;
        say!(out, "  Downloaded: {}", file_name(&path))?;
    }
    write_file(&repodata.join("repomd.xml"), repomd).await?;
    let at = dir.to_path_buf();
    let packages = storage_backend::blocking(move || rpm::primary_of_repo(&at))
        .await
        .map_err(|e| unreadable(repomd_loc.s3_uri(), e))?;
    say!(
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
) -> Result<DebIndex, Error> {
    for _ in 0..PUBLISH_ATTEMPTS {
        match read_deb_index(s3, location, out).await {
            Err(e) if e.is_conflict() => {}
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
) -> Result<RpmIndex, Error> {
    for attempt in 0..PUBLISH_ATTEMPTS {
        let dir = work.join(format!("published-{attempt}"));
        match read_rpm_index(s3, location, &dir, out).await {
            Err(e) if e.is_conflict() => {}
            other => return other,
        }
    }
    Err(kept_changing(
        &location.join(&format!("{RPM_REPODATA}/repomd.xml")),
    ))
}

/// The error when the top index changed under every read of it.
fn kept_changing(top: &StorageLocation) -> Error {
    Error::KeptChanging { uri: top.s3_uri() }
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
) -> Result<(), Error> {
    match s3.put_bytes_if(data, dest, &WriteCondition::Absent).await {
        Ok(_) => say!(out, "  Uploaded: {}", dest.relative_path())?,
        Err(e) if e.is_conflict() => {
            say!(out, "  Already there: {}", dest.relative_path())?;
        }
        Err(e) => return Err(Error::TopNotChanged(e)),
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
) -> Result<bool, Error> {
    match s3.put_bytes_if(data, dest, condition).await {
        Ok(_) => {
            say!(out, "  Uploaded: {}", dest.relative_path())?;
            Ok(true)
        }
        Err(e) if e.is_conflict() => {
            say!(
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
fn gave_up(top: &StorageLocation) -> Error {
    Error::GaveUp { uri: top.s3_uri() }
}

/// Checks, just before the top index is written, that each package it is to list is still
/// the file of this run: another publisher may have replaced one meanwhile.
async fn verify_additions(s3: &S3StorageBackend, additions: &[&Package]) -> Result<(), Error> {
    let heads: Vec<_> = futures::stream::iter(additions)
        .map(|p| s3.head_object(&p.dest))
        .buffered(storage_backend::DEFAULT_CONCURRENCY)
        .collect()
        .await;
    for (package, head) in additions.iter().zip(heads) {
        let head = head.map_err(Error::read(package.dest.s3_uri()))?;
        if head.as_ref().and_then(|h| h.sha256.as_deref()) != Some(&package.digests.sha256) {
            return Err(Error::Replaced {
                uri: package.dest.s3_uri(),
            });
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
) -> Result<(), Error> {
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
            .map_err(Error::read(plain.s3_uri()))?;
        if head.and_then(|h| h.sha256).as_deref() == Some(entry.sha256.as_str()) {
            continue;
        }
        let mut data = if name == "Packages" {
            index.packages.clone()
        } else {
            deb::gzip(&index.packages)
        };
        if deb::Digests::of(&data).sha256 != entry.sha256 {
            let by_hash = binary.join(&format!("by-hash/SHA256/{}", entry.sha256));
            data = read_listed(s3, &by_hash, &location.join(DEB_RELEASE).s3_uri()).await?;
            if deb::Digests::of(&data).sha256 != entry.sha256 {
                return Err(Error::ByHashMismatch {
                    uri: by_hash.s3_uri(),
                    release: location.join(DEB_RELEASE).s3_uri(),
                });
            }
        }
        s3.put_bytes(data, &plain)
            .await
            .map_err(|source| Error::Write {
                uri: plain.s3_uri(),
                source,
            })?;
        say!(
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
) -> Result<(), Error> {
    say!(
        out,
        "Updating DEB repository metadata (merge mode with checksums)..."
    )?;
    let release_loc = location.join(DEB_RELEASE);
    let binary = location.join(DEB_BINARY_DIR);
    for attempt in 1..=PUBLISH_ATTEMPTS {
        if attempt > 1 {
            index = match read_deb_index(s3, location, out).await {
                Err(e) if e.is_conflict() => continue,
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
            say!(out, "No new DEB packages uploaded (all deduplicated)")?;
            say!(out, "The published metadata is left as it is")?;
            return converge_plain(s3, location, &index, out).await;
        }
        say!(
            out,
            "Generated Packages entries for {} DEB packages",
            additions.len()
        )?;
        if let Some(old) = &index.stanzas {
            say!(out, "Merging old and new Packages files...")?;
            say!(out, "  Old metadata: {} packages", old.len())?;
            say!(out, "  New metadata: {} packages", additions.len())?;
            say!(
                out,
                "✅ Merged Packages files: {} total packages",
                merged.len()
            )?;
        } else {
            say!(out, "First upload - using new Packages file")?;
        }
        let packages = deb::packages_text(&merged).into_bytes();
        let gz = deb::gzip(&packages);
        let (pd, gd) = (deb::Digests::of(&packages), deb::Digests::of(&gz));
        let release = deb::release_text(
            job_type,
            &release_date(),
            &[
                ("main/binary-amd64/Packages", &pd),
                ("main/binary-amd64/Packages.gz", &gd),
            ],
        );
        say!(
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
            .map_err(|source| Error::PlainNotUpdated {
                name: "Packages",
                source,
            })?;
        s3.put_bytes(gz, &binary.join("Packages.gz"))
            .await
            .map_err(|source| Error::PlainNotUpdated {
                name: "Packages.gz",
                source,
            })?;
        say!(out, "✅ DEB repository metadata updated: 5 files")?;
        return Ok(());
    }
    Err(gave_up(&release_loc))
}

/// Merges `additions` into the published RPM metadata and publishes it: the content-addressed
/// metadata files, then `repomd.xml` (conditional). `made` is a repository whose metadata
/// `createrepo_c` already wrote for exactly these packages, if there is one. When nothing is
/// to be added the metadata is left as it is.
#[expect(
    clippy::too_many_arguments,
    reason = "the repository, the packages, the published index and the writers"
)]
async fn publish_rpm(
    s3: &S3StorageBackend,
    location: &StorageLocation,
    additions: &[&Package],
    made: Option<&Path>,
    mut index: RpmIndex,
    work: &Path,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), Error> {
    say!(out, "Updating RPM repository metadata (merge mode)...")?;
    if additions.is_empty() {
        say!(out, "No new RPM packages uploaded (all deduplicated)")?;
        say!(out, "The published metadata is left as it is")?;
        return Ok(());
    }
    say!(
        out,
        "Generating metadata for {} uploaded RPM packages...",
        additions.len()
    )?;
    let new_repo = if let Some(made) = made {
        made.to_path_buf()
    } else {
        let subset = work.join("new");
        let (linked, at): (Vec<Package>, _) = (
            additions.iter().map(|p| (*p).clone()).collect(),
            subset.clone(),
        );
        storage_backend::blocking(move || link_packages(&linked, &at)).await?;
        rpm::createrepo(&subset, log).await?;
        subset
    };
    let repomd_loc = location.join(&format!("{RPM_REPODATA}/repomd.xml"));
    for attempt in 1..=PUBLISH_ATTEMPTS {
        if attempt > 1 {
            let dir = work.join(format!("old-{attempt}"));
            index = match read_rpm_index(s3, location, &dir, out).await {
                Err(e) if e.is_conflict() => continue,
                other => other?,
            };
        }
        let repodata = if let Some(old) = &index.old {
            say!(out, "Merging old and new repository metadata...")?;
            let merged = work.join(format!("merged-{attempt}"));
            rpm::mergerepo(old, &new_repo, &merged, log).await?;
            merged.join("repodata")
        } else {
            say!(out, "First upload - using new repository metadata")?;
            new_repo.join("repodata")
        };
        let listed = repodata.clone();
        let mut files: Vec<PathBuf> = storage_backend::blocking(move || file_tree::list(&listed))
            .await?
            .into_iter()
            .filter(|e| e.is_file && e.name() != "repomd.xml")
            .map(|e| e.path)
            .collect();
        files.sort();
        for file in &files {
            let dest = location.join(&format!("{RPM_REPODATA}/{}", file_name(file)));
            put_content_addressed(s3, read_file(file).await?, &dest, out).await?;
        }
        verify_additions(s3, additions).await?;
        let repomd = read_file(&repodata.join("repomd.xml")).await?;
        if put_top(s3, repomd, &repomd_loc, &index.condition, attempt, out).await? {
            say!(
                out,
                "✅ RPM repository metadata updated: {} files",
                files.len() + 1
            )?;
            return Ok(());
        }
    }
    Err(gave_up(&repomd_loc))
}
