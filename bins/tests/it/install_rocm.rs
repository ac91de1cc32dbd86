//! `install_rocm_from_artifacts`: run mode on the streamed, flattened fetch; release and
//! latest-nightly tarballs from a bucket; `--input-dir`; and the old tree surviving every
//! failure and a kill.

use crate::common::Launch as _;
#[cfg(unix)]
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use artifacts::Compression;
use rock_ci_test_support::{
    Fault, FaultPlan, FaultProxy, HttpServer, Reply, Rule, S3Server, S3ServerOptions,
    assert_fails_with, sha256_hex, tree_snapshot, write_artifact,
};

use crate::common::HOST_PLATFORM;

const ZSTD: Compression = Compression::Zstd { level: 3 };
/// The nightly tarball of the tests, of the host's platform (the tool's default).
const ASSET: &str = if cfg!(windows) {
    "therock-dist-windows-gfx94X-dcgpu-7.15.0a20260722.tar.gz"
} else {
    "therock-dist-linux-gfx94X-dcgpu-7.15.0a20260722.tar.gz"
};
/// The platform that is not the host's.
const OTHER_PLATFORM: &str = if cfg!(windows) { "linux" } else { "windows" };

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The names in `dir` that an install leaves beside its output while it runs.
fn leftovers(dir: &Path) -> Vec<String> {
    fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".install-"))
        .collect()
}

/// An output directory holding an earlier install.
fn old_tree(work: &Path) -> PathBuf {
    let out = work.join("rocm");
    fs_err::create_dir_all(out.join("lib")).unwrap();
    fs_err::write(out.join("lib/old.so"), "old").unwrap();
    out
}

struct RunFixture {
    server: S3Server,
    github_url: String,
    _github: HttpServer,
    work: tempfile::TempDir,
}

/// Run 555 of `ROCm/TheRock` in `therock-ci-artifacts`; `bad_sidecar` gives `blas_lib` a
/// sidecar that does not match.
fn run_fixture(bad_sidecar: bool) -> RunFixture {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let dir = server
        .root()
        .join(format!("therock-ci-artifacts/555-{HOST_PLATFORM}"));
    type Artifact<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let artifacts: &[Artifact<'_>] = &[
        (
            "base_lib_generic.tar.zst",
            "base/stage",
            &[("lib/libbase.so", "base"), ("share/README", "readme")],
        ),
        (
            "amd-llvm_lib_generic.tar.zst",
            "compiler/amd-llvm/stage",
            &[("lib/llvm/bin/clang", "clang")],
        ),
        (
            "blas_lib_gfx94X-dcgpu.tar.zst",
            "math-libs/BLAS/stage",
            &[("lib/librocblas.so", "blas-family")],
        ),
        (
            "blas_lib_gfx942.tar.zst",
            "math-libs/BLAS/stage",
            &[("lib/rocblas/library/gfx942.dat", "kernels")],
        ),
        (
            "blas_test_gfx94X-dcgpu.tar.zst",
            "math-libs/BLAS/stage",
            &[("bin/rocblas-test", "test")],
        ),
        (
            "rand_lib_gfx94X-dcgpu.tar.zst",
            "math-libs/rand/stage",
            &[("lib/librocrand.so", "rand")],
        ),
        (
            "blas_lib_gfx1100.tar.zst",
            "math-libs/BLAS/stage",
            &[("lib/rocblas/library/gfx1100.dat", "other family")],
        ),
    ];
    for (name, stage, files) in artifacts {
        let path = dir.join(name);
        write_artifact(&path, ZSTD, stage, files);
        let sha = if bad_sidecar && name.starts_with("blas_lib_gfx94X") {
            "0".repeat(64)
        } else {
            sha256_hex(&fs_err::read(&path).unwrap())
        };
        fs_err::write(
            dir.join(format!("{name}.sha256sum")),
            format!("{sha}  {name}\n"),
        )
        .unwrap();
    }
    let github = HttpServer::start(|_| {
        Reply::json(
            200,
            r#"{"id": 555, "head_repository": {"full_name": "ROCm/TheRock"}}"#,
        )
    });
    RunFixture {
        github_url: github.url(),
        _github: github,
        server,
        work: tempfile::tempdir().unwrap(),
    }
}

