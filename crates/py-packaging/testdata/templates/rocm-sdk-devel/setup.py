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

info = dist_info("rocm_sdk_devel")
setup(
    name="rocm-sdk-devel",
    version=info.__version__,
    packages=["rocm_sdk_devel"],
    package_dir={"": "src"},
    include_package_data=True,
    options={"bdist_wheel": {"plat_name": os.getenv("ROCM_SDK_WHEEL_PLATFORM_TAG", sysconfig.get_platform())}},
)
