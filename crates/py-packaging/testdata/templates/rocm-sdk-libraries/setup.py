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
from setuptools import setup

info = dist_info("rocm_sdk_libraries")
entry = info.ALL_PACKAGES["libraries"]
platform_package = entry.get_py_package_name(info.THIS_TARGET_FAMILY)
pure = "rocm_sdk_libraries" if info.THIS_TARGET_FAMILY is None else f"rocm_sdk_libraries_{info.THIS_TARGET_FAMILY}"
setup(
    name=entry.get_dist_package_name(info.THIS_TARGET_FAMILY),
    version=info.__version__,
    packages=[pure, platform_package],
    package_dir={pure: "src/rocm_sdk_libraries", platform_package: f"platform/{platform_package}"},
    include_package_data=True,
    options={"bdist_wheel": {"plat_name": os.getenv("ROCM_SDK_WHEEL_PLATFORM_TAG", sysconfig.get_platform())}},
)
