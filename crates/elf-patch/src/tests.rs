//! Tests on real ELF files: programs and libraries built with `cc` in the test, checked with
//! `readelf` and by loading or running them after the edit.

use std::path::{Path, PathBuf};
use std::process::Command;

use rock_ci_test_support::elf::{assert_readelf_clean, cc, readelf_dynamic, run_ok as run};

use object::elf;

use crate::parse::{Class, Codec, Elf, Endian, shdr_fields};
use crate::{Edit, ElfError, FileType, classify_bytes, file_type, patch, patch_file, read_file};

const DEP: &str = "int dep_value(void) { return 42; }\n";
const MAIN_LIB: &str = "int dep_value(void);\nint main_value(void) { return dep_value() + 1; }\n";
const PROGRAM: &str = "#include <stdio.h>\nint dep_value(void);\nint main(int argc, char **argv) { printf(\"value %d argc %d\\n\", dep_value(), argc); return 7; }\n";
const LOADER: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { printf("dlopen failed: %s\n", dlerror()); return 1; }
    int (*f)(void) = (int (*)(void))dlsym(h, "main_value");
    if (!f) { printf("dlsym failed\n"); return 1; }
    printf("main_value %d\n", f());
    return 0;
}
"#;

fn assert_same_as_readelf(path: &Path) {
    let ours = read_file(path).unwrap();
    let theirs = readelf_dynamic(path);
    // The piecewise reader agrees with the whole-file one.
    assert_eq!(
        crate::file_soname(path).unwrap(),
        ours.soname,
        "{}",
        path.display()
    );
    assert_eq!(
        (ours.soname, ours.rpath, ours.runpath, ours.needed),
        (theirs.soname, theirs.rpath, theirs.runpath, theirs.needed),
        "{}",
        path.display()
    );
}

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// `a/libdep.so.1` and a loader; libraries and programs needing libdep are built on demand.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(dir.path().join("a")).unwrap();
        fs_err::create_dir_all(dir.path().join("b")).unwrap();
        cc(
            &dir.path().join("a"),
            "libdep.so.1",
            DEP,
            &["-shared", "-fPIC", "-Wl,-soname,libdep.so.1"],
        );
        cc(dir.path(), "loader", LOADER, &["-ldl"]);
        Fixture { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `b/<name>` linked against libdep with `extra` flags.
    fn build(&self, name: &str, source: &str, extra: &[&str]) -> PathBuf {
        let mut args = vec!["-L", self.dir.path().to_str().unwrap()];
        let a = self.path("a");
        let link = format!("-L{}", a.display());
        args.push(&link);
        args.extend_from_slice(extra);
        args.push("-l:libdep.so.1");
        cc(&self.path("b"), name, source, &args)
    }

    fn library(&self, name: &str, extra: &[&str]) -> PathBuf {
        let mut args = vec!["-shared", "-fPIC"];
        args.extend_from_slice(extra);
        self.build(name, MAIN_LIB, &args)
    }

    /// Loads `lib` in a child process; its stdout.
    fn load(&self, lib: &Path) -> String {
        let out = Command::new(self.path("loader")).arg(lib).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

/// An RPATH that resolves libdep from `b/`, long enough to force the string table to grow.
fn long_rpath() -> String {
    format!("$ORIGIN/../{}:$ORIGIN/../a", "not-here/".repeat(30))
}

fn set_rpath(path: &str, force: bool) -> Edit {
    Edit {
        set_rpath: Some(path.to_owned()),
        force_rpath: force,
        ..Edit::default()
    }
}

#[test]
fn library_without_rpath_loads_after_a_long_rpath_is_set() {
    let f = Fixture::new();
    let lib = f.library("libmain.so", &[]);
    assert!(
        f.load(&lib).starts_with("dlopen failed"),
        "{}",
        f.load(&lib)
    );
    assert_same_as_readelf(&lib);
    let before = fs_err::read(&lib).unwrap();
    // Read-only, as installed libraries often are: the mode is kept.
    let read_only = std::os::unix::fs::PermissionsExt::from_mode(0o555);
    fs_err::set_permissions(&lib, read_only).unwrap();
    assert!(patch_file(&lib, &set_rpath(&long_rpath(), true)).unwrap());
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&fs_err::metadata(&lib).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o555);
    assert_readelf_clean(&lib);
    assert_same_as_readelf(&lib);
    let info = read_file(&lib).unwrap();
    assert_eq!(info.rpath.as_deref(), Some(long_rpath().as_str()));
    assert_eq!(info.runpath, None);
    assert_eq!(f.load(&lib), "main_value 43");
    assert!(fs_err::read(&lib).unwrap().len() > before.len());
}

#[test]
fn runpath_library_grows_twice_and_still_loads() {
    let f = Fixture::new();
    let lib = f.library("libmain.so", &["-Wl,--enable-new-dtags,-rpath,$ORIGIN"]);
    assert_eq!(read_file(&lib).unwrap().runpath.as_deref(), Some("$ORIGIN"));
    // The packaging sequence: add entries, then force DT_RPATH with the same string.
    let add = Edit {
        add_rpath: vec![
            format!("$ORIGIN/../{}", "x/".repeat(40)),
            "$ORIGIN/../a".into(),
        ],
        ..Edit::default()
    };
    let original_len = fs_err::metadata(&lib).unwrap().len();
    assert!(patch_file(&lib, &add).unwrap());
    let data = fs_err::read(&lib).unwrap();
    let elf = Elf::parse(&data).unwrap();
    assert!(
        elf.phoff >= original_len,
        "the program headers moved to the new segment"
    );
    let info = read_file(&lib).unwrap();
    let expected = format!("$ORIGIN:$ORIGIN/../{}:$ORIGIN/../a", "x/".repeat(40));
    assert_eq!(info.runpath.as_deref(), Some(expected.as_str()));
    assert_eq!(f.load(&lib), "main_value 43");
    let size = fs_err::metadata(&lib).unwrap().len();
    assert!(patch_file(&lib, &set_rpath(&expected, true)).unwrap());
    assert_eq!(
        fs_err::metadata(&lib).unwrap().len(),
        size,
        "a retag needs no growth"
    );
    let info = read_file(&lib).unwrap();
    assert_eq!(
        (info.rpath.as_deref(), info.runpath),
        (Some(expected.as_str()), None)
    );
    // The program headers now live in the trailing segment; grow again from there.
    let third = format!("{expected}:$ORIGIN/{}", "y".repeat(300));
    assert!(patch_file(&lib, &set_rpath(&third, true)).unwrap());
    assert_readelf_clean(&lib);
    assert_same_as_readelf(&lib);
    assert_eq!(f.load(&lib), "main_value 43");
    // Setting the same value again changes nothing.
    assert!(!patch_file(&lib, &set_rpath(&third, true)).unwrap());
}

#[test]
fn executables_run_after_the_edit_pie_and_not() {
    let f = Fixture::new();
    for (name, flags) in [
        ("pie", &["-pie", "-fPIE"][..]),
        ("nopie", &["-no-pie", "-fno-PIE"][..]),
        ("runpath", &["-Wl,--enable-new-dtags,-rpath,/nowhere"][..]),
    ] {
        let exe = f.build(name, PROGRAM, flags);
        let expect_type = if name == "nopie" { 2 } else { 3 };
        assert_eq!(
            Elf::parse(&fs_err::read(&exe).unwrap()).unwrap().e_type(),
            expect_type
        );
        assert_eq!(file_type(&exe).unwrap(), FileType::Exe, "{name}");
        let fails = Command::new(&exe).output().unwrap();
        assert!(!fails.status.success(), "{name} ran without its library");
        assert!(patch_file(&exe, &set_rpath(&long_rpath(), true)).unwrap());
        // Moved program headers keep the first segment's address-to-offset distance, so a
        // kernel computing AT_PHDR from it finds them.
        let data = fs_err::read(&exe).unwrap();
        let elf = Elf::parse(&data).unwrap();
        let first = elf.phdrs.iter().find(|p| p.p_type == elf::PT_LOAD).unwrap();
        let phdr = elf.phdrs.iter().find(|p| p.p_type == elf::PT_PHDR).unwrap();
        assert_eq!(phdr.offset, elf.phoff);
        assert_eq!(
            phdr.vaddr.wrapping_sub(phdr.offset),
            first.vaddr.wrapping_sub(first.offset),
            "{name}"
        );
        assert_readelf_clean(&exe);
        assert_same_as_readelf(&exe);
        let out = Command::new(&exe).args(["x", "y"]).output().unwrap();
        assert_eq!(out.status.code(), Some(7), "{name}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "value 42 argc 3\n",
            "{name}"
        );
    }
}

/// Removes the section header table (as `strip` cannot): the loader never needs it.
fn drop_section_headers(path: &Path) {
    let mut data = fs_err::read(path).unwrap();
    let c = Codec {
        class: Class::Elf64,
        endian: Endian::Little,
    };
    c.put_word(&mut data, 40, 0).unwrap(); // e_shoff
    c.put_u16(&mut data, 60, 0); // e_shnum
    c.put_u16(&mut data, 62, 0); // e_shstrndx
    fs_err::write(path, data).unwrap();
}

#[test]
fn files_without_section_headers_are_patched_through_the_program_headers() {
    let f = Fixture::new();
    let lib = f.library("libnosht.so", &["-Wl,-rpath,$ORIGIN"]);
    let exe = f.build("nosht", PROGRAM, &["-pie", "-fPIE"]);
    for file in [&lib, &exe] {
        drop_section_headers(file);
        assert!(
            Elf::parse(&fs_err::read(file).unwrap())
                .unwrap()
                .shdrs
                .is_empty()
        );
        assert!(patch_file(file, &set_rpath(&long_rpath(), true)).unwrap());
        assert_eq!(
            read_file(file).unwrap().rpath.as_deref(),
            Some(long_rpath().as_str())
        );
        assert_same_as_readelf(file);
    }
    assert_eq!(f.load(&lib), "main_value 43");
    let out = Command::new(&exe).output().unwrap();
    assert_eq!(out.status.code(), Some(7), "{out:?}");
}

#[test]
fn soname_and_needed_edits_keep_the_program_working() {
    let f = Fixture::new();
    let exe = f.build("prog", PROGRAM, &["-Wl,-rpath,$ORIGIN/../a"]);
    // A library without DT_SONAME gets one.
    let plain = f.library("libplain.so", &[]);
    assert_eq!(read_file(&plain).unwrap().soname, None);
    assert!(
        patch_file(
            &plain,
            &Edit {
                set_soname: Some("libplain.so.9".into()),
                ..Edit::default()
            }
        )
        .unwrap()
    );
    assert_same_as_readelf(&plain);
    assert_eq!(
        read_file(&plain).unwrap().soname.as_deref(),
        Some("libplain.so.9")
    );
    // Rename the dependency and tell the program (and the library itself) about it.
    let new_name = "libdep-renamed-with-a-much-longer-name.so.1";
    fs_err::rename(f.path("a/libdep.so.1"), f.path("a").join(new_name)).unwrap();
    assert!(!Command::new(&exe).status().unwrap().success());
    let edit = Edit {
        replace_needed: vec![("libdep.so.1".into(), new_name.into())],
        ..Edit::default()
    };
    assert!(patch_file(&exe, &edit).unwrap());
    let soname = Edit {
        set_soname: Some(new_name.into()),
        ..Edit::default()
    };
    assert!(patch_file(&f.path("a").join(new_name), &soname).unwrap());
    for file in [exe.clone(), f.path("a").join(new_name)] {
        assert_readelf_clean(&file);
        assert_same_as_readelf(&file);
    }
    assert!(
        read_file(&exe)
            .unwrap()
            .needed
            .contains(&new_name.to_owned())
    );
    let out = Command::new(&exe).output().unwrap();
    assert_eq!(out.status.code(), Some(7), "{out:?}");
}

#[test]
fn a_shorter_exclusive_rpath_is_written_in_place() {
    let f = Fixture::new();
    let lib = f.library(
        "libinplace.so",
        &["-Wl,-rpath,/a/very/long/path/that/nothing/else/uses"],
    );
    let before = fs_err::read(&lib).unwrap();
    assert!(patch_file(&lib, &set_rpath("$ORIGIN/../a", true)).unwrap());
    let after = fs_err::read(&lib).unwrap();
    assert_eq!(before.len(), after.len());
    assert_same_as_readelf(&lib);
    assert_eq!(f.load(&lib), "main_value 43");
}

#[test]
fn bad_input_is_an_error_and_the_file_is_unchanged() {
    let f = Fixture::new();
    let static_exe = cc(
        f.dir.path(),
        "static",
        "int main(void){return 0;}\n",
        &["-static"],
    );
    let text = f.path("notes");
    fs_err::write(&text, "just text").unwrap();
    let lib = f.library("libtrunc.so", &[]);
    let full = fs_err::read(&lib).unwrap();
    fs_err::write(&lib, &full[..200]).unwrap();
    for (file, want) in [
        (&static_exe, "no dynamic section"),
        (&text, "not an ELF file"),
        (&lib, "truncated"),
    ] {
        let before = fs_err::read(file).unwrap();
        let err = patch_file(file, &set_rpath("$ORIGIN", true)).unwrap_err();
        let msg = format!(
            "{err}: {}",
            std::error::Error::source(&err)
                .map(ToString::to_string)
                .unwrap_or_default()
        );
        assert!(
            msg.contains(want) && msg.contains(&*file.to_string_lossy()),
            "{msg}"
        );
        assert_eq!(fs_err::read(file).unwrap(), before);
    }
    // No temporary file is left behind.
    let leftovers: Vec<_> = fs_err::read_dir(f.dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".elf-patch"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn verification_rejects_an_image_changed_outside_the_edit() {
    let f = Fixture::new();
    let lib = f.library("libverify.so", &[]);
    let data = fs_err::read(&lib).unwrap();
    let edit = set_rpath(&long_rpath(), true);
    let mut out = patch(&data, &edit).unwrap().unwrap();
    let elf = Elf::parse(&data).unwrap();
    let (_, write) = crate::write::patch_and_expectation(&data, &edit)
        .unwrap()
        .unwrap();
    let check = |out: &[u8], expected| -> Result<(), ElfError> {
        use crate::write::Original as _;
        let kept = crate::verify::verify(&elf, out, expected)?;
        crate::verify::unchanged(&kept, out, |at, bytes| {
            crate::write::InMemory(&data).holds(at, bytes)
        })
    };
    check(&out, &write).unwrap();
    // A byte of code.
    let code = elf
        .phdrs
        .iter()
        .find(|p| p.p_type == elf::PT_LOAD && p.flags & elf::PF_X != 0)
        .unwrap();
    let text = usize::try_from(code.offset + code.filesz / 2).unwrap();
    out[text] ^= 0xff;
    let err = check(&out, &write).unwrap_err();
    assert!(matches!(err, ElfError::Verification(_)), "{err}");
    // A planned string that did not land.
    let mut wrong = write.clone();
    wrong.entries.push((
        u64::from(elf::DT_NEEDED),
        crate::verify::Value::Str(b"x".to_vec()),
    ));
    out[text] ^= 0xff;
    assert!(check(&out, &wrong).is_err());
}

#[test]
fn classification_follows_the_reference_rules() {
    let f = Fixture::new();
    let pie = f.build("pie", PROGRAM, &["-pie", "-fPIE"]);
    let nopie = f.build("nopie", PROGRAM, &["-no-pie"]);
    let lib = f.library("libc-like.so", &[]);
    let obj = f.path("obj.o");
    run(Command::new("cc")
        .args(["-c", "-o"])
        .arg(&obj)
        .arg(f.path("a/libdep.so.1.c")));
    let archive = f.path("libfoo.a");
    run(Command::new("ar").arg("rcs").arg(&archive).arg(&obj));
    let script = f.path("script");
    fs_err::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let link = f.path("link");
    std::os::unix::fs::symlink(&lib, &link).unwrap();
    for (path, want) in [
        (&pie, FileType::Exe),
        (&nopie, FileType::Exe),
        (&lib, FileType::So),
        (&f.path("a/libdep.so.1"), FileType::So),
        (&obj, FileType::Other),
        (&archive, FileType::Ar),
        (&script, FileType::Other),
        (&link, FileType::Symlink),
        (&f.path("a"), FileType::Dir),
    ] {
        assert_eq!(file_type(path).unwrap(), want, "{}", path.display());
    }
    let elf = fs_err::read(&lib).unwrap();
    for (name, want) in [
        ("a/readme.txt", FileType::Text),
        ("include/hip/hip_runtime.h", FileType::Text),
        ("x.hpp", FileType::Text),
        ("lib/rocblas/library/K.hsaco", FileType::Hsaco),
        ("Foo_gfx942.co", FileType::Hsaco),
        ("amdhip64.lib", FileType::Ar),
        ("bin/hipcc.exe", FileType::Exe),
        ("libx.so", FileType::So),
    ] {
        assert_eq!(classify_bytes(name, &elf), want, "{name}");
    }
    assert_eq!(classify_bytes("x", b"\x7fEL"), FileType::Other);
    assert_eq!(classify_bytes("x", b"!<arch>\n"), FileType::Ar);
    assert!(file_type(&f.path("missing")).is_err());
}

/// Each error keeps its cause as its source: the path is said once, by the error, and the
/// cause once, by the source, through a chain as through `Failed`'s lines.
#[test]
fn errors_keep_their_causes_and_say_each_once() {
    use std::error::Error as _;
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.so");
    let not_elf = dir.path().join("text.so");
    fs_err::write(&not_elf, "not an ELF file").unwrap();
    let chain = |e: &dyn std::error::Error| {
        let mut parts = vec![e.to_string()];
        let mut cause = e.source();
        while let Some(c) = cause {
            parts.push(c.to_string());
            cause = c.source();
        }
        parts.join(": ")
    };
    for err in [
        file_type(&missing).unwrap_err(),
        read_file(&missing).unwrap_err(),
        read_file(&not_elf).unwrap_err(),
    ] {
        assert!(err.source().is_some(), "{err:?}");
        let text = chain(&err);
        assert_eq!(err.report(), text);
        let path = if text.contains("missing") {
            &missing
        } else {
            &not_elf
        };
        assert_eq!(
            text.matches(&*path.display().to_string()).count(),
            1,
            "{text}"
        );
        assert!(text.starts_with(&format!("{}: ", path.display())), "{text}");
    }
    assert!(matches!(read_file(&not_elf), Err(crate::Error::Elf { .. })));
    // `Failed` lists each error with its cause.
    let inner = read_file(&missing).unwrap_err();
    let line = chain(&inner);
    let failed = crate::Error::Failed(vec![inner]);
    assert_eq!(failed.to_string(), format!("1 files failed:\n  {line}"));
    assert!(
        line.len() > missing.display().to_string().len() + 2,
        "{line}"
    );
}

/// A 32-bit shared library (linked without libc, so any multilib-less `cc -m32` can make it).
fn elf32_library(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("l32.c");
    fs_err::write(&src, "int f32(void) { return 32; }\n").unwrap();
    let out = dir.join("lib32.so");
    let status = Command::new("cc")
        .args([
            "-m32",
            "-shared",
            "-nostdlib",
            "-fPIC",
            "-Wl,-soname,lib32.so.1",
            "-Wl,-rpath,$ORIGIN",
            "-o",
        ])
        .arg(&out)
        .arg(&src)
        .output()
        .ok()?;
    status.status.success().then_some(out)
}

#[test]
fn elf32_library_is_read_and_patched() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = elf32_library(dir.path()) else {
        panic!("cc -m32 -shared -nostdlib failed on this machine");
    };
    assert_eq!(
        Elf::parse(&fs_err::read(&lib).unwrap()).unwrap().class(),
        Class::Elf32
    );
    assert_same_as_readelf(&lib);
    assert!(patch_file(&lib, &set_rpath(&long_rpath(), true)).unwrap());
    assert_readelf_clean(&lib);
    assert_same_as_readelf(&lib);
}

/// Rewrites a little-endian file's headers, dynamic entries and symbol names in big-endian
/// order (what `readelf` needs to read the dynamic section of the result).
fn to_big_endian(data: &[u8]) -> Vec<u8> {
    let elf = Elf::parse(data).unwrap();
    let (le, c) = (
        elf.c,
        Codec {
            class: elf.c.class,
            endian: Endian::Big,
        },
    );
    let mut out = data.to_vec();
    out[5] = 2;
    let w = le.word_size();
    let swap16 = |out: &mut Vec<u8>, at: u64| c.put_u16(out, at, le.u16(data, at).unwrap());
    let swap32 = |out: &mut Vec<u8>, at: u64| c.put_u32(out, at, le.u32(data, at).unwrap());
    let swapw =
        |out: &mut Vec<u8>, at: u64| c.put_word(out, at, le.word(data, at).unwrap()).unwrap();
    swap16(&mut out, 16);
    swap16(&mut out, 18);
    swap32(&mut out, 20);
    for at in [24, 24 + w, 24 + 2 * w] {
        swapw(&mut out, at);
    }
    swap32(&mut out, 24 + 3 * w);
    for i in 0..6 {
        swap16(&mut out, 24 + 3 * w + 4 + 2 * i);
    }
    for (i, p) in elf.phdrs.iter().enumerate() {
        p.write(c, &mut out, elf.phoff + i as u64 * elf.phentsize)
            .unwrap();
    }
    let [addr, offset, size, entsize] = shdr_fields(elf.c.class);
    for i in 0..elf.shdrs.len() as u64 {
        let at = elf.shoff + i * elf.shentsize;
        swap32(&mut out, at);
        swap32(&mut out, at + 4);
        swapw(&mut out, at + 8);
        for f in [addr, offset, size, entsize] {
            swapw(&mut out, at + f);
        }
        swap32(&mut out, at + size + w);
        swap32(&mut out, at + size + w + 4);
        swapw(&mut out, at + size + w + 8);
    }
    let d = elf.dynamic.as_ref().unwrap();
    let dyn_ph = elf.phdrs[d.phdr];
    for i in 0..dyn_ph.filesz / (2 * w) {
        swapw(&mut out, dyn_ph.offset + i * 2 * w);
        swapw(&mut out, dyn_ph.offset + i * 2 * w + w);
    }
    for r in elf.string_references().unwrap().unwrap() {
        swap32(&mut out, r.field);
    }
    out
}

#[test]
fn big_endian_files_are_read_and_patched() {
    let f = Fixture::new();
    let lib = f.library(
        "libbig.so",
        &["-Wl,-rpath,$ORIGIN", "-Wl,-soname,libbig.so.1"],
    );
    let big = f.path("libbig-be.so");
    fs_err::write(&big, to_big_endian(&fs_err::read(&lib).unwrap())).unwrap();
    assert_eq!(
        Elf::parse(&fs_err::read(&big).unwrap()).unwrap().endian(),
        Endian::Big
    );
    assert_same_as_readelf(&big);
    assert_eq!(read_file(&big).unwrap(), read_file(&lib).unwrap());
    assert!(patch_file(&big, &set_rpath(&long_rpath(), false)).unwrap());
    assert_readelf_clean(&big);
    assert_same_as_readelf(&big);
    assert_eq!(
        read_file(&big).unwrap().runpath.as_deref(),
        Some(long_rpath().as_str())
    );
}

#[test]
fn a_segment_far_above_the_file_is_refused_not_padded() {
    let f = Fixture::new();
    let exe = f.build("far", PROGRAM, &["-pie", "-fPIE"]);
    let mut data = fs_err::read(&exe).unwrap();
    let elf = Elf::parse(&data).unwrap();
    let last = elf
        .phdrs
        .iter()
        .rposition(|p| p.p_type == elf::PT_LOAD)
        .unwrap();
    let mut p = elf.phdrs[last];
    p.memsz = 1 << 40;
    let at = elf.phoff + last as u64 * elf.phentsize;
    p.write(elf.c, &mut data, at).unwrap();
    // With section headers, .interp and the notes make room for the program headers, which
    // stay where they are: nothing to pad.
    let out = patch(&data, &set_rpath(&long_rpath(), true))
        .unwrap()
        .unwrap();
    assert!(
        out.len() < data.len() + 4096,
        "grew {}",
        out.len() - data.len()
    );
    // Without, the table moves, and keeping the executable's address-to-offset distance for it
    // would pad the file by a terabyte: refused.
    fs_err::write(&exe, &data).unwrap();
    drop_section_headers(&exe);
    let data = fs_err::read(&exe).unwrap();
    let err = patch(&data, &set_rpath(&long_rpath(), true)).unwrap_err();
    assert!(
        matches!(&err, ElfError::Unsupported(m) if m.contains("pad the file")),
        "{err}"
    );
}

#[test]
#[expect(
    clippy::print_stderr,
    reason = "a skipped check says so in the test output"
)]
fn extended_attributes_survive_the_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let lib = cc(dir.path(), "libx.so", DEP, &["-shared", "-fPIC"]);
    if let Err(e) = xattr::set(&lib, "user.elf-patch-test", b"kept") {
        eprintln!("skipped: this file system refuses user attributes ({e})");
        return;
    }
    assert!(patch_file(&lib, &set_rpath(&long_rpath(), false)).unwrap());
    assert_eq!(readelf_dynamic(&lib).runpath, Some(long_rpath()));
    assert_eq!(
        xattr::get(&lib, "user.elf-patch-test").unwrap().as_deref(),
        Some(&b"kept"[..])
    );
}
