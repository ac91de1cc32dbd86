use super::{error_text, expand_long_prefixes};

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

/// A cause is printed once, however many layers repeat it.
#[test]
fn error_text_says_each_cause_once() {
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);
    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }
    let refused = Layer(
        "dispatch failure",
        Some(Box::new(Layer(
            "dispatch failure",
            Some(Box::new(Layer("connection refused", None))),
        ))),
    );
    let err = anyhow::Error::new(refused).context("Failed to list s3://b/1-linux/");
    assert_eq!(
        error_text(&err),
        "Failed to list s3://b/1-linux/: dispatch failure: connection refused"
    );
    assert_eq!(format!("{err:#}").matches("dispatch failure").count(), 2);
}
