//! Publishing release outputs to the product package repositories (`therock-repo-amd-*`).
//!
//! A publication is planned first: every source is listed, every Python file name is parsed
//! into its project, and two sources mapping to one destination are refused, all before the
//! first write. The uploads then never silently replace another publisher's file: an object
//! already holding the same bytes (its recorded SHA-256) is left alone, one holding other bytes
//! is an error naming both, and every written object is checked afterwards.
//!
//! ```
//! use rock_ci_release_publish::{LocalRelease, PackageLayout};
//! use workflow_outputs::{PythonIndex, ReleaseProduct, ReleaseType};
//!
//! let dir = tempfile::tempdir()?;
//! fs_err::write(dir.path().join("jax-0.8.0-py3-none-any.whl"), "wheel")?;
//! fs_err::write(dir.path().join("notes.txt"), "not a package")?;
//! let release = LocalRelease::new(
//!     ReleaseType::Dev,
//!     ReleaseProduct::Jax,
//!     PackageLayout::Structured(PythonIndex::WhlNext),
//! );
//! let plan = release.plan(dir.path())?;
//! assert_eq!(plan.files.len(), 1);
//! assert_eq!(
//!     plan.files[0].destination.s3_uri(),
//!     "s3://therock-repo-amd-dev-jax/v5/rocm/jax/whl-next/jax/jax-0.8.0-py3-none-any.whl"
//! );
//! assert_eq!(release.package_index_url()?, "https://dev.repo.amd.com/rocm/whl-next/");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

mod error;
pub mod local;
pub mod names;
pub mod rocm;

pub use error::Error;
pub use local::{
    LocalPublication, LocalRelease, PackageLayout, PlannedFile, PublishReport, UploadPlan, Writers,
    publish,
};
pub use names::{NameError, package_name};

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
