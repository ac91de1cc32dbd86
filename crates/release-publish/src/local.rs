//! Publishing a directory of built Python packages (wheels, sdists) to a product repository.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt as _;
use storage_backend::{
    Reporter, S3StorageBackend, StorageBackend, TransferOptions, WriteCondition,
};
use storage_location::StorageLocation;
use workflow_outputs::{
    LEGACY_MULTI_ARCH_WHEEL_PREFIX, PythonIndex, ReleaseBucketType, ReleaseProduct, ReleaseType,
    S3BucketConfig,
};

use crate::{Error, package_name};

/// Where the packages of a release go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageLayout {
    /// The product repository (`therock-repo-amd-{stream}-{product}`), each file at
    /// `v5/rocm/{product}/{index}/{package}/{file}`; the top level of the directory only, every
    /// `.whl`, `.tar.gz` and `.zip` (symlinks to files included).
    Structured(PythonIndex),
    /// The legacy Python bucket (`therock-{dev|nightly|prerelease}-python`) at
    /// `v4/whl/{relative path}`; every `*.whl` below the directory, symlinks skipped.
    Legacy,
}

/// A product's release of locally built Python packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalRelease {
    /// The release type (not `ci`).
    pub release_type: ReleaseType,
    /// The product.
    pub product: ReleaseProduct,
    /// The destination layout.
    pub layout: PackageLayout,
}

impl LocalRelease {
    /// A `release_type` release of `product` into the `layout` of its repository.
    pub fn new(release_type: ReleaseType, product: ReleaseProduct, layout: PackageLayout) -> Self {
        LocalRelease {
            release_type,
            product,
            layout,
        }
    }
}

/// One file to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// The local file.
    pub source: PathBuf,
    /// Where it goes.
    pub destination: StorageLocation,
}

/// Every file of a publication, in the order they were listed (sorted by path).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UploadPlan {
    /// The files.
    pub files: Vec<PlannedFile>,
}

impl UploadPlan {
    /// Writes `{label}: {source} -> {destination URI}` for each file (the reference's log
    /// line, e.g. `PyTorch wheel: …`).
    pub fn print(&self, label: &str, out: &mut dyn Write) -> std::io::Result<()> {
        for file in &self.files {
            writeln!(
                out,
                "{label}: {} -> {}",
                file.source.display(),
                file.destination.s3_uri()
            )?;
        }
        Ok(())
    }

    /// Writes the dry-run line of each file, `[DRY RUN] {source} -> {destination URI}
    /// ({content type})`, as storage-backend prints a planned upload; nothing is read or sent.
    pub fn print_dry_run(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for file in &self.files {
            writeln!(
                out,
                "[DRY RUN] {} -> {} ({})",
                file.source.display(),
                file.destination.s3_uri(),
                storage_backend::infer_content_type(&file.source.to_string_lossy())
            )?;
        }
        Ok(())
    }
}

impl LocalRelease {
    /// The destination bucket: the product repository, or the legacy Python bucket.
    pub fn bucket(&self) -> Result<S3BucketConfig, Error> {
        Ok(match self.layout {
            PackageLayout::Structured(_) => {
                workflow_outputs::product_release_bucket_config(self.release_type, self.product)?
            }
            PackageLayout::Legacy => workflow_outputs::release_bucket_config(
                self.release_type,
                ReleaseBucketType::Python,
            )?,
        })
    }

    /// The pip index the packages are installed from once published:
    /// `https://{stream}.repo.amd.com/rocm/{index}/`, or the legacy multi-arch index.
    pub fn package_index_url(&self) -> Result<String, Error> {
        Ok(match self.layout {
            PackageLayout::Structured(index) => {
                workflow_outputs::product_package_index_url(self.release_type, index)?
            }
            PackageLayout::Legacy => {
                workflow_outputs::legacy_multi_arch_index_url(self.release_type)?.to_owned()
            }
        })
    }

