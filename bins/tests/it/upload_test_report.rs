//! `upload_test_report_script` against the in-process S3 server and a staging directory
//! (release-publishing spec §5.6).

use std::path::Path;
use std::process::Output;

use rock_ci_test_support::{S3Server, assert_fails_with, files_under};

use crate::common::{HOST_PLATFORM, assert_ok, aws_env, borrowed, native, run_tool, text, write};

const CI_BUCKET: &str = "therock-ci-artifacts";

fn run(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    run_tool(
        crate::common::tool("upload_test_report_script"),
        args,
        env,
        cwd,
    )
}

/// A report whose name needs escaping in the index page, as text and as a link. On Unix its
/// `<`, `>` and `/` (which makes `b <i>report<` a directory) are the test; Windows allows none
/// of `<`, `>` in a file name, so there the name holds `&` and `'`, which need escaping too.
#[cfg(unix)]
const ODD_REPORT: &str = "b <i>report</i>+1.html";
#[cfg(not(unix))]
const ODD_REPORT: &str = "b &report'+1.html";
/// [`ODD_REPORT`] as the index page links it.
#[cfg(unix)]
const ODD_HREF: &str = "b%20%3Ci%3Ereport%3C/i%3E%2B1.html";
#[cfg(not(unix))]
const ODD_HREF: &str = "b%20%26report%27%2B1.html";
/// [`ODD_REPORT`] as the index page shows it.
#[cfg(unix)]
const ODD_TEXT: &str = "b &lt;i&gt;report&lt;/i&gt;+1.html";
#[cfg(not(unix))]
const ODD_TEXT: &str = "b &amp;report&#x27;+1.html";

/// `reports/` as the manifest-diff job leaves it, plus files that are not reports.
fn reports(dir: &Path) {
    write(&dir.join("TheRockReport.html"), "<html>diff</html>");
    write(&dir.join("sub/n.html"), "<html>nested</html>");
    write(&dir.join(ODD_REPORT), "<html>odd name</html>");
    write(&dir.join("big.html.gz"), "not html");
    write(&dir.join("X.HTML"), "upper case");
    write(&dir.join("notes.txt"), "not a report");
}

/// The manifest-diff job's arguments for run `run_id`.
fn manifest_diff(run_id: &str) -> Vec<&str> {
    vec![
        "--run-id",
        run_id,
        "--subfolder",
        "manifest-diff",
        "--report-path",
        "reports",
        "--index-file-name",
        "index.html",
    ]
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap()
}

