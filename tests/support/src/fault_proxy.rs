//! A TCP-level HTTP/1.1 proxy on `127.0.0.1:0` that forwards requests to an upstream server
//! and injects faults into chosen exchanges: error statuses, connection resets, truncated,
//! shortened or corrupted bodies, stalls and bandwidth limits.
//!
//! Each downstream connection carries one request: the proxy reads the request head, decides
//! by its [`FaultPlan`], opens one upstream connection for it (`connection: close`), streams the
//! request body up and the response down, and answers with `connection: close`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::server_thread::{ServerThread, accept_until};

/// A fault injected into one exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `500` with an S3 error body (`InternalError`); the request never reaches the upstream.
    Status500,
    /// `503` with an S3 error body (`SlowDown`); the request never reaches the upstream.
    Status503,
    /// Reads the request head, then resets the connection (zero linger) without answering.
    ResetBeforeHeaders,
    /// The request reaches the upstream and is done there; once the upstream's answer starts,
    /// it is dropped and a `500` (`InternalError`) sent instead: a write that landed though the
    /// client is told it failed.
    LostAnswer,
    /// Sends the response head and the first half of the body, then resets the connection.
    ResetMidBody,
    /// Sends the response head and the first half of the body, then closes cleanly (FIN):
    /// fewer bytes than `Content-Length`.
    TruncatedBody,
    /// A lying server: `Content-Length` rewritten to half the body and that many bytes sent, a
    /// consistent-looking but short response. A `Content-Range` `bytes a-b/size` is rewritten to
    /// end at the last byte sent, so the two headers agree; checksum and `ETag` headers are kept.
    ShortBodyMatchingLength,
    /// Flips every bit of the body's middle byte; the length is unchanged.
    BitFlip,
    /// Reads the request and never answers: the connection stays open, silent, until the client
    /// closes it (or the proxy stops). The request never reaches the upstream.
    Stall,
    /// Paces the response body of the connection to at most `bytes_per_sec`.
    Throttle {
        /// The rate limit, bytes per second (at least 1).
        bytes_per_sec: u64,
    },
}

impl Fault {
    /// Every kind, for counters (a throttle's rate is irrelevant here).
    const KINDS: usize = 10;

    fn index(self) -> usize {
        match self {
            Fault::Status500 => 0,
            Fault::Status503 => 1,
            Fault::ResetBeforeHeaders => 2,
            Fault::ResetMidBody => 3,
            Fault::TruncatedBody => 4,
            Fault::ShortBodyMatchingLength => 5,
            Fault::BitFlip => 6,
            Fault::Stall => 7,
            Fault::Throttle { .. } => 8,
            Fault::LostAnswer => 9,
        }
    }

    /// Whether the fault alters a response body (and so needs a non-empty `Content-Length`).
    fn cuts_body(self) -> bool {
        matches!(
            self,
            Fault::ResetMidBody
                | Fault::TruncatedBody
                | Fault::ShortBodyMatchingLength
                | Fault::BitFlip
        )
    }
}

/// The head of a request, as rules see it.
#[derive(Debug, Clone)]
pub struct RequestHead {
    /// `GET`, `PUT`, ...
    pub method: String,
    /// The request target: path and query.
    pub path: String,
    /// Headers, names lowercased, in order.
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

type Predicate = dyn Fn(&RequestHead) -> bool + Send + Sync;

/// One rule of a [`FaultPlan`]: which requests get `fault`.
///
/// A request *matches* when it passes every filter (method, path substring, predicate). Each
/// match is numbered from 1 per rule, among the requests that reach the rule (those an earlier
/// rule selected do not); the rule then *selects* the match when it is within the
/// first `n` ([`Rule::first`]), a multiple of `n` ([`Rule::every`]) and wins its draw
/// ([`Rule::probability`]), whichever are set.
pub struct Rule {
    fault: Fault,
    method: Option<String>,
    path_contains: Option<String>,
    predicate: Option<Box<Predicate>>,
    probability: Option<f64>,
    first: Option<u64>,
    every: Option<u64>,
    matched: u64,
}

impl Rule {
    /// A rule injecting `fault` into every request.
    pub fn new(fault: Fault) -> Self {
        Self {
            fault,
            method: None,
            path_contains: None,
            predicate: None,
            probability: None,
            first: None,
            every: None,
            matched: 0,
        }
    }

    /// Only requests with this method (case-insensitive).
    #[must_use]
    pub fn method(mut self, method: &str) -> Self {
        self.method = Some(method.to_ascii_uppercase());
        self
    }

