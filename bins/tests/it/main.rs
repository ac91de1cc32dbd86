//! End-to-end tests of the command-line tools.

mod artifact_manager;
mod bucket_info;
mod build_tarballs;
// Builds Linux wheels from ELF fixtures and installs them with the Linux `python3` into a venv
// (symlinked): about Linux itself.
#[cfg(unix)]
mod build_python_packages;
// One CI run end to end: pip, apt-get, dnf and GNU tar on the Linux side; the Windows jobs
// run the Windows build under Wine from it.
mod ci_layout;
#[cfg(unix)]
mod ci_run;
mod common;
mod docs;
// ELF files built with `cc`, run, read with `readelf`; FIFOs, owners and modes: about Linux
// itself.
#[cfg(unix)]
mod elf_patch;
mod elf_patch_files;
mod fetch_artifacts;
mod find_artifacts;
mod install_rocm;
mod members;
mod migration;
mod multicall;
mod post_build_upload;
mod post_stage_upload;
mod product_bucket_info;
mod publish_release;
mod publish_rocm;
mod publish_store;
mod python_packages_host;
mod robustness;
mod store;
mod tls;
// Packages built with dpkg-deb and rpmbuild, repositories read back by apt-get and dnf: Linux
// programs, which a Windows test cannot run.
#[cfg(unix)]
mod upload_package_repo;
mod upload_python_packages;
mod upload_tarballs;
mod upload_test_report;
