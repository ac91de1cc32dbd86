//! Start-up time: runs each program given `--version` RUNS times (interleaved, output
//! discarded) and prints the median and the 90th percentile wall time of one run.
//!
//!     rustc --edition 2024 -O -o startup crates/elf-patch/examples/startup.rs
//!     ./startup [--runs N] PROGRAM...

#![allow(
    clippy::print_stdout,
    missing_docs,
    reason = "a measurement printed to the terminal"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 1000;
    if args.first().is_some_and(|a| a == "--runs") {
        runs = args[1].parse().expect("--runs N");
        args.drain(..2);
    }
    assert!(!args.is_empty(), "usage: startup [--runs N] PROGRAM...");
    let mut times = vec![Vec::with_capacity(runs); args.len()];
    for _ in 0..runs {
        for (program, t) in args.iter().zip(&mut times) {
            let start = Instant::now();
            let status = Command::new(program)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("spawn");
            t.push(start.elapsed());
            assert!(status.success(), "{program} --version failed");
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (program, mut t) in args.iter().zip(times) {
        t.sort();
        println!(
            "{:>8.3} ms median, {:.3} ms 90th percentile, {runs} runs: {program}",
            ms(t[t.len() / 2]),
            ms(t[t.len() * 9 / 10]),
        );
    }
}
