//! `publish_pytorch_to_release_bucket` and `publish_jax_to_release_bucket` on the in-process S3
//! server: the specification's vectors (§2.5 T1–T9, §3.4 J1–J7), reruns, conflicts between
//! publishers and dry runs without credentials.

use crate::common::Launch as _;
use std::path::Path;
use std::process::{Command, Output};

use rock_ci_test_support::{S3Server, assert_fails_with, files_under, sha256_hex};

use crate::common::{assert_ok, aws_env};

const PYTORCH: &str = "publish_pytorch_to_release_bucket";
const JAX: &str = "publish_jax_to_release_bucket";

/// A run's result: the process output and the `GITHUB_OUTPUT` file's content.
struct Run {
    out: Output,
    outputs: String,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
}

/// Runs `tool` with `args` against `server` (none: no AWS settings at all), `GITHUB_OUTPUT`
/// set to a fresh file unless `outputs` is false.
fn run(tool: &str, args: &[&str], server: Option<&S3Server>, outputs: bool) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("outputs");
    let mut cmd = Command::new(crate::common::tool(tool));
    cmd.args(args).env_clear();
    if let Some(server) = server {
        cmd.envs(aws_env(server));
    }
    if outputs {
        cmd.env("GITHUB_OUTPUT", &file);
    }
    let out = cmd.run_output().unwrap();
    Run {
        out,
        outputs: fs_err::read_to_string(&file).unwrap_or_default(),
    }
}

/// Writes each `(relative path, contents)` below `dir`.
fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = dir.join(rel);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }
}

/// The keys stored in `bucket`.
fn stored(server: &S3Server, bucket: &str) -> Vec<String> {
    let dir = server.root().join(bucket);
    if dir.is_dir() {
        files_under(&dir)
    } else {
        Vec::new()
    }
}

fn source_arg(dir: &Path) -> String {
    format!("--source-dir={}", dir.display())
}

const T1_FILES: [&str; 3] = [
    "torch-2.10.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
    "amd_torch_device_gfx942-2.10.0+rocm7.13.0-py3-none-linux_x86_64.whl",
    "torchvision-0.25.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
];

fn t1_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<(&str, &str)> = T1_FILES.iter().map(|f| (*f, *f)).collect();
    files.push(("index.html", "<html>"));
    files.push((
        "sub/torchaudio-2.10.0-cp312-cp312-linux_x86_64.whl",
        "nested",
    ));
    write_files(dir.path(), &files);
    dir
}

const T1_KEYS: [&str; 3] = [
    "v5/rocm/pytorch/whl-next/amd-torch-device-gfx942/amd_torch_device_gfx942-2.10.0+rocm7.13.0-py3-none-linux_x86_64.whl",
    "v5/rocm/pytorch/whl-next/torch/torch-2.10.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
    "v5/rocm/pytorch/whl-next/torchvision/torchvision-0.25.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl",
];

