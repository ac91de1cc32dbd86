use std::collections::HashMap;
use std::path::Path;

use super::*;

fn root(bucket: &str, external: &str, run_id: &str, platform: Platform) -> WorkflowOutputRoot {
    WorkflowOutputRoot::new(
        bucket,
        ExternalRepo::parse(external).unwrap(),
        run_id,
        platform,
    )
    .unwrap()
}

fn r99() -> WorkflowOutputRoot {
    root("therock-ci-artifacts", "", "99999", Platform::Linux)
}

fn repo(s: &str) -> GithubRepository {
    s.parse().unwrap()
}

// Spec §18.2: prefixes.
#[test]
fn prefixes() {
    let cases = [
        (
            root("therock-ci-artifacts", "", "12345", Platform::Linux),
            "12345-linux",
        ),
        (
            root(
                "therock-ci-artifacts",
                "Fork-TheRock/",
                "12345",
                Platform::Linux,
            ),
            "Fork-TheRock/12345-linux",
        ),
        (
            root("therock-ci-artifacts", "", "12345", Platform::Windows),
            "12345-windows",
        ),
        (root("my-bucket", "", "123", Platform::Linux), "123-linux"),
        (
            root("b", "owner-repo/", "99", Platform::Windows),
            "owner-repo/99-windows",
        ),
    ];
    for (r, prefix) in cases {
        assert_eq!(r.prefix(), prefix);
        assert_eq!(r.root(), StorageLocation::new(r.bucket(), prefix));
    }
}

// Spec §18.2: every method of R99.
#[test]
fn r99_paths() {
    let r = r99();
    let cases: Vec<(StorageLocation, &str)> = vec![
        (
            r.artifact("blas_lib_gfx94X.tar.xz"),
            "99999-linux/blas_lib_gfx94X.tar.xz",
        ),
        (
            r.artifact("blas_lib_gfx94X.tar.xz.sha256sum"),
            "99999-linux/blas_lib_gfx94X.tar.xz.sha256sum",
        ),
        (r.artifact_index(), "99999-linux/index.html"),
        (r.log_dir("gfx94X-dcgpu"), "99999-linux/logs/gfx94X-dcgpu"),
        (
            r.log_file("gfx94X-dcgpu", "build.log"),
            "99999-linux/logs/gfx94X-dcgpu/build.log",
        ),
        (
            r.log_file("gfx94X-dcgpu", "ninja_logs.tar.gz"),
            "99999-linux/logs/gfx94X-dcgpu/ninja_logs.tar.gz",
        ),
        (
            r.log_index("gfx94X-dcgpu"),
            "99999-linux/logs/gfx94X-dcgpu/index.html",
        ),
        (r.log_root_index(), "99999-linux/logs/index.html"),
        (
            r.build_observability("gfx94X-dcgpu"),
            "99999-linux/logs/gfx94X-dcgpu/build_observability.html",
        ),
        (
            r.log_stage_dir("math-libs", "gfx1151"),
            "99999-linux/logs/math-libs/gfx1151",
        ),
        (
            r.log_stage_dir("foundation", ""),
            "99999-linux/logs/foundation",
        ),
        (
            r.log_stage_dir("compiler-runtime", ""),
            "99999-linux/logs/compiler-runtime",
        ),
        (
            r.manifest_dir("gfx94X-dcgpu"),
            "99999-linux/manifests/gfx94X-dcgpu",
        ),
        (
            r.manifest("gfx94X-dcgpu"),
            "99999-linux/manifests/gfx94X-dcgpu/therock_manifest.json",
        ),
        (
            r.manifest_root(),
            "99999-linux/manifests/therock_manifest.json",
        ),
        (r.manifests_index(), "99999-linux/manifests/index.html"),
        (
            r.python_packages("gfx110X-all"),
            "99999-linux/python/gfx110X-all",
        ),
        (r.python_packages(""), "99999-linux/python"),
        (r.native_linux_packages("deb"), "99999-linux/packages/deb"),
        (r.native_linux_packages("rpm"), "99999-linux/packages/rpm"),
        (
            r.native_linux_packages_log_dir("deb"),
            "99999-linux/logs/packaging/deb",
        ),
        (
            r.native_linux_packages_log_dir("rpm"),
            "99999-linux/logs/packaging/rpm",
        ),
        (
            r.native_linux_packages_log_index("deb"),
            "99999-linux/logs/packaging/deb/index.html",
        ),
        (r.tarballs(), "99999-linux/tarballs"),
        (r.tarball("rocm.tar.gz"), "99999-linux/tarballs/rocm.tar.gz"),
    ];
    for (loc, rel) in cases {
        assert_eq!(loc.relative_path(), rel);
        assert_eq!(loc.bucket(), "therock-ci-artifacts");
    }
}

