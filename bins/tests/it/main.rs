//! End-to-end tests of the command-line tools.

mod artifact_manager;
mod bucket_info;
mod build_python_packages;
mod ci_layout;
mod common;
mod elf_patch;
mod fetch_artifacts;
mod find_artifacts;
mod install_rocm;
mod multicall;
mod post_build_upload;
mod post_stage_upload;
mod product_bucket_info;
mod publish_release;
mod publish_rocm;
mod publish_store;
mod robustness;
mod store;
mod tls;
mod upload_package_repo;
mod upload_python_packages;
mod upload_tarballs;
mod upload_test_report;
