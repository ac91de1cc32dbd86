use storage_location::StorageLocation;

use crate::buckets::BucketSelection;
use crate::{Error, GithubRepository, Platform};

/// The run id of [`WorkflowOutputRoot::for_local`] when none is given.
pub const DEFAULT_LOCAL_RUN_ID: &str = "local";
/// The bucket of [`WorkflowOutputRoot::for_local`] when none is given.
pub const DEFAULT_LOCAL_BUCKET: &str = "local";

/// The root of one CI run's outputs: `{bucket}/{external_repo}{run_id}-{platform}/`.
///
/// Every key of the run comes from a method of this type; all of them are pure string
/// formatting and return a [`StorageLocation`] in the root's bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkflowOutputRoot {
    bucket: String,
    external_repo: String,
    run_id: String,
    platform: Platform,
}

fn validate_run_id(run_id: &str) -> Result<(), Error> {
    let reason = if run_id.is_empty() {
        "it is empty"
    } else if run_id.contains(['/', '\\']) {
        "it contains a path separator"
    } else if run_id.chars().any(char::is_control) || run_id.contains(' ') {
        "it contains whitespace or control characters"
    } else {
        return Ok(());
    };
    Err(Error::InvalidRunId {
        value: run_id.to_owned(),
        reason,
    })
}

/// The key prefix of a run in the bucket for external repositories: empty for a repository
/// with a bucket of its own, else `{owner}-{name}/` of the run's base repository.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ExternalRepo(String);

impl ExternalRepo {
    /// No prefix: the run's keys start at the top of its bucket.
    pub const NONE: ExternalRepo = ExternalRepo(String::new());

    /// The prefix of `repository`'s runs: `{owner}-{name}/`.
    pub fn of(repository: &GithubRepository) -> Self {
        ExternalRepo(format!("{}-{}/", repository.owner(), repository.name()))
    }

    /// A prefix as written in keys: empty or `{owner}-{name}/` (one path component and the
    /// `/`); anything else is [`Error::InvalidExternalRepo`].
    pub fn parse(prefix: &str) -> Result<Self, Error> {
        let ok = prefix.is_empty()
            || prefix.strip_suffix('/').is_some_and(|p| {
                !p.is_empty() && !p.contains(['/', '\\']) && p != "." && p != ".."
            });
        if ok {
            Ok(ExternalRepo(prefix.to_owned()))
        } else {
            Err(Error::InvalidExternalRepo {
                value: prefix.to_owned(),
            })
        }
    }

    /// The prefix as written in keys (`""` or `{owner}-{name}/`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ExternalRepo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl WorkflowOutputRoot {
    /// A root from explicit parts ([`ExternalRepo::NONE`] for a repository with a bucket of
    /// its own).
    pub fn new(
        bucket: impl Into<String>,
        external_repo: ExternalRepo,
        run_id: impl Into<String>,
        platform: Platform,
    ) -> Result<Self, Error> {
        let run_id = run_id.into();
        validate_run_id(&run_id)?;
        Ok(Self {
            bucket: bucket.into(),
            external_repo: external_repo.0,
            run_id,
            platform,
        })
    }

    /// A root for local development: run id `local`, the host platform and bucket `local`
    /// unless given. Reads nothing from the environment.
    pub fn for_local(
        run_id: Option<&str>,
        platform: Option<Platform>,
        bucket: Option<&str>,
    ) -> Result<Self, Error> {
        Self::new(
            bucket.unwrap_or(DEFAULT_LOCAL_BUCKET),
            ExternalRepo::NONE,
            run_id.unwrap_or(DEFAULT_LOCAL_RUN_ID),
            platform.unwrap_or_else(Platform::host),
        )
    }

