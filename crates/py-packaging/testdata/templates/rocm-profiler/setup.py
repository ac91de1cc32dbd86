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

info = dist_info("rocm_profiler")
platform_package = info.ALL_PACKAGES["profiler"].get_py_package_name()
setup(
    name="rocm-profiler",
    version=os.environ.get("ROCM_SDK_VERSION", info.__version__),
    description="ROCm profiler applications (fixture)",
    packages=find_packages(where="./src") + [platform_package],
    package_dir={"": "src", platform_package: f"platform/{platform_package}"},
    include_package_data=True,
    python_requires=">=3.8",
    options={"bdist_wheel": {"plat_name": os.getenv("ROCM_SDK_WHEEL_PLATFORM_TAG", sysconfig.get_platform())}},
)
