//! Progress of transfers when stderr is a terminal: one overall bar (bytes done of the total,
//! rate, time left, files left) above one bar per transfer in flight, both moved by bytes as
//! they arrive. Nothing extra otherwise (the tools print one line per finished artifact and a
//! totals line, which is what CI logs want).

use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use storage_backend::Reporter;

/// The bars on the terminal, if any: log lines are written between redraws.
static BARS: OnceLock<MultiProgress> = OnceLock::new();

/// Log output to stderr that lifts the progress bars out of the way while a line is written
/// (a `tracing_subscriber` writer).
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match BARS.get() {
            Some(bars) => bars.suspend(|| std::io::stderr().write(buf)),
            None => std::io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl tracing_subscriber::fmt::MakeWriter<'_> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&self) -> Self::Writer {
        LogWriter
    }
}

/// A [`Reporter`] drawing byte progress bars on a terminal.
pub struct Progress {
    multi: Option<MultiProgress>,
    bars: Mutex<HashMap<usize, ProgressBar>>,
    next: AtomicUsize,
    /// The overall bar, with the number of files not yet done.
    overall: Option<(ProgressBar, AtomicUsize)>,
}

impl Progress {
    /// Bars when stderr is a terminal and `quiet` is off; silent otherwise.
    pub fn for_stderr(quiet: bool) -> Self {
        let multi = (!quiet && std::io::stderr().is_terminal()).then(|| {
            BARS.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
                .clone()
        });
        Self {
            multi,
            bars: Mutex::new(HashMap::new()),
            next: AtomicUsize::new(1),
            overall: None,
        }
    }

    /// Adds the overall bar: `files` transfers of `bytes` in all.
    #[must_use]
    pub fn with_totals(mut self, files: usize, bytes: u64) -> Self {
        if let Some(multi) = &self.multi {
            let bar = multi.add(ProgressBar::new(bytes));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:.bold} [{bar:20}] {bytes:>9}/{total_bytes:<9} {bytes_per_sec:>11} ETA {eta:<3} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_prefix("Total");
            bar.set_message(format!("{files} left"));
            bar.enable_steady_tick(std::time::Duration::from_millis(250));
            self.overall = Some((bar, AtomicUsize::new(files)));
        }
        self
    }

    fn bars(&self) -> std::sync::MutexGuard<'_, HashMap<usize, ProgressBar>> {
        self.bars
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Reporter for Progress {
    fn on_transfer_start(&self, name: &str, size: u64) -> usize {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Some(multi) = &self.multi {
            let bar = multi.add(ProgressBar::new(size));
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg:32!} {bar:16} {bytes:>9}/{total_bytes:<9} {bytes_per_sec:>11}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message(name.rsplit('/').next().unwrap_or(name).to_owned());
            self.bars().insert(id, bar);
        }
        id
    }

    fn on_transfer_progress(&self, id: usize, bytes: u64) {
        if let Some(bar) = self.bars().get(&id) {
            bar.inc(bytes);
        }
        if let Some((bar, _)) = &self.overall {
            bar.inc(bytes);
        }
    }

    fn on_transfer_complete(&self, id: usize) {
        if let Some(bar) = self.bars().remove(&id) {
            bar.finish_and_clear();
        }
        if let Some((bar, left)) = &self.overall {
            let before = left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .unwrap_or(0);
            let now = before.saturating_sub(1);
            bar.set_message(format!("{now} left"));
            if now == 0 {
                bar.finish_and_clear();
            }
        }
    }
}
