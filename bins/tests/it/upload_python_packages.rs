use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rock_ci_test_support::{HttpServer, S3Server, assert_fails_with, files_under};

use crate::common::{assert_ok, aws_env, borrowed, refusing_proxy, run_tool, text, write};

const GROUP: &str = "gfx94X-dcgpu";

fn run(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    run_tool(
        crate::common::tool("upload_python_packages"),
        args,
        env,
        cwd,
    )
}

/// Writes a pure-Python wheel of `project` `version` whose module says `version`, built by
/// Python's own `zipfile` as a wheel builder would.
fn write_wheel(dir: &Path, project: &str, version: &str) -> PathBuf {
    let path = dir.join(format!("{project}-{version}-py3-none-any.whl"));
    fs_err::create_dir_all(dir).unwrap();
    rock_ci_test_support::python(
        r#"
import base64, hashlib, sys, zipfile
path, project, version = sys.argv[1:4]
info = f"{project}-{version}.dist-info"
files = {
    f"{project}/__init__.py": f"VERSION = {version!r}\n",
    f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(path, "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
"#,
        &[path.as_os_str(), project.as_ref(), version.as_ref()],
    );
    path
}

/// `pip install --target` of `requirement` with `index_args`; the version the installed
/// module reports.
fn pip_install(index_args: &[&str], requirement: &str, dir: &Path) -> String {
    let target = dir.join(format!("target-{}", index_args.join("").len()));
    let _ = fs_err::remove_dir_all(&target);
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-cache-dir",
            "--no-deps",
            "--target",
        ])
        .arg(&target)
        .args(index_args)
        .arg(requirement)
        .env("PIP_CONFIG_FILE", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pip {index_args:?} {requirement}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    rock_ci_test_support::python(
        "import sys; sys.path.insert(0, sys.argv[1]); import demo_pkg; print(demo_pkg.VERSION)",
        &[target.as_os_str()],
    )
    .trim()
    .to_owned()
}

/// The content types of the first upload of the single-arch test, its outputs and summary.
fn check_stored_types_and_outputs(server: &S3Server, prefix: &str, outputs: &Path, summary: &Path) {
    let bucket = "therock-ci-artifacts";
    for (rel, content_type) in [
        ("demo_pkg-1.0-py3-none-any.whl", "application/zip"),
        ("demo_pkg-1.0.tar.gz", "application/gzip"),
        ("index.html", "text/html"),
        ("simple/demo-pkg/index.html", "text/html"),
    ] {
        assert_eq!(
            server
                .content_type(bucket, &format!("{prefix}/{rel}"))
                .as_deref(),
            Some(content_type),
            "{rel}"
        );
    }
    let url = format!("https://{bucket}.s3.amazonaws.com/{prefix}/index.html");
    assert_eq!(
        fs_err::read_to_string(outputs).unwrap(),
        format!("package_find_links_url={url}\nkpack_split=false\n")
    );
    assert_eq!(
        fs_err::read_to_string(summary).unwrap(),
        format!(
            "[ROCm Python packages]({url})\n```bash\npip install rocm[libraries,devel] --pre \\\n    --find-links={url}\n```\n\n\n"
        )
    );
}

/// The index links the wheel with its digest.
fn check_index_digest(stored: &Path, dist: &Path) {
    let index = fs_err::read_to_string(stored.join("index.html")).unwrap();
    let wheel_sha = rock_ci_test_support::sha256_hex(
        &fs_err::read(dist.join("demo_pkg-1.0-py3-none-any.whl")).unwrap(),
    );
    assert!(
        index.contains(&format!(
            "<a href=\"demo_pkg-1.0-py3-none-any.whl#sha256={wheel_sha}\">demo_pkg-1.0-py3-none-any.whl</a>"
        )),
        "{index}"
    );
}

/// Single-arch on S3: keys, content types, outputs and summary; the uploaded tree served over
/// HTTP works with `pip install --find-links` and `--index-url`; a second upload of a new
/// version to the same place keeps the first in the index.
#[test]
fn single_arch_upload_is_a_pip_index_and_merges() {
    let server = S3Server::start();
    let bucket = "therock-ci-artifacts";
    server.create_bucket(bucket);
    let t = tempfile::tempdir().unwrap();
    let dist = t.path().join("packages/dist");
    write_wheel(&dist, "demo_pkg", "1.0");
    write(&dist.join("demo_pkg-1.0.tar.gz"), "not really an sdist");
    write(&dist.join(".kpack_staging/x.whl"), "staging");
    let outputs = t.path().join("outputs");
    let summary = t.path().join("summary.md");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.extend([
        ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ]);
    let args = [
        "--input-packages-dir",
        "packages",
        "--artifact-group",
        GROUP,
        "--run-id",
        "12345",
    ];
    let out = run(&args, &env, t.path());
    assert_ok(&out);
    let prefix = format!("12345-linux/python/{GROUP}");
    let stored = server.root().join(bucket).join(&prefix);
    assert_eq!(
        files_under(&stored),
        [
            "demo_pkg-1.0-py3-none-any.whl",
            "demo_pkg-1.0.tar.gz",
            "index.html",
            "simple/demo-pkg/index.html",
            "simple/index.html",
        ]
    );
    check_stored_types_and_outputs(&server, &prefix, &outputs, &summary);
    check_index_digest(&stored, &dist);

    let http = HttpServer::serve_dir(server.root().join(bucket));
    let base = format!("{}/{prefix}", http.url());
    let find_links = format!("{base}/index.html");
    let simple = format!("{base}/simple/");
    let pip_dir = t.path().join("pip");
    assert_eq!(
        pip_install(
            &["--no-index", "--find-links", &find_links],
            "demo_pkg",
            &pip_dir
        ),
        "1.0"
    );
    assert_eq!(
        pip_install(&["--index-url", &simple], "demo-pkg", &pip_dir),
        "1.0"
    );

    // A second job uploads 2.0 from another dist to the same place: the index lists both.
    let dist2 = t.path().join("second");
    write_wheel(&dist2, "demo_pkg", "2.0");
    let out = run(
        &[
            "--input-packages-dir",
            "second",
            "--artifact-group",
            GROUP,
            "--run-id",
            "12345",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    let index = fs_err::read_to_string(stored.join("index.html")).unwrap();
    assert!(
        index.contains("demo_pkg-1.0-py3-none-any.whl#sha256="),
        "{index}"
    );
    assert!(
        index.contains("demo_pkg-2.0-py3-none-any.whl#sha256="),
        "{index}"
    );
    assert!(index.contains(">demo_pkg-1.0.tar.gz</a>"), "{index}");
    assert_eq!(
        pip_install(
            &["--no-index", "--find-links", &find_links],
            "demo_pkg",
            &pip_dir
        ),
        "2.0"
    );
    assert_eq!(
        pip_install(&["--index-url", &simple], "demo-pkg==1.0", &pip_dir),
        "1.0"
    );
}

/// A page whose digest does not match the file is refused by pip: the digests are real.
#[test]
fn pip_checks_the_digests_of_the_index() {
    let t = tempfile::tempdir().unwrap();
    write_wheel(&t.path().join("dist"), "demo_pkg", "1.0");
    let out = run(
        &[
            "--input-packages-dir",
            ".",
            "--artifact-group",
            GROUP,
            "--run-id",
            "9",
            "--output-dir",
            "staging",
        ],
        &[],
        t.path(),
    );
    assert_ok(&out);
    let dir = t.path().join(format!("staging/9-linux/python/{GROUP}"));
    let wheel = dir.join("demo_pkg-1.0-py3-none-any.whl");
    let mut bytes = fs_err::read(&wheel).unwrap();
    bytes.extend_from_slice(b"\0");
    fs_err::write(&wheel, bytes).unwrap();
    let http = HttpServer::serve_dir(&dir);
    let pip = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--dest",
        ])
        .arg(t.path().join("dl"))
        .args([
            "--find-links",
            &format!("{}/index.html", http.url()),
            "demo_pkg",
        ])
        .env("PIP_CONFIG_FILE", "/dev/null")
        .output()
        .unwrap();
    assert!(!pip.status.success());
    assert!(
        text(&pip.stderr).contains("HASHES"),
        "{}",
        text(&pip.stderr)
    );
}

/// Multi-arch: per-family pages linking the family's and the generic packages (spec §14.2);
/// the URL output is the base; flat mode writes no page (the bucket indexes it).
/// `--artifact-group` beside `--multiarch` is not used (no group in multi-arch paths), and
/// says so; without it, nothing is said.
#[test]
fn multiarch_ignores_the_group_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let dist = t.path().join("pk/dist");
    write_wheel(&dist, "demo_pkg", "1.0");
    write_wheel(&dist.join("gfx94X-dcgpu"), "demo_pkg_gfx94x", "1.0");
    let upload = |group: &[&str], to: &str| {
        let out = run(
            &[
                &["--input-packages-dir", "pk", "--run-id", "5", "--multiarch"],
                group,
                &["--output-dir", to],
            ]
            .concat(),
            &[],
            t.path(),
        );
        assert_ok(&out);
        (
            String::from_utf8_lossy(&out.stderr).into_owned(),
            files_under(&t.path().join(to).join("5-linux/python")),
        )
    };
    let ignored = "not used with --multiarch";
    let (stderr, plain) = upload(&[], "s");
    assert!(!stderr.contains(ignored), "{stderr}");
    let (stderr, grouped) = upload(&["--artifact-group", "gfx94X-dcgpu"], "s2");
    assert!(
        stderr.contains(&format!("--artifact-group gfx94X-dcgpu is {ignored}")),
        "{stderr}"
    );
    assert_eq!(grouped, plain);
    assert!(
        plain.contains(&"gfx94X-dcgpu/index.html".to_owned()),
        "{plain:?}"
    );
}

