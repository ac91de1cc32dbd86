//! `artifact_manager` against the in-process S3 server: a multi-stage pipeline (push, fetch
//! --bootstrap, push, copy across buckets, fetch --flatten / --no-extract / default), the
//! description commands, and the failures of spec §4.10.

use crate::common::Launch as _;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[cfg(unix)]
use rock_ci_test_support::tree_snapshot;
use rock_ci_test_support::{
    Fault, FaultPlan, FaultProxy, HttpServer, Reply, Rule, black_hole, sha256_hex,
};

use crate::common::HOST_PLATFORM;
use crate::store::Store;

pub(crate) const TOPOLOGY: &str = r#"
[build_stages.foundation]
description = "Host libraries"
artifact_groups = ["base-group"]

[build_stages.libs]
description = "GPU libraries"
artifact_groups = ["libs-group"]
type = "per-arch"

[build_stages.consumers]
description = "Everything downstream"
artifact_groups = ["consumer-group"]

[artifact_groups.base-group]

[artifact_groups.libs-group]
artifact_group_deps = ["base-group"]
type = "per-arch"

[artifact_groups.consumer-group]
artifact_group_deps = ["libs-group"]

[artifacts.base]
artifact_group = "base-group"

[artifacts.core]
artifact_group = "base-group"

[artifacts.math]
artifact_group = "libs-group"
type = "target-specific"
artifact_deps = ["core"]

[artifacts.app]
artifact_group = "consumer-group"
artifact_deps = ["math"]
"#;

const FORK: &str = "someone/TheRock";

struct Pipeline {
    server: Store,
    github: HttpServer,
    work: tempfile::TempDir,
}

fn write(path: &Path, content: &str) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

