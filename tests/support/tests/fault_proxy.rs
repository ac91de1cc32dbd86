//! The fault proxy in front of the scriptable HTTP server, seen by a raw HTTP/1.1 client.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, HttpServer, Reply, Rule};

/// `len` bytes of a fixed pattern.
fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from(i * 31 % 251).unwrap())
        .collect()
}

/// The upstream: `GET /bytes/N` answers N pattern bytes, `GET /range` a `206` with 100 bytes
/// at offset 100 of 1000, anything else `{"got": BODY_LENGTH}`.
fn upstream() -> HttpServer {
    HttpServer::start(|req| {
        if let Some(n) = req.path.strip_prefix("/bytes/") {
            return Reply::Response {
                status: 200,
                headers: vec![("x-kept".into(), "yes".into())],
                body: pattern(n.parse().unwrap()),
            };
        }
        if req.path == "/range" {
            return Reply::Response {
                status: 206,
                headers: vec![("content-range".into(), "bytes 100-199/1000".into())],
                body: pattern(100),
            };
        }
        Reply::json(200, &format!("{{\"got\": {}}}", req.body.len()))
    })
}

/// What a raw client read: the head, the body, and the error that ended the read, if any.
struct Seen {
    head: String,
    body: Vec<u8>,
    error: Option<std::io::Error>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then_some(v.trim())
        })
    }

    fn content_length(&self) -> usize {
        self.header("content-length").unwrap().parse().unwrap()
    }

    fn status(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or_default()
    }
}

/// Sends `method path` (with `body`) to `addr` and reads until EOF, an error, or a read
/// timeout of `patience`.
fn exchange(addr: SocketAddr, method: &str, path: &str, body: &[u8], patience: Duration) -> Seen {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(patience)).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut got = Vec::new();
    let mut buf = [0; 8192];
    let error = loop {
        match stream.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => break Some(e),
        }
    };
    let split = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(got.len(), |p| p + 4);
    let body = got.split_off(split);
    Seen {
        head: String::from_utf8_lossy(&got).into_owned(),
        body,
        error,
    }
}

fn get(proxy: &FaultProxy, path: &str) -> Seen {
    exchange(proxy.addr(), "GET", path, b"", Duration::from_secs(30))
}

fn proxy(server: &HttpServer, rule: Rule) -> FaultProxy {
    FaultProxy::start(server.addr(), FaultPlan::new().rule(rule))
}

