//! Integration tests of the artifacts crate.

extern crate rock_ci_artifacts as artifacts;

// Compared with GNU tar and Python's `tarfile` on Linux, modes and symlinks included.
#[cfg(unix)]
mod tar_compat;
// The member index of multi-frame archives (the sample tree has symlinks).
#[cfg(unix)]
mod member_index;
// Read and written by the zstd and pzstd programs, GNU tar and Python's pyzstd.
#[cfg(unix)]
mod zstd_compat;
