//! Exe link stubs (spec §9): a wheel cannot hold a symlink, so a symlink to an executable
//! becomes a small program that runs the link's target, relative to its own directory, with
//! the same arguments. The stub is compiled once per build (`$CC`, default `cc`) with a
//! fixed-size slot for the target, then copied and patched for every link.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use file_tree::FileError;

use crate::Error;

const SOURCE: &str = include_str!("stub/exe_stub.c");
const MARKER: &[u8] = b"@@ROCK_CI_EXE_STUB_TARGET_SLOT@@";
const SLOT: usize = 4096;

/// A compiled stub and where its target slot is.
#[derive(Debug, Clone)]
pub(crate) struct ExeStub {
    image: Vec<u8>,
    slot: usize,
}

impl ExeStub {
    /// Compiles the stub with `cc` in `work_dir`.
    pub(crate) fn build(cc: &str, work_dir: &Path) -> Result<Self, Error> {
        fs_err::create_dir_all(work_dir).map_err(|e| FileError::write(work_dir, e))?;
        let src = work_dir.join("rock_ci_exe_stub.c");
        let out = work_dir.join("rock_ci_exe_stub");
        fs_err::write(&src, SOURCE).map_err(|e| FileError::write(&src, e))?;
        let result = Command::new(cc)
            .args(["-O2", "-fPIE", "-pie", "-o"])
            .arg(&out)
            .arg(&src)
            .output()
            .map_err(|source| Error::Spawn {
                program: cc.to_owned(),
                source,
            })?;
        if !result.status.success() {
            return Err(Error::StubCompiler {
                compiler: cc.to_owned(),
                stderr: String::from_utf8_lossy(&result.stderr).trim().to_owned(),
            });
        }
        let image = fs_err::read(&out).map_err(|e| FileError::read(&out, e))?;
        let slot = image
            .windows(MARKER.len())
            .position(|w| w == MARKER)
            .ok_or(Error::StubSlot { problem: "missing" })?;
        if slot + SLOT > image.len() {
            return Err(Error::StubSlot {
                problem: "truncated",
            });
        }
        Ok(ExeStub { image, slot })
    }

    /// Writes a stub running `link_text` (relative to the stub's directory, or absolute) to
    /// `dest`, executable.
    pub(crate) fn write(&self, dest: &Path, link_text: &str) -> Result<(), Error> {
        let bytes = link_text.as_bytes();
        if bytes.len() >= SLOT || bytes.contains(&0) {
            return Err(Error::StubTargetTooLong {
                link: dest.to_path_buf(),
                len: bytes.len(),
            });
        }
        let mut image = self.image.clone();
        let slot = &mut image[self.slot..self.slot + SLOT];
        slot.fill(0);
        slot[..bytes.len()].copy_from_slice(bytes);
        if let Some(parent) = dest.parent() {
            fs_err::create_dir_all(parent).map_err(|e| FileError::write(parent, e))?;
        }
        crate::write_file(dest, &image, 0o755)
    }
}

/// Builds the stub on first use, once.
#[derive(Debug)]
pub(crate) struct StubCache {
    cc: String,
    work_dir: PathBuf,
    stub: OnceLock<Result<ExeStub, Arc<Error>>>,
}

impl StubCache {
    /// A cache compiling with `cc` (`$CC` or `cc` when `None`) in `work_dir`.
    pub(crate) fn new(cc: Option<String>, work_dir: PathBuf) -> Self {
        StubCache {
            cc: cc.unwrap_or_else(|| "cc".to_owned()),
            work_dir,
            stub: OnceLock::new(),
        }
    }

    /// The stub, compiled on the first call.
    pub(crate) fn get(&self) -> Result<&ExeStub, Error> {
        self.stub
            .get_or_init(|| ExeStub::build(&self.cc, &self.work_dir).map_err(Arc::new))
            .as_ref()
            .map_err(|e| Error::Stub(Arc::clone(e)))
    }
}
