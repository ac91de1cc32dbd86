//! End-to-end tests of the command-line tools.

mod ci_layout;
mod fetch_artifacts;
mod post_build_upload;
