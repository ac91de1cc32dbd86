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
# No target family (a GPU-less machine): the target-specific extras are left out, and the
# per-target ones (`device-gfx942`) name the device package to install.
try:
    family = info.determine_target_family()
except RuntimeError:
    family = None
extras = {}
for entry in info.ALL_PACKAGES.values():
    if not entry.required:
        if entry.is_target_specific and family is None:
            continue
        target = family if entry.is_target_specific else None
        extras[entry.logical_name] = [entry.get_dist_package_require(target)]
extras.update(info.build_per_target_extras())
setup(
    name="rocm",
    version=info.__version__,
    packages=["rocm_sdk"],
    package_dir={"": "src"},
    install_requires=[e.get_dist_package_require() for e in info.ALL_PACKAGES.values()
                      if e.required and e.logical_name != "meta"],
    extras_require=extras,
)
