//! The search: runs from the GitHub API (off the async threads: the client blocks), their
//! archives from one S3 listing per run.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use artifact_backend::ArtifactBackend;
use build_topology::{Checkout, CheckoutError, FamilyMap};
use github_actions::{ApiError, GithubClient, WorkflowRun};
use regex::Regex;
use storage_backend::{ClientOptions, S3Client};
use workflow_outputs::{GithubRepository, Platform, WorkflowOutputRoot};

use crate::error::FinderError;
use crate::groups::{select_group, unique_groups};
use crate::report::ArtifactRunInfo;
use crate::report::python_list_repr;

/// What to look for, and where.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Query {
    /// The repository whose runs are searched.
    pub repository: GithubRepository,
    /// The workflow file that produces the artifacts (`multi_arch_ci.yml`).
    pub workflow: String,
    /// The platform of the runs.
    pub platform: Platform,
    /// The artifact groups, in the order results are returned (duplicates kept).
    pub artifact_groups: Vec<String>,
    /// GPU targets that may appear in per-target artifacts (only with one group).
    pub amdgpu_targets: Vec<String>,
    /// Regular expressions that must each match the file name of some selected archive.
    pub required_artifacts: Vec<String>,
    /// All groups must be found in one run.
    pub require_single_run: bool,
    /// Only runs with status `completed` and conclusion `success` count.
    pub require_successful_run: bool,
    /// A TheRock checkout, for the GPU family table; else the working directory or the first
    /// of its parents holding `BUILD_TOPOLOGY.toml`.
    pub therock_dir: Option<PathBuf>,
}

impl Query {
    /// Runs of `workflow` in `repository` on `platform`, for every artifact group and target,
    /// no artifact required, the first match taken, whatever the run's conclusion, the
    /// topology of the working directory's checkout.
    pub fn new(
        repository: GithubRepository,
        workflow: impl Into<String>,
        platform: Platform,
    ) -> Self {
        Query {
            repository,
            workflow: workflow.into(),
            platform,
            artifact_groups: Vec::new(),
            amdgpu_targets: Vec::new(),
            required_artifacts: Vec::new(),
            require_single_run: false,
            require_successful_run: false,
            therock_dir: None,
        }
    }
}

/// Where [`Finder::latest`] looks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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

impl Query {
    /// The line saying that nothing matched a search of `searched` (`commit abc`, `run 5`):
    /// `No matching artifacts found for {searched} (platform=…, artifact_group=[…])`.
    pub fn not_found(&self, searched: &str) -> String {
        format!(
            "No matching artifacts found for {searched} (platform={}, artifact_group={})",
            self.platform,
            python_list_repr(&self.artifact_groups)
        )
    }
}

impl LatestSource {
    /// Where the search looks, for the user: `workflow run 5`, `ref v1`, or
    /// `last 50 commits on ROCm/TheRock/main` (`repository`'s branch).
    pub fn searched(&self, repository: &GithubRepository) -> String {
        match self {
            LatestSource::Run(id) => format!("workflow run {id}"),
            LatestSource::Ref(r) => format!("ref {r}"),
            LatestSource::Branch {
                branch,
                max_commits,
            } => format!(
                "last {max_commits} commits on {}/{branch}",
                repository.as_str()
            ),
        }
    }

    /// The line saying that nothing matched: `No matching artifacts found for {searched}`
    /// with [`LatestSource::searched`].
    pub fn not_found(&self, repository: &GithubRepository) -> String {
        format!(
            "No matching artifacts found for {}",
            self.searched(repository)
        )
    }
}

/// Looks runs up and inspects their artifacts.
pub struct Finder<'a> {
    query: Query,
    required: Vec<Regex>,
    /// The family-table targets of each requested group.
    family_targets: HashMap<String, Vec<String>>,
    github: GithubClient,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// One client per bucket region.
    clients: HashMap<String, S3Client>,
}

/// The GPU family table of the checkout at `therock_dir`, else of the one holding the working
/// directory (found by its `BUILD_TOPOLOGY.toml`).
fn load_family_map(therock_dir: Option<PathBuf>) -> Result<FamilyMap, CheckoutError> {
    Checkout {
        topology: None,
        therock_dir,
    }
    .family_map()
}

