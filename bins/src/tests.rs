use super::expand_long_prefixes;

fn expand(args: &[&str]) -> Result<Vec<String>, String> {
    let mut command = clap::Command::new("t")
        .arg(clap::Arg::new("run_id").long("run-id"))
        .arg(clap::Arg::new("run_repo").long("run-github-repo"))
        .arg(
            clap::Arg::new("dry")
                .long("dry-run")
                .action(clap::ArgAction::SetTrue),
        )
        .arg(clap::Arg::new("rest").num_args(0..));
    command.build();
    let args = std::iter::once("t")
        .chain(args.iter().copied())
        .map(Into::into);
    expand_long_prefixes(&command, args)
        .map(|v| v.into_iter().map(|a| a.into_string().unwrap()).collect())
        .map_err(|e| e.to_string())
}

#[test]
fn prefixes_expand_and_values_pass() {
    assert_eq!(
        expand(&["--run-i", "--dr", "--dry", "--run-g=a/b", "x", "--", "--dr"]).unwrap(),
        [
            "t",
            "--run-id",
            "--dr",
            "--dry-run",
            "--run-github-repo=a/b",
            "x",
            "--",
            "--dr"
        ]
    );
    assert_eq!(expand(&["--nope", "-v"]).unwrap(), ["t", "--nope", "-v"]);
    let err = expand(&["--run=5"]).unwrap_err();
    assert!(
        err.contains("ambiguous option: --run=5 could match --run-id, --run-github-repo"),
        "{err}"
    );
}
