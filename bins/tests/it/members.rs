//! `--member` fetches of archives `artifact_manager push` wrote from real ELF libraries (this
//! machine's) and many tiny files: what they write (on Linux, what `tar -x` of the same members
//! writes), the requests they make (the index's tail, then only the frames of the members), a
//! server that alters a frame, and the same through `install_rocm_from_artifacts`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use artifacts::member_index::MemberIndex;
use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, HttpServer, Reply, Rule, S3Server};

use crate::artifact_manager::TOPOLOGY;
use crate::common::{HOST_PLATFORM, Launch as _, text, write};

const RUN: &str = "4242";
const ARCHIVE: &str = "base_lib_generic.tar.zst";
const TINY_FILES: usize = 3000;
/// The most a member fetch reads at once (`artifact-backend`'s ranged reads).
const RANGE: u64 = 1 << 20;

struct Fixture {
    server: S3Server,
    github: HttpServer,
    work: tempfile::TempDir,
    /// The libraries pushed, by file name, with their bytes.
    libraries: Vec<(String, Vec<u8>)>,
}

/// The largest shared libraries of this machine up to 6 MiB, about 40 MiB of them, by file
/// name.
fn real_libraries() -> Vec<(String, Vec<u8>)> {
    let mut found: Vec<(u64, PathBuf)> = rock_ci_test_support::system_libraries()
        .into_iter()
        .filter_map(|p| Some((fs_err::metadata(&p).ok()?.len(), p)))
        .filter(|(size, _)| *size <= 6 << 20)
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut taken = Vec::new();
    let mut total = 0;
    for (size, path) in found {
        if total >= 40 << 20 || taken.len() == 24 {
            break;
        }
        total += size;
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        taken.push((name, fs_err::read(&path).unwrap()));
    }
    assert!(
        taken.len() >= 3 && total >= 24 << 20,
        "this machine has too few shared libraries: {} of {total} bytes",
        taken.len()
    );
    taken
}

/// `libfoo.so.1.2` is linked as `libfoo.so`.
fn link_name(library: &str) -> String {
    let at = library.find(".so").unwrap();
    format!("{}.so", &library[..at])
}

