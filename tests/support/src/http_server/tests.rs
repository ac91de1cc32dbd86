use std::io::{ErrorKind, Read as _, Write as _};

use super::*;

fn exchange(server: &HttpServer, request: &str) -> std::io::Result<String> {
    let mut stream = std::net::TcpStream::connect(server.addr)?;
    stream.write_all(request.as_bytes())?;
    let mut out = Vec::new();
    stream.read_to_end(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[test]
fn answers_and_records_the_request() {
    let server = HttpServer::start(|req| {
        Reply::json(201, &String::from_utf8_lossy(&req.body)).with_header("x-a", "b")
    });
    let text = exchange(
        &server,
        "POST /p?q=1 HTTP/1.1\r\nHost: x\r\nX-Token: T\r\nContent-Length: 2\r\n\r\n{}",
    )
    .unwrap();
    assert!(text.starts_with("HTTP/1.1 201 Created\r\n"), "{text}");
    assert!(text.contains("x-a: b\r\n"), "{text}");
    assert!(text.contains("connection: close\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\n{}"), "{text}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!((req.method.as_str(), req.path.as_str()), ("POST", "/p?q=1"));
    assert_eq!(req.header("X-TOKEN"), Some("T"));
    assert_eq!(req.body, b"{}");
}

#[test]
fn close_resets_the_connection() {
    let server = HttpServer::start(|_| Reply::Close);
    let err = exchange(&server, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn stops_listening_when_dropped() {
    let server = HttpServer::start(|_| Reply::json(200, "{}"));
    let addr = server.addr;
    drop(server);
    let err = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
}
