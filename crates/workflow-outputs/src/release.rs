//! The product package repositories that releases publish to (`therock-repo-amd-*`): their
//! buckets, write roles and regions, the product-local keys of Python packages and the index
//! URLs that pip reads.

use crate::buckets::{PRODUCT_IAM_ACCOUNT, ReleaseProduct, ReleaseType, S3BucketConfig};
use crate::error::closed_set;
use crate::{Error, StorageLocation};

/// Region of the product package repositories.
pub const PRODUCT_REGION: &str = "us-east-2";

/// Every product package repository: release type, product, bucket, write role (in account
/// [`PRODUCT_IAM_ACCOUNT`]) and region. `dev-bkc` and `nightly-bkc` share the `bkc` buckets.
/// This is the one table to change when a bucket, role or region moves.
const PRODUCT_BUCKETS: &[(ReleaseType, ReleaseProduct, &str, &str, &str)] = {
    use ReleaseProduct::{Core, Jax, Pytorch};
    use ReleaseType::{Dev, DevBkc, Nightly, NightlyBkc, Prerelease};
    const R: &str = PRODUCT_REGION;
    &[
        (
            Dev,
            Core,
            "therock-repo-amd-dev-core",
            "therock-repo-dev-core",
            R,
        ),
        (
            Dev,
            Pytorch,
            "therock-repo-amd-dev-pytorch",
            "therock-repo-dev-pytorch",
            R,
        ),
        (
            Dev,
            Jax,
            "therock-repo-amd-dev-jax",
            "therock-repo-dev-jax",
            R,
        ),
        (
            DevBkc,
            Core,
            "therock-repo-amd-bkc-core",
            "therock-repo-bkc-core",
            R,
        ),
        (
            DevBkc,
            Pytorch,
            "therock-repo-amd-bkc-pytorch",
            "therock-repo-bkc-pytorch",
            R,
        ),
        (
            DevBkc,
            Jax,
            "therock-repo-amd-bkc-jax",
            "therock-repo-bkc-jax",
            R,
        ),
        (
            Nightly,
            Core,
            "therock-repo-amd-nightly-core",
            "therock-repo-nightly-core",
            R,
        ),
        (
            Nightly,
            Pytorch,
            "therock-repo-amd-nightly-pytorch",
            "therock-repo-nightly-pytorch",
            R,
        ),
        (
            Nightly,
            Jax,
            "therock-repo-amd-nightly-jax",
            "therock-repo-nightly-jax",
            R,
        ),
        (
            NightlyBkc,
            Core,
            "therock-repo-amd-bkc-core",
            "therock-repo-bkc-core",
            R,
        ),
        (
            NightlyBkc,
            Pytorch,
            "therock-repo-amd-bkc-pytorch",
            "therock-repo-bkc-pytorch",
            R,
        ),
        (
            NightlyBkc,
            Jax,
            "therock-repo-amd-bkc-jax",
            "therock-repo-bkc-jax",
            R,
        ),
        (
            Prerelease,
            Core,
            "therock-repo-amd-rc-core",
            "therock-repo-rc-core",
            R,
        ),
        (
            Prerelease,
            Pytorch,
            "therock-repo-amd-rc-pytorch",
            "therock-repo-rc-pytorch",
            R,
        ),
        (
            Prerelease,
            Jax,
            "therock-repo-amd-rc-jax",
            "therock-repo-rc-jax",
            R,
        ),
    ]
};

/// The package repository bucket of a product from the product table:
/// `therock-repo-amd-{stream}-{product}`, written by role `therock-repo-{stream}-{product}`.
/// `ci` publishes no releases.
pub fn product_release_bucket_config(
    release_type: ReleaseType,
    product: ReleaseProduct,
) -> Result<S3BucketConfig, Error> {
    // `ci` has no stream: its error names the allowed release types.
    release_type.release_stream()?;
    let (_, _, bucket, role, region) = PRODUCT_BUCKETS
        .iter()
        .find(|(rt, p, ..)| *rt == release_type && *p == product)
        .expect("every release type and product is in the product table");
    Ok(S3BucketConfig::new(
        *bucket,
        *region,
        PRODUCT_IAM_ACCOUNT,
        Some((*role).to_owned()),
    ))
}