// Spec §18.2: external prefix and rendered forms.
#[test]
fn external_and_rendered_paths() {
    let ext = root(
        "therock-ci-artifacts-external",
        "Fork-TheRock/",
        "12345",
        Platform::Windows,
    );
    let a = ext.artifact("blas_lib_gfx110X.tar.zst");
    assert_eq!(
        a.relative_path(),
        "Fork-TheRock/12345-windows/blas_lib_gfx110X.tar.zst"
    );
    assert_eq!(
        a.s3_uri(),
        "s3://therock-ci-artifacts-external/Fork-TheRock/12345-windows/blas_lib_gfx110X.tar.zst"
    );
    let ext_linux = root(
        "therock-ci-artifacts-external",
        "Fork-TheRock/",
        "12345",
        Platform::Linux,
    );
    assert_eq!(
        ext_linux.log_dir("gfx94X-dcgpu").relative_path(),
        "Fork-TheRock/12345-linux/logs/gfx94X-dcgpu"
    );

    let r42 = root("therock-ci-artifacts", "", "42", Platform::Linux);
    let f = r42.artifact("f.tar.xz");
    assert_eq!(f.s3_uri(), "s3://therock-ci-artifacts/42-linux/f.tar.xz");
    assert_eq!(
        f.https_url(),
        "https://therock-ci-artifacts.s3.amazonaws.com/42-linux/f.tar.xz"
    );
    assert_eq!(
        f.local_path(Path::new("/s")).unwrap(),
        Path::new("/s/42-linux/f.tar.xz")
    );
    assert_eq!(
        r42.manifest("gfx94X-dcgpu").s3_uri(),
        "s3://therock-ci-artifacts/42-linux/manifests/gfx94X-dcgpu/therock_manifest.json"
    );
    assert_eq!(
        r42.log_index("gfx94X-dcgpu").https_url(),
        "https://therock-ci-artifacts.s3.amazonaws.com/42-linux/logs/gfx94X-dcgpu/index.html"
    );
}

// Spec §18.3: for_local.
#[test]
fn for_local() {
    let r = WorkflowOutputRoot::for_local(None, None, None).unwrap();
    assert_eq!(r.bucket(), "local");
    assert_eq!(r.external_repo(), "");
    assert_eq!(r.run_id(), "local");
    assert!(["linux", "windows", "darwin"].contains(&r.platform().as_str()));
    assert_eq!(r.platform(), Platform::host());

    let r =
        WorkflowOutputRoot::for_local(Some("test-42"), Some(Platform::Linux), Some("test-bucket"))
            .unwrap();
    assert_eq!(
        (r.run_id(), r.platform(), r.bucket(), r.prefix().as_str()),
        ("test-42", Platform::Linux, "test-bucket", "test-42-linux")
    );
}

