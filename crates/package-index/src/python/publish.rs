//! Writing the pages after the packages, safe against other jobs publishing into the same
//! place at the same time.
//!
//! Each directory's `index.html` is the page the others hang on. Its pages are made from
//! what is stored there once this job's packages are up, the `simple/` pages are written, and
//! then `index.html` only if it is still the version read before the listing (`If-Match`, or
//! `If-None-Match: *` for a first page). A job that finds it replaced lists again and writes
//! again; a job whose write landed lists once more and writes again if packages were added
//! meanwhile. So the last page written lists every package uploaded before it, whichever job
//! wrote it.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use storage_backend::{S3StorageBackend, StorageBackend, WriteCondition};
use storage_location::StorageLocation;

use super::{link, packages_in, write_atomically};
use crate::Error;
use crate::error::{full, say};
use crate::pep503::{INDEX_HTML, Link, is_package, pages};

/// Attempts at publishing one directory's pages while other jobs keep changing it.
pub const PUBLISH_ATTEMPTS: usize = 10;

/// A directory that gets pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageDir {
    /// Its path below the upload location (empty for the location itself).
    pub rel: String,
    /// The pages' title.
    pub title: String,
    /// Whether it is a GPU family's directory: its pages link its own packages as `./x` and
    /// those directly in the location as `../x`.
    pub family: bool,
}

impl PageDir {
    /// The path of one of its pages below the location.
    fn page_path(&self, page: &str) -> String {
        if self.rel.is_empty() {
            page.to_owned()
        } else {
            format!("{}/{page}", self.rel)
        }
    }
}

/// Publishes pages to one backend, remembering the SHA-256 of the objects it has read (by key,
/// with the size and time they had).
pub struct Publisher<'a> {
    backend: &'a StorageBackend,
    location: &'a StorageLocation,
    dist: &'a Path,
    digests: HashMap<String, (u64, Option<SystemTime>, String)>,
    /// A dry run that could not read the destination: it plans with this upload's packages
    /// only (a dry run needs no credentials).
    unread: bool,
}

impl<'a> Publisher<'a> {
    /// A publisher of the pages of `dist` (local packages) at `location`.
    pub fn new(backend: &'a StorageBackend, location: &'a StorageLocation, dist: &'a Path) -> Self {
        Self {
            backend,
            location,
            dist,
            digests: HashMap::new(),
            unread: false,
        }
    }