// U1: the run's `logs/manifest-diff/` gets every `*.html` at any depth and the index, all
// `text/html`; the index lists exactly those reports, names escaped; one summary line.
#[test]
fn uploads_reports_and_index_and_links_it() {
    let server = S3Server::start();
    server.create_bucket(CI_BUCKET);
    let t = tempfile::tempdir().unwrap();
    reports(&t.path().join("reports"));
    let summary = t.path().join("summary.md");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.push(("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()));
    let out = run(&manifest_diff("12345"), &env, t.path());
    assert_ok(&out);
    let prefix = format!("12345-{HOST_PLATFORM}/logs/manifest-diff");
    let stored = server.root().join(CI_BUCKET).join(&prefix);
    assert_eq!(
        files_under(&stored),
        ["TheRockReport.html", ODD_REPORT, "index.html", "sub/n.html"]
    );
    for name in files_under(&stored) {
        assert_eq!(
            server
                .content_type(CI_BUCKET, &format!("{prefix}/{name}"))
                .as_deref(),
            Some("text/html"),
            "{name}"
        );
    }
    assert_eq!(read(&stored.join("sub/n.html")), "<html>nested</html>");
    assert_eq!(
        read(&summary),
        format!(
            "[Report (S3)](https://therock-ci-artifacts.s3.amazonaws.com/{prefix}/index.html)\n\n"
        )
    );
    // The page uploaded is the one written into the report directory.
    let page = read(&stored.join("index.html"));
    assert_eq!(page, read(&t.path().join("reports/index.html")));
    let links: Vec<&str> = page
        .split("<a href=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert_eq!(links, ["TheRockReport.html", ODD_HREF, "sub/n.html"]);
    assert!(page.contains(&format!(">{ODD_TEXT}</a>")), "{page}");
    assert!(!page.contains(ODD_REPORT), "{page}");
    assert!(!page.contains("<i>"));
    assert!(page.contains("<h1>reports</h1>"));
    let stdout = text(&out.stdout);
    for line in [
        "Index file to be created: index.html".to_owned(),
        "Found 3 HTML reports in ".to_owned(),
        "Uploading HTML reports from ".to_owned(),
        format!("Uploaded 4 files (0 unchanged) to s3://therock-ci-artifacts/{prefix}"),
        format!(
            "Writing job summary:\n[Report (S3)](https://therock-ci-artifacts.s3.amazonaws.com/{prefix}/index.html)"
        ),
    ] {
        assert!(stdout.contains(&line), "{line} not in\n{stdout}");
    }
    assert!(text(&out.stderr).contains("  bucket: therock-ci-artifacts"));
}

// A second run over the same directory replaces its own index and lists the same reports; an
// index an earlier run wrote under another name is neither listed nor uploaded.
#[test]
fn a_rerun_leaves_out_earlier_index_pages() {
    let server = S3Server::start();
    server.create_bucket(CI_BUCKET);
    let t = tempfile::tempdir().unwrap();
    reports(&t.path().join("reports"));
    let aws = aws_env(&server);
    let env = borrowed(&aws);
    assert_ok(&run(&manifest_diff("1"), &env, t.path()));
    fs_err::rename(
        t.path().join("reports/index.html"),
        t.path().join("reports/old_index.html"),
    )
    .unwrap();
    let again = run(&manifest_diff("2"), &env, t.path());
    assert_ok(&again);
    let stored = |run: &str| {
        files_under(
            &server
                .root()
                .join(CI_BUCKET)
                .join(format!("{run}-{HOST_PLATFORM}/logs/manifest-diff")),
        )
    };
    assert_eq!(stored("2"), stored("1"));
    assert!(!stored("2").contains(&"old_index.html".to_owned()));
    let page = read(&t.path().join("reports/index.html"));
    assert!(!page.contains("old_index"), "{page}");
    assert!(
        text(&again.stdout)
            .contains("Left out old_index.html: an index page written by an earlier run")
    );
}

// U2 and U5: a repository other than ROCm/TheRock writes to the external bucket under its own
// prefix; `--log-destination` moves the upload and the summary link follows it.
#[test]
fn log_destination_moves_upload_and_link() {
    let server = S3Server::start();
    let bucket = "therock-ci-artifacts-external";
    server.create_bucket(bucket);
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("rccl/rccl.html"), "<html>rccl</html>");
    let summary = t.path().join("summary.md");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.push(("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()));
    env.push(("GITHUB_REPOSITORY", "ROCm/rocm-libraries"));
    let out = run(
        &[
            "--run-id",
            "999",
            "--subfolder",
            "gfx950-dcgpu",
            "--report-path",
            "rccl",
            "--index-file-name",
            "index_rccl_test_report.html",
            "--log-destination",
            "/logs/gfx950-dcgpu/rccl/",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    let prefix = format!("ROCm-rocm-libraries/999-{HOST_PLATFORM}/logs/gfx950-dcgpu/rccl");
    assert_eq!(
        files_under(&server.root().join(bucket).join(&prefix)),
        ["index_rccl_test_report.html", "rccl.html"]
    );
    assert_eq!(
        read(&summary),
        format!(
            "[Report (S3)](https://{bucket}.s3.amazonaws.com/{prefix}/index_rccl_test_report.html)\n\n"
        )
    );
    // Nothing under `logs/gfx950-dcgpu/` itself.
    assert_eq!(
        files_under(&server.root().join(bucket).join("ROCm-rocm-libraries")).len(),
        2
    );
}

// U4 and U6 with a staging directory: the index is uploaded whatever the case of its `.html`
// (the reference's case-sensitive include left `Index.HTML` behind), a blank
// `--log-destination` is absent, and no job summary links a local file.
#[test]
fn output_dir_stages_the_same_keys() {
    let t = tempfile::tempdir().unwrap();
    reports(&t.path().join("reports"));
    let summary = t.path().join("summary.md");
    let env = [
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ("RELEASE_TYPE", "nightly"),
    ];
    let out = run(
        &[
            "--run-id",
            "42",
            "--subfolder",
            "gfx94X-dcgpu",
            "--report-path",
            "reports",
            "--index-file-name",
            "Index.HTML",
            "--log-destination",
            "   ",
            "--output-dir",
            "staging",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    let staged: Vec<String> = ["Index.HTML", "TheRockReport.html", ODD_REPORT, "sub/n.html"]
        .iter()
        .map(|name| format!("42-{HOST_PLATFORM}/logs/gfx94X-dcgpu/{name}"))
        .collect();
    assert_eq!(files_under(&t.path().join("staging")), staged);
    assert!(!summary.exists());
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Staged the index at "), "{stdout}");
    assert!(text(&out.stderr).contains("  bucket: therock-nightly-artifacts"));
}

// A dry run against S3 uploads nothing and writes no summary; it prints each planned upload
// and the summary line.
#[test]
fn dry_run_uploads_nothing() {
    let server = S3Server::start();
    server.create_bucket(CI_BUCKET);
    let t = tempfile::tempdir().unwrap();
    reports(&t.path().join("reports"));
    let summary = t.path().join("summary.md");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.push(("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()));
    let out = run(
        &[
            "--run-id",
            "12345",
            "--subfolder",
            "manifest-diff",
            "--report-path",
            "reports",
            "--index-file-name",
            "index.html",
            "--dry-run",
        ],
        &env,
        t.path(),
    );
    assert_ok(&out);
    assert!(files_under(&server.root().join(CI_BUCKET)).is_empty());
    assert!(!summary.exists());
    let stdout = text(&out.stdout);
    let prefix = format!("12345-{HOST_PLATFORM}/logs/manifest-diff");
    for line in [
        format!(
            "{} -> s3://therock-ci-artifacts/{prefix}/sub/n.html (text/html)",
            native("/reports/sub/n.html")
        ),
        format!(
            "{} -> s3://therock-ci-artifacts/{prefix}/index.html (text/html)",
            native("/reports/index.html")
        ),
        format!(
            "[DRY RUN] Would write the job summary:\n[Report (S3)](https://therock-ci-artifacts.s3.amazonaws.com/{prefix}/index.html)"
        ),
    ] {
        assert!(stdout.contains(&line), "{line} not in\n{stdout}");
    }
}

// U7 and spec weakness 9: a missing report directory (the generator wrote no report) is
// said on stderr and exits 0 before the bucket is resolved (even with a malformed
// GITHUB_REPOSITORY); nothing is uploaded and no summary is written. Other bad input exits
// 1 or 2 with the thing that is wrong named, and nothing uploaded.
#[test]
fn bad_input_uploads_nothing() {
    let server = S3Server::start();
    server.create_bucket(CI_BUCKET);
    let t = tempfile::tempdir().unwrap();
    reports(&t.path().join("reports"));
    write(&t.path().join("afile"), "a file, not a directory");
    write(
        &t.path().join("own/index.html"),
        "<html>a report named index</html>",
    );
    let summary = t.path().join("summary.md");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.push(("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()));
    let base = |report: &'static str| {
        vec![
            "--run-id",
            "1",
            "--subfolder",
            "x",
            "--report-path",
            report,
            "--index-file-name",
            "index.html",
        ]
    };

    let mut malformed = env.clone();
    malformed.push(("GITHUB_REPOSITORY", "TheRock"));
    let missing = run(&base("nope"), &malformed, t.path());
    assert_eq!(missing.status.code(), Some(0), "{}", text(&missing.stderr));
    assert!(
        text(&missing.stderr)
            .contains("ERROR: --report-path `nope` does not exist: skipping upload"),
        "{}",
        text(&missing.stderr)
    );
    assert!(!t.path().join("nope").exists());

    let own = format!(
        "{}` exists and is not an index page written by this tool",
        native("own/index.html")
    );
    type Case<'a> = (Vec<&'static str>, i32, &'a str);
    let cases: Vec<Case<'_>> = vec![
        (base("afile"), 1, "--report-path `afile` is not a directory"),
        (base("own"), 1, &own),
        (
            [base("reports"), vec!["--index-file-name", "index.txt"]].concat(),
            2,
            "--index-file-name `index.txt` would be served as text/plain, not text/html",
        ),
        (
            [base("reports"), vec!["--index-file-name", "a/index.html"]].concat(),
            2,
            "--index-file-name `a/index.html` contains `/`",
        ),
        (
            [base("reports"), vec!["--log-destination", "logs/../x"]].concat(),
            2,
            "--log-destination `..` is not a name",
        ),
        (
            [base("reports"), vec!["--subfolder", "a//b"]].concat(),
            2,
            "--subfolder `a//b` has an empty path component",
        ),
        (
            vec![
                "--run-id",
                "1",
                "--subfolder",
                "x",
                "--index-file-name",
                "i.html",
            ],
            2,
            "--report-path",
        ),
    ];
    for (args, code, message) in &cases {
        assert_fails_with(
            &run(args, &env, t.path()),
            *code,
            message,
            &format!("{args:?}"),
        );
    }
    // A malformed repository still fails once there is something to upload.
    assert_fails_with(
        &run(&base("reports"), &malformed, t.path()),
        1,
        "GITHUB_REPOSITORY",
        "malformed GITHUB_REPOSITORY",
    );
    assert!(files_under(&server.root().join(CI_BUCKET)).is_empty());
    assert!(!summary.exists());
    assert_eq!(
        read(&t.path().join("own/index.html")),
        "<html>a report named index</html>"
    );
    assert!(!t.path().join("reports/index.html").exists());
}
