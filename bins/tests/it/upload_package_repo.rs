use crate::common::Launch as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rock_ci_test_support::{
    Fault, FaultPlan, FaultProxy, HttpServer, Rule, S3Server, assert_fails_with, files_under,
    sha256_hex, tree_snapshot,
};

use crate::common::{
    assert_ok, aws_env, borrowed, refusing_proxy, run_tool, text, through_proxy, write,
};

const BUCKET: &str = "therock-ci-artifacts";

fn run(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    run_tool(crate::common::tool("upload_package_repo"), args, env, cwd)
}

fn publish(kind: &str, run_id: &str, dir: &str, env: &[(&str, &str)], cwd: &Path) -> Output {
    run(
        &["--pkg-type", kind, "--run-id", run_id, "--package-dir", dir],
        env,
        cwd,
    )
}

/// Runs `program` with `args` in `cwd`, asserting success; its stdout.
fn tool(program: &str, args: &[&str], cwd: &Path) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .run_output()
        .unwrap_or_else(|e| panic!("{program} (installed by scripts/test-tools): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Builds `{name}_{version}_amd64.deb` in `dir` with `dpkg-deb`; its path.
pub(crate) fn build_deb(dir: &Path, name: &str, version: &str) -> PathBuf {
    build_deb_variant(dir, name, version, "")
}

/// [`build_deb`] with `note` in its payload: another package file of the same name.
fn build_deb_variant(dir: &Path, name: &str, version: &str, note: &str) -> PathBuf {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    write(
        &root.join(format!("opt/rocm/{name}/VERSION")),
        &format!("{name} {version}\n{note}"),
    );
    write(
        &root.join("DEBIAN/control"),
        &format!(
            "Package: {name}\nVersion: {version}\nArchitecture: amd64\nMaintainer: ROCm Test <rocm@example.com>\nSection: devel\nPriority: optional\nDepends: libc6\nHomepage: https://example.com\nDescription: Test package {name}\n Built by the tests.\n .\n Second paragraph.\n"
        ),
    );
    fs_err::create_dir_all(dir).unwrap();
    let deb = dir.join(format!("{name}_{version}_amd64.deb"));
    tool(
        "dpkg-deb",
        &[
            "--root-owner-group",
            "--build",
            root.to_str().unwrap(),
            deb.to_str().unwrap(),
        ],
        work.path(),
    );
    deb
}

/// Builds `{name}-{version}-1.x86_64.rpm` in `dir` with `rpmbuild`; its path.
pub(crate) fn build_rpm(dir: &Path, name: &str, version: &str) -> PathBuf {
    let work = tempfile::tempdir().unwrap();
    let spec = work.path().join("p.spec");
    write(
        &spec,
        &format!(
            "Name: {name}\nVersion: {version}\nRelease: 1\nSummary: Test package {name}\nLicense: MIT\nBuildArch: x86_64\nAutoReqProv: no\n%description\nBuilt by the tests.\n%install\nmkdir -p %{{buildroot}}/opt/rocm/{name}\necho {version} > %{{buildroot}}/opt/rocm/{name}/VERSION\n%files\n/opt/rocm/{name}/VERSION\n"
        ),
    );
    let top = work.path().join("top");
    tool(
        "rpmbuild",
        &[
            "--quiet",
            "--define",
            &format!("_topdir {}", top.display()),
            "--define",
            "_build_id_links none",
            "-bb",
            spec.to_str().unwrap(),
        ],
        work.path(),
    );
    let file = format!("{name}-{version}-1.x86_64.rpm");
    fs_err::create_dir_all(dir).unwrap();
    let dest = dir.join(&file);
    fs_err::copy(top.join("RPMS/x86_64").join(&file), &dest).unwrap();
    dest
}

/// A private apt set-up (sources, state, cache, no system configuration) for the repository
/// at `url`; runs `apt-get` with `args` in `{base}/dl`.
pub(crate) fn apt_get(base: &Path, url: &str, args: &[&str]) -> Output {
    for d in [
        "state/lists/partial",
        "cache/archives/partial",
        "etc/apt.conf.d",
        "etc/sources.list.d",
        "etc/preferences.d",
        "etc/trusted.gpg.d",
        "dl",
    ] {
        fs_err::create_dir_all(base.join(d)).unwrap();
    }
    write(&base.join("state/status"), "");
    write(
        &base.join("etc/sources.list"),
        &format!("deb [trusted=yes] {url} stable main\n"),
    );
    let b = base.display();
    write(
        &base.join("apt.conf"),
        &format!(
            "Dir::State \"{b}/state\";\nDir::State::status \"{b}/state/status\";\nDir::Cache \"{b}/cache\";\nDir::Etc \"{b}/etc\";\nDir::Etc::sourcelist \"{b}/etc/sources.list\";\nDir::Etc::sourceparts \"{b}/etc/sources.list.d\";\nDir::Etc::parts \"{b}/etc/apt.conf.d\";\nDir::Etc::preferencesparts \"{b}/etc/preferences.d\";\nDir::Etc::trustedparts \"{b}/etc/trusted.gpg.d\";\nDebug::NoLocking \"1\";\nAPT::Sandbox::User \"root\";\nAcquire::Languages \"none\";\nAPT::Architecture \"amd64\";\nAPT::Architectures {{ \"amd64\"; }};\n"
        ),
    );
    Command::new("apt-get")
        .args(["-q", "-o", "Debug::NoLocking=1"])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("APT_CONFIG", base.join("apt.conf"))
        .current_dir(base.join("dl"))
        .run_output()
        .unwrap()
}

fn assert_apt(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "apt-get {what}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Every index the stored `Release` lists has the size and SHA-256 it says, under its plain
/// name and under `by-hash/SHA256/`; the package count of `Packages`.
fn check_deb_consistent(repo: &Path) -> usize {
    let release = fs_err::read_to_string(repo.join("dists/stable/Release")).unwrap();
    let sha_lines: Vec<&str> = release
        .split("SHA256:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with(' '))
        .collect();
    assert_eq!(sha_lines.len(), 2, "{release}");
    for line in sha_lines {
        let [sha, size, name] = line.split_whitespace().collect::<Vec<_>>()[..] else {
            panic!("{line}")
        };
        let dir = repo.join("dists/stable");
        let plain = fs_err::read(dir.join(name)).unwrap();
        assert_eq!(sha256_hex(&plain), sha, "{name}");
        assert_eq!(plain.len().to_string(), size, "{name}");
        let parent = Path::new(name).parent().unwrap();
        let by_hash = fs_err::read(dir.join(parent).join("by-hash/SHA256").join(sha)).unwrap();
        assert_eq!(by_hash, plain, "{name}");
    }
    let packages =
        fs_err::read_to_string(repo.join("dists/stable/main/binary-amd64/Packages")).unwrap();
    packages.matches("\nFilename: ").count()
}

/// The stanzas `dpkg-scanpackages -m` writes for the packages of `pool/main` in `dir`, keyed by
/// their `Filename`.
fn dpkg_scanpackages(dir: &Path) -> Vec<(String, String)> {
    let scanned = tool("dpkg-scanpackages", &["-m", "pool/main", "/dev/null"], dir);
    let mut stanzas: Vec<(String, String)> = scanned
        .split("\n\n")
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let file = s
                .lines()
                .find_map(|l| l.strip_prefix("Filename: "))
                .unwrap()
                .to_owned();
            (file, s.trim_end().to_owned())
        })
        .collect();
    stanzas.sort();
    stanzas
}

/// The stanzas of a stored `Packages` file, keyed by their `Filename`.
fn stored_stanzas(repo: &Path) -> Vec<(String, String)> {
    let packages =
        fs_err::read_to_string(repo.join("dists/stable/main/binary-amd64/Packages")).unwrap();
    assert!(packages.ends_with("\n\n"), "{packages}");
    packages
        .split("\n\n")
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let file = s
                .lines()
                .find_map(|l| l.strip_prefix("Filename: "))
                .unwrap()
                .to_owned();
            (file, s.to_owned())
        })
        .collect()
}