impl Fixture {
    /// Run 4242 of `ROCm/TheRock` as `artifact_manager push` stores stage `foundation`:
    /// `base_lib_generic` of the real libraries (each with its `.so` link on Unix) and
    /// `TINY_FILES` tiny files, `core_lib_generic` of one file.
    fn pushed() -> Self {
        let server = S3Server::start();
        server.create_bucket("therock-ci-artifacts");
        let github = HttpServer::start(|_| {
            Reply::json(
                200,
                &format!(r#"{{"id": {RUN}, "head_repository": {{"full_name": "ROCm/TheRock"}}}}"#),
            )
        });
        let work = tempfile::tempdir().unwrap();
        write(&work.path().join("therock/BUILD_TOPOLOGY.toml"), TOPOLOGY);
        let libraries = real_libraries();
        let base = work.path().join("build/artifacts/base_lib_generic");
        write(&base.join("artifact_manifest.txt"), "base/stage\n");
        let stage = base.join("base/stage");
        for (name, bytes) in &libraries {
            write(&stage.join("lib").join(name), "");
            fs_err::write(stage.join("lib").join(name), bytes).unwrap();
            #[cfg(unix)]
            std::os::unix::fs::symlink(name, stage.join("lib").join(link_name(name))).unwrap();
        }
        for i in 0..TINY_FILES {
            write(
                &stage.join(format!("share/tiny/{:02}/{i:04}.txt", i % 30)),
                &format!("tiny file {i}\n"),
            );
        }
        let core = work.path().join("build/artifacts/core_lib_generic");
        write(&core.join("artifact_manifest.txt"), "core/stage\n");
        write(&core.join("core/stage/share/core.txt"), "core\n");
        let f = Fixture {
            server,
            github,
            work,
            libraries,
        };
        let build = f.work.path().join("build");
        let out = f.tool(
            "artifact_manager",
            &[
                "push",
                "--stage",
                "foundation",
                "--build-dir",
                build.to_str().unwrap(),
                "--platform",
                HOST_PLATFORM,
            ],
            None,
        );
        assert!(out.status.success(), "push: {}", text(&out.stderr));
        f
    }

    fn tool(&self, name: &str, args: &[&str], endpoint: Option<&str>) -> Output {
        let mut command = Command::new(crate::common::tool(name));
        command
            .args(args)
            .env_clear()
            .envs(self.server.aws_env())
            .env("GITHUB_API_URL", self.github.url())
            .env("GITHUB_REPOSITORY", "ROCm/TheRock")
            .env("GITHUB_RUN_ID", RUN)
            .env("THEROCK_DIR", self.work.path().join("therock"))
            .current_dir(self.work.path());
        if let Some(endpoint) = endpoint {
            command.env("AWS_ENDPOINT_URL", endpoint);
        }
        command.run_output().unwrap()
    }

    /// `fetch_artifacts --run-id RUN --output-dir {out} {args}`: its stdout, and the requests
    /// the server saw.
    fn fetch(&self, out: &str, args: &[&str]) -> (String, u64) {
        let before = self.server.requests();
        let mut all = vec!["--run-id", RUN, "--output-dir", out];
        all.extend_from_slice(args);
        let output = self.tool("fetch_artifacts", &all, None);
        assert!(
            output.status.success(),
            "{args:?}: {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        );
        (text(&output.stdout), self.server.requests() - before)
    }

    fn stored(&self) -> Vec<u8> {
        fs_err::read(self.server.root().join(format!(
            "therock-ci-artifacts/{RUN}-{HOST_PLATFORM}/{ARCHIVE}"
        )))
        .unwrap()
    }

    /// The library the tests fetch: the smallest pushed.
    fn target(&self) -> &(String, Vec<u8>) {
        self.libraries.last().unwrap()
    }
}

/// The frames and ranged reads a fetch of `globs` costs by the stored archive's own index.
fn expected_cost(archive: &[u8], globs: &[String]) -> (usize, usize, u64, u64) {
    let (index, _) = MemberIndex::from_tail(archive, archive.len() as u64, None).unwrap();
    let selection = index.select(globs);
    let runs = index.frame_runs(&selection.members);
    let (mut frames, mut bytes, mut reads) = (0, 0, 0);
    for run in &runs {
        let first = &index.frames[run.start];
        let last = &index.frames[run.end - 1];
        let size = last.offset + last.compressed - first.offset;
        frames += run.len();
        bytes += size;
        reads += size.div_ceil(RANGE);
    }
    (frames, index.frames.len(), bytes, reads)
}

/// Every file below `dir` (relative, `/`-separated) with its bytes; links as `-> target`.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let meta = fs_err::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                let target = fs_err::read_link(&path).unwrap();
                found.push((rel, format!("-> {}", target.display()).into_bytes()));
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                found.push((rel, fs_err::read(&path).unwrap()));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_member_fetch_of_real_libraries_reads_only_their_frames_and_writes_what_tar_x_writes() {
    let f = Fixture::pushed();
    let archive = f.stored();
    let (library, bytes) = f.target().clone();
    // On Unix the library's link is asked for: it brings the library.
    let asked = if cfg!(unix) {
        link_name(&library)
    } else {
        library.clone()
    };
    let glob = format!("lib/{asked}");
    let (frames, total, compressed, reads) = expected_cost(&archive, std::slice::from_ref(&glob));
    assert!(total >= 4, "{total} frames");
    assert!(frames < total, "{frames} of {total} frames");

    // What the index costs: a fetch whose glob matches nothing reads each archive's tail only.
    let (_, baseline) = f.fetch("none", &["--member", "nothing", "--allow-empty"]);
    let (stdout, requests) = f.fetch("out", &["--member", &glob]);
    let members = if cfg!(unix) { 2 } else { 1 };
    let line = format!(
        "++ {members} members of '{ARCHIVE}' ({frames} of {total} frames, {}.{} MiB)",
        compressed >> 20,
        ((compressed % (1 << 20)) * 10) >> 20
    );
    assert!(stdout.contains(&line), "{line}\n{stdout}");
    assert!(
        stdout.contains("-- No member of 'core_lib_generic.tar.zst' matches"),
        "{stdout}"
    );
    assert_eq!(
        requests - baseline,
        reads,
        "the frames' ranged reads beyond the listing, HEADs and tails"
    );
    assert!(
        compressed * 2 < archive.len() as u64,
        "{compressed} of {}",
        archive.len()
    );

    let out = f.work.path().join("out");
    let fetched = files(&out);
    let lib = format!("base_lib_generic/base/stage/lib/{library}");
    let mut expected = vec![
        (
            "base_lib_generic/artifact_manifest.txt".to_owned(),
            b"base/stage\n".to_vec(),
        ),
        (lib.clone(), bytes),
    ];
    if cfg!(unix) {
        expected.push((
            format!("base_lib_generic/base/stage/lib/{asked}"),
            format!("-> {library}").into_bytes(),
        ));
    }
    expected.sort();
    assert_eq!(
        fetched.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        expected.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    assert!(fetched == expected, "the fetched bytes differ");
    #[cfg(unix)]
    {
        use rock_ci_test_support::tar_tree::{snapshot_without_dir_attributes, tar_x_members};
        let plain = f.work.path().join("whole.tar");
        fs_err::write(&plain, zstd::stream::decode_all(&archive[..]).unwrap()).unwrap();
        let by_tar = f.work.path().join("by-tar");
        tar_x_members(
            &plain,
            &by_tar,
            &[
                "artifact_manifest.txt",
                &format!("base/stage/lib/{library}"),
                &format!("base/stage/lib/{asked}"),
            ],
        );
        assert_eq!(
            snapshot_without_dir_attributes(&out.join("base_lib_generic")),
            snapshot_without_dir_attributes(&by_tar)
        );
    }

    // Tiny files by a directory glob, flattened: the frames holding that directory only.
    let tiny = "share/tiny/07/*".to_owned();
    let (frames, total, _, reads) = expected_cost(&archive, std::slice::from_ref(&tiny));
    let (stdout, requests) = f.fetch("flat", &["--member", &tiny, "--flatten"]);
    assert!(
        stdout.contains(&format!("({frames} of {total} frames")),
        "{stdout}"
    );
    assert_eq!(requests - baseline, reads);
    let flat = files(&f.work.path().join("flat"));
    let expected: Vec<(String, Vec<u8>)> = (0..TINY_FILES)
        .filter(|i| i % 30 == 7)
        .map(|i| {
            (
                format!("share/tiny/07/{i:04}.txt"),
                format!("tiny file {i}\n").into_bytes(),
            )
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    assert!(flat == expected, "{} files fetched", flat.len());
}

#[test]
fn an_altered_frame_is_named_and_nothing_is_written() {
    let f = Fixture::pushed();
    let archive = f.stored();
    let (index, _) = MemberIndex::from_tail(&archive, archive.len() as u64, None).unwrap();
    let library = f.target().0.clone();
    let glob = format!("lib/{library}");
    let selection = index.select(std::slice::from_ref(&glob));
    let first = index.frame_runs(&selection.members)[0].start;
    let offset = index.frames[first].offset;
    // The server flips a byte of the ranged GET that starts at the member's first frame.
    let proxy = FaultProxy::start(
        f.server.addr(),
        FaultPlan::new().rule(Rule::new(Fault::BitFlip).method("GET").when(move |req| {
            req.header("range")
                .is_some_and(|r| r.starts_with(&format!("bytes={offset}-")))
        })),
    );
    let out = f.tool(
        "fetch_artifacts",
        &["--run-id", RUN, "--output-dir", "out", "--member", &glob],
        Some(&proxy.endpoint()),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(ARCHIVE) && stderr.contains(&format!("the frame at byte {offset}")),
        "{stderr}"
    );
    assert!(proxy.injected(Fault::BitFlip) >= 1);
    assert!(!f.work.path().join("out/base_lib_generic").exists());
}

#[test]
fn install_takes_members_by_their_path_below_the_prefix() {
    let f = Fixture::pushed();
    let (library, bytes) = f.target().clone();
    let install = |args: &[&str]| {
        let mut all = vec![
            "--run-id",
            RUN,
            "--artifact-group",
            "gfx94X-dcgpu",
            "--amdgpu-targets",
            "gfx942",
            "--output-dir",
            "rocm",
        ];
        all.extend_from_slice(args);
        f.tool("install_rocm_from_artifacts", &all, None)
    };
    let glob = format!("lib/{library}");
    let out = install(&["--member", &glob, "--member", "share/core.txt"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("--member {glob} --member share/core.txt")),
        "{}",
        text(&out.stdout)
    );
    let installed = files(&f.work.path().join("rocm"));
    assert_eq!(
        installed,
        [
            (format!("lib/{library}"), bytes),
            ("share/core.txt".to_owned(), b"core\n".to_vec())
        ]
    );

    // A glob that matches nothing fails naming it, unless allowed; the tree stays.
    let out = install(&["--member", "lib/libnothing*"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("lib/libnothing*"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(files(&f.work.path().join("rocm")).len(), 2);
    let out = install(&["--member", "lib/libnothing*", "--allow-empty"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // `--member` is for run mode only.
    let out = f.tool(
        "install_rocm_from_artifacts",
        &[
            "--input-dir",
            "build",
            "--artifact-group",
            "gfx94X-dcgpu",
            "--member",
            "lib/*",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--run-id"),
        "{}",
        text(&out.stderr)
    );
}
