//! `elf-patch` end to end, and against patchelf 0.19 on the same inputs.

use crate::common::Launch as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rock_ci_test_support::elf::{
    ReadelfDynamic, assert_readelf_clean, cc, patchelf, readelf_dynamic, run_ok,
};

fn ours() -> Command {
    Command::new(env!("CARGO_BIN_EXE_elf-patch"))
}

fn theirs() -> Command {
    Command::new(
        patchelf().expect("patchelf 0.19 (run scripts/test-tools or set ROCK_CI_PATCHELF)"),
    )
}

/// Runs elf-patch with `args` then `paths`, whatever its exit status.
fn ours_with(args: &[&str], paths: &[&Path]) -> Output {
    ours().args(args).args(paths).run_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Copies `file` to `dir/{name}-ours` and `dir/{name}-theirs` and applies `edit` with elf-patch
/// and patchelf to one each; elf-patch's result must read cleanly. Returns both, and the
/// output of each run.
fn patch_both<S: AsRef<std::ffi::OsStr>>(
    dir: &Path,
    name: &str,
    file: &Path,
    edit: &[S],
) -> ([PathBuf; 2], [Output; 2]) {
    let (a, b) = (
        dir.join(format!("{name}-ours")),
        dir.join(format!("{name}-theirs")),
    );
    fs_err::copy(file, &a).unwrap();
    fs_err::copy(file, &b).unwrap();
    let runs = [
        run_ok(ours().args(edit).arg(&a)),
        run_ok(theirs().args(edit).arg(&b)),
    ];
    assert_readelf_clean(&a);
    ([a, b], runs)
}

/// Libraries and programs built here, plus copies of a few system libraries.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let lib = "int dep_value(void) { return 1; }\n";
    let prog = "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n";
    let mut files = vec![
        cc(
            dir,
            "libplain.so",
            lib,
            &["-shared", "-fPIC", "-Wl,-soname,libplain.so.1"],
        ),
        cc(
            dir,
            "librunpath.so",
            lib,
            &["-shared", "-fPIC", "-Wl,--enable-new-dtags,-rpath,$ORIGIN"],
        ),
        cc(
            dir,
            "librpath.so",
            lib,
            &[
                "-shared",
                "-fPIC",
                "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../lib",
            ],
        ),
        cc(dir, "pie", prog, &["-pie", "-fPIE"]),
        cc(dir, "nopie", prog, &["-no-pie"]),
    ];
    let system = rock_ci_test_support::system_libraries();
    for (i, p) in system.into_iter().take(12).enumerate() {
        let copy = dir.join(format!(
            "sys{i}-{}",
            p.file_name().unwrap().to_string_lossy()
        ));
        fs_err::copy(&p, &copy).unwrap();
        files.push(copy);
    }
    files
}

#[test]
fn prints_what_patchelf_prints() {
    let dir = tempfile::tempdir().unwrap();
    for file in inputs(dir.path()) {
        for flag in ["--print-soname", "--print-rpath", "--print-needed"] {
            let a = run_ok(ours().arg(flag).arg(&file));
            let b = run_ok(theirs().arg(flag).arg(&file));
            assert_eq!(stdout(&a), stdout(&b), "{flag} {}", file.display());
        }
    }
}

#[test]
fn edits_match_patchelf_and_files_stay_valid() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("$ORIGIN/../{}lib:$ORIGIN", "deep/".repeat(25));
    let edits: Vec<Vec<String>> = vec![
        vec!["--set-rpath".into(), long.clone(), "--force-rpath".into()],
        vec!["--set-rpath".into(), long.clone()],
        vec![
            "--add-rpath".into(),
            "$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib".into(),
        ],
        vec!["--add-rpath".into(), long.clone(), "--force-rpath".into()],
        vec![
            "--set-soname".into(),
            "librenamed-with-a-longer-soname.so.7".into(),
        ],
    ];
    let files = inputs(dir.path());
    let mut compared = 0;
    for (i, file) in files.iter().enumerate() {
        let needed = readelf_dynamic(file).needed;
        let mut all = edits.clone();
        if let Some(first) = needed.first() {
            all.push(vec![
                "--replace-needed".into(),
                first.clone(),
                "libreplacement-dependency.so.3".into(),
            ]);
        }
        for (j, edit) in all.iter().enumerate() {
            let ([a, b], _) = patch_both(dir.path(), &format!("{i}-{j}"), file, edit);
            let (da, db): (ReadelfDynamic, ReadelfDynamic) =
                (readelf_dynamic(&a), readelf_dynamic(&b));
            assert_eq!(da, db, "{edit:?} on {}", file.display());
            compared += 1;
        }
    }
    assert!(compared >= 5 * files.len(), "{compared}");
}