/// The family table of a checkout: gfx94X-dcgpu holds gfx942.
fn checkout(work: &Path) -> PathBuf {
    let root = work.join("therock");
    fs_err::create_dir_all(root.join("cmake")).unwrap();
    fs_err::write(
        root.join("cmake/therock_amdgpu_targets.cmake"),
        "therock_add_amdgpu_target(gfx942 \"MI300\" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)\n\
         therock_add_amdgpu_target(gfx1100 \"RX 7900\" FAMILY gfx110X-all)\n",
    )
    .unwrap();
    root
}

impl RunFixture {
    fn install(&self, args: &[&str]) -> Output {
        self.install_group("gfx94X-dcgpu", args)
    }

    fn install_group(&self, group: &str, args: &[&str]) -> Output {
        Command::new(crate::common::tool("install_rocm_from_artifacts"))
            .args(["--run-id", "555", "--artifact-group", group])
            .args(args)
            .env_clear()
            .env("GITHUB_API_URL", &self.github_url)
            .env("THEROCK_DIR", checkout(self.work.path()))
            .envs(self.server.aws_env())
            .current_dir(self.work.path())
            .run_output()
            .unwrap()
    }
}

/// A build variant's group (`{family}-asan`) derives its family's targets, so the per-target
/// shards come too; a group that is no family is refused instead of skipping them silently.
#[test]
fn variant_groups_fetch_their_per_target_shards() {
    let f = run_fixture(false);
    let run = f
        .server
        .root()
        .join(format!("therock-ci-artifacts/555-{HOST_PLATFORM}"));
    let variant = "blas_lib_gfx94X-dcgpu-asan.tar.zst";
    fs_err::copy(run.join("blas_lib_gfx94X-dcgpu.tar.zst"), run.join(variant)).unwrap();
    // The copy has no sidecar and no recorded SHA-256: refused, named, nothing installed.
    let out = f.install_group("gfx94X-dcgpu-asan", &["--output-dir", "rocm", "--blas"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains(&format!("{variant}` cannot be verified")),
        "{}",
        text(&out.stderr)
    );
    assert!(!f.work.path().join("rocm/lib").exists());
    let stdout = ok(&f.install_group(
        "gfx94X-dcgpu-asan",
        &["--output-dir", "rocm", "--blas", "--allow-unverified"],
    ));
    assert!(
        stdout.contains(
            "Auto-deriving --amdgpu-targets from family 'gfx94X-dcgpu' of variant group \
             'gfx94X-dcgpu-asan': gfx942"
        ),
        "{stdout}"
    );
    let out = f.work.path().join("rocm");
    assert!(out.join("lib/librocblas.so").is_file(), "{stdout}");
    assert_eq!(
        fs_err::read_to_string(out.join("lib/rocblas/library/gfx942.dat")).unwrap(),
        "kernels"
    );

    // A group the family table does not know is a usage error naming the known families,
    // before anything is fetched or touched; with --amdgpu-targets no family is needed.
    let unknown = f.install_group("gfx0000", &["--output-dir", "rocm", "--blas"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown.stderr));
    let stderr = text(&unknown.stderr);
    assert!(
        stderr.contains("'gfx0000' is not a GPU family") && stderr.contains("gfx94X-dcgpu"),
        "{stderr}"
    );
    assert!(
        !text(&unknown.stdout).contains("Retrieving"),
        "{}",
        text(&unknown.stdout)
    );
    assert!(out.join("lib/librocblas.so").is_file());
    let stdout = ok(&f.install_group(
        "gfx0000",
        &[
            "--output-dir",
            "rocm2",
            "--blas",
            "--amdgpu-targets",
            "gfx942",
            "--allow-unverified",
        ],
    ));
    assert!(stdout.contains("--amdgpu-targets gfx942"), "{stdout}");
}

#[test]
fn run_mode_flattens_the_selected_artifacts_and_replaces_the_old_tree() {
    let f = run_fixture(false);
    let out = old_tree(f.work.path());
    let stdout = ok(&f.install(&["--output-dir", "rocm", "--blas"]));
    assert!(
        stdout.contains("Auto-deriving --amdgpu-targets from family 'gfx94X-dcgpu': gfx942"),
        "{stdout}"
    );
    assert!(
        stdout.contains("--flatten --amdgpu-targets gfx942 core-hipinfo_run"),
        "{stdout}"
    );
    assert!(stdout.contains("already exists, replacing"), "{stdout}");
    let files: Vec<String> = tree_snapshot(&out).into_iter().map(|(p, _)| p).collect();
    // Base and blas libraries of the family and of gfx942 (the derived target); no tests,
    // no rand, nothing of another family, nothing of the old tree.
    assert_eq!(
        files,
        [
            "lib",
            "lib/libbase.so",
            "lib/librocblas.so",
            "lib/llvm",
            "lib/llvm/bin",
            "lib/llvm/bin/clang",
            "lib/rocblas",
            "lib/rocblas/library",
            "lib/rocblas/library/gfx942.dat",
            "share",
            "share/README",
        ]
    );
    assert_eq!(
        fs_err::read_to_string(out.join("lib/librocblas.so")).unwrap(),
        "blas-family"
    );
    assert!(leftovers(f.work.path()).is_empty());

    // `--tests` alone: every artifact of the group and its targets, tests included.
    let stdout = ok(&f.install(&["--output-dir", "rocm", "--tests"]));
    assert!(stdout.contains("Fetched 6 of 6 artifacts"), "{stdout}");
    assert!(out.join("bin/rocblas-test").is_file());
    assert!(out.join("lib/librocrand.so").is_file());
    // `--base-only` wins over component flags.
    ok(&f.install(&["--output-dir", "rocm", "--base-only", "--blas"]));
    let files: Vec<String> = tree_snapshot(&out).into_iter().map(|(p, _)| p).collect();
    assert!(files.contains(&"lib/libbase.so".to_owned()));
    assert!(!files.iter().any(|p| p.contains("rocblas")), "{files:?}");
}

#[test]
fn a_failed_run_install_leaves_the_old_tree_untouched() {
    let f = run_fixture(true);
    let out = old_tree(f.work.path());
    let before = tree_snapshot(&out);
    let result = f.install(&["--output-dir", "rocm", "--blas"]);
    assert_fails_with(&result, 1, "blas_lib_gfx94X-dcgpu.tar.zst", "bad sidecar");
    assert_eq!(tree_snapshot(&out), before);
    assert!(leftovers(f.work.path()).is_empty());
    // A run without artifacts: nothing touched either.
    let result = f.install(&["--output-dir", "rocm", "--run-id", "556"]);
    assert_eq!(result.status.code(), Some(1));
    assert_eq!(tree_snapshot(&out), before);
}

#[test]
fn dry_run_lists_and_touches_nothing() {
    let f = run_fixture(false);
    let stdout = ok(&f.install(&["--output-dir", "rocm", "--blas", "--dry-run"]));
    assert!(
        stdout.contains("--run-id 555 --artifact-group gfx94X-dcgpu --output-dir rocm --flatten --amdgpu-targets gfx942 --dry-run core-hipinfo_run"),
        "{stdout}"
    );
    assert!(stdout.contains("blas_lib_gfx942.tar.zst"), "{stdout}");
    assert!(!f.work.path().join("rocm").exists());
    // The output directory as Python's pathlib shows it: the default `./therock-build` is
    // `therock-build`, `./a//b/` is `a/b` (`a\b` on Windows).
    for (given, shown) in [(None, "therock-build"), (Some("./a//b/"), "a/b")] {
        let mut args = vec!["--dry-run"];
        args.extend(given.iter().flat_map(|g| ["--output-dir", g]));
        let stdout = ok(&f.install(&args));
        assert!(
            stdout.contains(&format!(
                " --output-dir {} --flatten ",
                crate::common::native(shown)
            )),
            "{stdout}"
        );
    }
}

/// A gzip-compressed tarball of a small ROCm tree: a library, an executable, a symlink.
fn tarball(extra: usize) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let mut add = |path: &str, data: &[u8], mode: u32| {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(mode);
        h.set_mtime(1_700_000_000);
        h.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut h, path, data).unwrap();
    };
    add("lib/libamdhip64.so.7", b"hip", 0o755);
    add("bin/hipcc", b"#!/bin/sh\n", 0o755);
    // Incompressible bulk, so the download takes a while when throttled.
    let bulk: Vec<u8> = (0..extra)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
        .collect();
    add("share/bulk.bin", &bulk, 0o644);
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    h.set_mode(0o777);
    builder
        .append_link(&mut h, "lib/libamdhip64.so", "libamdhip64.so.7")
        .unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