/// deb on S3: keys, content types, outputs, summary; the index equals what
/// `dpkg-scanpackages` writes; apt-get updates from it over HTTP and downloads a package;
/// a second upload merges (both versions listed, either downloadable).
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one repository through two publications, each checked with apt"
)]
fn deb_repository_works_with_apt_and_merges() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    let pk = t.path().join("packages");
    build_deb(&pk, "amdrocm-foo", "1.0");
    build_deb(&pk, "amdrocm-bar", "2.0");
    write(&pk.join("logs/deb-amdrocm-foo.log"), "built foo\n");
    write(&pk.join("build_manifest.txt"), "local only\n");
    let outputs = t.path().join("outputs");
    let summary = t.path().join("summary.md");
    let aws = aws_env(&server);
    let mut env = borrowed(&aws);
    env.extend([
        ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ]);
    let out = publish("deb", "123", "packages", &env, t.path());
    assert_ok(&out);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Skipping build manifest file (local only): build_manifest.txt"));
    assert!(stdout.contains("No existing repository"), "{stdout}");
    // The packages were moved into the pool.
    assert!(pk.join("pool/main/amdrocm-foo_1.0_amd64.deb").is_file());
    assert!(!pk.join("amdrocm-foo_1.0_amd64.deb").exists());

    let prefix = "123-linux/packages/deb";
    let repo = server.root().join(BUCKET).join(prefix);
    let files = files_under(&repo);
    let by_hash: Vec<&String> = files.iter().filter(|f| f.contains("/by-hash/")).collect();
    assert_eq!(by_hash.len(), 2, "{files:?}");
    let rest: Vec<&String> = files.iter().filter(|f| !f.contains("/by-hash/")).collect();
    assert_eq!(
        rest,
        [
            "dists/stable/Release",
            "dists/stable/main/binary-amd64/Packages",
            "dists/stable/main/binary-amd64/Packages.gz",
            "logs/deb-amdrocm-foo.log",
            "pool/main/amdrocm-bar_2.0_amd64.deb",
            "pool/main/amdrocm-foo_1.0_amd64.deb",
        ]
    );
    assert!(
        server
            .root()
            .join(BUCKET)
            .join("123-linux/logs/packaging/deb/deb-amdrocm-foo.log")
            .is_file()
    );
    for (rel, content_type) in [
        (
            "pool/main/amdrocm-foo_1.0_amd64.deb",
            "application/octet-stream",
        ),
        ("dists/stable/Release", "application/octet-stream"),
        (
            "dists/stable/main/binary-amd64/Packages.gz",
            "application/gzip",
        ),
        ("logs/deb-amdrocm-foo.log", "text/plain"),
    ] {
        assert_eq!(
            server
                .content_type(BUCKET, &format!("{prefix}/{rel}"))
                .as_deref(),
            Some(content_type),
            "{rel}"
        );
    }
    assert_eq!(check_deb_consistent(&repo), 2);
    // The same stanzas as dpkg-scanpackages, in Filename order.
    assert_eq!(stored_stanzas(&repo), dpkg_scanpackages(&pk));
    let release = fs_err::read_to_string(repo.join("dists/stable/Release")).unwrap();
    assert!(
        release.starts_with("Origin: AMD ROCm\nLabel: ROCm ci Packages\nSuite: stable\nCodename: stable\nArchitectures: amd64\nComponents: main\nDescription: ROCm APT Repository\nDate: "),
        "{release}"
    );
    let url = format!("https://{BUCKET}.s3.amazonaws.com/{prefix}");
    let logs_url =
        format!("https://{BUCKET}.s3.amazonaws.com/123-linux/logs/packaging/deb/index.html");
    assert_eq!(
        fs_err::read_to_string(&outputs).unwrap(),
        format!("package_repository_url={url}\npackaging_logs_url={logs_url}\n")
    );
    let summary_text = fs_err::read_to_string(&summary).unwrap();
    assert!(summary_text.starts_with(&format!(
        "### DEB Package Build Results\n\n[Package Repository]({url})\n"
    )));
    assert!(summary_text.ends_with(&format!("```\n\n[Packaging Logs]({logs_url})\n\n\n")));

    // apt reads the repository over HTTP, by hash, and downloads a package that matches.
    let http = HttpServer::serve_dir(server.root().join(BUCKET));
    let repo_url = format!("{}/{prefix}", http.url());
    let apt = t.path().join("apt");
    assert_apt(&apt_get(&apt, &repo_url, &["update"]), "update");
    assert!(
        http.requests()
            .iter()
            .any(|r| r.path.contains("/by-hash/SHA256/")),
        "apt did not fetch by hash"
    );
    assert_apt(
        &apt_get(&apt, &repo_url, &["download", "amdrocm-foo"]),
        "download",
    );
    assert_eq!(
        fs_err::read(apt.join("dl/amdrocm-foo_1.0_amd64.deb")).unwrap(),
        fs_err::read(pk.join("pool/main/amdrocm-foo_1.0_amd64.deb")).unwrap()
    );

    // A second job publishes foo 2.0 into the same repository: all three are listed.
    let pk2 = t.path().join("second");
    build_deb(&pk2, "amdrocm-foo", "2.0");
    let out = publish("deb", "123", "second", &env, t.path());
    assert_ok(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("✅ Downloaded existing Packages file (2 packages)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("✅ Merged Packages files: 3 total packages"),
        "{stdout}"
    );
    assert_eq!(check_deb_consistent(&repo), 3);
    let stanzas = stored_stanzas(&repo);
    let names: Vec<&str> = stanzas.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        names,
        [
            "pool/main/amdrocm-bar_2.0_amd64.deb",
            "pool/main/amdrocm-foo_1.0_amd64.deb",
            "pool/main/amdrocm-foo_2.0_amd64.deb",
        ]
    );
    assert_apt(&apt_get(&apt, &repo_url, &["update"]), "update");
    assert_apt(
        &apt_get(&apt, &repo_url, &["download", "amdrocm-foo"]),
        "download",
    );
    assert!(apt.join("dl/amdrocm-foo_2.0_amd64.deb").is_file());
    assert_apt(
        &apt_get(&apt, &repo_url, &["download", "amdrocm-bar=2.0"]),
        "download bar",
    );

    // Published again unchanged: the packages are found with the same content and stay listed.
    let out = publish("deb", "123", "second", &env, t.path());
    assert_ok(&out);
    assert!(text(&out.stdout).contains("Skipping existing package: amdrocm-foo_2.0_amd64.deb"));
    assert_eq!(check_deb_consistent(&repo), 3);
}

