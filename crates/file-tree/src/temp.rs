//! Temporary files and directories beside their final place, with the modes a plain create
//! would give (0666 / 0777 less the umask), not the owner-only modes of `tempfile`: what is
//! renamed into place must not look different from what `cp` or `tar -x` would have made.

use std::io;
use std::path::Path;

/// Runs `create` on a builder of `.{name}.XXXXXX.partial` names with `mode` (less the umask).
fn with_builder<T>(
    name: &str,
    mode: u32,
    create: impl FnOnce(&tempfile::Builder<'_, '_>) -> io::Result<T>,
) -> io::Result<T> {
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".partial");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    create(&builder)
}

/// A temporary file `.{name}.XXXXXX.partial` in `dir`, mode 0666 less the umask.
pub fn temp_file_in(dir: &Path, name: &str) -> io::Result<tempfile::NamedTempFile> {
    with_builder(name, 0o666, |b| b.tempfile_in(dir))
}

/// A temporary directory `.{name}.XXXXXX.partial` in `dir`, mode 0777 less the umask.
pub fn temp_dir_in(dir: &Path, name: &str) -> io::Result<tempfile::TempDir> {
    with_builder(name, 0o777, |b| b.tempdir_in(dir))
}

/// Runs `make` on a new name `.{name}.XXXXXX.partial` in `dir` that nothing holds (another
/// random name when `make` finds one taken: it must fail with `AlreadyExists` then), and
/// returns that name, removed when dropped. Unique whatever else writes in `dir`: other
/// threads, or processes whose ids repeat (other hosts or containers sharing the directory).
pub(crate) fn make_in(
    dir: &Path,
    name: &str,
    make: impl FnMut(&Path) -> io::Result<()>,
) -> io::Result<tempfile::TempPath> {
    let prefix = format!(".{name}.");
    tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".partial")
        .make_in(dir, make)
        .map(tempfile::NamedTempFile::into_temp_path)
}

// The modes checked are Unix's (the umask and mode bits); Windows files have no such bits.
#[cfg(all(test, unix))]
mod tests;
