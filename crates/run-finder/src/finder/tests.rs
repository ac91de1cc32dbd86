use super::*;

fn query(groups: &[&str]) -> Query {
    Query {
        repository: "ROCm/TheRock".parse().unwrap(),
        workflow: "multi_arch_ci.yml".to_owned(),
        platform: Platform::Linux,
        artifact_groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        amdgpu_targets: Vec::new(),
        required_artifacts: Vec::new(),
        require_single_run: false,
        require_successful_run: false,
        therock_dir: None,
    }
}

#[test]
fn not_found_lines() {
    assert_eq!(
        query(&["gfx94X-dcgpu", "gfx120X-all"]).not_found("commit abc"),
        "No matching artifacts found for commit abc (platform=linux, artifact_group=['gfx94X-dcgpu', 'gfx120X-all'])"
    );
    let repo: GithubRepository = "ROCm/TheRock".parse().unwrap();
    for (source, line) in [
        (
            LatestSource::Run("5".to_owned()),
            "No matching artifacts found for workflow run 5",
        ),
        (
            LatestSource::Ref("v1".to_owned()),
            "No matching artifacts found for ref v1",
        ),
        (
            LatestSource::Branch {
                branch: "main".to_owned(),
                max_commits: 50,
            },
            "No matching artifacts found for last 50 commits on ROCm/TheRock/main",
        ),
    ] {
        assert_eq!(source.not_found(&repo), line);
    }
}