/// A server with the bucket, a working directory, and the deb repository of run `run_id`
/// published from `one/` (`amdrocm-foo` 1.0).
struct Published {
    server: S3Server,
    t: tempfile::TempDir,
    aws: Vec<(&'static str, String)>,
    repo: PathBuf,
}

fn published_deb(run_id: &str) -> Published {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    build_deb(&t.path().join("one"), "amdrocm-foo", "1.0");
    let aws = aws_env(&server);
    assert_ok(&publish("deb", run_id, "one", &borrowed(&aws), t.path()));
    let repo = server
        .root()
        .join(BUCKET)
        .join(format!("{run_id}-linux/packages/deb"));
    Published {
        server,
        t,
        aws,
        repo,
    }
}

/// A run that fails half-way (the server refuses `Release`) leaves the published repository
/// as it was and usable; the next run lists the package the failed one uploaded.
#[test]
fn deb_failure_half_way_keeps_the_repository_consistent() {
    let Published {
        server,
        t,
        aws,
        repo,
    } = published_deb("7");
    let env = borrowed(&aws);
    let release_before = fs_err::read(repo.join("dists/stable/Release")).unwrap();

    build_deb(&t.path().join("two"), "amdrocm-new", "1.0");
    let (_proxy, faulty) = refusing_proxy(&server, "/dists/stable/Release");
    let out = publish("deb", "7", "two", &borrowed(&faulty), t.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("dists/stable/Release"), "{err}");
    // The package is uploaded, the index untouched and consistent.
    assert!(repo.join("pool/main/amdrocm-new_1.0_amd64.deb").is_file());
    assert_eq!(
        fs_err::read(repo.join("dists/stable/Release")).unwrap(),
        release_before
    );
    assert_eq!(check_deb_consistent(&repo), 1);
    let http = HttpServer::serve_dir(server.root().join(BUCKET));
    let url = format!("{}/7-linux/packages/deb", http.url());
    let apt = t.path().join("apt");
    assert_apt(&apt_get(&apt, &url, &["update"]), "update");
    assert!(
        !apt_get(&apt, &url, &["download", "amdrocm-new"])
            .status
            .success()
    );

    // Run again: the package is already there with the same content and now listed.
    let out = publish("deb", "7", "two", &env, t.path());
    assert_ok(&out);
    assert!(text(&out.stdout).contains("Skipping existing package: amdrocm-new_1.0_amd64.deb"));
    assert_eq!(check_deb_consistent(&repo), 2);
    assert_apt(&apt_get(&apt, &url, &["update"]), "update");
    assert_apt(
        &apt_get(&apt, &url, &["download", "amdrocm-new"]),
        "download",
    );
}

/// Another publisher replaces `Release` between this run's read and its write: the write is
/// refused, the merge is done again on top of the other one's index, and no package is lost.
#[test]
fn deb_concurrent_publishers_lose_nothing() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    build_deb(&t.path().join("base"), "amdrocm-base", "1.0");
    build_deb(&t.path().join("mine"), "amdrocm-mine", "1.0");
    build_deb(&t.path().join("theirs"), "amdrocm-theirs", "1.0");
    let aws = aws_env(&server);
    let direct: Vec<(&str, String)> = aws.clone();
    assert_ok(&publish("deb", "8", "base", &borrowed(&aws), t.path()));