    /// Lists `source_dir` and plans every upload, parsing every file name (structured layout)
    /// and refusing two files for one destination, before anything is written. No package at
    /// all is [`Error::NoPackages`].
    pub fn plan(&self, source_dir: &Path) -> Result<UploadPlan, Error> {
        if !source_dir.is_dir() {
            return Err(Error::MissingSourceDir(source_dir.to_path_buf()));
        }
        let bucket = self.bucket()?;
        let files = match self.layout {
            PackageLayout::Structured(index) => {
                let entries = file_tree::Walk::new(source_dir).max_depth(1).entries()?;
                let mut files = Vec::new();
                for entry in entries {
                    let name = entry.name();
                    if !(entry.is_file || entry.is_symlink_to_file)
                        || !workflow_outputs::is_python_package_file(name)
                    {
                        continue;
                    }
                    let package = package_name(name)?;
                    files.push(PlannedFile {
                        destination: workflow_outputs::product_package_location(
                            bucket.name(),
                            self.product,
                            index,
                            &package,
                            name,
                        ),
                        source: entry.path,
                    });
                }
                files
            }
            PackageLayout::Legacy => {
                let root =
                    StorageLocation::new(bucket.name(), LEGACY_MULTI_ARCH_WHEEL_PREFIX.to_owned());
                file_tree::Walk::new(source_dir)
                    .entries()?
                    .into_iter()
                    .filter(|e| e.is_file && !e.is_symlink && file_tree::fnmatch("*.whl", e.name()))
                    .map(|e| PlannedFile {
                        destination: root.join(&e.relative()),
                        source: e.path,
                    })
                    .collect()
            }
        };
        if files.is_empty() {
            return Err(Error::NoPackages(source_dir.to_path_buf()));
        }
        let mut seen: BTreeMap<String, &Path> = BTreeMap::new();
        for file in &files {
            let uri = file.destination.s3_uri();
            if let Some(first) = seen.insert(uri.clone(), &file.source) {
                return Err(Error::Collision {
                    destination: uri,
                    first: first.display().to_string(),
                    second: file.source.display().to_string(),
                });
            }
        }
        Ok(UploadPlan { files })
    }
}

/// The writers a publication reports to.
pub struct Writers<'a> {
    /// The progress lines (stderr, or a sink with `-q`).
    pub log: &'a mut dyn Write,
    /// The dry-run lines and the step outputs transcript (stdout).
    pub out: &'a mut dyn Write,
    /// The warning that the step outputs could not be set (stderr, also with `-q`).
    pub warn: &'a mut dyn Write,
}

/// A publication of locally built packages, planned and announced: what
/// [`LocalRelease::start`] returns and [`LocalPublication::finish`] completes.
#[derive(Debug, Clone)]
pub struct LocalPublication {
    plan: UploadPlan,
    bucket: S3BucketConfig,
    index_url: String,
    structured: bool,
}

impl LocalRelease {
    /// Plans the publication of `source_dir` and writes its announcement to `log`: one
    /// `{label}: {source} -> {destination}` line per file in the structured layout, else one
    /// `{plural}: {source_dir} -> s3://{bucket}/v4/whl` line (`label` names one file, e.g.
    /// `PyTorch wheel`; `plural` the directory, `PyTorch wheels`).
    ///
    /// # Errors
    /// [`LocalRelease::plan`]'s errors, and [`Error::Output`] when `log` fails.
    pub fn start(
        &self,
        source_dir: &Path,
        (label, plural): (&str, &str),
        log: &mut dyn Write,
    ) -> Result<LocalPublication, Error> {
        let bucket = self.bucket()?;
        let index_url = self.package_index_url()?;
        let plan = self.plan(source_dir)?;
        let structured = matches!(self.layout, PackageLayout::Structured(_));
        if structured {
            plan.print(label, log).map_err(Error::Output)?;
        } else {
            writeln!(
                log,
                "{plural}: {} -> s3://{}/{LEGACY_MULTI_ARCH_WHEEL_PREFIX}",
                source_dir.display(),
                bucket.name(),
            )
            .map_err(Error::Output)?;
        }
        Ok(LocalPublication {
            plan,
            bucket,
            index_url,
            structured,
        })
    }
}

impl LocalPublication {
    /// The region of the destination bucket.
    pub fn region(&self) -> &str {
        self.bucket.region()
    }

    /// The planned files.
    pub fn plan(&self) -> &UploadPlan {
        &self.plan
    }

