//! End-to-end tests of the command-line tools.

mod ci_layout;