// T1, then a rerun (everything unchanged, exit 0), then T9 (no GITHUB_OUTPUT).
#[test]
fn pytorch_structured_upload_rerun_and_no_outputs_file() {
    let server = S3Server::start();
    let bucket = "therock-repo-amd-dev-pytorch";
    server.create_bucket(bucket);
    let dir = t1_dir();
    let src = source_arg(dir.path());
    let args = [src.as_str(), "--release-type", "dev", "--structured"];
    let r = run(PYTORCH, &args, Some(&server), true);
    assert_ok(&r.out);
    assert_eq!(stored(&server, bucket), T1_KEYS);
    for key in T1_KEYS {
        assert_eq!(
            server.content_type(bucket, key).as_deref(),
            Some("application/zip"),
            "{key}"
        );
    }
    let name = T1_FILES[1];
    assert_eq!(
        fs_err::read_to_string(server.root().join(bucket).join(T1_KEYS[0])).unwrap(),
        name
    );
    assert_eq!(
        r.outputs,
        "package_index_url=https://dev.repo.amd.com/rocm/whl-next/\n"
    );
    assert!(
        r.stdout()
            .ends_with("OUTPUT package_index_url=https://dev.repo.amd.com/rocm/whl-next/\n"),
        "{}",
        r.stdout()
    );
    let stderr = r.stderr();
    assert!(
        stderr.contains(&format!(
            "PyTorch wheel: {} -> s3://{bucket}/{}\n",
            dir.path().join(name).display(),
            T1_KEYS[0]
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("Uploaded 3 wheel files (structured)\n"),
        "{stderr}"
    );

    // A rerun of the same bytes changes nothing and succeeds.
    let r = run(PYTORCH, &args, Some(&server), false);
    assert_ok(&r.out);
    assert!(
        r.stderr().contains(
            "Uploaded 0 wheel files (structured)\n3 more already published with the same content"
        ),
        "{}",
        r.stderr()
    );
    assert!(
        r.stderr()
            .contains("Warning: GITHUB_OUTPUT env var not set"),
        "{}",
        r.stderr()
    );
    assert!(!r.stdout().contains("OUTPUT "), "{}", r.stdout());
    assert_eq!(stored(&server, bucket), T1_KEYS);
}

// T2: the `whl` index, sdists with their content types; the index URL follows the index.
#[test]
fn pytorch_whl_index_with_sdists() {
    let server = S3Server::start();
    let bucket = "therock-repo-amd-bkc-pytorch";
    server.create_bucket(bucket);
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            ("triton-3.5.0-cp312-cp312-linux_x86_64.whl", "t"),
            ("apex-1.0.0.tar.gz", "a"),
            ("Apex_Extra-0.1.zip", "e"),
        ],
    );
    let src = source_arg(dir.path());
    let r = run(
        PYTORCH,
        &[
            &src,
            "--release-type=nightly-bkc",
            "--structured",
            "--python-index",
            "whl",
        ],
        Some(&server),
        true,
    );
    assert_ok(&r.out);
    let expected = [
        (
            "v5/rocm/pytorch/whl/apex-extra/Apex_Extra-0.1.zip",
            "application/zip",
        ),
        (
            "v5/rocm/pytorch/whl/apex/apex-1.0.0.tar.gz",
            "application/gzip",
        ),
        (
            "v5/rocm/pytorch/whl/triton/triton-3.5.0-cp312-cp312-linux_x86_64.whl",
            "application/zip",
        ),
    ];
    assert_eq!(stored(&server, bucket), expected.map(|(k, _)| k.to_owned()));
    for (key, ct) in expected {
        assert_eq!(
            server.content_type(bucket, key).as_deref(),
            Some(ct),
            "{key}"
        );
    }
    assert_eq!(
        r.outputs,
        "package_index_url=https://bkc.repo.amd.com/rocm/whl/\n"
    );
}

// T3 and J2: the legacy layout, recursive, wheels only, the legacy index URL.
#[test]
fn legacy_layout_for_both_products() {
    let server = S3Server::start();
    server.create_bucket("therock-prerelease-python");
    server.create_bucket("therock-nightly-python");
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            ("torch-2.10.0-cp312-cp312-win_amd64.whl", "t"),
            ("sub/x-1.0-py3-none-any.whl", "x"),
            ("notes.txt", "n"),
        ],
    );
    let src = source_arg(dir.path());
    let r = run(
        PYTORCH,
        &[&src, "--release-type", "prerelease"],
        Some(&server),
        true,
    );
    assert_ok(&r.out);
    assert_eq!(
        stored(&server, "therock-prerelease-python"),
        [
            "v4/whl/sub/x-1.0-py3-none-any.whl",
            "v4/whl/torch-2.10.0-cp312-cp312-win_amd64.whl"
        ]
    );
    assert_eq!(
        r.outputs,
        "package_index_url=https://rocm.prereleases.amd.com/whl-multi-arch/\n"
    );
    assert!(
        r.stderr().contains(&format!(
            "PyTorch wheels: {} -> s3://therock-prerelease-python/v4/whl\n",
            dir.path().display()
        )),
        "{}",
        r.stderr()
    );
    assert!(
        r.stderr().contains("Uploaded 2 wheel files\n"),
        "{}",
        r.stderr()
    );

    let dir = tempfile::tempdir().unwrap();
    let wheel = "jaxlib-0.8.0-cp312-cp312-manylinux_2_27_x86_64.whl";
    write_files(dir.path(), &[(wheel, "j")]);
    let src = source_arg(dir.path());
    let r = run(
        JAX,
        &[&src, "--release-type", "nightly"],
        Some(&server),
        true,
    );
    assert_ok(&r.out);
    assert_eq!(
        stored(&server, "therock-nightly-python"),
        [format!("v4/whl/{wheel}")]
    );
    assert_eq!(
        r.outputs,
        "package_index_url=https://rocm.nightlies.amd.com/whl-multi-arch/\n"
    );
}

