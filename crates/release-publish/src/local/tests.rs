use super::*;

fn release(rt: &str, product: &str, layout: PackageLayout) -> LocalRelease {
    LocalRelease {
        release_type: rt.parse().unwrap(),
        product: product.parse().unwrap(),
        layout,
    }
}

fn touch(dir: &Path, rel: &str) {
    let path = dir.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, rel).unwrap();
}

fn uris(plan: &UploadPlan) -> Vec<String> {
    plan.files.iter().map(|f| f.destination.s3_uri()).collect()
}

// Spec §2.5 T1: top level only, packages only, product-local keys.
#[test]
fn structured_plan_takes_the_top_level_packages() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "torch-2.10.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
        "amd_torch_device_gfx942-2.10.0+rocm7.13.0-py3-none-linux_x86_64.whl",
        "torchvision-0.25.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
        "index.html",
        "sub/torchaudio-2.10.0-cp312-cp312-linux_x86_64.whl",
    ] {
        touch(dir.path(), f);
    }
    let r = release(
        "dev",
        "pytorch",
        PackageLayout::Structured(PythonIndex::WhlNext),
    );
    let plan = r.plan(dir.path()).unwrap();
    assert_eq!(
        uris(&plan),
        [
            "s3://therock-repo-amd-dev-pytorch/v5/rocm/pytorch/whl-next/amd-torch-device-gfx942/amd_torch_device_gfx942-2.10.0+rocm7.13.0-py3-none-linux_x86_64.whl",
            "s3://therock-repo-amd-dev-pytorch/v5/rocm/pytorch/whl-next/torch/torch-2.10.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
            "s3://therock-repo-amd-dev-pytorch/v5/rocm/pytorch/whl-next/torchvision/torchvision-0.25.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
        ]
    );
    assert_eq!(
        r.package_index_url().unwrap(),
        "https://dev.repo.amd.com/rocm/whl-next/"
    );
    let mut text = Vec::new();
    plan.print_dry_run(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.starts_with(&format!(
        "[DRY RUN] {} -> s3://therock-repo-amd-dev-pytorch/v5/rocm/pytorch/whl-next/amd-torch-device-gfx942/",
        dir.path()
            .join("amd_torch_device_gfx942-2.10.0+rocm7.13.0-py3-none-linux_x86_64.whl")
            .display()
    )));
    assert!(text.ends_with("(application/zip)\n"), "{text}");
}

// Spec §2.5 T2 with the index URL following `--python-index`, and §3.4 J3, J5.
#[test]
fn structured_plan_with_the_whl_index_and_sdists() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "triton-3.5.0-cp312-cp312-linux_x86_64.whl",
        "apex-1.0.0.tar.gz",
        "Apex_Extra-0.1.zip",
    ] {
        touch(dir.path(), f);
    }
    let r = release(
        "nightly-bkc",
        "pytorch",
        PackageLayout::Structured(PythonIndex::Whl),
    );
    let plan = r.plan(dir.path()).unwrap();
    assert_eq!(
        uris(&plan),
        [
            "s3://therock-repo-amd-bkc-pytorch/v5/rocm/pytorch/whl/apex-extra/Apex_Extra-0.1.zip",
            "s3://therock-repo-amd-bkc-pytorch/v5/rocm/pytorch/whl/apex/apex-1.0.0.tar.gz",
            "s3://therock-repo-amd-bkc-pytorch/v5/rocm/pytorch/whl/triton/triton-3.5.0-cp312-cp312-linux_x86_64.whl",
        ]
    );
    assert_eq!(
        r.package_index_url().unwrap(),
        "https://bkc.repo.amd.com/rocm/whl/"
    );

    let dir = tempfile::tempdir().unwrap();
    touch(
        dir.path(),
        "jax_rocm7_plugin-0.8.0+rocm7.13.0rc2-cp311-cp311-manylinux_2_28_x86_64.whl",
    );
    let r = release(
        "prerelease",
        "jax",
        PackageLayout::Structured(PythonIndex::Whl),
    );
    assert_eq!(
        uris(&r.plan(dir.path()).unwrap()),
        [
            "s3://therock-repo-amd-rc-jax/v5/rocm/jax/whl/jax-rocm7-plugin/jax_rocm7_plugin-0.8.0+rocm7.13.0rc2-cp311-cp311-manylinux_2_28_x86_64.whl"
        ]
    );
}

// Spec §2.5 T3 and §3.4 J2: the legacy layout, recursive, wheels only.
#[test]
fn legacy_plan_is_recursive_and_takes_wheels_only() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "torch-2.10.0-cp312-cp312-win_amd64.whl",
        "sub/x-1.0-py3-none-any.whl",
        "notes.txt",
        "apex-1.0.tar.gz",
    ] {
        touch(dir.path(), f);
    }
    let r = release("prerelease", "pytorch", PackageLayout::Legacy);
    assert_eq!(
        uris(&r.plan(dir.path()).unwrap()),
        [
            "s3://therock-prerelease-python/v4/whl/sub/x-1.0-py3-none-any.whl",
            "s3://therock-prerelease-python/v4/whl/torch-2.10.0-cp312-cp312-win_amd64.whl",
        ]
    );
    assert_eq!(
        r.package_index_url().unwrap(),
        "https://rocm.prereleases.amd.com/whl-multi-arch/"
    );
}

