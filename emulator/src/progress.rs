//! Progress on stderr while a run goes on: a bar on a terminal (virtual time
//! reached, events/s, ETA), a plain line every few seconds otherwise, nothing
//! when quiet. It only reads the engine's counters; it never touches the model.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dcemu_topology::{SimTime, format_sim_time};
use indicatif::{ProgressBar, ProgressStyle};

use crate::engine::Progress;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Bar,
    Lines,
    Quiet,
}

impl Mode {
    /// A bar when stderr is a terminal, plain lines otherwise, nothing if quiet.
    pub fn detect(quiet: bool) -> Self {
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }
}

/// Draws progress on its own thread until the run is done.
pub struct Reporter {
    handle: Option<JoinHandle<()>>,
}

impl Reporter {
    pub fn start(progress: Arc<Progress>, end: SimTime, mode: Mode) -> Self {
        let handle = match mode {
            Mode::Quiet => None,
            Mode::Bar => std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || bar(&progress, end))
                .ok(),
            Mode::Lines => std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || lines(&progress, end))
                .ok(),
        };
        Reporter { handle }
    }

    /// Waits for the display to finish (the engine must have set `done`).
    pub fn finish(mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

const STEPS: u64 = 10_000;

fn bar(progress: &Progress, end: SimTime) {
    let pb = ProgressBar::new(STEPS);
    let style = ProgressStyle::with_template(
        "{spinner} {bar:24} {percent:>3}% {elapsed}, ETA {eta} | {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    pb.set_style(style);
    let started = Instant::now();
    while !progress.done.load(Ordering::Relaxed) {
        let (t, events) = (progress.virtual_time(), progress.events());
        pb.set_position(fraction(t, end));
        pb.set_message(status(t, end, events, started.elapsed()));
        std::thread::sleep(Duration::from_millis(100));
    }
    pb.finish_and_clear();
}

fn lines(progress: &Progress, end: SimTime) {
    let started = Instant::now();
    let mut last = Instant::now();
    while !progress.done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if last.elapsed() >= Duration::from_secs(5) {
            last = Instant::now();
            let (t, events) = (progress.virtual_time(), progress.events());
            eprintln!(
                "progress: {:>3}%  {}",
                fraction(t, end) * 100 / STEPS,
                status(t, end, events, started.elapsed())
            );
        }
    }
}

fn fraction(t: SimTime, end: SimTime) -> u64 {
    if end == 0 {
        return STEPS;
    }
    ((u128::from(t.min(end)) * u128::from(STEPS)) / u128::from(end)) as u64
}

fn status(t: SimTime, end: SimTime, events: u64, wall: Duration) -> String {
    let rate = events as f64 / wall.as_secs_f64().max(1e-9);
    format!(
        "virtual {} / {} | {} events, {}/s",
        whole_seconds(t),
        whole_seconds(end),
        human_count(events as f64),
        human_count(rate)
    )
}

/// Virtual time for a glance: whole seconds once past the first second.
fn whole_seconds(t: SimTime) -> String {
    const SECOND: SimTime = 1_000_000_000;
    format_sim_time(if t >= SECOND { t - t % SECOND } else { t })
}

/// `1234567` → `1.23M`.
pub fn human_count(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}