    /// Only requests whose target (path and query) contains `text`.
    #[must_use]
    pub fn path_contains(mut self, text: &str) -> Self {
        self.path_contains = Some(text.to_owned());
        self
    }

    /// Only requests for which `predicate` holds.
    #[must_use]
    pub fn when(
        mut self,
        predicate: impl Fn(&RequestHead) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.predicate = Some(Box::new(predicate));
        self
    }

    /// Selects each match with probability `p`, drawn from the plan's seeded generator.
    #[must_use]
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = Some(p);
        self
    }

    /// Selects only the first `n` matches.
    #[must_use]
    pub fn first(mut self, n: u64) -> Self {
        self.first = Some(n);
        self
    }

    /// Selects every `n`-th match (the `n`-th, `2n`-th, ...).
    #[must_use]
    pub fn every(mut self, n: u64) -> Self {
        self.every = Some(n.max(1));
        self
    }

    fn matches(&self, head: &RequestHead) -> bool {
        self.method.as_deref().is_none_or(|m| m == head.method)
            && self
                .path_contains
                .as_deref()
                .is_none_or(|p| head.path.contains(p))
            && self.predicate.as_ref().is_none_or(|p| p(head))
    }

    fn selects(&mut self, head: &RequestHead, rng: &mut SplitMix64) -> bool {
        if !self.matches(head) {
            return false;
        }
        self.matched += 1;
        let n = self.matched;
        self.first.is_none_or(|first| n <= first)
            && self.every.is_none_or(|every| n.is_multiple_of(every))
            && self.probability.is_none_or(|p| rng.next_f64() < p)
    }
}

/// Which requests get which fault: rules tried in order, the first that selects a request
/// wins (a rule that matches but does not select lets the next rules try). No rules: the proxy
/// is transparent.
pub struct FaultPlan {
    rules: Vec<Rule>,
    rng: SplitMix64,
}

impl Default for FaultPlan {
    fn default() -> Self {
        Self::new()
    }
}

impl FaultPlan {
    /// A plan without rules, seed 0.
    pub fn new() -> Self {
        Self {
            rules: Vec::new(),
            rng: SplitMix64(0),
        }
    }

    /// Seeds the generator of the rules' probabilities: a seed and the order of the requests
    /// determine every draw.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.rng = SplitMix64(seed);
        self
    }

    /// Adds a rule after the others.
    #[must_use]
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    fn decide(&mut self, head: &RequestHead) -> Option<Fault> {
        let rng = &mut self.rng;
        self.rules
            .iter_mut()
            .find_map(|rule| rule.selects(head, rng).then_some(rule.fault))
    }
}

/// The `splitmix64` generator: small, seeded, deterministic.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn next_f64(&mut self) -> f64 {
        #[expect(
            clippy::cast_precision_loss,
            reason = "53 random bits and 2^53 convert exactly"
        )]
        let (bits, scale) = ((self.next_u64() >> 11) as f64, (1u64 << 53) as f64);
        bits / scale
    }
}

#[derive(Default)]
struct Counters {
    passed: AtomicU64,
    faults: [AtomicU64; Fault::KINDS],
    /// Ranged requests whose response is being sent, and the most there were at once.
    ranged_in_flight: AtomicU64,
    ranged_max: AtomicU64,
}

/// A ranged request in flight while it lives.
struct RangedInFlight<'a>(&'a Counters);

impl<'a> RangedInFlight<'a> {
    fn enter(counters: &'a Counters) -> Self {
        let now = counters.ranged_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        counters.ranged_max.fetch_max(now, Ordering::SeqCst);
        Self(counters)
    }
}

