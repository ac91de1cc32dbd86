//! Integration tests of the artifacts crate.

mod tar_compat;
