//! The outputs a CI run uploads beside its artifacts: build and stage logs with their
//! manifest, release tarballs with their checksums, test reports with their index page.
