use crate::common::Launch as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(unix)]
use rock_ci_test_support::HttpServer;
use rock_ci_test_support::{
    Fault, FaultPlan, FaultProxy, Rule, S3Server, assert_fails_with, files_under,
};

use crate::common::{
    HOST_PLATFORM, assert_ok, aws_env, borrowed, native, refusing_proxy, run_tool, text,
    through_proxy, write,
};

const GROUP: &str = "gfx94X-dcgpu";
const BUCKET: &str = "therock-ci-artifacts";

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
    write_wheel_file(&path, project, Some((project, version)));
    path
}

/// Writes `path` as a wheel of module `module` whose `{name}-{version}.dist-info/METADATA` says
/// `metadata` (`None`: no `.dist-info` directory at all).
fn write_wheel_file(path: &Path, module: &str, metadata: Option<(&str, &str)>) {
    use std::io::Write as _;
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    let (name, version) = metadata.unwrap_or_default();
    let mut files = vec![(
        format!("{module}/__init__.py"),
        format!("VERSION = {version:?}\n").replace('"', "'"),
    )];
    let info = metadata.map(|_| format!("{}-{version}.dist-info", name.replace(['-', '.'], "_")));
    if let Some(info) = &info {
        files.push((
            format!("{info}/METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        ));
        files.push((
            format!("{info}/WHEEL"),
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .to_owned(),
        ));
    }
    let mut zip = zip::ZipWriter::new(fs_err::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut record = Vec::new();
    for (member, text) in &files {
        zip.start_file(member.as_str(), options).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
        let digest = rock_ci_test_support::sha256_urlsafe_b64(text.as_bytes());
        record.push(format!("{member},sha256={digest},{}", text.len()));
    }
    if let Some(info) = &info {
        record.push(format!("{info}/RECORD,,"));
        zip.start_file(format!("{info}/RECORD"), options).unwrap();
        zip.write_all(format!("{}\n", record.join("\n")).as_bytes())
            .unwrap();
    }
    zip.finish().unwrap();
}

// Installs with the Linux python3 and pip, which a Windows test cannot run.
#[cfg(unix)]
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
        .run_output()
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

// Installs with the Linux python3 and pip, which a Windows test cannot run.
#[cfg(unix)]
/// The content types of the first upload of the single-arch test, its outputs and summary, and
/// the lines the reference prints about them (`stdout`), which workflows may read.
fn check_stored_types_and_outputs(
    server: &S3Server,
    prefix: &str,
    (outputs, summary): (&Path, &Path),
    stdout: &str,
) {
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
    let summary_text = format!(
        "[ROCm Python packages]({url})\n```bash\npip install rocm[libraries,devel] --pre \\\n    --find-links={url}\n```\n"
    );
    assert_eq!(
        fs_err::read_to_string(summary).unwrap(),
        format!("{summary_text}\n\n")
    );
    let expected = format!(
        "[INFO] Single-arch index URL: {url}\n\
         Set github actions output\n-------------------------\n\
         Setting github output:\n{{\n  \"package_find_links_url\": \"{url}\",\n  \"kpack_split\": \"false\"\n}}\n\
         OUTPUT package_find_links_url={url}\nOUTPUT kpack_split=false\n\
         Write github actions build summary\n----------------------------------\n\
         Writing job summary:\n{summary_text}\n\n[INFO] Done!\n"
    );
    assert!(stdout.ends_with(&expected), "{stdout}");
}

// Used by the tests that install with pip.
#[cfg(unix)]
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

// Installs with the Linux python3 and pip, which a Windows test cannot run.
#[cfg(unix)]
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
    let prefix = format!("12345-{HOST_PLATFORM}/python/{GROUP}");
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
    check_stored_types_and_outputs(&server, &prefix, (&outputs, &summary), &text(&out.stdout));
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

// Installs with the Linux python3 and pip, which a Windows test cannot run.
#[cfg(unix)]
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
    let dir = t
        .path()
        .join(format!("staging/9-{HOST_PLATFORM}/python/{GROUP}"));
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
        .run_output()
        .unwrap();
    assert!(!pip.status.success());
    assert!(
        text(&pip.stderr).contains("HASHES"),
        "{}",
        text(&pip.stderr)
    );
}

/// The install line of the step summary continues as the shell of the runner does: `^` on
/// Windows (cmd), `\` elsewhere, as the reference prints it.
#[test]
fn the_summary_install_line_continues_as_the_host_shell_does() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    write_wheel(&t.path().join("packages/dist"), "demo_pkg", "1.0");
    let summary = t.path().join("summary.md");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.push(("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()));
    let out = run(
        &[
            "--input-packages-dir",
            "packages",
            "--artifact-group",
            GROUP,
            "--run-id",
            "6",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    let prefix = format!("6-{HOST_PLATFORM}/python/{GROUP}");
    let url = format!("https://{BUCKET}.s3.amazonaws.com/{prefix}/index.html");
    let continuation = if cfg!(windows) { "^" } else { "\\" };
    assert_eq!(
        fs_err::read_to_string(&summary).unwrap(),
        format!(
            "[ROCm Python packages]({url})\n```bash\npip install rocm[libraries,devel] --pre {continuation}\n    --find-links={url}\n```\n\n\n"
        )
    );
    assert!(
        server
            .root()
            .join(BUCKET)
            .join(&prefix)
            .join("demo_pkg-1.0-py3-none-any.whl")
            .is_file()
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
            files_under(&t.path().join(to).join(format!("5-{HOST_PLATFORM}/python"))),
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

// Installs with the Linux python3 and pip, which a Windows test cannot run.
#[cfg(unix)]
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
    let staged = files_under(&t.path().join(format!("s/5-{HOST_PLATFORM}/python")));
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
    let page = fs_err::read_to_string(t.path().join(format!(
        "s/5-{HOST_PLATFORM}/python/gfx94X-dcgpu/index.html"
    )))
    .unwrap();
    let anchors: Vec<&str> = page.lines().filter(|l| l.contains("<a ")).collect();
    assert_eq!(anchors.len(), 2, "{page}");
    assert!(anchors[0].contains("href=\"./demo_pkg_gfx94x-1.0-py3-none-any.whl#sha256="));
    assert!(anchors[1].contains("href=\"../demo_pkg-1.0-py3-none-any.whl#sha256="));
    // --output-dir: no outputs, no summary.
    assert!(!summary.exists() && !outputs.exists());

    // The family page works with pip for the generic package above it.
    let http = HttpServer::serve_dir(t.path().join(format!("s/5-{HOST_PLATFORM}/python")));
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
    let url = &format!(
        "https://therock-ci-artifacts.s3.amazonaws.com/5-{HOST_PLATFORM}/python/index.html"
    );
    assert!(
        stdout.contains(&format!(
            "[INFO] kpack-split flat URL: {url}\nSet github actions output\n-------------------------\n\
             [DRY RUN] Would set github output:\n{{\n  \"package_find_links_url\": \"{url}\",\n  \"kpack_split\": \"true\"\n}}\n"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("[DRY RUN] "), "{stdout}");
    assert!(!flat.join("index.html").exists());
    assert!(!summary.exists() && !outputs.exists());

    assert!(!flat.join("index.html").exists());
}

// Installs with the Linux python3 and pip, which a Windows test cannot run.
#[cfg(unix)]
/// A flat (kpack-split) upload writes the page its output names, listing the top-level
/// packages, and pip installs from it (the reference writes none, leaving it to a bucket's own
/// indexer); the input directory is left as it was.
#[test]
fn a_flat_upload_writes_the_page_its_output_names() {
    let t = tempfile::tempdir().unwrap();
    let flat = t.path().join("flat");
    write_wheel(&flat, "demo_pkg", "1.0");
    let env: [(&str, &str); 0] = [];
    let out = run(
        &[
            "--input-packages-dir",
            "flat",
            "--run-id",
            "6",
            "--multiarch",
            "--output-dir",
            "s",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    assert!(
        text(&out.stdout)
            .contains("[INFO] kpack-split flat mode: one index for the top-level packages\n"),
        "{}",
        text(&out.stdout)
    );
    let python = t.path().join(format!("s/6-{HOST_PLATFORM}/python"));
    assert_eq!(
        files_under(&python),
        [
            "demo_pkg-1.0-py3-none-any.whl",
            "index.html",
            "simple/demo-pkg/index.html",
            "simple/index.html"
        ]
    );
    let http = HttpServer::serve_dir(&python);
    assert_eq!(
        pip_install(
            &[
                "--no-index",
                "--find-links",
                &format!("{}/index.html", http.url())
            ],
            "demo_pkg",
            &t.path().join("pip-flat")
        ),
        "1.0"
    );
    assert!(!flat.join("index.html").exists());
}

/// A `--bucket` S3 would refuse exits 2 naming the rule it breaks, before any request and
/// with `--dry-run` too (which would otherwise print keys in a bucket that cannot exist).
#[test]
fn a_bucket_name_s3_refuses_is_a_usage_error() {
    let t = tempfile::tempdir().unwrap();
    write_wheel(&t.path().join("pkgs/dist"), "demo", "1.0");
    // Nothing listens there: a request would fail otherwise, and later.
    let env = [("AWS_ENDPOINT_URL", "http://127.0.0.1:9")];
    for (bucket, rule) in [
        (
            "therock-ci-artifacts/evil",
            "only lowercase letters, digits, dots and hyphens",
        ),
        (
            "Bad_Bucket!",
            "only lowercase letters, digits, dots and hyphens",
        ),
        (
            "with space",
            "only lowercase letters, digits, dots and hyphens",
        ),
        ("ab", "3 to 63 characters"),
        ("", "3 to 63 characters"),
    ] {
        for dry_run in [false, true] {
            let mut args = vec![
                "--input-packages-dir",
                "pkgs",
                "--run-id",
                "1",
                "--multiarch",
                "--bucket",
                bucket,
            ];
            if dry_run {
                args.push("--dry-run");
            }
            let out = run(&args, &env, t.path());
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{bucket:?}: {stderr}");
            assert!(
                stderr.contains(rule) && stderr.contains("--bucket"),
                "{bucket:?}: {stderr}"
            );
            assert!(out.stdout.is_empty(), "{bucket:?}: {}", text(&out.stdout));
        }
    }
}

#[test]
#[expect(clippy::too_many_lines, reason = "one table of usage and input errors")]
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
                "some-bucket",
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
                "empty",
                "--run-id",
                "1",
                "--artifact-group",
                "g",
                "--upload-concurrency",
                "0",
            ],
            2,
            "invalid value '0' for '--upload-concurrency",
        ),
        (
            &[
                "--input-packages-dir",
                "empty",
                "--run-id",
                "1",
                "--artifact-group",
                "g",
                "--max-attempts",
                "0",
            ],
            2,
            "invalid value '0' for '--max-attempts",
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
            .join(format!("mine/3-{HOST_PLATFORM}/python/{GROUP}/index.html"))
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
        err.contains(&format!(
            "4-{HOST_PLATFORM}/python/gfx94X-dcgpu/demo_pkg-1.0-py3-none-any.whl"
        )),
        "{err}"
    );
    assert!(
        !server
            .root()
            .join(format!("mine/4-{HOST_PLATFORM}"))
            .exists()
    );
}

/// Asserts that every page at `stored` (a single-arch prefix on disk) lists each of the
/// wheels `projects` (version 1.0) with its digest.
fn assert_pages_list(stored: &Path, projects: &[&str], context: &str) {
    let read = |rel: &str| {
        fs_err::read_to_string(stored.join(rel)).unwrap_or_else(|e| panic!("{context}: {e}"))
    };
    let index = read("index.html");
    let simple = read("simple/index.html");
    for project in projects {
        let wheel = format!("{project}-1.0-py3-none-any.whl#sha256=");
        assert!(index.contains(&wheel), "{context}: index.html\n{index}");
        assert!(
            simple.contains(&format!("<a href=\"{project}/\">{project}</a>")),
            "{context}: simple/index.html\n{simple}"
        );
        let page = read(&format!("simple/{project}/index.html"));
        assert!(
            page.contains(&format!("../../{wheel}")),
            "{context}: simple/{project}/index.html\n{page}"
        );
    }
}

/// Two jobs upload into one prefix at the same time, several times over: after both succeed,
/// every page lists both jobs' packages.
#[test]
fn concurrent_publishers_keep_both_packages() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    write_wheel(&t.path().join("a"), "alpha", "1.0");
    write_wheel(&t.path().join("b"), "beta", "1.0");
    let aws = aws_env(&server);
    for trial in 1..=5 {
        let run_id = format!("70{trial}");
        let children: Vec<_> = ["a", "b"]
            .iter()
            .map(|dir| {
                Command::new(crate::common::tool("upload_python_packages"))
                    .args([
                        "--input-packages-dir",
                        dir,
                        "--artifact-group",
                        GROUP,
                        "--run-id",
                        &run_id,
                    ])
                    .env_clear()
                    .envs(aws.iter().map(|(k, v)| (*k, v.as_str())))
                    .current_dir(t.path())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .run_spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            assert_ok(&child.wait_with_output().unwrap());
        }
        let stored = server
            .root()
            .join(BUCKET)
            .join(format!("{run_id}-{HOST_PLATFORM}/python/{GROUP}"));
        assert_pages_list(&stored, &["alpha", "beta"], &format!("trial {trial}"));
    }
}

/// Another job publishes its pages between this job's reading of the prefix and its writing of
/// `index.html`: the write is refused, the pages are made again on top of the other job's, and
/// neither job's package is lost.
#[test]
fn a_publisher_that_lost_the_race_merges_again() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    write_wheel(&t.path().join("a"), "alpha", "1.0");
    write_wheel(&t.path().join("b"), "beta", "1.0");
    let args = |dir: &'static str| {
        [
            "--input-packages-dir",
            dir,
            "--artifact-group",
            GROUP,
            "--run-id",
            "71",
        ]
    };
    let direct = aws_env(&server);
    let other_ran = Arc::new(AtomicBool::new(false));
    let (flag, cwd) = (other_ran.clone(), t.path().to_path_buf());
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Status500)
                .method("PUT")
                .path_contains(&format!("71-{HOST_PLATFORM}/python/{GROUP}/index.html"))
                .when(move |_| {
                    if !flag.swap(true, Ordering::SeqCst) {
                        assert_ok(&run(&args("b"), &borrowed(&direct), &cwd));
                    }
                    false
                }),
        ),
    );
    let env = through_proxy(&server, &proxy, None);
    let out = run(&args("a"), &borrowed(&env), t.path());
    assert_ok(&out);
    assert!(other_ran.load(Ordering::SeqCst));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Another publisher replaced"), "{stdout}");
    let stored = server
        .root()
        .join(BUCKET)
        .join(format!("71-{HOST_PLATFORM}/python/{GROUP}"));
    assert_pages_list(&stored, &["alpha", "beta"], "after the race");
}

/// Multi-arch uploads into one prefix: a second upload's generic package is listed on the
/// family pages the first upload wrote, and the second's family page lists the first's
/// generic package; a flat upload adding a generic package updates every family page too, and
/// writes the prefix's own page.
#[test]
fn a_new_generic_package_is_listed_on_every_family_page() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    write_wheel(&t.path().join("one/dist"), "demo_pkg", "1.0");
    write_wheel(
        &t.path().join("one/dist/gfx94X-dcgpu"),
        "demo_pkg_gfx94x",
        "1.0",
    );
    write_wheel(&t.path().join("two/dist"), "extra_pkg", "1.0");
    write_wheel(
        &t.path().join("two/dist/gfx120X-all"),
        "demo_pkg_gfx120x",
        "1.0",
    );
    write_wheel(&t.path().join("three/dist"), "third_pkg", "1.0");
    let outputs = t.path().join("outputs");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.push(("GITHUB_OUTPUT", outputs.to_str().unwrap()));
    let upload = |dir: &str| {
        let out = run(
            &["--input-packages-dir", dir, "--run-id", "72", "--multiarch"],
            &env,
            t.path(),
        );
        assert_ok(&out);
        text(&out.stdout)
    };
    let stdout = upload("one");
    let base = format!("https://{BUCKET}.s3.amazonaws.com/72-{HOST_PLATFORM}/python");
    assert!(
        stdout.contains(&format!(
            "[INFO] Multi-arch legacy URL (tests append /{{family}}/index.html): {base}\n"
        )),
        "{stdout}"
    );
    upload("two");
    let stored = server
        .root()
        .join(BUCKET)
        .join(format!("72-{HOST_PLATFORM}/python"));
    let anchors = |family: &str| -> Vec<String> {
        let page = fs_err::read_to_string(stored.join(family).join("index.html")).unwrap();
        page.lines()
            .filter_map(|l| l.split("href=\"").nth(1))
            .map(|h| h.split('#').next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        anchors("gfx94X-dcgpu"),
        [
            "./demo_pkg_gfx94x-1.0-py3-none-any.whl",
            "../demo_pkg-1.0-py3-none-any.whl",
            "../extra_pkg-1.0-py3-none-any.whl",
        ]
    );
    assert_eq!(
        anchors("gfx120X-all"),
        [
            "./demo_pkg_gfx120x-1.0-py3-none-any.whl",
            "../demo_pkg-1.0-py3-none-any.whl",
            "../extra_pkg-1.0-py3-none-any.whl",
        ]
    );
    assert!(
        stored
            .join("gfx94X-dcgpu/simple/extra-pkg/index.html")
            .is_file()
    );

    upload("three");
    for family in ["gfx94X-dcgpu", "gfx120X-all"] {
        assert!(
            anchors(family).contains(&"../third_pkg-1.0-py3-none-any.whl".to_owned()),
            "{family}: {:?}",
            anchors(family)
        );
    }
    // The flat upload's own page lists every package at the top of the prefix.
    let top = fs_err::read_to_string(stored.join("index.html")).unwrap();
    let listed: Vec<&str> = top
        .lines()
        .filter_map(|l| l.split("href=\"").nth(1)?.split('#').next())
        .collect();
    assert_eq!(
        listed,
        [
            "demo_pkg-1.0-py3-none-any.whl",
            "extra_pkg-1.0-py3-none-any.whl",
            "third_pkg-1.0-py3-none-any.whl"
        ],
        "{top}"
    );
}

/// Every wheel is checked before anything is uploaded: its file name, that it is a zip, and
/// that its metadata names the same project and version; a bad one fails the run naming it
/// and nothing is uploaded. Names and versions are compared normalized, as pip compares them.
#[test]
fn invalid_wheels_are_refused_before_anything_is_uploaded() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    let aws = aws_env(&server);
    let env = borrowed(&aws);
    type Setup = fn(&Path) -> &'static str;
    let cases: &[(Setup, &str)] = &[
        (
            |d| {
                write(&d.join("garbage.whl"), "not a wheel");
                "garbage.whl"
            },
            "file name",
        ),
        (
            |d| {
                write(&d.join("demo_pkg-1.0-py3-none-any.whl"), "not a zip");
                "demo_pkg-1.0-py3-none-any.whl"
            },
            "not a zip archive",
        ),
        (
            |d| {
                write_wheel_file(
                    &d.join("demo_pkg-1.0-py3-none-any.whl"),
                    "demo_pkg",
                    Some(("other_pkg", "1.0")),
                );
                "demo_pkg-1.0-py3-none-any.whl"
            },
            "Name `other_pkg`",
        ),
        (
            |d| {
                write_wheel_file(
                    &d.join("demo_pkg-1.0-py3-none-any.whl"),
                    "demo_pkg",
                    Some(("demo_pkg", "2.0")),
                );
                "demo_pkg-1.0-py3-none-any.whl"
            },
            "Version `2.0`",
        ),
        (
            |d| {
                write_wheel_file(&d.join("demo_pkg-1.0-py3-none-any.whl"), "demo_pkg", None);
                "demo_pkg-1.0-py3-none-any.whl"
            },
            ".dist-info",
        ),
        (
            |d| {
                write(&d.join("gfx94X-dcgpu/x-1.0-py3-none-any.whl"), "nested");
                "gfx94X-dcgpu/x-1.0-py3-none-any.whl"
            },
            "not a zip archive",
        ),
    ];
    for (n, (setup, message)) in cases.iter().enumerate() {
        let dir = t.path().join(format!("case{n}"));
        write_wheel(&dir, "good_pkg", "1.0");
        let bad = setup(&dir);
        let run_id = format!("8{n}");
        let out = run(
            &[
                "--input-packages-dir",
                &format!("case{n}"),
                "--artifact-group",
                GROUP,
                "--run-id",
                &run_id,
            ],
            &env,
            t.path(),
        );
        let context = format!("{bad}: {message}");
        assert_fails_with(&out, 1, message, &context);
        assert!(
            text(&out.stderr).contains(&format!("{}`", native(bad))),
            "{context}: {}",
            text(&out.stderr)
        );
        assert!(
            !server
                .root()
                .join(BUCKET)
                .join(format!("{run_id}-{HOST_PLATFORM}"))
                .exists(),
            "{context}: something was uploaded"
        );
    }
}

// Installs with the Linux python3 and pip, which a Windows test cannot run.
#[cfg(unix)]
/// A wheel whose metadata spells its name and version differently from its file name, but
/// equal once normalized as pip normalizes them, is accepted, and pip installs it.
#[test]
fn wheels_equal_once_normalized_are_accepted() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    let aws = aws_env(&server);
    let env = borrowed(&aws);
    let dir = t.path().join("normalized");
    write_wheel_file(
        &dir.join("Demo_Pkg-1.0rc1-py3-none-any.whl"),
        "demo_pkg",
        Some(("demo.pkg", "1.0.0-RC.1")),
    );
    let out = run(
        &[
            "--input-packages-dir",
            "normalized",
            "--artifact-group",
            GROUP,
            "--run-id",
            "89",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    let stored = server
        .root()
        .join(BUCKET)
        .join(format!("89-{HOST_PLATFORM}/python/{GROUP}"));
    let http = HttpServer::serve_dir(&stored);
    assert_eq!(
        pip_install(
            &[
                "--no-index",
                "--find-links",
                &format!("{}/index.html", http.url())
            ],
            "demo-pkg==1.0rc1",
            t.path()
        ),
        "1.0.0-RC.1"
    );
}
