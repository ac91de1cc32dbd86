//! One whole CI run of a small generated project, job after job in the order its workflows
//! run them, each tool with the environment GitHub Actions gives its step: the stage jobs of a
//! multi-arch build for two GPU families (each with its credentials step), the artifact
//! structure check, a test shard per family, the deb and rpm packages jobs (with their
//! packaging logs), the multi-arch Python packages job and its test job (`pip install
//! rocm[libraries,device-gfx942]` from the uploaded index), the tarballs job (`build_tarballs`,
//! `upload_tarballs`), the manifest-diff report, the release (then `pip`, `apt-get` and `dnf`
//! from the release bucket), and a second run that copies the first run's stages and rebuilds
//! only the last one.
//!
//! At the end the run bucket holds exactly the keys the jobs' inputs imply (what each build
//! step wrote, the families and stages each tool was asked for, the packages and logs each
//! job made), computed as the jobs run and not asked of the tools' layout code; every archive
//! and tarball has its sidecar and every digest is right. The same check is then run on the
//! bucket changed as broken jobs would leave it (a family missing from the copy, no ninja log,
//! a sidecar dropped or wrong, a stray key, a packaging log missing): each must fail it. Every
//! key is also one that `ci_layout` names.
//!
//! With `ROCK_CI_S3_ENDPOINT` the run goes to that server (`scripts/e2e-ci-run` starts
//! SeaweedFS, which serves the buckets the installers read without credentials); with
//! `ROCK_CI_WINDOWS_ROCK_CI` (the Windows build of `rock-ci`, run by `ROCK_CI_WINE`) the
//! Windows jobs of the same run follow (stage jobs and a test shard under Wine; the structure
//! check and the tarballs of the Windows run, which run on Linux runners). With `THEROCK_DIR`
//! (a TheRock checkout) the Python packages are built from its templates and the test job runs
//! their `rocm-sdk test`. Each tool line and what the tool said it transferred are printed
//! (`--nocapture` shows them).
#![expect(
    clippy::print_stdout,
    reason = "the run prints each job's tool lines and the key check for its reader"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rock_ci_test_support::{HttpServer, Reply};

use crate::common::{Launch as _, text, write};
use crate::store::Store;

/// The project's build topology: two generic stages, a per-arch one, and a generic stage
/// after it that the second run rebuilds.
const TOPOLOGY: &str = r#"
[build_stages.foundation]
description = "Base files"
artifact_groups = ["base-group"]

[build_stages.compiler-runtime]
description = "HIP runtime and compiler"
artifact_groups = ["runtime-group"]

[build_stages.math-libs]
description = "GPU libraries"
artifact_groups = ["math-group"]
type = "per-arch"

[build_stages.profiler]
description = "Profiler"
artifact_groups = ["profiler-group"]

[artifact_groups.base-group]

[artifact_groups.runtime-group]
artifact_group_deps = ["base-group"]

[artifact_groups.math-group]
artifact_group_deps = ["runtime-group"]
type = "per-arch"

[artifact_groups.profiler-group]
artifact_group_deps = ["runtime-group"]

[artifacts.base]
artifact_group = "base-group"

[artifacts.core-hip]
artifact_group = "runtime-group"

[artifacts.blas]
artifact_group = "math-group"
type = "target-specific"
artifact_deps = ["core-hip"]

[artifacts.rocprofiler-systems]
artifact_group = "profiler-group"
artifact_deps = ["core-hip"]
"#;

const REPO: &str = "ROCm/TheRock";
/// The release type of both runs: a release run, whose outputs the release job publishes.
const RELEASE_TYPE: &str = "dev";
const BUCKET: &str = "therock-dev-artifacts";
const RELEASE_BUCKET: &str = "therock-repo-amd-dev-core";
const RUN: &str = "7001";
const RERUN: &str = "7002";
const VERSION: &str = "7.13.0";
/// What the Python jobs install.
const SDK: &str = "rocm[libraries,devel,device]";
/// The GPU families of the run and each one's target.
const FAMILIES: [(&str, &str); 2] = [("gfx94X-dcgpu", "gfx942"), ("gfx110X-all", "gfx1100")];
/// Stages in topology order, with whether each is built once per family.
const STAGES: [(&str, bool); 4] = [
    ("foundation", false),
    ("compiler-runtime", false),
    ("math-libs", true),
    ("profiler", false),
];
/// The artifact directories each stage's build writes (`{target}` once per target of the job's
/// family).
fn stage_outputs(stage: &str) -> &'static [&'static str] {
    match stage {
        "foundation" => &["base_lib_generic"],
        "compiler-runtime" => &["core-hip_lib_generic", "core-hip_dev_generic"],
        "math-libs" => &[
            "blas_lib_generic",
            "blas_dev_generic",
            "blas_test_generic",
            "blas_lib_{target}",
        ],
        "profiler" => &["rocprofiler-systems_lib_generic"],
        other => panic!("no stage {other}"),
    }
}

/// What a Windows job runs: the Windows build of `rock-ci` under Wine.
struct Windows {
    wine: PathBuf,
    rock_ci: PathBuf,
}

impl Windows {
    fn from_env() -> Option<Self> {
        let rock_ci = std::env::var_os("ROCK_CI_WINDOWS_ROCK_CI").filter(|v| !v.is_empty())?;
        let wine = std::env::var_os("ROCK_CI_WINE").unwrap_or_else(|| "wine".into());
        Some(Windows {
            wine: wine.into(),
            rock_ci: rock_ci.into(),
        })
    }
}

/// `path` as a Windows program under Wine reads it (drive `Z:` is the Linux root).
fn wine_path(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// The run: the S3 server, the GitHub API, the generated project and the built artifacts.
struct CiRun {
    store: Store,
    github: HttpServer,
    work: tempfile::TempDir,
    /// Every artifact directory the project's builds make, by directory name.
    built: PathBuf,
    /// The keys the jobs' inputs say they write to the run bucket, gathered as they run.
    expected: std::cell::RefCell<BTreeSet<String>>,
}

/// One job: its name, working directory and environment, and the files GitHub gives it.
struct Job<'a> {
    run: &'a CiRun,
    name: String,
    dir: PathBuf,
    env: Vec<(String, String)>,
    windows: Option<&'a Windows>,
}

impl CiRun {
    fn start() -> Self {
        let store = Store::start();
        for bucket in [BUCKET, RELEASE_BUCKET] {
            store.create_bucket(bucket);
        }
        // Every run asked about is the base repository's own (not a pull request from a fork).
        let github = HttpServer::start(|req| {
            let id = req.path.rsplit('/').next().unwrap_or_default().to_owned();
            Reply::json(
                200,
                &format!(
                    r#"{{"id": {id}, "head_repository": {{"full_name": "{REPO}"}}, "repository": {{"full_name": "{REPO}"}}}}"#
                ),
            )
        });
        let work = tempfile::tempdir().unwrap();
        let checkout = work.path().join("therock");
        write(&checkout.join("BUILD_TOPOLOGY.toml"), TOPOLOGY);
        write(
            &checkout.join("cmake/therock_amdgpu_targets.cmake"),
            "therock_add_amdgpu_target(gfx942 \"MI300\" FAMILY dcgpu-all gfx94X-dcgpu)\n\
             therock_add_amdgpu_target(gfx1100 \"RX 7900\" FAMILY gfx110X-all)\n",
        );
        write(
            &checkout.join("version.json"),
            &format!("{{\"rocm-version\": \"{VERSION}\"}}\n"),
        );
        copy_tree(
            &crate::build_python_packages::templates(),
            &checkout.join("build_tools/packaging/python/templates"),
        );
        let built = work.path().join("built");
        build_project(&built);
        CiRun {
            store,
            github,
            work,
            built,
            expected: std::cell::RefCell::default(),
        }
    }

    fn checkout(&self) -> PathBuf {
        self.work.path().join("therock")
    }

    /// Expects `key` in the run bucket at the end.
    fn expect(&self, key: String) {
        self.expected.borrow_mut().insert(key);
    }

