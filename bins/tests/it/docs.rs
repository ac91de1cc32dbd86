//! What the README and the scripts promise a newcomer, checked against the repository.

use std::path::Path;

fn repo_file(rel: &str) -> String {
    fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)).unwrap()
}

/// `*` matches any run of characters; everything else itself.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().unwrap();
    let Some(mut left) = name.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

/// The README's install line names one wheel when both were built (`scripts/build-wheel` and
/// `scripts/build-wheel --windows` write beside each other), and that is the Linux one.
#[test]
fn the_readme_install_line_picks_the_manylinux_wheel() {
    let readme = repo_file("README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("scripts/build-wheel && pip install "))
        .expect("the README's install line");
    let pattern = line
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_start_matches("target/wheels/");
    let version = env!("CARGO_PKG_VERSION");
    let linux =
        format!("rock_ci-{version}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
    let windows = format!("rock_ci-{version}-py3-none-win_amd64.whl");
    assert!(glob_matches(pattern, &linux), "{pattern} vs {linux}");
    assert!(
        !glob_matches(pattern, &windows),
        "{pattern} matches {windows}"
    );
    assert!(
        readme.contains("Needs rustup") && readme.contains("apt-get"),
        "the README names what a fresh machine needs"
    );
}

/// The demo says what it does before anything else, and its build is not silent.
#[test]
fn the_demo_introduces_itself_and_shows_its_build() {
    let demo = repo_file("scripts/demo");
    let first_command = demo
        .lines()
        .find(|l| !l.starts_with('#') && !l.starts_with("set ") && !l.starts_with("cd "))
        .unwrap();
    assert!(
        first_command.starts_with("echo \"rock-ci demo: "),
        "{first_command}"
    );
    let build = demo.lines().find(|l| l.contains("cargo build")).unwrap();
    assert!(
        !build
            .split_whitespace()
            .any(|w| w == "-q" || w == "--quiet"),
        "{build}"
    );
}

/// No tool's page says it is tested on Linux only: every tool's tests also run under Wine.
#[test]
fn no_tool_page_says_linux_only() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli");
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = fs_err::read_to_string(&path).unwrap();
        assert!(!text.contains("tested on Linux only"), "{}", path.display());
    }
}

#[test]
fn globs_match_as_the_shell_does() {
    assert!(glob_matches("a*b*.whl", "a-x-b-y.whl"));
    assert!(glob_matches("*", ""));
    assert!(!glob_matches("a*b", "ab-"));
    assert!(glob_matches("a*ba", "aba"));
    assert!(!glob_matches("ab*ba", "aba"));
}