    // The proxy holds this run's first write of `Release` until the other publisher, talking
    // to the server directly, has published.
    let other_ran = Arc::new(AtomicBool::new(false));
    let (flag, cwd) = (other_ran.clone(), t.path().to_path_buf());
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Status500)
                .method("PUT")
                .path_contains("/dists/stable/Release")
                .when(move |_| {
                    if !flag.swap(true, Ordering::SeqCst) {
                        let out = publish("deb", "8", "theirs", &borrowed(&direct), &cwd);
                        assert_ok(&out);
                    }
                    false
                }),
        ),
    );
    let env = through_proxy(&server, &proxy, None);
    let out = publish("deb", "8", "mine", &borrowed(&env), t.path());
    assert_ok(&out);
    assert!(other_ran.load(Ordering::SeqCst));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Another publisher replaced"), "{stdout}");
    let repo = server.root().join(BUCKET).join("8-linux/packages/deb");
    assert_eq!(check_deb_consistent(&repo), 3);
    let names: Vec<String> = stored_stanzas(&repo).into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        names,
        [
            "pool/main/amdrocm-base_1.0_amd64.deb",
            "pool/main/amdrocm-mine_1.0_amd64.deb",
            "pool/main/amdrocm-theirs_1.0_amd64.deb",
        ]
    );
}

/// An existing index that cannot be read is an error that changes nothing, never an empty
/// repository: a failing server, a `Packages` that does not match `Release`, and text that is
/// no index. Usage errors exit 2.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one table of failures on one published repository"
)]
fn unreadable_indexes_and_bad_input_are_errors() {
    let Published {
        server,
        t,
        aws,
        repo,
    } = published_deb("9");
    let env = borrowed(&aws);
    let release = fs_err::read(repo.join("dists/stable/Release")).unwrap();

    // The server fails every read of the index.
    build_deb(&t.path().join("two"), "amdrocm-bar", "1.0");
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Status500)
                .method("GET")
                .path_contains("/dists/"),
        ),
    );
    let faulty = through_proxy(&server, &proxy, Some(1));
    assert_fails_with(
        &publish("deb", "9", "two", &borrowed(&faulty), t.path()),
        1,
        "Failed to read `s3://therock-ci-artifacts/9-linux/packages/deb/dists/stable/Release`",
        "failing server",
    );
    assert_eq!(
        fs_err::read(repo.join("dists/stable/Release")).unwrap(),
        release
    );

    // The by-hash Packages is damaged: it no longer matches Release.
    let by_hash = files_under(&repo)
        .into_iter()
        .find(|f| f.contains("by-hash") && !f.ends_with("gz"))
        .unwrap();
    let listed =
        fs_err::read_to_string(repo.join("dists/stable/main/binary-amd64/Packages")).unwrap();
    let damaged: Vec<String> = files_under(&repo)
        .into_iter()
        .filter(|f| f.contains("by-hash"))
        .collect();
    for f in &damaged {
        let data = fs_err::read(repo.join(f)).unwrap();
        if data == listed.as_bytes() {
            fs_err::write(repo.join(f), listed.replace("1.0", "1.1")).unwrap();
        }
    }
    assert!(damaged.contains(&by_hash));
    assert_fails_with(
        &publish("deb", "9", "two", &env, t.path()),
        1,
        "does not match the SHA256 and size",
        "damaged index",
    );
    assert_eq!(
        fs_err::read(repo.join("dists/stable/Release")).unwrap(),
        release
    );

    // A fresh repository whose first publication left a Packages that is no index.
    let broken = server.root().join(BUCKET).join("10-linux/packages/deb");
    write(
        &broken.join("dists/stable/main/binary-amd64/Packages"),
        "Package: x\nVersion: 1\n",
    );
    assert_fails_with(
        &publish("deb", "10", "two", &env, t.path()),
        1,
        "a stanza without `Filename`",
        "no index",
    );
    assert!(!broken.join("dists/stable/Release").exists());

    // Usage and input errors.
    assert_fails_with(
        &run(
            &["--pkg-type", "zip", "--run-id", "1", "--package-dir", "."],
            &env,
            t.path(),
        ),
        2,
        "invalid value 'zip'",
        "pkg type",
    );
    assert_fails_with(
        &run(&["--pkg-type", "deb", "--run-id", "1"], &env, t.path()),
        2,
        "--package-dir",
        "required",
    );
    assert_fails_with(
        &publish("deb", "1", "nope", &env, t.path()),
        1,
        "Package directory not found: `nope`",
        "missing dir",
    );
    write(&t.path().join("bad/broken.deb"), "not a package");
    assert_fails_with(
        &publish("deb", "11", "bad", &env, t.path()),
        1,
        "not an ar archive",
        "bad deb",
    );
    assert!(
        !server
            .root()
            .join(BUCKET)
            .join("11-linux/packages/deb/dists")
            .exists()
    );
}