/// An exploded artifact `{dir}` in `build/artifacts` with manifest `relpath` and `files`;
/// names ending in `*` are executable, `name -> target` are symlinks (left out on Windows,
/// which makes symlinks only with a privilege: the tests run there do not look at them).
pub(crate) fn exploded(build: &Path, dir: &str, relpath: &str, files: &[(&str, &str)]) {
    let root = build.join("artifacts").join(dir);
    write(&root.join("artifact_manifest.txt"), &format!("{relpath}\n"));
    for (name, content) in files {
        if let Some((link, target)) = name.split_once(" -> ") {
            let path = root.join(relpath).join(link);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            #[cfg(unix)]
            std::os::unix::fs::symlink(target, path).unwrap();
            #[cfg(not(unix))]
            let _ = (target, path);
            continue;
        }
        let (name, exec) = match name.strip_suffix('*') {
            Some(n) => (n, true),
            None => (*name, false),
        };
        let path = root.join(relpath).join(name);
        write(&path, content);
        #[cfg(not(unix))]
        let _ = exec;
        #[cfg(unix)]
        if exec {
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

impl Pipeline {
    fn new() -> Self {
        let server = Store::start();
        for bucket in ["therock-ci-artifacts", "therock-ci-artifacts-external"] {
            server.create_bucket(bucket);
        }
        // Run 100 is a pull request from a fork; every other run is the base repository's.
        let github = HttpServer::start(|req| {
            let id = req.path.rsplit('/').next().unwrap_or_default().to_owned();
            let head = if id == "100" { FORK } else { "ROCm/TheRock" };
            Reply::json(
                200,
                &format!(r#"{{"id": {id}, "head_repository": {{"full_name": "{head}"}}}}"#),
            )
        });
        let work = tempfile::tempdir().unwrap();
        write(&work.path().join("therock/BUILD_TOPOLOGY.toml"), TOPOLOGY);
        write(
            &work
                .path()
                .join("therock/cmake/therock_amdgpu_targets.cmake"),
            "therock_add_amdgpu_target(gfx942 \"MI300\" FAMILY dcgpu-all gfx94X-dcgpu)\n\
             therock_add_amdgpu_target(gfx1100 \"RX 7900\" FAMILY gfx110X-all)\n",
        );
        Pipeline {
            server,
            github,
            work,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.work.path().join(rel)
    }

    /// `artifact_manager {args}` in the work directory with the topology of the checkout and
    /// `env` on top of the server's keys and the GitHub API.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let therock = self.path("therock");
        let mut command = Command::new(crate::common::tool("artifact_manager"));
        command
            .args(args)
            .env_clear()
            .envs(self.server.aws_env())
            .env("GITHUB_API_URL", self.github.url())
            .env("THEROCK_DIR", &therock)
            .envs(env.iter().copied())
            .current_dir(self.work.path());
        command.run_output().unwrap()
    }

    /// Pushes stage `foundation` with `core_lib_generic` holding 3 MiB that zstd cannot shrink
    /// (plus the directories already in `b1`), and starts a proxy sending GET bodies whose path
    /// contains `throttled` at 1 MiB/s: a fetch long enough to be watched or interrupted.
    fn push_big_behind_slow_link(
        &self,
        env: &[(&str, &str)],
        seed: u64,
        throttled: &str,
    ) -> (String, FaultProxy) {
        let build = self.path("b1");
        let noise = rock_ci_test_support::incompressible_text(3 << 20, seed);
        exploded(
            &build,
            "core_lib_generic",
            "core/stage",
            &[("lib/big.so", &noise)],
        );
        let build = build.to_str().unwrap();
        self.ok(
            &[
                "push",
                "--stage",
                "foundation",
                "--build-dir",
                build,
                "--platform",
                "linux",
                "--compression-level",
                "1",
            ],
            env,
        );
        let proxy = FaultProxy::start(
            self.server.addr(),
            FaultPlan::new().rule(
                Rule::new(Fault::Throttle {
                    bytes_per_sec: 1 << 20,
                })
                .method("GET")
                .path_contains(throttled),
            ),
        );
        (noise, proxy)
    }

    fn ok(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self.run(args, env);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// `tar -x` of the stored archive `key` into `dest`.
    #[cfg(unix)]
    fn untar(&self, bucket: &str, prefix: &str, key: &str, dest: &Path) {
        fs_err::create_dir_all(dest).unwrap();
        let archive = self.path(&format!("downloaded/{key}"));
        write(&archive, "");
        fs_err::write(
            &archive,
            self.server.read(bucket, &format!("{prefix}/{key}")),
        )
        .unwrap();
        let flag = if key.ends_with(".tar.xz") {
            "--xz"
        } else {
            "--zstd"
        };
        let status = Command::new("tar")
            .arg(flag)
            .arg("-xpf")
            .arg(archive)
            .arg("-C")
            .arg(dest)
            .status()
            .unwrap();
        assert!(status.success(), "tar -x {key}");
    }
}

/// The first stage's build: base (two components sharing `base/stage`), core for generic and
/// gfx942, a directory that is no artifact and a stray file.
fn foundation_build(p: &Pipeline) -> PathBuf {
    let build = p.path("b1");
    exploded(
        &build,
        "base_lib_generic",
        "base/stage",
        &[
            ("lib/libbase.so.1.0", "base library"),
            ("lib/libbase.so.1 -> libbase.so.1.0", ""),
            ("bin/base-tool*", "#!/bin/sh\necho base\n"),
        ],
    );
    exploded(
        &build,
        "base_dev_generic",
        "base/stage",
        &[("include/base.h", "int base(void);\n")],
    );
    exploded(
        &build,
        "core_lib_generic",
        "core/stage",
        &[("lib/libcore.so", &"core ".repeat(50_000))],
    );
    exploded(
        &build,
        "core_lib_gfx942",
        "core/stage",
        &[("lib/gfx942/kernels.bin", "gfx942 kernels")],
    );
    exploded(&build, "not-an-artifact", "x/stage", &[("f", "f")]);
    write(&build.join("artifacts/README"), "not an artifact");
    build
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one pipeline, each stage after the one it needs"
)]
// Symlinks, executable modes and GNU tar's unpacking of the pushed archives: Unix-only.
#[cfg(unix)]
fn a_multi_stage_pipeline_runs_through_s3() {
    let p = Pipeline::new();
    let fork_event = p.path("event.json");
    write(
        &fork_event,
        &format!(
            r#"{{"pull_request": {{"head": {{"repo": {{"full_name": "{FORK}", "fork": true}}}}}}}}"#
        ),
    );
    let fork_env: &[(&str, &str)] = &[
        ("GITHUB_REPOSITORY", "ROCm/TheRock"),
        ("GITHUB_RUN_ID", "100"),
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", fork_event.to_str().unwrap()),
    ];

    // Stage 1 of fork run 100 pushes into the external bucket.
    let b1 = foundation_build(&p);
    let out = p.ok(
        &[
            "push",
            "--stage",
            "foundation",
            "--build-dir",
            b1.to_str().unwrap(),
            "--platform",
            "linux",
        ],
        fork_env,
    );
    assert!(
        out.contains("Stage 'foundation' produces 2 artifacts: base, core"),
        "{out}"
    );
    assert!(out.contains("Compressed 4 artifacts, uploaded 4"), "{out}");
    assert!(
        !b1.join(".upload_cache").exists(),
        "the upload cache is removed after success"
    );
    let ext = "therock-ci-artifacts-external";
    let pushed_to = out
        .lines()
        .find_map(|l| l.strip_prefix("Using backend: s3://therock-ci-artifacts-external/"))
        .unwrap_or_else(|| panic!("pushed to the external bucket: {out}"));
    let ext_prefix = pushed_to.to_owned();
    let ext_prefix = ext_prefix.as_str();
    assert!(ext_prefix.ends_with("100-linux"), "{ext_prefix}");
    let keys = p.server.keys(ext, ext_prefix);
    let archives = [
        "base_dev_generic.tar.zst",
        "base_lib_generic.tar.zst",
        "core_lib_generic.tar.zst",
        "core_lib_gfx942.tar.zst",
    ];
    let mut expected: Vec<String> = archives
        .iter()
        .flat_map(|a| [(*a).to_owned(), format!("{a}.sha256sum")])
        .collect();
    expected.sort();
    assert_eq!(keys, expected);
    for a in archives {
        let sha = sha256_hex(&p.server.read(ext, &format!("{ext_prefix}/{a}")));
        let sidecar =
            String::from_utf8(p.server.read(ext, &format!("{ext_prefix}/{a}.sha256sum"))).unwrap();
        assert_eq!(sidecar.split_whitespace().next(), Some(sha.as_str()), "{a}");
        // The member index's digest in the object's metadata, as its tail holds it.
        let bytes = p.server.read(ext, &format!("{ext_prefix}/{a}"));
        let (index, index_sha) =
            artifacts::member_index::MemberIndex::from_tail(&bytes, bytes.len() as u64, None)
                .unwrap_or_else(|e| panic!("{a}: {e}"));
        let head = p.server.head(ext, &format!("{ext_prefix}/{a}")).unwrap();
        assert_eq!(
            head.metadata
                .get(artifacts::member_index::INDEX_SHA256_METADATA_KEY),
            Some(&index_sha),
            "{a}"
        );
        assert!(
            index
                .members
                .iter()
                .any(|m| m.path == "artifact_manifest.txt"),
            "{a}: {:?}",
            index.members
        );
    }
    // Listed from their indexes: one HEAD and one ranged GET of the tail per archive, beside
    // the listing.
    let before = p.server.requests();
    let listed = p.ok(
        &["list-members", "--platform", "linux", "--format", "json"],
        fork_env,
    );
    if let (Some(before), Some(after)) = (before, p.server.requests()) {
        assert!(after - before <= 2 + 2 * 4, "{} requests", after - before);
    }
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), archives.len());
    for (entry, a) in listed.iter().zip(archives) {
        assert_eq!(entry["archive"], a);
        assert_eq!(entry["indexed"], true, "{a}");
        let bytes = p.server.read(ext, &format!("{ext_prefix}/{a}"));
        let (index, _) =
            artifacts::member_index::MemberIndex::from_tail(&bytes, bytes.len() as u64, None)
                .unwrap();
        let paths: Vec<&str> = entry["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = index.members.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, expected, "{a}");
    }
    // What tar unpacks from the pushed archives is the exploded directories, file for file.
    for a in archives {
        let stem = a.strip_suffix(".tar.zst").unwrap();
        let unpacked = p.path(&format!("tar/{stem}"));
        p.untar(ext, ext_prefix, a, &unpacked);
        assert_eq!(
            tree_snapshot(&unpacked),
            tree_snapshot(&b1.join("artifacts").join(stem)),
            "{a}"
        );
    }

    // Stage 2 of the same run bootstraps: base and core trees, marked prebuilt; a stale file
    // from an earlier build is gone.
    let b2 = p.path("b2");
    write(&b2.join("core/stage/stale.txt"), "from an older build");
    let out = p.ok(
        &[
            "fetch",
            "--stage",
            "libs",
            "--output-dir",
            b2.to_str().unwrap(),
            "--bootstrap",
            "--amdgpu-families",
            "gfx94X-dcgpu",
            "--expand-family-to-targets",
            "--platform",
            "linux",
        ],
        fork_env,
    );
    assert!(
        out.contains("Stage 'libs' needs 2 artifacts: base, core"),
        "{out}"
    );
    assert!(out.contains("Downloaded 4 artifacts, extracted 4"), "{out}");
    assert!(b2.join("base/stage.prebuilt").is_file() && b2.join("core/stage.prebuilt").is_file());
    assert_eq!(
        fs_err::read(b2.join("base/stage.prebuilt")).unwrap().len(),
        0
    );
    assert!(!b2.join("core/stage/stale.txt").exists());
    let reference = p.path("tar-merged");
    for a in archives {
        p.untar(ext, ext_prefix, a, &reference);
    }
    fs_err::remove_file(reference.join("artifact_manifest.txt")).unwrap();
    let mut fetched = tree_snapshot(&b2);
    fetched.retain(|(path, _)| !path.ends_with(".prebuilt"));
    assert_eq!(fetched, tree_snapshot(&reference));

    // It builds math for gfx942 and pushes it.
    exploded(
        &b2,
        "math_lib_gfx942",
        "math/stage",
        &[("lib/libmath.so", "math")],
    );
    p.ok(
        &[
            "push",
            "--stage",
            "libs",
            "--build-dir",
            b2.to_str().unwrap(),
            "--platform",
            "linux",
        ],
        fork_env,
    );

    // A new run (200, the base repository's) copies the foundation stage of run 100 across
    // buckets; the GitHub API says run 100 came from a fork.
    let base_env: &[(&str, &str)] = &[
        ("GITHUB_REPOSITORY", "ROCm/TheRock"),
        ("GITHUB_RUN_ID", "200"),
    ];
    let out = p.ok(
        &[
            "copy",
            "--source-run-id",
            "100",
            "--stage",
            "foundation,libs",
            "--platform",
            "linux",
            "--amdgpu-families",
            "gfx94X-dcgpu",
            "--dry-run",
        ],
        base_env,
    );
    assert!(
        out.contains(&format!("Source: s3://{ext}/{ext_prefix}\n")),
        "the run look-up finds where the fork's run pushed: {out}"
    );
    assert!(
        out.contains("Dest:   s3://therock-ci-artifacts/200-linux"),
        "{out}"
    );
    assert!(
        out.contains("Dry run: would copy 3 artifacts:\n  base_dev_generic.tar.zst\n  base_lib_generic.tar.zst\n  core_lib_generic.tar.zst\n"),
        "{out}"
    );
    assert!(
        p.server
            .keys("therock-ci-artifacts", "200-linux")
            .is_empty()
    );
    let out = p.ok(
        &[
            "copy",
            "--source-run-id",
            "100",
            "--stage",
            "foundation,libs",
            "--platform",
            "linux",
            "--amdgpu-families",
            "gfx94X-dcgpu",
            "--expand-family-to-targets",
        ],
        base_env,
    );
    assert!(out.contains("Copied 5/5 artifacts"), "{out}");
    let mut copied = expected.clone();
    copied.extend([
        "math_lib_gfx942.tar.zst".to_owned(),
        "math_lib_gfx942.tar.zst.sha256sum".to_owned(),
    ]);
    copied.sort();
    assert_eq!(p.server.keys("therock-ci-artifacts", "200-linux"), copied);

    // Run 200's consumers fetch everything, flattened.
    let flat = p.path("flat");
    let out = p.ok(
        &[
            "fetch",
            "--stage",
            "all",
            "--output-dir",
            flat.to_str().unwrap(),
            "--flatten",
            "--amdgpu-targets",
            "gfx942",
            "--platform",
            "linux",
        ],
        base_env,
    );
    assert!(out.contains("Fetching all 4 artifacts"), "{out}");
    assert!(
        out.contains("WARNING: 1 requested artifacts have no archive"),
        "{out}"
    );
    assert_eq!(
        rock_ci_test_support::files_under(&flat),
        [
            "bin/base-tool",
            "include/base.h",
            "lib/gfx942/kernels.bin",
            "lib/libbase.so.1",
            "lib/libbase.so.1.0",
            "lib/libcore.so",
            "lib/libmath.so"
        ]
    );
    assert_eq!(
        fs_err::read_link(flat.join("lib/libbase.so.1")).unwrap(),
        Path::new("libbase.so.1.0")
    );
    let mode = fs_err::metadata(flat.join("bin/base-tool"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "the tool stays executable");

    // Default mode: one directory per archive below `artifacts/`; --no-extract: the archives.
    let o = p.path("o");
    p.ok(
        &[
            "fetch",
            "--stage",
            "consumers",
            "--output-dir",
            o.to_str().unwrap(),
            "--amdgpu-targets",
            "gfx942",
            "--platform",
            "linux",
        ],
        base_env,
    );
    assert_eq!(
        rock_ci_test_support::files_under(&o.join("artifacts/math_lib_gfx942")),
        ["artifact_manifest.txt", "math/stage/lib/libmath.so"]
    );
    let n = p.path("n");
    p.ok(
        &[
            "fetch",
            "--stage",
            "libs",
            "--output-dir",
            n.to_str().unwrap(),
            "--no-extract",
            "--platform",
            "linux",
            "--generic-only",
        ],
        base_env,
    );
    let cached = rock_ci_test_support::files_under(&n.join(".download_cache"));
    assert_eq!(
        cached,
        [
            "base_dev_generic.tar.zst",
            "base_dev_generic.tar.zst.sha256sum",
            "base_lib_generic.tar.zst",
            "base_lib_generic.tar.zst.sha256sum",
            "core_lib_generic.tar.zst",
            "core_lib_generic.tar.zst.sha256sum"
        ]
    );
    assert_eq!(
        fs_err::read(n.join(".download_cache/core_lib_generic.tar.zst")).unwrap(),
        p.server
            .read("therock-ci-artifacts", "200-linux/core_lib_generic.tar.zst"),
        "the cached archive is the stored one"
    );
}

#[test]
fn info_and_list_stages_print_the_reference_text() {
    let p = Pipeline::new();
    let out = p.ok(
        &[
            "info",
            "--stage",
            "libs",
            "--amdgpu-families",
            "gfx94X-dcgpu;gfx110X-all",
        ],
        &[],
    );
    assert_eq!(
        out,
        "Stage: libs\nType: per-arch\nDescription: GPU libraries\nArtifact groups: libs-group\n\n\
         Inbound artifacts (2):\n  - base (target-neutral)\n  - core (target-neutral)\n\n\
         Produced artifacts (1):\n  - math (target-specific)\n\n\
         Target families: generic, gfx94X-dcgpu, gfx110X-all\n"
    );
    let out = p.ok(&["list-stages"], &[]);
    assert_eq!(
        out,
        "Build stages:\n\n  foundation (generic)\n    Host libraries\n    Groups: base-group\n    Inbound: 0 artifacts\n    Produces: 2 artifacts\n\n  \
         libs (per-arch)\n    GPU libraries\n    Groups: libs-group\n    Inbound: 2 artifacts\n    Produces: 1 artifacts\n\n  \
         consumers (generic)\n    Everything downstream\n    Groups: consumer-group\n    Inbound: 2 artifacts\n    Produces: 1 artifacts\n"
    );
}

fn assert_exit(out: &Output, code: i32, needle: &str) {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(code), "{all}");
    assert!(all.contains(needle), "`{needle}` not in:\n{all}");
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one case after another on one server"
)]
fn bad_input_fails_clearly() {
    let p = Pipeline::new();
    let env: &[(&str, &str)] = &[("GITHUB_RUN_ID", "300")];
    let o = p.path("o");
    let o = o.to_str().unwrap();
    let fetch = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["fetch", "--output-dir", o, "--platform", "linux"];
        args.extend_from_slice(extra);
        p.run(&args, env)
    };
    assert_exit(
        &fetch(&["--stage", "nope"], env),
        1,
        "ERROR: Stage 'nope' not found\nAvailable stages: foundation, libs, consumers",
    );
    assert_exit(
        &fetch(&["--topology", "missing.toml"], env),
        1,
        "missing.toml",
    );
    write(&p.path("bad.toml"), "[build_stages.x]\ndescription = \n");
    assert_exit(
        &fetch(&["--topology", "bad.toml"], env),
        1,
        "line 2, column",
    );
    assert_exit(
        &fetch(&["--exclude-components", "lib,bogus"], env),
        1,
        "Invalid artifact component(s): bogus. Valid components are: lib, run, dev, dbg, doc, test",
    );
    assert_exit(
        &fetch(&["--exclude-artifacts", "nope"], env),
        1,
        "Invalid artifact name(s): nope. Valid artifacts are: app, base, core, math",
    );
    assert!(
        !p.path("o").exists(),
        "validation happens before anything is created"
    );
    assert_exit(
        &fetch(&["--bootstrap", "--flatten"], env),
        2,
        "cannot be used with",
    );
    assert_exit(
        &fetch(&["--bootstrap", "--no-extract"], env),
        2,
        "cannot be used with",
    );
    assert_exit(
        &fetch(&[], &[("THEROCK_LOCAL_STAGING_DIR", "")]),
        2,
        "THEROCK_LOCAL_STAGING_DIR is set but empty",
    );
    assert_exit(&fetch(&[], &[]), 2, "a run id is needed for S3");
    // Nothing in the run: an error naming run, bucket and prefix, unless allowed.
    assert_exit(
        &fetch(&["--stage", "libs"], env),
        1,
        "in run 300: bucket 'therock-ci-artifacts', prefix '300-linux/'",
    );
    let out = fetch(&["--stage", "libs", "--allow-empty"], env);
    assert_eq!(out.status.code(), Some(0));

    let push = |build: &str, env: &[(&str, &str)]| {
        p.run(
            &[
                "push",
                "--stage",
                "foundation",
                "--build-dir",
                build,
                "--platform",
                "linux",
            ],
            env,
        )
    };
    assert_exit(
        &push("no-such-build", env),
        1,
        &format!(
            "ERROR: Artifacts directory not found: {}",
            crate::common::native("no-such-build/artifacts")
        ),
    );
    // A build directory that is a file: said as it is (ENOTDIR), not as a missing directory.
    // (Windows reports such a path as not found.)
    if cfg!(unix) {
        write(&p.path("a-file"), "not a build directory");
        let out = push("a-file", env);
        assert_eq!(out.status.code(), Some(1));
        let said = crate::common::text(&out.stdout);
        assert!(
            said.contains("ERROR: Cannot read the artifacts directory:")
                && !said.contains("not found"),
            "{said}"
        );
    }
    // A pre-compressed archive whose sidecar disagrees is not uploaded.
    let b = p.path("b");
    write(
        &b.join("artifacts/base_lib_generic.tar.zst"),
        "not really zstd",
    );
    write(
        &b.join("artifacts/base_lib_generic.tar.zst.sha256sum"),
        &format!("{}\n", "0".repeat(64)),
    );
    assert_exit(
        &push(b.to_str().unwrap(), env),
        1,
        "ERROR: Only uploaded 0/1 artifacts",
    );
    assert!(
        p.server
            .keys("therock-ci-artifacts", "300-linux")
            .is_empty()
    );

    // Wrong keys: 403 names the object; an endpoint that never answers fails within the limits.
    let b1 = foundation_build(&p);
    let mut bad_keys: Vec<(&str, &str)> = env.to_vec();
    bad_keys.push(("AWS_SECRET_ACCESS_KEY", "wrong"));
    assert_exit(
        &push(b1.to_str().unwrap(), &bad_keys),
        1,
        "s3://therock-ci-artifacts/300-linux/",
    );
    let hole = format!("http://{}", black_hole());
    let started = std::time::Instant::now();
    let out = p.run(
        &[
            "fetch",
            "--output-dir",
            o,
            "--platform",
            "linux",
            "--read-timeout",
            "1",
            "--operation-timeout",
            "3",
            "--max-attempts",
            "2",
        ],
        &[("GITHUB_RUN_ID", "300"), ("AWS_ENDPOINT_URL", &hole)],
    );
    assert_exit(
        &out,
        1,
        "Failed to list the artifacts at s3://therock-ci-artifacts/300-linux",
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    // An output directory that cannot be created (below a file: refused even to root).
    p.ok(
        &[
            "push",
            "--stage",
            "foundation",
            "--build-dir",
            b1.to_str().unwrap(),
            "--platform",
            "linux",
        ],
        env,
    );
    write(&p.path("a-file"), "");
    let target = p.path("a-file/out");
    let out = p.run(
        &[
            "fetch",
            "--stage",
            "libs",
            "--output-dir",
            target.to_str().unwrap(),
            "--platform",
            "linux",
        ],
        env,
    );
    assert_exit(&out, 1, &crate::common::native("a-file/out"));
}

/// A stage job as it runs on the host (Windows runners included): `push` of a build directory
/// for the host's platform, then the next stage's `fetch --bootstrap` and a default fetch. The
/// archives hold the modes Linux consumers need whatever system pushed them (programs and
/// directories 0755, other files 0644: on Windows, programs are what Python's `os.stat` makes
/// executable there, `.exe`, `.bat`, `.cmd`, `.com`), and both fetches give back the files.
#[test]
fn a_stage_job_pushes_and_fetches_on_the_hosts_platform() {
    let p = Pipeline::new();
    let env: &[(&str, &str)] = &[("GITHUB_RUN_ID", "700")];
    let build = p.path("b1");
    exploded(
        &build,
        "base_lib_generic",
        "base/stage",
        &[
            ("bin/base-tool.exe*", "MZ tool"),
            ("lib/base.dll", "MZ library"),
            ("include/base.h", "int base(void);\n"),
            ("share/doc/README", "docs"),
        ],
    );
    exploded(
        &build,
        "core_lib_generic",
        "core/stage",
        &[("lib/core.dat", &"core ".repeat(50_000))],
    );
    let build_arg = build.to_str().unwrap();
    p.ok(
        &["push", "--stage", "foundation", "--build-dir", build_arg],
        env,
    );
    let key = format!("700-{HOST_PLATFORM}/base_lib_generic.tar.zst");
    let archive = p.server.read("therock-ci-artifacts", &key);
    let mut tar = tar::Archive::new(zstd::Decoder::new(&archive[..]).unwrap());
    let mut modes = std::collections::BTreeMap::new();
    for entry in tar.entries().unwrap() {
        let entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        modes.insert(path, entry.header().mode().unwrap() & 0o777);
    }
    for (member, mode) in [
        ("base/stage/bin/base-tool.exe", 0o755),
        ("base/stage/lib/base.dll", 0o644),
        ("base/stage/include/base.h", 0o644),
        ("base/stage/share/doc/README", 0o644),
        ("artifact_manifest.txt", 0o644),
    ] {
        assert_eq!(modes.get(member), Some(&mode), "{member}: {modes:?}");
    }
    for dir in ["base/stage/bin", "base/stage/share/doc"] {
        let mode = modes
            .iter()
            .find(|(k, _)| k.trim_end_matches('/') == dir)
            .map(|(_, m)| *m);
        assert_eq!(mode, Some(0o755), "{dir}: {modes:?}");
    }

    // The next stage bootstraps from what was pushed, and a default fetch extracts it.
    let b2 = p.path("b2");
    p.ok(
        &[
            "fetch",
            "--stage",
            "libs",
            "--bootstrap",
            "--output-dir",
            b2.to_str().unwrap(),
        ],
        env,
    );
    for (file, content) in [
        ("base/stage/bin/base-tool.exe", "MZ tool"),
        ("base/stage/include/base.h", "int base(void);\n"),
        ("core/stage/lib/core.dat", &"core ".repeat(50_000)),
    ] {
        assert_eq!(
            fs_err::read_to_string(b2.join(file)).unwrap(),
            content,
            "{file}"
        );
    }
    let fetched = p.path("fetched");
    p.ok(
        &[
            "fetch",
            "--stage",
            "libs",
            "--output-dir",
            fetched.to_str().unwrap(),
        ],
        env,
    );
    assert_eq!(
        fs_err::read_to_string(fetched.join("artifacts/base_lib_generic/base/stage/lib/base.dll"))
            .unwrap(),
        "MZ library"
    );
}

/// A bootstrap killed mid-way leaves no `.prebuilt` marker (the build would skip an
/// incomplete tree) and no partial files at final paths; running it again gives the complete tree.
#[test]
fn a_killed_bootstrap_leaves_no_marker_and_reruns_clean() {
    let p = Pipeline::new();
    let env: &[(&str, &str)] = &[("GITHUB_RUN_ID", "400")];
    let build = p.path("b1");
    exploded(
        &build,
        "base_lib_generic",
        "base/stage",
        &[("lib/small.so", "small")],
    );
    // Sent at 1 MiB/s: caught in flight.
    let (noise, proxy) = p.push_big_behind_slow_link(env, 0x9e37_79b9, "core_lib_generic.tar.zst");
    let out = p.path("b2");
    let mut command = Command::new(crate::common::tool("artifact_manager"));
    command
        .args([
            "fetch",
            "--stage",
            "libs",
            "--bootstrap",
            "--platform",
            "linux",
            "--output-dir",
        ])
        .arg(&out)
        .env_clear()
        .envs(p.server.aws_env())
        .env("AWS_ENDPOINT_URL", proxy.endpoint())
        .env("THEROCK_DIR", p.path("therock"))
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = command.run_spawn().unwrap();
    let started = std::time::Instant::now();
    let caught = loop {
        if out.join("base/stage/lib/small.so").exists() {
            std::thread::sleep(std::time::Duration::from_millis(200));
            child.kill().unwrap();
            break crate::common::killed(child.wait().unwrap());
        }
        if child.try_wait().unwrap().is_some() || started.elapsed().as_secs() > 60 {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(caught, "the fetch finished before it could be interrupted");
    assert!(!out.join("base/stage.prebuilt").exists() && !out.join("core/stage.prebuilt").exists());
    assert!(
        !out.join("core/stage/lib/big.so").exists(),
        "nothing half-written at a final path"
    );

    let stdout = p.ok(
        &[
            "fetch",
            "--stage",
            "libs",
            "--bootstrap",
            "--platform",
            "linux",
            "--output-dir",
            out.to_str().unwrap(),
        ],
        env,
    );
    assert!(
        stdout.contains("Downloaded 2 artifacts, extracted 2"),
        "{stdout}"
    );
    assert_eq!(
        rock_ci_test_support::files_under(&out),
        [
            "base/stage.prebuilt",
            "base/stage/lib/small.so",
            "core/stage.prebuilt",
            "core/stage/lib/big.so"
        ],
        "the complete tree, and no temporary directory left"
    );
    assert_eq!(
        fs_err::read_to_string(out.join("core/stage/lib/big.so")).unwrap(),
        noise
    );
}

// Read through a pseudo-terminal made by util-linux's script(1).
#[cfg(unix)]
/// On a terminal, the overall bar moves with the bytes as they arrive: a redraw mid-transfer
/// shows some but not all of the bytes (the display is read through a pseudo-terminal).
#[test]
fn the_terminal_display_moves_mid_transfer() {
    let p = Pipeline::new();
    let env: &[(&str, &str)] = &[("GITHUB_RUN_ID", "500")];
    let (_, proxy) = p.push_big_behind_slow_link(env, 0x5eed, "");
    let fetch = format!(
        "{} fetch --stage libs --bootstrap --platform linux --output-dir {}",
        crate::common::tool("artifact_manager"),
        p.path("b2").display()
    );
    // `script` runs the command on a pseudo-terminal and copies what it draws to stdout.
    let out = Command::new("script")
        .args(["-qfec", &fetch, "/dev/null"])
        .env_clear()
        .envs(p.server.aws_env())
        .env("AWS_ENDPOINT_URL", proxy.endpoint())
        .env("THEROCK_DIR", p.path("therock"))
        .env("TERM", "xterm")
        .envs(env.iter().copied())
        .run_output()
        .unwrap();
    let drawn = String::from_utf8_lossy(&out.stdout).replace('\r', "\n");
    assert!(out.status.success(), "{drawn}");
    // "Total [====>    ]  1.25 MiB/3.01 MiB ...": the done and total columns of each redraw.
    let redraws: Vec<(String, String)> = drawn
        .lines()
        .filter_map(|l| l.split_once("Total").map(|(_, rest)| rest.to_owned()))
        .filter_map(|rest| {
            let (_, counts) = rest.split_once(']')?;
            let mut words = counts.split_whitespace();
            let done = format!("{} {}", words.next()?, words.next()?);
            let (done, total) = done
                .split_once('/')
                .map(|(d, t)| (d.to_owned(), t.to_owned()))?;
            Some((done, format!("{total} {}", words.next()?)))
        })
        .collect();
    assert!(!redraws.is_empty(), "no overall bar drawn:\n{drawn}");
    let mid = redraws
        .iter()
        .filter(|(done, total)| done != "0 B" && done != total)
        .count();
    assert!(
        mid >= 2,
        "the overall bar never showed a transfer in progress: {redraws:?}"
    );
    assert!(
        drawn.contains("core_lib_generic.tar.zst"),
        "a bar per transfer in flight: {drawn}"
    );
}

/// `push` through a proxy that answers some PUTs with 503 and resets others: every retry is
/// logged as `++ Retry i/N for LOCATION: reason` at the default level and the closing totals
/// line counts them, as a fetch does; everything arrives.
#[test]
fn push_retries_are_logged_and_counted() {
    let p = Pipeline::new();
    let b1 = foundation_build(&p);
    let proxy = FaultProxy::start(
        p.server.addr(),
        FaultPlan::new()
            .rule(Rule::new(Fault::Status503).method("PUT").every(3))
            .rule(Rule::new(Fault::ResetBeforeHeaders).method("PUT").every(4)),
    );
    let endpoint = proxy.endpoint();
    let env: &[(&str, &str)] = &[
        ("AWS_ENDPOINT_URL", &endpoint),
        ("GITHUB_REPOSITORY", "ROCm/TheRock"),
    ];
    let out = p.run(
        &[
            "push",
            "--stage",
            "foundation",
            "--build-dir",
            b1.to_str().unwrap(),
            "--platform",
            "linux",
            "--run-id",
            "31",
        ],
        env,
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let injected = proxy.injected_total();
    assert!(injected >= 3, "only {injected} faults");
    let retries = stderr.lines().filter(|l| l.contains("++ Retry ")).count() as u64;
    assert_eq!(retries, injected, "{stderr}");
    assert!(
        stderr.contains("++ Retry 1/4 for s3://therock-ci-artifacts/31-linux/"),
        "{stderr}"
    );
    let totals = stdout
        .lines()
        .find(|l| l.starts_with("Uploaded 4 of 4 artifacts ("))
        .unwrap_or_else(|| panic!("no totals line: {stdout}"));
    assert!(
        totals.ends_with(&format!(" MiB/s), {injected} retries")),
        "{totals}"
    );
    assert_eq!(p.server.keys("therock-ci-artifacts", "31-linux").len(), 8);
}

/// A push stopped between an archive and its `.sha256sum`: every consumer verifies the archive
/// against the SHA-256 the upload recorded with the object (a different body fails), and
/// refuses an archive with neither unless `--allow-unverified`, in every mode.
#[test]
fn an_archive_without_its_sidecar_is_verified_from_its_metadata_or_refused() {
    let p = Pipeline::new();
    let b1 = foundation_build(&p);
    // Damaged bytes are fetched again once, not four times.
    let env: &[(&str, &str)] = &[
        ("GITHUB_REPOSITORY", "ROCm/TheRock"),
        ("ROCK_CI_MAX_ATTEMPTS", "2"),
    ];
    p.ok(
        &[
            "push",
            "--stage",
            "foundation",
            "--build-dir",
            b1.to_str().unwrap(),
            "--run-id",
            "33",
        ],
        env,
    );
    let bucket = "therock-ci-artifacts";
    let run = format!("33-{HOST_PLATFORM}");
    let key = &format!("{run}/core_lib_generic.tar.zst");
    p.server.delete(bucket, &format!("{key}.sha256sum"));
    let modes: [&[&str]; 4] = [&[], &["--flatten"], &["--bootstrap"], &["--no-extract"]];
    let fetch = |n: usize, mode: &[&str], extra: &[&str]| {
        let out_dir = p.path(&format!("out{n}"));
        let mut args = vec![
            "fetch",
            "--stage",
            "libs",
            "--amdgpu-families",
            "gfx94X-dcgpu",
            "--run-id",
            "33",
            "--output-dir",
            out_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(mode);
        args.extend_from_slice(extra);
        let out = p.run(&args, env);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), format!("{stdout}\n{stderr}"))
    };
    let core_line = |text: &str| {
        text.lines()
            .find(|l| l.contains("core_lib_generic.tar.zst (") && l.contains("++ "))
            .unwrap_or_else(|| panic!("no line for core_lib_generic: {text}"))
            .to_owned()
    };
    // Nothing of the fetch's own in the artifacts directory: only the artifacts.
    let only_artifacts = |n: usize| {
        let dir = p.path(&format!("out{n}/artifacts"));
        let hidden: Vec<String> = fs_err::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with('.'))
            .collect();
        assert!(hidden.is_empty(), "{}: {hidden:?}", dir.display());
    };
    // Verified from the recorded digest, in every mode.
    for (n, mode) in modes.iter().enumerate() {
        let (code, text) = fetch(n, mode, &[]);
        assert_eq!(code, Some(0), "{mode:?}: {text}");
        assert!(
            core_line(&text).contains("sha256 verified"),
            "{mode:?}: {text}"
        );
    }
    only_artifacts(0);
    // `out0` holds `artifacts/` alone, as the reference's; the records live beside it.
    assert_eq!(
        crate::fetch_artifacts::names(&p.path("out0")),
        ["artifacts"]
    );
    assert!(p.path(".out0.rock-ci-fetch").is_dir());
    // Another body under the recorded digest fails verification.
    let original = p.server.read(bucket, key);
    let base = format!("{run}/base_lib_generic.tar.zst");
    let other = p.server.read(bucket, &base);
    p.server
        .put_raw(bucket, key, other.clone(), Some(&sha256_hex(&original)));
    for (n, mode) in modes.iter().enumerate() {
        let (code, text) = fetch(10 + n, mode, &[]);
        assert_eq!(code, Some(1), "{mode:?}: {text}");
        assert!(text.contains("Checksum mismatch"), "{mode:?}: {text}");
    }
    // Neither sidecar nor recorded digest: refused, named, unless --allow-unverified.
    p.server.put_raw(bucket, key, original, None);
    for (n, mode) in modes.iter().enumerate() {
        let (code, text) = fetch(20 + n, mode, &[]);
        assert_eq!(code, Some(1), "{mode:?}: {text}");
        assert!(
            text.contains("core_lib_generic.tar.zst` cannot be verified"),
            "{mode:?}: {text}"
        );
        if mode.is_empty() {
            only_artifacts(20 + n);
        }
        let (code, text) = fetch(30 + n, mode, &["--allow-unverified"]);
        assert_eq!(code, Some(0), "{mode:?}: {text}");
        assert!(
            core_line(&text).contains("not verified"),
            "{mode:?}: {text}"
        );
    }
}

/// Fetched trees, in every mode, are what `tar -x` unpacks from the same archives: one pushed
/// from an exploded directory, one written by GNU tar, one by Python's `tarfile` (PAX
/// archives), each with sub-second times, modes 0444/0600/0640/0700/0750/0555, a name with a
/// backslash, links and a long name. Default mode keeps everything; `--bootstrap` and
/// `--flatten` everything but the attributes of the directories they merge into.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one pipeline, each fetch mode after the push"
)]
// Symlinks, executable modes and GNU tar's unpacking of the pushed archives: Unix-only.
#[cfg(unix)]
fn fetched_trees_are_what_tar_x_unpacks() {
    use rock_ci_test_support::tar_tree::{
        BACKSLASH_FILE, exact_snapshot, gnu_tar_artifact, python_tar_artifact,
        snapshot_without_dir_attributes, write_sample_tree,
    };
    let p = Pipeline::new();
    let build = p.path("b1");
    let artifacts = build.join("artifacts");
    write_sample_tree(&artifacts.join("base_lib_generic"), "base/stage", "pushed");
    let sources = p.path("sources");
    write_sample_tree(&sources.join("core_lib_generic"), "core/stage", "gnu");
    gnu_tar_artifact(
        &sources.join("core_lib_generic"),
        "core",
        &artifacts.join("core_lib_generic.tar.zst"),
    );
    write_sample_tree(&sources.join("core_dev_generic"), "core/dev", "python");
    python_tar_artifact(
        &sources.join("core_dev_generic"),
        "core",
        &artifacts.join("core_dev_generic.tar.xz"),
    );
    let env: &[(&str, &str)] = &[
        ("GITHUB_REPOSITORY", "ROCm/TheRock"),
        ("GITHUB_RUN_ID", "700"),
    ];
    let out = p.ok(
        &[
            "push",
            "--stage",
            "foundation",
            "--build-dir",
            build.to_str().unwrap(),
            "--platform",
            "linux",
        ],
        env,
    );
    assert!(out.contains("Compressed 1 artifacts, uploaded 3"), "{out}");
    let bucket = "therock-ci-artifacts";
    let prefix = "700-linux";
    // (stem, archive, relpath)
    let stored = [
        ("base_lib_generic", "base_lib_generic.tar.zst", "base/stage"),
        ("core_dev_generic", "core_dev_generic.tar.xz", "core/dev"),
        ("core_lib_generic", "core_lib_generic.tar.zst", "core/stage"),
    ];
    let by_tar = |stem: &str| p.path(&format!("tar/{stem}"));
    for (stem, key, _) in stored {
        p.untar(bucket, prefix, key, &by_tar(stem));
    }
    // The pushed archive holds the exploded directory to the nanosecond (all but the relpath's
    // own directories, which it does not store, as the reference does not).
    let below = |snapshot: Vec<(String, String)>| -> Vec<(String, String)> {
        snapshot
            .into_iter()
            .filter(|(path, _)| path != "base" && path != "base/stage")
            .collect()
    };
    assert_eq!(
        below(exact_snapshot(&by_tar("base_lib_generic"))),
        below(exact_snapshot(&artifacts.join("base_lib_generic")))
    );
    let backslash = format!("base/stage/{BACKSLASH_FILE}");
    assert!(by_tar("base_lib_generic").join(&backslash).is_file());

    // Default mode: every directory as tar unpacks it.
    let o = p.path("o");
    let fetch = |args: &[&str]| {
        let mut all = vec!["fetch", "--stage", "libs", "--platform", "linux"];
        all.extend_from_slice(&["--generic-only"]);
        all.extend_from_slice(args);
        p.ok(&all, env)
    };
    let out = fetch(&["--output-dir", o.to_str().unwrap()]);
    assert!(out.contains("Downloaded 3 artifacts, extracted 3"), "{out}");
    for (stem, _, _) in stored {
        let fetched = o.join("artifacts").join(stem);
        let (ours, tars) = (exact_snapshot(&fetched), exact_snapshot(&by_tar(stem)));
        // The relpath's own directories of the pushed archive: no members, so both were
        // created at the time of extraction.
        if stem == "base_lib_generic" {
            assert_eq!(below(ours), below(tars), "{stem}");
        } else {
            assert_eq!(ours, tars, "{stem}");
        }
    }
    assert!(
        o.join("artifacts/base_lib_generic")
            .join(&backslash)
            .is_file()
    );

    // Bootstrap and flatten, one artifact at a time (the samples share their paths).
    let only = [
        ("base_lib_generic", "core", "dev"),
        ("core_dev_generic", "base", "lib"),
        ("core_lib_generic", "base", "dev"),
    ];
    for ((stem, _, relpath), (_, other_artifact, other_component)) in stored.iter().zip(only) {
        let exclude = [
            "--exclude-artifacts",
            other_artifact,
            "--exclude-components",
            other_component,
        ];
        let b = p.path(&format!("bootstrap-{stem}"));
        let mut args = vec!["--output-dir", b.to_str().unwrap(), "--bootstrap"];
        args.extend_from_slice(&exclude);
        let out = fetch(&args);
        assert!(out.contains("Downloaded 1 artifacts, extracted 1"), "{out}");
        let reference = by_tar(stem);
        fs_err::remove_file(reference.join("artifact_manifest.txt")).unwrap();
        let mut fetched = snapshot_without_dir_attributes(&b);
        fetched.retain(|(path, _)| !path.ends_with(".prebuilt"));
        assert_eq!(
            fetched,
            snapshot_without_dir_attributes(&reference),
            "{stem}"
        );

        let flat = p.path(&format!("flat-{stem}"));
        let mut args = vec!["--output-dir", flat.to_str().unwrap(), "--flatten"];
        args.extend_from_slice(&exclude);
        fetch(&args);
        assert_eq!(
            snapshot_without_dir_attributes(&flat),
            snapshot_without_dir_attributes(&reference.join(relpath)),
            "{stem}"
        );
        assert!(flat.join(BACKSLASH_FILE).is_file(), "{stem}");
    }
}

/// Pushes stage `foundation` of run 35: `base_lib` and `base_dev` (one relpath) with different
/// content at `lib/libshared.so`, each with files of its own, and `share/doc/README` alike.
fn push_conflicting_foundation(p: &Pipeline, env: &[(&str, &str)]) {
    let build = p.path("b1");
    exploded(
        &build,
        "base_lib_generic",
        "base/stage",
        &[
            ("lib/libshared.so", "lib"),
            ("only-lib.txt", "lib"),
            ("share/lib/deep.txt", "lib"),
            ("share/doc/README", "alike"),
        ],
    );
    exploded(
        &build,
        "base_dev_generic",
        "base/stage",
        &[
            ("lib/libshared.so", "dev"),
            ("only-dev.txt", "dev"),
            ("share/dev/deep.txt", "dev"),
            ("share/doc/README", "alike"),
        ],
    );
    exploded(
        &build,
        "core_lib_generic",
        "core/stage",
        &[("lib/libcore.so", "core")],
    );
    p.ok(
        &[
            "push",
            "--stage",
            "foundation",
            "--build-dir",
            build.to_str().unwrap(),
            "--run-id",
            "35",
        ],
        env,
    );
}

/// Two artifacts of a stage with different content at one path, fetched with `--bootstrap`
/// and with `--flatten`: the fetch fails naming both, and the tree holds every file of the
/// artifact that came first and none of the one that failed, only what both hold alike.
#[test]
fn a_conflicting_artifact_leaves_none_of_its_files() {
    let p = Pipeline::new();
    let env: &[(&str, &str)] = &[("GITHUB_REPOSITORY", "ROCm/TheRock")];
    push_conflicting_foundation(&p, env);
    for (mode, stage) in [("--bootstrap", "base/stage/"), ("--flatten", "")] {
        let out_dir = p.path(&format!("out{mode}"));
        let out = p.run(
            &[
                "fetch",
                "--stage",
                "libs",
                "--amdgpu-families",
                "gfx94X-dcgpu",
                "--run-id",
                "35",
                "--output-dir",
                out_dir.to_str().unwrap(),
                mode,
            ],
            env,
        );
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{mode}: {text}");
        // The path is shown with the separators it was joined from (on Windows the
        // relpath's `/` and the member's `\`): compared with `/` only.
        let clash = format!("`{stage}lib/libshared.so` is in both `");
        let shown = text.replace('\\', "/");
        let named = shown
            .split_once(&clash)
            .unwrap_or_else(|| panic!("{mode}: {text}"))
            .1;
        let kept = if named.starts_with("base_lib") {
            "lib"
        } else {
            "dev"
        };
        let mut expected: Vec<String> = [
            format!("{stage}lib/libshared.so"),
            format!("{stage}only-{kept}.txt"),
            format!("{stage}share/{kept}/deep.txt"),
            format!("{stage}share/doc/README"),
            if stage.is_empty() {
                "lib/libcore.so".to_owned()
            } else {
                "core/stage/lib/libcore.so".to_owned()
            },
        ]
        .into();
        expected.sort();
        let mut files = rock_ci_test_support::files_under(&out_dir);
        // No marker: the fetch failed.
        assert!(
            !files.iter().any(|f| f.ends_with(".prebuilt")),
            "{mode}: {files:?}"
        );
        files.retain(|f| !f.ends_with(".prebuilt"));
        assert_eq!(files, expected, "{mode}: {text}");
        assert_eq!(
            fs_err::read_to_string(out_dir.join(format!("{stage}lib/libshared.so"))).unwrap(),
            kept,
            "{mode}"
        );
        let failed = if kept == "lib" { "dev" } else { "lib" };
        assert!(
            !out_dir.join(format!("{stage}share/{failed}")).exists(),
            "{mode}"
        );
    }
}

/// `fetch --bootstrap`, `--flatten` and the default fetch of an artifact with symlinks and a
/// 0444 file: links read as their targets (on Windows copies of them, whatever the order of
/// link and target in the archive), the file is read-only, and a second fetch over the tree
/// (the bootstrap clearing what the first one left) and the tree's removal are not stopped by
/// it.
#[test]
fn every_fetch_mode_gives_symlinks_and_read_only_files() {
    let p = Pipeline::new();
    let env: &[(&str, &str)] = &[("GITHUB_RUN_ID", "600")];
    let archive = p.path("up/base_lib_generic.tar.zst");
    fs_err::create_dir_all(archive.parent().unwrap()).unwrap();
    crate::common::linked_artifact(&archive, "base/stage");
    for name in [
        "base_lib_generic.tar.zst",
        "base_lib_generic.tar.zst.sha256sum",
    ] {
        p.server.upload(
            &archive.with_file_name(name),
            "therock-ci-artifacts",
            &format!("600-linux/{name}"),
        );
    }
    for (out, mode, stage) in [
        ("boot", Some("--bootstrap"), "base/stage"),
        ("flat", Some("--flatten"), ""),
        ("all", None, "artifacts/base_lib_generic/base/stage"),
    ] {
        let dir = p.path(out);
        let mut args = vec![
            "fetch",
            "--stage",
            "libs",
            "--platform",
            "linux",
            "--output-dir",
            dir.to_str().unwrap(),
        ];
        args.extend(mode);
        for _ in 0..2 {
            p.ok(&args, env);
            crate::common::assert_linked(&dir.join(stage));
        }
        file_tree::remove_tree(&dir).unwrap();
        assert!(!dir.exists(), "{out}");
    }
}
