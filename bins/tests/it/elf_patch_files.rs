//! `elf-patch` on files a Windows job has (its wheels hold PE files, never patched), on every
//! system: it names itself, and refuses what is not ELF with an error naming the file, the
//! file unchanged. Its edits of real ELF files are tested in `elf_patch` (Linux).

use crate::common::Launch as _;
use std::process::Command;

fn elf_patch() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_elf-patch"));
    command.env_clear();
    command
}

#[test]
fn names_itself_and_refuses_a_pe_file_unchanged() {
    let out = elf_patch().arg("--version").run_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("elf-patch {}\n", env!("CARGO_PKG_VERSION"))
    );
    let dir = tempfile::tempdir().unwrap();
    let dll = dir.path().join("amdhip64_7.dll");
    let mut pe = vec![0u8; 1024];
    pe[..2].copy_from_slice(b"MZ");
    pe[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
    pe[0x80..0x84].copy_from_slice(b"PE\0\0");
    fs_err::write(&dll, &pe).unwrap();
    for args in [&["--set-rpath", "$ORIGIN"][..], &["--print-soname"]] {
        let out = elf_patch().args(args).arg(&dll).run_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&dll.display().to_string()) && stderr.contains("not an ELF file"),
            "{args:?}: {stderr}"
        );
        assert_eq!(fs_err::read(&dll).unwrap(), pe);
    }
}
