//! Raw-deflate size and time of every zlib-rs level over the files named on stdin (one path
//! a line), each file compressed on its own as a wheel entry is. The table behind the wheel
//! writer's level (`crates/py-packaging/README.md`).
//!
//!     find /usr/lib/x86_64-linux-gnu -name '*.so*' -type f |
//!         cargo run --release -p py-packaging --example deflate_levels [LEVEL...]
//!
//! Levels 1 to 9 without arguments; seconds are wall time (run one level under `time` for
//! CPU time).

use std::io::{BufRead as _, Write as _};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut files = Vec::new();
    for line in std::io::stdin().lock().lines() {
        files.push(fs_err::read(line?)?);
    }
    let input: usize = files.iter().map(Vec::len).sum();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{} files, {input} bytes", files.len())?;
    writeln!(out, "level | bytes | ratio | seconds | MB/s")?;
    let mut levels: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    if levels.is_empty() {
        levels = (1..=9).collect();
    }
    for level in levels {
        let start = Instant::now();
        let mut total = 0;
        for data in &files {
            let mut enc = flate2::write::DeflateEncoder::new(
                Vec::with_capacity(data.len() / 2),
                flate2::Compression::new(level),
            );
            enc.write_all(data)?;
            total += enc.finish()?.len();
        }
        let secs = start.elapsed().as_secs_f64();
        #[expect(clippy::cast_precision_loss, reason = "a report")]
        let (ratio, rate) = (total as f64 / input as f64, input as f64 / secs / 1e6);
        writeln!(
            out,
            "{level} | {total} | {ratio:.4} | {secs:.2} | {rate:.0}"
        )?;
    }
    Ok(())
}