// J1, J3, J5.
#[test]
fn jax_structured_vectors() {
    let server = S3Server::start();
    for bucket in [
        "therock-repo-amd-dev-jax",
        "therock-repo-amd-rc-jax",
        "therock-repo-amd-bkc-jax",
    ] {
        server.create_bucket(bucket);
    }
    let dir = tempfile::tempdir().unwrap();
    let j1 = [
        "jax-0.8.0-py3-none-any.whl",
        "jaxlib-0.8.0-cp312-cp312-manylinux_2_27_x86_64.whl",
        "jax_rocm7_plugin-0.8.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "jax_rocm7_pjrt-0.8.0-py3-none-manylinux_2_28_x86_64.whl",
    ];
    write_files(dir.path(), &j1.map(|f| (f, f)));
    let src = source_arg(dir.path());
    let r = run(
        JAX,
        &[&src, "--release-type", "dev", "--structured"],
        Some(&server),
        true,
    );
    assert_ok(&r.out);
    assert_eq!(
        stored(&server, "therock-repo-amd-dev-jax"),
        [
            "v5/rocm/jax/whl-next/jax-rocm7-pjrt/jax_rocm7_pjrt-0.8.0-py3-none-manylinux_2_28_x86_64.whl",
            "v5/rocm/jax/whl-next/jax-rocm7-plugin/jax_rocm7_plugin-0.8.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            "v5/rocm/jax/whl-next/jax/jax-0.8.0-py3-none-any.whl",
            "v5/rocm/jax/whl-next/jaxlib/jaxlib-0.8.0-cp312-cp312-manylinux_2_27_x86_64.whl",
        ]
    );
    assert_eq!(
        r.outputs,
        "package_index_url=https://dev.repo.amd.com/rocm/whl-next/\n"
    );
    assert!(r.stderr().contains("JAX wheel: "), "{}", r.stderr());
    assert!(r.stderr().contains("Uploaded 4 wheel files (structured)\n"));

    let dir = tempfile::tempdir().unwrap();
    let j3 = "jax_rocm7_plugin-0.8.0+rocm7.13.0rc2-cp311-cp311-manylinux_2_28_x86_64.whl";
    write_files(dir.path(), &[(j3, j3)]);
    let src = source_arg(dir.path());
    let r = run(
        JAX,
        &[
            &src,
            "--release-type",
            "prerelease",
            "--structured",
            "--python-index=whl",
        ],
        Some(&server),
        true,
    );
    assert_ok(&r.out);
    assert_eq!(
        stored(&server, "therock-repo-amd-rc-jax"),
        [format!("v5/rocm/jax/whl/jax-rocm7-plugin/{j3}")]
    );
    assert_eq!(
        r.outputs,
        "package_index_url=https://rc.repo.amd.com/rocm/whl/\n"
    );

    let dir = tempfile::tempdir().unwrap();
    let j5 = "jaxlib-0.8.0-cp312-cp312-manylinux_2_27_x86_64.whl";
    write_files(dir.path(), &[(j5, j5)]);
    let src = source_arg(dir.path());
    let r = run(
        JAX,
        &[&src, "--release=dev-bkc", "--structured"],
        Some(&server),
        true,
    );
    assert_ok(&r.out);
    assert_eq!(
        stored(&server, "therock-repo-amd-bkc-jax"),
        [format!("v5/rocm/jax/whl-next/jaxlib/{j5}")]
    );
    assert_eq!(
        r.outputs,
        "package_index_url=https://bkc.repo.amd.com/rocm/whl-next/\n"
    );
}