#[test]
fn invalid_roots() {
    let cases = [
        ("", "", "Run id `` is invalid: it is empty"),
        (
            "1/2",
            "",
            "Run id `1/2` is invalid: it contains a path separator",
        ),
        (
            "1 2",
            "",
            "Run id `1 2` is invalid: it contains whitespace or control characters",
        ),
        (
            "1",
            "Fork-TheRock",
            "External repository prefix `Fork-TheRock` is invalid: expected empty or `{owner}-{name}/`",
        ),
        (
            "1",
            "a/b/",
            "External repository prefix `a/b/` is invalid: expected empty or `{owner}-{name}/`",
        ),
        (
            "1",
            "/",
            "External repository prefix `/` is invalid: expected empty or `{owner}-{name}/`",
        ),
    ];
    for (run_id, external, message) in cases {
        let err = ExternalRepo::parse(external)
            .and_then(|e| WorkflowOutputRoot::new("b", e, run_id, Platform::Linux))
            .unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn platform_parsing() {
    assert_eq!("linux".parse::<Platform>().unwrap(), Platform::Linux);
    assert_eq!("windows".parse::<Platform>().unwrap(), Platform::Windows);
    assert_eq!("darwin".parse::<Platform>().unwrap(), Platform::Darwin);
    for bad in ["solaris", "", "Linux"] {
        let err = bad.parse::<Platform>().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("platform='{bad}' is invalid, expected one of [darwin, linux, windows]")
        );
    }
}

#[test]
fn repository_parsing() {
    let r = repo("ROCm/TheRock");
    assert_eq!(
        (r.owner(), r.name(), r.as_str()),
        ("ROCm", "TheRock", "ROCm/TheRock")
    );
    for bad in ["foo", "", "/x", "x/", "a/b/c", "a b/c", "a/..", "a/."] {
        let err = bad.parse::<GithubRepository>().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "GitHub repository `{bad}` is invalid: expected `owner/name` with both parts non-empty"
            )
        );
    }
}

const ARN: &str = "arn:aws:iam::692859939525:role";

// Spec §18.4: get_artifacts_bucket_config.
#[test]
fn artifacts_buckets() {
    let cases = [
        (
            "ci",
            "ROCm/TheRock",
            false,
            "therock-ci-artifacts",
            Some("therock-ci"),
        ),
        (
            "ci",
            "ROCm/TheRock",
            true,
            "therock-ci-artifacts-external",
            Some("therock-ci-external"),
        ),
        (
            "ci",
            "ROCm/rocm-libraries",
            false,
            "therock-ci-artifacts-external",
            Some("therock-ci-external"),
        ),
        (
            "dev",
            "ROCm/TheRock",
            false,
            "therock-dev-artifacts",
            Some("therock-dev"),
        ),
        (
            "nightly",
            "ROCm/rockrel",
            false,
            "therock-nightly-artifacts",
            Some("therock-nightly"),
        ),
        (
            "dev-bkc",
            "ROCm/TheRock",
            false,
            "therock-dev-artifacts",
            Some("therock-dev"),
        ),
        (
            "nightly-bkc",
            "ROCm/TheRock",
            false,
            "therock-nightly-artifacts",
            Some("therock-nightly"),
        ),
        (
            "prerelease",
            "ROCm/TheRock",
            true,
            "therock-prerelease-artifacts",
            Some("therock-prerelease"),
        ),
        // GitHub names are case-insensitive.
        (
            "ci",
            "rocm/therock",
            false,
            "therock-ci-artifacts",
            Some("therock-ci"),
        ),
    ];
    for (rt, repository, fork, bucket, role) in cases {
        let config = artifacts_bucket_config(rt.parse().unwrap(), &repo(repository), fork);
        assert_eq!(config.name(), bucket, "{rt} {repository} {fork}");
        assert_eq!(config.iam_role(), role);
        assert_eq!(config.region(), "us-east-2");
        assert_eq!(
            config.write_access_iam_role().unwrap(),
            role.map(|r| format!("{ARN}/{r}"))
        );
        let role_arn = role.map(|r| format!("{ARN}/{r}")).unwrap_or_default();
        assert_eq!(
            config.access_outputs().unwrap(),
            [
                ("bucket", bucket.to_owned()),
                ("iam_role", role_arn),
                ("aws_region", "us-east-2".to_owned()),
            ]
        );
    }
    for bad in ["bogus", "", "weekly", "CI"] {
        let err = bad.parse::<ReleaseType>().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "release_type='{bad}' is invalid, expected one of [ci, dev, dev-bkc, nightly, nightly-bkc, prerelease]"
            )
        );
    }
}