/// A private dnf set-up for the repository at `url`; runs dnf with `args`.
pub(crate) fn dnf(base: &Path, url: &str, args: &[&str]) -> Output {
    // A cache of its own per call: what dnf lists is what the repository holds now.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    fs_err::create_dir_all(base.join("root")).unwrap();
    write(
        &base.join("dnf.conf"),
        &format!(
            "[main]\nreposdir=/dev/null\ncachedir={}/cache-{call}\ngpgcheck=0\ninstall_weak_deps=0\n[therock]\nname=TheRock\nbaseurl={url}\nenabled=1\ngpgcheck=0\nmetadata_expire=0\n",
            base.display()
        ),
    );
    Command::new("dnf")
        .args(["-q", "-y", "-c"])
        .arg(base.join("dnf.conf"))
        .arg(format!("--installroot={}", base.join("root").display()))
        .args(["--releasever=1", "--setopt=reposdir=/dev/null"])
        .args(args)
        .current_dir(base)
        .env("HOME", base)
        .run_output()
        .unwrap()
}

/// rpm on S3: content-addressed repodata with `repomd.xml` last; dnf lists and downloads from
/// it over HTTP; a second upload merges, keeping every version; `createrepo_c --update` reads
/// the published repository back; a failed `repomd.xml` write leaves the old one usable.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one repository through four publications, each checked with dnf"
)]
fn rpm_repository_works_with_dnf_and_merges() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    build_rpm(&t.path().join("one"), "amdrocm-foo", "1.0");
    let aws = aws_env(&server);
    let env = borrowed(&aws);
    let out = publish("rpm", "55", "one", &env, t.path());
    assert_ok(&out);
    assert!(
        t.path()
            .join("one/x86_64/amdrocm-foo-1.0-1.x86_64.rpm")
            .is_file()
    );
    let repo = server
        .root()
        .join(BUCKET)
        .join("55-linux/packages/rpm/x86_64");
    let files = files_under(&repo);
    assert!(
        files.contains(&"amdrocm-foo-1.0-1.x86_64.rpm".to_owned()),
        "{files:?}"
    );
    assert!(
        files.contains(&"repodata/repomd.xml".to_owned()),
        "{files:?}"
    );
    let repomd = fs_err::read_to_string(repo.join("repodata/repomd.xml")).unwrap();
    for kind in ["primary", "filelists", "other"] {
        let listed = files
            .iter()
            .find(|f| f.ends_with(&format!("-{kind}.xml.gz")))
            .unwrap_or_else(|| panic!("{kind} in {files:?}"));
        let sha = listed
            .trim_start_matches("repodata/")
            .split('-')
            .next()
            .unwrap();
        assert_eq!(sha256_hex(&fs_err::read(repo.join(listed)).unwrap()), sha);
        assert!(repomd.contains(&format!("href=\"{listed}\"")), "{repomd}");
    }
    assert_eq!(
        server
            .content_type(BUCKET, "55-linux/packages/rpm/x86_64/repodata/repomd.xml")
            .as_deref(),
        Some("application/xml")
    );

    let http = HttpServer::serve_dir(server.root().join(BUCKET));
    let url = format!("{}/55-linux/packages/rpm/x86_64", http.url());
    let d = t.path().join("dnf");
    let listed = dnf(&d, &url, &["repoquery", "--available"]);
    assert_eq!(
        text(&listed.stdout),
        "amdrocm-foo-0:1.0-1.x86_64\n",
        "{}",
        text(&listed.stderr)
    );

    // Second upload: 2.0 and another package; every version stays listed.
    build_rpm(&t.path().join("two"), "amdrocm-foo", "2.0");
    build_rpm(&t.path().join("two"), "amdrocm-bar", "1.0");
    let out = publish("rpm", "55", "two", &env, t.path());
    assert_ok(&out);
    assert!(text(&out.stdout).contains("Merging old and new repository metadata"));
    let listed = dnf(&d, &url, &["repoquery", "--available"]);
    assert_eq!(
        text(&listed.stdout),
        "amdrocm-bar-0:1.0-1.x86_64\namdrocm-foo-0:1.0-1.x86_64\namdrocm-foo-0:2.0-1.x86_64\n",
        "{}",
        text(&listed.stderr)
    );
    let dl = d.join("dl");
    let got = dnf(
        &d,
        &url,
        &[
            "install",
            "--downloadonly",
            &format!("--downloaddir={}", dl.display()),
            "amdrocm-foo-1.0",
        ],
    );
    assert!(got.status.success(), "{}", text(&got.stderr));
    assert_eq!(
        fs_err::read(dl.join("amdrocm-foo-1.0-1.x86_64.rpm")).unwrap(),
        fs_err::read(repo.join("amdrocm-foo-1.0-1.x86_64.rpm")).unwrap()
    );

    // createrepo_c reads the published metadata back and keeps all three packages.
    let copy = t.path().join("readback");
    tool(
        "cp",
        &["-r", repo.to_str().unwrap(), copy.to_str().unwrap()],
        t.path(),
    );
    tool("createrepo_c", &["--update", "--no-database", "."], &copy);
    // The primary metadata its new repomd.xml lists (older files stay beside it).
    let repomd = fs_err::read_to_string(copy.join("repodata/repomd.xml")).unwrap();
    let primary = repomd
        .split("href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .find(|href| href.ends_with("-primary.xml.gz"))
        .unwrap();
    let xml = tool("zcat", &[copy.join(primary).to_str().unwrap()], &copy);
    assert!(xml.contains("packages=\"3\""), "{xml}");

    // A failure at repomd.xml leaves the published repository as it was.
    build_rpm(&t.path().join("three"), "amdrocm-baz", "1.0");
    let before = fs_err::read(repo.join("repodata/repomd.xml")).unwrap();
    let (_proxy, faulty) = refusing_proxy(&server, "repomd.xml");
    let out = publish("rpm", "55", "three", &borrowed(&faulty), t.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        fs_err::read(repo.join("repodata/repomd.xml")).unwrap(),
        before
    );
    let listed = dnf(&d, &url, &["repoquery", "--available"]);
    assert_eq!(
        text(&listed.stdout).lines().count(),
        3,
        "{}",
        text(&listed.stderr)
    );
    assert_ok(&publish("rpm", "55", "three", &env, t.path()));
    let listed = dnf(&d, &url, &["repoquery", "--available"]);
    assert_eq!(
        text(&listed.stdout).lines().count(),
        4,
        "{}",
        text(&listed.stderr)
    );
}

