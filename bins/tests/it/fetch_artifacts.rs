use crate::common::Launch as _;
use std::path::Path;
use std::process::{Command, Output};

use artifacts::Compression;
use rock_ci_test_support::{
    HttpServer, Reply, S3Server, assert_fails_with, sha256_hex, write_artifact,
};

/// Writes artifact `name` (with a sidecar) into the run prefix of the server's bucket.
fn put_artifact(
    dir: &Path,
    name: &str,
    compression: Compression,
    stage: &str,
    files: &[(&str, &str)],
    sidecar: bool,
) {
    fs_err::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    write_artifact(&path, compression, stage, files);
    if sidecar {
        let sha = sha256_hex(&fs_err::read(&path).unwrap());
        fs_err::write(
            dir.join(format!("{name}.sha256sum")),
            format!("{sha}  {name}\n"),
        )
        .unwrap();
    }
}

const ZSTD: Compression = Compression::Zstd { level: 3 };

/// `fetch_artifacts --run-id {run_id} --platform linux` with nothing in its environment but the
/// GitHub API at `github_url` and the keys and endpoint of `server`.
fn fetch_command(server: &S3Server, github_url: &str, run_id: &str) -> Command {
    let mut command = Command::new(crate::common::tool("fetch_artifacts"));
    command
        .args(["--run-id", run_id, "--platform", "linux"])
        .env_clear()
        .env("GITHUB_API_URL", github_url)
        .envs(server.aws_env());
    command
}

struct Fixture {
    server: S3Server,
    github: HttpServer,
    github_url: String,
    work: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let server = S3Server::start();
    server.create_bucket("therock-ci-artifacts");
    let run_dir = server.root().join("therock-ci-artifacts/555-linux");
    // Name, stage directory, files.
    type Artifact<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let zstd: &[Artifact<'_>] = &[
        (
            "blas_lib_gfx94X-dcgpu.tar.zst",
            "math-libs/BLAS/stage",
            &[("lib/libblas.so", "blas"), ("share/README", "same")],
        ),
        (
            "amd-llvm_lib_generic.tar.zst",
            "compiler/amd-llvm/stage",
            &[("lib/libLLVM.so", "llvm"), ("share/README", "same")],
        ),
        (
            "rand_lib_gfx110X-all.tar.zst",
            "math-libs/rand/stage",
            &[("lib/librand.so", "rand")],
        ),
    ];
    for (name, stage, files) in zstd {
        put_artifact(&run_dir, name, ZSTD, stage, files, true);
    }
    put_artifact(
        &run_dir,
        "blas_test_gfx94X-dcgpu.tar.xz",
        Compression::Xz { preset: 1 },
        "math-libs/BLAS/stage",
        &[("bin/blas-test", "test")],
        true,
    );
    // The one artifact without a sidecar.
    put_artifact(
        &run_dir,
        "fft_lib_gfx942.tar.zst",
        ZSTD,
        "math-libs/FFT/stage",
        &[("lib/libfft.so", "fft")],
        false,
    );
    fs_err::write(run_dir.join("README.txt"), "not an artifact").unwrap();
    let github = HttpServer::start(|_| {
        Reply::json(
            200,
            r#"{"id": 555, "head_repository": {"full_name": "ROCm/TheRock"}}"#,
        )
    });
    let github_url = github.url();
    Fixture {
        server,
        github,
        github_url,
        work: tempfile::tempdir().unwrap(),
    }
}

impl Fixture {
    fn run(&self, args: &[&str]) -> Output {
        fetch_command(&self.server, &self.github_url, "555")
            .args(args)
            .current_dir(self.work.path())
            .run_output()
            .unwrap()
    }