#[test]
fn without_rules_forwards_requests_and_responses_unchanged() {
    let server = upstream();
    let proxy = FaultProxy::start(server.addr(), FaultPlan::new());
    let seen = get(&proxy, "/bytes/300000");
    assert!(seen.error.is_none(), "{:?}", seen.error);
    assert_eq!(seen.status(), "200");
    assert_eq!(seen.content_length(), 300_000);
    assert_eq!(seen.body, pattern(300_000));
    assert_eq!(seen.header("x-kept"), Some("yes"));
    assert_eq!(seen.header("connection"), Some("close"));

    let upload = pattern(500_000);
    let seen = exchange(
        proxy.addr(),
        "PUT",
        "/up?x=1",
        &upload,
        Duration::from_secs(30),
    );
    assert_eq!(seen.body, b"{\"got\": 500000}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].method, "PUT");
    assert_eq!(requests[1].path, "/up?x=1");
    assert_eq!(requests[1].body, upload);
    assert_eq!(
        requests[1].header("host"),
        Some(proxy.addr().to_string().as_str())
    );
    assert_eq!((proxy.passed(), proxy.injected_total()), (2, 0));
}

#[test]
fn error_statuses_answer_s3_error_bodies_without_the_upstream() {
    let server = upstream();
    let plan = FaultPlan::new()
        .rule(Rule::new(Fault::Status500).path_contains("/a"))
        .rule(Rule::new(Fault::Status503).path_contains("/b"));
    let proxy = FaultProxy::start(server.addr(), plan);
    let seen = get(&proxy, "/a");
    assert_eq!(seen.status(), "500");
    let text = String::from_utf8_lossy(&seen.body).into_owned();
    assert!(text.contains("<Error><Code>InternalError</Code>"), "{text}");
    assert_eq!(seen.body.len(), seen.content_length());
    let seen = exchange(
        proxy.addr(),
        "PUT",
        "/b",
        &pattern(1000),
        Duration::from_secs(30),
    );
    assert_eq!(seen.status(), "503");
    assert!(String::from_utf8_lossy(&seen.body).contains("<Code>SlowDown</Code>"));
    assert!(server.requests().is_empty());
    assert_eq!(proxy.injected(Fault::Status500), 1);
    assert_eq!(proxy.injected(Fault::Status503), 1);
    assert_eq!(proxy.passed(), 0);
}

/// What a GET of `path` through a proxy with `fault` (a reset) on every request gets before
/// the reset.
fn reset_get_through(fault: Fault, path: &str) -> Seen {
    let server = upstream();
    let proxy = proxy(&server, Rule::new(fault));
    let seen = get(&proxy, path);
    let error = seen.error.as_ref().expect("a reset");
    assert_eq!(error.kind(), ErrorKind::ConnectionReset, "{error}");
    assert_eq!(proxy.injected(fault), 1);
    seen
}

#[test]
fn reset_before_headers_resets_the_connection() {
    let seen = reset_get_through(Fault::ResetBeforeHeaders, "/bytes/10");
    assert!(seen.head.is_empty(), "{}", seen.head);
}

#[test]
fn reset_mid_body_sends_part_of_the_body_then_resets() {
    let seen = reset_get_through(Fault::ResetMidBody, "/bytes/20000");
    assert_eq!(seen.content_length(), 20_000);
    assert!(
        (1..20_000).contains(&seen.body.len()),
        "{}",
        seen.body.len()
    );
    assert_eq!(seen.body, pattern(20_000)[..seen.body.len()]);
}

/// A proxy with `fault` on every request, and what a GET of `path` through it gets, ending
/// cleanly.
fn clean_get_through(fault: Fault, path: &str) -> (HttpServer, FaultProxy, Seen) {
    let server = upstream();
    let proxy = proxy(&server, Rule::new(fault));
    let seen = get(&proxy, path);
    assert!(seen.error.is_none(), "{:?}", seen.error);
    (server, proxy, seen)
}

/// [`clean_get_through`] of 20,000 bytes, which gets the first half of the body.
fn first_half_through(fault: Fault) -> (HttpServer, FaultProxy, Seen) {
    let (server, proxy, seen) = clean_get_through(fault, "/bytes/20000");
    assert_eq!(seen.body, pattern(20_000)[..10_000]);
    assert_eq!(proxy.injected(fault), 1);
    (server, proxy, seen)
}

#[test]
fn truncated_body_ends_early_with_a_clean_close() {
    let (_server, _proxy, seen) = first_half_through(Fault::TruncatedBody);
    assert_eq!(seen.content_length(), 20_000);
}

#[test]
fn short_body_rewrites_the_length_and_the_range() {
    let (_server, proxy, seen) = first_half_through(Fault::ShortBodyMatchingLength);
    assert_eq!(seen.content_length(), 10_000);
    let seen = get(&proxy, "/range");
    assert_eq!(seen.status(), "206");
    assert_eq!(seen.content_length(), 50);
    assert_eq!(seen.header("content-range"), Some("bytes 100-149/1000"));
    assert_eq!(seen.body, pattern(100)[..50]);
    assert_eq!(proxy.injected(Fault::ShortBodyMatchingLength), 2);
}

#[test]
fn bit_flip_corrupts_one_byte_and_keeps_the_length() {
    let (_server, proxy, seen) = clean_get_through(Fault::BitFlip, "/bytes/20000");
    assert_eq!(seen.content_length(), 20_000);
    let original = pattern(20_000);
    let differing: Vec<usize> = (0..20_000)
        .filter(|&i| seen.body[i] != original[i])
        .collect();
    assert_eq!(differing, [10_000]);
    assert_eq!(proxy.injected(Fault::BitFlip), 1);
}

#[test]
fn body_faults_pass_responses_without_a_body() {
    let (_server, proxy, seen) = clean_get_through(Fault::TruncatedBody, "/bytes/0");
    assert_eq!(seen.status(), "200");
    assert_eq!((proxy.passed(), proxy.injected_total()), (1, 0));
}

#[test]
fn stall_sends_nothing_and_never_asks_the_upstream() {
    let server = upstream();
    let proxy = proxy(&server, Rule::new(Fault::Stall));
    let seen = exchange(
        proxy.addr(),
        "GET",
        "/bytes/10",
        b"",
        Duration::from_millis(300),
    );
    let error = seen.error.expect("a read timeout");
    assert!(
        matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{error}"
    );
    assert!(seen.head.is_empty() && seen.body.is_empty());
    assert!(server.requests().is_empty());
    assert_eq!(proxy.injected(Fault::Stall), 1);
}

#[test]
fn throttle_paces_the_body() {
    let server = upstream();
    let proxy = proxy(
        &server,
        Rule::new(Fault::Throttle {
            bytes_per_sec: 256 << 10,
        }),
    );
    let started = Instant::now();
    let seen = get(&proxy, "/bytes/65536");
    let took = started.elapsed();
    assert_eq!(seen.body, pattern(65_536));
    // 64 KiB at 256 KiB/s: at least a quarter of a second.
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert_eq!(
        proxy.injected(Fault::Throttle { bytes_per_sec: 1 }),
        1,
        "counted by kind"
    );
}

#[test]
fn rules_filter_count_and_fall_through() {
    let server = upstream();
    let plan = FaultPlan::new()
        .rule(Rule::new(Fault::Status503).method("put").first(2))
        .rule(Rule::new(Fault::Status500).path_contains("/x").every(3))
        .rule(Rule::new(Fault::ResetBeforeHeaders).when(|head| head.header("x-break").is_some()));
    let proxy = FaultProxy::start(server.addr(), plan);
    let statuses: Vec<String> = ["PUT", "PUT", "PUT"]
        .iter()
        .map(|m| {
            exchange(proxy.addr(), m, "/x", b"a", Duration::from_secs(30))
                .status()
                .to_owned()
        })
        .collect();
    // The third PUT is past the first rule's two and falls through: the second rule's first
    // match (only the requests that reach a rule count as its matches).
    assert_eq!(statuses, ["503", "503", "200"]);
    let statuses: Vec<String> = (0..4)
        .map(|_| get(&proxy, "/x").status().to_owned())
        .collect();
    // Matches 2 to 5 of the second rule: the 3rd fails.
    assert_eq!(statuses, ["200", "500", "200", "200"]);
    assert_eq!(get(&proxy, "/y").status(), "200");

    let mut stream = TcpStream::connect(proxy.addr()).unwrap();
    stream
        .write_all(b"GET /y HTTP/1.1\r\nHost: h\r\nX-Break: 1\r\n\r\n")
        .unwrap();
    let error = stream.read(&mut [0; 16]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionReset, "{error}");

    assert_eq!(proxy.injected(Fault::Status503), 2);
    assert_eq!(proxy.injected(Fault::Status500), 1);
    assert_eq!(proxy.injected(Fault::ResetBeforeHeaders), 1);
    assert_eq!(proxy.passed(), 5);
    assert_eq!(server.requests().len(), 5);
}

#[test]
fn probabilities_follow_the_seed() {
    let server = upstream();
    let pattern_of = |seed: u64| -> Vec<bool> {
        let plan = FaultPlan::new()
            .seed(seed)
            .rule(Rule::new(Fault::Status503).probability(0.5));
        let proxy = FaultProxy::start(server.addr(), plan);
        let seen: Vec<bool> = (0..24)
            .map(|_| get(&proxy, "/p").status() == "503")
            .collect();
        assert_eq!(
            proxy.injected(Fault::Status503),
            seen.iter().filter(|&&f| f).count() as u64
        );
        seen
    };
    let first = pattern_of(7);
    assert_eq!(pattern_of(7), first);
    let faults = first.iter().filter(|&&f| f).count();
    assert!((4..=20).contains(&faults), "{faults} of 24");
    let never = FaultPlan::new().rule(Rule::new(Fault::Status503).probability(0.0));
    let proxy = FaultProxy::start(server.addr(), never);
    assert_eq!(get(&proxy, "/p").status(), "200");
    assert_eq!(proxy.injected_total(), 0);
}

#[test]
fn an_unreachable_upstream_answers_502() {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let proxy = FaultProxy::start(addr, FaultPlan::new());
    assert_eq!(get(&proxy, "/").status(), "502");
}

#[test]
fn stops_listening_when_dropped() {
    let server = upstream();
    let proxy = FaultProxy::start(server.addr(), FaultPlan::new());
    let addr = proxy.addr();
    assert!(proxy.endpoint().ends_with(&addr.port().to_string()));
    drop(proxy);
    let error = TcpStream::connect(addr).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionRefused, "{error}");
}
