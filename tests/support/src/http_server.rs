//! A scriptable HTTP/1.1 server (hyper) on `127.0.0.1:0`: each request gets the handler's
//! [`Reply`], a response or a connection reset.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;

use crate::server_thread::{ServerThread, accept_until};

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
    /// Reset the connection without answering: the client reads `ECONNRESET`, not a status.
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
    _thread: ServerThread,
}

impl HttpServer {
    /// Starts the server.
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let requests = requests.clone();
            ServerThread::spawn(1, move |stop| {
                accept_until(listener, stop, move |socket| {
                    serve(socket, requests.clone(), handler.clone())
                })
            })
        };
        Self {
            addr,
            requests,
            _thread: thread,
        }
    }

    /// A static file server over `root`, as a bucket's website would serve it: `GET` and
    /// `HEAD` of a file give its bytes, a path ending in `/` its `index.html`, anything else (or
    /// a path with a `..` component) 404. The path is percent-decoded; a query is ignored.
    pub fn serve_dir(root: impl Into<std::path::PathBuf>) -> Self {
        let root = root.into();
        Self::start(move |req| {
            let not_found = Reply::Response {
                status: 404,
                headers: Vec::new(),
                body: b"not found".to_vec(),
            };
            let path = req.path.split(['?', '#']).next().unwrap_or_default();
            let Some(path) = percent_decode(path) else {
                return not_found;
            };
            if path.split('/').any(|c| c == "..") {
                return not_found;
            }
            let mut file = root.join(path.trim_start_matches('/'));
            if path.ends_with('/') {
                file.push("index.html");
            }
            match fs_err::read(&file) {
                Ok(body) if req.method == "GET" || req.method == "HEAD" => {
                    let content_type = if file.extension().is_some_and(|e| e == "html") {
                        "text/html"
                    } else {
                        "application/octet-stream"
                    };
                    Reply::Response {
                        status: 200,
                        headers: vec![("content-type".into(), content_type.into())],
                        body: if req.method == "HEAD" {
                            Vec::new()
                        } else {
                            body
                        },
                    }
                }
                _ => not_found,
            }
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
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

/// Serves the one request of a connection.
async fn serve(
    socket: tokio::net::TcpStream,
    requests: Arc<Mutex<Vec<Request>>>,
    handler: Arc<Handler>,
) {
    // A second handle on the socket outlives hyper's, to reset it.
    let Ok(control) = socket.into_std().and_then(|s| Ok((s.try_clone()?, s))) else {
        return;
    };
    let (control, socket) = control;
    let Ok(socket) = tokio::net::TcpStream::from_std(socket) else {
        return;
    };
    let reset = Arc::new(tokio::sync::Notify::new());
    let service = {
        let reset = reset.clone();
        hyper::service::service_fn(move |req: http::Request<Incoming>| {
            let (requests, handler, reset) = (requests.clone(), handler.clone(), reset.clone());
            async move {
                let request = read_request(req).await?;
                let reply = tokio::task::spawn_blocking(move || {
                    let reply = handler(&request);
                    requests.lock().expect("lock").push(request);
                    reply
                })
                .await
                .expect("handler panicked");
                match reply {
                    Reply::Response {
                        status,
                        headers,
                        body,
                    } => Ok::<_, hyper::Error>(response(status, headers, body)),
                    Reply::Close => {
                        reset.notify_one();
                        std::future::pending().await
                    }
                }
            }
        })
    };
    let conn = http1::Builder::new()
        .keep_alive(false)
        .serve_connection(TokioIo::new(socket), service);
    tokio::select! {
        _ = conn => {}
        () = reset.notified() => {
            // Dropping the connection unanswered, with a zero linger: the kernel sends RST.
            if let Ok(control) = tokio::net::TcpStream::from_std(control) {
                let _ = control.set_zero_linger();
            }
        }
    }
}

async fn read_request(req: http::Request<Incoming>) -> Result<Request, hyper::Error> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes().to_vec();
    Ok(Request {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.to_string(), ToString::to_string),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    })
}

fn response(
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
) -> http::Response<Full<Bytes>> {
    let mut builder = http::Response::builder()
        .status(status)
        .header(http::header::CONNECTION, "close");
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .expect("valid response")
}

/// `%XX` sequences decoded (as UTF-8); `None` for a malformed sequence or text.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests;
