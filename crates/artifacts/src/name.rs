use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::Error;

/// The compressed tar formats an artifact archive may have, in order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArchiveFormat {
    /// `.tar.zst`.
    TarZst,
    /// `.tar.xz`.
    TarXz,
}

impl ArchiveFormat {
    /// Every format, preferred first.
    pub const ALL: [ArchiveFormat; 2] = [ArchiveFormat::TarZst, ArchiveFormat::TarXz];

    /// The file name suffix, with its leading dot.
    pub fn extension(self) -> &'static str {
        match self {
            ArchiveFormat::TarZst => ".tar.zst",
            ArchiveFormat::TarXz => ".tar.xz",
        }
    }

    /// The format of a file name by its (case-sensitive) suffix.
    pub fn from_file_name(file_name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|f| file_name.ends_with(f.extension()))
    }

    /// The format of a path; any other suffix is an error naming the path.
    pub fn from_path(path: &Path) -> Result<Self, Error> {
        path.file_name()
            .and_then(|n| n.to_str())
            .and_then(Self::from_file_name)
            .ok_or_else(|| Error::UnknownArchiveFormat(path.to_path_buf()))
    }
}

/// The name of an artifact: `{name}_{component}_{target_family}`.
///
/// Each field is non-empty and holds no `_` and no path separator; `.`, `:`, `+` and `-` are
/// allowed (`rccl_test_gfx942:xnack+`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArtifactName {
    name: String,
    component: String,
    target_family: String,
}

impl fmt::Debug for ArtifactName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Artifact({}[{}:{}])",
            self.name, self.component, self.target_family
        )
    }
}

impl fmt::Display for ArtifactName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}_{}", self.name, self.component, self.target_family)
    }
}

fn valid_field(s: &str) -> bool {
    !s.is_empty() && !s.contains(['_', '/', '\\', '\0']) && s != "." && s != ".."
}

impl ArtifactName {
    /// An artifact name from its three fields; `None` if a field is empty or holds `_`, `/`,
    /// `\` or NUL.
    pub fn new(name: &str, component: &str, target_family: &str) -> Option<Self> {
        (valid_field(name) && valid_field(component) && valid_field(target_family)).then(|| Self {
            name: name.to_owned(),
            component: component.to_owned(),
            target_family: target_family.to_owned(),
        })
    }

    /// Parses a directory name `{name}_{component}_{target_family}`.
    pub fn from_dir_name(dir_name: &str) -> Option<Self> {
        let mut parts = dir_name.split('_');
        let (name, component, target) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        Self::new(name, component, target)
    }

    /// Parses an archive file name `{name}_{component}_{target_family}.tar.{zst,xz}`.
    pub fn from_filename(file_name: &str) -> Option<Self> {
        Self::from_filename_with_format(file_name).map(|(name, _)| name)
    }

    /// As [`ArtifactName::from_filename`], also returning the archive format.
    pub fn from_filename_with_format(file_name: &str) -> Option<(Self, ArchiveFormat)> {
        let format = ArchiveFormat::from_file_name(file_name)?;
        let stem = &file_name[..file_name.len() - format.extension().len()];
        Some((Self::from_dir_name(stem)?, format))
    }

    /// Parses the last component of `path`: as a directory name if `path` is an existing
    /// directory, else as an archive file name.
    pub fn from_path(path: &Path) -> Option<Self> {
        let base = path.file_name()?.to_str()?;
        if path.is_dir() {
            Self::from_dir_name(base)
        } else {
            Self::from_filename(base)
        }
    }

    /// The project name (`blas`, `amd-llvm`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The component (`lib`, `run`, `dev`, `dbg`, `doc`, `test`, ...).
    pub fn component(&self) -> &str {
        &self.component
    }

    /// The target family (`generic`, a family such as `gfx94X-dcgpu`, or a target).
    pub fn target_family(&self) -> &str {
        &self.target_family
    }

    /// `{name}_{component}_{target_family}`: the directory an artifact extracts to.
    pub fn dir_name(&self) -> String {
        self.to_string()
    }

    /// The archive file name in `format`.
    pub fn file_name(&self, format: ArchiveFormat) -> String {
        format!("{self}{}", format.extension())
    }
}

impl FromStr for ArtifactName {
    type Err = Error;

    /// Parses either an archive file name or a bare `{name}_{component}_{target_family}`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_filename(s)
            .or_else(|| Self::from_dir_name(s))
            .ok_or_else(|| Error::InvalidArtifactName(s.to_owned()))
    }
}
