//! Shared glue of the rock-ci command-line tools: logging set-up, exit codes and the flag
//! parsers they share.
//!
//! The binaries in `src/bin/` parse flags and call into the library crates; what two of them
//! need lives here.

pub mod find_artifacts;
pub mod progress;
pub mod publish;
pub mod uploads;

use std::io::Write;
use std::process::ExitCode;

use github_actions::GithubClient;
use workflow_outputs::{GithubRepository, Platform, ReleaseType};

/// The value parser of every flag that counts or limits something (concurrency, attempts,
/// seconds): a whole number of at least 1, so that zero is a usage error (exit 2) in every
/// tool.
pub fn positive<T>() -> clap::builder::RangedU64ValueParser<T>
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
    <T as TryFrom<u64>>::Error: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    clap::builder::RangedU64ValueParser::new().range(1..)
}

/// `--member` and `--allow-empty`: the archive members a fetch writes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MemberArgs {
    /// Only the archive members this glob matches (repeatable): by their path in the archive
    /// or below its manifest paths (`lib/libamdhip64.so*`, which is also the path below the
    /// install prefix of a flattened fetch or an install), `*` crossing `/`; a symlink brings
    /// its target. Only the frames holding them are downloaded where the archive has a member
    /// index; other archives are downloaded whole and filtered.
    #[arg(long = "member", value_name = "GLOB")]
    pub members: Vec<String>,
    /// A `--member` glob that matches no member is not an error.
    #[arg(long)]
    pub allow_empty: bool,
}

/// The time limits and retry budget of network requests, as flags; each overrides the
/// environment variable of the same meaning (`ROCK_CI_CONNECT_TIMEOUT`, ...), which the S3
/// and GitHub clients read.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct NetworkLimits {
    /// Seconds to wait for a connection (default 10).
    #[arg(long, value_name = "SECONDS", value_parser = positive::<u64>())]
    pub connect_timeout: Option<u64>,
    /// Seconds to wait for a response to start, and for the next bytes of a body (default 20).
    #[arg(long, value_name = "SECONDS", value_parser = positive::<u64>())]
    pub read_timeout: Option<u64>,
    /// Seconds one request may take with its retries, before the time its body needs at
    /// 64 KiB/s (default 60); raise it for slow links.
    #[arg(long, value_name = "SECONDS", value_parser = positive::<u64>())]
    pub operation_timeout: Option<u64>,
    /// Attempts per request (default 5).
    #[arg(long, value_name = "N", value_parser = positive::<u32>())]
    pub max_attempts: Option<u32>,
}

impl NetworkLimits {
    /// `env`, with the variables these flags set answered from the flags.
    pub fn over<'a>(
        self,
        env: impl Fn(&str) -> Option<String> + 'a,
    ) -> impl Fn(&str) -> Option<String> + 'a {
        let limits = storage_backend::LimitOverrides {
            connect_timeout: self.connect_timeout,
            read_timeout: self.read_timeout,
            operation_timeout: self.operation_timeout,
            max_attempts: self.max_attempts,
        };
        limits.over(env)
    }
}

/// Where the build topology comes from, as flags (`artifact_manager`, `post_stage_upload`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TopologyArgs {
    /// The topology [default: `{--therock-dir}/BUILD_TOPOLOGY.toml`, else the first
    /// `BUILD_TOPOLOGY.toml` in the working directory or its parents].
    #[arg(long, value_parser = parse_path)]
    pub topology: Option<std::path::PathBuf>,
    /// A TheRock checkout: the default topology and the GPU family table
    /// (`cmake/therock_amdgpu_targets.cmake`) [default: `$THEROCK_DIR`].
    #[arg(long, env = "THEROCK_DIR", value_parser = parse_path)]
    pub therock_dir: Option<std::path::PathBuf>,
}

impl TopologyArgs {
    /// The checkout these flags name (an empty `--therock-dir` is none).
    pub fn checkout(&self) -> build_topology::Checkout {
        build_topology::Checkout {
            topology: self.topology.clone(),
            therock_dir: self
                .therock_dir
                .clone()
                .filter(|d| !d.as_os_str().is_empty()),
        }
    }

    /// Whether a topology was named (`--topology`, `--therock-dir` or `$THEROCK_DIR`) rather
    /// than looked for from the working directory.
    pub fn is_given(&self) -> bool {
        let checkout = self.checkout();
        checkout.topology.is_some() || checkout.therock_dir.is_some()
    }
}