// Spec §18.4: get_release_bucket_config.
#[test]
fn release_buckets() {
    let cases = [
        ("dev", "tarball", "therock-dev-tarball", "therock-dev"),
        (
            "nightly",
            "python",
            "therock-nightly-python",
            "therock-nightly",
        ),
        (
            "prerelease",
            "packages",
            "therock-prerelease-packages",
            "therock-prerelease",
        ),
        ("dev-bkc", "python", "therock-dev-python", "therock-dev"),
        (
            "nightly-bkc",
            "python",
            "therock-nightly-python",
            "therock-nightly",
        ),
    ];
    for (rt, ty, bucket, role) in cases {
        let config = release_bucket_config(rt.parse().unwrap(), ty.parse().unwrap()).unwrap();
        assert_eq!(config.name(), bucket);
        assert_eq!(config.iam_role(), Some(role));
        assert_eq!(
            config.write_access_iam_role().unwrap(),
            Some(format!("{ARN}/{role}"))
        );
    }
    for rt in ["dev", "nightly", "prerelease"] {
        for ty in ReleaseBucketType::ALL {
            let config = release_bucket_config(rt.parse().unwrap(), *ty).unwrap();
            assert_eq!(config.name(), format!("therock-{rt}-{ty}"));
        }
    }
    let err = release_bucket_config(ReleaseType::Ci, ReleaseBucketType::Tarball).unwrap_err();
    assert_eq!(
        err.to_string(),
        "release_type='ci' is invalid, expected one of [dev, dev-bkc, nightly, nightly-bkc, prerelease]"
    );
    let err = "wheels".parse::<ReleaseBucketType>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "bucket_type='wheels' is invalid, expected one of [packages, python, tarball]"
    );
}

// Spec §18.4: streams, product buckets, index URLs.
#[test]
fn streams_products_and_index_urls() {
    let streams = [
        ("dev", "dev"),
        ("nightly", "nightly"),
        ("prerelease", "rc"),
        ("dev-bkc", "bkc"),
        ("nightly-bkc", "bkc"),
    ];
    for (rt, stream) in streams {
        let rt: ReleaseType = rt.parse().unwrap();
        assert_eq!(rt.release_stream().unwrap(), stream);
        assert_eq!(
            release_package_index_url(rt).unwrap(),
            format!("https://{stream}.repo.amd.com/rocm/whl-next/")
        );
        for product in ["core", "pytorch", "jax"] {
            let config = product_release_bucket_config(rt, product.parse().unwrap()).unwrap();
            assert_eq!(
                config.name(),
                format!("therock-repo-amd-{stream}-{product}")
            );
            assert_eq!(config.region(), "us-east-2");
            assert_eq!(config.iam_account(), "324352301041");
            assert_eq!(
                config.iam_role(),
                Some(format!("therock-repo-{stream}-{product}").as_str())
            );
            assert_eq!(
                config.write_access_iam_role().unwrap(),
                Some(format!(
                    "arn:aws:iam::324352301041:role/therock-repo-{stream}-{product}"
                ))
            );
        }
    }
    assert!(ReleaseType::Ci.release_stream().is_err());
    assert!(release_package_index_url(ReleaseType::Ci).is_err());
    assert!(product_release_bucket_config(ReleaseType::Ci, ReleaseProduct::Core).is_err());
    let err = "python".parse::<ReleaseProduct>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "product='python' is invalid, expected one of [core, jax, pytorch]"
    );
}

#[test]
fn bucket_table() {
    let all: Vec<_> = S3BucketConfig::all_known().collect();
    assert_eq!(all.len(), 18);
    for config in &all {
        let arn = config.write_access_iam_role().unwrap();
        if config.name().starts_with("therock-release-") {
            assert_eq!(arn, None);
        } else {
            let word = config.name().split('-').nth(1).unwrap();
            let expected_role = match config.name() {
                "therock-ci-artifacts-external" => "therock-ci-external".to_owned(),
                _ => format!("therock-{word}"),
            };
            assert_eq!(
                arn,
                Some(format!("{ARN}/{expected_role}")),
                "{}",
                config.name()
            );
        }
    }
    let broken = S3BucketConfig::new("b", "us-east-2", "", Some("r".into()));
    assert_eq!(
        broken.write_access_iam_role().unwrap_err().to_string(),
        "Bucket 'b' has iam_role='r' but no iam_account"
    );
    assert_eq!(
        S3BucketConfig::new("b", "r", "a", Some(String::new())).iam_role(),
        None
    );
}

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| map.get(k).cloned()
}

