//! docs/migration.md: every rock-ci line of its table parses with the tool's own argument
//! parser (`rock-ci --check-args`, which runs nothing), and `--check-args` itself.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::{Launch as _, text};

fn rock_ci(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rock-ci"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .current_dir(cwd)
        .run_output()
        .unwrap()
}

/// A sample value for each `${{ }}` expression and shell variable of the table's lines, as a
/// workflow run could give them.
fn sample(expression: &str) -> Option<&'static str> {
    Some(match expression {
        "github.run_id" | "env.ARTIFACT_RUN_ID" | "ARTIFACT_RUN_ID" => "17865324892",
        "fromJSON(inputs.build_config).baseline_run_id" => "17860000000",
        "github.repository"
        | "inputs.artifact_github_repo"
        | "fromJSON(inputs.build_config).baseline_repository" => "ROCm/TheRock",
        "github.workspace" | "GITHUB_WORKSPACE" => "/home/runner/work/TheRock/TheRock",
        "THEROCK_HOST_WORKSPACE" => "/mnt/c/actions-runner/_work/TheRock/TheRock",
        "wsl_venv_dir" => "/home/runner/therock-wsl-rocdxg/.venv",
        "wsl_build_dir" => "/home/runner/therock-wsl-rocdxg/build",
        "inputs.amdgpu_families"
        | "env.DIST_AMDGPU_FAMILIES"
        | "fromJSON(inputs.build_config).dist_amdgpu_families" => "gfx94X-dcgpu;gfx120X-all",
        "inputs.artifact_group" | "ARTIFACT_GROUP" | "inputs.amdgpu_family" | "AMDGPU_FAMILIES" => {
            "gfx94X-dcgpu"
        }
        "inputs.linux_amdgpu_families" => "gfx94X-dcgpu;gfx950-dcgpu",
        "inputs.dist_amdgpu_families" => "gfx94X-dcgpu;gfx110X-all",
        // multi_arch_build_tarballs.yml's array: empty, or this flag.
        "EXTRA_ARGS[@]" => "--include-test-tarballs",
        "inputs.windows_amdgpu_families" => "gfx120X-all",
        // setup_test_environment's default: no single targets.
        "AMDGPU_TARGETS" => "",
        "FETCH_ARTIFACT_ARGS" => "--blas --tests",
        "env.ARTIFACTS_DIR" => "/home/runner/work/TheRock/TheRock/artifacts",
        "env.PACKAGES_DIR" => "/home/runner/work/TheRock/TheRock/packages",
        "env.PACKAGE_DIST_DIR" => "/home/runner/work/TheRock/TheRock/output/packages/dist",
        "env.OUTPUT_DIR" => "output",
        "OUTPUT_ARTIFACTS_DIR" => "/home/runner/work/TheRock/TheRock/build",
        "DEST" => "/opt/rocm-7.13.0a20260822",
        "inputs.package_version" => "7.13.0.dev0+dbd7369489260265fc6ddfc9d0de1262a95fe974",
        "inputs.rocm_version" => "7.13.0a20260822",
        "inputs.multiarch_index && '--multiarch' || ''" => "--multiarch",
        "inputs.native_package_type" => "deb",
        "inputs.release_type" => "nightly",
        "inputs.product" => "pytorch",
        "inputs.platform" | "env.PLATFORM" => "linux",
        "inputs.build_variant" => "asan",
        "inputs.stage_name" | "STAGE_NAME" | "stage_name" => "compiler-runtime",
        "fromJSON(inputs.build_config).prebuilt_stages" => "foundation,compiler-runtime",
        "BUILD_DIR" => "build",
        "needs.build_python_packages.outputs.kpack_split" => "true",
        _ => return None,
    })
}

