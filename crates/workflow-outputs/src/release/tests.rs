use super::*;
use crate::release_package_index_url;

/// The specification's complete table of product buckets (5 release types × 3 products):
/// release type, product, bucket, role ARN, index URL.
const VECTORS: [(&str, &str, &str, &str, &str); 15] = [
    (
        "dev",
        "core",
        "therock-repo-amd-dev-core",
        "arn:aws:iam::324352301041:role/therock-repo-dev-core",
        "https://dev.repo.amd.com/rocm/whl-next/",
    ),
    (
        "dev",
        "pytorch",
        "therock-repo-amd-dev-pytorch",
        "arn:aws:iam::324352301041:role/therock-repo-dev-pytorch",
        "https://dev.repo.amd.com/rocm/whl-next/",
    ),
    (
        "dev",
        "jax",
        "therock-repo-amd-dev-jax",
        "arn:aws:iam::324352301041:role/therock-repo-dev-jax",
        "https://dev.repo.amd.com/rocm/whl-next/",
    ),
    (
        "dev-bkc",
        "core",
        "therock-repo-amd-bkc-core",
        "arn:aws:iam::324352301041:role/therock-repo-bkc-core",
        "https://bkc.repo.amd.com/rocm/whl-next/",
    ),
    (
        "dev-bkc",
        "pytorch",
        "therock-repo-amd-bkc-pytorch",
        "arn:aws:iam::324352301041:role/therock-repo-bkc-pytorch",
        "https://bkc.repo.amd.com/rocm/whl-next/",
    ),
    (
        "dev-bkc",
        "jax",
        "therock-repo-amd-bkc-jax",
        "arn:aws:iam::324352301041:role/therock-repo-bkc-jax",
        "https://bkc.repo.amd.com/rocm/whl-next/",
    ),
    (
        "nightly",
        "core",
        "therock-repo-amd-nightly-core",
        "arn:aws:iam::324352301041:role/therock-repo-nightly-core",
        "https://nightly.repo.amd.com/rocm/whl-next/",
    ),
    (
        "nightly",
        "pytorch",
        "therock-repo-amd-nightly-pytorch",
        "arn:aws:iam::324352301041:role/therock-repo-nightly-pytorch",
        "https://nightly.repo.amd.com/rocm/whl-next/",
    ),
    (
        "nightly",
        "jax",
        "therock-repo-amd-nightly-jax",
        "arn:aws:iam::324352301041:role/therock-repo-nightly-jax",
        "https://nightly.repo.amd.com/rocm/whl-next/",
    ),
    (
        "nightly-bkc",
        "core",
        "therock-repo-amd-bkc-core",
        "arn:aws:iam::324352301041:role/therock-repo-bkc-core",
        "https://bkc.repo.amd.com/rocm/whl-next/",
    ),
    (
        "nightly-bkc",
        "pytorch",
        "therock-repo-amd-bkc-pytorch",
        "arn:aws:iam::324352301041:role/therock-repo-bkc-pytorch",
        "https://bkc.repo.amd.com/rocm/whl-next/",
    ),
    (
        "nightly-bkc",
        "jax",
        "therock-repo-amd-bkc-jax",
        "arn:aws:iam::324352301041:role/therock-repo-bkc-jax",
        "https://bkc.repo.amd.com/rocm/whl-next/",
    ),
    (
        "prerelease",
        "core",
        "therock-repo-amd-rc-core",
        "arn:aws:iam::324352301041:role/therock-repo-rc-core",
        "https://rc.repo.amd.com/rocm/whl-next/",
    ),
    (
        "prerelease",
        "pytorch",
        "therock-repo-amd-rc-pytorch",
        "arn:aws:iam::324352301041:role/therock-repo-rc-pytorch",
        "https://rc.repo.amd.com/rocm/whl-next/",
    ),
    (
        "prerelease",
        "jax",
        "therock-repo-amd-rc-jax",
        "arn:aws:iam::324352301041:role/therock-repo-rc-jax",
        "https://rc.repo.amd.com/rocm/whl-next/",
    ),
];