#[test]
fn patched_program_still_runs_and_output_flag_leaves_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let prog = cc(
        dir.path(),
        "prog",
        "#include <stdio.h>\nint main(int c, char **v) { printf(\"%d\\n\", c); return 3; }\n",
        &[],
    );
    let out = dir.path().join("prog-patched");
    let before = fs_err::read(&prog).unwrap();
    run_ok(
        ours()
            .args([
                "--set-rpath",
                &"/opt/x".repeat(50),
                "--force-rpath",
                "--output",
            ])
            .arg(&out)
            .arg(&prog),
    );
    assert_eq!(fs_err::read(&prog).unwrap(), before);
    assert_eq!(readelf_dynamic(&out).rpath, Some("/opt/x".repeat(50)));
    let ran = Command::new(&out).args(["a", "b"]).run_output().unwrap();
    assert_eq!((ran.status.code(), stdout(&ran).as_str()), (Some(3), "3\n"));
    let printed = run_ok(
        ours()
            .args(["--print-rpath", "--print-interpreter"])
            .arg(&out),
    );
    let lines: Vec<&str> = std::str::from_utf8(&printed.stdout)
        .unwrap()
        .lines()
        .collect();
    assert!(lines[0].contains("ld-linux"), "{lines:?}");
    assert_eq!(lines[1], "/opt/x".repeat(50));
}

#[test]
fn bad_files_fail_naming_each_one_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    fs_err::write(&text, "plain text").unwrap();
    let stat = cc(
        dir.path(),
        "static",
        "int main(void) { return 0; }\n",
        &["-static"],
    );
    let before = (fs_err::read(&text).unwrap(), fs_err::read(&stat).unwrap());
    let out = ours()
        .args(["--set-rpath", "$ORIGIN"])
        .arg(&text)
        .arg(&stat)
        .arg(dir.path().join("missing"))
        .run_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3 files failed"), "{err}");
    assert!(err.contains("notes.txt: not an ELF file"), "{err}");
    assert!(err.contains("static: no dynamic section"), "{err}");
    assert!(err.contains("missing"), "{err}");
    assert_eq!(
        (fs_err::read(&text).unwrap(), fs_err::read(&stat).unwrap()),
        before
    );
    let usage = ours().arg("--set-rpath").run_output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let output_missing = dir.path().join("out");
    let failed = ours_with(&["--set-rpath", "x", "--output"], &[&output_missing, &text]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        !output_missing.exists(),
        "a failed edit left its output behind"
    );
}

/// A shared library built here with the linker flags `link`.
fn library_linked(dir: &Path, name: &str, link: &str) -> PathBuf {
    let source = "int dep_value(void) { return 1; }\n";
    cc(dir, name, source, &["-shared", "-fPIC", link])
}

/// A shared library built here, with a search path.
fn library(dir: &Path, name: &str) -> PathBuf {
    library_linked(dir, name, "-Wl,--enable-new-dtags,-rpath,$ORIGIN")
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    fs_err::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// `--set-rpath` with a path long enough to need a new segment.
fn long_rpath() -> String {
    format!("/opt/{}lib", "long/".repeat(40))
}

#[test]
fn output_naming_the_input_patches_it() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path(), "libsame.so");
    for output in [lib.clone(), dir.path().join(".").join("libsame.so")] {
        let rpath = format!("/x{}", output.components().count());
        run_ok(
            ours()
                .args(["--set-rpath", &rpath, "--output"])
                .arg(&output)
                .arg(&lib),
        );
        assert_eq!(readelf_dynamic(&lib).runpath, Some(rpath));
    }
    run_ok(
        ours()
            .args(["--set-rpath", &long_rpath(), "--output"])
            .arg(&lib)
            .arg(&lib),
    );
    assert_readelf_clean(&lib);
    assert_eq!(readelf_dynamic(&lib).runpath, Some(long_rpath()));
}

#[test]
fn a_failed_edit_leaves_an_existing_output_alone_and_names_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notelf.txt");
    let keep = dir.path().join("keep");
    fs_err::write(&text, "plain text").unwrap();
    fs_err::write(&keep, "precious").unwrap();
    let out = ours_with(&["--set-rpath", "/x", "--output"], &[&keep, &text]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notelf.txt: not an ELF file"), "{err}");
    assert!(!err.contains("keep"), "{err}");
    assert_eq!(fs_err::read_to_string(&keep).unwrap(), "precious");
}

