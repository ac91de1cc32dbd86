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

info = dist_info("rocm_sdk_device")
platform_package = info.LIBRARIES_PY_PACKAGE_NAME
platform_dir = THIS_DIR / "platform" / platform_package
data = [str(p.relative_to(platform_dir)) for p in platform_dir.rglob("*")
        if p.is_file() and p.name != "__init__.py"]
setup(
    name=info.ALL_PACKAGES["device"].get_dist_package_name(info.THIS_TARGET_FAMILY),
    version=info.__version__,
    packages=[platform_package],
    package_dir={platform_package: f"platform/{platform_package}"},
    package_data={platform_package: data},
    install_requires=[f"rocm-sdk-libraries=={info.__version__}"],
    options={"bdist_wheel": {"plat_name": os.getenv("ROCM_SDK_WHEEL_PLATFORM_TAG", sysconfig.get_platform())}},
)
