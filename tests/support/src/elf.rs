//! Real ELF files for tests: built with `cc`, read back with `readelf`, compared with a
//! `patchelf` when one is installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `cmd`, panicking with its output unless it succeeds.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Compiles `source` with `cc` into `dir/name`, passing `args`.
pub fn cc(dir: &Path, name: &str, source: &str, args: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    fs_err::write(&src, source).expect("write C source");
    let out = dir.join(name);
    run_ok(Command::new("cc").arg(&src).arg("-o").arg(&out).args(args));
    out
}

/// The dynamic entries `readelf -d` shows for a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadelfDynamic {
    /// `(SONAME)`.
    pub soname: Option<String>,
    /// `(RPATH)`.
    pub rpath: Option<String>,
    /// `(RUNPATH)`.
    pub runpath: Option<String>,
    /// `(NEEDED)`, in order.
    pub needed: Vec<String>,
}

/// Runs `readelf -dW` on `path`.
pub fn readelf_dynamic(path: &Path) -> ReadelfDynamic {
    let out = run_ok(Command::new("readelf").arg("-dW").arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    let value = |line: &str| {
        let start = line.find('[').expect("bracketed value") + 1;
        line[start..line.rfind(']').expect("bracketed value")].to_owned()
    };
    let mut d = ReadelfDynamic::default();
    for line in text.lines() {
        if line.contains("(SONAME)") {
            d.soname = Some(value(line));
        } else if line.contains("(RPATH)") {
            d.rpath = Some(value(line));
        } else if line.contains("(RUNPATH)") {
            d.runpath = Some(value(line));
        } else if line.contains("(NEEDED)") {
            d.needed.push(value(line));
        }
    }
    d
}

/// Panics unless `readelf -lWd` reads `path` without a warning.
pub fn assert_readelf_clean(path: &Path) {
    let out = run_ok(Command::new("readelf").arg("-lWd").arg(path));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.trim().is_empty(),
        "readelf complains about {}: {stderr}",
        path.display()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("not covered"), "{stdout}");
}

/// A `patchelf` to compare with: `$ROCK_CI_PATCHELF`, else the one `scripts/test` installs
/// under `target/tools/patchelf`.
pub fn patchelf() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ROCK_CI_PATCHELF") {
        return Some(PathBuf::from(p));
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/patchelf/bin/patchelf");
    p.is_file().then_some(p)
}

/// `eu-elflint --gnu-ld`'s messages about `file` (stdout and stderr), one per line, with the
/// file's path written `FILE` so two files' messages compare; "No errors" is none. Panics when
/// eu-elflint cannot run (elfutils; `scripts/test-tools` installs it).
pub fn elflint(file: &Path) -> std::collections::BTreeSet<String> {
    let out = Command::new("eu-elflint")
        .arg("--gnu-ld")
        .arg(file)
        .output()
        .expect("eu-elflint runs (elfutils; scripts/test-tools installs it)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&out.stderr).lines())
        .map(|l| l.replace(&*file.to_string_lossy(), "FILE"))
        .filter(|l| !l.trim().is_empty() && l.trim() != "No errors")
        .collect()
}