// T4, T5, T6, T7: refused before anything is written, no output set.
#[test]
fn refusals_write_nothing() {
    let server = S3Server::start();
    server.create_bucket("therock-repo-amd-dev-pytorch");
    server.create_bucket("therock-repo-amd-dev-jax");
    server.create_bucket("therock-nightly-python");

    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            (
                "amd-torch-device-gfx942-2.10.0-py3-none-linux_x86_64.whl",
                "x",
            ),
            ("torch-2.10.0-cp312-cp312-linux_x86_64.whl", "t"),
        ],
    );
    let src = source_arg(dir.path());
    let r = run(
        PYTORCH,
        &[&src, "--release-type", "dev", "--structured"],
        Some(&server),
        true,
    );
    assert_fails_with(
        &r.out,
        1,
        "Cannot parse wheel filename 'amd-torch-device-gfx942-2.10.0-py3-none-linux_x86_64.whl'",
        "T4",
    );
    assert_eq!(r.outputs, "");
    assert!(stored(&server, "therock-repo-amd-dev-pytorch").is_empty());

    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[("sub/torch-2.10.0-cp312-cp312-linux_x86_64.whl", "t")],
    );
    let src = source_arg(dir.path());
    let r = run(
        PYTORCH,
        &[&src, "--release-type", "dev", "--structured"],
        Some(&server),
        true,
    );
    assert_fails_with(
        &r.out,
        1,
        &format!("No wheels found at {}", dir.path().display()),
        "T5",
    );
    assert_eq!(r.outputs, "");

    let r = run(
        PYTORCH,
        &["--source-dir", "/nonexistent", "--release-type", "dev"],
        Some(&server),
        true,
    );
    assert_fails_with(&r.out, 1, "Source directory not found: /nonexistent", "T6");
    assert_eq!(r.outputs, "");

    for bad in ["release", "ci"] {
        let r = run(
            PYTORCH,
            &["--source-dir", "/tmp", "--release-type", bad],
            Some(&server),
            true,
        );
        assert_fails_with(&r.out, 2, &format!("'{bad}'"), "T7");
        assert_eq!(r.outputs, "");
    }
    let r = run(
        JAX,
        &[
            "--source-dir",
            "/tmp",
            "--release-type",
            "dev",
            "--python-index",
            "simple",
        ],
        Some(&server),
        true,
    );
    assert_fails_with(&r.out, 2, "'simple'", "bad index");
}

// J4, J6, J7.
#[test]
fn jax_refusals_write_nothing() {
    let server = S3Server::start();
    server.create_bucket("therock-repo-amd-dev-jax");
    server.create_bucket("therock-nightly-python");
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            ("jax-source.tar.gz", "s"),
            ("jax-0.8.0-py3-none-any.whl", "j"),
        ],
    );
    let src = source_arg(dir.path());
    let r = run(
        JAX,
        &[&src, "--release-type", "dev", "--structured"],
        Some(&server),
        true,
    );
    assert_fails_with(
        &r.out,
        1,
        "Cannot parse sdist filename 'jax-source.tar.gz': Invalid sdist filename (invalid version): 'jax-source.tar.gz'",
        "J4",
    );
    assert!(stored(&server, "therock-repo-amd-dev-jax").is_empty());

    let dir = tempfile::tempdir().unwrap();
    let src = source_arg(dir.path());
    let r = run(
        JAX,
        &[&src, "--release-type", "dev", "--structured"],
        Some(&server),
        true,
    );
    assert_fails_with(&r.out, 1, "No wheels found at", "J6");

    write_files(dir.path(), &[("notes.txt", "n")]);
    let r = run(
        JAX,
        &[&src, "--release-type", "nightly"],
        Some(&server),
        true,
    );
    assert_fails_with(&r.out, 1, "No wheels found at", "J7");
    assert_eq!(r.outputs, "");
    assert!(stored(&server, "therock-nightly-python").is_empty());
}

