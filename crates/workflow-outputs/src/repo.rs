use std::fmt;
use std::str::FromStr;

use crate::Error;
use crate::error::closed_set;

/// A GitHub repository, `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GithubRepository {
    full_name: String,
    slash: usize,
}

impl GithubRepository {
    /// `owner/name`.
    pub fn as_str(&self) -> &str {
        &self.full_name
    }

    /// The owner (user or organization).
    pub fn owner(&self) -> &str {
        &self.full_name[..self.slash]
    }

    /// The repository name.
    pub fn name(&self) -> &str {
        &self.full_name[self.slash + 1..]
    }
}

impl FromStr for GithubRepository {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || Error::InvalidRepository {
            value: s.to_owned(),
        };
        let (owner, name) = s.split_once('/').ok_or_else(invalid)?;
        let valid_part = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if !valid_part(owner) || !valid_part(name) || name == "." || name == ".." {
            return Err(invalid());
        }
        Ok(Self {
            full_name: s.to_owned(),
            slash: owner.len(),
        })
    }
}

impl fmt::Display for GithubRepository {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full_name)
    }
}

closed_set! {
    /// The platform a run builds for; the last part of the run prefix `{run_id}-{platform}`.
    Platform, "platform", {
        /// macOS (Python's `platform.system().lower()` spelling).
        Darwin = "darwin",
        /// Linux.
        Linux = "linux",
        /// Windows.
        Windows = "windows",
    }
}

impl Platform {
    /// The platform of this machine. macOS is `darwin`, as Python spells it.
    pub fn host() -> Self {
        if cfg!(target_os = "windows") {
            Platform::Windows
        } else if cfg!(target_os = "macos") {
            Platform::Darwin
        } else {
            Platform::Linux
        }
    }
}