    /// The root of a workflow run whose bucket was selected by [`BucketSelection::resolve`].
    pub fn for_workflow_run(
        run_id: impl Into<String>,
        platform: Platform,
        selection: &BucketSelection,
    ) -> Result<Self, Error> {
        Self::new(
            selection.config().name(),
            selection.external_repo(),
            run_id,
            platform,
        )
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// `""` or `{owner}-{name}/`.
    pub fn external_repo(&self) -> &str {
        &self.external_repo
    }

    /// The workflow run id (or `local`).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The platform.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// `{external_repo}{run_id}-{platform}`, without a trailing slash.
    pub fn prefix(&self) -> String {
        format!("{}{}-{}", self.external_repo, self.run_id, self.platform)
    }

    fn at(&self, suffix: std::fmt::Arguments<'_>) -> StorageLocation {
        StorageLocation::new(self.bucket.clone(), format!("{}{suffix}", self.prefix()))
    }

    /// `{prefix}`.
    pub fn root(&self) -> StorageLocation {
        StorageLocation::new(self.bucket.clone(), self.prefix())
    }

    /// `{prefix}/{relative}`, the `/`s at either end of `relative` dropped (`{prefix}` when
    /// nothing is left): a place below the run's root that a caller names, such as the test
    /// report uploader's legacy `--log-destination`.
    pub fn location(&self, relative: &str) -> StorageLocation {
        match relative.trim_matches('/') {
            "" => self.root(),
            relative => self.at(format_args!("/{relative}")),
        }
    }

    /// `{prefix}/{filename}`: an artifact archive or its `.sha256sum` sidecar.
    pub fn artifact(&self, filename: &str) -> StorageLocation {
        self.at(format_args!("/{filename}"))
    }

    /// `{prefix}/index.html`.
    pub fn artifact_index(&self) -> StorageLocation {
        self.at(format_args!("/index.html"))
    }

    /// `{prefix}/logs/{group}`.
    pub fn log_dir(&self, artifact_group: &str) -> StorageLocation {
        self.at(format_args!("/logs/{artifact_group}"))
    }

    /// `{prefix}/logs/{stage}/{family}`, or `{prefix}/logs/{stage}` when `family` is empty.
    pub fn log_stage_dir(&self, stage: &str, family: &str) -> StorageLocation {
        if family.is_empty() {
            self.at(format_args!("/logs/{stage}"))
        } else {
            self.at(format_args!("/logs/{stage}/{family}"))
        }
    }

    /// `{prefix}/logs/{group}/{filename}`.
    pub fn log_file(&self, artifact_group: &str, filename: &str) -> StorageLocation {
        self.at(format_args!("/logs/{artifact_group}/{filename}"))
    }

    /// `{prefix}/logs/{group}/index.html`.
    pub fn log_index(&self, artifact_group: &str) -> StorageLocation {
        self.at(format_args!("/logs/{artifact_group}/index.html"))
    }

    /// `{prefix}/logs/index.html`.
    pub fn log_root_index(&self) -> StorageLocation {
        self.at(format_args!("/logs/index.html"))
    }

    /// `{prefix}/logs/{group}/build_observability.html`.
    pub fn build_observability(&self, artifact_group: &str) -> StorageLocation {
        self.at(format_args!(
            "/logs/{artifact_group}/build_observability.html"
        ))
    }

    /// `{prefix}/manifests/{group}`.
    pub fn manifest_dir(&self, artifact_group: &str) -> StorageLocation {
        self.at(format_args!("/manifests/{artifact_group}"))
    }

    /// `{prefix}/manifests/{group}/therock_manifest.json`.
    pub fn manifest(&self, artifact_group: &str) -> StorageLocation {
        self.at(format_args!(
            "/manifests/{artifact_group}/therock_manifest.json"
        ))
    }

    /// `{prefix}/manifests/therock_manifest.json`.
    pub fn manifest_root(&self) -> StorageLocation {
        self.at(format_args!("/manifests/therock_manifest.json"))
    }

    /// `{prefix}/manifests/index.html`.
    pub fn manifests_index(&self) -> StorageLocation {
        self.at(format_args!("/manifests/index.html"))
    }

    /// `{prefix}/packages/{pkg_type}`: an APT (`deb`) or RPM (`rpm`) repository.
    pub fn native_linux_packages(&self, pkg_type: &str) -> StorageLocation {
        self.at(format_args!("/packages/{pkg_type}"))
    }

    /// `{prefix}/logs/packaging/{pkg_type}`.
    pub fn native_linux_packages_log_dir(&self, pkg_type: &str) -> StorageLocation {
        self.at(format_args!("/logs/packaging/{pkg_type}"))
    }

    /// `{prefix}/logs/packaging/{pkg_type}/index.html`.
    pub fn native_linux_packages_log_index(&self, pkg_type: &str) -> StorageLocation {
        self.at(format_args!("/logs/packaging/{pkg_type}/index.html"))
    }

    /// `{prefix}/python/{group}`, or `{prefix}/python` when `artifact_group` is empty.
    pub fn python_packages(&self, artifact_group: &str) -> StorageLocation {
        if artifact_group.is_empty() {
            self.at(format_args!("/python"))
        } else {
            self.at(format_args!("/python/{artifact_group}"))
        }
    }

    /// `{prefix}/tarballs`.
    pub fn tarballs(&self) -> StorageLocation {
        self.at(format_args!("/tarballs"))
    }

    /// `{prefix}/tarballs/{filename}`.
    pub fn tarball(&self, filename: &str) -> StorageLocation {
        self.at(format_args!("/tarballs/{filename}"))
    }

    /// Every location of the run that the upload and fetch tools use, named, in a stable
    /// order: the run's root and artifact index; the logs, build observability, ninja and
    /// ccache archives and manifests of `artifact_group`; the log and manifest roots; the
    /// python packages (of the group and all); tarballs; the deb and rpm repositories with
    /// their logs; and, for a `(stage, family)`, the stage's log directory.
    pub fn layout(
        &self,
        artifact_group: &str,
        stage: Option<(&str, &str)>,
    ) -> Vec<(String, StorageLocation)> {
        let g = artifact_group;
        let mut entries: Vec<(String, StorageLocation)> = [
            ("root", self.root()),
            ("artifact_index", self.artifact_index()),
            ("log_dir", self.log_dir(g)),
            ("log_index", self.log_index(g)),
            ("log_root_index", self.log_root_index()),
            ("build_observability", self.build_observability(g)),
            ("ninja_logs", self.log_file(g, "ninja_logs.tar.gz")),
            ("ccache_logs", self.log_file(g, "ccache_logs.tar.zst")),
            ("manifest_dir", self.manifest_dir(g)),
            ("manifest", self.manifest(g)),
            ("manifest_root", self.manifest_root()),
            ("manifests_index", self.manifests_index()),
            ("python_packages", self.python_packages(g)),
            ("python_packages_root", self.python_packages("")),
            ("tarballs", self.tarballs()),
        ]
        .into_iter()
        .map(|(name, location)| (name.to_owned(), location))
        .collect();
        for pkg in ["deb", "rpm"] {
            entries.push((
                format!("native_packages_{pkg}"),
                self.native_linux_packages(pkg),
            ));
            entries.push((
                format!("native_packages_{pkg}_log_dir"),
                self.native_linux_packages_log_dir(pkg),
            ));
            entries.push((
                format!("native_packages_{pkg}_log_index"),
                self.native_linux_packages_log_index(pkg),
            ));
        }
        if let Some((stage, family)) = stage {
            entries.push((
                "log_stage_dir".to_owned(),
                self.log_stage_dir(stage, family),
            ));
        }
        entries
    }
}
