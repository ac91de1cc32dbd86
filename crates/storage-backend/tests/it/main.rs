//! Integration tests of the storage backends: local staging directories and a real
//! S3-protocol server on 127.0.0.1.

extern crate rock_ci_storage_backend as storage_backend;

mod local;
mod proxy;
mod ranged;
mod s3;

use std::path::Path;

/// Writes `files` (relative path, content) below `root`.
pub(crate) fn write_tree(root: &Path, files: &[(&str, &str)]) {
    for (rel, content) in files {
        let path = root.join(rel);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, content).unwrap();
    }
}

/// The files below `root`, relative and sorted.
pub(crate) fn files_below(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if root.is_dir() {
        let entries = storage_backend::patterns::walk(root).unwrap();
        for e in entries {
            if e.is_file {
                out.push(e.relative());
            }
        }
    }
    out.sort();
    out
}

/// A `Write` into a shared buffer (dry-run sink).
#[derive(Clone, Default)]
pub(crate) struct Captured(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}