#[test]
fn every_product_bucket_of_the_table() {
    for (rt, product, bucket, arn, url) in VECTORS {
        let rt: ReleaseType = rt.parse().unwrap();
        let product: ReleaseProduct = product.parse().unwrap();
        let config = product_release_bucket_config(rt, product).unwrap();
        assert_eq!(config.name(), bucket, "{rt} {product}");
        assert_eq!(config.region(), "us-east-2", "{rt} {product}");
        assert_eq!(
            config.write_access_iam_role().unwrap().as_deref(),
            Some(arn),
            "{rt} {product}"
        );
        assert_eq!(release_package_index_url(rt).unwrap(), url);
        assert_eq!(
            product_package_index_url(rt, PythonIndex::WhlNext).unwrap(),
            url
        );
    }
    // Every row of the table is reached exactly once.
    assert_eq!(PRODUCT_BUCKETS.len(), VECTORS.len());
}

#[test]
fn ci_and_unknown_products_are_refused() {
    let err = product_release_bucket_config(ReleaseType::Ci, ReleaseProduct::Core).unwrap_err();
    assert_eq!(
        err.to_string(),
        "release_type='ci' is invalid, expected one of [dev, dev-bkc, nightly, nightly-bkc, prerelease]"
    );
    assert!(product_package_index_url(ReleaseType::Ci, PythonIndex::Whl).is_err());
    assert!(legacy_multi_arch_index_url(ReleaseType::Ci).is_err());
    let err = "python".parse::<ReleaseProduct>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "product='python' is invalid, expected one of [core, jax, pytorch]"
    );
    let err = "simple".parse::<PythonIndex>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "python_index='simple' is invalid, expected one of [whl, whl-next]"
    );
}

#[test]
fn product_local_keys_and_index_urls() {
    let loc = product_package_location(
        "therock-repo-amd-dev-pytorch",
        ReleaseProduct::Pytorch,
        PythonIndex::WhlNext,
        "amd-torch-device-gfx942",
        "amd_torch_device_gfx942-2.10.0+rocm7.13.0-py3-none-linux_x86_64.whl",
    );
    assert_eq!(
        loc.s3_uri(),
        "s3://therock-repo-amd-dev-pytorch/v5/rocm/pytorch/whl-next/amd-torch-device-gfx942/amd_torch_device_gfx942-2.10.0+rocm7.13.0-py3-none-linux_x86_64.whl"
    );
    assert_eq!(
        product_package_index_url(ReleaseType::NightlyBkc, PythonIndex::Whl).unwrap(),
        "https://bkc.repo.amd.com/rocm/whl/"
    );
    for (rt, url) in [
        ("dev", "https://rocm.devreleases.amd.com/whl-multi-arch/"),
        (
            "dev-bkc",
            "https://rocm.devreleases.amd.com/whl-multi-arch/",
        ),
        ("nightly", "https://rocm.nightlies.amd.com/whl-multi-arch/"),
        (
            "nightly-bkc",
            "https://rocm.nightlies.amd.com/whl-multi-arch/",
        ),
        (
            "prerelease",
            "https://rocm.prereleases.amd.com/whl-multi-arch/",
        ),
    ] {
        assert_eq!(
            legacy_multi_arch_index_url(rt.parse().unwrap()).unwrap(),
            url
        );
    }
    for (name, yes) in [
        ("a-1.0-py3-none-any.whl", true),
        ("rocm-7.13.0.tar.gz", true),
        ("Apex_Extra-0.1.zip", true),
        ("index.html", false),
        ("a.WHL", false),
        ("x.tar.gz.sha256sum", false),
    ] {
        assert_eq!(is_python_package_file(name), yes, "{name}");
    }
}

#[test]
fn core_prefixes() {
    assert_eq!(core_tarball_prefix(false), "v5/rocm/core/tarball");
    assert_eq!(core_tarball_prefix(true), "v5/rocm/core/tarball-asan");
    assert_eq!(
        core_native_packages_prefix(ReleaseType::Dev, false, "deb", "20260822", "123"),
        "v5/rocm/core/packages/deb/20260822-123"
    );
    assert_eq!(
        core_native_packages_prefix(ReleaseType::NightlyBkc, true, "rpm", "20260822", "123"),
        "v5/rocm/core/packages-asan/rpm/20260822-123"
    );
    assert_eq!(
        core_native_packages_prefix(ReleaseType::Prerelease, false, "rpm", "20260822", "123"),
        "v5/rocm/core/packages/rpm"
    );
}