impl<'a> Finder<'a> {
    /// Checks the query before any request is made: explicit targets need a single group,
    /// every required pattern must compile, the family table must be readable. The GitHub
    /// client and the S3 clients are configured through `lookup`.
    ///
    /// # Errors
    /// [`FinderError::TargetsNeedOneGroup`], [`FinderError::InvalidPattern`],
    /// [`FinderError::FamilyTable`], or a malformed `GITHUB_API_URL`.
    pub async fn new(
        query: Query,
        lookup: &'a dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, FinderError> {
        if !query.amdgpu_targets.is_empty() && unique_groups(&query.artifact_groups).len() != 1 {
            return Err(FinderError::TargetsNeedOneGroup);
        }
        let required = query
            .required_artifacts
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|source| FinderError::InvalidPattern {
                    pattern: p.clone(),
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        let therock_dir = query.therock_dir.clone();
        let map = storage_backend::blocking(move || load_family_map(therock_dir))
            .await
            .map_err(FinderError::FamilyTable)?;
        let family_targets = query
            .artifact_groups
            .iter()
            .map(|g| (g.clone(), map.targets_of(g).to_vec()))
            .collect();
        Ok(Self {
            query,
            required,
            family_targets,
            github: GithubClient::from_lookup(lookup)?,
            lookup,
            clients: HashMap::new(),
        })
    }

    /// Runs `call` with the GitHub client on the blocking pool: the client's requests and
    /// its waits between retries (rate limits, backoff) block their thread.
    async fn github<T: Send + 'static>(
        &self,
        call: impl FnOnce(&GithubClient) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let client = self.github.clone();
        storage_backend::blocking(move || call(&client)).await
    }

    /// The S3 client for buckets in `region` (signed with the default chain, unsigned when
    /// there are no credentials), made once.
    async fn client(&mut self, region: &str) -> Result<S3Client, storage_backend::Error> {
        if let Some(client) = self.clients.get(region) {
            return Ok(client.clone());
        }
        let client = S3Client::connect_with(&ClientOptions::reading(region), self.lookup).await?;
        self.clients.insert(region.to_owned(), client.clone());
        Ok(client)
    }

    /// The runs of the workflow for `commit`, newest first, inspected for every group. The
    /// bucket report of each run inspected goes to `log`.
    ///
    /// # Errors
    /// A failed API request, bucket decision or listing.
    pub async fn for_commit(
        &mut self,
        commit: &str,
        log: &mut dyn Write,
    ) -> Result<Vec<ArtifactRunInfo>, FinderError> {
        let (repo, workflow, sha) = (
            self.query.repository.as_str().to_owned(),
            self.query.workflow.clone(),
            commit.to_owned(),
        );
        let runs = self
            .github(move |gh| gh.all_workflow_runs_for_commit(&repo, &workflow, &sha))
            .await?;
        self.inspect(commit, &runs, self.query.require_single_run, log)
            .await
    }

