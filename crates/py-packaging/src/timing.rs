//! Time spent per stage of a run, summed over threads (for `--timings` and the benchmark).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A stage of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Staging templates and copying artifact files (ELF edits included).
    Populate,
    /// ELF reading and editing (part of populate; thread time).
    Elf,
    /// Writing the devel tarball.
    DevelTarball,
    /// Writing wheels (the `setup.py` evaluation included).
    Wheels,
    /// Building and normalizing the sdist.
    Sdist,
}

const STAGES: [Stage; 5] = [
    Stage::Populate,
    Stage::Elf,
    Stage::DevelTarball,
    Stage::Wheels,
    Stage::Sdist,
];

static NANOS: [AtomicU64; 5] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];

impl Stage {
    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Populate => "populate",
            Stage::Elf => "elf (thread time)",
            Stage::DevelTarball => "devel tarball",
            Stage::Wheels => "wheels",
            Stage::Sdist => "sdist",
        }
    }

    fn index(self) -> usize {
        STAGES.iter().position(|s| *s == self).expect("listed")
    }
}

/// Runs `f`, adding its duration to `stage`.
pub(crate) fn timed<T>(stage: Stage, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    NANOS[stage.index()].fetch_add(nanos, Ordering::Relaxed);
    out
}

/// The time recorded so far per stage.
pub fn report() -> Vec<(Stage, Duration)> {
    STAGES
        .iter()
        .map(|s| {
            (
                *s,
                Duration::from_nanos(NANOS[s.index()].load(Ordering::Relaxed)),
            )
        })
        .collect()
}