impl Drop for RangedInFlight<'_> {
    fn drop(&mut self) {
        self.0.ranged_in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Shared {
    upstream: SocketAddr,
    plan: Mutex<FaultPlan>,
    counters: Counters,
}

/// The proxy; stops when dropped (every open connection closes).
pub struct FaultProxy {
    // Stops the proxy before the counters go.
    _thread: ServerThread,
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Starts a proxy on an ephemeral port of `127.0.0.1` in front of `upstream`.
    pub fn start(upstream: SocketAddr, plan: FaultPlan) -> Self {
        Self::start_on("127.0.0.1:0".parse().expect("address"), upstream, plan)
    }

    /// Starts a proxy listening on `listen` (port 0: any free port) in front of `upstream`.
    pub fn start_on(listen: SocketAddr, upstream: SocketAddr, plan: FaultPlan) -> Self {
        let listener = std::net::TcpListener::bind(listen).expect("bind the proxy");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            upstream,
            plan: Mutex::new(plan),
            counters: Counters::default(),
        });
        let thread = {
            let shared = shared.clone();
            ServerThread::spawn(2, move |stop| {
                accept_until(listener, stop, move |socket| serve(socket, shared.clone()))
            })
        };
        Self {
            _thread: thread,
            addr,
            shared,
        }
    }

    /// The address the proxy listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:{port}`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests forwarded without a fault so far (including those a body fault was chosen for
    /// but could not apply to: responses without a non-empty `Content-Length` body).
    pub fn passed(&self) -> u64 {
        self.shared.counters.passed.load(Ordering::SeqCst)
    }

    /// Faults of `fault`'s kind injected so far (a throttle's rate is not compared).
    pub fn injected(&self, fault: Fault) -> u64 {
        self.shared.counters.faults[fault.index()].load(Ordering::SeqCst)
    }

    /// The most requests with a `Range` header that were being answered at once.
    pub fn max_ranged_in_flight(&self) -> u64 {
        self.shared.counters.ranged_max.load(Ordering::SeqCst)
    }

    /// Faults of every kind injected so far.
    pub fn injected_total(&self) -> u64 {
        self.shared
            .counters
            .faults
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .sum()
    }
}

/// How an exchange ends for the downstream connection.
enum Ending {
    /// Close cleanly (FIN), then read what the client still sends until it closes.
    Close,
    /// Reset (RST).
    Reset,
    /// Send nothing more until the client closes.
    Hold,
}

const HEAD_LIMIT: usize = 64 << 10;

/// Serves the one request of a downstream connection.
async fn serve(mut down: TcpStream, shared: Arc<Shared>) {
    let Ok((head_bytes, body_start)) = read_head(&mut down).await else {
        return;
    };
    let Some(head) = parse_request(&head_bytes) else {
        return;
    };
    let fault = shared.plan.lock().expect("plan lock").decide(&head);
    let mut ranged = head
        .header("range")
        .map(|_| RangedInFlight::enter(&shared.counters));
    let count = |fault: Option<Fault>| match fault {
        Some(f) => shared.counters.faults[f.index()].fetch_add(1, Ordering::SeqCst),
        None => shared.counters.passed.fetch_add(1, Ordering::SeqCst),
    };
    let ending = match fault {
        Some(f @ (Fault::Status500 | Fault::Status503)) => {
            count(Some(f));
            error_answer(f, &head, &mut down).await
        }
        Some(f @ Fault::ResetBeforeHeaders) => {
            count(Some(f));
            Ending::Reset
        }
        Some(f @ Fault::Stall) => {
            count(Some(f));
            Ending::Hold
        }
        _ => {
            if let Ok(mut up) = TcpStream::connect(shared.upstream).await {
                let (mut down_rd, mut down_wr) = down.split();
                let (mut up_rd, mut up_wr) = up.split();
                let request = forward_request(&head_bytes, body_start, &mut down_rd, &mut up_wr);
                let response = forward_response(
                    &head,
                    fault,
                    (&mut up_rd, &mut down_wr),
                    &count,
                    &mut ranged,
                );
                tokio::select! {
                    ending = response => ending,
                    () = request => unreachable!("the request pump never ends"),
                }
            } else {
                count(None);
                let response =
                    "HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                let _ = down.write_all(response.as_bytes()).await;
                Ending::Close
            }
        }
    };
    drop(ranged);
    match ending {
        Ending::Reset => {
            let _ = down.set_zero_linger();
        }
        Ending::Close => {
            let _ = down.shutdown().await;
            drain(&mut down).await;
        }
        Ending::Hold => drain(&mut down).await,
    }
}

/// Reads and discards until the peer closes or fails.
async fn drain(stream: &mut (impl AsyncRead + Unpin)) {
    let mut buf = vec![0; 16 << 10];
    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
}

