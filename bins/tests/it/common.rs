//! Helpers of the uploaders' tests.

use std::io;
use std::path::Path;
use std::process::{Child, Command, Output};

/// The platform the tools default to here, as it appears in keys (`{run_id}-{platform}`).
pub(crate) const HOST_PLATFORM: &str = if cfg!(windows) { "windows" } else { "linux" };

/// A `/`-separated relative path as the tools print it here (`\` separators on Windows).
pub(crate) fn native(path: &str) -> String {
    path.replace('/', std::path::MAIN_SEPARATOR_STR)
}

/// A new directory below `B:\`, removed when dropped. TheRock's Windows jobs build on a drive
/// of their own (`B:\build`); scripts/windows/env.sh maps `B:` of the Wine prefix to
/// target/windows/drive-b (a link `b:` in the prefix's `dosdevices`) for the tests of paths on
/// another drive than the system's.
#[cfg(windows)]
pub(crate) fn dir_on_drive_b(prefix: &str) -> tempfile::TempDir {
    let drive = Path::new(r"B:\");
    assert!(
        drive.is_dir(),
        "drive B: is not mapped: scripts/windows/env.sh maps it to target/windows/drive-b in the \
         Wine prefix (run the tests through scripts/test-windows or source that file); on \
         Windows, map it with `subst B: <dir>`"
    );
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(drive)
        .unwrap()
}

/// Whether `status` is that of a process ended by `Child::kill`: by a signal on Unix, where
/// that leaves no exit code; on Windows `TerminateProcess` leaves exit code 1.
pub(crate) fn killed(status: std::process::ExitStatus) -> bool {
    if cfg!(windows) {
        status.code() == Some(1)
    } else {
        status.code().is_none()
    }
}

/// Writes `content` at `path`, creating its directory.
pub(crate) fn write(path: &Path, content: &str) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

/// The permission bits of the file at `path`: its mode's on Unix; on Windows, which has only a
/// read-only attribute, 0o444 or 0o666.
pub(crate) fn permission_bits(path: &Path) -> u32 {
    let permissions = fs_err::metadata(path).unwrap().permissions();
    #[cfg(unix)]
    return std::os::unix::fs::PermissionsExt::mode(&permissions) & 0o777;
    #[cfg(not(unix))]
    return if permissions.readonly() { 0o444 } else { 0o666 };
}

/// Bytes as text.
pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `Command::output` and `spawn`, tried again when the new process ended while it was
/// being set up, before the program's own code ran. Wine reports that as `ERROR_INTERNAL_ERROR`
/// from `CreateProcess` (the process was gone before its start-up finished, with exit code 0);
/// the tests run as Windows programs under Wine, where it happens on a loaded machine. Any other
/// error, and any process that started, is returned as it is.
pub(crate) trait Launch {
    /// [`Command::output`], tried again as above.
    fn run_output(&mut self) -> io::Result<Output>;
    /// [`Command::spawn`], tried again as above.
    fn run_spawn(&mut self) -> io::Result<Child>;
}

impl Launch for Command {
    fn run_output(&mut self) -> io::Result<Output> {
        launched(|| self.output())
    }
    fn run_spawn(&mut self) -> io::Result<Child> {
        launched(|| self.spawn())
    }
}

/// `start()`, again (up to 4 times in all) while it fails as [`Launch`] describes.
#[expect(
    clippy::print_stderr,
    reason = "a retried start shows in the output of the test that failed later"
)]
fn launched<T>(mut start: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    /// `ERROR_INTERNAL_ERROR`, what Wine's `CreateProcess` returns for a process lost during
    /// its start-up.
    const LOST_DURING_START_UP: i32 = 1359;
    let mut attempt = 1;
    loop {
        match start() {
            Err(e)
                if cfg!(windows)
                    && e.raw_os_error() == Some(LOST_DURING_START_UP)
                    && attempt < 4 =>
            {
                eprintln!("the new process was lost during its start-up ({e}); starting it again");
                std::thread::sleep(std::time::Duration::from_millis(200 * attempt));
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Runs `bin` with `args` in `cwd`, with only `env` in its environment.
pub(crate) fn run_tool(bin: &str, args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    Command::new(bin)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .current_dir(cwd)
        .run_output()
        .unwrap()
}

/// The environment pointing a tool at `server`, as `(name, value)` pairs.
pub(crate) fn aws_env(server: &rock_ci_test_support::S3Server) -> Vec<(&'static str, String)> {
    server.aws_env().to_vec()
}

/// `env` borrowed, for [`run_tool`].
pub(crate) fn borrowed<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Asserts that a tool succeeded, showing its output when it did not.
pub(crate) fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// A proxy in front of `server` that answers 500 to every `PUT` whose path contains `fragment`,
/// and the environment pointing a tool at it (one attempt per request).
pub(crate) fn refusing_proxy(
    server: &rock_ci_test_support::S3Server,
    fragment: &str,
) -> (
    rock_ci_test_support::FaultProxy,
    Vec<(&'static str, String)>,
) {
    use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule};
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan::new().rule(
            Rule::new(Fault::Status500)
                .method("PUT")
                .path_contains(fragment),
        ),
    );
    let env = through_proxy(server, &proxy, Some(1));
    (proxy, env)
}

/// The environment pointing a tool at `server` through `proxy`, with `attempts` per request
/// when given.
pub(crate) fn through_proxy(
    server: &rock_ci_test_support::S3Server,
    proxy: &rock_ci_test_support::FaultProxy,
    attempts: Option<u32>,
) -> Vec<(&'static str, String)> {
    let mut env = aws_env(server);
    env.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
    env.push(("AWS_ENDPOINT_URL", proxy.endpoint()));
    if let Some(n) = attempts {
        env.push(("ROCK_CI_MAX_ATTEMPTS", n.to_string()));
    }
    env
}

/// The path of tool `name`: a link to the built `rock-ci` named after the tool, as
/// `rock-ci --link-tools` makes them (made once per test run, in `CARGO_TARGET_TMPDIR`).
pub(crate) fn tool(name: &str) -> &'static str {
    static LINKS: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let dir = LINKS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tool-links");
        let out = Command::new(env!("CARGO_BIN_EXE_rock-ci"))
            .arg("--link-tools")
            .arg(&dir)
            .run_output()
            .unwrap();
        assert_ok(&out);
        dir
    });
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(path.exists(), "rock-ci did not link {name}");
    String::leak(path.into_os_string().into_string().unwrap())
}

