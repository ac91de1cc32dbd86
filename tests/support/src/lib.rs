//! Helpers shared by the workspace's tests: a scriptable HTTP/1.1 server and a real
//! S3-protocol server, both on `127.0.0.1`.
//!
//! ```
//! use rock_ci_test_support::{HttpServer, Reply};
//!
//! let server = HttpServer::start(|req| Reply::json(200, &format!("{{\"path\":\"{}\"}}", req.path)));
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! ```

// ELF files built with `cc`, ROCm trees of symlink chains, and trees compared with GNU `tar -x`:
// fixtures about Linux itself, not built for other systems.
#[cfg(unix)]
pub mod elf;
mod fault_proxy;
mod http_server;
pub mod links;
#[cfg(unix)]
pub mod rocm;
pub mod s3;
mod server_thread;
#[cfg(unix)]
pub mod tar_tree;
mod tls_proxy;

use std::path::{Path, PathBuf};

pub use fault_proxy::{Fault, FaultPlan, FaultProxy, RequestHead, Rule};
pub use http_server::{HttpServer, Reply, Request};
pub use s3::{S3Server, S3ServerOptions};
pub use tls_proxy::TlsProxy;

/// Writes the exploded `base_lib_generic` artifact that `build_python_packages` reads the build's
/// flags from: its manifest and `therock_manifest.json` with `KPACK_SPLIT_ARTIFACTS` = `kpack`.
pub fn base_artifact(root: &Path, kpack: bool) {
    let base = root.join("base_lib_generic");
    let manifest = base.join("base/aux-overlay/stage/share/therock/therock_manifest.json");
    fs_err::create_dir_all(manifest.parent().expect("has a parent")).expect("dirs");
    fs_err::write(
        base.join("artifact_manifest.txt"),
        "base/aux-overlay/stage\n",
    )
    .expect("manifest");
    fs_err::write(
        manifest,
        format!("{{\"flags\": {{\"KPACK_SPLIT_ARTIFACTS\": {kpack}}}}}\n"),
    )
    .expect("therock manifest");
}

/// Writes an artifact archive at `path`: `artifact_manifest.txt` naming `stage`, then `files`
/// (relative path, content) below `stage`, mode 0755.
pub fn write_artifact(
    path: &Path,
    compression: artifacts::Compression,
    stage: &str,
    files: &[(&str, &str)],
) {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).expect("the archive's directory");
    }
    let mut w = artifacts::ArchiveWriter::create(path, compression).expect("create archive");
    w.append_data(
        "artifact_manifest.txt",
        format!("{stage}\n").as_bytes(),
        0o644,
    )
    .expect("manifest");
    for (rel, content) in files {
        w.append_data(&format!("{stage}/{rel}"), content.as_bytes(), 0o755)
            .expect("member");
    }
    w.finish().expect("finish archive");
}

/// A listener on 127.0.0.1 that accepts every connection and never answers (a black hole), for
/// as long as the test process runs; its address.
pub fn black_hole() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    addr
}

/// The lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(data))
}

/// The SHA-256 of `data` as a wheel's `RECORD` writes it: URL-safe base64 without padding.
pub fn sha256_urlsafe_b64(data: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(data))
}

/// `len` bytes of a xorshift sequence seeded with `seed` (0 taken as 1), `byte` turning each
/// step's state into 8 bytes. A plain loop: the tests draw hundreds of MiB through it.
fn xorshift_bytes(len: usize, seed: u64, byte: impl Fn(u64) -> [u8; 8]) -> Vec<u8> {
    let mut state = seed.max(1);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&byte(state));
    }
    out.truncate(len);
    out
}

/// `len` lowercase letters from a xorshift generator seeded with `seed`: text zstd and xz cannot
/// shrink much, for transfers long enough to be caught in flight.
pub fn incompressible_text(len: usize, seed: u64) -> String {
    let letters = xorshift_bytes(len, seed, |x| x.to_le_bytes().map(|b| b'a' + b % 26));
    String::from_utf8(letters).expect("lowercase ASCII letters")
}

/// `len` bytes from a xorshift generator seeded with `seed`: data that does not compress.
pub fn incompressible_bytes(len: usize, seed: u64) -> Vec<u8> {
    xorshift_bytes(len, seed, u64::to_le_bytes)
}

/// The files (and links) below `dir` as sorted `/`-separated relative paths.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = file_tree::walk(dir)
        .expect("a readable tree")
        .into_iter()
        .filter(|e| !e.is_dir)
        .map(|e| e.relative())
        .collect();
    out.sort();
    out
}

/// Every entry below `dir` as (relative path, description): directories with their mode,
/// symlinks with their target, files with mode, mtime, size and SHA-256; sorted by path.
/// Two trees with equal snapshots hold the same files, modes, mtimes and links.
/// On Windows the mode is the read-only attribute (`ro` or `rw`) and the mtime whole seconds.
pub fn tree_snapshot(dir: &Path) -> Vec<(String, String)> {
    #[cfg(unix)]
    fn mode_and_mtime(meta: &std::fs::Metadata) -> (String, i64) {
        use std::os::unix::fs::MetadataExt as _;
        (format!("{:o}", meta.mode() & 0o7777), meta.mtime())
    }
    #[cfg(not(unix))]
    fn mode_and_mtime(meta: &std::fs::Metadata) -> (String, i64) {
        let mode = if meta.permissions().readonly() {
            "ro"
        } else {
            "rw"
        };
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_secs()).ok())
            .unwrap_or_default();
        (mode.to_owned(), mtime)
    }
    let mut out: Vec<(String, String)> = file_tree::walk(dir)
        .expect("a readable tree")
        .into_iter()
        .map(|e| {
            let meta = fs_err::symlink_metadata(&e.path).expect("metadata");
            let what = if e.is_symlink {
                let target = fs_err::read_link(&e.path).expect("link");
                format!("link -> {}", target.display())
            } else if e.is_dir {
                format!("dir {}", mode_and_mtime(&meta).0)
            } else {
                let data = fs_err::read(&e.path).expect("file");
                let (mode, mtime) = mode_and_mtime(&meta);
                format!(
                    "file {mode} mtime {mtime} {} bytes {}",
                    data.len(),
                    sha256_hex(&data)
                )
            };
            (e.relative(), what)
        })
        .collect();
    out.sort();
    out
}

/// Runs `python3 -c script args...`, panicking with its stderr unless it succeeds; its stdout.
pub fn python(script: &str, args: &[&std::ffi::OsStr]) -> String {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that a command exited with `code` and said `message` on stderr.
pub fn assert_fails_with(out: &std::process::Output, code: i32, message: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: {stderr}");
    assert!(stderr.contains(message), "{message} not in {stderr}");
}

/// The shared libraries of this machine (`*.so.*` regular files beginning with the ELF magic
/// in its library directories), sorted by path: real ELF files no test built. Under Wine the
/// same directories are read through the drive that maps the host's root (`Z:`), when the
/// working directory is on it.
pub fn system_libraries() -> Vec<PathBuf> {
    let is_elf = |p: &Path| {
        let mut magic = [0u8; 4];
        fs_err::File::open(p)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
            .is_ok_and(|()| &magic == b"\x7fELF")
    };
    let mut found: Vec<PathBuf> = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        .iter()
        .filter_map(|d| fs_err::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".so."))
                && !p.is_symlink()
                && p.is_file()
                && is_elf(p)
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    /// The generators give the bytes of the xorshift64 (13, 7, 17) sequence from its seed, as
    /// they are or mapped to letters, whatever the length asked.
    #[test]
    fn generated_data_follows_the_xorshift_sequence() {
        let mut state: u64 = 42;
        let bytes: Vec<u8> = (0..125)
            .flat_map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()
            })
            .collect();
        let letters: String = bytes
            .iter()
            .map(|b| char::from(b"abcdefghijklmnopqrstuvwxyz"[usize::from(b % 26)]))
            .collect();
        assert_eq!(super::incompressible_text(1000, 42), letters);
        assert_eq!(super::incompressible_text(7, 42), letters[..7]);
        assert_eq!(super::incompressible_bytes(1000, 42), bytes);
        assert_eq!(super::incompressible_bytes(13, 42), bytes[..13]);
        assert_eq!(super::incompressible_bytes(0, 0), Vec::<u8>::new());
        assert_eq!(
            super::incompressible_bytes(3, 0),
            super::incompressible_bytes(3, 1)
        );
    }
}
