//! `find_artifacts_for_commit` and `find_latest_artifacts` (spec §9): which workflow run holds
//! the artifacts of some artifact groups, for a commit, one run, a ref or the recent commits of
//! a branch. Runs come from the GitHub API, their archives from one S3 listing per run.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use artifact_backend::ArtifactBackend;
use artifacts::ArtifactName;
use github_actions::{ApiError, GithubClient, WorkflowRun};
use regex::Regex;
use serde_json::Value;
use storage_backend::S3Client;
use workflow_outputs::{GithubRepository, Platform, WorkflowOutputRoot};

/// The options both finders take.
#[derive(Debug, Clone, clap::Args)]
pub struct FinderArgs {
    /// Repository in `owner/repo` form.
    #[arg(long, default_value = "ROCm/TheRock", value_parser = parse_github_repository)]
    pub repo: GithubRepository,
    /// Workflow file that produces the artifacts.
    #[arg(long, default_value = "multi_arch_ci.yml")]
    pub workflow: String,
    /// Platform of the runs [default: this machine's].
    #[arg(long, value_parser = crate::parse_platform)]
    pub platform: Option<Platform>,
    /// Artifact group(s), e.g. gfx94X-dcgpu gfx120X-all.
    #[arg(long, num_args = 1.., required = true, action = clap::ArgAction::Set)]
    pub artifact_group: Vec<String>,
    /// A GPU target that may appear in per-target artifacts (repeatable; only with one
    /// artifact group).
    #[arg(long, action = clap::ArgAction::Append)]
    pub amdgpu_target: Vec<String>,
    /// Regex that must match the file name of some selected artifact (repeatable).
    #[arg(long, action = clap::ArgAction::Append)]
    pub require_artifact: Vec<String>,
    /// All groups must be found in one workflow run.
    #[arg(long)]
    pub require_single_run: bool,
    /// Inspect only runs with status `completed` and conclusion `success`.
    #[arg(long)]
    pub require_successful_run: bool,
    /// Print the results as JSON on stdout (progress goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// A TheRock checkout, for the GPU family table (`cmake/therock_amdgpu_targets.cmake`)
    /// [default: `$THEROCK_DIR`, else the working directory or a parent holding
    /// `BUILD_TOPOLOGY.toml`].
    #[arg(long, env = "THEROCK_DIR")]
    pub therock_dir: Option<PathBuf>,
    /// Time limits and attempts of the requests.
    #[command(flatten)]
    pub limits: crate::NetworkLimits,
}

fn parse_github_repository(s: &str) -> Result<GithubRepository, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// Where one artifact group was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRunInfo {
    /// The commit the run built.
    pub git_commit_sha: String,
    /// `owner/repo`.
    pub github_repository_name: String,
    /// `""` or `{owner}-{name}/` (runs in the external bucket).
    pub external_repo: String,
    /// `linux` or `windows`.
    pub platform: String,
    /// The group asked for.
    pub artifact_group: String,
    /// The workflow file.
    pub workflow_file_name: String,
    /// The run id.
    pub workflow_run_id: String,
    /// `completed`, `in_progress`, ... (`unknown` when the API gave none).
    pub workflow_run_status: String,
    /// `success`, `failure`, ..., none while the run is not completed.
    pub workflow_run_conclusion: Option<String>,
    /// The run's web page.
    pub workflow_run_html_url: String,
    /// The artifacts bucket.
    pub s3_bucket: String,
    /// `--amdgpu-target` values.
    pub amdgpu_targets: Vec<String>,
    /// `--require-artifact` patterns.
    pub required_artifact_patterns: Vec<String>,
    /// The selected archives, sorted.
    pub artifact_filenames: Vec<String>,
}

impl ArtifactRunInfo {
    /// `https://github.com/{repo}/commit/{sha}`.
    pub fn git_commit_url(&self) -> String {
        format!(
            "https://github.com/{}/commit/{}",
            self.github_repository_name, self.git_commit_sha
        )
    }

    /// `{external_repo}{run_id}-{platform}/`.
    pub fn s3_path(&self) -> String {
        format!(
            "{}{}-{}/",
            self.external_repo, self.workflow_run_id, self.platform
        )
    }

    /// `s3://{bucket}/{s3_path}`.
    pub fn s3_uri(&self) -> String {
        format!("s3://{}/{}", self.s3_bucket, self.s3_path())
    }