// Spec §18.4 workflow-run wrapper, with the API facts passed in as evidence.
#[test]
#[expect(clippy::too_many_lines, reason = "a table of vectors")]
fn workflow_run_bucket_selection() {
    struct Case<'a> {
        env: &'a [(&'a str, &'a str)],
        release_type: Option<&'a str>,
        fork: ForkEvidence<'a>,
        bucket: &'a str,
        role: Option<&'a str>,
        external: &'a str,
    }
    let no_fork = ForkEvidence::NOT_A_FORK;
    assert_eq!(
        ForkEvidence::FORK,
        ForkEvidence::Event {
            is_pr_from_fork: true
        }
    );
    let cases = [
        Case {
            env: &[],
            release_type: None,
            fork: no_fork,
            bucket: "therock-ci-artifacts",
            role: Some("therock-ci"),
            external: "",
        },
        Case {
            env: &[],
            release_type: Some("nightly"),
            fork: no_fork,
            bucket: "therock-nightly-artifacts",
            role: Some("therock-nightly"),
            external: "",
        },
        Case {
            env: &[("RELEASE_TYPE", "dev")],
            release_type: None,
            fork: no_fork,
            bucket: "therock-dev-artifacts",
            role: Some("therock-dev"),
            external: "",
        },
        Case {
            env: &[("RELEASE_TYPE", "dev")],
            release_type: Some("nightly"),
            fork: no_fork,
            bucket: "therock-nightly-artifacts",
            role: Some("therock-nightly"),
            external: "",
        },
        Case {
            env: &[],
            release_type: None,
            fork: ForkEvidence::WorkflowRun {
                head_repository: Some("ROCm/TheRock"),
            },
            bucket: "therock-ci-artifacts",
            role: Some("therock-ci"),
            external: "",
        },
        Case {
            env: &[],
            release_type: None,
            fork: ForkEvidence::WorkflowRun {
                head_repository: Some("SomeUser/TheRock"),
            },
            bucket: "therock-ci-artifacts-external",
            role: None,
            external: "ROCm-TheRock/",
        },
        // A deleted fork has no head repository: it is a fork.
        Case {
            env: &[],
            release_type: None,
            fork: ForkEvidence::WorkflowRun {
                head_repository: None,
            },
            bucket: "therock-ci-artifacts-external",
            role: None,
            external: "ROCm-TheRock/",
        },
        // Case differences are not a fork.
        Case {
            env: &[],
            release_type: None,
            fork: ForkEvidence::WorkflowRun {
                head_repository: Some("rocm/therock"),
            },
            bucket: "therock-ci-artifacts",
            role: Some("therock-ci"),
            external: "",
        },
        Case {
            env: &[("GITHUB_REPOSITORY", "ROCm/rocm-libraries")],
            release_type: None,
            fork: ForkEvidence::WorkflowRun {
                head_repository: Some("ROCm/rocm-libraries"),
            },
            bucket: "therock-ci-artifacts-external",
            role: Some("therock-ci-external"),
            external: "ROCm-rocm-libraries/",
        },
        Case {
            env: &[],
            release_type: None,
            fork: ForkEvidence::Event {
                is_pr_from_fork: true,
            },
            bucket: "therock-ci-artifacts-external",
            role: None,
            external: "ROCm-TheRock/",
        },
        // Forks of non-ci release types lose the role too, and keep their bucket.
        Case {
            env: &[("RELEASE_TYPE", "nightly")],
            release_type: None,
            fork: ForkEvidence::Event {
                is_pr_from_fork: true,
            },
            bucket: "therock-nightly-artifacts",
            role: None,
            external: "",
        },
    ];
    for (i, c) in cases.iter().enumerate() {
        let ctx = RunContext::from_lookup(env(c.env))
            .unwrap()
            .with_overrides(None, c.release_type.map(|r| r.parse().unwrap()));
        let selection = ctx.select_bucket(c.fork);
        assert_eq!(selection.config().name(), c.bucket, "case {i}");
        assert_eq!(selection.config().iam_role(), c.role, "case {i}");
        assert_eq!(
            selection.config().write_access_iam_role().unwrap(),
            c.role.map(|r| format!("{ARN}/{r}")),
            "case {i}"
        );
        assert_eq!(selection.external_repo().as_str(), c.external, "case {i}");
        let root =
            WorkflowOutputRoot::for_workflow_run("12345", Platform::Linux, &selection).unwrap();
        assert_eq!(root.prefix(), format!("{}12345-linux", c.external));
        assert_eq!(root.bucket(), c.bucket);
    }
}