    /// [`Fixture::run`], which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    fn out(&self) -> std::path::PathBuf {
        self.work.path().join("build/artifacts")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The sorted names of the entries of `dir`.
pub(crate) fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// The archive without a sidecar (and no SHA-256 recorded with it) is refused, named; the
/// others land, and nothing else: no records, no temporaries.
#[test]
fn an_archive_that_cannot_be_verified_fails_unless_allowed() {
    let f = fixture();
    let out = f.run(&[
        "--artifact-group",
        "gfx94X-dcgpu",
        "--amdgpu-targets",
        " gfx942, ",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("1 of the selected artifacts could not be fetched")
            && stderr.contains("fft_lib_gfx942.tar.zst` cannot be verified")
            && stderr.contains("--allow-unverified"),
        "{stderr}"
    );
    assert_eq!(
        names(&f.out()),
        [
            "amd-llvm_lib_generic",
            "blas_lib_gfx94X-dcgpu",
            "blas_test_gfx94X-dcgpu",
        ]
    );
}

/// `--delete-after-extract`, as TheRock's Windows jobs pass it (where the reference once
/// deleted an archive it still held open): with one unpacking slot and six transfers, the
/// archives that find no slot wait in the spool and are deleted once unpacked; every tree
/// lands whole and nothing else is left beside it, on Windows as on Linux.
#[test]
fn delete_after_extract_leaves_the_trees_and_nothing_else() {
    let f = fixture();
    let out = f.run(&[
        "--artifact-group",
        "gfx94X-dcgpu",
        "--amdgpu-targets",
        "gfx942",
        "--allow-unverified",
        "--delete-after-extract",
        "--extract-concurrency",
        "1",
        "--download-concurrency",
        "6",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        names(&f.out()),
        [
            "amd-llvm_lib_generic",
            "blas_lib_gfx94X-dcgpu",
            "blas_test_gfx94X-dcgpu",
            "fft_lib_gfx942"
        ]
    );
    for (file, content) in [
        (
            "amd-llvm_lib_generic/compiler/amd-llvm/stage/lib/libLLVM.so",
            "llvm",
        ),
        (
            "blas_lib_gfx94X-dcgpu/math-libs/BLAS/stage/lib/libblas.so",
            "blas",
        ),
        (
            "blas_test_gfx94X-dcgpu/math-libs/BLAS/stage/bin/blas-test",
            "test",
        ),
        ("fft_lib_gfx942/math-libs/FFT/stage/lib/libfft.so", "fft"),
    ] {
        assert_eq!(fs_err::read_to_string(f.out().join(file)).unwrap(), content);
    }
    assert_eq!(
        names(&f.work.path().join("build")),
        [".artifacts.rock-ci-fetch", "artifacts"]
    );
}

#[test]
fn selects_by_group_and_targets_and_extracts() {
    let f = fixture();
    let stdout = f.ok(&[
        "--artifact-group",
        "gfx94X-dcgpu",
        "--amdgpu-targets",
        " gfx942, ",
        "--allow-unverified",
    ]);
    assert!(
        stdout.contains("Matching artifact target families: ['generic', 'gfx942', 'gfx94X-dcgpu']"),
        "{stdout}"
    );
    // Exactly what the reference leaves: one directory per artifact. The verified copies are
    // recorded beside the output directory.
    assert_eq!(
        names(&f.out()),
        [
            "amd-llvm_lib_generic",
            "blas_lib_gfx94X-dcgpu",
            "blas_test_gfx94X-dcgpu",
            "fft_lib_gfx942"
        ]
    );
    assert_eq!(
        names(&f.work.path().join("build/.artifacts.rock-ci-fetch")).len(),
        3
    );
    assert_eq!(
        fs_err::read_to_string(
            f.out()
                .join("blas_lib_gfx94X-dcgpu/math-libs/BLAS/stage/lib/libblas.so")
        )
        .unwrap(),
        "blas"
    );
    assert!(
        f.out()
            .join("blas_test_gfx94X-dcgpu/artifact_manifest.txt")
            .is_file()
    );
    assert!(stdout.contains("sha256 verified"), "{stdout}");
    assert!(
        stdout.contains("fft_lib_gfx942.tar.zst' to 'fft_lib_gfx942' (")
            && stdout.contains("not verified: no sidecar or recorded SHA-256"),
        "{stdout}"
    );

    // A re-run reuses what was verified and fetches the unverifiable one again.
    let out = f.run(&[
        "--artifact-group",
        "gfx94X-dcgpu",
        "--amdgpu-targets",
        "gfx942",
        "--allow-unverified",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches("== Cached").count(), 3, "{stdout}");
    assert!(
        stdout.contains("++ Extracted 'fft_lib_gfx942.tar.zst'"),
        "{stdout}"
    );
    // A changed artifact (new sidecar) is fetched again.
    let run_dir = f.server.root().join("therock-ci-artifacts/555-linux");
    put_artifact(
        &run_dir,
        "blas_lib_gfx94X-dcgpu.tar.zst",
        ZSTD,
        "math-libs/BLAS/stage",
        &[("lib/libblas.so", "blas v2")],
        true,
    );
    let out = f.run(&["blas_lib"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        fs_err::read_to_string(
            f.out()
                .join("blas_lib_gfx94X-dcgpu/math-libs/BLAS/stage/lib/libblas.so")
        )
        .unwrap(),
        "blas v2"
    );
    // --no-extract reuses an archive that matches its sidecar.
    let out = f.run(&["blas_test", "--no-extract"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = f.run(&["blas_test", "--no-extract"]);
    assert!(
        text(&out.stdout).contains("== Cached blas_test_gfx94X-dcgpu.tar.xz"),
        "{}",
        text(&out.stdout)
    );
}

/// A record that cannot be read is not trusted, and not replaced in silence: a warning names
/// it, the artifact is unpacked again, and the next run finds the new record.
#[test]
fn an_unusable_tree_record_is_named_and_replaced() {
    let f = fixture();
    let out = f.run(&["blas_lib"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let record = f
        .work
        .path()
        .join("build")
        .join(".artifacts.rock-ci-fetch")
        .join("blas_lib_gfx94X-dcgpu.tar.zst.tree");
    assert!(record.is_file());
    fs_err::write(&record, "damaged").unwrap();
    let out = f.run(&["blas_lib"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "Cannot use the record {} (not a record of this version): unpacking ",
            record.display()
        )),
        "{stderr}"
    );
    assert!(
        text(&out.stdout).contains("++ Extracted 'blas_lib"),
        "{}",
        text(&out.stdout)
    );
    let out = f.run(&["blas_lib"]);
    assert!(
        text(&out.stdout).contains("== Cached 'blas_lib"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !text(&out.stderr).contains("Cannot use"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn regex_filters_flatten_and_archives() {
    let f = fixture();
    let out = f.run(&[
        "--artifact-group",
        "gfx94X-dcgpu",
        "_lib_",
        "--exclude",
        "llvm",
        "--flatten",
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(names(&f.out()), ["lib", "share"]);
    assert_eq!(names(&f.out().join("lib")), ["libblas.so"]);

    let f = fixture();
    let out = f.run(&["blas", "--no-extract"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        names(&f.out()),
        [
            "blas_lib_gfx94X-dcgpu.tar.zst",
            "blas_lib_gfx94X-dcgpu.tar.zst.sha256sum",
            "blas_test_gfx94X-dcgpu.tar.xz",
            "blas_test_gfx94X-dcgpu.tar.xz.sha256sum"
        ]
    );
    // Archives and sidecars get the mode a plain create gives (not a temporary file's 0600).
    let plain = f.work.path().join("plain");
    fs_err::write(&plain, "").unwrap();
    let mode = crate::common::permission_bits;
    for name in names(&f.out()) {
        assert_eq!(mode(&f.out().join(&name)), mode(&plain), "{name}");
    }
}

/// `--member`: archives without a member index (written here without one recorded) are read
/// whole, verified (the one without a sidecar is left out), and only the chosen members
/// written; a glob that matches nothing is an error naming it, unless `--allow-empty`; with
/// `--no-extract` it is a usage error.
#[test]
fn members_by_glob_in_every_layout() {
    let f = fixture();
    let stdout = f.ok(&[
        "--exclude",
        "fft",
        "--member",
        "lib/libblas.so",
        "--member",
        "*/librand.so",
    ]);
    assert!(
        stdout.contains(
            "++ 1 members of 'blas_lib_gfx94X-dcgpu.tar.zst' (no member index: the whole archive"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("-- No member of 'amd-llvm_lib_generic.tar.zst' matches"),
        "{stdout}"
    );
    assert_eq!(
        names(&f.out()),
        ["blas_lib_gfx94X-dcgpu", "rand_lib_gfx110X-all"]
    );
    let blas = f.out().join("blas_lib_gfx94X-dcgpu");
    assert_eq!(names(&blas.join("math-libs/BLAS/stage")), ["lib"]);
    assert_eq!(
        fs_err::read_to_string(blas.join("math-libs/BLAS/stage/lib/libblas.so")).unwrap(),
        "blas"
    );

    let f = fixture();
    let out = f.run(&["--exclude", "fft", "--member", "share/*", "--flatten"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(names(&f.out()), ["share"]);

    let f = fixture();
    let out = f.run(&[
        "--exclude",
        "fft",
        "--member",
        "lib/libnothing*",
        "--member",
        "lib/libblas.so",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--member lib/libnothing*"),
        "{}",
        text(&out.stderr)
    );
    let out = f.run(&[
        "--exclude",
        "fft",
        "--member",
        "lib/libnothing*",
        "--allow-empty",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = f.run(&["--exclude", "fft", "--member", "lib/*", "--no-extract"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--member"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn flatten_conflict_is_an_error_naming_both() {
    let f = fixture();
    let run_dir = f.server.root().join("therock-ci-artifacts/555-linux");
    put_artifact(
        &run_dir,
        "other_lib_generic.tar.zst",
        ZSTD,
        "x/stage",
        &[("lib/libblas.so", "not blas")],
        true,
    );
    let out = f.run(&[
        "--artifact-group",
        "gfx94X-dcgpu",
        "--flatten",
        "--download-concurrency",
        "1",
        "blas_lib|other",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let clash = format!("`{}` is in both", crate::common::native("lib/libblas.so"));
    assert!(stderr.contains(&clash), "{stderr}");
    assert!(
        stderr.contains("blas_lib_gfx94X-dcgpu.tar.zst")
            && stderr.contains("other_lib_generic.tar.zst"),
        "{stderr}"
    );
}

/// An archive made on Linux holding names Windows cannot hold (`:`, a reserved device name, a
/// trailing dot): on Windows the fetch fails naming the member and the archive, and that
/// artifact leaves nothing behind while the others land; elsewhere the names are extracted.
#[test]
fn names_windows_cannot_hold_fail_there_naming_the_member() {
    let f = fixture();
    let run_dir = f.server.root().join("therock-ci-artifacts/555-linux");
    put_artifact(
        &run_dir,
        "odd_lib_generic.tar.zst",
        ZSTD,
        "odd/stage",
        &[
            ("share/a:b", "colon"),
            ("share/CON", "device"),
            ("share/x.", "dot"),
        ],
        true,
    );
    let out = f.run(&["--artifact-group", "gfx94X-dcgpu", "odd_lib|amd-llvm"]);
    let stderr = text(&out.stderr);
    let llvm = f
        .out()
        .join("amd-llvm_lib_generic/compiler/amd-llvm/stage/lib/libLLVM.so");
    assert_eq!(fs_err::read_to_string(&llvm).unwrap(), "llvm", "{stderr}");
    let odd = f.out().join("odd_lib_generic");
    if cfg!(windows) {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("Refusing member `odd/stage/share/")
                && stderr.contains("of `odd_lib_generic.tar.zst`"),
            "{stderr}"
        );
        assert!(!odd.exists(), "nothing of the refused artifact is left");
    } else {
        assert!(out.status.success(), "{stderr}");
        for (name, content) in [("a:b", "colon"), ("CON", "device"), ("x.", "dot")] {
            let path = odd.join("odd/stage/share").join(name);
            assert_eq!(fs_err::read_to_string(path).unwrap(), content);
        }
    }
}

#[test]
fn dry_run_lists_and_fetches_nothing() {
    let f = fixture();
    let out = f.run(&["--dry-run"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("No artifact group or targets specified - downloading all artifacts"));
    assert_eq!(
        stdout
            .matches("  s3://therock-ci-artifacts/555-linux/")
            .count(),
        5,
        "{stdout}"
    );
    assert!(stdout.contains("Skipping downloads since --dry-run was set"));
    assert!(!f.out().exists());
}

#[test]
fn corrupted_artifact_fails_the_run_after_the_others() {
    let f = fixture();
    let run_dir = f.server.root().join("therock-ci-artifacts/555-linux");
    fs_err::write(
        run_dir.join("rand_lib_gfx110X-all.tar.zst.sha256sum"),
        format!("{}  x\n", "0".repeat(64)),
    )
    .unwrap();
    let out = f.run(&["--artifact-group", "gfx110X-all"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("1 of the selected artifacts could not be fetched"),
        "{stderr}"
    );
    assert!(
        stderr.contains("rand_lib_gfx110X-all.tar.zst: Checksum mismatch"),
        "{stderr}"
    );
    // The good one is there; nothing of the bad one, no leftovers.
    assert_eq!(names(&f.out()), ["amd-llvm_lib_generic"]);
}

#[test]
fn a_multi_frame_archive_unpacks_and_a_truncated_one_fails_naming_it() {
    let f = fixture();
    let run_dir = f.server.root().join("therock-ci-artifacts/555-linux");
    // 20 MiB: three frames of the writer, decoded on several threads.
    let big = rock_ci_test_support::incompressible_text(20 << 20, 77);
    let name = "rand_lib_gfx110X-all.tar.zst";
    put_artifact(
        &run_dir,
        name,
        ZSTD,
        "math-libs/rand/stage",
        &[("lib/librand.so", &big), ("lib/small", "s")],
        true,
    );
    let out = f.run(&["--artifact-group", "gfx110X-all"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lib = f
        .out()
        .join("rand_lib_gfx110X-all/math-libs/rand/stage/lib");
    assert!(fs_err::read(lib.join("librand.so")).unwrap() == big.as_bytes());
    assert_eq!(fs_err::read_to_string(lib.join("small")).unwrap(), "s");

    // Cut inside its second frame, without a sidecar to catch it first.
    fs_err::remove_dir_all(f.out()).unwrap();
    let archive = run_dir.join(name);
    let bytes = fs_err::read(&archive).unwrap();
    fs_err::write(&archive, &bytes[..bytes.len() / 2]).unwrap();
    fs_err::remove_file(run_dir.join(format!("{name}.sha256sum"))).unwrap();
    let out = f.run(&["--artifact-group", "gfx110X-all", "--allow-unverified"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(name), "{stderr}");
    assert!(stderr.contains("zstd frame 1 (at byte "), "{stderr}");
    assert!(stderr.contains("the zstd stream ends inside"), "{stderr}");
    assert_eq!(names(&f.out()), ["amd-llvm_lib_generic"]);
}

#[test]
fn empty_selections_and_bad_input_fail() {
    let f = fixture();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--artifact-group", "gfx1201"], 0, ""),
        (&["nothing-matches"], 1, "resulted in an empty set"),
        (&["[unclosed"], 1, "Invalid include regex `[unclosed`"),
        (&["--flatten", "--no-extract"], 2, "cannot be used with"),
        (
            &["--platform", "solaris"],
            2,
            "platform='solaris' is invalid",
        ),
    ];
    for (args, code, message) in cases {
        let out = f.run(args);
        if *code == 0 {
            // Only `generic` matches gfx1201: the run still succeeds with the generic artifact.
            assert!(out.status.success(), "{}", text(&out.stderr));
            continue;
        }
        assert_fails_with(&out, *code, message, &format!("{args:?}"));
    }
}

#[test]
fn local_staging_dir_needs_no_github() {
    let work = tempfile::tempdir().unwrap();
    put_artifact(
        &work.path().join("staging/9-linux"),
        "core_run_generic.tar.xz",
        Compression::Xz { preset: 0 },
        "core/stage",
        &[("bin/tool", "t")],
        true,
    );
    let out = Command::new(crate::common::tool("fetch_artifacts"))
        .args([
            "--run-id",
            "9",
            "--platform",
            "linux",
            "--local-staging-dir",
            "staging",
            "--output-dir",
            "out",
        ])
        .env_clear()
        .current_dir(work.path())
        .run_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        fs_err::read_to_string(work.path().join("out/core_run_generic/core/stage/bin/tool"))
            .unwrap(),
        "t"
    );
}

#[test]
fn injected_faults_are_retried_to_a_complete_fetch() {
    use rock_ci_test_support::S3ServerOptions;
    let server = S3Server::start_with(S3ServerOptions {
        fault_every: Some(10),
        ..Default::default()
    });
    server.create_bucket("therock-ci-artifacts");
    let run_dir = server.root().join("therock-ci-artifacts/556-linux");
    for i in 0..30 {
        let content = format!("payload {i}");
        put_artifact(
            &run_dir,
            &format!("p{i:02}_lib_generic.tar.zst"),
            ZSTD,
            &format!("p{i:02}/stage"),
            &[("lib/x", &content)],
            true,
        );
    }
    let github = HttpServer::start(|_| {
        Reply::json(
            200,
            r#"{"id": 556, "head_repository": {"full_name": "ROCm/TheRock"}}"#,
        )
    });
    let work = tempfile::tempdir().unwrap();
    let out = fetch_command(&server, &github.url(), "556")
        .current_dir(work.path())
        .run_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(server.faults() >= 6, "only {} faults", server.faults());
    let last = text(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    assert!(
        last.starts_with("Fetched 30 of 30 artifacts (") && last.contains(" MiB/s), "),
        "{last}"
    );
    for i in 0..30 {
        let got = fs_err::read_to_string(work.path().join(format!(
            "build/artifacts/p{i:02}_lib_generic/p{i:02}/stage/lib/x"
        )))
        .unwrap();
        assert_eq!(got, format!("payload {i}"));
    }
}

/// Kill the fetch in the middle of a download; the re-run completes, verified, with nothing
/// of the interrupted attempt left.
#[test]
fn interrupted_fetch_then_rerun() {
    let f = fixture();
    let run_dir = f.server.root().join("therock-ci-artifacts/555-linux");
    // 48 MiB that zstd cannot shrink: long enough to be caught in flight.
    let noise = rock_ci_test_support::incompressible_text(48 << 20, 0x1234_5678);
    put_artifact(
        &run_dir,
        "big_lib_generic.tar.zst",
        Compression::Zstd { level: 1 },
        "big/stage",
        &[("data.bin", &noise)],
        true,
    );
    let mut child = fetch_command(&f.server, &f.github_url, "555")
        .arg("big_lib")
        .current_dir(f.work.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .run_spawn()
        .unwrap();
    let partial_seen = loop {
        let partial = fs_err::read_dir(f.out()).ok().is_some_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        });
        if partial {
            child.kill().unwrap();
            break true;
        }
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let status = child.wait().unwrap();
    assert!(
        partial_seen && crate::common::killed(status),
        "the fetch finished before it could be interrupted"
    );
    assert!(!f.out().join("big_lib_generic").exists());

    let out = f.run(&["big_lib"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("sha256 verified"));
    assert_eq!(names(&f.out()), ["big_lib_generic"]);
    assert_eq!(
        fs_err::read_to_string(f.out().join("big_lib_generic/big/stage/data.bin")).unwrap(),
        noise
    );
}

/// Long options abbreviate as with `argparse`; `--run-github-repo=` (an unset workflow input)
/// falls back to `ROCm/TheRock`; extracted files keep the archive's mtimes.
#[test]
fn abbreviated_flags_empty_repository_and_mtimes() {
    let f = fixture();
    let out = Command::new(crate::common::tool("fetch_artifacts"))
        .args([
            "--run-i",
            "555",
            "--pl=linux",
            "--art",
            "gfx110X-all",
            "--run-github-repo=",
            "--out",
            "o",
        ])
        .env_clear()
        .env("GITHUB_API_URL", &f.github_url)
        .envs(f.server.aws_env())
        .current_dir(f.work.path())
        .run_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("  github_repository: ROCm/TheRock"),
        "{stdout}"
    );
    let requests = f.github.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.path.contains("/repos/ROCm/TheRock/actions/runs/555")),
        "{:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    // The fixture's archives record mtime 0 for every member.
    let lib = f
        .work
        .path()
        .join("o/rand_lib_gfx110X-all/math-libs/rand/stage/lib/librand.so");
    let mtime = fs_err::metadata(&lib).unwrap().modified().unwrap();
    assert_eq!(mtime, std::time::UNIX_EPOCH);

    let out = f.run(&["--a", "gfx110X-all"]);
    assert_fails_with(
        &out,
        2,
        "ambiguous option: --a could match --artifact-group, --amdgpu-targets",
        "--a",
    );
    assert!(out.stdout.is_empty());
}

/// A TCP proxy in front of `upstream` that holds back every request naming `held` (not its
/// sidecar) until [`HoldingProxy::release`].
struct HoldingProxy {
    url: String,
    gate: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

impl HoldingProxy {
    fn start(upstream: &str, held: &str) -> Self {
        use std::io::{Read as _, Write as _};
        use std::net::{TcpListener, TcpStream};
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let gate = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let held = held.as_bytes().to_vec();
        let g = gate.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { return };
                let Ok(mut server) = TcpStream::connect(&upstream) else {
                    return;
                };
                let (mut client_back, mut server_back) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || std::io::copy(&mut server_back, &mut client_back));
                let (held, gate) = (held.clone(), g.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0; 64 << 10];
                    while let Ok(n) = client.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let chunk = &buf[..n];
                        let names_held = chunk
                            .windows(held.len() + 1)
                            .any(|w| w.starts_with(&held) && w[held.len()] != b'.');
                        if names_held {
                            let (lock, cvar) = &*gate;
                            let mut open = lock.lock().unwrap();
                            while !*open {
                                open = cvar.wait(open).unwrap();
                            }
                        }
                        if server.write_all(chunk).is_err() {
                            break;
                        }
                    }
                    let _ = server.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Self { url, gate }
    }

    fn release(&self) {
        let (lock, cvar) = &*self.gate;
        *lock.lock().unwrap() = true;
        cvar.notify_all();
    }
}

/// Each artifact's line is printed when that artifact is done, not when the last one is.
#[test]
fn per_artifact_lines_arrive_as_each_finishes() {
    use std::io::BufRead as _;
    let f = fixture();
    let slow = "slow_lib_generic.tar.zst";
    put_artifact(
        &f.server.root().join("therock-ci-artifacts/555-linux"),
        slow,
        ZSTD,
        "slow/stage",
        &[("lib/libslow.so", "slow")],
        true,
    );
    let proxy = HoldingProxy::start(&f.server.endpoint(), slow);
    let mut child = fetch_command(&f.server, &f.github_url, "555")
        .args(["--artifact-group", "gfx110X-all"])
        .env("AWS_ENDPOINT_URL", &proxy.url)
        .current_dir(f.work.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .run_spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let _ = tx.send(line.unwrap());
        }
    });
    // While the slow artifact is held back, the others' lines come through.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut seen = Vec::new();
    let mut done_lines = 0;
    while done_lines < 2 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if line.starts_with("  ++ ") {
                    done_lines += 1;
                }
                seen.push(line);
            }
            Err(_) => break,
        }
    }
    let still_running = child.try_wait().unwrap().is_none();
    proxy.release();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let rest: Vec<String> = rx.try_iter().collect();
    assert_eq!(
        done_lines, 2,
        "lines before the slow artifact was released: {seen:?}"
    );
    assert!(still_running);
    assert!(
        !seen
            .iter()
            .any(|l| l.contains(slow) && l.starts_with("  ++ ")),
        "{seen:?}"
    );
    assert!(status.success());
    assert!(
        rest.iter()
            .any(|l| l.starts_with("  ++ Extracted 'slow_lib_generic.tar.zst'")),
        "{rest:?}"
    );
}

/// Every progress bar drawn in `screen` (what a terminal was sent), as `(label, done, total)`
/// in drawing order: `Total` or the archive's name, and the bytes shown.
#[cfg(unix)]
fn drawn_bars(screen: &str) -> Vec<(String, f64, f64)> {
    let plain = regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]")
        .unwrap()
        .replace_all(screen, " ");
    // Lines are padded to the terminal's width, so bars follow each other without a break: a
    // label, then anything but a slash, then `done/total`.
    let bar = regex::Regex::new(
        r"(Total|\S+\.tar\.(?:zst|xz))[^/]*? ([0-9]+(?:\.[0-9]+)?) (B|KiB|MiB|GiB)/([0-9]+(?:\.[0-9]+)?) (B|KiB|MiB|GiB)",
    )
    .unwrap();
    let bytes = |n: &str, unit: &str| {
        let scale = match unit {
            "KiB" => 1024.0,
            "MiB" => 1_048_576.0,
            "GiB" => 1_073_741_824.0,
            _ => 1.0,
        };
        n.parse::<f64>().unwrap() * scale
    };
    bar.captures_iter(&plain)
        .map(|c| (c[1].to_owned(), bytes(&c[2], &c[3]), bytes(&c[4], &c[5])))
        .collect()
}

// Read through a Unix pseudo-terminal (rustix's pty).
#[cfg(unix)]
/// On a terminal, an overall bar and a bar per transfer in flight move with the bytes as they
/// arrive: mid-run they show parts of their totals, not 0 B.
#[test]
fn terminal_bars_move_with_the_bytes() {
    use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule};
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    use std::io::Read as _;
    let f = fixture();
    let slow = "slow_lib_generic.tar.zst";
    let content = rock_ci_test_support::incompressible_text(3 << 20, 9);
    put_artifact(
        &f.server.root().join("therock-ci-artifacts/555-linux"),
        slow,
        ZSTD,
        "slow/stage",
        &[("lib/libslow.so", &content)],
        true,
    );
    // The slow artifact's body comes at 600 KB/s: a few seconds of transfer to watch.
    let proxy = FaultProxy::start(
        f.server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Throttle {
                bytes_per_sec: 600_000,
            })
            .method("GET")
            .path_contains(slow),
        ),
    );
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let size = rustix::termios::Winsize {
        ws_row: 40,
        ws_col: 160,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(&master, size).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let terminal = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    let child = fetch_command(&f.server, &f.github_url, "555")
        .args(["--artifact-group", "gfx110X-all"])
        .env("AWS_ENDPOINT_URL", proxy.endpoint())
        // As a terminal sets it (no bars where TERM is unset or `dumb`).
        .env("TERM", "xterm-256color")
        .current_dir(f.work.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::from(std::fs::File::from(terminal)))
        .run_spawn()
        .unwrap();
    // The terminal's output until the child has closed its side (a read then fails with EIO).
    let reader = std::thread::spawn(move || {
        let mut master = std::fs::File::from(master);
        let mut screen = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            screen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&screen).into_owned()
    });
    let out = child.wait_with_output().unwrap();
    let screen = reader.join().unwrap();
    assert!(out.status.success(), "{}\n{screen}", text(&out.stdout));
    let bars = drawn_bars(&screen);
    let partial = |label: &str| {
        bars.iter()
            .filter(|(l, done, total)| l == label && *done > 0.0 && done < total)
            .count()
    };
    assert!(
        partial("Total") >= 2,
        "overall bar never drawn part-way: {bars:?}\n{}",
        screen.escape_debug()
    );
    assert!(
        partial(slow) >= 2,
        "the slow transfer's bar never drawn part-way: {bars:?}"
    );
    assert!(screen.contains(" left"), "{}", screen.escape_debug());
    // The totals line closes the log (stdout), not the terminal's bars.
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("Fetched 3 of 3 artifacts")),
        "{stdout}"
    );
    rates_read_right(&screen);
}

/// The overall bar's rate and time left: blank until bytes flow (not `0 B/s ETA 0s`), then
/// near the link's 600 KB/s once the slow transfer is well under way.
#[cfg(unix)]
fn rates_read_right(screen: &str) {
    let totals = total_rates(screen);
    assert!(
        totals
            .iter()
            .filter(|t| t.done == 0.0)
            .all(|t| t.rate.is_none() && t.left == "-"),
        "{totals:?}"
    );
    let settled: Vec<_> = totals
        .iter()
        .filter(|t| t.done > t.total / 2.0 && t.done < t.total)
        .collect();
    assert!(!settled.is_empty(), "{totals:?}");
    for t in settled {
        let rate = t.rate.unwrap_or_default();
        assert!((100e3..2e6).contains(&rate), "{t:?}");
        let secs: f64 = t.left.trim_end_matches('s').parse().unwrap_or(f64::MAX);
        assert!(secs <= 30.0, "{t:?}");
    }
}

/// One drawing of the overall bar: bytes done and total, the rate shown (`None` for `-`) and
/// the time left as shown.
#[cfg(unix)]
#[derive(Debug)]
struct TotalLine {
    done: f64,
    total: f64,
    rate: Option<f64>,
    left: String,
}

#[cfg(unix)]
fn total_rates(screen: &str) -> Vec<TotalLine> {
    let plain = regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]")
        .unwrap()
        .replace_all(screen, " ");
    let size = r"([0-9]+(?:\.[0-9]+)?) (B|KiB|MiB|GiB)";
    let line = regex::Regex::new(&format!(
        r"Total\s+\[[^\]]*\]\s+{size}/{size}\s+(?:-|{size}/s) ETA (\S+)"
    ))
    .unwrap();
    let bytes = |c: &regex::Captures, i: usize| {
        let scale = match &c[i + 1] {
            "KiB" => 1024.0,
            "MiB" => 1_048_576.0,
            "GiB" => 1_073_741_824.0,
            _ => 1.0,
        };
        c[i].parse::<f64>().unwrap() * scale
    };
    line.captures_iter(&plain)
        .map(|c| TotalLine {
            done: bytes(&c, 1),
            total: bytes(&c, 3),
            rate: c.get(5).map(|_| bytes(&c, 5)),
            left: c[7].to_owned(),
        })
        .collect()
}

/// Streamed fetches share one budget of ranged GETs: eight unpacking slots streaming eight
/// ~21 MiB archives (6 ranges each, 48 in all) through a slow link never have more than 12
/// ranges in flight (and more than one archive's 6 at some point), and every archive still
/// arrives whole.
#[test]
fn streamed_fetches_share_one_range_budget() {
    use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule};
    let f = fixture();
    let run = f.server.root().join("therock-ci-artifacts/558-linux");
    let names: Vec<String> = (0..8)
        .map(|i| format!("big{i}_lib_generic.tar.zst"))
        .collect();
    let contents: Vec<String> = (0..8)
        .map(|i| rock_ci_test_support::incompressible_text(36 << 20, 40 + i))
        .collect();
    for (i, name) in names.iter().enumerate() {
        put_artifact(
            &run,
            name,
            ZSTD,
            &format!("big{i}/stage"),
            &[("lib/blob", &contents[i])],
            true,
        );
    }
    // Each body at 4 MB/s: a 4 MiB range takes about a second, so the ranges overlap.
    let proxy = FaultProxy::start(
        f.server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Throttle {
                bytes_per_sec: 4_000_000,
            })
            .method("GET")
            .path_contains("big"),
        ),
    );
    let github = HttpServer::start(|_| {
        Reply::json(
            200,
            r#"{"id": 558, "head_repository": {"full_name": "ROCm/TheRock"}}"#,
        )
    });
    let out = fetch_command(&f.server, &github.url(), "558")
        .args(["--extract-concurrency", "8", "--output-dir", "out"])
        .env("AWS_ENDPOINT_URL", proxy.endpoint())
        .current_dir(f.work.path())
        .run_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let most = proxy.max_ranged_in_flight();
    assert!((7..=12).contains(&most), "{most} ranged GETs at once");
    for (i, content) in contents.iter().enumerate() {
        let got = fs_err::read_to_string(
            f.work
                .path()
                .join(format!("out/big{i}_lib_generic/big{i}/stage/lib/blob")),
        )
        .unwrap();
        assert!(got == *content, "big{i} differs");
    }
}

/// The output directory however a Windows job spells it: absolute with `/` (as bash passes
/// `B:/build`), with `\` on Windows (`B:\build`), relative, and deeper than Windows' 260
/// characters (TheRock's workflows set `core.longpaths`). Every spelling gets the same tree.
#[test]
fn output_dirs_in_every_spelling_of_a_path() {
    let f = fixture();
    let base = f.work.path().to_str().unwrap().to_owned();
    let long = format!(
        "{base}/{}/out",
        ["a-long-directory-name-of-forty-characters"; 7].join("/")
    );
    assert!(long.len() > 300);
    let mut spellings = vec![
        (
            format!("{}/slashes", base.replace('\\', "/")),
            f.work.path().join("slashes"),
        ),
        (
            "relative/dir".to_owned(),
            f.work.path().join("relative").join("dir"),
        ),
        (long.clone(), Path::new(&long).to_path_buf()),
    ];
    if cfg!(windows) {
        spellings.push((
            format!("{}\\back\\slashes", base.replace('/', "\\")),
            f.work.path().join("back").join("slashes"),
        ));
    }
    for (given, lands) in spellings {
        let out = f.run(&[
            "--artifact-group",
            "gfx94X-dcgpu",
            "--amdgpu-targets",
            "gfx942",
            "--allow-unverified",
            "--output-dir",
            &given,
        ]);
        assert!(out.status.success(), "{given}: {}", text(&out.stderr));
        assert_eq!(
            fs_err::read_to_string(
                lands.join("blas_lib_gfx94X-dcgpu/math-libs/BLAS/stage/lib/libblas.so")
            )
            .unwrap(),
            "blas",
            "{given}"
        );
        assert_eq!(names(&lands).len(), 4, "{given}");
    }
}

/// `fetch_artifacts --run-id 9001 ... --output-dir c base_lib` into the fixture's work
/// directory.
fn fetch_base_lib(f: &Fixture) -> Output {
    fetch_command(&f.server, &f.github_url, "9001")
        .args([
            "--artifact-group",
            "gfx94X-dcgpu",
            "--output-dir",
            "c",
            "base_lib",
        ])
        .current_dir(f.work.path())
        .run_output()
        .unwrap()
}

/// A fetch again into a directory whose artifact was damaged since (a file removed, bytes
/// appended to a header) unpacks that artifact again; an untouched one is kept.
#[test]
fn a_damaged_extracted_artifact_is_extracted_again() {
    let f = fixture();
    put_artifact(
        &f.server.root().join("therock-ci-artifacts/9001-linux"),
        "base_lib_generic.tar.zst",
        ZSTD,
        "base/stage",
        &[
            ("sub/inner.txt", "inner"),
            ("include/base.h", "int base(void);\n"),
        ],
        true,
    );
    let stage = f.work.path().join("c/base_lib_generic/base/stage");
    let (inner, header) = (stage.join("sub/inner.txt"), stage.join("include/base.h"));
    let first = fetch_base_lib(&f);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let cached = "== Cached 'base_lib_generic.tar.zst' in 'base_lib_generic'";
    let extracted = "++ Extracted 'base_lib_generic.tar.zst' to 'base_lib_generic'";
    let damages: [(&str, &dyn Fn()); 2] = [
        ("removed", &|| fs_err::remove_file(&inner).unwrap()),
        ("appended to", &|| {
            use std::io::Write as _;
            let mut file = fs_err::OpenOptions::new()
                .append(true)
                .open(&header)
                .unwrap();
            file.write_all(b"int more(void);\n").unwrap();
        }),
    ];
    for (what, damage) in damages {
        damage();
        let out = fetch_base_lib(&f);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{what}: {}", text(&out.stderr));
        assert!(
            stdout.contains(extracted) && !stdout.contains(cached),
            "{what}: {stdout}"
        );
        assert_eq!(fs_err::read_to_string(&inner).unwrap(), "inner", "{what}");
        assert_eq!(
            fs_err::read_to_string(&header).unwrap(),
            "int base(void);\n",
            "{what}"
        );
        let again = fetch_base_lib(&f);
        let stdout = text(&again.stdout);
        assert!(
            again.status.success() && stdout.contains(cached),
            "{what}: {stdout}"
        );
    }
}

/// Two artifacts with different content at one path, fetched at once with `--flatten`: the
/// run fails naming both, and the tree holds every file of the artifact that came first and
/// none of the one that failed (its own files included), only what both hold alike.
#[test]
fn a_flattened_artifact_that_conflicts_leaves_none_of_its_files() {
    let f = fixture();
    let run_dir = f.server.root().join("therock-ci-artifacts/555-linux");
    for (name, stage, own) in [
        ("aqlprofile", "aqlprofile/stage", "aql"),
        ("rocprof", "rocprof/stage", "prof"),
    ] {
        let unique = format!("only-{name}.txt");
        let deep = format!("share/{name}/deep/{own}.txt");
        put_artifact(
            &run_dir,
            &format!("{name}_lib_generic.tar.zst"),
            ZSTD,
            stage,
            &[
                ("lib/libshared.so", own),
                (&unique, own),
                (&deep, own),
                ("share/doc/README", "alike"),
            ],
            true,
        );
    }
    let out = f.run(&["--flatten", "aqlprofile_lib|rocprof_lib"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let clash = format!(
        "`{}` is in both `",
        crate::common::native("lib/libshared.so")
    );
    let named = stderr
        .split_once(&clash)
        .unwrap_or_else(|| panic!("{stderr}"))
        .1;
    let first = named.split('`').next().unwrap();
    let (kept, failed) = if first.starts_with("aqlprofile") {
        (("aqlprofile", "aql"), ("rocprof", "prof"))
    } else {
        (("rocprof", "prof"), ("aqlprofile", "aql"))
    };
    let tree = rock_ci_test_support::files_under(&f.out());
    let mut expected: Vec<String> = vec![
        "lib/libshared.so".into(),
        format!("only-{}.txt", kept.0),
        format!("share/{}/deep/{}.txt", kept.0, kept.1),
        "share/doc/README".into(),
    ];
    expected.sort();
    assert_eq!(tree, expected, "{failed:?} failed: {stderr}");
    assert_eq!(
        fs_err::read_to_string(f.out().join("lib/libshared.so")).unwrap(),
        kept.1
    );
    assert_eq!(
        fs_err::read_to_string(f.out().join("share/doc/README")).unwrap(),
        "alike"
    );
    assert!(!f.out().join("share").join(failed.0).exists());
}

/// Symlinks and a 0444 file in every fetch mode: links read as their targets (on Windows
/// copies of them), a target before or after its link alike; the file is read-only; a second
/// fetch over the tree and the tree's removal are not stopped by it.
#[test]
fn symlinks_and_read_only_files_in_extract_and_flatten() {
    let f = fixture();
    let run_dir = f.server.root().join("therock-ci-artifacts/555-linux");
    crate::common::linked_artifact(&run_dir.join("links_lib_generic.tar.zst"), "links/stage");
    for (out, flatten) in [("o", false), ("flat", true)] {
        let mut args = vec!["--artifact-group", "gfx94X-dcgpu", "--output-dir", out];
        if flatten {
            args.push("--flatten");
        }
        for _ in 0..2 {
            let result = f.run(&args);
            assert!(
                result.status.success(),
                "{args:?}: {}\n{}",
                text(&result.stdout),
                text(&result.stderr)
            );
            let dir = f.work.path().join(out);
            crate::common::assert_linked(&if flatten {
                dir
            } else {
                dir.join("links_lib_generic/links/stage")
            });
        }
        let dir = f.work.path().join(out);
        file_tree::remove_tree(&dir).unwrap();
        assert!(!dir.exists());
    }
}