    /// The run's `index.html` over HTTPS.
    pub fn s3_index_url(&self) -> String {
        format!(
            "https://{}.s3.amazonaws.com/{}index.html",
            self.s3_bucket,
            self.s3_path()
        )
    }

    /// The JSON object of one result (keys sorted when serialized).
    pub fn to_json(&self) -> BTreeMap<&'static str, Value> {
        let s = |v: &str| Value::String(v.to_owned());
        let list = |v: &[String]| Value::Array(v.iter().map(|x| s(x)).collect());
        BTreeMap::from([
            ("amdgpu_targets", list(&self.amdgpu_targets)),
            ("artifact_filenames", list(&self.artifact_filenames)),
            ("artifact_group", s(&self.artifact_group)),
            ("external_repo", s(&self.external_repo)),
            ("git_commit_sha", s(&self.git_commit_sha)),
            ("git_commit_url", s(&self.git_commit_url())),
            ("github_repository_name", s(&self.github_repository_name)),
            ("missing_required_artifact_patterns", Value::Array(vec![])),
            ("platform", s(&self.platform)),
            (
                "required_artifact_patterns",
                list(&self.required_artifact_patterns),
            ),
            ("s3_bucket", s(&self.s3_bucket)),
            ("s3_index_url", s(&self.s3_index_url())),
            ("s3_path", s(&self.s3_path())),
            ("s3_uri", s(&self.s3_uri())),
            ("workflow_file_name", s(&self.workflow_file_name)),
            (
                "workflow_run_conclusion",
                self.workflow_run_conclusion
                    .as_deref()
                    .map_or(Value::Null, s),
            ),
            ("workflow_run_html_url", s(&self.workflow_run_html_url)),
            ("workflow_run_id", s(&self.workflow_run_id)),
            ("workflow_run_status", s(&self.workflow_run_status)),
        ])
    }

    /// The human-readable block, followed by a blank line.
    pub fn print(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let status = match &self.workflow_run_conclusion {
            Some(c) if !c.is_empty() => format!("{} ({c})", self.workflow_run_status),
            _ => self.workflow_run_status.clone(),
        };
        writeln!(out, "Artifact info:")?;
        writeln!(
            out,
            "  Git repository:      {}",
            self.github_repository_name
        )?;
        writeln!(out, "  Git commit:          {}", self.git_commit_sha)?;
        writeln!(out, "  Git commit URL:      {}", self.git_commit_url())?;
        writeln!(out, "  Platform:            {}", self.platform)?;
        writeln!(out, "  Artifact group:      {}", self.artifact_group)?;
        if !self.amdgpu_targets.is_empty() {
            writeln!(
                out,
                "  AMDGPU targets:      {}",
                self.amdgpu_targets.join(", ")
            )?;
        }
        writeln!(out, "  Workflow name:       {}", self.workflow_file_name)?;
        writeln!(out, "  Workflow run ID:     {}", self.workflow_run_id)?;
        writeln!(out, "  Workflow run URL:    {}", self.workflow_run_html_url)?;
        writeln!(out, "  Workflow run status: {status}")?;
        writeln!(out, "  S3 Bucket:           {}", self.s3_bucket)?;
        writeln!(out, "  S3 Path:             {}", self.s3_path())?;
        writeln!(out, "  S3 Index:            {}", self.s3_index_url())?;
        writeln!(
            out,
            "  Artifact count:      {}",
            self.artifact_filenames.len()
        )?;
        if !self.artifact_filenames.is_empty() {
            writeln!(out, "  Artifacts:")?;
            for name in &self.artifact_filenames {
                writeln!(out, "    {name}")?;
            }
        }
        writeln!(out)
    }
}

/// What [`select_group`] decided for one group and one run's archives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMatch {
    /// The selected archives, sorted and de-duplicated (empty when no archive of the group
    /// itself, only generic ones, was found).
    pub artifact_filenames: Vec<String>,
    /// The `--require-artifact` patterns no selected archive matches.
    pub missing_patterns: Vec<String>,
}

impl GroupMatch {
    /// Whether the group counts as present in the run.
    pub fn is_present(&self) -> bool {
        !self.artifact_filenames.is_empty() && self.missing_patterns.is_empty()
    }
}

/// Text before the first `:`, lowercased (`gfx942:xnack+` → `gfx942`, `:xnack+` → empty).
fn base_lower(target: &str) -> String {
    target.split(':').next().unwrap_or("").to_lowercase()
}

