//! Which workflow run holds the artifacts of some artifact groups: runs from the GitHub API,
//! their archives from one S3 listing per run.