#[test]
fn env_errors() {
    let err = RunContext::from_lookup(env(&[("GITHUB_REPOSITORY", "foo")])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid value in environment variable `GITHUB_REPOSITORY`"
    );
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "GitHub repository `foo` is invalid: expected `owner/name` with both parts non-empty"
    );
    let err = RunContext::from_lookup(env(&[("RELEASE_TYPE", "weekly")])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid value in environment variable `RELEASE_TYPE`"
    );
    assert!(
        std::error::Error::source(&err)
            .unwrap()
            .to_string()
            .contains("'weekly'")
    );
    assert!(RunContext::from_lookup(env(&[("RELEASE_TYPE", "")])).is_err());
    // An empty repository means the default.
    let ctx = RunContext::from_lookup(env(&[("GITHUB_REPOSITORY", "")])).unwrap();
    assert_eq!(ctx.repository.as_str(), "ROCm/TheRock");
    assert_eq!(ctx.release_type, ReleaseType::Ci);
}

// Release-publishing spec §5.6 U1–U6: where the test-report uploader puts a run's reports
// (`logs/{subfolder}` or the legacy `--log-destination` below the run's root) and the index
// URL of its summary line.
#[test]
fn test_report_keys() {
    struct Case<'a> {
        env: &'a [(&'a str, &'a str)],
        fork: bool,
        run_id: &'a str,
        subfolder: &'a str,
        destination: Option<&'a str>,
        index: &'a str,
        dir: &'a str,
        url: &'a str,
    }
    let cases = [
        Case {
            env: &[],
            fork: false,
            run_id: "12345",
            subfolder: "manifest-diff",
            destination: None,
            index: "index.html",
            dir: "s3://therock-ci-artifacts/12345-linux/logs/manifest-diff",
            url: "https://therock-ci-artifacts.s3.amazonaws.com/12345-linux/logs/manifest-diff/index.html",
        },
        Case {
            env: &[("GITHUB_REPOSITORY", "ROCm/rocm-libraries")],
            fork: false,
            run_id: "999",
            subfolder: "manifest-diff",
            destination: None,
            index: "index.html",
            dir: "s3://therock-ci-artifacts-external/ROCm-rocm-libraries/999-linux/logs/manifest-diff",
            url: "https://therock-ci-artifacts-external.s3.amazonaws.com/ROCm-rocm-libraries/999-linux/logs/manifest-diff/index.html",
        },
        Case {
            env: &[("GITHUB_REPOSITORY", "ROCm/TheRock")],
            fork: true,
            run_id: "5",
            subfolder: "manifest-diff",
            destination: None,
            index: "index.html",
            dir: "s3://therock-ci-artifacts-external/ROCm-TheRock/5-linux/logs/manifest-diff",
            url: "https://therock-ci-artifacts-external.s3.amazonaws.com/ROCm-TheRock/5-linux/logs/manifest-diff/index.html",
        },
        Case {
            env: &[("RELEASE_TYPE", "nightly")],
            fork: false,
            run_id: "42",
            subfolder: "gfx94X-dcgpu",
            destination: None,
            index: "Index.HTML",
            dir: "s3://therock-nightly-artifacts/42-linux/logs/gfx94X-dcgpu",
            url: "https://therock-nightly-artifacts.s3.amazonaws.com/42-linux/logs/gfx94X-dcgpu/Index.HTML",
        },
        // The legacy destination: the summary link follows it (the reference's kept
        // `--subfolder` and pointed at a key it never wrote).
        Case {
            env: &[],
            fork: false,
            run_id: "12345",
            subfolder: "gfx950-dcgpu",
            destination: Some("/logs/gfx950-dcgpu/rccl/"),
            index: "index_rccl_test_report.html",
            dir: "s3://therock-ci-artifacts/12345-linux/logs/gfx950-dcgpu/rccl",
            url: "https://therock-ci-artifacts.s3.amazonaws.com/12345-linux/logs/gfx950-dcgpu/rccl/index_rccl_test_report.html",
        },
        Case {
            env: &[],
            fork: false,
            run_id: "7",
            subfolder: "s",
            destination: Some("logs/s"),
            index: "index.html",
            dir: "s3://therock-ci-artifacts/7-linux/logs/s",
            url: "https://therock-ci-artifacts.s3.amazonaws.com/7-linux/logs/s/index.html",
        },
    ];
    for case in cases {
        let selection = RunContext::from_lookup(env(case.env))
            .unwrap()
            .select_bucket(ForkEvidence::Event {
                is_pr_from_fork: case.fork,
            });
        let root =
            WorkflowOutputRoot::for_workflow_run(case.run_id, Platform::Linux, &selection).unwrap();
        let dir = match case.destination {
            Some(d) => root.location(d),
            None => root.log_dir(case.subfolder),
        };
        assert_eq!(dir.s3_uri(), case.dir, "{}", case.run_id);
        assert_eq!(dir.join(case.index).https_url(), case.url);
        assert_eq!(
            dir.join("sub/n.html").s3_uri(),
            format!("{}/sub/n.html", case.dir)
        );
    }
    assert_eq!(r99().location("").relative_path(), "99999-linux");
    assert_eq!(r99().location("//a/b//").relative_path(), "99999-linux/a/b");
}