/// The archives of `file_names` that belong to `group` (spec §3.2, third matcher): generic
/// ones, and those whose target family has, case-insensitively and by base architecture, the
/// group's name, one of `family_targets` (the group's targets in the family table) or one of
/// `explicit_targets`. Names that are not `{name}_{component}_{family}` archives are skipped.
/// Unless the group is `generic`, at least one non-generic archive must match, else nothing is
/// selected. Every pattern must then search-match some selected name.
pub fn select_group(
    file_names: &[String],
    group: &str,
    family_targets: &[String],
    explicit_targets: &[String],
    required: &[Regex],
) -> GroupMatch {
    let requested: Vec<String> = std::iter::once(group)
        .chain(family_targets.iter().map(String::as_str))
        .chain(explicit_targets.iter().map(String::as_str))
        .filter(|t| !t.is_empty())
        .map(base_lower)
        .collect();
    let mut specific = group.eq_ignore_ascii_case("generic");
    let mut kept: Vec<String> = Vec::new();
    for file_name in file_names {
        let Some(name) = ArtifactName::from_filename(file_name) else {
            continue;
        };
        let family = name.target_family();
        if family.eq_ignore_ascii_case("generic") {
            kept.push(file_name.clone());
        } else if requested.contains(&base_lower(family)) {
            kept.push(file_name.clone());
            specific = true;
        }
    }
    if !specific {
        kept.clear();
    }
    kept.sort();
    kept.dedup();
    let missing_patterns = required
        .iter()
        .filter(|r| !kept.iter().any(|n| r.is_match(n)))
        .map(|r| r.as_str().to_owned())
        .collect();
    GroupMatch {
        artifact_filenames: kept,
        missing_patterns,
    }
}

/// Looks runs up and inspects their artifacts.
pub struct Finder<'a> {
    args: &'a FinderArgs,
    platform: Platform,
    required: Vec<Regex>,
    /// The family-table targets of each requested group.
    family_targets: HashMap<String, Vec<String>>,
    github: GithubClient,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// One client per bucket region.
    clients: HashMap<String, S3Client>,
}

/// The requested groups, de-duplicated in first-seen order.
fn unique_groups(groups: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for g in groups {
        if !out.contains(&g.as_str()) {
            out.push(g);
        }
    }
    out
}

impl<'a> Finder<'a> {
    /// Checks the request before any request is made: explicit targets need a single group,
    /// every `--require-artifact` must compile, the family table must be readable.
    pub fn new(
        args: &'a FinderArgs,
        lookup: &'a dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Self> {
        if !args.amdgpu_target.is_empty() && unique_groups(&args.artifact_group).len() != 1 {
            bail!("Explicit AMDGPU targets may be used only with one artifact group");
        }
        let required = args
            .require_artifact
            .iter()
            .map(|p| Regex::new(p).with_context(|| format!("Invalid --require-artifact `{p}`")))
            .collect::<anyhow::Result<_>>()?;
        let map = crate::artifact_manager::Checkout {
            topology: None,
            therock_dir: args.therock_dir.clone(),
        }
        .family_map()
        .context("Cannot read the GPU family table: pass --therock-dir DIR (a TheRock checkout) or set THEROCK_DIR")?;
        let family_targets = args
            .artifact_group
            .iter()
            .map(|g| (g.clone(), map.targets_of(g).to_vec()))
            .collect();
        Ok(Self {
            args,
            platform: args.platform.unwrap_or_else(Platform::host),
            required,
            family_targets,
            github: GithubClient::from_lookup(lookup)?,
            lookup,
            clients: HashMap::new(),
        })
    }

    /// The GitHub client.
    pub fn github(&self) -> &GithubClient {
        &self.github
    }

    async fn client(&mut self, region: &str) -> Result<S3Client, storage_backend::Error> {
        if let Some(client) = self.clients.get(region) {
            return Ok(client.clone());
        }
        let client = crate::artifact_reader(region, 0, self.lookup).await?;
        self.clients.insert(region.to_owned(), client.clone());
        Ok(client)
    }

    /// The runs of the workflow for `commit`, newest first, inspected for every group.
    pub async fn for_commit(
        &mut self,
        commit: &str,
        log: &mut dyn Write,
    ) -> anyhow::Result<Vec<ArtifactRunInfo>> {
        let runs = self.github.all_workflow_runs_for_commit(
            self.args.repo.as_str(),
            &self.args.workflow,
            commit,
        )?;
        self.inspect(commit, &runs, self.args.require_single_run, log)
            .await
    }

