//! `elf-patch` end to end, and against patchelf 0.19 on the same inputs.

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

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
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
    let mut system: Vec<PathBuf> = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        .iter()
        .filter_map(|d| fs_err::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.contains(".so.") && !p.is_symlink() && p.is_file()
        })
        .filter(|p| fs_err::read(p).is_ok_and(|d| elf_patch::is_elf(&d)))
        .collect();
    system.sort();
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
            let (a, b) = (
                dir.path().join(format!("{i}-{j}-ours")),
                dir.path().join(format!("{i}-{j}-theirs")),
            );
            fs_err::copy(file, &a).unwrap();
            fs_err::copy(file, &b).unwrap();
            run_ok(ours().args(edit).arg(&a));
            run_ok(theirs().args(edit).arg(&b));
            assert_readelf_clean(&a);
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
    let ran = Command::new(&out).args(["a", "b"]).output().unwrap();
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
        .output()
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
    let usage = ours().arg("--set-rpath").output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let output_missing = dir.path().join("out");
    let failed = ours()
        .args(["--set-rpath", "x", "--output"])
        .arg(&output_missing)
        .arg(&text)
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        !output_missing.exists(),
        "a failed edit left its output behind"
    );
}