// T8: a dry run prints the plan and sets the output with no AWS settings at all.
#[test]
fn dry_run_needs_no_credentials() {
    let dir = t1_dir();
    let src = source_arg(dir.path());
    let r = run(
        PYTORCH,
        &[&src, "--release-type", "dev", "--structured", "--dry-run"],
        None,
        true,
    );
    assert_ok(&r.out);
    let stdout = r.stdout();
    for (file, key) in [
        (T1_FILES[1], T1_KEYS[0]),
        (T1_FILES[0], T1_KEYS[1]),
        (T1_FILES[2], T1_KEYS[2]),
    ] {
        assert!(
            stdout.contains(&format!(
                "[DRY RUN] {} -> s3://therock-repo-amd-dev-pytorch/{key} (application/zip)\n",
                dir.path().join(file).display()
            )),
            "{stdout}"
        );
    }
    assert_eq!(
        r.outputs,
        "package_index_url=https://dev.repo.amd.com/rocm/whl-next/\n"
    );
}

// Two publishers of one product: the same bytes under one key are fine (also at the same
// time); other bytes under a key already published are refused, naming both, and the
// published object stays as it was.
#[test]
fn publishers_never_replace_each_others_files() {
    let server = S3Server::start();
    let bucket = "therock-repo-amd-dev-pytorch";
    server.create_bucket(bucket);
    let device = "amd_torch_device_gfx942-2.10.0-py3-none-linux_x86_64.whl";
    let key = format!("v5/rocm/pytorch/whl-next/amd-torch-device-gfx942/{device}");
    let jobs: Vec<tempfile::TempDir> = ["cp311", "cp312"]
        .iter()
        .map(|py| {
            let dir = tempfile::tempdir().unwrap();
            write_files(
                dir.path(),
                &[
                    (device, "same device bytes"),
                    (&format!("torch-2.10.0-{py}-{py}-linux_x86_64.whl"), py),
                ],
            );
            dir
        })
        .collect();
    // Both matrix jobs at once.
    let children: Vec<_> = jobs
        .iter()
        .map(|dir| {
            Command::new(crate::common::tool(PYTORCH))
                .args([
                    &source_arg(dir.path()),
                    "--release-type=dev",
                    "--structured",
                ])
                .env_clear()
                .envs(aws_env(&server))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .run_spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        assert_ok(&child.wait_with_output().unwrap());
    }
    assert_eq!(stored(&server, bucket).len(), 3);

    // A third job whose device wheel has other bytes.
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            (device, "other device bytes"),
            ("torch-2.10.0-cp313-cp313-linux_x86_64.whl", "cp313"),
        ],
    );
    let src = source_arg(dir.path());
    let r = run(
        PYTORCH,
        &[&src, "--release-type", "dev", "--structured"],
        Some(&server),
        true,
    );
    assert_fails_with(&r.out, 1, &format!("s3://{bucket}/{key}"), "conflict");
    let stderr = r.stderr();
    assert!(
        stderr.contains(&dir.path().join(device).display().to_string()),
        "{stderr}"
    );
    assert!(
        stderr.contains(&sha256_hex(b"same device bytes")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&sha256_hex(b"other device bytes")),
        "{stderr}"
    );
    assert_eq!(r.outputs, "");
    assert_eq!(
        fs_err::read_to_string(server.root().join(bucket).join(&key)).unwrap(),
        "same device bytes"
    );
    // Its other wheel was still published: every file is attempted.
    assert_eq!(stored(&server, bucket).len(), 4);
}

