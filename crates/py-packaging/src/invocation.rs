//! What a run of `build_python_packages` leaves to the TheRock checkout: the templates, the
//! default version (`version.json`), the GPU targets of the family lists (the family table),
//! and the timestamp of the archive entries (`SOURCE_DATE_EPOCH`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Error, checkout_default_version, parse_family_list};

/// Where the package templates are in a TheRock checkout.
pub const TEMPLATES: &str = "build_tools/packaging/python/templates";

/// Midnight, 1 January 1980: the earliest time a zip entry can carry, the timestamp when
/// `SOURCE_DATE_EPOCH` is not set.
pub const DEFAULT_EPOCH: u64 = 315_532_800;

/// The nearest of `start` and its parents that holds [`TEMPLATES`].
pub fn find_therock(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join(TEMPLATES).is_dir())
        .map(Path::to_path_buf)
}

/// The checkout-dependent settings as given (each `None` or empty when not given).
#[derive(Debug, Clone, Copy, Default)]
pub struct Given<'a> {
    /// The TheRock checkout; found from the working directory upwards when not given.
    pub therock_dir: Option<&'a Path>,
    /// The templates; `{checkout}/`[`TEMPLATES`] when not given.
    pub templates_dir: Option<&'a Path>,
    /// The version of every package; empty for the checkout's default.
    pub version: &'a str,
    /// The Linux GPU families (`,`/`;`-separated).
    pub linux_families: Option<&'a str>,
    /// The Windows GPU families (`,`/`;`-separated).
    pub windows_families: Option<&'a str>,
}

/// The settings resolved against the checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The package templates.
    pub templates_dir: PathBuf,
    /// The version of every package.
    pub version: String,
    /// The Linux GPU targets (the families expanded), if Linux takes part.
    pub linux_targets: Option<Vec<String>>,
    /// The Windows GPU targets, if Windows takes part.
    pub windows_targets: Option<Vec<String>>,
}

impl Given<'_> {
    /// Resolves the settings; `cwd` gives the working directory when the checkout must be
    /// found. Choosing the default version is told on `out` (`::: Version …` lines).
    ///
    /// # Errors
    /// [`Error::NoTemplates`], [`Error::NoCheckout`] when `version.json` or the family table
    /// is needed without a checkout, the errors of reading them, [`Error::UnknownFamilies`],
    /// and [`Error::Output`].
    pub fn resolve(
        &self,
        cwd: impl FnOnce() -> std::io::Result<PathBuf>,
        out: &mut dyn Write,
    ) -> Result<Resolved, Error> {
        let therock = match self.therock_dir {
            Some(d) => Some(d.to_path_buf()),
            None => find_therock(&cwd().map_err(Error::CurrentDir)?),
        };
        let templates_dir = match (self.templates_dir, &therock) {
            (Some(t), _) => t.to_path_buf(),
            (None, Some(root)) => root.join(TEMPLATES),
            (None, None) => return Err(Error::NoTemplates),
        };
        let need_root = || therock.clone().ok_or(Error::NoCheckout);
        let version = if self.version.is_empty() {
            writeln!(out, "::: Version not specified, choosing a default")
                .map_err(Error::Output)?;
            let v = checkout_default_version(&need_root()?)?;
            writeln!(out, "::: Version defaulting to {v}").map_err(Error::Output)?;
            v
        } else {
            self.version.to_owned()
        };
        let lists =
            [self.linux_families, self.windows_families].map(|v| v.and_then(parse_family_list));
        let [linux_targets, windows_targets] = if lists.iter().any(Option::is_some) {
            let checkout = build_topology::Checkout {
                topology: None,
                therock_dir: Some(need_root()?),
            };
            let map = checkout.family_map()?;
            let expand = |l: &Option<Vec<String>>| l.as_ref().map(|l| map.expand(l)).transpose();
            [expand(&lists[0])?, expand(&lists[1])?]
        } else {
            [None, None]
        };
        Ok(Resolved {
            templates_dir,
            version,
            linux_targets,
            windows_targets,
        })
    }
}

/// The timestamp of the archive entries: the value of `SOURCE_DATE_EPOCH` (surrounding
/// blanks ignored), else [`DEFAULT_EPOCH`].
///
/// # Errors
/// [`Error::SourceDateEpoch`] when the value is no whole number of seconds.
pub fn source_date_epoch(value: Option<&str>) -> Result<u64, Error> {
    value.map_or(Ok(DEFAULT_EPOCH), |v| {
        v.trim().parse().map_err(|source| Error::SourceDateEpoch {
            value: v.to_owned(),
            source,
        })
    })
}

/// The `--timings` line: `timings: total {total}s; {stage} {seconds}s, …` from
/// [`crate::stage_timings`].
pub fn timings_line(total: Duration) -> String {
    let stages: Vec<String> = crate::stage_timings()
        .into_iter()
        .map(|(stage, d)| format!("{} {:.2}s", stage.name(), d.as_secs_f64()))
        .collect();
    format!(
        "timings: total {:.2}s; {}",
        total.as_secs_f64(),
        stages.join(", ")
    )
}

#[cfg(test)]
mod tests;