    /// One run, inspected for every group (all groups must be in it).
    pub async fn for_run(
        &mut self,
        run_id: &str,
        log: &mut dyn Write,
    ) -> anyhow::Result<Vec<ArtifactRunInfo>> {
        let run = self
            .github
            .workflow_run(self.args.repo.as_str(), run_id)
            .map_err(|e| match e {
                // The hint of that error names another tool's flag.
                ApiError::WorkflowRun { source, .. } => *source,
                other => other,
            })?;
        let commit = run.head_sha.clone().unwrap_or_default();
        self.inspect(&commit, &[run], true, log).await
    }

    /// Inspects `runs` (newest first). By default each group is taken from the newest run
    /// holding it; with `single_run` only a run holding every group counts.
    async fn inspect(
        &mut self,
        commit: &str,
        runs: &[WorkflowRun],
        single_run: bool,
        log: &mut dyn Write,
    ) -> anyhow::Result<Vec<ArtifactRunInfo>> {
        let groups = self.args.artifact_group.clone();
        let requested = unique_groups(&groups);
        let mut found: HashMap<String, ArtifactRunInfo> = HashMap::new();
        for run in runs {
            if self.args.require_successful_run
                && (run.status.as_deref() != Some("completed")
                    || run.conclusion.as_deref() != Some("success"))
            {
                continue;
            }
            let run_id = run.id.to_string();
            let selection = crate::select_bucket_for_run(
                Some(self.args.repo.clone()),
                None,
                run,
                self.lookup,
                log,
            )?;
            let root = WorkflowOutputRoot::for_workflow_run(&run_id, self.platform, &selection)?;
            let client = self.client(selection.config().region()).await?;
            let backend = ArtifactBackend::s3(client, root.clone());
            let files: Vec<String> = backend
                .list_artifacts(None)
                .await
                .with_context(|| {
                    format!(
                        "Failed to list the artifacts of run {run_id} at `{}`",
                        backend.base_uri()
                    )
                })?
                .into_iter()
                .map(|e| e.file_name)
                .collect();
            let mut in_this_run: HashMap<String, ArtifactRunInfo> = HashMap::new();
            for group in &requested {
                if !single_run && found.contains_key(*group) {
                    continue;
                }
                let matched = select_group(
                    &files,
                    group,
                    self.family_targets.get(*group).map_or(&[], Vec::as_slice),
                    &self.args.amdgpu_target,
                    &self.required,
                );
                if !matched.is_present() {
                    continue;
                }
                let info = self.info(commit, run, &root, group, matched.artifact_filenames);
                in_this_run.insert((*group).to_owned(), info);
            }
            if single_run {
                if in_this_run.len() == requested.len() {
                    return Ok(in_order(&groups, &in_this_run));
                }
            } else {
                found.extend(in_this_run);
                if found.len() == requested.len() {
                    break;
                }
            }
        }
        if single_run {
            return Ok(Vec::new());
        }
        Ok(in_order(&groups, &found))
    }

    fn info(
        &self,
        commit: &str,
        run: &WorkflowRun,
        root: &WorkflowOutputRoot,
        group: &str,
        artifact_filenames: Vec<String>,
    ) -> ArtifactRunInfo {
        ArtifactRunInfo {
            git_commit_sha: commit.to_owned(),
            github_repository_name: self.args.repo.as_str().to_owned(),
            external_repo: root.external_repo().to_owned(),
            platform: self.platform.to_string(),
            artifact_group: group.to_owned(),
            workflow_file_name: self.args.workflow.clone(),
            workflow_run_id: run.id.to_string(),
            workflow_run_status: run.status.clone().unwrap_or_else(|| "unknown".to_owned()),
            workflow_run_conclusion: run.conclusion.clone(),
            workflow_run_html_url: run.html_url.clone().unwrap_or_default(),
            s3_bucket: root.bucket().to_owned(),
            amdgpu_targets: self.args.amdgpu_target.clone(),
            required_artifact_patterns: self.args.require_artifact.clone(),
            artifact_filenames,
        }
    }
}

/// Where [`Finder::latest`] looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LatestSource {
    /// The newest `max_commits` commits of a branch.
    Branch {
        /// The branch.
        branch: String,
        /// How many commits at most.
        max_commits: usize,
    },
    /// The one commit a branch, tag or SHA names.
    Ref(String),
    /// One workflow run.
    Run(String),
}

