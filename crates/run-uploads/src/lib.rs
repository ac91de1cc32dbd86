//! The outputs a CI run uploads beside its artifacts: build and stage logs with their
//! manifest, release tarballs with their checksums, test reports with their index page.
//!
//! One module per job, each a [`Plan`](build_logs::Plan) and an async `run` that prints its
//! lines to a writer and reports transfers to a [`storage_backend::Reporter`]:
//!
//! - [`build_logs`] (`post_build_upload`): archives a build's ninja and ccache logs, uploads
//!   the logs and the manifest of an artifact group, links them from the job summary.
//! - [`stage_logs`] (`post_stage_upload`): the same for one stage of a multi-arch build.
//! - [`tarballs`] (`upload_tarballs`): release tarballs with a `.sha256sum` each, and the
//!   `tarball_urls` step output.
//! - [`test_report`] (`upload_test_report_script`): HTML reports with an index page, linked
//!   from the job summary.
//!
//! What they share: [`log_dir`], [`upload_logs`], [`archive_ccache_logs`],
//! [`source_date_epoch`], the checks of values that become parts of keys
//! ([`check_key_component`], ...), and [`combine`], which turns every failure of a job that
//! carried on past them into one [`Error`]. File work (archives, listings, hashing, the index
//! page) runs on the blocking pool ([`storage_backend::blocking`]).
//!
//! ```
//! use rock_ci_run_uploads::{check_key_component, source_date_epoch};
//!
//! assert!(check_key_component("math-libs", "--stage").is_ok());
//! assert!(check_key_component("../x", "--stage").is_err());
//! assert_eq!(source_date_epoch(&|_| Some("1700000000".to_owned())), 1_700_000_000);
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

pub mod build_logs;
mod error;
mod keys;
mod logs;
pub mod package_repo;
pub mod python_packages;
pub mod stage_logs;
mod steps;
pub mod tarballs;
pub mod test_report;

pub use error::{Error, KeyError, combine, full};
pub use keys::{
    check_index_file_name, check_key_component, check_key_path, check_stage_name, log_destination,
};
pub use logs::{MANIFEST_PATH, archive_ccache_logs, log_dir, source_date_epoch, upload_logs};

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