    /// One run, inspected for every group (all groups must be in it).
    ///
    /// # Errors
    /// As [`Finder::for_commit`].
    pub async fn for_run(
        &mut self,
        run_id: &str,
        log: &mut dyn Write,
    ) -> Result<Vec<ArtifactRunInfo>, FinderError> {
        let (repo, id) = (self.query.repository.as_str().to_owned(), run_id.to_owned());
        let run = self
            .github(move |gh| gh.workflow_run(&repo, &id))
            .await
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
    ) -> Result<Vec<ArtifactRunInfo>, FinderError> {
        let groups = self.query.artifact_groups.clone();
        let requested = unique_groups(&groups);
        let mut found: HashMap<String, ArtifactRunInfo> = HashMap::new();
        for run in runs {
            if self.query.require_successful_run
                && (run.status.as_deref() != Some("completed")
                    || run.conclusion.as_deref() != Some("success"))
            {
                continue;
            }
            let run_id = run.id.to_string();
            let selection = github_actions::select_bucket_for_run(
                Some(self.query.repository.clone()),
                None,
                run,
                self.lookup,
                log,
            )?;
            let root =
                WorkflowOutputRoot::for_workflow_run(&run_id, self.query.platform, &selection)?;
            let client = self
                .client(selection.config().region())
                .await
                .map_err(|e| FinderError::Client(Box::new(e)))?;
            let backend = ArtifactBackend::s3(client, root.clone());
            let files: Vec<String> = backend
                .list_artifacts(None)
                .await
                .map_err(|source| FinderError::List {
                    run_id: run_id.clone(),
                    uri: backend.base_uri(),
                    source: Box::new(source),
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
                    &self.query.amdgpu_targets,
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
            github_repository_name: self.query.repository.as_str().to_owned(),
            external_repo: root.external_repo().to_owned(),
            platform: self.query.platform.to_string(),
            artifact_group: group.to_owned(),
            workflow_file_name: self.query.workflow.clone(),
            workflow_run_id: run.id.to_string(),
            workflow_run_status: run.status.clone().unwrap_or_else(|| "unknown".to_owned()),
            workflow_run_conclusion: run.conclusion.clone(),
            workflow_run_html_url: run.html_url.clone().unwrap_or_default(),
            s3_bucket: root.bucket().to_owned(),
            amdgpu_targets: self.query.amdgpu_targets.clone(),
            required_artifact_patterns: self.query.required_artifacts.clone(),
            artifact_filenames,
        }
    }

    /// The newest point of `source` where every requested group exists (spec §9.2): for a
    /// run, that run; else the first commit, newest first, whose runs hold every group. With
    /// `verbose`, the search's progress goes to `progress`; bucket reports go to `log`.
    ///
    /// # Errors
    /// As [`Finder::for_commit`], and [`FinderError::Progress`].
    pub async fn latest(
        &mut self,
        source: &LatestSource,
        verbose: bool,
        log: &mut dyn Write,
        progress: &mut dyn Write,
    ) -> Result<Vec<ArtifactRunInfo>, FinderError> {
        let repo = self.query.repository.as_str().to_owned();
        let (commits, location) = match source {
            LatestSource::Run(id) => return self.for_run(id, log).await,
            LatestSource::Ref(git_ref) => {
                let (r, g) = (repo.clone(), git_ref.clone());
                let sha = self.github(move |gh| gh.resolve_ref(&r, &g)).await?;
                (vec![sha], format!("ref {git_ref}"))
            }
            LatestSource::Branch {
                branch,
                max_commits,
            } => {
                let (r, b, n) = (repo.clone(), branch.clone(), *max_commits);
                let shas = self
                    .github(move |gh| gh.recent_branch_commits(&r, &b, n))
                    .await?;
                (shas, format!("branch {branch}"))
            }
        };
        let groups = self.query.artifact_groups.clone();
        let mut say = |line: String| {
            if verbose {
                writeln!(progress, "{line}").map_err(FinderError::Progress)
            } else {
                Ok(())
            }
        };
        say(format!(
            "Searching {} commit(s) from {location} in {repo} for {} group(s): {}...",
            commits.len(),
            groups.len(),
            groups.join(", ")
        ))?;
        for (i, commit) in commits.iter().enumerate() {
            say(format!(
                "  [{}/{}] Checking {}...",
                i + 1,
                commits.len(),
                commit.get(..8).unwrap_or(commit)
            ))?;
            let results = self.for_commit(commit, log).await?;
            if results.is_empty() {
                say("    No artifacts found".to_owned())?;
                continue;
            }
            if results.len() < groups.len() {
                let found: Vec<&str> = results.iter().map(|r| r.artifact_group.as_str()).collect();
                say(format!(
                    "    Partial: found {} (need all {})",
                    found.join(", "),
                    groups.len()
                ))?;
                continue;
            }
            let mut ids: Vec<&str> = results.iter().map(|r| r.workflow_run_id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            say(format!(
                "    Found all {} group(s): run(s) {}",
                groups.len(),
                ids.join(", ")
            ))?;
            return Ok(results);
        }
        Ok(Vec::new())
    }
}

/// The results in the order of the group list, duplicates included.
fn in_order(groups: &[String], found: &HashMap<String, ArtifactRunInfo>) -> Vec<ArtifactRunInfo> {
    groups
        .iter()
        .filter_map(|g| found.get(g).cloned())
        .collect()
}

#[cfg(test)]
mod tests;