#[test]
fn layout_names_every_location_once() {
    let entries = r99().layout("gfx94X-dcgpu", None);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), 21);
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    assert_eq!(names[0], "root");
    assert!(!names.contains(&"log_stage_dir"));
    let find = |entries: &[(String, StorageLocation)], name: &str| {
        entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| l.relative_path().to_owned())
    };
    assert_eq!(
        find(&entries, "ninja_logs").as_deref(),
        Some("99999-linux/logs/gfx94X-dcgpu/ninja_logs.tar.gz")
    );
    assert_eq!(
        find(&entries, "native_packages_rpm_log_index").as_deref(),
        Some("99999-linux/logs/packaging/rpm/index.html")
    );
    let staged = r99().layout("generic", Some(("math-libs", "gfx1151")));
    assert_eq!(staged.len(), 22);
    assert_eq!(
        staged.last().map(|(n, _)| n.as_str()),
        Some("log_stage_dir")
    );
    assert_eq!(
        find(&staged, "log_stage_dir"),
        Some(
            r99()
                .log_stage_dir("math-libs", "gfx1151")
                .relative_path()
                .to_owned()
        )
    );
}

#[test]
fn external_repo_prefixes_are_typed() {
    let repo: GithubRepository = "Fork/TheRock".parse().unwrap();
    let external = ExternalRepo::of(&repo);
    assert_eq!(external.as_str(), "Fork-TheRock/");
    assert_eq!(ExternalRepo::parse("Fork-TheRock/").unwrap(), external);
    assert_eq!(ExternalRepo::NONE, ExternalRepo::default());
    let r = WorkflowOutputRoot::new(
        "therock-ci-artifacts-external",
        external,
        "7",
        Platform::Linux,
    )
    .unwrap();
    assert_eq!(
        r.root().s3_uri(),
        "s3://therock-ci-artifacts-external/Fork-TheRock/7-linux"
    );
    assert!(ExternalRepo::parse("Fork-TheRock").is_err());
}