    /// The S3 backend to read the destination with: `None` locally, and in a dry run that
    /// could not read it.
    fn s3(&self) -> Option<&'a S3StorageBackend> {
        match self.backend {
            StorageBackend::S3(s3) if !self.unread => Some(s3),
            _ => None,
        }
    }

    /// `result` of reading the destination; in a dry run a failure is a warning, and nothing
    /// more is read.
    fn read<T: Default>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        match result {
            Err(e) if self.backend.options().dry_run => {
                tracing::warn!(
                    "{}; the planned pages list only the packages of this upload",
                    full(&e)
                );
                self.unread = true;
                Ok(T::default())
            }
            other => other,
        }
    }

    fn at(&self, rel: &str) -> StorageLocation {
        if rel.is_empty() {
            self.location.clone()
        } else {
            self.location.join(rel)
        }
    }

    /// The GPU-family directories already published below the location: those holding an
    /// `index.html`, sorted.
    pub async fn published_families(&mut self) -> Result<Vec<String>, Error> {
        let mut families = Vec::new();
        match self.backend {
            StorageBackend::S3(_) => {
                let Some(s3) = self.s3() else {
                    return Ok(families);
                };
                let prefix = format!("{}/", self.location.relative_path());
                let listed = s3
                    .list_prefix(self.location.bucket(), &prefix, false)
                    .await
                    .map_err(|source| Error::ListPages {
                        uri: self.location.s3_uri(),
                        source,
                    });
                for object in self.read(listed)? {
                    if let Some((dir, INDEX_HTML)) = object.key[prefix.len()..].split_once('/') {
                        families.push(dir.to_owned());
                    }
                }
            }
            StorageBackend::Local(local) => {
                let root = self.location.local_path(local.staging_dir())?;
                families.extend(storage_backend::blocking(move || family_pages(&root)).await?);
            }
        }
        families.retain(|f| !f.starts_with('.'));
        families.sort();
        families.dedup();
        Ok(families)
    }

    /// The packages directly in `rel`: those of the dist directory, and those stored there
    /// under other names, sorted by name; `href` is the file name.
    async fn packages(&mut self, rel: &str) -> Result<Vec<Link>, Error> {
        let local_dir = self.dist.join(rel);
        let mut links = Vec::new();
        if local_dir.is_dir() {
            for path in packages_in(&local_dir)? {
                links.push(link(&path).await?);
            }
        }
        let dir = self.at(rel);
        match self.backend {
            StorageBackend::S3(_) => {
                let Some(s3) = self.s3() else {
                    return Ok(sorted(links));
                };
                let prefix = format!("{}/", dir.relative_path());
                let listed = s3
                    .list_prefix(dir.bucket(), &prefix, true)
                    .await
                    .map_err(|source| Error::ListPackages {
                        uri: dir.s3_uri(),
                        source,
                    });
                for object in self.read(listed)? {
                    let name = object.key[prefix.len()..].to_owned();
                    if !is_package(&name) || links.iter().any(|l| l.name == name) {
                        continue;
                    }
                    let sha256 = self.stored_sha256(s3, &dir, &name, &object).await;
                    let sha256 = self.read(sha256)?;
                    links.push(Link {
                        href: name.clone(),
                        name,
                        sha256,
                    });
                }
            }
            StorageBackend::Local(local) => {
                let path = dir.local_path(local.staging_dir())?;
                if path.is_dir() {
                    for file in packages_in(&path)? {
                        let earlier = link(&file).await?;
                        if !links.iter().any(|l| l.name == earlier.name) {
                            links.push(earlier);
                        }
                    }
                }
            }
        }
        Ok(sorted(links))
    }

    /// The SHA-256 our uploads recorded for `name` in `dir` (empty when none was recorded),
    /// read once per version of the object.
    async fn stored_sha256(
        &mut self,
        s3: &S3StorageBackend,
        dir: &StorageLocation,
        name: &str,
        object: &storage_backend::ListedObject,
    ) -> Result<String, Error> {
        if let Some((size, modified, sha)) = self.digests.get(&object.key)
            && *size == object.size
            && *modified == object.last_modified
        {
            return Ok(sha.clone());
        }
        let loc = dir.join(name);
        let sha = s3
            .head_object(&loc)
            .await
            .map_err(Error::read(loc.s3_uri()))?
            .and_then(|h| h.sha256)
            .unwrap_or_default();
        self.digests.insert(
            object.key.clone(),
            (object.size, object.last_modified, sha.clone()),
        );
        Ok(sha)
    }

    /// What the pages of `dir` list now, in page order.
    async fn links(&mut self, dir: &PageDir) -> Result<Vec<Link>, Error> {
        let own = self.packages(&dir.rel).await?;
        if !dir.family {
            return Ok(own);
        }
        let generic = self.packages("").await?;
        Ok(own
            .into_iter()
            .map(|l| Link {
                href: format!("./{}", l.href),
                ..l
            })
            .chain(generic.into_iter().map(|l| Link {
                href: format!("../{}", l.href),
                ..l
            }))
            .collect())
    }

    /// Publishes the pages of `dir`; the number of pages written.
    pub async fn publish(&mut self, dir: &PageDir, out: &mut dyn Write) -> Result<usize, Error> {
        match self.backend {
            StorageBackend::S3(s3) => self.publish_s3(s3, dir, out).await,
            StorageBackend::Local(local) => {
                let links = self.links(dir).await?;
                let made = pages(&dir.title, &links);
                let dry_run = self.backend.options().dry_run;
                // `index.html` last, so that it never links a page not written yet.
                for (rel, html) in made.iter().skip(1).chain(made.first()) {
                    let path = self
                        .at(&dir.page_path(rel))
                        .local_path(local.staging_dir())?;
                    if dry_run {
                        say!(
                            out,
                            "[DRY RUN] {} bytes -> {} (text/html)",
                            html.len(),
                            path.display()
                        )?;
                    } else {
                        let (at, html) = (path.clone(), html.clone());
                        storage_backend::blocking(move || write_atomically(&at, &html)).await?;
                        say!(out, "[INFO] Generated {}", dir.page_path(rel))?;
                    }
                }
                Ok(made.len())
            }
        }
    }

    async fn publish_s3(
        &mut self,
        s3: &S3StorageBackend,
        dir: &PageDir,
        out: &mut dyn Write,
    ) -> Result<usize, Error> {
        let index = self.at(&dir.page_path(INDEX_HTML));
        for attempt in 1..=PUBLISH_ATTEMPTS {
            if attempt > 1 {
                tokio::time::sleep(backoff(attempt)).await;
            }
            // Read before the listing: a write under this condition lands only if nobody
            // published since, so nothing uploaded before the listing can be left out.
            let head = match self.s3() {
                Some(s3) => s3
                    .head_object(&index)
                    .await
                    .map_err(Error::read(index.s3_uri())),
                None => Ok(None),
            };
            let condition = match self.read(head)? {
                Some(head) => WriteCondition::Matches(head.etag),
                None => WriteCondition::Absent,
            };
            let links = self.links(dir).await?;
            let made = pages(&dir.title, &links);
            for (rel, html) in made.iter().skip(1) {
                let dest = self.at(&dir.page_path(rel));
                s3.put_bytes(html.clone().into_bytes(), &dest)
                    .await
                    .map_err(|source| Error::PageNotWritten {
                        uri: dest.s3_uri(),
                        index: index.s3_uri(),
                        source: Box::new(source),
                    })?;
            }
            match s3
                .put_bytes_if(made[0].1.clone().into_bytes(), &index, &condition)
                .await
            {
                Ok(_) => {}
                Err(e) if e.is_conflict() => {
                    say!(
                        out,
                        "⚠️  Another publisher replaced {} meanwhile; merging again on top of it ({attempt}/{PUBLISH_ATTEMPTS})",
                        index.relative_path()
                    )?;
                    continue;
                }
                Err(source) => {
                    return Err(Error::Write {
                        uri: index.s3_uri(),
                        source,
                    });
                }
            }
            // Packages another job uploaded after the listing are on its pages only if it
            // wrote after this job did; check, and write again if they are missing here.
            if self.links(dir).await? == links {
                for (rel, _) in &made {
                    say!(out, "[INFO] Generated {}", dir.page_path(rel))?;
                }
                return Ok(made.len());
            }
            say!(
                out,
                "[INFO] Packages were added to {} meanwhile; writing its pages again ({attempt}/{PUBLISH_ATTEMPTS})",
                self.at(&dir.rel).relative_path()
            )?;
        }
        Err(Error::PagesKeptChanging {
            uri: index.s3_uri(),
            attempts: PUBLISH_ATTEMPTS,
        })
    }
}

/// `links` sorted by name.
fn sorted(mut links: Vec<Link>) -> Vec<Link> {
    links.sort_by(|a, b| a.name.cmp(&b.name));
    links
}

/// The wait before another attempt: growing with the attempts, and different per process so
/// that two jobs that collided do not collide again in step.
fn backoff(attempt: usize) -> Duration {
    let spread = u64::from(std::process::id() % 97)
        + u64::from(
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .subsec_micros()
                % 101,
        );
    Duration::from_millis(50 * attempt as u64 + spread)
}

/// The directories directly in `root` that hold an `index.html` (none when `root` is no
/// directory).
fn family_pages(root: &std::path::Path) -> Result<Vec<String>, Error> {
    let mut families = Vec::new();
    if root.is_dir() {
        for entry in file_tree::list(root)? {
            if entry.is_dir && entry.path.join(INDEX_HTML).is_file() {
                families.push(entry.name().to_owned());
            }
        }
    }
    Ok(families)
}
