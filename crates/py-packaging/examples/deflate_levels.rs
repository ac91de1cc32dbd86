//! Raw-deflate size and time of every level of zlib-rs or libdeflate over the files named on
//! stdin (one path a line), each file compressed on its own, whole, as a wheel entry is. The
//! table behind the wheel writer's level (`crates/py-packaging/README.md`).
//!
//!     find /usr/lib/x86_64-linux-gnu -name '*.so*' -type f |
//!         cargo run --release -p rock-ci-py-packaging --example deflate_levels libdeflate [LEVEL...]
//!
//! The first argument is the engine (`libdeflate`, the wheel writer's, or `zlib-rs`); levels
//! 1 to 9 without more arguments. Seconds are wall time on one thread (run one level under
//! `time` for CPU time).

use std::io::{BufRead as _, Write as _};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let engine = args.next().unwrap_or_else(|| "libdeflate".to_owned());
    if engine != "libdeflate" && engine != "zlib-rs" {
        return Err(format!("unknown engine `{engine}` (libdeflate or zlib-rs)").into());
    }
    let mut levels: Vec<u32> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    if levels.is_empty() {
        levels = (1..=9).collect();
    }
    let mut files = Vec::new();
    for line in std::io::stdin().lock().lines() {
        files.push(fs_err::read(line?)?);
    }
    let input: usize = files.iter().map(Vec::len).sum();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{engine}: {} files, {input} bytes", files.len())?;
    writeln!(out, "level | bytes | ratio | seconds | MB/s")?;
    for level in levels {
        let start = Instant::now();
        let mut total = 0;
        for data in &files {
            total += if engine == "libdeflate" {
                let lvl = libdeflater::CompressionLvl::new(i32::try_from(level)?)
                    .map_err(|e| format!("level {level}: {e:?}"))?;
                let mut c = libdeflater::Compressor::new(lvl);
                let mut buf = vec![0; c.deflate_compress_bound(data.len())];
                c.deflate_compress(data, &mut buf)?
            } else {
                let mut enc = flate2::write::DeflateEncoder::new(
                    Vec::with_capacity(data.len() / 2),
                    flate2::Compression::new(level),
                );
                enc.write_all(data)?;
                enc.finish()?.len()
            };
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