struct ReleaseFixture {
    server: S3Server,
    work: tempfile::TempDir,
}

/// Public tarball buckets (unsigned reads) holding `ASSET` and other nightlies.
fn release_fixture() -> ReleaseFixture {
    let server = S3Server::start_with(S3ServerOptions {
        anonymous: true,
        ..S3ServerOptions::default()
    });
    for bucket in ["therock-nightly-tarball", "therock-dev-tarball"] {
        server.create_bucket(bucket);
    }
    let dir = server.root().join("therock-nightly-tarball/v4/tarball");
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join(ASSET), tarball(1000)).unwrap();
    for other in [
        format!("therock-dist-{HOST_PLATFORM}-gfx94X-dcgpu-tests-7.15.0a20260723.tar.gz"),
        format!("therock-dist-{HOST_PLATFORM}-gfx94X-dcgpu-7.15.0a20260612.tar.gz"),
        format!("therock-dist-{HOST_PLATFORM}-gfx110X-all-7.15.0a20260723.tar.gz"),
        format!("therock-dist-{OTHER_PLATFORM}-gfx94X-dcgpu-7.15.0a20260801.tar.gz"),
    ] {
        fs_err::write(dir.join(other), tarball(10)).unwrap();
    }
    ReleaseFixture {
        server,
        work: tempfile::tempdir().unwrap(),
    }
}

