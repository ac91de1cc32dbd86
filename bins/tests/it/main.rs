//! End-to-end tests of the command-line tools.

mod artifact_manager;
mod bucket_info;
mod build_python_packages;
mod ci_layout;
mod elf_patch;
mod fetch_artifacts;
mod install_rocm;
mod post_build_upload;
mod robustness;
