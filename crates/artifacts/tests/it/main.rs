//! Integration tests of the artifacts crate.

// Compared with GNU tar and Python's `tarfile` on Linux, modes and symlinks included.
#[cfg(unix)]
mod tar_compat;