/// Sends the request head (with `connection: close`) and then everything the client sends,
/// until it stops; keeps reading (and discarding) once the upstream no longer takes it. Never
/// completes.
async fn forward_request(
    head: &[u8],
    body_start: Vec<u8>,
    down: &mut (impl AsyncRead + Unpin),
    up: &mut (impl AsyncWrite + Unpin),
) {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
    let mut out = format!("{}\r\n", lines.next().unwrap_or_default());
    for line in lines.filter(|l| !is_hop_header(l)) {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("connection: close\r\n\r\n");
    let mut open =
        up.write_all(out.as_bytes()).await.is_ok() && up.write_all(&body_start).await.is_ok();
    let mut buf = vec![0; 64 << 10];
    while let Ok(n @ 1..) = down.read(&mut buf).await {
        open = open && up.write_all(&buf[..n]).await.is_ok();
    }
    std::future::pending::<()>().await;
}

/// Answers `head` with the S3 error of `fault` (`500 InternalError`, or `503 SlowDown` for
/// [`Fault::Status503`]); how the connection is to end.
async fn error_answer(
    fault: Fault,
    head: &RequestHead,
    down: &mut (impl AsyncWrite + Unpin),
) -> Ending {
    let (status, code) = if fault == Fault::Status503 {
        ("503 Slow Down", "SlowDown")
    } else {
        ("500 Internal Server Error", "InternalError")
    };
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>injected by the fault proxy</Message><Resource>{}</Resource><RequestId>fault-proxy</RequestId></Error>",
        head.path
    );
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    if down.write_all(response.as_bytes()).await.is_ok() {
        Ending::Close
    } else {
        Ending::Reset
    }
}