// A file another tool put under a key records no SHA-256: the same bytes are left alone,
// other bytes (of the same size, or not) are refused naming what is there.
#[test]
fn a_file_written_by_another_tool_is_compared_by_its_bytes() {
    let server = S3Server::start();
    let bucket = "therock-repo-amd-dev-pytorch";
    let name = "torch-2.10.0-cp312-cp312-linux_x86_64.whl";
    let key = format!("v5/rocm/pytorch/whl-next/torch/{name}");
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), &[(name, "the wheel's bytes")]);
    let src = source_arg(dir.path());
    let args = [src.as_str(), "--release-type", "dev", "--structured"];

    server.seed_object(
        bucket,
        &key,
        b"the wheel's bytes",
        Some("text/x-foreign"),
        &[],
    );
    let r = run(PYTORCH, &args, Some(&server), true);
    assert_ok(&r.out);
    // Not written again: a write would have set the wheel's content type.
    assert_eq!(
        server.content_type(bucket, &key).as_deref(),
        Some("text/x-foreign")
    );

    for (theirs, described) in [
        (&b"THE WHEEL'S BYTES"[..], sha256_hex(b"THE WHEEL'S BYTES")),
        (
            &b"a longer file of other bytes"[..],
            "no recorded sha256".to_owned(),
        ),
    ] {
        server.seed_object(bucket, &key, theirs, Some("text/x-foreign"), &[]);
        let r = run(PYTORCH, &args, Some(&server), true);
        assert_fails_with(&r.out, 1, &format!("s3://{bucket}/{key}"), "conflict");
        let stderr = r.stderr();
        assert!(stderr.contains(&described), "{stderr}");
        assert!(
            stderr.contains(&sha256_hex(b"the wheel's bytes")),
            "{stderr}"
        );
        assert_eq!(
            fs_err::read(server.root().join(bucket).join(&key)).unwrap(),
            theirs
        );
    }
}

// A wheel above the single-request size goes up in parts, with its digest recorded, and a
// rerun finds it unchanged.
#[test]
fn large_wheels_are_published_and_verified() {
    let server = S3Server::start();
    let bucket = "therock-repo-amd-nightly-pytorch";
    server.create_bucket(bucket);
    let dir = tempfile::tempdir().unwrap();
    let name = "torch-2.10.0-cp312-cp312-linux_x86_64.whl";
    let data: Vec<u8> = (0..9u32 << 20).map(|i| (i % 251) as u8).collect();
    fs_err::write(dir.path().join(name), &data).unwrap();
    let src = source_arg(dir.path());
    let args = [
        src.as_str(),
        "--release-type",
        "nightly",
        "--structured",
        "-q",
    ];
    let r = run(PYTORCH, &args, Some(&server), true);
    assert_ok(&r.out);
    let key = format!("v5/rocm/pytorch/whl-next/torch/{name}");
    assert_eq!(
        sha256_hex(&fs_err::read(server.root().join(bucket).join(&key)).unwrap()),
        sha256_hex(&data)
    );
    assert_eq!(
        server.content_type(bucket, &key).as_deref(),
        Some("application/zip")
    );
    let r = run(PYTORCH, &args, Some(&server), true);
    assert_ok(&r.out);
    assert_eq!(
        r.outputs,
        "package_index_url=https://nightly.repo.amd.com/rocm/whl-next/\n"
    );
}