#[test]
fn multiarch_layouts() {
    let t = tempfile::tempdir().unwrap();
    let dist = t.path().join("pk/dist");
    write_wheel(&dist, "demo_pkg", "1.0");
    write_wheel(&dist.join("gfx94X-dcgpu"), "demo_pkg_gfx94x", "1.0");
    write_wheel(&dist.join("gfx120X-all"), "demo_pkg_gfx120x", "1.0");
    write(&dist.join(".kpack_staging/x.tar.gz"), "x");
    let summary = t.path().join("summary.md");
    let outputs = t.path().join("outputs");
    let env = [
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
    ];
    let out = run(
        &[
            "--input-packages-dir",
            "pk",
            "--run-id",
            "5",
            "--multiarch",
            "--output-dir",
            "s",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    let staged = files_under(&t.path().join("s/5-linux/python"));
    assert!(
        staged.contains(&"gfx94X-dcgpu/index.html".to_owned()),
        "{staged:?}"
    );
    assert!(
        staged.contains(&"gfx120X-all/simple/demo-pkg/index.html".to_owned()),
        "{staged:?}"
    );
    assert!(!staged.contains(&"index.html".to_owned()), "{staged:?}");
    assert!(
        !staged.iter().any(|f| f.contains("kpack_staging")),
        "{staged:?}"
    );
    let page =
        fs_err::read_to_string(t.path().join("s/5-linux/python/gfx94X-dcgpu/index.html")).unwrap();
    let anchors: Vec<&str> = page.lines().filter(|l| l.contains("<a ")).collect();
    assert_eq!(anchors.len(), 2, "{page}");
    assert!(anchors[0].contains("href=\"./demo_pkg_gfx94x-1.0-py3-none-any.whl#sha256="));
    assert!(anchors[1].contains("href=\"../demo_pkg-1.0-py3-none-any.whl#sha256="));
    // --output-dir: no outputs, no summary.
    assert!(!summary.exists() && !outputs.exists());

    // The family page works with pip for the generic package above it.
    let http = HttpServer::serve_dir(t.path().join("s/5-linux/python"));
    assert_eq!(
        pip_install(
            &[
                "--no-index",
                "--find-links",
                &format!("{}/gfx94X-dcgpu/index.html", http.url())
            ],
            "demo_pkg",
            t.path()
        ),
        "1.0"
    );

    // Flat: no page; dry-run prints the outputs instead of writing them.
    let flat = t.path().join("flat");
    write_wheel(&flat, "demo_pkg", "1.0");
    let out = run(
        &[
            "--input-packages-dir",
            "flat",
            "--run-id",
            "5",
            "--multiarch",
            "--dry-run",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("kpack-split flat mode"), "{stdout}");
    assert!(
        stdout.contains("package_find_links_url=https://therock-ci-artifacts.s3.amazonaws.com/5-linux/python/index.html\nkpack_split=true"),
        "{stdout}"
    );
    assert!(stdout.contains("[DRY RUN] "), "{stdout}");
    assert!(!flat.join("index.html").exists());
    assert!(!summary.exists() && !outputs.exists());
}

#[test]
fn usage_and_input_errors() {
    let t = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(t.path().join("empty/dist")).unwrap();
    write(&t.path().join("empty/dist/readme.txt"), "x");
    type Case<'a> = (&'a [&'a str], i32, &'a str);
    let cases: &[Case<'_>] = &[
        (
            &["--input-packages-dir", "empty", "--run-id", "1"],
            2,
            "--artifact-group is required for single-arch builds",
        ),
        (
            &[
                "--input-packages-dir",
                "empty",
                "--run-id",
                "1",
                "--multiarch",
                "--bucket",
                "b",
                "--output-dir",
                "o",
            ],
            2,
            "--output-dir and --bucket are mutually exclusive",
        ),
        (
            &[
                "--input-packages-dir",
                "empty",
                "--run-id",
                "1",
                "--artifact-group",
                "a/b",
            ],
            2,
            "artifact group `a/b` contains `/`",
        ),
        (
            &[
                "--input-packages-dir",
                "nope",
                "--run-id",
                "1",
                "--artifact-group",
                "g",
            ],
            1,
            "Packages root directory not found: `nope`",
        ),
        (
            &[
                "--input-packages-dir",
                "empty",
                "--run-id",
                "1",
                "--artifact-group",
                "g",
                "--output-dir",
                "o",
            ],
            1,
            "No package files found in",
        ),
    ];
    for (args, code, message) in cases {
        assert_fails_with(
            &run(args, &[], t.path()),
            *code,
            message,
            &format!("{args:?}"),
        );
    }
    // Nothing was written for the failed runs.
    assert!(!t.path().join("o").exists());
    assert!(!t.path().join("empty/dist/index.html").exists());
}

/// `--bucket` bypasses the run's bucket (no fork prefix); a failed package upload uploads no
/// page, so no page ever links a missing file.
#[test]
fn bucket_override_and_no_index_without_packages() {
    let server = S3Server::start();
    server.create_bucket("mine");
    let t = tempfile::tempdir().unwrap();
    write_wheel(&t.path().join("d"), "demo_pkg", "1.0");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.push(("GITHUB_REPOSITORY", "Fork/TheRock"));
    let out = run(
        &[
            "--input-packages-dir",
            "d",
            "--artifact-group",
            GROUP,
            "--run-id",
            "3",
            "--bucket",
            "mine",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    assert!(
        server
            .root()
            .join(format!("mine/3-linux/python/{GROUP}/index.html"))
            .is_file()
    );

    // The server refuses the wheel: the run fails naming it, and no page goes up.
    let (_proxy, faulty) = refusing_proxy(&server, ".whl");
    let mut env = borrowed(&faulty);
    env.push(("GITHUB_REPOSITORY", "Fork/TheRock"));
    let out = run(
        &[
            "--input-packages-dir",
            "d",
            "--artifact-group",
            GROUP,
            "--run-id",
            "4",
            "--bucket",
            "mine",
            "--max-attempts",
            "1",
        ],
        &env,
        t.path(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no index was uploaded"), "{err}");
    assert!(
        err.contains("4-linux/python/gfx94X-dcgpu/demo_pkg-1.0-py3-none-any.whl"),
        "{err}"
    );
    assert!(!server.root().join("mine/4-linux").exists());
}