/// The write requests a [`recording_proxy`] saw, as `{method} {path}`.
type Writes = Arc<Mutex<Vec<String>>>;

/// A proxy in front of `server` that records every request that writes (any method but `GET`
/// and `HEAD`) and changes nothing; the environment pointing a tool at it.
fn recording_proxy(server: &S3Server) -> (FaultProxy, Writes, Vec<(&'static str, String)>) {
    let writes = Arc::new(Mutex::new(Vec::new()));
    let seen = writes.clone();
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().rule(Rule::new(Fault::Status500).when(move |head| {
            if head.method != "GET" && head.method != "HEAD" {
                seen.lock()
                    .unwrap()
                    .push(format!("{} {}", head.method, head.path));
            }
            false
        })),
    );
    let env = through_proxy(server, &proxy, None);
    (proxy, writes, env)
}

/// A package that cannot be read, or whose control data lacks a version, fails the run before
/// anything is uploaded, naming the file.
#[test]
fn deb_unreadable_package_uploads_nothing() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    let aws = aws_env(&server);
    let env = borrowed(&aws);
    let pk = t.path().join("packages");
    build_deb(&pk, "amdrocm-foo", "1.0");
    build_deb(&pk, "amdrocm-bar", "1.0");
    write(&pk.join("amdrocm-baz_1.0_amd64.deb"), "not a package");
    write(&pk.join("logs/deb-amdrocm-foo.log"), "built foo\n");
    assert_fails_with(
        &publish("deb", "20", "packages", &env, t.path()),
        1,
        "amdrocm-baz_1.0_amd64.deb",
        "unreadable deb",
    );
    assert_eq!(
        files_under(&server.root().join(BUCKET)),
        Vec::<String>::new()
    );

    // A package dpkg-deb builds without its checks: no `Version`.
    let work = t.path().join("noversion");
    write(
        &work.join("root/DEBIAN/control"),
        "Package: amdrocm-nover\nArchitecture: amd64\nMaintainer: ROCm Test <rocm@example.com>\nDescription: no version\n",
    );
    let bad = t.path().join("second/amdrocm-nover_1.0_amd64.deb");
    fs_err::create_dir_all(bad.parent().unwrap()).unwrap();
    build_deb(&t.path().join("second"), "amdrocm-ok", "1.0");
    tool(
        "dpkg-deb",
        &[
            "--nocheck",
            "--root-owner-group",
            "--build",
            work.join("root").to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
        &work,
    );
    let out = publish("deb", "20", "second", &env, t.path());
    assert_fails_with(&out, 1, "amdrocm-nover_1.0_amd64.deb", "no version");
    assert!(
        text(&out.stderr).contains("`Version`"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        files_under(&server.root().join(BUCKET)),
        Vec::<String>::new()
    );
}

/// Whatever an earlier failed run left, a run with the right packages publishes a correct
/// repository: a published package file that no index lists (a broken upload, one without a
/// recorded SHA-256, one of a run stopped before `Release`) is replaced and listed; a
/// `Release` published without the plain `Packages` gets them on the next run; a package that
/// the index lists stays as it is.
#[test]
fn deb_rerun_repairs_what_a_failed_run_left() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    let aws = aws_env(&server);
    let env = borrowed(&aws);
    let repo = server.root().join(BUCKET).join("21-linux/packages/deb");
    let http = HttpServer::serve_dir(server.root().join(BUCKET));
    let url = format!("{}/21-linux/packages/deb", http.url());
    let apt = t.path().join("apt");

    // An earlier run uploaded a broken foo and bar (no recorded SHA-256), then failed: no index.
    let pk = t.path().join("packages");
    let foo = sha256_hex(&fs_err::read(build_deb(&pk, "amdrocm-foo", "1.0")).unwrap());
    let bar = build_deb(&pk, "amdrocm-bar", "1.0");
    write(
        &repo.join("pool/main/amdrocm-foo_1.0_amd64.deb"),
        "not a package",
    );
    fs_err::copy(&bar, repo.join("pool/main/amdrocm-bar_1.0_amd64.deb")).unwrap();
    let out = publish("deb", "21", "packages", &env, t.path());
    assert_ok(&out);
    assert!(
        text(&out.stdout).contains("no published index lists it"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(check_deb_consistent(&repo), 2);
    assert_eq!(
        sha256_hex(&fs_err::read(repo.join("pool/main/amdrocm-foo_1.0_amd64.deb")).unwrap()),
        foo
    );
    assert_apt(&apt_get(&apt, &url, &["update"]), "update");
    assert_apt(
        &apt_get(&apt, &url, &["download", "amdrocm-foo"]),
        "download",
    );
    assert_eq!(
        sha256_hex(&fs_err::read(apt.join("dl/amdrocm-foo_1.0_amd64.deb")).unwrap()),
        foo
    );

    // A run stopped before `Release` uploaded one build of baz; the next run has another.
    build_deb_variant(&t.path().join("a"), "amdrocm-baz", "1.0", "a");
    let (_proxy, faulty) = refusing_proxy(&server, "/dists/stable/Release");
    let out = publish("deb", "21", "a", &borrowed(&faulty), t.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let baz = sha256_hex(
        &fs_err::read(build_deb_variant(
            &t.path().join("b"),
            "amdrocm-baz",
            "1.0",
            "b",
        ))
        .unwrap(),
    );
    assert_ok(&publish("deb", "21", "b", &env, t.path()));
    assert_eq!(check_deb_consistent(&repo), 3);
    assert_eq!(
        sha256_hex(&fs_err::read(repo.join("pool/main/amdrocm-baz_1.0_amd64.deb")).unwrap()),
        baz
    );
    assert_apt(&apt_get(&apt, &url, &["update"]), "update");
    assert_apt(
        &apt_get(&apt, &url, &["download", "amdrocm-baz"]),
        "download",
    );
    assert_eq!(
        sha256_hex(&fs_err::read(apt.join("dl/amdrocm-baz_1.0_amd64.deb")).unwrap()),
        baz
    );

    // A third build of baz: the listed one stays, with its entry.
    build_deb_variant(&t.path().join("c"), "amdrocm-baz", "1.0", "c");
    let out = publish("deb", "21", "c", &env, t.path());
    assert_ok(&out);
    assert!(
        text(&out.stdout).contains("it is kept"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        sha256_hex(&fs_err::read(repo.join("pool/main/amdrocm-baz_1.0_amd64.deb")).unwrap()),
        baz
    );
    assert_eq!(check_deb_consistent(&repo), 3);

    // `Release` published, the plain `Packages` and `Packages.gz` refused: the rerun has
    // nothing new to list and writes them.
    build_deb(&t.path().join("d"), "amdrocm-qux", "1.0");
    let (_proxy, faulty) = refusing_proxy(&server, "/binary-amd64/Packages");
    let out = publish("deb", "21", "d", &borrowed(&faulty), t.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let release = sha256_hex(&fs_err::read(repo.join("dists/stable/Release")).unwrap());
    let out = publish("deb", "21", "d", &env, t.path());
    assert_ok(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("The published metadata is left as it is")
            && stdout.contains("binary-amd64/Packages.gz (it was not the file `Release` lists)"),
        "{stdout}"
    );
    assert_eq!(check_deb_consistent(&repo), 4);
    assert_eq!(
        sha256_hex(&fs_err::read(repo.join("dists/stable/Release")).unwrap()),
        release
    );
}

/// An `.rpm` that `createrepo_c` cannot read, or a package directory without packages, fails
/// the run, naming the file or directory, with nothing published.
#[test]
fn unreadable_rpm_or_no_package_publishes_nothing() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    let aws = aws_env(&server);
    let env = borrowed(&aws);
    let pk = t.path().join("packages");
    build_rpm(&pk, "amdrocm-foo", "1.0");
    write(&pk.join("amdrocm-bad-1.0-1.x86_64.rpm"), "not a package");
    assert_fails_with(
        &publish("rpm", "30", "packages", &env, t.path()),
        1,
        "amdrocm-bad-1.0-1.x86_64.rpm",
        "unreadable rpm",
    );
    assert_eq!(
        files_under(&server.root().join(BUCKET)),
        Vec::<String>::new()
    );

    write(&t.path().join("empty/logs/rpm-none.log"), "nothing built\n");
    for kind in ["rpm", "deb"] {
        assert_fails_with(
            &publish(kind, "31", "empty", &env, t.path()),
            1,
            &format!("No `.{kind}` package to publish in `"),
            kind,
        );
    }
    assert_eq!(
        files_under(&server.root().join(BUCKET)),
        Vec::<String>::new()
    );
}

/// A published package file that no index lists (an earlier failed run's) is replaced and
/// listed.
#[test]
fn rpm_rerun_replaces_an_unlisted_package() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    let aws = aws_env(&server);
    let repo = server
        .root()
        .join(BUCKET)
        .join("32-linux/packages/rpm/x86_64");
    let foo =
        sha256_hex(&fs_err::read(build_rpm(&t.path().join("one"), "amdrocm-foo", "1.0")).unwrap());
    write(&repo.join("amdrocm-foo-1.0-1.x86_64.rpm"), "not a package");
    assert_ok(&publish("rpm", "32", "one", &borrowed(&aws), t.path()));
    assert_eq!(
        sha256_hex(&fs_err::read(repo.join("amdrocm-foo-1.0-1.x86_64.rpm")).unwrap()),
        foo
    );
    let http = HttpServer::serve_dir(server.root().join(BUCKET));
    let url = format!("{}/32-linux/packages/rpm/x86_64", http.url());
    let listed = dnf(&t.path().join("dnf"), &url, &["repoquery", "--available"]);
    assert_eq!(
        text(&listed.stdout),
        "amdrocm-foo-0:1.0-1.x86_64\n",
        "{}",
        text(&listed.stderr)
    );
}

/// Publishing the same packages again writes no object at all (deb and rpm, logs included).
#[test]
fn identical_rerun_writes_nothing() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    let aws = aws_env(&server);
    for kind in ["deb", "rpm"] {
        let pk = t.path().join(kind);
        if kind == "deb" {
            build_deb(&pk, "amdrocm-foo", "1.0");
        } else {
            build_rpm(&pk, "amdrocm-foo", "1.0");
        }
        write(&pk.join(format!("logs/{kind}-amdrocm-foo.log")), "built\n");
        assert_ok(&publish(kind, "40", kind, &borrowed(&aws), t.path()));
        let before = tree_snapshot(server.root());
        let (_proxy, writes, env) = recording_proxy(&server);
        let out = publish(kind, "40", kind, &borrowed(&env), t.path());
        assert_ok(&out);
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("Uploaded: 0, Skipped: 2")
                && stdout.contains("The published metadata is left as it is"),
            "{stdout}"
        );
        assert_eq!(
            writes.lock().unwrap().clone(),
            Vec::<String>::new(),
            "{kind}"
        );
        assert_eq!(tree_snapshot(server.root()), before, "{kind}");
    }
}

/// Another publisher replaces a package of this run (same name, another build) after this run
/// uploaded it and before its index lists it: this run stops before writing `Release`, and
/// the repository lists the file that is there, with its checksums.
#[test]
fn deb_package_replaced_meanwhile_is_not_listed() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let t = tempfile::tempdir().unwrap();
    build_deb_variant(&t.path().join("mine"), "amdrocm-foo", "1.0", "mine");
    let theirs = sha256_hex(
        &fs_err::read(build_deb_variant(
            &t.path().join("theirs"),
            "amdrocm-foo",
            "1.0",
            "theirs",
        ))
        .unwrap(),
    );
    let direct = aws_env(&server);
    // The other publisher runs when this run writes its first index file.
    let other_ran = Arc::new(AtomicBool::new(false));
    let (flag, cwd) = (other_ran.clone(), t.path().to_path_buf());
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Status500)
                .method("PUT")
                .path_contains("/by-hash/")
                .when(move |_| {
                    if !flag.swap(true, Ordering::SeqCst) {
                        assert_ok(&publish("deb", "50", "theirs", &borrowed(&direct), &cwd));
                    }
                    false
                }),
        ),
    );
    let env = through_proxy(&server, &proxy, None);
    assert_fails_with(
        &publish("deb", "50", "mine", &borrowed(&env), t.path()),
        1,
        "is no longer the file this run uploaded",
        "replaced meanwhile",
    );
    assert!(other_ran.load(Ordering::SeqCst));
    let repo = server.root().join(BUCKET).join("50-linux/packages/deb");
    assert_eq!(check_deb_consistent(&repo), 1);
    let file = sha256_hex(&fs_err::read(repo.join("pool/main/amdrocm-foo_1.0_amd64.deb")).unwrap());
    assert_eq!(file, theirs);
    let stanzas = stored_stanzas(&repo);
    assert!(
        stanzas[0].1.contains(&format!("SHA256: {theirs}")),
        "{stanzas:?}"
    );
}
