//! Helpers shared by the workspace's tests: a scriptable HTTP/1.1 server and a real
//! S3-protocol server, both on `127.0.0.1`.
//!
//! ```
//! use rock_ci_test_support::{HttpServer, Reply};
//!
//! let server = HttpServer::start(|req| Reply::json(200, &format!("{{\"path\":\"{}\"}}", req.path)));
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! ```

pub mod elf;
pub mod rocm;
pub mod s3;

use std::path::Path;

pub use s3::{S3Server, S3ServerOptions};

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `PUT`, ...
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A response.
    Response {
        /// Status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Body.
        body: Vec<u8>,
    },
    /// Close the connection without answering (a reset as the client sees it).
    Close,
}

impl Reply {
    /// A response with a JSON body.
    pub fn json(status: u16, body: &str) -> Self {
        Reply::Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    /// Adds a header to a response.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let Reply::Response { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// An HTTP/1.1 server on an ephemeral port of `127.0.0.1`, answering each request with the
/// handler's reply and recording it. One request per connection. Stops when dropped.
pub struct HttpServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Starts the server.
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (requests, handler) = (requests.clone(), handler.clone());
                    std::thread::spawn(move || serve(stream, &requests, handler.as_ref()));
                }
            })
        };
        Self {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("lock").clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, requests: &Mutex<Vec<Request>>, handler: &Handler) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let len = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request = Request {
        method,
        path,
        headers,
        body,
    };
    let reply = handler(&request);
    requests.lock().expect("lock").push(request);
    let Reply::Response {
        status,
        headers,
        body,
    } = reply
    else {
        return;
    };
    let mut out = write_half;
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason(status),
        body.len()
    );
    for (n, v) in headers {
        let _ = write!(head, "{n}: {v}\r\n");
    }
    head.push_str("\r\n");
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(&body);
    let _ = out.flush();
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Writes an artifact archive at `path`: `artifact_manifest.txt` naming `stage`, then `files`
/// (relative path, content) below `stage`, mode 0755.
pub fn write_artifact(
    path: &Path,
    compression: artifacts::Compression,
    stage: &str,
    files: &[(&str, &str)],
) {
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

/// The lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(data))
}

/// The files (and links) below `dir` as sorted `/`-separated relative paths.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d).expect("readable dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("below dir");
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
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
