//! Wheels from a template's `setup.py`: contents, metadata, RECORD (checked by Python's own
//! `zipfile` and `hashlib`), determinism.

#![cfg_attr(
    windows,
    expect(
        unused_imports,
        dead_code,
        reason = "used by the tests that run on Unix only"
    )
)]

use std::path::Path;

use crate::wheel::{escaped_name, platform_tag, read_setup, write_wheel};
use crate::zipout::Method;

/// A core-like template: pure package in `src/`, platform package with data, entry points.
pub(crate) fn core_like(staging: &Path) {
    let w = |rel: &str, text: &str| {
        let p = staging.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, text).unwrap();
    };
    w(
        "setup.py",
        r#"
import os, sysconfig
from setuptools import setup, find_packages
packages = find_packages(where="./src")
packages.append("_demo_core")
print("noise on stdout is ignored")
setup(
    name="demo-sdk-core",
    version="1.2.3.dev0",
    description="A demo, with a comma",
    packages=packages,
    package_dir={"": "src", "_demo_core": "platform/_demo_core"},
    include_package_data=True,
    install_requires=["something-else==1"],
    extras_require={"extra-b": ["b==1; sys_platform == \"linux\""], "extra-a": ["a==2"]},
    options={"bdist_wheel": {"plat_name": os.getenv("ROCM_SDK_WHEEL_PLATFORM_TAG", sysconfig.get_platform())}},
    entry_points={
        "gui_scripts": ["demo-gui = demo_core._cli:gui"],
        "console_scripts": ["demo-tool=demo_core._cli:main", "other = demo_core._cli:other", "a-first = demo_core._cli:first"],
    },
)
"#,
    );
    w(
        "pyproject.toml",
        "[build-system]\nrequires = [\"setuptools\"]\n",
    );
    w("src/demo_core/__init__.py", "VALUE = 1\n");
    w("src/demo_core/_cli.py", "def main():\n    print('tool')\n");
    w("src/demo_core/sub/__init__.py", "");
    w("platform/_demo_core/__init__.py", "");
    w("platform/_demo_core/lib/libx.so", "not really a library");
    w("platform/_demo_core/.hidden/keep", "dot dirs ship too");
    w("platform/_demo_core/lib/__pycache__/junk.pyc", "x");
}

const CHECK: &str = r#"
import base64, csv, hashlib, io, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
record_name = [n for n in names if n.endswith(".dist-info/RECORD")][0]
assert names[-1] == record_name, names
rows = list(csv.reader(io.StringIO(z.read(record_name).decode())))
listed = {r[0] for r in rows}
assert listed == set(names), (listed ^ set(names))
for path, digest, size in rows:
    if path == record_name:
        assert digest == "" and size == ""
        continue
    data = z.read(path)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == want and int(size) == len(data), path
for info in z.infolist():
    print(info.filename, oct(info.external_attr >> 16), info.date_time, info.compress_type)
"#;

/// The `.dist-info` files of the demo wheel.
fn check_dist_info(wheel: &Path) {
    let read = |name: &str| {
        let mut z = zip::ZipArchive::new(fs_err::File::open(wheel).unwrap()).unwrap();
        let mut f = z.by_name(name).unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut f, &mut s).unwrap();
        s
    };
    let info = "demo_sdk_core-1.2.3.dev0.dist-info";
    assert_eq!(
        read(&format!("{info}/METADATA")),
        "Metadata-Version: 2.4\nName: demo-sdk-core\nVersion: 1.2.3.dev0\nSummary: A demo, with a comma\n\
         Requires-Dist: something-else==1\n\
         Provides-Extra: extra-b\nRequires-Dist: b==1; sys_platform == \"linux\" and extra == \"extra-b\"\n\
         Provides-Extra: extra-a\nRequires-Dist: a==2; extra == \"extra-a\"\n\
         Dynamic: provides-extra\nDynamic: requires-dist\nDynamic: summary\n"
    );
    assert_eq!(
        read(&format!("{info}/entry_points.txt")),
        "[console_scripts]\na-first = demo_core._cli:first\ndemo-tool = demo_core._cli:main\nother = demo_core._cli:other\n\n\
         [gui_scripts]\ndemo-gui = demo_core._cli:gui\n"
    );
    assert_eq!(
        read(&format!("{info}/top_level.txt")),
        "_demo_core\ndemo_core\n"
    );
    assert!(
        read(&format!("{info}/WHEEL"))
            .contains("Root-Is-Purelib: true\nTag: py3-none-manylinux_2_28_x86_64\n")
    );
}