/// The logging flags every tool takes.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Verbosity {
    /// More logging (repeat for more).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

impl Verbosity {
    /// Installs the stderr log subscriber: `RUST_LOG` if set, else `warn` raised by each
    /// `-v` and lowered to `error` by `-q`.
    pub fn init_logging(self) {
        let level = match (self.quiet, self.verbose) {
            (true, _) => "error",
            (false, 0) => "warn",
            (false, 1) => "info",
            (false, 2) => "debug",
            _ => "trace",
        };
        let env = |var: &str| std::env::var(var).ok();
        let github = github_actions::secret_values(&env);
        progress::hide_in_logs(
            storage_backend::secret_values(&env)
                .into_iter()
                .chain(github),
        );
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(progress::LogWriter)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_target(false)
            .without_time()
            .try_init();
    }
}

/// Turns the result of a tool's `run` into its exit code: 0 on success, 1 on failure with the
/// error chain on stderr. A closed stdout (`| head`) is not a failure.
pub fn exit_code(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            // Already explained on stdout (the `ERROR:` lines).
            if is_reported(&err) {
                return ExitCode::FAILURE;
            }
            if let Some(usage) = usage_error(&err) {
                let program = std::env::args()
                    .next()
                    .and_then(|a| {
                        std::path::Path::new(&a)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                    })
                    .unwrap_or_default();
                let _ = writeln!(std::io::stderr(), "{program}: error: {usage}");
                return ExitCode::from(2);
            }
            let _ = writeln!(std::io::stderr(), "error: {}", error_text(&err));
            ExitCode::FAILURE
        }
    }
}

/// `err` and its causes, joined with `: `, each said once: a cause whose text an earlier one
/// already holds (the S3 client's `dispatch failure`, a retry summary repeated by the error
/// that wraps it) is left out.
pub fn error_text(err: &anyhow::Error) -> String {
    storage_backend::chain(err.as_ref())
}

/// The exit code of a finder (`find_artifacts_for_commit`, `find_latest_artifacts`), as the
/// reference's: 0 when something was found (or stdout was closed), 1 when nothing matched, 2
/// with `Error: …` on stderr when a request or the input failed.
pub fn finder_exit_code(result: anyhow::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "Error: {}", error_text(&err));
            ExitCode::from(2)
        }
    }
}

/// Whether `err` is already explained on stdout (the `ERROR:` lines).
fn is_reported(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<artifact_backend::pipeline::TransferError>()
            .is_some_and(artifact_backend::pipeline::TransferError::is_reported)
            || cause
                .downcast_ref::<build_topology::CheckoutError>()
                .is_some_and(build_topology::CheckoutError::is_reported)
            || cause
                .downcast_ref::<rocm_install::Error>()
                .is_some_and(rocm_install::Error::is_reported)
    })
}

/// The message of `err` when it is a usage error (exit 2): what the caller gave is wrong and
/// nothing was attempted, such as a URL setting that does not parse or a run id that is no
/// number.
fn usage_error(err: &anyhow::Error) -> Option<String> {
    err.chain().find_map(|cause| {
        if let Some(transfer) = cause.downcast_ref::<artifact_backend::pipeline::TransferError>() {
            return transfer.is_usage().then(|| transfer.to_string());
        }
        if let Some(api) = cause.downcast_ref::<github_actions::ApiError>() {
            return api.is_usage().then(|| api.to_string());
        }
        if let Some(run) = cause.downcast_ref::<github_actions::RunRootError>() {
            return run.is_usage().then(|| run.to_string());
        }
        if let Some(layout) = cause.downcast_ref::<github_actions::LayoutError>() {
            return layout.is_usage().then(|| layout.to_string());
        }
        if let Some(install) = cause.downcast_ref::<rocm_install::Error>() {
            return install.is_usage().then(|| install.to_string());
        }
        if let Some(upload) = cause.downcast_ref::<run_uploads::Error>() {
            return upload.is_usage().then(|| upload.to_string());
        }
        if let Some(publish) = cause.downcast_ref::<release_publish::Error>() {
            return publish.is_usage().then(|| publish.to_string());
        }
        match cause.downcast_ref::<storage_backend::Error>() {
            Some(e @ storage_backend::Error::InvalidEndpoint { .. }) => Some(e.to_string()),
            _ => None,
        }
    })
}

/// Whether `err` comes from writing to a closed stdout (`| head`), which is not a failure.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<run_uploads::Error>()
                .is_some_and(run_uploads::Error::is_broken_pipe)
    })
}