    /// Expects artifact archive `name` (`.tar.zst`, as push writes them) and its sidecar
    /// below `root`.
    fn expect_archive(&self, root: &str, name: &str) {
        self.expect(format!("{root}/{name}.tar.zst"));
        self.expect(format!("{root}/{name}.tar.zst.sha256sum"));
    }

    /// Expects every file below `dir` at the same relative path below `prefix`.
    fn expect_files(&self, prefix: &str, dir: &Path) {
        for rel in rock_ci_test_support::files_under(dir) {
            self.expect(format!("{prefix}/{rel}"));
        }
    }

    /// A new job `name` of run `run_id`, in a directory of its own, on Linux or (with
    /// `windows`) on a Windows runner.
    fn job<'a>(&'a self, name: &str, run_id: &str, windows: Option<&'a Windows>) -> Job<'a> {
        println!(
            "\n=== job: {name} (run {run_id}{})",
            if windows.is_some() { ", Windows" } else { "" }
        );
        let dir = self.work.path().join("jobs").join(format!(
            "{run_id}-{}{}",
            name.replace([' ', '/', '(', ')', ','], "_"),
            if windows.is_some() { "-windows" } else { "" }
        ));
        // Each job starts in a checkout of the project, as `actions/checkout` leaves it.
        copy_tree(&self.checkout(), &dir);
        let file = |name: &str| {
            let path = dir.join(name);
            fs_err::write(&path, "").unwrap();
            match windows {
                Some(_) => wine_path(&path),
                None => path.display().to_string(),
            }
        };
        let mut env: Vec<(String, String)> = self
            .store
            .aws_env()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        env.extend(
            [
                ("GITHUB_ACTIONS", "true".to_owned()),
                ("GITHUB_REPOSITORY", REPO.to_owned()),
                ("GITHUB_RUN_ID", run_id.to_owned()),
                ("GITHUB_EVENT_NAME", "workflow_dispatch".to_owned()),
                ("GITHUB_API_URL", self.github.url()),
                ("GITHUB_OUTPUT", file("github_output")),
                ("GITHUB_STEP_SUMMARY", file("step_summary.md")),
                ("GITHUB_ENV", file("github_env")),
                ("RELEASE_TYPE", RELEASE_TYPE.to_owned()),
                // The workflows hand the job's token to the steps that look runs up.
                ("GITHUB_TOKEN", "ghs_job_token".to_owned()),
                (
                    "RUNNER_OS",
                    if windows.is_some() {
                        "Windows"
                    } else {
                        "Linux"
                    }
                    .to_owned(),
                ),
                ("ROCM_SDK_WHEEL_PLATFORM_TAG", "linux_x86_64".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        if let Some(path) = std::env::var_os("PATH") {
            env.push(("PATH".to_owned(), path.to_string_lossy().into_owned()));
        }
        Job {
            run: self,
            name: if windows.is_some() {
                format!("{name}, Windows")
            } else {
                name.to_owned()
            },
            dir,
            env,
            windows,
        }
    }
}

impl Job<'_> {
    /// A path of this job's working directory, as its tools take it.
    fn path(&self, rel: &str) -> String {
        let path = self.dir.join(rel);
        match self.windows {
            Some(_) => wine_path(&path),
            None => path.display().to_string(),
        }
    }

    fn set(&mut self, name: &str, value: &str) {
        self.env.retain(|(k, _)| k != name);
        self.env.push((name.to_owned(), value.to_owned()));
    }

    /// Runs `tool` with `args` in the job's directory; prints the line and what the tool said
    /// it transferred ([`summary`]); returns stdout and stderr.
    fn tool(&self, tool: &str, args: &[&str]) -> (String, String) {
        self.run_tool(tool, args, true)
    }

    /// [`Job::tool`], printing only the command line.
    fn tool_quiet(&self, tool: &str, args: &[&str]) -> (String, String) {
        self.run_tool(tool, args, false)
    }

    fn run_tool(&self, tool: &str, args: &[&str], show: bool) -> (String, String) {
        println!("[{}] $ {tool} {}", self.name, args.join(" "));
        let mut cmd = if let Some(w) = self.windows {
            // Wine needs its own variables (the prefix): the environment is inherited.
            let mut cmd = Command::new(&w.wine);
            cmd.arg(&w.rock_ci).arg(tool);
            cmd
        } else {
            let mut cmd = Command::new(crate::common::tool(tool));
            cmd.env_clear();
            cmd
        };
        let out = cmd
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.dir)
            .run_output()
            .unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        if show {
            let lines: Vec<&str> = stdout.lines().chain(stderr.lines()).collect();
            let kept = summary(&lines);
            println!("    ({} lines; the counts and totals:)", lines.len());
            for line in kept {
                println!("    {line}");
            }
        }
        assert!(
            out.status.success(),
            "[{}] {tool} {args:?}: exit {:?}\n{stdout}\n{stderr}",
            self.name,
            out.status.code()
        );
        (stdout, stderr)
    }

    /// The step outputs the job's tools wrote (`name=value` lines).
    fn outputs(&self) -> BTreeMap<String, String> {
        fs_err::read_to_string(self.dir.join("github_output"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// The build step of a stage: writes the stage's artifact directories (for `family`'s
    /// targets), its logs, a ninja log and (for `compiler-runtime`) the build manifest.
    fn build_stage(&self, stage: &str, family: &str) -> Vec<String> {
        let build = self.dir.join("build");
        let targets: Vec<&str> = FAMILIES
            .iter()
            .filter(|(f, _)| *f == family)
            .map(|(_, t)| *t)
            .collect();
        let mut made = Vec::new();
        for pattern in stage_outputs(stage) {
            let names: Vec<String> = if pattern.contains("{target}") {
                targets
                    .iter()
                    .map(|t| pattern.replace("{target}", t))
                    .collect()
            } else {
                vec![(*pattern).to_owned()]
            };
            for name in names {
                let from = if self.windows.is_some() {
                    self.run.built.join("windows").join(&name)
                } else {
                    self.run.built.join(&name)
                };
                copy_tree(&from, &build.join("artifacts").join(&name));
                made.push(name);
            }
        }
        write(
            &build.join(format!("logs/{stage}_build.log")),
            &format!("built {stage} for {family:?}\n"),
        );
        write(
            &build.join(".ninja_log"),
            "# ninja log v6\n10\t200\t0\tlib/a.o\t1f2e\n",
        );
        if stage == "compiler-runtime" {
            write(
                &build.join("base/aux-overlay/build/therock_manifest.json"),
                "{\"flags\": {\"KPACK_SPLIT_ARTIFACTS\": true}}\n",
            );
        }
        println!("[{}] build step wrote {}", self.name, made.join(", "));
        made
    }

    /// The credentials step of the release job (`configure_aws_product_publication_credentials`,
    /// for the core product): the release bucket's outputs.
    fn product_bucket_info(&self) {
        self.tool(
            "write_product_release_bucket_info",
            &["--release-type", RELEASE_TYPE, "--product", "core"],
        );
        assert_eq!(self.outputs()["bucket"], RELEASE_BUCKET, "[{}]", self.name);
    }

    /// The credentials step of an uploading job (`configure_aws_artifacts_credentials`): the
    /// run bucket's outputs.
    fn artifacts_bucket_info(&self) {
        self.tool(
            "write_artifacts_bucket_info",
            &["--release-type", RELEASE_TYPE],
        );
        assert_eq!(self.outputs()["bucket"], BUCKET, "[{}]", self.name);
    }
}

/// The lines of a tool's output that say what it transferred: its counts and totals (what was
/// uploaded, fetched, copied, published or written, and where), its outputs and any warning
/// or error.
fn summary<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    const STARTS: [&str; 23] = [
        "::: Finished building",
        "::: Creating package",
        "Uploaded",
        "Fetched",
        "Downloaded",
        "Copied",
        "Published",
        "Publishing",
        "Created",
        "++ Created",
        "Wrote",
        "Found",
        "Done",
        "Destination",
        "Setting github output",
        "OUTPUT ",
        "ERROR",
        "WARNING",
        "Only ",
        "Built",
        "Installed",
        "Packaging logs",
        "Uploading",
    ];
    lines
        .iter()
        .filter(|l| {
            let t = l.trim_start();
            let t = t.strip_prefix("[INFO] ").unwrap_or(t);
            STARTS.iter().any(|s| t.starts_with(s))
                || (t.starts_with("therock-dist-") || t.contains(".tar.gz ("))
        })
        .copied()
        .collect()
}

/// Copies the tree `from` to `to`, links as links.
fn copy_tree(from: &Path, to: &Path) {
    let meta = fs_err::symlink_metadata(from).unwrap();
    if meta.file_type().is_symlink() {
        fs_err::create_dir_all(to.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(fs_err::read_link(from).unwrap(), to).unwrap();
    } else if meta.is_dir() {
        fs_err::create_dir_all(to).unwrap();
        for entry in fs_err::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        fs_err::copy(from, to).unwrap();
    }
}

/// Every artifact directory the project's builds write: the ROCm-like set of real ELF files
/// built by `cc` (with a GPU-specific `blas` per target and a test artifact), and a Windows
/// set (DLL-like files, no links) below `windows/`.
fn build_project(built: &Path) {
    rock_ci_test_support::rocm::artifact_set(built, true);
    // The second target's files, as the first one's.
    let gfx = rock_ci_test_support::rocm::stage(built, "blas_lib_gfx1100");
    write(&gfx.join(".kpack/blas_lib_gfx1100.kpack"), "kpack\n");
    write(
        &gfx.join("lib/rocblas/library/Foo_gfx1100.co"),
        "code object\n",
    );
    let test = rock_ci_test_support::rocm::stage(built, "blas_test_generic");
    write(
        &test.join("bin/rocblas-test"),
        "#!/bin/sh\necho rocblas tests pass\n",
    );
    fs_err::set_permissions(
        test.join("bin/rocblas-test"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let windows = built.join("windows");
    for (artifact, files) in [
        (
            "base_lib_generic",
            &["share/therock/therock_manifest.json"][..],
        ),
        (
            "core-hip_lib_generic",
            &["bin/amdhip64_7.dll", "bin/hipcc.exe"],
        ),
        ("core-hip_dev_generic", &["include/hip/hip_runtime.h"]),
        ("blas_lib_generic", &["bin/rocblas.dll"]),
        ("blas_dev_generic", &["include/rocblas/rocblas.h"]),
        ("blas_test_generic", &["bin/rocblas-test.exe"]),
        ("blas_lib_gfx942", &["bin/rocblas/library/Foo_gfx942.co"]),
        ("blas_lib_gfx1100", &["bin/rocblas/library/Foo_gfx1100.co"]),
        ("rocprofiler-systems_lib_generic", &["bin/rocprof-sys.dll"]),
    ] {
        let stage = rock_ci_test_support::rocm::stage(&windows, artifact);
        for file in files {
            let content = if file.ends_with("therock_manifest.json") {
                // Device files split per target, as on Linux.
                "{\"flags\": {\"KPACK_SPLIT_ARTIFACTS\": true}}\n".to_owned()
            } else {
                format!("{artifact} {file}\n")
            };
            write(&stage.join(file), &content);
        }
    }
}

/// A stage job (`multi_arch_build_portable_linux_artifacts.yml`, or the Windows one): fetch
/// the inbound artifacts, build, push, upload the logs. Expects the archives of what the build
/// wrote, its logs with the ninja log's archive, and (`compiler-runtime`) the build manifest.
fn stage_job(ci: &CiRun, run_id: &str, stage: &str, family: &str, windows: Option<&Windows>) {
    let label = if family.is_empty() {
        stage.to_owned()
    } else {
        format!("{stage} ({family})")
    };
    let mut job = ci.job(&label, run_id, windows);
    job.set("STAGE_NAME", stage);
    job.set("AMDGPU_FAMILIES", family);
    job.set("BUILD_DIR", "build");
    job.tool(
        "artifact_manager",
        &[
            "fetch",
            &format!("--run-id={run_id}"),
            &format!("--stage={stage}"),
            &format!("--amdgpu-families={family}"),
            "--output-dir=build",
            "--bootstrap",
        ],
    );
    let made = job.build_stage(stage, family);
    job.artifacts_bucket_info();
    job.tool(
        "artifact_manager",
        &[
            "push",
            "--run-id",
            run_id,
            &format!("--stage={stage}"),
            "--build-dir=build",
        ],
    );
    let root = format!(
        "{run_id}-{}",
        if windows.is_some() {
            "windows"
        } else {
            "linux"
        }
    );
    for name in &made {
        ci.expect_archive(&root, name);
    }
    // What the build left for the log upload, before the tool looks at it.
    let logs = if family.is_empty() {
        format!("{root}/logs/{stage}")
    } else {
        format!("{root}/logs/{stage}/{family}")
    };
    ci.expect_files(&logs, &job.dir.join("build/logs"));
    if job.dir.join("build/.ninja_log").is_file() {
        ci.expect(format!("{logs}/ninja_logs.tar.gz"));
    }
    if job
        .dir
        .join("build/base/aux-overlay/build/therock_manifest.json")
        .is_file()
    {
        ci.expect(format!("{root}/manifests/therock_manifest.json"));
    }
    job.tool(
        "post_stage_upload",
        &[
            &format!("--run-id={run_id}"),
            &format!("--stage={stage}"),
            "--build-dir=build",
            &format!("--amdgpu-family={family}"),
        ],
    );
}

/// Every stage job of `run_id` in topology order, per-arch stages once per family.
fn stage_jobs(ci: &CiRun, run_id: &str, stages: &[(&str, bool)], windows: Option<&Windows>) {
    for (stage, per_arch) in stages {
        if *per_arch {
            let families: &[(&str, &str)] = if windows.is_some() {
                &FAMILIES[1..]
            } else {
                &FAMILIES
            };
            for (family, _) in families {
                stage_job(ci, run_id, stage, family, windows);
            }
        } else {
            stage_job(ci, run_id, stage, "", windows);
        }
    }
}

/// A test shard (`setup_test_environment`): installs the family's blas with its tests from the
/// run and runs the test program (it uploads nothing).
fn test_shard(ci: &CiRun, run_id: &str, family: &str, target: &str, windows: Option<&Windows>) {
    let mut job = ci.job(&format!("test shard ({family})"), run_id, windows);
    let fetch_args = "--blas --tests";
    for (k, v) in [
        ("ARTIFACT_RUN_ID", run_id),
        ("ARTIFACT_GROUP", family),
        ("AMDGPU_TARGETS", target),
        ("OUTPUT_ARTIFACTS_DIR", "./build"),
        ("FETCH_ARTIFACT_ARGS", fetch_args),
    ] {
        job.set(k, v);
    }
    let mut args = vec![
        format!("--run-id={run_id}"),
        format!("--artifact-group={family}"),
        format!("--amdgpu-targets={target}"),
        "--output-dir=./build".to_owned(),
    ];
    args.extend(fetch_args.split(' ').map(str::to_owned));
    job.tool(
        "install_rocm_from_artifacts",
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let build = job.dir.join("build");
    let other = FAMILIES.iter().find(|(f, _)| *f != family).unwrap().1;
    if windows.is_some() {
        for file in [
            "bin/rocblas.dll",
            "bin/amdhip64_7.dll",
            "bin/rocblas-test.exe",
        ] {
            assert!(build.join(file).is_file(), "{file} installed");
        }
        assert!(
            build
                .join(format!("bin/rocblas/library/Foo_{target}.co"))
                .is_file()
        );
        assert!(
            !build
                .join(format!("bin/rocblas/library/Foo_{other}.co"))
                .exists()
        );
        assert!(!build.join("bin/rocprof-sys.dll").exists(), "not asked for");
        return;
    }
    assert!(
        build
            .join(format!("lib/rocblas/library/Foo_{target}.co"))
            .is_file()
    );
    assert!(
        !build
            .join(format!("lib/rocblas/library/Foo_{other}.co"))
            .exists()
    );
    assert!(
        !build.join("lib/librocprof-sys.so.1").exists(),
        "not asked for"
    );
    // The shard's tests: the test program, and the library loaded with its dependency.
    let ran = Command::new(build.join("bin/rocblas-test"))
        .output()
        .unwrap();
    assert_eq!(text(&ran.stdout), "rocblas tests pass\n");
    let loaded = run_ok(
        Command::new("python3")
            .args([
                "-c",
                "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).blas_value())",
            ])
            .arg(build.join("lib/librocblas.so.5"))
            .env("LD_LIBRARY_PATH", build.join("lib")),
    );
    assert_eq!(text(&loaded.stdout), "42\n");
    println!(
        "[{}] the tests ran: rocblas-test, blas_value() = 42",
        job.name
    );
}

/// The native packages jobs (`multi_arch_build_native_linux_packages.yml`, deb and rpm):
/// fetch every artifact of the run, build a package of the ROCm tree, publish the repository.
fn native_packages_job(ci: &CiRun, kind: &str) {
    let families = FAMILIES.map(|(f, _)| f).join(";");
    let mut job = ci.job(&format!("native packages ({kind})"), RUN, None);
    job.set("ARTIFACT_RUN_ID", RUN);
    job.set("DIST_AMDGPU_FAMILIES", &families);
    job.tool(
        "artifact_manager",
        &[
            "fetch",
            &format!("--run-id={RUN}"),
            "--stage=all",
            &format!("--amdgpu-families={families}"),
            "--expand-family-to-targets",
            "--output-dir=output",
        ],
    );
    let fetched = job.dir.join("output/artifacts");
    assert!(
        fetched
            .join("core-hip_lib_generic/stage/lib/libamdhip64.so.7.1.0")
            .is_file()
    );
    let dist = job.dir.join("dist");
    let package = match kind {
        "deb" => crate::upload_package_repo::build_deb(&dist, "amdrocm-core", "8.0.0"),
        _ => crate::upload_package_repo::build_rpm(&dist, "amdrocm-core", "8.0.0"),
    };
    // build_package.py's log of each package it builds, beside the packages.
    write(
        &dist.join(format!("logs/{kind}-amdrocm-core.log")),
        &format!("building {kind} amdrocm-core 8.0.0\n"),
    );
    job.artifacts_bucket_info();
    job.tool(
        "upload_package_repo",
        &["--pkg-type", kind, "--run-id", RUN, "--package-dir", "dist"],
    );
    let root = format!("{RUN}-linux");
    let file_name = package.file_name().unwrap().to_str().unwrap().to_owned();
    ci.expect_files(&format!("{root}/logs/packaging/{kind}"), &dist.join("logs"));
    // The page the step summary links the logs with.
    ci.expect(format!("{root}/logs/packaging/{kind}/index.html"));
    let repo = format!("{root}/packages/{kind}");
    let fixed: Vec<String> = match kind {
        "deb" => vec![
            format!("pool/main/{file_name}"),
            "dists/stable/Release".to_owned(),
            "dists/stable/main/binary-amd64/Packages".to_owned(),
            "dists/stable/main/binary-amd64/Packages.gz".to_owned(),
        ],
        _ => vec![
            format!("x86_64/{file_name}"),
            "x86_64/repodata/repomd.xml".to_owned(),
        ],
    };
    for rel in fixed {
        ci.expect(format!("{repo}/{rel}"));
    }
    // As the reference, every other file of the package directory goes into the repository
    // too: the logs.
    ci.expect_files(&format!("{repo}/logs"), &dist.join("logs"));
    println!(
        "[{}] package_repository_url={}",
        job.name,
        job.outputs()["package_repository_url"]
    );
}

/// The artifact group of the multi-arch Python packages job.
const MULTI_ARCH_GROUP: &str = "multi-arch-release";

/// The Python packages job as multi-arch CI runs it (`build_portable_linux_python_packages.yml`
/// with `amdgpu_families` and `multiarch_index: true`): fetch every stage's artifacts of both
/// families, build the wheels, upload them as a flat multi-arch index. Then the test job
/// (`test_rocm_wheels.yml`): in a fresh venv, `pip install rocm[libraries,device-gfx942]==VERSION`
/// with `--index-url` and `--find-links` from what the upload published; the host libraries
/// load, the gfx942 device package and its kpack are there, the other family's are not.
fn python_packages_job(ci: &CiRun, public: &str) {
    let mut job = ci.job("build_python_packages", RUN, None);
    job.set("ARTIFACT_RUN_ID", RUN);
    let families = FAMILIES.map(|(f, _)| f).join(";");
    let workspace = job.path("");
    job.tool(
        "artifact_manager",
        &[
            "fetch",
            &format!("--run-id={RUN}"),
            "--run-github-repo=",
            "--stage=all",
            &format!("--amdgpu-families={families}"),
            "--expand-family-to-targets",
            &format!("--output-dir={workspace}"),
        ],
    );
    let python = crate::build_python_packages::python();
    let mut build_args = vec![
        "--artifact-dir=artifacts".to_owned(),
        "--dest-dir=packages".to_owned(),
        format!("--version={VERSION}"),
        format!("--linux-amdgpu-families={families}"),
        "--windows-amdgpu-families=".to_owned(),
        format!("--python={}", python.display()),
    ];
    if let Some(templates) = therock_templates() {
        build_args.push(format!("--templates-dir={}", templates.display()));
    }
    job.tool(
        "build_python_packages",
        &build_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    job.artifacts_bucket_info();
    job.tool(
        "upload_python_packages",
        &[
            "--input-packages-dir=packages",
            &format!("--artifact-group={MULTI_ARCH_GROUP}"),
            &format!("--run-id={RUN}"),
            "--multiarch",
        ],
    );
    // The flat multi-arch index: every package, a page of them, and a PEP 503 index.
    // What build_python_packages left in `dist/`: the wheels and the `rocm` sdist.
    let packages = job.dir.join("packages/dist");
    let python_root = format!("{RUN}-linux/python");
    let mut projects = BTreeSet::new();
    for rel in rock_ci_test_support::files_under(&packages) {
        let name = rel.rsplit('/').next().unwrap();
        let project = match name.strip_suffix(".whl") {
            Some(stem) => stem.split('-').next().unwrap().replace('_', "-"),
            None => name.split('-').next().unwrap().to_owned(),
        };
        projects.insert(project);
        ci.expect(format!("{python_root}/{name}"));
    }
    ci.expect(format!("{python_root}/index.html"));
    ci.expect(format!("{python_root}/simple/index.html"));
    for project in &projects {
        ci.expect(format!("{python_root}/simple/{project}/index.html"));
    }
    let outputs = job.outputs();
    println!("[{}] outputs: {outputs:?}", job.name);
    assert_eq!(outputs["kpack_split"], "true");

    // test_rocm_wheels.yml, with the page the step output names and the index beside it, read
    // over HTTP from the bucket.
    let public_url = |url: &str| {
        let local = url.replace(
            &format!("https://{BUCKET}.s3.amazonaws.com"),
            &format!("{public}/{BUCKET}"),
        );
        assert_ne!(local, url, "{url}");
        local
    };
    let find_links = public_url(&outputs["package_find_links_url"]);
    let index = format!("{public}/{BUCKET}/{python_root}/simple/");
    let (target_family, target) = FAMILIES[0];
    let requirement = format!("rocm[libraries,device-{target}]=={VERSION}");
    let venv = pip_install(&job.dir.join("test"), &index, &find_links, &requirement);
    println!(
        "[{}] pip installed {requirement} (--index-url {index} --find-links {find_links})",
        job.name
    );
    check_sdk(&venv, target);
    let freeze =
        text(&run_ok(Command::new(venv.join("bin/python")).args(["-m", "pip", "freeze"])).stdout);
    let other = FAMILIES[1].1;
    assert!(
        freeze.contains(&format!("rocm-sdk-device-{target}=={VERSION}")),
        "{freeze}"
    );
    assert!(!freeze.contains(&format!("device-{other}")), "{freeze}");
    println!(
        "[{}] {target_family}: device-{target} installed, device-{other} not",
        job.name
    );
    if therock_templates().is_some() {
        rocm_sdk_test(&job, &venv);
    }
}

/// TheRock's `rocm-sdk test` in `venv` (packages built from TheRock's templates). The project's
/// stand-in artifacts are not ROCm: the tests that look for ROCm's own programs and libraries
/// (`amdclang`, `amd_comgr`, `offload-arch`, …) cannot pass and are counted; those that check
/// what packaging made must: the modules side by side, the version, the shared libraries
/// loading, the libraries' console scripts.
fn rocm_sdk_test(job: &Job<'_>, venv: &Path) {
    let out = Command::new(venv.join("bin/rocm-sdk"))
        .arg("test")
        .output()
        .unwrap();
    let log = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let passed = log.matches("... ok").count();
    let failed = log
        .lines()
        .filter(|l| l.starts_with("ERROR: ") || l.starts_with("FAIL: "))
        .count();
    println!(
        "[{}] rocm-sdk test (TheRock's): {passed} passed, {failed} failed (exit {:?})",
        job.name,
        out.status.code()
    );
    for needed in [
        "test_initialize_process_check_version)",
        "testSharedLibrariesLoad)",
        "ROCmLibrariesTest.testConsoleScripts)",
        "test_initialize_process_preload_libraries)",
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(needed) && l.ends_with("... ok")),
            "rocm-sdk test: {needed} did not pass\n{log}"
        );
    }
}

/// The Python package templates of a TheRock checkout (`THEROCK_DIR`), used instead of the
/// fixture's: the packages job then builds with TheRock's own templates and its test job runs
/// their `rocm-sdk test`.
fn therock_templates() -> Option<PathBuf> {
    let dir = std::env::var_os("THEROCK_DIR").filter(|d| !d.is_empty())?;
    let templates = Path::new(&dir).join("build_tools/packaging/python/templates");
    assert!(
        templates.is_dir(),
        "THEROCK_DIR: no {}",
        templates.display()
    );
    Some(templates)
}

/// A fresh venv in `dir` with `requirement` installed by pip from `index` and `find_links`, as
/// `setup_venv.py --packages … --index-url … --find-links …` installs it. The `rocm` sdist is
/// built without build isolation: its build needs setuptools, which the run's index does not
/// carry (TheRock's aggregate index does).
fn pip_install(dir: &Path, index: &str, find_links: &str, requirement: &str) -> PathBuf {
    let venv = crate::build_python_packages::venv_for_sdists(dir);
    run_ok(
        Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--no-build-isolation",
                &format!("--index-url={index}"),
                &format!("--find-links={find_links}"),
                requirement,
            ])
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env_remove("ROCM_SDK_TARGET_FAMILY"),
    );
    venv
}

/// The installed SDK works: the version, the GPU library loaded (its dependency from the core
/// package), the target's kernels in place.
fn check_sdk(venv: &Path, target: &str) {
    let out = run_ok(Command::new(venv.join("bin/python")).args([
        "-c",
        "import ctypes, importlib.util, pathlib, sys, rocm_sdk\n\
         p = pathlib.Path(importlib.util.find_spec('_rocm_sdk_libraries').origin).parent\n\
         print(rocm_sdk.__version__, ctypes.CDLL(str(p / 'lib' / 'librocblas.so.5')).blas_value())\n\
         print(sorted(f.name for f in (p / '.kpack').iterdir()))",
    ]));
    assert_eq!(
        text(&out.stdout),
        format!("{VERSION} 42\n['blas_lib_{target}.kpack']\n")
    );
}

/// A page linking every file of `bucket` below `prefix` (from `keys`) at its public URL under
/// `public`, served as a bucket's directory-listing site serves it: the server and the page's
/// URL.
fn listing_site(
    dir: &Path,
    public: &str,
    bucket: &str,
    keys: &[String],
    prefix: &str,
) -> (HttpServer, String) {
    let mut links = String::new();
    for key in keys.iter().filter(|k| k.starts_with(prefix)) {
        let name = key.rsplit('/').next().unwrap();
        if Path::new(name)
            .extension()
            .is_some_and(|e| e == "whl" || e == "gz")
        {
            writeln!(links, "<a href=\"{public}/{bucket}/{key}\">{name}</a>").unwrap();
        }
    }
    assert!(
        links.contains("rocm_sdk_core"),
        "{prefix}: {links} of {keys:?}"
    );
    let site = dir.join("site");
    write(&site.join("index.html"), &links);
    let server = HttpServer::serve_dir(site);
    let page = format!("{}/index.html", server.url());
    (server, page)
}

fn run_ok(cmd: &mut Command) -> Output {
    rock_ci_test_support::elf::run_ok(cmd)
}

/// The tarballs job (`multi_arch_build_tarballs.yml`), for `platform`: `build_tarballs` with the
/// workflow's flags (test tarballs included, its default), then `upload_tarballs`. Expects a
/// tarball per family and its `-tests-` twin, and (the base manifest splits device files per
/// target) the multi-arch pair, each with its sidecar.
fn tarballs_job(ci: &CiRun, platform: &str) {
    let mut job = ci.job(&format!("build_tarballs ({platform})"), RUN, None);
    job.set("ARTIFACT_RUN_ID", RUN);
    let families: Vec<&str> = match platform {
        "windows" => vec![FAMILIES[1].0],
        _ => FAMILIES.map(|(f, _)| f).to_vec(),
    };
    let tarballs = job.path("tarballs");
    job.tool(
        "build_tarballs",
        &[
            &format!("--run-id={RUN}"),
            "--run-github-repo=",
            &format!("--dist-amdgpu-families={}", families.join(";")),
            &format!("--platform={platform}"),
            &format!("--package-version={VERSION}"),
            &format!("--output-dir={tarballs}"),
            "--include-test-tarballs",
        ],
    );
    let mut labels: Vec<String> = families
        .iter()
        .flat_map(|f| [(*f).to_owned(), format!("{f}-tests")])
        .collect();
    labels.extend(["multiarch".to_owned(), "multiarch-tests".to_owned()]);
    for label in &labels {
        let key =
            format!("{RUN}-{platform}/tarballs/therock-dist-{platform}-{label}-{VERSION}.tar.gz");
        ci.expect(format!("{key}.sha256sum"));
        ci.expect(key);
    }
    // The tests tarball of a family holds its tests, the other does not.
    let family = families[0];
    let listing = |label: &str| {
        let path = job.dir.join(format!(
            "tarballs/therock-dist-{platform}-{label}-{VERSION}.tar.gz"
        ));
        let file = fs_err::File::open(&path).unwrap();
        let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(file));
        archive
            .entries()
            .unwrap()
            .map(|e| String::from_utf8(e.unwrap().path_bytes().into_owned()).unwrap())
            .collect::<BTreeSet<String>>()
    };
    let test_program = if platform == "windows" {
        "./bin/rocblas-test.exe"
    } else {
        "./bin/rocblas-test"
    };
    assert!(listing(&format!("{family}-tests")).contains(test_program));
    assert!(!listing(family).contains(test_program));
    job.artifacts_bucket_info();
    job.tool(
        "upload_tarballs",
        &[
            &format!("--input-tarballs-dir={tarballs}"),
            &format!("--run-id={RUN}"),
            &format!("--platform={platform}"),
            &format!("--release-type={RELEASE_TYPE}"),
        ],
    );
}

/// The test report step, as TheRock runs it only in `manifest-diff.yml`: the report of the run's
/// manifest against a baseline, uploaded to `logs/manifest-diff/` with an index page.
fn manifest_diff_job(ci: &CiRun) {
    let job = ci.job("manifest-diff", RUN, None);
    let reports = job.dir.join("reports");
    write(
        &reports.join("manifest_diff.html"),
        "<html><body>manifest diff: 0 changes</body></html>\n",
    );
    job.artifacts_bucket_info();
    job.tool(
        "upload_test_report_script",
        &[
            "--run-id",
            RUN,
            "--subfolder",
            "manifest-diff",
            "--report-path",
            "reports",
            "--index-file-name",
            "index.html",
        ],
    );
    let prefix = format!("{RUN}-linux/logs/manifest-diff");
    ci.expect_files(&prefix, &reports);
    ci.expect(format!("{prefix}/index.html"));
}

/// `test_artifacts_structure.yml`: every archive of the run's families, kept (not unpacked) and
/// verified, for the structure tests to read from `.download_cache`.
fn artifact_structure_job(ci: &CiRun, platform: &str) {
    let job = ci.job(
        &format!("validate_artifact_structure ({platform})"),
        RUN,
        None,
    );
    let families = match platform {
        "windows" => FAMILIES[1].0.to_owned(),
        _ => FAMILIES.map(|(f, _)| f).join(";"),
    };
    let workspace = job.path("");
    job.tool(
        "artifact_manager",
        &[
            "fetch",
            &format!("--run-id={RUN}"),
            "--run-github-repo=",
            "--stage=all",
            &format!("--amdgpu-families={families}"),
            &format!("--platform={platform}"),
            &format!("--output-dir={workspace}"),
            "--no-extract",
        ],
    );
    // The flags name families, not targets (no --expand-family-to-targets): the generic
    // archives, as the workflow fetches them.
    let cache = job.dir.join(".download_cache");
    let kept: Vec<String> = rock_ci_test_support::files_under(&cache);
    let archives = kept.iter().filter(|n| n.ends_with(".tar.zst")).count();
    let generic = STAGES
        .iter()
        .flat_map(|(stage, _)| stage_outputs(stage))
        .filter(|p| !p.contains("{target}"))
        .count();
    let generic = if platform == "windows" {
        generic - 1
    } else {
        generic
    };
    assert_eq!(archives, generic, "{kept:?}");
    println!("[{}] {archives} archives kept in .download_cache", job.name);
}

/// The release job (`multi_arch_release_linux.yml`): publish the run to the release bucket;
/// then install from it with pip (through a PEP 503 index of the bucket's listing, as the
/// release site serves it), apt-get and dnf.
fn release_job(ci: &CiRun, public: &str) {
    let job = ci.job("publish_to_release_buckets", RUN, None);
    job.product_bucket_info();
    let mut args = vec![
        format!("--run-id={RUN}"),
        "--platform=linux".to_owned(),
        format!("--release-type={RELEASE_TYPE}"),
        "--kpack-split=true".to_owned(),
        "--structured".to_owned(),
        "--build-variant=release".to_owned(),
    ];
    // The in-process server keeps each object's record in a file named after the bucket and
    // key, which cannot hold the release's longest package keys (`…/by-hash/SHA256/{digest}`
    // below the dated repository): there the native repositories are left to the run against
    // a real server.
    let native = ci.store.is_external();
    if !native {
        args.push("--skip-native-packages".to_owned());
    }
    job.tool(
        "publish_rocm_to_release_buckets",
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let keys = ci.store.all_keys(RELEASE_BUCKET);
    println!("[{}] release bucket: {} keys", job.name, keys.len());

    // pip: from the page the release site serves for the bucket's listing.
    let (site, page) = listing_site(
        &job.dir,
        public,
        RELEASE_BUCKET,
        &keys,
        "v5/rocm/core/whl-next/",
    );
    let venv = crate::build_python_packages::install(&job.dir.join("pip"), &page, SDK, "gfx1100");
    drop(site);
    println!("[{}] pip installed rocm from the release index", job.name);
    check_sdk(&venv, "gfx1100");

    if !native {
        println!(
            "[{}] (in-process server: no native repositories published, apt-get and dnf not run)",
            job.name
        );
        return;
    }
    // apt-get and dnf: the dated repositories of the release.
    let repo = |kind: &str| {
        let dir: BTreeSet<&str> = keys
            .iter()
            .filter_map(|k| k.strip_prefix(&format!("v5/rocm/core/packages/{kind}/")))
            .filter_map(|rest| rest.split_once('/').map(|(d, _)| d))
            .collect();
        assert_eq!(dir.len(), 1, "{kind}: {dir:?}");
        format!(
            "{public}/{RELEASE_BUCKET}/v5/rocm/core/packages/{kind}/{}",
            dir.first().unwrap()
        )
    };
    let apt = job.dir.join("apt");
    let deb_url = repo("deb");
    let update = crate::upload_package_repo::apt_get(&apt, &deb_url, &["update"]);
    assert!(update.status.success(), "{}", text(&update.stderr));
    // Against the machine's installed packages (the package depends on libc6): resolves the
    // dependencies and downloads what the install needs.
    let install = crate::upload_package_repo::apt_get(
        &apt,
        &deb_url,
        &[
            "-o",
            "Dir::State::status=/var/lib/dpkg/status",
            "install",
            "-y",
            "--download-only",
            "amdrocm-core",
        ],
    );
    assert!(install.status.success(), "{}", text(&install.stderr));
    let debs: Vec<PathBuf> = fs_err::read_dir(apt.join("cache/archives"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    assert_eq!(debs.len(), 1, "{debs:?}");
    let unpacked = apt.join("root");
    run_ok(
        Command::new("dpkg-deb")
            .arg("-x")
            .arg(&debs[0])
            .arg(&unpacked),
    );
    assert_eq!(
        fs_err::read_to_string(unpacked.join("opt/rocm/amdrocm-core/VERSION")).unwrap(),
        "amdrocm-core 8.0.0\n"
    );
    println!(
        "[{}] apt-get installed amdrocm-core from {deb_url}",
        job.name
    );
    let dnf_dir = job.dir.join("dnf");
    let rpm_url = format!("{}/x86_64", repo("rpm"));
    let installed =
        crate::upload_package_repo::dnf(&dnf_dir, &rpm_url, &["install", "amdrocm-core"]);
    assert!(installed.status.success(), "{}", text(&installed.stderr));
    assert_eq!(
        fs_err::read_to_string(dnf_dir.join("root/opt/rocm/amdrocm-core/VERSION")).unwrap(),
        "8.0.0\n"
    );
    println!("[{}] dnf installed amdrocm-core from {rpm_url}", job.name);
}

/// The second run: copies the first run's stages but the last, rebuilds that one, and a test
/// shard installs from it.
fn second_run(ci: &CiRun) {
    let job = ci.job("copy_prebuilt_stages", RERUN, None);
    let families = FAMILIES.map(|(f, _)| f).join(";");
    // What the copy's flags ask for: every artifact of the copied stages, for every target of
    // both families.
    for (stage, _) in &STAGES[..3] {
        for pattern in stage_outputs(stage) {
            if pattern.contains("{target}") {
                for (_, target) in FAMILIES {
                    ci.expect_archive(
                        &format!("{RERUN}-linux"),
                        &pattern.replace("{target}", target),
                    );
                }
            } else {
                ci.expect_archive(&format!("{RERUN}-linux"), pattern);
            }
        }
    }
    job.tool(
        "artifact_manager",
        &[
            "copy",
            &format!("--source-run-id={RUN}"),
            &format!("--source-repository={REPO}"),
            "--stage=foundation,compiler-runtime,math-libs",
            &format!("--amdgpu-families={families}"),
            "--expand-family-to-targets",
        ],
    );
    stage_jobs(ci, RERUN, &STAGES[3..], None);
    let (family, target) = FAMILIES[1];
    test_shard(ci, RERUN, family, target, None);
}

/// The locations `ci_layout` names for `run_id` on `platform`: for every artifact group
/// (family, and the generic one) and every stage and family of the run; name → key.
fn named_locations(ci: &CiRun, run_id: &str, platform: &str) -> BTreeMap<String, String> {
    let job = ci.job(&format!("ci_layout ({platform})"), run_id, None);
    let mut named = BTreeMap::new();
    let mut ask = |extra: &[&str]| {
        let mut args = vec![
            "--run-id",
            run_id,
            "--platform",
            platform,
            "--release-type",
            RELEASE_TYPE,
            "--format",
            "json",
        ];
        args.extend(extra);
        let (stdout, _) = job.tool_quiet("ci_layout", &args);
        let layout: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(layout["bucket"], BUCKET);
        // A stage query adds its stage's log directory; the rest depends on the group.
        let stage_query = extra[0] == "--stage";
        for (name, loc) in layout["locations"].as_object().unwrap() {
            if stage_query && name != "log_stage_dir" {
                continue;
            }
            let key = loc["relative_path"].as_str().unwrap().to_owned();
            named.insert(format!("{name} {}", extra.join(" ")), key);
        }
    };
    for (stage, per_arch) in STAGES {
        let families: &[&str] = if per_arch {
            &["gfx94X-dcgpu", "gfx110X-all"]
        } else {
            &[""]
        };
        for family in families {
            ask(&["--stage", stage, "--family", family]);
        }
    }
    for (family, _) in FAMILIES {
        ask(&["--artifact-group", family]);
    }
    named
}

/// The locations the jobs of `runs` write: each holds keys at the end.
fn written_locations(runs: &[(&str, &str)]) -> BTreeSet<String> {
    let mut expected: BTreeSet<String> = BTreeSet::new();
    for (run_id, platform) in runs {
        let root = format!("{run_id}-{platform}");
        expected.insert(format!("{root}/ (artifact archives)"));
        for (stage, per_arch) in STAGES {
            let families: Vec<&str> = match (per_arch, *platform) {
                (false, _) => vec![""],
                (true, "windows") => vec![FAMILIES[1].0],
                (true, _) => FAMILIES.map(|(f, _)| f).to_vec(),
            };
            let rebuilt = *run_id == RUN || stage == "profiler";
            if !rebuilt || (*platform == "windows" && stage == "profiler") {
                continue;
            }
            for family in families {
                let dir = if family.is_empty() {
                    format!("{root}/logs/{stage}")
                } else {
                    format!("{root}/logs/{stage}/{family}")
                };
                expected.insert(dir);
            }
        }
        if *platform == "windows" && *run_id == RUN {
            expected.insert(format!("{root}/tarballs"));
        }
        if *platform == "linux" && *run_id == RUN {
            for loc in [
                "manifests/therock_manifest.json",
                "python",
                "tarballs",
                "packages/deb",
                "packages/rpm",
                "logs/packaging/deb",
                "logs/packaging/rpm",
            ] {
                expected.insert(format!("{root}/{loc}"));
            }
        }
    }
    expected
}

/// Every location `ci_layout` names for the first run's Linux jobs holds keys, but those no job
/// of the run writes ([`NOT_WRITTEN`]), which hold none; prints the latter.
fn check_first_run_complete(keys: &[String], first: &BTreeMap<String, String>) {
    // Of the first run's Linux locations, every one not written by a job that did not run
    // here holds keys.
    let holds = |loc: &str| {
        keys.iter()
            .any(|k| k == loc || k.starts_with(&format!("{loc}/")))
    };
    let mut not_written = BTreeSet::new();
    for (asked, loc) in first {
        let name = asked.split(' ').next().unwrap();
        match NOT_WRITTEN.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => {
                assert!(!holds(loc), "{asked}: {loc} holds keys, but {why}");
                not_written.insert(format!("{name}: {why}"));
            }
            None => assert!(holds(loc), "{asked}: nothing at {loc}"),
        }
    }
    println!("  named by ci_layout and written by no job of this run:");
    for line in &not_written {
        println!("    {line}");
    }
}

/// The locations `ci_layout` names that no job of this run writes, and why.
const NOT_WRITTEN: [(&str, &str); 11] = [
    (
        "log_dir",
        "a build in one job uploads its logs there; the test shards of a multi-arch run upload no report (TheRock's test report step runs only in manifest-diff.yml)",
    ),
    (
        "log_index",
        "a build in one job uploads its logs there; the test shards of a multi-arch run upload no report (TheRock's test report step runs only in manifest-diff.yml)",
    ),
    (
        "artifact_index",
        "post_build_upload writes it, for a build in one job",
    ),
    (
        "build_observability",
        "post_build_upload writes it, for a build in one job",
    ),
    (
        "ccache_logs",
        "post_build_upload writes it, for a build in one job (a stage job's is in its stage's log directory)",
    ),
    (
        "ninja_logs",
        "post_build_upload writes it, for a build in one job (a stage job's is in its stage's log directory)",
    ),
    (
        "log_root_index",
        "post_build_upload writes it, for a build in one job",
    ),
    (
        "manifest",
        "post_build_upload writes it, for a build in one job (a multi-arch run's is manifest_root)",
    ),
    (
        "manifest_dir",
        "post_build_upload writes it, for a build in one job (a multi-arch run's is manifest_root)",
    ),
    (
        "manifests_index",
        "post_build_upload writes it, for a build in one job",
    ),
    (
        "python_packages",
        "a single-arch upload writes it (this run's is multi-arch: python_packages_root)",
    ),
];

/// Every key of the runs in the bucket is one that `ci_layout` names (a file it names, or a
/// file below a directory it names; an artifact archive or its sidecar below the run's root),
/// and every location the jobs wrote holds at least one key. Prints the count per location.
fn check_keys(ci: &CiRun, runs: &[(&str, &str)]) {
    println!("\n=== final key check: s3://{BUCKET}");
    let keys = ci.store.all_keys(BUCKET);
    let mut unnamed = Vec::new();
    let mut held: BTreeMap<String, usize> = BTreeMap::new();
    let mut named_all = BTreeSet::new();
    let mut first = None;
    for (run_id, platform) in runs {
        let named = named_locations(ci, run_id, platform);
        let root = format!("{run_id}-{platform}");
        for key in keys.iter().filter(|k| k.starts_with(&format!("{root}/"))) {
            // The most specific location holding the key; the run's root only for archives.
            let holder = named
                .iter()
                .filter(|(name, loc)| {
                    !name.starts_with("root ")
                        && (*key == **loc || key.starts_with(&format!("{loc}/")))
                })
                .max_by_key(|(_, loc)| loc.len())
                .map(|(_, loc)| loc.clone());
            let holder = holder.or_else(|| {
                let name = key.strip_prefix(&format!("{root}/"))?;
                let archive = name.strip_suffix(".sha256sum").unwrap_or(name);
                (!name.contains('/') && artifacts::ArtifactName::from_filename(archive).is_some())
                    .then(|| format!("{root}/ (artifact archives)"))
            });
            // A test report's subfolder is the caller's choice (`--subfolder manifest-diff`).
            let report = key.starts_with(&format!("{root}/logs/manifest-diff/"));
            match holder {
                Some(loc) => *held.entry(loc).or_default() += 1,
                None if report => {
                    *held
                        .entry(format!("{root}/logs/manifest-diff"))
                        .or_default() += 1;
                }
                None => unnamed.push(key.clone()),
            }
        }
        named_all.extend(named.values().cloned());
        if (*run_id, *platform) == (RUN, "linux") {
            first = Some(named);
        }
    }
    for (loc, n) in &held {
        println!("  {n:4} keys in {loc}");
    }
    assert!(
        unnamed.is_empty(),
        "keys ci_layout does not name: {unnamed:#?}"
    );
    let outside: Vec<&String> = keys
        .iter()
        .filter(|k| {
            !runs
                .iter()
                .any(|(r, p)| k.starts_with(&format!("{r}-{p}/")))
        })
        .collect();
    assert!(outside.is_empty(), "keys outside the runs: {outside:?}");
    let expected = written_locations(runs);
    check_first_run_complete(&keys, &first.expect("the first run's Linux jobs ran"));
    let missing: Vec<&String> = expected.iter().filter(|l| !held.contains_key(*l)).collect();
    assert!(
        missing.is_empty(),
        "named locations with no key: {missing:?} (held: {held:?})"
    );
    let unknown: Vec<&String> = expected
        .iter()
        .filter(|l| !l.ends_with("(artifact archives)") && !named_all.contains(*l))
        .collect();
    assert!(unknown.is_empty(), "not named by ci_layout: {unknown:?}");
    println!(
        "  {} keys, every one named by ci_layout; {} locations written, none missing",
        keys.len(),
        expected.len()
    );
}

/// The run bucket as the check reads it: every key and its bytes.
type Bucket = BTreeMap<String, Vec<u8>>;

/// A change to the bucket that a broken job would leave.
type Mutation = Box<dyn Fn(&mut Bucket)>;

/// The exact check: the keys of `bucket` are the `expected` ones (what the jobs' inputs say they
/// write), plus the content-addressed files of the package repositories (the APT `by-hash`
/// copies of each `Packages` index, the RPM `repodata` files `repomd.xml` lists, each named by
/// its own SHA-256); none missing, none extra. Every archive and tarball has its sidecar, and
/// every sidecar holds the SHA-256 of its file. The problems, one line each.
fn exact_problems(expected: &BTreeSet<String>, bucket: &Bucket) -> Vec<String> {
    let mut problems = Vec::new();
    let sha = |bytes: &[u8]| rock_ci_test_support::sha256_hex(bytes);
    let mut wanted = expected.clone();
    for (key, bytes) in bucket {
        if let Some(dir) = key
            .strip_suffix("/Packages")
            .or_else(|| key.strip_suffix("/Packages.gz"))
        {
            wanted.insert(format!("{dir}/by-hash/SHA256/{}", sha(bytes)));
        }
        if let Some(repo) = key.strip_suffix("/repodata/repomd.xml") {
            let text = String::from_utf8_lossy(bytes);
            for href in text
                .split("href=\"")
                .skip(1)
                .filter_map(|h| h.split('"').next())
            {
                wanted.insert(format!("{repo}/{href}"));
            }
        }
    }
    for key in wanted.iter().filter(|k| !bucket.contains_key(*k)) {
        problems.push(format!("missing: {key}"));
    }
    for key in bucket.keys().filter(|k| !wanted.contains(*k)) {
        problems.push(format!("not expected: {key}"));
    }
    for (key, bytes) in bucket {
        // Content-addressed names: `by-hash/SHA256/{digest}`, `repodata/{digest}-….xml.gz`.
        let name = key.rsplit('/').next().unwrap();
        let addressed = if key.contains("/by-hash/SHA256/") {
            Some(name)
        } else if key.contains("/repodata/") && name != "repomd.xml" {
            name.split('-').next()
        } else {
            None
        };
        if let Some(digest) = addressed
            && digest != sha(bytes)
        {
            problems.push(format!("{key}: named {digest}, holds {}", sha(bytes)));
        }
        let archive =
            key.ends_with(".tar.zst") || key.ends_with(".tar.gz") && key.contains("/tarballs/");
        if archive {
            let sidecar = format!("{key}.sha256sum");
            match bucket.get(&sidecar) {
                None => problems.push(format!("{key}: no sidecar")),
                Some(side) => {
                    let recorded = String::from_utf8_lossy(side);
                    let recorded = recorded.split_whitespace().next().unwrap_or_default();
                    if recorded != sha(bytes) {
                        problems.push(format!(
                            "{sidecar}: {recorded}, but {key} hashes to {}",
                            sha(bytes)
                        ));
                    }
                }
            }
        }
    }
    problems
}

/// The exact check of the run bucket, then the same check of the bucket changed in each way a
/// broken job would leave it, each of which must fail it.
fn check_exact(ci: &CiRun) {
    println!("\n=== exact key check: s3://{BUCKET}");
    let bucket: Bucket = ci
        .store
        .all_keys(BUCKET)
        .into_iter()
        .map(|k| {
            let bytes = ci.store.read(BUCKET, &k);
            (k, bytes)
        })
        .collect();
    let expected = ci.expected.borrow().clone();
    let problems = exact_problems(&expected, &bucket);
    assert!(
        problems.is_empty(),
        "the run bucket:\n  {}",
        problems.join("\n  ")
    );
    let mut per_root: BTreeMap<&str, usize> = BTreeMap::new();
    for key in bucket.keys() {
        *per_root.entry(key.split('/').next().unwrap()).or_default() += 1;
    }
    println!(
        "  {} keys, exactly the {} the jobs' inputs imply and the repositories' content-addressed \
         files; every archive and tarball with its sidecar, every digest right: {per_root:?}",
        bucket.len(),
        expected.len()
    );
    let family = FAMILIES[1];
    let mutations: Vec<(String, Mutation)> = vec![
        (
            format!("the copy leaves out {}", family.0),
            Box::new(move |b: &mut Bucket| {
                b.retain(|k, _| {
                    !(k.starts_with(&format!("{RERUN}-linux/")) && k.contains(family.1))
                });
            }),
        ),
        (
            "a stage writes no ninja log".to_owned(),
            Box::new(|b: &mut Bucket| {
                b.remove(&format!("{RUN}-linux/logs/foundation/ninja_logs.tar.gz"));
            }),
        ),
        (
            "one sidecar dropped".to_owned(),
            Box::new(|b: &mut Bucket| {
                b.remove(&format!("{RUN}-linux/base_lib_generic.tar.zst.sha256sum"));
            }),
        ),
        (
            "one stray key".to_owned(),
            Box::new(|b: &mut Bucket| {
                b.insert(format!("{RUN}-linux/logs/stray.txt"), b"stray".to_vec());
            }),
        ),
        (
            "a sidecar that does not match its archive".to_owned(),
            Box::new(|b: &mut Bucket| {
                let key = format!("{RUN}-linux/core-hip_lib_generic.tar.zst.sha256sum");
                b.insert(
                    key,
                    format!("{}  core-hip_lib_generic.tar.zst\n", "0".repeat(64)).into_bytes(),
                );
            }),
        ),
        (
            "a packaging log missing".to_owned(),
            Box::new(|b: &mut Bucket| {
                b.retain(|k, _| !k.contains("/logs/packaging/deb/"));
            }),
        ),
    ];
    for (what, mutate) in mutations {
        let mut changed = bucket.clone();
        mutate(&mut changed);
        assert_ne!(changed, bucket, "{what}: the mutation changed nothing");
        let problems = exact_problems(&expected, &changed);
        assert!(!problems.is_empty(), "{what}: the check passed");
        println!("  mutation \"{what}\" fails it: {}", problems[0]);
    }
}

#[test]
fn a_whole_ci_run() {
    let ci = CiRun::start();
    let windows = Windows::from_env();
    let (public, _served) = ci.store.public_http();

    stage_jobs(&ci, RUN, &STAGES, None);
    artifact_structure_job(&ci, "linux");
    for (family, target) in FAMILIES {
        test_shard(&ci, RUN, family, target, None);
    }
    native_packages_job(&ci, "deb");
    native_packages_job(&ci, "rpm");
    python_packages_job(&ci, &public);
    tarballs_job(&ci, "linux");
    manifest_diff_job(&ci);
    release_job(&ci, &public);
    second_run(&ci);

    let mut runs = vec![(RUN, "linux"), (RERUN, "linux")];
    if let Some(windows) = &windows {
        stage_jobs(&ci, RUN, &STAGES[..3], Some(windows));
        let (family, target) = FAMILIES[1];
        test_shard(&ci, RUN, family, target, Some(windows));
        // The Windows run's tarballs and structure checks run on Linux runners.
        artifact_structure_job(&ci, "windows");
        tarballs_job(&ci, "windows");
        runs.push((RUN, "windows"));
    } else {
        println!("\n(no ROCK_CI_WINDOWS_ROCK_CI: the Windows jobs are not run)");
    }
    check_keys(&ci, &runs);
    check_exact(&ci);
    let asked = ci.github.requests().len();
    println!("GitHub API: {asked} requests");
}
