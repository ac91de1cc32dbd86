use super::*;

fn env_of(vars: &[(&'static str, &'static str)]) -> Env {
    let vars = vars.to_vec();
    Arc::new(move |var: &str| {
        vars.iter()
            .find(|(k, _)| *k == var)
            .map(|(_, v)| (*v).to_owned())
    })
}

#[test]
fn flags_then_the_environment() {
    let env = env_of(&[
        ("GITHUB_RUN_ID", "7"),
        ("THEROCK_PLATFORM", "windows"),
        ("THEROCK_LOCAL_STAGING_DIR", "/stage"),
    ]);
    let options = RunOptions::resolve(GivenRun::default(), env.clone(), 3).unwrap();
    assert_eq!(options.run_id.as_deref(), Some("7"));
    assert_eq!(options.platform, Platform::Windows);
    assert_eq!(options.local_staging_dir, Some(PathBuf::from("/stage")));
    assert_eq!(options.concurrency, 3);
    let given = GivenRun {
        run_id: Some("9".to_owned()),
        platform: Some(Platform::Linux),
        ..GivenRun::default()
    };
    let env = env_of(&[("THEROCK_RUN_ID", "8"), ("GITHUB_RUN_ID", "7")]);
    let options = RunOptions::resolve(given, env.clone(), 1).unwrap();
    assert_eq!(
        (options.run_id.as_deref(), options.platform),
        (Some("9"), Platform::Linux)
    );
    let options = RunOptions::resolve(GivenRun::default(), env, 1).unwrap();
    assert_eq!(options.run_id.as_deref(), Some("8"));
}

#[test]
fn bad_settings_are_usage_errors() {
    let err = |given: GivenRun, vars: &[(&'static str, &'static str)]| {
        let e = RunOptions::resolve(given, env_of(vars), 1).err().unwrap();
        assert!(e.is_usage(), "{e}");
        e.to_string()
    };
    assert!(
        err(GivenRun::default(), &[("THEROCK_PLATFORM", "mac")]).starts_with("THEROCK_PLATFORM: ")
    );
    assert_eq!(
        err(GivenRun::default(), &[("THEROCK_LOCAL_STAGING_DIR", "")]),
        "THEROCK_LOCAL_STAGING_DIR is set but empty: unset it for S3, or give a directory"
    );
    let given = GivenRun {
        local_staging_dir: Some(PathBuf::new()),
        ..GivenRun::default()
    };
    assert_eq!(err(given, &[]), "--local-staging-dir is empty");
}

#[test]
fn default_concurrencies() {
    let extract = crate::pipeline::default_extract_concurrency();
    assert!(extract >= 1);
    assert_eq!(
        crate::pipeline::default_compress_concurrency(),
        extract.div_ceil(2)
    );
}
