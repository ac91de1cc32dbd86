//! The package table of the `_dist_info.py` template (spec §6.1) and the names derived from it
//! (§6.1, §15.4).

use crate::Error;

/// A logical package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Logical {
    /// `rocm`: the meta package (an sdist).
    Meta,
    /// `rocm-sdk-core`.
    Core,
    /// `rocm-sdk-libraries[-{family}]`.
    Libraries,
    /// `rocm-sdk-device-{target}` (kpack-split builds).
    Device,
    /// `rocm-sdk-devel`.
    Devel,
    /// `rocm-profiler`.
    Profiler,
}

/// One row of `ALL_PACKAGES`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackageEntry {
    /// The logical name (`meta`, `core`, ...).
    pub logical: Logical,
    /// The distribution name; `{target_family}` marks target-specific packages.
    pub dist_template: &'static str,
    /// The pure Python package.
    pub pure_py_package: &'static str,
    /// The template directory.
    pub template_dir: &'static str,
    /// Whether the meta package requires it unconditionally.
    pub required: bool,
}

/// `ALL_PACKAGES`, in the template's order.
pub(crate) const ALL_PACKAGES: [PackageEntry; 6] = [
    PackageEntry {
        logical: Logical::Meta,
        dist_template: "rocm",
        pure_py_package: "rocm_sdk",
        template_dir: "rocm",
        required: true,
    },
    PackageEntry {
        logical: Logical::Core,
        dist_template: "rocm-sdk-core",
        pure_py_package: "rocm_sdk_core",
        template_dir: "rocm-sdk-core",
        required: true,
    },
    PackageEntry {
        logical: Logical::Libraries,
        dist_template: "rocm-sdk-libraries-{target_family}",
        pure_py_package: "rocm_sdk_libraries",
        template_dir: "rocm-sdk-libraries",
        required: false,
    },
    PackageEntry {
        logical: Logical::Device,
        dist_template: "rocm-sdk-device-{target_family}",
        pure_py_package: "rocm_sdk_device",
        template_dir: "rocm-sdk-device",
        required: false,
    },
    PackageEntry {
        logical: Logical::Devel,
        dist_template: "rocm-sdk-devel",
        pure_py_package: "rocm_sdk_devel",
        template_dir: "rocm-sdk-devel",
        required: false,
    },
    PackageEntry {
        logical: Logical::Profiler,
        dist_template: "rocm-profiler",
        pure_py_package: "rocm_profiler",
        template_dir: "rocm-profiler",
        required: false,
    },
];

/// The kpack-split override of the libraries distribution name.
pub(crate) const KPACK_LIBRARIES_DIST: &str = "rocm-sdk-libraries";

impl Logical {
    /// The name used in `ALL_PACKAGES[...]`.
    pub fn as_str(self) -> &'static str {
        match self {
            Logical::Meta => "meta",
            Logical::Core => "core",
            Logical::Libraries => "libraries",
            Logical::Device => "device",
            Logical::Devel => "devel",
            Logical::Profiler => "profiler",
        }
    }

    /// Its `ALL_PACKAGES` row.
    pub fn entry(self) -> &'static PackageEntry {
        ALL_PACKAGES
            .iter()
            .find(|e| e.logical == self)
            .expect("every logical package has a row")
    }

    /// Parses `meta`, `core`, ... (`KeyError` text of the reference otherwise).
    pub fn parse(name: &str) -> Result<Self, Error> {
        ALL_PACKAGES
            .iter()
            .map(|e| e.logical)
            .find(|l| l.as_str() == name)
            .ok_or_else(|| {
                let known = ALL_PACKAGES
                    .iter()
                    .map(|e| e.logical.as_str().to_owned())
                    .collect();
                Error::UnknownPackage {
                    name: name.to_owned(),
                    known,
                }
            })
    }
}

pub(crate) use artifacts::base_target;

/// How names are derived for one build: the nonce and whether libraries use the kpack name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Naming {
    /// `--version-suffix`, appended raw to every platform package name.
    pub nonce: String,
    /// kpack-split build: the libraries package is not target-specific.
    pub kpack: bool,
}

impl Naming {
    fn template(&self, logical: Logical) -> &'static str {
        if self.kpack && logical == Logical::Libraries {
            KPACK_LIBRARIES_DIST
        } else {
            logical.entry().dist_template
        }
    }

    /// Whether the package's name depends on a target.
    pub fn is_target_specific(&self, logical: Logical) -> bool {
        self.template(logical).contains("{target_family}")
    }

    /// The distribution name for `target` (its base target is used).
    pub fn dist_name(&self, logical: Logical, target: Option<&str>) -> Result<String, Error> {
        let template = self.template(logical);
        if !template.contains("{target_family}") {
            return Ok(template.to_owned());
        }
        let target = target.ok_or(Error::NoTarget {
            package: logical.as_str(),
        })?;
        Ok(template.replace("{target_family}", base_target(target)))
    }

    /// `{dist}=={version}`.
    pub fn requirement(
        &self,
        logical: Logical,
        target: Option<&str>,
        version: &str,
    ) -> Result<String, Error> {
        Ok(format!("{}=={version}", self.dist_name(logical, target)?))
    }

    /// The platform package: `_` + dist name with `-` → `_` + nonce.
    pub fn platform_py_package(
        &self,
        logical: Logical,
        target: Option<&str>,
    ) -> Result<String, Error> {
        Ok(format!(
            "_{}{}",
            self.dist_name(logical, target)?.replace('-', "_"),
            self.nonce
        ))
    }
}

#[cfg(test)]
mod tests;
