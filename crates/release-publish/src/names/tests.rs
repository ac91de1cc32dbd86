use super::*;

#[test]
fn wheels_and_sdists_of_the_specification() {
    for (file, package) in [
        ("rocm-7.13.0.tar.gz", "rocm"),
        (
            "rocm_sdk_core-7.13.0-py3-none-linux_x86_64.whl",
            "rocm-sdk-core",
        ),
        (
            "rocm_sdk_device_gfx1100-7.13.0-py3-none-linux_x86_64.whl",
            "rocm-sdk-device-gfx1100",
        ),
        (
            "rocm_sdk_libraries_gfx110X_all-7.13.0-py3-none-linux_x86_64.whl",
            "rocm-sdk-libraries-gfx110x-all",
        ),
        (
            "torch-2.10.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
            "torch",
        ),
        (
            "amd_torch_device_gfx942-2.10.0+rocm7.13.0-py3-none-linux_x86_64.whl",
            "amd-torch-device-gfx942",
        ),
        ("triton-3.5.0-cp312-cp312-linux_x86_64.whl", "triton"),
        ("apex-1.0.0.tar.gz", "apex"),
        ("Apex_Extra-0.1.zip", "apex-extra"),
        (
            "jax_rocm7_plugin-0.8.0+rocm7.13.0rc2-cp311-cp311-manylinux_2_28_x86_64.whl",
            "jax-rocm7-plugin",
        ),
        ("jax-0.8.0-1build-py3-none-any.whl", "jax"),
        ("my.pkg__x-1.0.tar.gz", "my-pkg-x"),
    ] {
        assert_eq!(package_name(file).as_deref(), Ok(package), "{file}");
    }
}

#[test]
fn unreadable_names_are_refused_with_the_references_text() {
    let err = package_name("amd-torch-device-gfx942-2.10.0-py3-none-linux_x86_64.whl").unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(
            "Cannot parse wheel filename 'amd-torch-device-gfx942-2.10.0-py3-none-linux_x86_64.whl': "
        ),
        "{text}"
    );
    assert!(text.contains("not 5 or 6"), "{text}");
    assert_eq!(
        package_name("jax-source.tar.gz").unwrap_err().to_string(),
        "Cannot parse sdist filename 'jax-source.tar.gz': Invalid sdist filename (invalid version): 'jax-source.tar.gz'"
    );
    assert_eq!(
        package_name("rocm.tar.gz").unwrap_err().to_string(),
        "Cannot parse sdist filename 'rocm.tar.gz': Invalid sdist filename (no version): 'rocm.tar.gz'"
    );
    assert!(matches!(
        package_name("my pkg-1.0.zip"),
        Err(NameError::Sdist {
            reason: "invalid name",
            ..
        })
    ));
    assert!(matches!(
        package_name("-1.0.zip"),
        Err(NameError::Sdist {
            reason: "invalid name",
            ..
        })
    ));
    // A build tag must start with a digit; a name must not hold `__`.
    assert!(package_name("jax-0.8.0-build-py3-none-any.whl").is_err());
    assert!(package_name("a__b-1.0-py3-none-any.whl").is_err());
    assert!(package_name("jax-notaversion-py3-none-any.whl").is_err());
    assert_eq!(
        package_name("index.html"),
        Err(NameError::NotAPackage("index.html".into()))
    );
}
