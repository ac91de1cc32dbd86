"""Package table of the test fixture templates (a small stand-in for TheRock's)."""

import os

ALL_PACKAGES = {}
AVAILABLE_TARGET_FAMILIES = []
LINUX_TARGET_FAMILIES = []
WINDOWS_TARGET_FAMILIES = []
DEFAULT_TARGET_FAMILY = "DEFAULT"
__version__ = "DEFAULT"
PY_PACKAGE_SUFFIX_NONCE = "_DEFAULT"


class PackageEntry:
    def __init__(self, logical_name, dist_package_template, *, pure_py_package_name,
                 template_directory, required=False):
        self.logical_name = logical_name
        self.dist_package_template = dist_package_template
        self.pure_py_package_name = pure_py_package_name
        self.template_directory = template_directory
        self.required = required
        ALL_PACKAGES[logical_name] = self

    @property
    def is_target_specific(self):
        return "{target_family}" in self.dist_package_template

    def get_dist_package_name(self, target_family=None):
        if self.is_target_specific and target_family is None:
            raise ValueError(
                f"Package {self.logical_name} is target specific, but no target specified")
        kwargs = {}
        if target_family is not None:
            kwargs["target_family"] = target_family.split(":")[0]
        return self.dist_package_template.format(**kwargs)

    def get_dist_package_require(self, target_family=None):
        return self.get_dist_package_name(target_family) + f"=={__version__}"

    def get_py_package_name(self, target_family=None):
        dist = self.get_dist_package_name(target_family)
        return "_" + dist.replace("-", "_") + PY_PACKAGE_SUFFIX_NONCE


def build_per_target_extras():
    """`device-{target}` for each available target of a target-specific device package (when
    there are several: a kpack-split build), and `device-all` of them all."""
    entry = ALL_PACKAGES.get("device")
    if entry is None or not entry.is_target_specific or len(AVAILABLE_TARGET_FAMILIES) < 2:
        return {}
    extras = {f"device-{t}": [entry.get_dist_package_require(t)] for t in AVAILABLE_TARGET_FAMILIES}
    extras["device-all"] = [r for t in AVAILABLE_TARGET_FAMILIES for r in extras[f"device-{t}"]]
    return extras


def determine_target_family():
    family = os.getenv("ROCM_SDK_TARGET_FAMILY") or DEFAULT_TARGET_FAMILY
    if family == "DEFAULT" or family is None:
        raise RuntimeError("no target family")
    return family


PackageEntry("meta", "rocm", pure_py_package_name="rocm_sdk", template_directory="rocm",
             required=True)
PackageEntry("core", "rocm-sdk-core", pure_py_package_name="rocm_sdk_core",
             template_directory="rocm-sdk-core", required=True)
PackageEntry("libraries", "rocm-sdk-libraries-{target_family}",
             pure_py_package_name="rocm_sdk_libraries", template_directory="rocm-sdk-libraries")
PackageEntry("device", "rocm-sdk-device-{target_family}", pure_py_package_name="rocm_sdk_device",
             template_directory="rocm-sdk-device")
PackageEntry("devel", "rocm-sdk-devel", pure_py_package_name="rocm_sdk_devel",
             template_directory="rocm-sdk-devel")
PackageEntry("profiler", "rocm-profiler", pure_py_package_name="rocm_profiler",
             template_directory="rocm-profiler")
