//! Runs a fault proxy from the command line until its standard input closes, then prints its
//! counters as one JSON line.
//!
//!     cargo run -p rock-ci-test-support --example fault_proxy -- \
//!         --upstream 127.0.0.1:8333 [--listen 127.0.0.1:0] [--rate 0.1] [--seed 1] \
//!         [--kinds 500,503,reset-before-headers,reset-mid-body,truncated-body,short-body,bit-flip,stall] \
//!         [--method GET] [--throttle BYTES_PER_SEC]
//!
//! Each request gets a fault with probability `--rate`, the kinds equally likely (default: every
//! kind but `stall`), optionally only requests of `--method`; `--throttle` paces every other
//! response body. The first line printed is `listening on http://ADDR`.

#![allow(
    clippy::print_stdout,
    missing_docs,
    reason = "a command-line tool: prints its address and counters; not an API"
)]

use std::io::{BufRead as _, Write as _};
use std::net::SocketAddr;

use rock_ci_test_support::{Fault, FaultPlan, FaultProxy, Rule};

const USAGE: &str = "usage: fault_proxy --upstream ADDR [--listen ADDR] [--rate P] [--seed N] [--kinds K,...] [--method M] [--throttle BYTES_PER_SEC]";

/// The command-line names of the kinds (`throttle` takes its rate from `--throttle`).
const NAMES: [&str; 8] = [
    "500",
    "503",
    "reset-before-headers",
    "reset-mid-body",
    "truncated-body",
    "short-body",
    "bit-flip",
    "stall",
];

fn kind(name: &str) -> Fault {
    match name {
        "500" => Fault::Status500,
        "503" => Fault::Status503,
        "reset-before-headers" => Fault::ResetBeforeHeaders,
        "reset-mid-body" => Fault::ResetMidBody,
        "truncated-body" => Fault::TruncatedBody,
        "short-body" => Fault::ShortBodyMatchingLength,
        "bit-flip" => Fault::BitFlip,
        "stall" => Fault::Stall,
        _ => panic!("unknown fault kind {name}; {USAGE}"),
    }
}

fn main() {
    let mut listen: SocketAddr = "127.0.0.1:0".parse().expect("address");
    let mut upstream = None;
    let (mut rate, mut seed, mut method, mut throttle) = (0.0_f64, 0_u64, None, None);
    let mut kinds: Vec<Fault> = NAMES[..7].iter().map(|n| kind(n)).collect();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| panic!("{flag} needs a value; {USAGE}"))
        };
        match flag.as_str() {
            "--listen" => listen = value().parse().expect("--listen ADDR"),
            "--upstream" => upstream = Some(value().parse().expect("--upstream ADDR")),
            "--rate" => rate = value().parse().expect("--rate P"),
            "--seed" => seed = value().parse().expect("--seed N"),
            "--kinds" => {
                kinds = value()
                    .split(',')
                    .filter(|k| !k.is_empty())
                    .map(kind)
                    .collect();
            }
            "--method" => method = Some(value()),
            "--throttle" => throttle = Some(value().parse::<u64>().expect("--throttle N")),
            _ => panic!("{USAGE}"),
        }
    }
    let upstream: SocketAddr = upstream.unwrap_or_else(|| panic!("{USAGE}"));
    let mut plan = FaultPlan::new().seed(seed);
    // Rule i draws only when rules 0..i did not select: p_i = q / (1 - i q) makes each kind's
    // share q = rate / kinds.
    #[expect(clippy::cast_precision_loss, reason = "a handful of kinds")]
    let share = rate / kinds.len().max(1) as f64;
    for (i, fault) in kinds.iter().enumerate() {
        #[expect(clippy::cast_precision_loss, reason = "a handful of kinds")]
        let p = share / (1.0 - i as f64 * share);
        let mut rule = Rule::new(*fault).probability(p);
        if let Some(m) = &method {
            rule = rule.method(m);
        }
        plan = plan.rule(rule);
    }
    if let Some(bytes_per_sec) = throttle {
        plan = plan.rule(Rule::new(Fault::Throttle { bytes_per_sec }));
    }
    let proxy = FaultProxy::start_on(listen, upstream, plan);
    println!("listening on {}", proxy.endpoint());
    std::io::stdout().flush().expect("stdout");
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    let counts: Vec<String> = NAMES
        .iter()
        .map(|name| format!("\"{name}\": {}", proxy.injected(kind(name))))
        .collect();
    println!(
        "{{\"passed\": {}, {}, \"throttle\": {}}}",
        proxy.passed(),
        counts.join(", "),
        proxy.injected(Fault::Throttle { bytes_per_sec: 1 })
    );
}