// Spec §2.5 T4–T6, §3.4 J4, J6, J7: nothing planned, nothing written.
#[test]
fn refusals_before_anything_is_written() {
    let structured = release(
        "dev",
        "jax",
        PackageLayout::Structured(PythonIndex::WhlNext),
    );
    let dir = tempfile::tempdir().unwrap();
    touch(dir.path(), "jax-source.tar.gz");
    touch(dir.path(), "jax-0.8.0-py3-none-any.whl");
    let err = structured.plan(dir.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot parse sdist filename 'jax-source.tar.gz': Invalid sdist filename (invalid version): 'jax-source.tar.gz'"
    );
    assert!(!err.is_usage());

    let dir = tempfile::tempdir().unwrap();
    touch(dir.path(), "sub/torch-2.10.0-cp312-cp312-linux_x86_64.whl");
    let err = structured.plan(dir.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("No wheels found at {}", dir.path().display())
    );

    let dir = tempfile::tempdir().unwrap();
    touch(dir.path(), "notes.txt");
    let legacy = release("nightly", "jax", PackageLayout::Legacy);
    assert!(matches!(legacy.plan(dir.path()), Err(Error::NoPackages(_))));

    let err = structured.plan(Path::new("/nonexistent")).unwrap_err();
    assert_eq!(err.to_string(), "Source directory not found: /nonexistent");

    let ci = release("ci", "jax", PackageLayout::Structured(PythonIndex::WhlNext));
    let dir = tempfile::tempdir().unwrap();
    touch(dir.path(), "jax-0.8.0-py3-none-any.whl");
    assert!(ci.plan(dir.path()).unwrap_err().is_usage());
    assert!(ci.package_index_url().unwrap_err().is_usage());
}

#[cfg(unix)]
#[test]
fn structured_plan_follows_symlinks_to_files() {
    let dir = tempfile::tempdir().unwrap();
    touch(dir.path(), "store/jax-0.8.0-py3-none-any.whl");
    fs_err::os::unix::fs::symlink(
        dir.path().join("store/jax-0.8.0-py3-none-any.whl"),
        dir.path().join("jax-0.8.0-py3-none-any.whl"),
    )
    .unwrap();
    let r = release(
        "dev",
        "jax",
        PackageLayout::Structured(PythonIndex::WhlNext),
    );
    assert_eq!(
        uris(&r.plan(dir.path()).unwrap()),
        ["s3://therock-repo-amd-dev-jax/v5/rocm/jax/whl-next/jax/jax-0.8.0-py3-none-any.whl"]
    );
    let legacy = release("dev", "jax", PackageLayout::Legacy);
    assert_eq!(
        uris(&legacy.plan(dir.path()).unwrap()),
        ["s3://therock-dev-python/v4/whl/store/jax-0.8.0-py3-none-any.whl"]
    );
}

// The dry-run transcript: announcement, dry-run lines, count, and the output.
#[test]
fn dry_run_transcript() {
    let dir = tempfile::tempdir().unwrap();
    touch(
        dir.path(),
        "torch-2.10.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
    );
    let rel = release(
        "nightly",
        "pytorch",
        PackageLayout::Structured(PythonIndex::WhlNext),
    );
    let (mut log, mut out, mut warn) = (Vec::new(), Vec::new(), Vec::new());
    let publication = rel
        .start(dir.path(), ("PyTorch wheel", "PyTorch wheels"), &mut log)
        .unwrap();
    assert_eq!(publication.plan().files.len(), 1);
    let writers = Writers {
        log: &mut log,
        out: &mut out,
        warn: &mut warn,
    };
    let reporter = std::sync::Arc::new(storage_backend::NoReporter);
    futures::executor::block_on(publication.finish(true, 1, reporter, &|_| None, writers)).unwrap();
    let [log, out, warn] = [log, out, warn].map(|v| String::from_utf8(v).unwrap());
    let uri = &uris(publication.plan())[0];
    let source = dir
        .path()
        .join("torch-2.10.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl");
    assert_eq!(
        log,
        format!(
            "PyTorch wheel: {} -> {uri}\nUploaded 1 wheel files (structured)\n",
            source.display()
        )
    );
    let index = rel.package_index_url().unwrap();
    assert!(out.starts_with(&format!("[DRY RUN] {} -> {uri} (", source.display())));
    assert!(out.ends_with(&format!(
        "Setting github output:\n{{\n  \"package_index_url\": \"{index}\"\n}}\n"
    )));
    assert_eq!(
        warn,
        format!("{}\n", github_actions::OUTPUTS_NOT_SET_WARNING)
    );

    // The legacy layout announces the directory.
    let rel = release("nightly", "pytorch", PackageLayout::Legacy);
    let mut log = Vec::new();
    rel.start(dir.path(), ("PyTorch wheel", "PyTorch wheels"), &mut log)
        .unwrap();
    let bucket = rel.bucket().unwrap();
    assert_eq!(
        String::from_utf8(log).unwrap(),
        format!(
            "PyTorch wheels: {} -> s3://{}/v4/whl\n",
            dir.path().display(),
            bucket.name()
        )
    );
}