impl Finder<'_> {
    /// The newest point of `source` where every requested group exists (spec §9.2): for a
    /// run, that run; else the first commit, newest first, whose runs hold every group.
    /// `verbose` progress goes to `progress`.
    pub async fn latest(
        &mut self,
        source: &LatestSource,
        verbose: bool,
        log: &mut dyn Write,
        progress: &mut dyn Write,
    ) -> anyhow::Result<Vec<ArtifactRunInfo>> {
        let repo = self.args.repo.as_str().to_owned();
        let (commits, location) = match source {
            LatestSource::Run(id) => return self.for_run(id, log).await,
            LatestSource::Ref(git_ref) => (
                vec![self.github.resolve_ref(&repo, git_ref)?],
                format!("ref {git_ref}"),
            ),
            LatestSource::Branch {
                branch,
                max_commits,
            } => (
                self.github
                    .recent_branch_commits(&repo, branch, *max_commits)?,
                format!("branch {branch}"),
            ),
        };
        let groups = self.args.artifact_group.clone();
        if verbose {
            writeln!(
                progress,
                "Searching {} commit(s) from {location} in {repo} for {} group(s): {}...",
                commits.len(),
                groups.len(),
                groups.join(", ")
            )?;
        }
        for (i, commit) in commits.iter().enumerate() {
            if verbose {
                writeln!(
                    progress,
                    "  [{}/{}] Checking {}...",
                    i + 1,
                    commits.len(),
                    commit.get(..8).unwrap_or(commit)
                )?;
            }
            let results = self.for_commit(commit, log).await?;
            if results.is_empty() {
                if verbose {
                    writeln!(progress, "    No artifacts found")?;
                }
                continue;
            }
            if results.len() < groups.len() {
                if verbose {
                    let found: Vec<&str> =
                        results.iter().map(|r| r.artifact_group.as_str()).collect();
                    writeln!(
                        progress,
                        "    Partial: found {} (need all {})",
                        found.join(", "),
                        groups.len()
                    )?;
                }
                continue;
            }
            if verbose {
                let mut ids: Vec<&str> =
                    results.iter().map(|r| r.workflow_run_id.as_str()).collect();
                ids.sort_unstable();
                ids.dedup();
                writeln!(
                    progress,
                    "    Found all {} group(s): run(s) {}",
                    groups.len(),
                    ids.join(", ")
                )?;
            }
            return Ok(results);
        }
        Ok(Vec::new())
    }
}

/// The results in the order of the `--artifact-group` list, duplicates included.
fn in_order(groups: &[String], found: &HashMap<String, ArtifactRunInfo>) -> Vec<ArtifactRunInfo> {
    groups
        .iter()
        .filter_map(|g| found.get(g).cloned())
        .collect()
}

/// A Python `repr` of a list of strings, as the reference prints `artifact_group=[...]`.
pub fn python_list_repr(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            let quote = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut out = String::from(quote);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '\r' => out.push_str("\\r"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        })
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// Runs a finder's lookup on a runtime and turns its outcome into the reference's output and
/// exit codes: 0 with the results on stdout (JSON with `--json`), 1 with `not_found` on stderr
/// when nothing matched, 2 with `Error: ...` on stderr when a request or the input failed.
/// `lookup` gets the progress writer (stderr: stdout carries only the results).
pub fn run_finder<F>(
    json: bool,
    not_found: &str,
    lookup: impl FnOnce(Box<dyn Write>) -> F,
) -> ExitCode
where
    F: std::future::Future<Output = anyhow::Result<Vec<ArtifactRunInfo>>>,
{
    let log: Box<dyn Write> = Box::new(std::io::stderr());
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to start the async runtime")
        .and_then(|runtime| runtime.block_on(lookup(log)));
    let printed = match result {
        Ok(results) if results.is_empty() => {
            let _ = writeln!(std::io::stderr(), "{not_found}");
            return ExitCode::FAILURE;
        }
        Ok(results) => print_results(&results, json),
        Err(e) => Err(e),
    };
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if crate::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(std::io::stderr(), "Error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn print_results(results: &[ArtifactRunInfo], json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let doc = BTreeMap::from([
            (
                "results",
                Value::Array(
                    results
                        .iter()
                        .map(|r| {
                            Value::Object(
                                r.to_json()
                                    .into_iter()
                                    .map(|(k, v)| (k.to_owned(), v))
                                    .collect(),
                            )
                        })
                        .collect(),
                ),
            ),
            ("status", Value::String("found".to_owned())),
        ]);
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        for r in results {
            r.print(&mut out)?;
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests;