/// `publish_pytorch_to_release_bucket --structured` of `src` (dev), reaching `server` through
/// `proxy`.
fn publish_through(
    server: &S3Server,
    proxy: &rock_ci_test_support::FaultProxy,
    src: &str,
) -> Output {
    let mut env = aws_env(server);
    for (k, v) in &mut env {
        if *k == "AWS_ENDPOINT_URL" {
            *v = proxy.endpoint();
        }
    }
    Command::new(crate::common::tool(PYTORCH))
        .args([src, "--release-type=dev", "--structured"])
        .env_clear()
        .envs(env)
        .run_output()
        .unwrap()
}

// Two publishers of different large wheels under one key at the same moment: the other one
// lands while this one's parts are going up (after its HEAD found the key free). The
// completion is conditional, so the other's file stays and this one fails naming both.
#[test]
fn a_large_wheel_landing_meanwhile_is_not_replaced() {
    use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule};
    let server = std::sync::Arc::new(S3Server::start());
    let bucket = "therock-repo-amd-dev-pytorch";
    server.create_bucket(bucket);
    let name = "torch-2.10.0-cp312-cp312-linux_x86_64.whl";
    let key = format!("v5/rocm/pytorch/whl-next/torch/{name}");
    let theirs = b"the other job's wheel".to_vec();
    let their_sha = sha256_hex(&theirs);
    let landed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let plan = {
        let (server, landed, key) = (server.clone(), landed.clone(), key.clone());
        FaultPlan::new().rule(Rule::new(Fault::Stall).when(move |head| {
            // The first part of this job's upload: the other job's wheel lands now.
            if head.method == "PUT"
                && head.path.contains("partNumber=")
                && !landed.swap(true, std::sync::atomic::Ordering::SeqCst)
            {
                server.seed_object(
                    bucket,
                    &key,
                    &theirs,
                    Some("application/zip"),
                    &[("sha256", &their_sha)],
                );
            }
            false
        }))
    };
    let proxy = FaultProxy::start(server.addr(), plan);
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..9u32 << 20).map(|i| (i % 241) as u8).collect();
    fs_err::write(dir.path().join(name), &data).unwrap();
    let src = source_arg(dir.path());
    let out = publish_through(&server, &proxy, &src);
    assert!(landed.load(std::sync::atomic::Ordering::SeqCst));
    assert_fails_with(&out, 1, &format!("s3://{bucket}/{key}"), "conflict");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&sha256_hex(&data)), "{stderr}");
    assert!(
        stderr.contains(&sha256_hex(b"the other job's wheel")),
        "{stderr}"
    );
    assert_eq!(
        fs_err::read(server.root().join(bucket).join(&key)).unwrap(),
        b"the other job's wheel"
    );
}

// A large wheel's multipart completion lands, but the publisher is told it failed, on every
// attempt (the first lands; the retries find the upload gone on a real server): the object
// holds the wheel's bytes, so the publication succeeds, saying so.
#[test]
fn a_completion_that_landed_though_it_failed_succeeds() {
    use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule};
    let server = S3Server::start();
    let bucket = "therock-repo-amd-dev-pytorch";
    server.create_bucket(bucket);
    let name = "torch-2.10.0-cp312-cp312-linux_x86_64.whl";
    let key = format!("v5/rocm/pytorch/whl-next/torch/{name}");
    let completion = |fault| Rule::new(fault).method("POST").path_contains("uploadId=");
    let plan = FaultPlan::new()
        .rule(completion(Fault::LostAnswer).first(1))
        .rule(completion(Fault::Status500));
    let proxy = FaultProxy::start(server.addr(), plan);
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..9u32 << 20).map(|i| (i % 239) as u8).collect();
    fs_err::write(dir.path().join(name), &data).unwrap();
    let src = source_arg(dir.path());
    let out = publish_through(&server, &proxy, &src);
    assert_eq!(proxy.injected(Fault::LostAnswer), 1);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("but the object holds this file's bytes"),
        "{stderr}"
    );
    assert_eq!(
        sha256_hex(&fs_err::read(server.root().join(bucket).join(&key)).unwrap()),
        sha256_hex(&data)
    );
}