fn release_command(endpoint: &str, work: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(crate::common::tool("install_rocm_from_artifacts"));
    command
        .args(["--artifact-group", "gfx94X-dcgpu", "--output-dir", "rocm"])
        .args(args)
        .env_clear()
        .env("AWS_ENDPOINT_URL", endpoint)
        .current_dir(work);
    command
}

impl ReleaseFixture {
    fn install(&self, args: &[&str]) -> Output {
        release_command(&self.server.endpoint(), self.work.path(), args)
            .run_output()
            .unwrap()
    }

    fn object(&self, name: &str) -> PathBuf {
        self.server
            .root()
            .join("therock-nightly-tarball/v4/tarball")
            .join(name)
    }
}

#[test]
fn release_mode_streams_verifies_and_unpacks() {
    let f = release_fixture();
    let out = old_tree(f.work.path());
    let stdout = ok(&f.install(&["--release", "7.15.0a20260722"]));
    assert!(
        stdout.contains(
            "Retrieving nightly multi-arch artifacts from s3://therock-nightly-tarball/v4/tarball/"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "Extracted 3 files from {ASSET} (md5 verified against the ETag)"
        )),
        "{stdout}"
    );
    let tree = tree_snapshot(&out);
    let names: Vec<&str> = tree.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "bin",
            "bin/hipcc",
            "lib",
            "lib/libamdhip64.so",
            "lib/libamdhip64.so.7",
            "share",
            "share/bulk.bin"
        ]
    );
    let link = out.join("lib/libamdhip64.so");
    if cfg!(windows) && !fs_err::symlink_metadata(&link).unwrap().is_symlink() {
        // Where Windows refuses to make the link, its target is copied in its place.
        assert_eq!(
            fs_err::read(&link).unwrap(),
            fs_err::read(out.join("lib/libamdhip64.so.7")).unwrap()
        );
    } else {
        assert_eq!(
            fs_err::read_link(&link).unwrap(),
            Path::new("libamdhip64.so.7")
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs_err::metadata(out.join("bin/hipcc"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111);
    }
    // No tarball left behind, nothing beside the output.
    assert!(!out.join(ASSET).exists());
    assert!(leftovers(f.work.path()).is_empty());

    // A sidecar wins over the ETag; a wrong one fails the install and keeps the tree.
    let sidecar = f.object(&format!("{ASSET}.sha256sum"));
    let sha = sha256_hex(&fs_err::read(f.object(ASSET)).unwrap());
    fs_err::write(&sidecar, format!("{sha}  {ASSET}\n")).unwrap();
    let stdout = ok(&f.install(&["--release", "7.15.0a20260722"]));
    assert!(stdout.contains("(sha256 verified)"), "{stdout}");
    let before = tree_snapshot(&out);
    fs_err::write(&sidecar, format!("{}  {ASSET}\n", "1".repeat(64))).unwrap();
    let result = f.install(&["--release", "7.15.0a20260722"]);
    assert_fails_with(&result, 1, "SHA-256 mismatch", "wrong sidecar");
    assert_eq!(tree_snapshot(&out), before);
    assert!(leftovers(f.work.path()).is_empty());
    fs_err::remove_file(&sidecar).unwrap();

    // A truncated tarball (stored that way, so its ETag matches): the gzip stream ends early.
    let whole = fs_err::read(f.object(ASSET)).unwrap();
    fs_err::write(f.object(ASSET), &whole[..whole.len() - 30]).unwrap();
    let result = f.install(&["--release", "7.15.0a20260722"]);
    assert_eq!(result.status.code(), Some(1), "{}", text(&result.stderr));
    assert_eq!(tree_snapshot(&out), before);
    // A missing release: exit 1, tree kept.
    let result = f.install(&["--release", "7.15.0a20990101"]);
    assert_fails_with(&result, 1, "does not exist", "missing release");
    assert_eq!(tree_snapshot(&out), before);
}

#[test]
fn an_invalid_release_fails_before_anything_is_touched() {
    let f = release_fixture();
    let out = old_tree(f.work.path());
    let before = tree_snapshot(&out);
    for bad in ["7.15.0", "latest", "7.15.0a2026072"] {
        let result = f.install(&["--release", bad]);
        assert_fails_with(&result, 1, "is not a nightly or dev release version", bad);
        assert_eq!(tree_snapshot(&out), before);
    }
    // An empty group is a usage error.
    let result = release_command(
        &f.server.endpoint(),
        f.work.path(),
        &["--artifact-group", "", "--latest-release"],
    )
    .run_output()
    .unwrap();
    assert_fails_with(
        &result,
        2,
        "Either --amdgpu-family or --artifact-group",
        "empty group",
    );
    // The output directory is a file.
    fs_err::write(f.work.path().join("file"), "x").unwrap();
    let result = f.install(&["--release", "7.15.0a20260722", "--output-dir", "file"]);
    assert_fails_with(&result, 1, "exists and is not a directory", "file output");
    // The working directory itself.
    let result = f.install(&["--release", "7.15.0a20260722", "--output-dir", "."]);
    assert_fails_with(&result, 1, "Refusing to replace", "cwd output");
}

#[test]
fn latest_release_picks_the_newest_nightly_of_the_group() {
    let f = release_fixture();
    let stdout = ok(&f.install(&["--latest-release", "--dry-run"]));
    assert!(
        stdout.contains("Found latest release: 7.15.0a20260722"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "[DRY RUN] Would download: {ASSET} (version 7.15.0a20260722)"
        )),
        "{stdout}"
    );
    assert!(!f.work.path().join("rocm").exists());
    ok(&f.install(&["--latest-release"]));
    assert!(f.work.path().join("rocm/lib/libamdhip64.so.7").is_file());

    let result = f.install(&["--latest-release", "--artifact-group", "gfx120X-all"]);
    assert_eq!(result.status.code(), Some(1));
    let stdout = text(&result.stdout);
    assert!(
        stdout.contains("ERROR: No nightly release found for 'gfx120X-all'\n\nAvailable GPU families in the multi-arch nightly bucket:\n  - gfx110X-all\n  - gfx94X-dcgpu\n"),
        "{stdout}"
    );
}