#[test]
fn mode_is_kept_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (file_mode, umask)) in [(0o775, "022"), (0o755, "077"), (0o640, "077")]
        .into_iter()
        .enumerate()
    {
        let lib = library(dir.path(), &format!("libmode{i}.so"));
        set_mode(&lib, file_mode);
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_elf-patch"))
            .args(["--set-rpath", &long_rpath()])
            .arg(&lib)
            .run_output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(readelf_dynamic(&lib).runpath, Some(long_rpath()));
        assert_eq!(mode(&lib), file_mode, "umask {umask}");
    }
}

#[test]
#[expect(
    clippy::print_stderr,
    reason = "a skipped check says so in the test output"
)]
fn owner_and_group_are_kept() {
    use std::os::unix::fs::MetadataExt as _;
    if !running_as_root() {
        eprintln!("skipped: changing a file's owner needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path(), "libowned.so");
    std::os::unix::fs::chown(&lib, Some(1234), Some(1234)).unwrap();
    run_ok(ours().args(["--set-rpath", &long_rpath()]).arg(&lib));
    let meta = fs_err::metadata(&lib).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (1234, 1234));
    assert_eq!(readelf_dynamic(&lib).runpath, Some(long_rpath()));
}

#[test]
fn a_writable_file_in_a_read_only_directory_is_patched_in_place() {
    use std::os::unix::fs::MetadataExt as _;
    use std::os::unix::process::CommandExt as _;
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    fs_err::create_dir(&ro).unwrap();
    let lib = library(&ro, "libro.so");
    fs_err::remove_file(ro.join("libro.so.c")).unwrap();
    let mut cmd = ours();
    // Root writes into read-only directories: run as another user, who owns only the file.
    if running_as_root() {
        set_mode(dir.path(), 0o755);
        std::os::unix::fs::chown(&lib, Some(1234), Some(1234)).unwrap();
        cmd.uid(1234).gid(1234);
    }
    set_mode(&ro, 0o555);
    let inode = fs_err::metadata(&lib).unwrap().ino();
    let out = cmd
        .args(["--set-rpath", &long_rpath()])
        .arg(&lib)
        .run_output()
        .unwrap();
    set_mode(&ro, 0o755);
    assert!(out.status.success(), "{out:?}");
    assert_readelf_clean(&lib);
    assert_eq!(readelf_dynamic(&lib).runpath, Some(long_rpath()));
    assert_eq!(fs_err::metadata(&lib).unwrap().ino(), inode);
    let left: Vec<_> = fs_err::read_dir(&ro).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// Runs `cmd`, killing it after 5 s; returns its output if it exited on its own.
fn exits_within_seconds(cmd: &mut Command) -> Option<Output> {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .run_spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(5) {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn fifos_and_devices_are_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    run_ok(Command::new("mkfifo").arg(&fifo));
    for path in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
        for flags in [&["--set-rpath", "/x"][..], &["--print-rpath"]] {
            let out = exits_within_seconds(ours().args(flags).arg(path))
                .unwrap_or_else(|| panic!("{flags:?} {} did not exit", path.display()));
            assert_eq!(out.status.code(), Some(1), "{out:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!("{}: not a regular file", path.display())),
                "{err}"
            );
        }
    }
}

#[test]
fn implausible_segment_alignment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path(), "libalign.so");
    let mut data = fs_err::read(&lib).unwrap();
    let u16_at = |d: &[u8], at: usize| usize::from(u16::from_le_bytes([d[at], d[at + 1]]));
    let phoff = usize::try_from(u64::from_le_bytes(data[32..40].try_into().unwrap())).unwrap();
    let (phentsize, phnum) = (u16_at(&data, 54), u16_at(&data, 56));
    let mut mutated = 0;
    for i in 0..phnum {
        let at = phoff + i * phentsize;
        if data[at..at + 4] == 1u32.to_le_bytes() {
            data[at + 48..at + 56].copy_from_slice(&0x1d00_0000_1000u64.to_le_bytes());
            mutated += 1;
        }
    }
    assert!(mutated > 0);
    fs_err::write(&lib, &data).unwrap();
    let out = ours_with(&["--set-rpath", &long_rpath()], &[&lib]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("implausibly large"), "{err}");
    assert_eq!(fs_err::read(&lib).unwrap(), data);
}