closed_set! {
    /// The Python package indexes of a product repository.
    PythonIndex, "python_index", {
        /// The stable index.
        Whl = "whl",
        /// The index of the new (kpack-split, multi-arch) layout.
        WhlNext = "whl-next",
    }
}

/// The extensions of the Python package files published to a product repository (wheels and
/// sdists); a plain, case-sensitive suffix match.
pub const PYTHON_PACKAGE_EXTENSIONS: &[&str] = &[".whl", ".tar.gz", ".zip"];

/// Whether `file_name` has one of [`PYTHON_PACKAGE_EXTENSIONS`].
pub fn is_python_package_file(file_name: &str) -> bool {
    PYTHON_PACKAGE_EXTENSIONS
        .iter()
        .any(|ext| file_name.ends_with(ext))
}

/// Where a Python package file goes in a product repository:
/// `v5/rocm/{product}/{index}/{package}/{file_name}` in `bucket`, with `package` the
/// normalized project name (`rocm-sdk-core`).
pub fn product_package_location(
    bucket: &str,
    product: ReleaseProduct,
    index: PythonIndex,
    package: &str,
    file_name: &str,
) -> StorageLocation {
    StorageLocation::new(
        bucket,
        format!("v5/rocm/{product}/{index}/{package}/{file_name}"),
    )
}

/// The pip index of a product repository's Python packages:
/// `https://{stream}.repo.amd.com/rocm/{index}/`.
pub fn product_package_index_url(
    release_type: ReleaseType,
    index: PythonIndex,
) -> Result<String, Error> {
    let stream = release_type.release_stream()?;
    Ok(format!("https://{stream}.repo.amd.com/rocm/{index}/"))
}

/// The key prefix of wheels in the legacy Python bucket (`therock-*-python`) for multi-arch
/// builds.
pub const LEGACY_MULTI_ARCH_WHEEL_PREFIX: &str = "v4/whl";

/// The pip index of the legacy multi-arch wheels (`https://rocm.{devreleases|nightlies|
/// prereleases}.amd.com/whl-multi-arch/`); `ci` has none.
pub fn legacy_multi_arch_index_url(release_type: ReleaseType) -> Result<&'static str, Error> {
    match release_type {
        ReleaseType::Ci => release_type.release_stream().map(|_| ""),
        ReleaseType::Dev | ReleaseType::DevBkc => {
            Ok("https://rocm.devreleases.amd.com/whl-multi-arch/")
        }
        ReleaseType::Nightly | ReleaseType::NightlyBkc => {
            Ok("https://rocm.nightlies.amd.com/whl-multi-arch/")
        }
        ReleaseType::Prerelease => Ok("https://rocm.prereleases.amd.com/whl-multi-arch/"),
    }
}

/// The key prefixes of wheels in the legacy Python bucket for per-family (not kpack-split)
/// builds, in the order they are published: staging first.
pub const LEGACY_PER_FAMILY_WHEEL_PREFIXES: [&str; 2] = ["v3/whl-staging", "v3/whl"];

/// The key prefix of ROCm tarballs in the core repository: `v5/rocm/core/tarball`, or
/// `v5/rocm/core/tarball-asan` for ASAN builds.
pub fn core_tarball_prefix(asan: bool) -> &'static str {
    if asan {
        "v5/rocm/core/tarball-asan"
    } else {
        "v5/rocm/core/tarball"
    }
}

/// The key prefix of a native package repository (`deb`, `rpm`) in the core repository:
/// `v5/rocm/core/packages[-asan]/{pkg_type}`, below which non-prerelease releases add a
/// `{date}-{run_id}` directory (prereleases publish to the fixed prefix).
pub fn core_native_packages_prefix(
    release_type: ReleaseType,
    asan: bool,
    pkg_type: &str,
    date: &str,
    run_id: &str,
) -> String {
    let base = if asan {
        "v5/rocm/core/packages-asan"
    } else {
        "v5/rocm/core/packages"
    };
    if release_type == ReleaseType::Prerelease {
        format!("{base}/{pkg_type}")
    } else {
        format!("{base}/{pkg_type}/{date}-{run_id}")
    }
}

#[cfg(test)]
mod tests;
