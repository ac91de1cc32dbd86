import importlib.util, sys
from pathlib import Path

THIS_DIR = Path(__file__).resolve().parent


def dist_info(pure):
    path = THIS_DIR / "src" / pure / "_dist_info.py"
    spec = importlib.util.spec_from_file_location("fixture_dist_info", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fixture_dist_info"] = module
    spec.loader.exec_module(module)
    return module

import os, sysconfig
from setuptools import setup, find_packages

info = dist_info("rocm_sdk_core")
platform_package = info.ALL_PACKAGES["core"].get_py_package_name()
packages = find_packages(where="./src") + [platform_package]
setup(
    name="rocm-sdk-core",
    version=info.__version__,
    packages=packages,
    package_dir={"": "src", platform_package: f"platform/{platform_package}"},
    include_package_data=True,
    options={"bdist_wheel": {"plat_name": os.getenv("ROCM_SDK_WHEEL_PLATFORM_TAG", sysconfig.get_platform())}},
    entry_points={"console_scripts": ["demo-clang=rocm_sdk_core._cli:clang"]},
)