    /// Publishes the plan ([`publish`], `concurrency` at a time, progress to `reporter`, the
    /// client configured from `lookup`), or in a dry run writes its dry-run lines to
    /// `writers.out`; then the `Uploaded N wheel files[ (structured)]` line, and the step
    /// output `package_index_url` with its transcript.
    ///
    /// # Errors
    /// The backend's and [`publish`]'s errors, [`Error::Output`] or [`Error::Stdout`] when a
    /// writer fails, and [`Error::Outputs`] when the outputs file cannot be written.
    pub async fn finish(
        &self,
        dry_run: bool,
        concurrency: usize,
        reporter: Arc<dyn Reporter>,
        lookup: &dyn Fn(&str) -> Option<String>,
        writers: Writers<'_>,
    ) -> Result<(), Error> {
        let Writers { log, out, warn } = writers;
        let suffix = if self.structured { " (structured)" } else { "" };
        let count = if dry_run {
            self.plan.print_dry_run(out).map_err(Error::Stdout)?;
            (self.plan.files.len(), 0)
        } else {
            let mut options = TransferOptions::default();
            options.concurrency = concurrency;
            let region = self.region();
            let backend =
                StorageBackend::for_upload(None, options, region, reporter, lookup).await?;
            let StorageBackend::S3(backend) = backend else {
                unreachable!("no staging directory was given");
            };
            let report = publish(&backend, &self.plan, concurrency).await?;
            (report.uploaded, report.unchanged)
        };
        // What was uploaded; what was already there is said apart, never counted as uploaded.
        let (count, unchanged) = count;
        writeln!(log, "Uploaded {count} wheel files{suffix}").map_err(Error::Output)?;
        if unchanged > 0 {
            writeln!(
                log,
                "{unchanged} more already published with the same content, left as they were"
            )
            .map_err(Error::Output)?;
        }
        let outputs = [("package_index_url", self.index_url.as_str())];
        github_actions::report_outputs(&outputs, lookup, out, Some(warn))?;
        Ok(())
    }
}

/// What a publication did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PublishReport {
    /// Files written.
    pub uploaded: usize,
    /// Files whose destination already held the same bytes.
    pub unchanged: usize,
}