#[test]
fn release_dry_run_names_the_object() {
    let f = release_fixture();
    let stdout = ok(&f.install(&["--release", "7.15.0.dev0+deadbeef", "--dry-run"]));
    assert!(
        stdout.contains(
            "Retrieving dev multi-arch artifacts from s3://therock-dev-tarball/v4/tarball/"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("[DRY RUN] Would download: s3://therock-dev-tarball/v4/tarball/therock-dist-{HOST_PLATFORM}-gfx94X-dcgpu-7.15.0.dev0+deadbeef.tar.gz (asset therock-dist-{HOST_PLATFORM}-gfx94X-dcgpu-7.15.0.dev0+deadbeef.tar.gz, version 7.15.0.dev0+deadbeef)")),
        "{stdout}"
    );
}

#[test]
fn killed_install_keeps_the_old_tree_and_a_rerun_completes() {
    let f = release_fixture();
    // 4 MiB of bulk at 512 KiB/s: several seconds of download to kill.
    fs_err::write(f.object(ASSET), tarball(4 << 20)).unwrap();
    let out = old_tree(f.work.path());
    let before = tree_snapshot(&out);
    let proxy = FaultProxy::start(
        f.server.addr(),
        FaultPlan::new().rule(Rule::new(Fault::Throttle {
            bytes_per_sec: 512 << 10,
        })),
    );
    let mut child = release_command(
        &proxy.endpoint(),
        f.work.path(),
        &["--release", "7.15.0a20260722"],
    )
    .stdout(std::process::Stdio::null())
    .run_spawn()
    .unwrap();
    // Wait until the staging tree has content, then kill -9.
    let started = std::time::Instant::now();
    loop {
        let staging = leftovers(f.work.path())
            .into_iter()
            .find(|n| n.ends_with(".partial"));
        if let Some(dir) = staging
            && fs_err::read_dir(f.work.path().join(dir)).is_ok_and(|mut d| d.next().is_some())
        {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before the kill"
        );
        assert!(started.elapsed().as_secs() < 30, "no staging tree appeared");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(tree_snapshot(&out), before, "the old tree is untouched");
    assert!(
        !leftovers(f.work.path()).is_empty(),
        "the kill left its staging tree"
    );

    // Also a stale old tree without its lock (killed during the swap's clean-up).
    fs_err::create_dir_all(f.work.path().join(".rocm.install-XXXXXX.old/lib")).unwrap();
    let stdout = ok(&f.install(&["--release", "7.15.0a20260722"]));
    assert!(stdout.contains("Extracted 3 files"), "{stdout}");
    assert_eq!(
        fs_err::read(out.join("share/bulk.bin")).unwrap().len(),
        4 << 20
    );
    assert!(!out.join("lib/old.so").exists());
    assert!(
        leftovers(f.work.path()).is_empty(),
        "{:?}",
        leftovers(f.work.path())
    );
}

#[test]
fn input_dir_copies_like_rsync_a() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src/rocm-7");
    fs_err::create_dir_all(src.join("lib")).unwrap();
    fs_err::write(src.join("lib/libx.so.1"), "x").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("libx.so.1", src.join("lib/libx.so")).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        let mut f = fs_err::File::create(src.join("run.sh")).unwrap();
        f.write_all(b"#!/bin/sh\n").unwrap();
        fs_err::set_permissions(src.join("run.sh"), std::fs::Permissions::from_mode(0o750))
            .unwrap();
    }
    let out = old_tree(work.path());
    let install = |input: &str| {
        Command::new(crate::common::tool("install_rocm_from_artifacts"))
            .args([
                "--amdgpu-family",
                "gfx94X-dcgpu",
                "--output-dir",
                "rocm",
                "--input-dir",
                input,
            ])
            .env_clear()
            .current_dir(work.path())
            .run_output()
            .unwrap()
    };
    // Without a trailing slash the directory itself lands inside the output.
    ok(&install("src/rocm-7"));
    let expected = tree_snapshot(&src);
    let copied = tree_snapshot(&out.join("rocm-7"));
    assert_eq!(copied, expected);
    assert!(!out.join("lib/old.so").exists());
    // With one, its contents.
    ok(&install("src/rocm-7/"));
    assert_eq!(tree_snapshot(&out), expected);
    // Missing input: exit 1, tree kept.
    let before = tree_snapshot(&out);
    assert_fails_with(
        &install("nope"),
        1,
        "Input directory `nope` does not exist",
        "missing",
    );
    assert_eq!(tree_snapshot(&out), before);
    // An input inside the output.
    assert_fails_with(&install("rocm/lib"), 1, "contain one another", "nested");
}