/// Checks the URL settings of the environment (the S3 endpoint, the GitHub API and server
/// URLs) before any request, so that a malformed one is a usage error at once.
///
/// # Errors
/// The crates' errors naming the variable, which [`exit_code`] maps to exit 2.
pub fn check_url_settings(lookup: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<()> {
    storage_backend::endpoint_override(None, lookup)?;
    GithubClient::from_lookup(lookup)?;
    Ok(())
}

/// Runs a tool's async body on a multi-thread runtime, after [`check_url_settings`]; its
/// result becomes the exit code as in [`exit_code`].
pub fn block_on(body: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    if let Err(err) = check_url_settings(&|var| std::env::var(var).ok()) {
        return exit_code(Err(err));
    }
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => exit_code(runtime.block_on(body)),
        Err(e) => exit_code(Err(
            anyhow::Error::new(e).context("Failed to start the async runtime")
        )),
    }
}

/// Parses a commit that is looked up on the GitHub API (a full SHA) for clap.
pub fn parse_api_commit(s: &str) -> Result<String, String> {
    github_actions::check_commit_sha(s)
        .map(|()| s.to_owned())
        .map_err(|e| e.to_string())
}

/// Parses a run id that is looked up on the GitHub API (digits only) for clap.
pub fn parse_api_run_id(s: &str) -> Result<String, String> {
    github_actions::check_run_id(s)
        .map(|()| s.to_owned())
        .map_err(|e| e.to_string())
}

/// Parses a path flag for clap as a Windows program shows it (Python's `pathlib` there):
/// `B:/build` becomes `B:\build`, so the paths printed from it have one kind of separator.
/// On Unix the path is taken as given.
pub fn parse_path(s: &str) -> Result<std::path::PathBuf, std::convert::Infallible> {
    Ok(file_tree::native_path(s))
}

/// Parses a bucket name for clap: S3's naming rules, the broken one in the error.
pub fn parse_bucket(s: &str) -> Result<String, String> {
    storage_location::check_bucket_name(s).map_err(|e| e.to_string())?;
    Ok(s.to_owned())
}

/// Parses a calendar date written `YYYYMMDD` for clap.
pub fn parse_yyyymmdd(s: &str) -> Result<String, String> {
    if py_packaging::valid_yyyymmdd(s) {
        Ok(s.to_owned())
    } else {
        Err(format!("{s:?} is not a calendar date written YYYYMMDD"))
    }
}

/// Parses a [`Platform`] for clap, with the allowed values in the error.
pub fn parse_platform(s: &str) -> Result<Platform, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// Parses a [`ReleaseType`] for clap.
pub fn parse_release_type(s: &str) -> Result<ReleaseType, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// Parses a [`ReleaseType`] that publishes releases (every one but `ci`) for clap.
pub fn parse_publishing_release_type(s: &str) -> Result<ReleaseType, String> {
    let release_type = parse_release_type(s)?;
    release_type
        .release_stream()
        .map(|_| release_type)
        .map_err(|e| e.to_string())
}

