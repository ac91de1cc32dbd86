//! The tools: each module is one tool, its flags and a short `run` over the library crates.

use std::process::ExitCode;

mod artifact_manager;
mod build_python_packages;
mod build_tarballs;
mod ci_layout;
mod fetch_artifacts;
mod find_artifacts_for_commit;
mod find_latest_artifacts;
mod install_rocm_from_artifacts;
mod post_build_upload;
mod post_stage_upload;
mod publish_jax_to_release_bucket;
mod publish_pytorch_to_release_bucket;
mod publish_rocm_to_release_buckets;
mod upload_package_repo;
mod upload_python_packages;
mod upload_tarballs;
mod upload_test_report_script;
mod write_artifacts_bucket_info;
mod write_product_release_bucket_info;

pub(crate) type Main = fn() -> ExitCode;

/// Each tool's name (as installed) and its `main`.
pub(crate) const TOOLS: &[(&str, Main)] = &[
    ("artifact_manager", artifact_manager::main),
    ("build_python_packages", build_python_packages::main),
    ("build_tarballs", build_tarballs::main),
    ("ci_layout", ci_layout::main),
    ("fetch_artifacts", fetch_artifacts::main),
    ("find_artifacts_for_commit", find_artifacts_for_commit::main),
    ("find_latest_artifacts", find_latest_artifacts::main),
    (
        "install_rocm_from_artifacts",
        install_rocm_from_artifacts::main,
    ),
    ("post_build_upload", post_build_upload::main),
    ("post_stage_upload", post_stage_upload::main),
    (
        "publish_jax_to_release_bucket",
        publish_jax_to_release_bucket::main,
    ),
    (
        "publish_pytorch_to_release_bucket",
        publish_pytorch_to_release_bucket::main,
    ),
    (
        "publish_rocm_to_release_buckets",
        publish_rocm_to_release_buckets::main,
    ),
    ("upload_package_repo", upload_package_repo::main),
    ("upload_python_packages", upload_python_packages::main),
    ("upload_tarballs", upload_tarballs::main),
    ("upload_test_report_script", upload_test_report_script::main),
    (
        "write_artifacts_bucket_info",
        write_artifacts_bucket_info::main,
    ),
    (
        "write_product_release_bucket_info",
        write_product_release_bucket_info::main,
    ),
];

/// The `main` of the tool called `name`.
pub(crate) fn tool(name: &str) -> Option<Main> {
    TOOLS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, main)| main)
}