// Compared with GNU tar's unpacking of the same archives, modes and links included: Unix-only.
#[cfg(unix)]
/// Installed trees are what `tar -x` unpacks from the same archives (GNU tar, PAX format):
/// sub-second times, modes, a name with a backslash, links; a release tarball to the last
/// attribute, a run's artifacts (flattened) all but the merged directories' attributes.
#[test]
fn installed_trees_are_what_tar_x_unpacks() {
    use rock_ci_test_support::tar_tree::{
        BACKSLASH_FILE, exact_snapshot, gnu_tar_artifact, snapshot_without_dir_attributes, tar_x,
        write_sample_tree,
    };
    let f = release_fixture();
    let src = f.work.path().join("src");
    write_sample_tree(&src, "opt/rocm", "release");
    gnu_tar_artifact(&src, "opt", &f.object(ASSET));
    ok(&f.install(&["--release", "7.15.0a20260722"]));
    let reference = f.work.path().join("tar");
    tar_x(&f.object(ASSET), &reference);
    let out = f.work.path().join("rocm");
    assert_eq!(exact_snapshot(&out), exact_snapshot(&reference));
    assert!(out.join("opt/rocm").join(BACKSLASH_FILE).is_file());

    let f = run_fixture(false);
    let run = f
        .server
        .root()
        .join(format!("therock-ci-artifacts/555-{HOST_PLATFORM}"));
    let src = f.work.path().join("src");
    write_sample_tree(&src, "base/stage", "run");
    let archive = run.join("base_lib_generic.tar.zst");
    gnu_tar_artifact(&src, "base", &archive);
    let sha = sha256_hex(&fs_err::read(&archive).unwrap());
    fs_err::write(
        run.join("base_lib_generic.tar.zst.sha256sum"),
        format!("{sha}  base_lib_generic.tar.zst\n"),
    )
    .unwrap();
    ok(&f.install(&["--output-dir", "rocm", "--base-only"]));
    let reference = f.work.path().join("tar");
    tar_x(&archive, &reference);
    let out = f.work.path().join("rocm");
    let mut installed = snapshot_without_dir_attributes(&out);
    // The other base artifact of the fixture.
    installed.retain(|(path, _)| !path.starts_with("lib/llvm"));
    assert_eq!(
        installed,
        snapshot_without_dir_attributes(&reference.join("base/stage"))
    );
    assert!(out.join(BACKSLASH_FILE).is_file());
}

/// A run's artifacts with symlinks and a 0444 file install as they fetch (links read as their
/// targets, on Windows copies of them; the file read-only), and a second install replaces
/// that tree.
#[test]
fn run_mode_installs_symlinks_and_read_only_files() {
    let f = run_fixture(false);
    let run = f
        .server
        .root()
        .join(format!("therock-ci-artifacts/555-{HOST_PLATFORM}"));
    crate::common::linked_artifact(&run.join("base_lib_generic.tar.zst"), "base/stage");
    for _ in 0..2 {
        ok(&f.install(&["--output-dir", "rocm", "--base-only"]));
        crate::common::assert_linked(&f.work.path().join("rocm"));
    }
    assert!(leftovers(f.work.path()).is_empty());
}