/// The dynamic tags `readelf -d` lists, in order.
fn dynamic_tags(path: &Path) -> Vec<String> {
    let out = run_ok(Command::new("readelf").arg("-dW").arg(path));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| Some(l.split_once('(')?.1.split_once(')')?.0.to_owned()))
        .collect()
}

#[test]
fn remove_and_shrink_rpath_match_patchelf() {
    let dir = tempfile::tempdir().unwrap();
    let deps = dir.path().join("deps");
    fs_err::create_dir(&deps).unwrap();
    cc(
        &deps,
        "libdep.so",
        "int dep_value(void) { return 1; }\n",
        &["-shared", "-fPIC", "-Wl,-soname,libdep.so"],
    );
    let d = deps.display();
    let user = "int dep_value(void);\nint user(void) { return dep_value(); }\n";
    let mut files = inputs(dir.path());
    for (name, dtags) in [
        ("libuser-runpath.so", "--enable-new-dtags"),
        ("libuser-rpath.so", "--disable-new-dtags"),
    ] {
        let rpath = format!("/nonexistent:{d}:$ORIGIN:{d}:/usr/lib:lib");
        files.push(cc(
            dir.path(),
            name,
            user,
            &[
                "-shared",
                "-fPIC",
                &format!("-L{d}"),
                "-ldep",
                &format!("-Wl,{dtags},-rpath,{rpath}"),
            ],
        ));
    }
    let prefixes = format!("/nonexistent:{d}");
    let edits: [&[&str]; 5] = [
        &["--remove-rpath"],
        &["--shrink-rpath"],
        &["--shrink-rpath", "--force-rpath"],
        &["--shrink-rpath", "--allowed-rpath-prefixes", "/usr"],
        &["--shrink-rpath", "--allowed-rpath-prefixes", &prefixes],
    ];
    for (i, file) in files.iter().enumerate() {
        for (j, edit) in edits.iter().enumerate() {
            let ([a, b], _) = patch_both(dir.path(), &format!("{i}-{j}"), file, edit);
            let context = format!("{edit:?} on {}", file.display());
            assert_eq!(readelf_dynamic(&a), readelf_dynamic(&b), "{context}");
            assert_eq!(dynamic_tags(&a), dynamic_tags(&b), "{context}");
        }
    }
    let shrunk = dir.path().join(format!("{}-1-ours", files.len() - 2));
    assert_eq!(
        readelf_dynamic(&shrunk).runpath,
        Some(format!("{d}:$ORIGIN:lib"))
    );
}

#[test]
fn printing_with_an_edit_prints_the_value_before_it_as_patchelf_does() {
    let link = "-Wl,-soname,libold.so.1,--enable-new-dtags,-rpath,$ORIGIN/old";
    let dir = tempfile::tempdir().unwrap();
    let lib = library_linked(dir.path(), "libprint.so", link);
    let flags = [
        "--print-soname",
        "--print-rpath",
        "--print-needed",
        "--set-soname",
        "libnew.so.2",
        "--set-rpath",
        "/new",
    ];
    let ([a, b], [printed, expected]) = patch_both(dir.path(), "print", &lib, &flags);
    assert_eq!(stdout(&printed), stdout(&expected));
    assert!(stdout(&printed).starts_with("libold.so.1\n$ORIGIN/old\n"));
    assert_eq!(readelf_dynamic(&a), readelf_dynamic(&b));
    assert_eq!(readelf_dynamic(&a).runpath.as_deref(), Some("/new"));
}

#[test]
fn output_with_two_inputs_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path(), "libtwo.so");
    let out = ours_with(
        &["--set-rpath", "/x", "--output"],
        &[&dir.path().join("out"), &lib, &lib],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!dir.path().join("out").exists());
}

/// Runs `cmd` as `nobody` when this is root (the tests run as root, whose rights write any
/// file), as this user otherwise.
fn as_nobody(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    if running_as_root() {
        cmd.uid(65534).gid(65534);
    }
    cmd
}

/// Gives `path` to `nobody` (when this is root: else it is this user's already).
fn give_to_nobody(path: &Path) {
    if running_as_root() {
        std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
    }
}

