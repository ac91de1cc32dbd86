//! Build-wide parameters: version, nonce, target-family views (spec §6.3) and the generated
//! `_dist_info.py` files (§6.4).

use std::collections::BTreeSet;

use crate::names::{Logical, Naming};
use crate::pyrepr::{repr, repr_opt};
use crate::{Error, push};

/// What every package of one build shares.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parameters {
    /// The version of every package.
    pub version: String,
    /// Nonce and kpack naming.
    pub naming: Naming,
    /// The catalog's non-generic target families. Sorted: the reference iterates a Python set
    /// (hash order, different from run to run).
    pub all_target_families: BTreeSet<String>,
    /// `--linux-amdgpu-families`, expanded to targets (`None`: not given).
    pub linux_targets: Option<Vec<String>>,
    /// `--windows-amdgpu-families`, expanded to targets.
    pub windows_targets: Option<Vec<String>>,
}

fn sorted_unique<'a>(items: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    items
        .into_iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

impl Parameters {
    fn cli_given(&self) -> bool {
        self.linux_targets.is_some() || self.windows_targets.is_some()
    }

    /// The Linux targets, sorted and de-duplicated (empty when not given).
    pub fn linux_list(&self) -> Vec<String> {
        sorted_unique(self.linux_targets.iter().flatten())
    }

    /// The Windows targets, sorted and de-duplicated (empty when not given).
    pub fn windows_list(&self) -> Vec<String> {
        sorted_unique(self.windows_targets.iter().flatten())
    }

    /// `AVAILABLE_TARGET_FAMILIES`: the union of the CLI lists when one is given (the catalog
    /// is then ignored, so Linux and Windows jobs agree), else the catalog's families.
    pub fn available_target_families(&self) -> Vec<String> {
        if self.cli_given() {
            sorted_unique(self.linux_list().iter().chain(&self.windows_list()))
        } else {
            self.all_target_families.iter().cloned().collect()
        }
    }

    /// `DEFAULT_TARGET_FAMILY`: the first target both platforms list, else the first available.
    pub fn default_target_family(&self) -> Option<String> {
        if !self.cli_given() {
            return self.all_target_families.iter().next().cloned();
        }
        let windows = self.windows_list();
        self.linux_list()
            .into_iter()
            .find(|t| windows.contains(t))
            .or_else(|| self.available_target_families().into_iter().next())
    }

    fn base_suffix(&self) -> String {
        format!(
            "__version__ = {}\nPY_PACKAGE_SUFFIX_NONCE = {}\n",
            repr(&self.version),
            repr(&self.naming.nonce)
        )
    }

    fn full_suffix(&self) -> String {
        let mut s = self.base_suffix();
        if self.naming.kpack {
            s.push_str(
                "ALL_PACKAGES[\"libraries\"].dist_package_template = \"rocm-sdk-libraries\"\n",
            );
        }
        if let Some(default) = self.default_target_family() {
            push(
                &mut s,
                format_args!("DEFAULT_TARGET_FAMILY = {}\n", repr(&default)),
            );
        }
        for (list, name) in [
            (self.available_target_families(), "AVAILABLE"),
            (self.linux_list(), "LINUX"),
            (self.windows_list(), "WINDOWS"),
        ] {
            for t in list {
                push(
                    &mut s,
                    format_args!("{name}_TARGET_FAMILIES.append({})\n", repr(&t)),
                );
            }
        }
        s
    }

    /// The `_dist_info.py` of one package: the template's text, then the assignments of §6.4.
    /// `restrict` (legacy multi-family meta) limits the target views to `target`.
    pub fn dist_info_contents(
        &self,
        template: &str,
        logical: Logical,
        target: Option<&str>,
        restrict: bool,
    ) -> Result<String, Error> {
        let mut s = template.to_owned();
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        let restricted = restrict && target.is_some();
        s.push_str(&if restricted {
            self.base_suffix()
        } else {
            self.full_suffix()
        });
        push(
            &mut s,
            format_args!(
                "THIS_TARGET_FAMILY = {}\nTHIS_PACKAGE_ENTRY = ALL_PACKAGES[{}]\n",
                repr_opt(target),
                repr(logical.as_str())
            ),
        );
        if let (true, Some(t)) = (restricted, target) {
            push(
                &mut s,
                format_args!(
                    "DEFAULT_TARGET_FAMILY = {}\nAVAILABLE_TARGET_FAMILIES.append({})\n",
                    repr(t),
                    repr(t)
                ),
            );
        }
        if logical == Logical::Device {
            let libraries = self.naming.platform_py_package(Logical::Libraries, None)?;
            push(
                &mut s,
                format_args!("LIBRARIES_PY_PACKAGE_NAME = {}\n", repr(&libraries)),
            );
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests;