/// Writes the artifact archive `path` (and its `.sha256sum` sidecar) of symlinks and a
/// read-only file below the manifest path `stage` ([`rock_ci_test_support::links::LINKED`]).
/// [`assert_linked`] reads them back.
pub(crate) fn linked_artifact(path: &Path, stage: &str) {
    use rock_ci_test_support::links;
    links::write_archive(path, stage, links::LINKED);
}

/// Asserts that `dir` holds what [`linked_artifact`] stored below its manifest path: links
/// that read as their targets (on Windows, where the system makes no link, copies with their
/// targets' bytes), the 0444 file read-only (on Windows its read-only attribute).
pub(crate) fn assert_linked(dir: &Path) {
    for (name, content) in rock_ci_test_support::links::LINKED_READS {
        let path = dir.join(name);
        let read = fs_err::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read, *content, "{}", path.display());
    }
    #[cfg(unix)]
    assert_eq!(
        fs_err::read_link(dir.join("link.txt")).unwrap(),
        Path::new("target.txt")
    );
    let read_only = |name: &str| {
        fs_err::metadata(dir.join(name))
            .unwrap()
            .permissions()
            .readonly()
    };
    assert!(read_only("ro.txt"), "{}", dir.display());
    assert!(!read_only("target.txt"), "{}", dir.display());
}
