//! Package indexes: Debian `Packages`/`Release`/by-hash, RPM `repomd.xml`, PEP 503 pages,
//! as pure functions of package metadata; and their publishing over storage-backend.
//!
//! - [`deb`]: a `.deb`'s control data, the `Packages` index in `dpkg-scanpackages` order,
//!   `Release` with its checksums and by-hash names.
//! - [`rpm`]: `repomd.xml` and `primary` metadata read with an XML parser, checksums of the
//!   files `repomd.xml` lists, `createrepo_c` and `mergerepo_c`.
//! - [`repo`]: an APT or YUM/DNF repository published from a directory of packages, merged
//!   with the one already published: the publish order, conditional writes, retries on races
//!   and the repair of half-finished runs.
//! - [`pep503`]: the `--find-links` page and the simple index of Python packages.
//! - [`wheel`]: the checks of a wheel's file name, archive and metadata.
//! - [`python`]: wheels and sdists uploaded with their pages, safe against concurrent
//!   publishers.
//!
//! Nothing here prints: progress lines go to the writers the caller passes.

// Every public item is documented: the crate is published for other tools.
#![deny(missing_docs)]

pub mod deb;
mod error;
pub mod pep503;
pub mod python;
pub mod repo;
pub mod rpm;
pub mod wheel;

pub use error::Error;

// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