/// `line` with its `${{ }}` expressions and `${VAR}` variables replaced by their samples.
fn substitute(line: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let (open, close) = if rest[at..].starts_with("${{") {
            ("${{", "}}")
        } else {
            ("${", "}")
        };
        let body = &rest[at + open.len()..];
        let end = body
            .find(close)
            .ok_or_else(|| format!("unclosed {open} in {line}"))?;
        let expression = body[..end].trim();
        out.push_str(sample(expression).ok_or_else(|| {
            format!("no sample value for `{expression}`: add one to bins/tests/it/migration.rs")
        })?);
        rest = &body[end + close.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The words of a POSIX shell command line (quotes and backslashes; nothing else is special in
/// the table's lines).
fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '"' | '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\\') if c == '"' => word.extend(chars.next()),
                        Some(other) => word.push(other),
                        None => return Err(format!("unclosed {c} in {line}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The cells of a Markdown table row; `\|` is a `|` of the cell.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let (mut cells, mut cell) = (Vec::new(), String::new());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => cell.push(chars.next().unwrap()),
            '|' => cells.push(std::mem::take(&mut cell).trim().to_owned()),
            other => cell.push(other),
        }
    }
    cells.push(cell.trim().to_owned());
    cells
}

/// The first code span of a cell.
fn code(cell: &str) -> Option<&str> {
    let start = cell.find('`')? + 1;
    let len = cell[start..].find('`')?;
    Some(&cell[start..start + len])
}

/// One row of the call-site table: its number, the Python line and the rock-ci cell.
struct Site {
    number: String,
    python: String,
    rock_ci: String,
}

fn call_sites(doc: &str) -> Vec<Site> {
    doc.lines()
        .skip_while(|l| !l.starts_with("| # | Workflow"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells = cells(row);
            assert_eq!(cells.len(), 5, "a row of five cells: {row}");
            Site {
                number: cells[0].clone(),
                python: cells[2].clone(),
                rock_ci: cells[3].clone(),
            }
        })
        .collect()
}

/// The script a Python line runs, without `.py`.
fn script(python: &str) -> Option<&str> {
    let end = python.find(".py")?;
    let start = python[..end].rfind(['/', ' ', '"']).map_or(0, |i| i + 1);
    Some(&python[start..end])
}

#[test]
fn every_rock_ci_line_of_the_migration_table_parses() {
    let doc =
        fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/migration.md"))
            .unwrap();
    let sites = call_sites(&doc);
    assert_eq!(sites.len(), 37, "one row per call site at the named commit");
    let cwd = tempfile::tempdir().unwrap();
    let mut per_tool: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    // (row, line, `rock-ci --check-args` arguments): run at once below.
    let mut checks: Vec<(&str, &str, Vec<String>)> = Vec::new();
    for (index, site) in sites.iter().enumerate() {
        assert_eq!(
            site.number,
            (index + 1).to_string(),
            "rows numbered in order"
        );
        let python = code(&site.python).expect("the Python line as a code span");
        let Some(line) = code(&site.rock_ci) else {
            // A site rock-ci cannot take over says why instead.
            assert!(
                site.rock_ci.len() > 20,
                "row {}: no rock-ci line and no reason",
                site.number
            );
            continue;
        };
        let words = substitute(line).and_then(|l| shell_words(&l));
        let words = match words {
            Ok(words) => words,
            Err(e) => {
                failures.push(format!("row {}: {e}", site.number));
                continue;
            }
        };
        let tool = words[0].rsplit('/').next().unwrap().to_owned();
        assert_eq!(
            script(python),
            Some(tool.as_str()),
            "row {}: the rock-ci line runs the Python line's tool",
            site.number
        );
        *per_tool.entry(tool.clone()).or_default() += 1;
        let mut args = vec!["--check-args".to_owned(), tool];
        args.extend(words[1..].iter().cloned());
        checks.push((site.number.as_str(), line, args));
    }
    // Four processes at a time: each is slow to start under Wine.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|threads| {
        for _ in 0..4 {
            threads.spawn(|| {
                while let Some((row, line, args)) =
                    checks.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let out = rock_ci(&args, cwd.path(), &[]);
                    if out.status.code() != Some(0) || !out.stdout.is_empty() {
                        found.lock().unwrap().push(format!(
                            "row {row}: `{line}` ({:?}): exit {:?}\n{}{}",
                            &args[2..],
                            out.status.code(),
                            text(&out.stdout),
                            text(&out.stderr)
                        ));
                    }
                }
            });
        }
    });
    failures.extend(found.into_inner().unwrap());
    failures.sort();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The counts the guide gives are the table's.
    let intro = doc.split("## ").next().unwrap().replace('\n', " ");
    assert!(intro.contains(&format!("{} call sites", sites.len())));
    for (tool, n) in &per_tool {
        assert!(
            intro.contains(&format!("`{tool}` {n}")),
            "the introduction gives `{tool}` {n}"
        );
    }
}

#[test]
fn check_args_parses_a_command_line_without_running_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("fetched");
    let output = output.to_str().unwrap();
    // An endpoint nothing listens on: a run would fail on its first request.
    let env = [("AWS_ENDPOINT_URL", "http://127.0.0.1:9")];
    let out = rock_ci(
        &[
            "--check-args",
            "fetch_artifacts",
            "--run-i",
            "5",
            "--artifact-group",
            "gfx94X-dcgpu",
            "--output-dir",
            output,
        ],
        dir.path(),
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    assert!(!Path::new(output).exists(), "nothing was fetched");

    let out = rock_ci(
        &[
            "--check-args",
            "artifact_manager",
            "fetch",
            "--no-such-flag",
        ],
        dir.path(),
        &env,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--no-such-flag"),
        "{}",
        text(&out.stderr)
    );

    let out = rock_ci(
        &["--check-args", "upload_tarballs", "--platform=solaris"],
        dir.path(),
        &env,
    );
    assert_eq!(out.status.code(), Some(2), "values are parsed too");

    for args in [&["--check-args"][..], &["--check-args", "no_such_tool"]] {
        let out = rock_ci(args, dir.path(), &env);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("--check-args takes a tool's name first"),
            "{}",
            text(&out.stderr)
        );
    }
}