#[test]
fn a_file_its_user_may_not_write_is_refused_as_patchelf_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    // The directory is the user's: a new file beside the input could be renamed over it.
    give_to_nobody(dir.path());
    let lib = library(dir.path(), "libreadonly.so");
    let mut copies = Vec::new();
    for name in ["ours", "theirs", "out-ours", "out-theirs"] {
        let copy = dir.path().join(name);
        fs_err::copy(&lib, &copy).unwrap();
        give_to_nobody(&copy);
        set_mode(&copy, 0o444);
        copies.push(copy);
    }
    let before = fs_err::read(&lib).unwrap();
    let [a, b, out_a, out_b] = &copies[..] else {
        unreachable!()
    };
    let edit = ["--set-rpath", "/elsewhere"];
    let runs = [
        as_nobody(ours().args(edit).arg(a)).run_output().unwrap(),
        as_nobody(theirs().args(edit).arg(b)).run_output().unwrap(),
        as_nobody(ours().args(edit).arg("--output").arg(out_a).arg(&lib))
            .run_output()
            .unwrap(),
        as_nobody(theirs().args(edit).arg("--output").arg(out_b).arg(&lib))
            .run_output()
            .unwrap(),
    ];
    for (run, file) in runs.iter().zip(&copies) {
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{}: {run:?}", file.display());
        assert!(err.contains("Permission denied"), "{err}");
        assert_eq!(fs_err::read(file).unwrap(), before, "{}", file.display());
        assert_eq!(mode(file), 0o444);
    }
    for run in [&runs[0], &runs[2]] {
        assert_eq!(run.status.code(), Some(1));
    }
    let err = String::from_utf8_lossy(&runs[0].stderr);
    assert!(err.contains(&a.display().to_string()), "{err}");
    let err = String::from_utf8_lossy(&runs[2].stderr);
    assert!(err.contains(&out_a.display().to_string()), "{err}");
}

#[test]
fn an_output_reached_through_links_is_written_where_patchelf_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path(), "liblinks.so");
    let before = fs_err::read(&lib).unwrap();
    // The hard link last: patchelf writes through the input's inode, changing the input too.
    let outputs = ["dangling.so", "to-existing.so", "hard.so"];
    for who in ["ours", "theirs"] {
        let d = dir.path().join(who);
        fs_err::create_dir(&d).unwrap();
        let input = d.join("input.so");
        fs_err::copy(&lib, &input).unwrap();
        fs_err::hard_link(&input, d.join("hard.so")).unwrap();
        // A dangling link, through a second link to a file not there yet.
        std::os::unix::fs::symlink("chain.so", d.join("dangling.so")).unwrap();
        std::os::unix::fs::symlink("sub/../created.so", d.join("chain.so")).unwrap();
        fs_err::create_dir(d.join("sub")).unwrap();
        fs_err::copy(&lib, d.join("existing.so")).unwrap();
        set_mode(&d.join("existing.so"), 0o750);
        std::os::unix::fs::symlink("existing.so", d.join("to-existing.so")).unwrap();
        for out in outputs {
            let mut cmd = if who == "ours" { ours() } else { theirs() };
            run_ok(
                cmd.args(["--set-rpath", &format!("/{out}"), "--output"])
                    .arg(d.join(out))
                    .arg(&input),
            );
        }
    }
    let (a, b) = (dir.path().join("ours"), dir.path().join("theirs"));
    for out in outputs {
        assert_eq!(
            readelf_dynamic(&a.join(out)).runpath,
            Some(format!("/{out}")),
            "{out}"
        );
        assert_eq!(
            readelf_dynamic(&a.join(out)),
            readelf_dynamic(&b.join(out)),
            "{out}"
        );
        assert_readelf_clean(&a.join(out));
    }
    for d in [&a, &b] {
        for link in ["dangling.so", "chain.so", "to-existing.so"] {
            let meta = fs_err::symlink_metadata(d.join(link)).unwrap();
            assert!(meta.file_type().is_symlink(), "{}", d.join(link).display());
        }
        assert_eq!(
            readelf_dynamic(&d.join("created.so")).runpath.as_deref(),
            Some("/dangling.so")
        );
    }
    assert_eq!(mode(&a.join("existing.so")), 0o750);
    // The input is left as it was under its own name (patchelf's, one inode with the output,
    // changed with it).
    assert_eq!(fs_err::read(a.join("input.so")).unwrap(), before);
}

#[test]
fn version_names_elf_patch() {
    let out = run_ok(ours().arg("--version"));
    assert_eq!(
        stdout(&out),
        format!("elf-patch {}\n", env!("CARGO_PKG_VERSION"))
    );
}
