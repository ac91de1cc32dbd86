//! The backend of an uploading tool and how it names destinations to the user: a local
//! staging directory or S3, the preflight that proves a destination writable.

use std::path::Path;
use std::sync::Arc;

use storage_location::StorageLocation;

use crate::{Direction, Error, Reporter, StorageBackend, TransferOptions};

/// Where `location` is for the user: its path in the local staging directory `output_dir`,
/// else its S3 URI.
pub fn shown(output_dir: Option<&Path>, location: &StorageLocation) -> String {
    match output_dir {
        Some(dir) => location
            .local_path(dir)
            .map_or_else(|_| location.s3_uri(), |p| p.display().to_string()),
        None => location.s3_uri(),
    }
}

impl StorageBackend {
    /// The backend an uploading tool writes with: a local staging directory when
    /// `output_dir` is given, else S3 through a client for `region` configured from `lookup`
    /// (endpoint, credentials, limits), with connections for every part in flight, giving up
    /// on an unreachable endpoint for the whole run
    /// ([`crate::S3StorageBackend::giving_up_when_unreachable`]). Progress goes to `reporter`.
    ///
    /// # Errors
    /// As [`crate::S3Client::connect_with`]; [`Error::NoS3Support`] without a directory when the
    /// `s3` feature is off.
    #[cfg_attr(
        not(feature = "s3"),
        expect(clippy::unused_async, reason = "it awaits S3 in the s3 build")
    )]
    pub async fn for_upload(
        output_dir: Option<&Path>,
        options: TransferOptions,
        region: &str,
        reporter: Arc<dyn Reporter>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        if let Some(dir) = output_dir {
            return Ok(Self::local(dir, options).with_reporter(reporter));
        }
        #[cfg(feature = "s3")]
        {
            let client_options = crate::ClientOptions {
                region: Some(region.to_owned()),
                max_idle_connections: options.concurrency * options.part_concurrency,
                ..crate::ClientOptions::default()
            };
            let client = crate::S3Client::connect_with(&client_options, lookup).await?;
            let backend =
                crate::S3StorageBackend::new(client, options).giving_up_when_unreachable();
            Ok(Self::S3(backend).with_reporter(reporter))
        }
        #[cfg(not(feature = "s3"))]
        {
            let _ = (options, lookup, reporter);
            Err(Error::NoS3Support {
                target: format!("S3 in {region} (no output directory given)"),
            })
        }
    }

    /// Proves that `root` can be written to (credentials, bucket, a probe object written and
    /// deleted) and returns the line that says so, `[INFO] Preflight ok: … is reachable and
    /// writable`, naming `root` as [`shown`] with `output_dir`.
    ///
    /// # Errors
    /// [`Error::Preflight`] naming the destination, with the failure as its cause.
    pub async fn preflight_upload(
        &self,
        root: &StorageLocation,
        output_dir: Option<&Path>,
    ) -> Result<String, Error> {
        let target = shown(output_dir, root);
        match self.preflight(Direction::Upload, root).await {
            Ok(()) => Ok(format!(
                "[INFO] Preflight ok: {target} is reachable and writable"
            )),
            Err(source) => Err(Error::Preflight {
                target,
                source: Box::new(source),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