// Runs the template's setup.py with python3, which the Windows test machine (Wine) has none of.
#[cfg(unix)]
#[test]
fn wheel_from_a_template_is_complete_and_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let staging = tmp.path().join("demo-sdk-core");
    core_like(&staging);
    let exe = staging.join("platform/_demo_core/lib/libx.so");
    fs_err::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = [(
        "ROCM_SDK_WHEEL_PLATFORM_TAG".to_owned(),
        "manylinux_2_28_x86_64".to_owned(),
    )];
    let decl = read_setup(&staging, "python3", &env).unwrap();
    assert_eq!(decl.name, "demo-sdk-core");
    assert_eq!(decl.plat_name, "manylinux_2_28_x86_64");
    assert_eq!(decl.packages, ["demo_core", "demo_core.sub", "_demo_core"]);
    let files: Vec<String> = decl.files(&staging).unwrap().into_keys().collect();
    assert_eq!(
        files,
        [
            "_demo_core/.hidden/keep",
            "_demo_core/__init__.py",
            "_demo_core/lib/libx.so",
            "demo_core/__init__.py",
            "demo_core/_cli.py",
            "demo_core/sub/__init__.py"
        ]
    );
    let dist = tmp.path().join("dist");
    let wheel = write_wheel(&staging, &decl, &dist, Method::Deflated(9), 1_700_000_000).unwrap();
    assert_eq!(
        wheel.file_name().unwrap().to_string_lossy(),
        "demo_sdk_core-1.2.3.dev0-py3-none-manylinux_2_28_x86_64.whl"
    );
    let listing = rock_ci_test_support::python(CHECK, &[wheel.as_os_str()]);
    assert!(
        listing.contains("_demo_core/lib/libx.so 0o100755 (2023, 11, 14, 22, 13, 20) 8"),
        "{listing}"
    );
    assert!(listing.contains("demo_core/_cli.py 0o100644"), "{listing}");
    check_dist_info(&wheel);
    // Same inputs, same bytes; stored when asked.
    let first = fs_err::read(&wheel).unwrap();
    let again = write_wheel(
        &staging,
        &decl,
        &tmp.path().join("dist2"),
        Method::Deflated(9),
        1_700_000_000,
    )
    .unwrap();
    assert_eq!(fs_err::read(again).unwrap(), first);
    let stored = write_wheel(
        &staging,
        &decl,
        &tmp.path().join("dist3"),
        Method::Stored,
        1_700_000_000,
    )
    .unwrap();
    let stored_listing = rock_ci_test_support::python(CHECK, &[stored.as_os_str()]);
    assert!(
        stored_listing.contains("_demo_core/lib/libx.so 0o100755 (2023, 11, 14, 22, 13, 20) 0")
    );
}

// The public one-wheel entry: the same bytes as the build's own steps, stored at level 0.
#[cfg(unix)]
#[test]
fn build_wheel_writes_what_the_build_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let staging = tmp.path().join("demo-sdk-core");
    core_like(&staging);
    let options = crate::WheelOptions::default();
    let wheel = crate::build_wheel(&staging, &tmp.path().join("a"), &options).unwrap();
    let decl = read_setup(&staging, "python3", &[]).unwrap();
    let direct = write_wheel(
        &staging,
        &decl,
        &tmp.path().join("b"),
        Method::Deflated(crate::DEFAULT_DEFLATE_LEVEL),
        crate::DEFAULT_EPOCH,
    )
    .unwrap();
    assert_eq!(fs_err::read(&wheel).unwrap(), fs_err::read(direct).unwrap());
    let mut stored = options.clone();
    stored.deflate_level = 0;
    stored.mtime = 1_700_000_000;
    let stored = crate::build_wheel(&staging, &tmp.path().join("c"), &stored).unwrap();
    let listing = rock_ci_test_support::python(CHECK, &[stored.as_os_str()]);
    assert!(
        listing.contains("_demo_core/lib/libx.so 0o100644 (2023, 11, 14, 22, 13, 20) 0"),
        "{listing}"
    );
    assert!(
        listing.contains("demo_sdk_core-1.2.3.dev0.dist-info/RECORD "),
        "{listing}"
    );
    let mut missing = options;
    missing.python = "no-such-python-rock-ci".to_owned();
    let err = crate::build_wheel(&staging, &tmp.path().join("d"), &missing).unwrap_err();
    assert!(err.to_string().contains("no-such-python-rock-ci"), "{err}");
}

#[test]
fn names_and_tags() {
    assert_eq!(
        escaped_name("rocm-sdk-libraries-gfx94X-dcgpu"),
        "rocm_sdk_libraries_gfx94x_dcgpu"
    );
    assert_eq!(escaped_name("a.-_b"), "a_b");
    assert_eq!(platform_tag("linux-x86_64"), "linux_x86_64");
    assert_eq!(platform_tag("macosx-11.0-arm64"), "macosx_11_0_arm64");
}

// Runs the template's setup.py with python3, which the Windows test machine (Wine) has none of.
#[cfg(unix)]
#[test]
fn a_failing_setup_py_is_an_error_naming_the_package() {
    let tmp = tempfile::tempdir().unwrap();
    fs_err::write(
        tmp.path().join("setup.py"),
        "raise RuntimeError('broken template')\n",
    )
    .unwrap();
    let err = read_setup(tmp.path(), "python3", &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("setup.py failed") && err.contains("broken template"),
        "{err}"
    );
}

#[test]
fn extras_and_markers_as_setuptools_writes_them() {
    use crate::wheel::{safe_extra, top_level_or};
    assert_eq!(safe_extra("Device-GFX94X_dcgpu"), "device-gfx94x-dcgpu");
    assert_eq!(safe_extra("_FrIeNdLy-._.-bArD__._-"), "friendly-bard");
    assert!(top_level_or("a == \"x\" or b == \"y\""));
    assert!(!top_level_or("(a == \"x\" or b == \"y\") and c == \"z\""));
    assert!(!top_level_or("a == \" or \""));
}