/// Parses a [`workflow_outputs::ReleaseProduct`] for clap.
pub fn parse_release_product(s: &str) -> Result<workflow_outputs::ReleaseProduct, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// Parses a [`workflow_outputs::PythonIndex`] for clap.
pub fn parse_python_index(s: &str) -> Result<workflow_outputs::PythonIndex, String> {
    s.parse()
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// A `--run-github-repo` value: a repository, or none when the value is empty (workflows pass
/// `--run-github-repo=` for an unset input; the default then applies, as in the reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryArg(pub Option<GithubRepository>);

/// Parses a [`RepositoryArg`] for clap: empty is "not given", anything else must be a valid
/// `owner/name`.
pub fn parse_repository(s: &str) -> Result<RepositoryArg, String> {
    if s.is_empty() {
        return Ok(RepositoryArg(None));
    }
    s.parse()
        .map(|r| RepositoryArg(Some(r)))
        .map_err(|e: workflow_outputs::Error| e.to_string())
}

/// The command line a tool parses when it is not the process's own: set by the `rock-ci`
/// binary, which runs each tool as `rock-ci TOOL ARGS...` (the tool then sees `TOOL ARGS...`).
static INVOCATION: std::sync::OnceLock<Vec<std::ffi::OsString>> = std::sync::OnceLock::new();

/// Makes [`parse_args`] read `args` (program name first) instead of the process's arguments.
/// The first call wins; later ones are ignored.
pub fn set_invocation(args: Vec<std::ffi::OsString>) {
    let _ = INVOCATION.set(args);
}

/// Whether [`parse_args`] only checks the command line: set by `rock-ci --check-args`.
static CHECK_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes [`parse_args`] end the process with exit 0 once the command line has parsed, before
/// the tool reads anything or makes a request (`rock-ci --check-args TOOL ARGS...`): a
/// workflow's command line is checked against the tool's flags without running it. A command
/// line that does not parse is the usage error (exit 2) it always is.
pub fn set_check_only() {
    CHECK_ONLY.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Parses the process's command line into `T` with long options abbreviated as Python's
/// `argparse` allows: an unambiguous prefix of a long option stands for it (`--run-i 5`,
/// `--art=x`); an ambiguous one is a usage error (exit 2) listing the candidates, e.g.
/// `ambiguous option: --a could match --artifact-group, --amdgpu-targets`.
pub fn parse_args<T: clap::Parser>() -> T {
    let args: Vec<std::ffi::OsString> = INVOCATION
        .get()
        .cloned()
        .unwrap_or_else(|| std::env::args_os().collect());
    let mut command = T::command();
    // As clap names the program in its usage line: after the file name it was run as. A tool
    // that does not name itself is named so in `--version` too, not after this package.
    if let Some(name) = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|n| n.to_str())
    {
        command = command.bin_name(name.to_owned());
        if command.get_name() == env!("CARGO_PKG_NAME") {
            command = command.display_name(name.to_owned());
        }
    }
    command.build();
    // Options after a subcommand's name are that subcommand's.
    let subcommand = args
        .get(1)
        .and_then(|a| a.to_str())
        .and_then(|name| command.find_subcommand(name));
    let expanded = match subcommand {
        Some(sub) => expand_long_prefixes(sub, args[1..].iter().cloned()).map(|mut rest| {
            rest.insert(0, args[0].clone());
            rest
        }),
        None => expand_long_prefixes(&command, args.iter().cloned()),
    };
    let args = expanded.unwrap_or_else(|e| e.format(&mut command).exit());
    let mut matches = command
        .try_get_matches_from_mut(args)
        .unwrap_or_else(|e| e.exit());
    let parsed =
        T::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.format(&mut command).exit());
    if CHECK_ONLY.load(std::sync::atomic::Ordering::Relaxed) {
        std::process::exit(0);
    }
    parsed
}

/// Replaces each abbreviated long option of `args` (program name first) by the full name of
/// the one long option of `command` it is a prefix of. Exact names, unknown options (left to
/// clap's own error), values and everything after `--` pass unchanged.
pub fn expand_long_prefixes(
    command: &clap::Command,
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<Vec<std::ffi::OsString>, clap::Error> {
    // Every long name (aliases too) and whether it takes exactly one separate value.
    let longs: Vec<(&str, bool)> = command
        .get_arguments()
        .flat_map(|arg| {
            let one_value = arg.get_action().takes_values()
                && arg
                    .get_num_args()
                    .is_some_and(|n| n.min_values() == 1 && n.max_values() == 1);
            let aliases = arg.get_all_aliases().unwrap_or_default();
            arg.get_long()
                .into_iter()
                .chain(aliases)
                .map(move |name| (name, one_value))
        })
        .collect();
    let mut out = Vec::new();
    let mut args = args.into_iter();
    out.extend(args.next());
    let mut value_next = false;
    while let Some(arg) = args.next() {
        if std::mem::take(&mut value_next) {
            out.push(arg);
            continue;
        }
        let Some(text) = arg.to_str().and_then(|a| a.strip_prefix("--")) else {
            out.push(arg);
            continue;
        };
        if text.is_empty() {
            out.push(arg);
            out.extend(args.by_ref());
            break;
        }
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (text, None),
        };
        let matches: Vec<(&str, bool)> = match longs.iter().find(|(long, _)| *long == name) {
            Some(exact) => vec![*exact],
            None => longs
                .iter()
                .filter(|(long, _)| long.starts_with(name))
                .copied()
                .collect(),
        };
        match matches[..] {
            [] => out.push(arg),
            [(long, one_value)] => {
                value_next = one_value && value.is_none();
                out.push(match value {
                    Some(value) => format!("--{long}={value}").into(),
                    None => format!("--{long}").into(),
                });
            }
            _ => {
                let names: Vec<String> = matches.iter().map(|(l, _)| format!("--{l}")).collect();
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::UnknownArgument,
                    format!(
                        "ambiguous option: --{text} could match {}",
                        names.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