/// Forwards the upstream's response (interim `1xx` heads verbatim), applying `fault`; how the
/// downstream connection is to end.
async fn forward_response(
    request: &RequestHead,
    fault: Option<Fault>,
    (up, down): (
        &mut (impl AsyncRead + Unpin),
        &mut (impl AsyncWrite + Unpin),
    ),
    count: &impl Fn(Option<Fault>) -> u64,
    ranged: &mut Option<RangedInFlight<'_>>,
) -> Ending {
    let mut pending = Vec::new();
    let (head, mut rest, status) = loop {
        let Ok((head, rest)) = read_head_from(pending, up).await else {
            count(None);
            return Ending::Reset;
        };
        let status = parse_status(&head);
        if !(100..200).contains(&status) || status == 101 {
            break (head, rest, status);
        }
        if down.write_all(&head).await.is_err() {
            count(None);
            return Ending::Reset;
        }
        pending = rest;
    };
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
    let status_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines.filter_map(split_header).collect();
    let no_body = request.method == "HEAD" || matches!(status, 204 | 304);
    let length = if no_body {
        Some(0)
    } else {
        header(&headers, "content-length").and_then(|v| v.trim().parse::<u64>().ok())
    };
    if fault == Some(Fault::LostAnswer) {
        // The upstream has answered, so it has done the request; its answer is dropped.
        count(fault);
        return error_answer(Fault::LostAnswer, request, down).await;
    }
    // A body fault without a body to cut forwards the response unchanged.
    let fault = fault.filter(|f| !f.cuts_body() || length.is_some_and(|l| l > 0));
    count(fault);
    let full = length.unwrap_or(0);
    let half = full / 2;
    let mut plan = BodyPlan {
        limit: length,
        flip_at: None,
        bytes_per_sec: None,
    };
    let mut replace = Vec::new();
    match fault {
        Some(Fault::ResetMidBody | Fault::TruncatedBody) => plan.limit = Some(half),
        Some(Fault::ShortBodyMatchingLength) => {
            plan.limit = Some(half);
            replace.push(("content-length".to_owned(), half.to_string()));
            if let Some(range) =
                header(&headers, "content-range").and_then(|r| shorten_range(r, half))
            {
                replace.push(("content-range".to_owned(), range));
            }
        }
        Some(Fault::BitFlip) => plan.flip_at = Some(half),
        Some(Fault::Throttle { bytes_per_sec }) => plan.bytes_per_sec = Some(bytes_per_sec.max(1)),
        _ => {}
    }
    let mut out = format!("{status_line}\r\n");
    for (name, value) in &headers {
        let lower = name.to_ascii_lowercase();
        if is_hop_name(&lower) {
            continue;
        }
        let value = replace
            .iter()
            .find(|(n, _)| *n == lower)
            .map_or(value, |(_, new)| new);
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    out.push_str("connection: close\r\n\r\n");
    if down.write_all(out.as_bytes()).await.is_err() {
        return Ending::Reset;
    }
    if let Some(limit) = plan.limit {
        rest.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    match copy_body(rest, up, down, &plan, ranged).await {
        Ok(()) if fault == Some(Fault::ResetMidBody) => {
            let _ = down.flush().await;
            Ending::Reset
        }
        Ok(()) => Ending::Close,
        Err(_) => Ending::Reset,
    }
}

/// How [`copy_body`] alters a body.
struct BodyPlan {
    /// Bytes to copy (`None`: until the upstream closes).
    limit: Option<u64>,
    /// The offset of the byte to invert.
    flip_at: Option<u64>,
    /// Pace to this rate.
    bytes_per_sec: Option<u64>,
}

/// Copies `first` and then `src` to `dst` as `plan` says. An upstream that closes before the
/// limit ends the copy without error (the client sees the short body); read and write errors
/// are returned.
async fn copy_body(
    first: Vec<u8>,
    src: &mut (impl AsyncRead + Unpin),
    dst: &mut (impl AsyncWrite + Unpin),
    plan: &BodyPlan,
    ranged: &mut Option<RangedInFlight<'_>>,
) -> std::io::Result<()> {
    let started = tokio::time::Instant::now();
    let mut sent = 0u64;
    let mut chunk = first;
    let mut buf = vec![0; 64 << 10];
    loop {
        if chunk.is_empty() {
            let want = plan.limit.map_or(buf.len(), |l| {
                usize::try_from(l - sent)
                    .unwrap_or(usize::MAX)
                    .min(buf.len())
            });
            if want == 0 {
                return Ok(());
            }
            let n = src.read(&mut buf[..want]).await?;
            if n == 0 {
                return Ok(());
            }
            chunk = buf[..n].to_vec();
        }
        if let Some(at) = plan.flip_at
            && (sent..sent + chunk.len() as u64).contains(&at)
        {
            let i = usize::try_from(at - sent).expect("within the chunk");
            chunk[i] = !chunk[i];
        }
        let piece = match plan.bytes_per_sec {
            Some(rate) => chunk
                .len()
                .min(usize::try_from((rate / 20).clamp(1, 16 << 10)).unwrap_or(1)),
            None => chunk.len(),
        };
        if let Some(rate) = plan.bytes_per_sec {
            // Not before the whole piece is due at the rate.
            #[expect(clippy::cast_precision_loss, reason = "byte counts far below 2^53")]
            let due = (sent + piece as u64) as f64 / rate as f64;
            tokio::time::sleep_until(started + Duration::from_secs_f64(due)).await;
        }
        if plan.limit == Some(sent + piece as u64) {
            // Out of the count before the client can have the whole body: once it has, it may
            // start its next range while this task has not yet run on.
            ranged.take();
        }
        dst.write_all(&chunk[..piece]).await?;
        sent += piece as u64;
        chunk.drain(..piece);
        if plan.limit == Some(sent) {
            return Ok(());
        }
    }
}

/// Reads up to the end of a head (`\r\n\r\n`); the head and the bytes read after it.
async fn read_head(stream: &mut (impl AsyncRead + Unpin)) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    read_head_from(Vec::new(), stream).await
}

/// [`read_head`] after `buf`, already read.
async fn read_head_from(
    mut buf: Vec<u8>,
    stream: &mut (impl AsyncRead + Unpin),
) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut chunk = [0; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > HEAD_LIMIT {
            return Err(std::io::Error::other("head too large"));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn parse_request(head: &[u8]) -> Option<RequestHead> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers = lines
        .filter_map(split_header)
        .map(|(n, v)| (n.to_ascii_lowercase(), v))
        .collect();
    Some(RequestHead {
        method,
        path,
        headers,
    })
}

fn parse_status(head: &[u8]) -> u16 {
    String::from_utf8_lossy(head)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn split_header(line: &str) -> Option<(String, String)> {
    let (name, value) = line.split_once(':')?;
    Some((name.trim().to_owned(), value.trim().to_owned()))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Connection-scoped headers the proxy replaces with its own `connection: close`.
fn is_hop_name(lower: &str) -> bool {
    matches!(lower, "connection" | "keep-alive" | "proxy-connection")
}

fn is_hop_header(line: &str) -> bool {
    split_header(line).is_some_and(|(n, _)| is_hop_name(&n.to_ascii_lowercase()))
}

/// `bytes a-b/size` ending at byte `a + len - 1` instead (`None` if not that form or empty).
fn shorten_range(range: &str, len: u64) -> Option<String> {
    let spec = range.trim().strip_prefix("bytes ")?;
    let (span, size) = spec.split_once('/')?;
    let (start, _) = span.split_once('-')?;
    let start: u64 = start.trim().parse().ok()?;
    (len > 0).then(|| format!("bytes {start}-{}/{size}", start + len - 1))
}
