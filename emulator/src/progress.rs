//! Progress on stderr while a run goes on: a bar on a terminal (virtual time
//! reached, events/s, ETA), a plain line every few seconds otherwise, nothing
//! when quiet. It only reads the engine's counters; it never touches the model.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use actix::prelude::*;
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

/// Draws progress until the run is done: a [`Drawer`] actor on an actix
/// system of its own thread, so drawing never runs on a partition's thread.
pub struct Reporter {
    handle: Option<JoinHandle<()>>,
}

impl Reporter {
    pub fn start(progress: Arc<Progress>, end: SimTime, mode: Mode) -> Self {
        if mode == Mode::Quiet {
            return Reporter { handle: None };
        }
        let handle = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                else {
                    return;
                };
                let system = actix_rt::System::with_tokio_rt(move || rt);
                system.block_on(async move {
                    Drawer::new(progress, end, mode).start();
                });
                let _ = system.run();
            })
            .ok();
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
const TICK: Duration = Duration::from_millis(100);
const LINE_EVERY: Duration = Duration::from_secs(5);

/// Reads the engine's counters every tick and draws them; stops its
/// system once the engine is done.
struct Drawer {
    progress: Arc<Progress>,
    end: SimTime,
    started: Instant,
    last_line: Instant,
    bar: Option<ProgressBar>,
}

impl Drawer {
    fn new(progress: Arc<Progress>, end: SimTime, mode: Mode) -> Self {
        let bar = (mode == Mode::Bar).then(|| {
            let pb = ProgressBar::new(STEPS);
            let style = ProgressStyle::with_template(
                "{spinner} {bar:24} {percent:>3}% {elapsed}, ETA {eta} | {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            pb.set_style(style);
            pb
        });
        let now = Instant::now();
        Drawer {
            progress,
            end,
            started: now,
            last_line: now,
            bar,
        }
    }

    fn tick(&mut self) {
        let (t, events) = (self.progress.virtual_time(), self.progress.events());
        let wall = self.started.elapsed();
        match &self.bar {
            Some(pb) => {
                pb.set_position(fraction(t, self.end));
                pb.set_message(status(t, self.end, events, wall));
            }
            None if self.last_line.elapsed() >= LINE_EVERY => {
                self.last_line = Instant::now();
                eprintln!(
                    "progress: {:>3}%  {}",
                    fraction(t, self.end) * 100 / STEPS,
                    status(t, self.end, events, wall)
                );
            }
            None => {}
        }
    }
}

impl Actor for Drawer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(TICK, |act, _| {
            if act.progress.done.load(Ordering::Relaxed) {
                if let Some(pb) = &act.bar {
                    pb.finish_and_clear();
                }
                System::current().stop();
            } else {
                act.tick();
            }
        });
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
