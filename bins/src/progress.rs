//! Progress of transfers when stderr is a terminal: one overall bar (bytes done of the total,
//! rate, time left, files left) above one bar per transfer in flight, both moved by bytes as
//! they arrive. Nothing extra otherwise (the tools print one line per finished artifact and a
//! totals line, which is what CI logs want).

use std::collections::{HashMap, VecDeque};
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{
    HumanBytes, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle,
    style::ProgressTracker,
};
use storage_backend::Reporter;

/// The bars on the terminal, if any: log lines are written between redraws.
static BARS: OnceLock<MultiProgress> = OnceLock::new();

/// Values never written to the log (see [`hide_in_logs`]).
static SECRETS: OnceLock<Vec<String>> = OnceLock::new();

/// Makes [`LogWriter`] show each of `secrets` as `***` (empty and very short values are left
/// alone, as hiding them would blank unrelated text). Set once, before logging starts.
pub fn hide_in_logs(secrets: impl IntoIterator<Item = String>) {
    let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= 3).collect();
    // Longest first, so that a secret containing another is hidden whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    let _ = SECRETS.set(secrets);
}

/// `line` with every secret set by [`hide_in_logs`] replaced by `***`, or `None` when it
/// holds none.
fn without_secrets(line: &[u8]) -> Option<Vec<u8>> {
    let secrets = SECRETS.get()?;
    let text = String::from_utf8_lossy(line);
    if !secrets.iter().any(|s| text.contains(s.as_str())) {
        return None;
    }
    let mut text = text.into_owned();
    for secret in secrets {
        text = text.replace(secret.as_str(), "***");
    }
    Some(text.into_bytes())
}

/// Log output to stderr that lifts the progress bars out of the way while a line is written
/// and hides the secrets named by [`hide_in_logs`] (a `tracing_subscriber` writer, which
/// hands over one whole event per write).
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let hidden = without_secrets(buf);
        let bytes = hidden.as_deref().unwrap_or(buf);
        match BARS.get() {
            Some(bars) => bars.suspend(|| std::io::stderr().write_all(bytes)),
            None => std::io::stderr().write_all(bytes),
        }?;
        Ok(buf.len())
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
    /// Transfers started and finished, and the bytes moved, bars or not.
    started: AtomicUsize,
    finished: AtomicUsize,
    bytes: std::sync::atomic::AtomicU64,
}

/// What a [`Progress`] saw: transfers started and finished, and the bytes moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    /// Transfers started.
    pub started: usize,
    /// Transfers finished.
    pub finished: usize,
    /// Bytes moved.
    pub bytes: u64,
}

/// The reporter factory of the fetch pipeline: a [`Progress`] on stderr (bars unless `quiet`)
/// with the overall bar of the transfer's totals.
pub fn reporter_factory(quiet: bool) -> impl Fn(usize, u64) -> Arc<dyn Reporter> + Send + Sync {
    move |files, bytes| Arc::new(Progress::for_stderr(quiet).with_totals(files, bytes))
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
            started: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            bytes: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The transfers seen so far.
    pub fn tally(&self) -> Tally {
        Tally {
            started: self.started.load(Ordering::Relaxed),
            finished: self.finished.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }

    /// Adds the overall bar: `files` transfers of `bytes` in all.
    #[must_use]
    pub fn with_totals(mut self, files: usize, bytes: u64) -> Self {
        if let Some(multi) = &self.multi {
            let bar = multi.add(ProgressBar::new(bytes));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:.bold} [{bar:20}] {bytes:>9}/{total_bytes:<9} {rate:>11} ETA {left:<7} {msg}",
                )
                .map_or_else(
                    |_| ProgressStyle::default_bar(),
                    |style| {
                        style
                            .with_key("rate", Speed::new(Shown::Rate))
                            .with_key("left", Speed::new(Shown::TimeLeft))
                    },
                )
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
        self.started.fetch_add(1, Ordering::Relaxed);
        if let Some(multi) = &self.multi {
            let bar = multi.add(ProgressBar::new(size));
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg:32!} {bar:16} {bytes:>9}/{total_bytes:<9} {rate:>11}",
                )
                .map_or_else(
                    |_| ProgressStyle::default_bar(),
                    |style| style.with_key("rate", Speed::new(Shown::Rate)),
                ),
            );
            bar.set_message(name.rsplit('/').next().unwrap_or(name).to_owned());
            self.bars().insert(id, bar);
        }
        id
    }

    fn on_transfer_progress(&self, id: usize, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if let Some(bar) = self.bars().get(&id) {
            bar.inc(bytes);
        }
        if let Some((bar, _)) = &self.overall {
            bar.inc(bytes);
        }
    }

    fn on_transfer_complete(&self, id: usize) {
        self.finished.fetch_add(1, Ordering::Relaxed);
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

/// How long a rate is averaged over: long enough to smooth a bursty link, short enough to
/// follow a change of speed within seconds.
const WINDOW: Duration = Duration::from_secs(5);
/// No rate is shown until bytes have been arriving for this long: one burst of the first
/// few buffers says nothing of the link.
const SETTLE: Duration = Duration::from_millis(750);

/// What a [`Speed`] key shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Rate,
    TimeLeft,
}

