//! Writes the synthetic ROCm artifact set of the tests to a directory (real ELF files built with
//! `cc`), for trying `build_python_packages` by hand.
//!
//!     cargo run -p rock-ci-test-support --example rocm_artifacts -- DIR [kpack|legacy]

#![allow(
    clippy::print_stdout,
    missing_docs,
    reason = "a command-line fixture generator: prints its result; not an API"
)]

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(
        args.next()
            .expect("usage: rocm_artifacts DIR [kpack|legacy]"),
    );
    let kpack = args.next().as_deref() != Some("legacy");
    rock_ci_test_support::rocm::artifact_set(&dir, kpack);
    println!(
        "{} artifact set written to {}",
        if kpack { "kpack" } else { "legacy" },
        dir.display()
    );
}
