use super::{Logical, Naming};

#[test]
fn names_of_spec_15_4() {
    let plain = Naming::default();
    assert_eq!(
        plain.dist_name(Logical::Core, None).unwrap(),
        "rocm-sdk-core"
    );
    assert_eq!(
        plain.platform_py_package(Logical::Core, None).unwrap(),
        "_rocm_sdk_core"
    );
    let f = Some("gfx94X-dcgpu");
    assert_eq!(
        plain.dist_name(Logical::Libraries, f).unwrap(),
        "rocm-sdk-libraries-gfx94X-dcgpu"
    );
    assert_eq!(
        plain.platform_py_package(Logical::Libraries, f).unwrap(),
        "_rocm_sdk_libraries_gfx94X_dcgpu"
    );
    assert_eq!(
        plain
            .dist_name(Logical::Libraries, None)
            .unwrap_err()
            .to_string(),
        "Package libraries is target specific, but no target specified"
    );
    let kpack = Naming {
        nonce: String::new(),
        kpack: true,
    };
    assert_eq!(
        kpack.dist_name(Logical::Libraries, None).unwrap(),
        "rocm-sdk-libraries"
    );
    assert_eq!(
        kpack.platform_py_package(Logical::Libraries, None).unwrap(),
        "_rocm_sdk_libraries"
    );
    for t in ["gfx942:xnack+", "gfx942:xnack-", "gfx942"] {
        assert_eq!(
            kpack.dist_name(Logical::Device, Some(t)).unwrap(),
            "rocm-sdk-device-gfx942"
        );
        assert_eq!(
            kpack.platform_py_package(Logical::Device, Some(t)).unwrap(),
            "_rocm_sdk_device_gfx942"
        );
        assert_eq!(
            kpack.requirement(Logical::Device, Some(t), "V").unwrap(),
            "rocm-sdk-device-gfx942==V"
        );
    }
    let rc = Naming {
        nonce: "rc1".into(),
        kpack: true,
    };
    let t = Some("gfx942:xnack+");
    let got: Vec<String> = [
        (Logical::Meta, None),
        (Logical::Core, None),
        (Logical::Libraries, None),
        (Logical::Device, t),
        (Logical::Devel, None),
        (Logical::Profiler, None),
    ]
    .into_iter()
    .map(|(l, t)| rc.platform_py_package(l, t).unwrap())
    .collect();
    assert_eq!(
        got,
        [
            "_rocmrc1",
            "_rocm_sdk_corerc1",
            "_rocm_sdk_librariesrc1",
            "_rocm_sdk_device_gfx942rc1",
            "_rocm_sdk_develrc1",
            "_rocm_profilerrc1"
        ]
    );
    assert_eq!(
        Logical::parse("nope").unwrap_err().to_string(),
        "Logical package name nope not found (of dict_keys(['meta', 'core', 'libraries', 'device', 'devel', 'profiler']))"
    );
}