/// Publishes every file of `plan` through `backend`, `concurrency` at a time. Every file is
/// attempted; the error lists every failure. Each file is published so that no other
/// publisher's file is silently replaced: the same bytes under its key are left alone (counted
/// as unchanged), other bytes are an [`Error::Conflict`], and every written object is read
/// back and checked.
pub async fn publish(
    backend: &S3StorageBackend,
    plan: &UploadPlan,
    concurrency: usize,
) -> Result<PublishReport, Error> {
    let total = plan.files.len();
    let results: Vec<(String, Result<Published, Error>)> = futures::stream::iter(&plan.files)
        .map(|file| async move {
            (
                file.destination.s3_uri(),
                publish_file(backend, &file.source, &file.destination).await,
            )
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut report = PublishReport::default();
    let mut failures = Vec::new();
    for (destination, result) in results {
        match result {
            Ok(Published::Uploaded) => report.uploaded += 1,
            Ok(Published::Unchanged) => report.unchanged += 1,
            Err(e) => failures.push((destination, e)),
        }
    }
    if failures.is_empty() {
        return Ok(report);
    }
    failures.sort_by(|a, b| a.0.cmp(&b.0));
    if failures.len() == 1 {
        return Err(failures.pop().expect("one failure").1);
    }
    Err(Error::Failed { total, failures })
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Published {
    Uploaded,
    Unchanged,
}

/// Publishes one file so that no other publisher's file is silently replaced:
///
/// 1. the file's SHA-256 is computed, and the destination looked up (HEAD);
/// 2. a destination with the same size and SHA-256 is left alone (a rerun, or a concurrent
///    publisher of identical bytes); one with other bytes is an [`Error::Conflict`]. The
///    SHA-256 is the one our upload recorded, or, for an object of the same size without one
///    (written by another tool), that of its bytes;
/// 3. an absent destination is written only if it is still absent when the write lands: one
///    conditional `PutObject` (`If-None-Match: *`) for a small file, a multipart upload whose
///    completion carries the same condition for a large one; a write that lost a race is
///    looked at again as in 2, and so is one that failed otherwise (its answer may have been
///    lost after it landed);
/// 4. the destination is read back (HEAD): its size and recorded SHA-256 must be the file's,
///    else the write was lost ([`Error::Verify`]).
async fn publish_file(
    backend: &S3StorageBackend,
    source: &Path,
    destination: &StorageLocation,
) -> Result<Published, Error> {
    let path = source.to_path_buf();
    let size = storage_backend::blocking(move || {
        fs_err::metadata(&path)
            .map(|m| m.len())
            .map_err(|e| file_tree::FileError::read(&path, e))
    })
    .await?;
    let sha256 = storage_backend::sha256_file(source).await?;
    let local = Local {
        source,
        destination,
        size,
        sha256: &sha256,
    };
    if let Some(existing) = backend.head_object(destination).await? {
        return local
            .compare(backend, &existing)
            .await
            .map(|()| Published::Unchanged);
    }
    match backend
        .upload_file_if(
            source,
            destination,
            Some(sha256.clone()),
            &WriteCondition::Absent,
        )
        .await
    {
        Ok(_) => {}
        Err(e) if e.is_conflict() => {
            let existing = backend.head_object(destination).await?;
            return match existing {
                Some(existing) => local
                    .compare(backend, &existing)
                    .await
                    .map(|()| Published::Unchanged),
                None => Err(e.into()),
            };
        }
        Err(e) => {
            // A write whose answer was lost may still have landed (a multipart completion
            // told it failed, or retried after the server had done it): the destination
            // holding this file's bytes is what the write was for.
            let landed = match backend.head_object(destination).await? {
                Some(existing) => local.compare(backend, &existing).await.is_ok(),
                None => false,
            };
            if !landed {
                return Err(e.into());
            }
            tracing::warn!(
                "{}: the write reported an error ({e}), but the object holds this file's bytes",
                destination.s3_uri()
            );
        }
    }
    match backend.head_object(destination).await? {
        Some(written) => local
            .compare(backend, &written)
            .await
            .map(|()| Published::Uploaded),
        None => Err(Error::Verify {
            destination: destination.s3_uri(),
            source_file: source.display().to_string(),
            expected: local.describe(),
            found: "nothing".to_owned(),
        }),
    }
}

/// A local file and its destination, compared with what the destination holds.
struct Local<'a> {
    source: &'a Path,
    destination: &'a StorageLocation,
    size: u64,
    sha256: &'a str,
}

impl Local<'_> {
    fn describe(&self) -> String {
        format!("{} bytes, sha256 {}", self.size, self.sha256)
    }

    /// `Ok` when `existing` holds this file's bytes: the same size, and the same SHA-256,
    /// recorded by our upload or, for an object written without one (by another tool), read
    /// from its bytes.
    async fn compare(
        &self,
        backend: &S3StorageBackend,
        existing: &storage_backend::ObjectHead,
    ) -> Result<(), Error> {
        let (sha, origin) = match &existing.sha256 {
            Some(sha) => (sha.clone(), "sha256"),
            None if existing.size == self.size => (
                backend.content_sha256(self.destination, existing).await?,
                "no recorded sha256, bytes of sha256",
            ),
            None => {
                return Err(self.conflict(format!("{} bytes, no recorded sha256", existing.size)));
            }
        };
        if !sha.eq_ignore_ascii_case(self.sha256) {
            return Err(self.conflict(format!("{} bytes, {origin} {sha}", existing.size)));
        }
        if existing.size != self.size {
            return Err(Error::Verify {
                destination: self.destination.s3_uri(),
                source_file: self.source.display().to_string(),
                expected: self.describe(),
                found: format!("{} bytes, sha256 {sha}", existing.size),
            });
        }
        Ok(())
    }

    fn conflict(&self, existing: String) -> Error {
        Error::Conflict {
            destination: self.destination.s3_uri(),
            source_file: self.source.display().to_string(),
            sha256: self.sha256.to_owned(),
            existing,
        }
    }
}

#[cfg(test)]
mod tests;
