//! The local staging directory side of [`crate::StorageBackend`].

use file_tree::FileError;
use std::path::{Path, PathBuf};

use storage_location::StorageLocation;

use crate::error::Error;
use crate::patterns::{select, walk};
use crate::{Common, Outcome, Overwrite, TransferOptions, sha256_file};

/// Mirrors keys below a staging directory; bucket names are ignored.
#[derive(Clone)]
pub struct LocalStorageBackend {
    staging_dir: PathBuf,
    pub(crate) common: Common,
}

/// Copies `src` to `dst` through a temporary file in `dst`'s directory, keeping permission bits
/// and modification time; the rename makes it appear whole or not at all.
fn copy_atomic(src: &Path, dst: &Path) -> Result<(), Error> {
    let parent = dst.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(parent).map_err(|e| Error::from(FileError::write(parent, e)))?;
    let write_err = |source| Error::from(FileError::write(dst, source));
    let meta = fs_err::metadata(src).map_err(|e| Error::from(FileError::read(src, e)))?;
    let name = dst
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = file_tree::temp_file_in(parent, &name).map_err(write_err)?;
    let mut input = fs_err::File::open(src).map_err(|e| Error::from(FileError::read(src, e)))?;
    std::io::copy(&mut input, temp.as_file_mut()).map_err(write_err)?;
    let file = temp.as_file();
    file.set_permissions(meta.permissions())
        .map_err(write_err)?;
    if let Ok(mtime) = meta.modified() {
        file.set_modified(mtime).map_err(write_err)?;
    }
    temp.persist(dst).map_err(|e| write_err(e.error))?;
    Ok(())
}

impl LocalStorageBackend {
    /// A backend rooted at `staging_dir`.
    pub fn new(staging_dir: impl Into<PathBuf>, options: TransferOptions) -> Self {
        Self {
            staging_dir: staging_dir.into(),
            common: Common::new(options),
        }
    }

    /// The staging directory.
    pub fn staging_dir(&self) -> &Path {
        &self.staging_dir
    }

    async fn check_overwrite(
        &self,
        source: &Path,
        target: &Path,
    ) -> Result<Option<Outcome>, Error> {
        match self.common.options.overwrite {
            Overwrite::Never if target.exists() => {
                Err(Error::AlreadyExists(target.display().to_string()))
            }
            Overwrite::Always | Overwrite::Never => Ok(None),
            Overwrite::IfDifferent => {
                if target.is_file() && sha256_file(source).await? == sha256_file(target).await? {
                    Ok(Some(Outcome::Skipped))
                } else {
                    Ok(None)
                }
            }
        }
    }

    pub(crate) async fn upload_file(
        &self,
        source: &Path,
        dest: &StorageLocation,
    ) -> Result<Outcome, Error> {
        let size = crate::source_size(source).await?;
        let target = dest.local_path(&self.staging_dir)?;
        if self.common.dry_run_line(&format!(
            "[DRY RUN] {} -> {}",
            source.display(),
            target.display()
        )) {
            return Ok(Outcome::Planned);
        }
        if let Some(outcome) = self.check_overwrite(source, &target).await? {
            return Ok(outcome);
        }
        let id = self
            .common
            .reporter
            .on_transfer_start(&target.display().to_string(), size);
        let (from, to) = (source.to_path_buf(), target.clone());
        crate::blocking(move || copy_atomic(&from, &to)).await?;
        self.common.reporter.on_transfer_progress(id, size);
        self.common.reporter.on_transfer_complete(id);
        Ok(Outcome::Transferred)
    }

    pub(crate) async fn copy_file(
        &self,
        src: &StorageLocation,
        dst: &StorageLocation,
    ) -> Result<Outcome, Error> {
        let source = src.local_path(&self.staging_dir)?;
        let target = dst.local_path(&self.staging_dir)?;
        if self.common.dry_run_line(&format!(
            "[DRY RUN] copy {} -> {}",
            source.display(),
            target.display()
        )) {
            return Ok(Outcome::Planned);
        }
        if !source.is_file() {
            return Err(Error::MissingSource(source));
        }
        if let Some(outcome) = self.check_overwrite(&source, &target).await? {
            return Ok(outcome);
        }
        crate::blocking(move || copy_atomic(&source, &target)).await?;
        Ok(Outcome::Transferred)
    }

    pub(crate) async fn list_files(
        &self,
        location: &StorageLocation,
        include: &[String],
    ) -> Result<Vec<StorageLocation>, Error> {
        let base = location.local_path(&self.staging_dir)?;
        if !base.is_dir() {
            return Ok(Vec::new());
        }
        let include = include.to_vec();
        let rel_root = location.relative_path().trim_end_matches('/').to_owned();
        let bucket = location.bucket().to_owned();
        crate::blocking(move || {
            let entries = walk(&base).map_err(|e| Error::from(FileError::read(&base, e)))?;
            let mut out: Vec<StorageLocation> = select(&entries, &include, &[])
                .into_iter()
                .filter(|e| e.is_file || e.is_symlink_to_file)
                .map(|e| {
                    let key = if rel_root.is_empty() {
                        e.relative()
                    } else {
                        format!("{rel_root}/{}", e.relative())
                    };
                    StorageLocation::new(bucket.clone(), key)
                })
                .collect();
            out.sort_by(|a, b| a.relative_path().cmp(b.relative_path()));
            Ok(out)
        })
        .await
    }

    pub(crate) fn preflight(
        &self,
        direction: crate::Direction,
        location: &StorageLocation,
    ) -> Result<(), Error> {
        let dir = location.local_path(&self.staging_dir)?;
        match direction {
            crate::Direction::Upload => {
                let mut existing = dir.as_path();
                while !existing.exists() {
                    existing = existing.parent().unwrap_or(Path::new("."));
                }
                tempfile::tempfile_in(existing)
                    .map(|_| ())
                    .map_err(|source| Error::from(FileError::write(existing, source)))
            }
            crate::Direction::Download => fs_err::read_dir(&self.staging_dir)
                .map(|_| ())
                .map_err(|source| Error::from(FileError::read(&self.staging_dir, source))),
        }
    }
}
