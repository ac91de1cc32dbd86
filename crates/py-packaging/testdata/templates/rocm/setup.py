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

from setuptools import setup

info = dist_info("rocm_sdk")
family = info.determine_target_family()
extras = {}
for entry in info.ALL_PACKAGES.values():
    if not entry.required:
        target = family if entry.is_target_specific else None
        if entry.logical_name == "libraries" and not entry.is_target_specific:
            target = None
        extras[entry.logical_name] = [entry.get_dist_package_require(target)]
setup(
    name="rocm",
    version=info.__version__,
    packages=["rocm_sdk"],
    package_dir={"": "src"},
    install_requires=[e.get_dist_package_require() for e in info.ALL_PACKAGES.values()
                      if e.required and e.logical_name != "meta"],
    extras_require=extras,
)