/// Rate and time left as a reader expects them: measured from when the bytes started to
/// arrive (not from when the bar appeared, which is before the listing and the first request),
/// over the last [`WINDOW`], blank until there is something to go by, and falling to zero
/// when the bytes stop instead of holding an old figure.
#[derive(Debug, Clone)]
struct Speed {
    shown: Shown,
    /// `(when, bytes done)`, oldest first: the last moment seen with nothing done, then one
    /// sample per update; trimmed to one sample at or before the window's start.
    samples: VecDeque<(Instant, u64)>,
}

impl Speed {
    fn new(shown: Shown) -> Self {
        Self {
            shown,
            samples: VecDeque::new(),
        }
    }

    fn record(&mut self, done: u64, now: Instant) {
        // Going back starts over; still waiting for the first byte (nothing new since the
        // only sample), the later moment is the better start.
        if let Some(&(_, last)) = self.samples.back()
            && (done < last || done == last && self.samples.len() == 1)
        {
            self.samples.clear();
        }
        self.samples.push_back((now, done));
        if let Some(start) = now.checked_sub(WINDOW) {
            while self.samples.len() > 2 && self.samples[1].0 <= start {
                self.samples.pop_front();
            }
        }
    }

    /// Bytes per second over the window, `None` before bytes have arrived for [`SETTLE`].
    #[expect(clippy::cast_precision_loss, reason = "a rate shown to 3 digits")]
    fn per_sec(&self, now: Instant) -> Option<f64> {
        let &(since, base) = self.samples.front()?;
        let &(_, done) = self.samples.back()?;
        let elapsed = now.checked_duration_since(since)?;
        if done == base && self.samples.len() == 1 || elapsed < SETTLE {
            return None;
        }
        Some((done - base) as f64 / elapsed.as_secs_f64())
    }

    /// Time to the end at the current rate; `None` while the rate is unknown or zero.
    #[expect(clippy::cast_precision_loss, reason = "a time shown to the second")]
    fn time_left(&self, done: u64, total: u64, now: Instant) -> Option<Duration> {
        let rate = self.per_sec(now).filter(|r| *r > 0.0)?;
        Duration::try_from_secs_f64(total.saturating_sub(done) as f64 / rate).ok()
    }
}

/// `42s`, `3m05s`, `2h07m`: a time left as it is read at a glance.
fn short_duration(d: Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

impl ProgressTracker for Speed {
    fn clone_box(&self) -> Box<dyn ProgressTracker> {
        Box::new(self.clone())
    }

    fn tick(&mut self, state: &ProgressState, now: Instant) {
        self.record(state.pos(), now);
    }

    fn reset(&mut self, _: &ProgressState, _: Instant) {
        self.samples.clear();
    }

    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a rate of bytes, never negative, shown to 3 digits"
    )]
    fn write(&self, state: &ProgressState, w: &mut dyn std::fmt::Write) {
        let now = Instant::now();
        let text = match self.shown {
            Shown::Rate => self
                .per_sec(now)
                .map(|r| format!("{}/s", HumanBytes(r as u64))),
            Shown::TimeLeft => state
                .len()
                .and_then(|total| self.time_left(state.pos(), total, now))
                .map(short_duration),
        };
        let _ = w.write_str(text.as_deref().unwrap_or("-"));
    }
}

#[cfg(test)]
mod tests;
