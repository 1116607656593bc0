//! Tasks of the Google traces, from their events: the rule both Google
//! formats share (`docs/traces.md`, "Google traces: from events to tasks").
//!
//! - A task (job ID and task index; collection ID and instance index in
//!   2019) **arrives** at its first SUBMIT.
//! - Its **duration** is that of the run that ended it: from the last
//!   SCHEDULE to the FINISH, FAIL, KILL or LOST event (a run of 0 µs is read
//!   as 1 µs). An EVICT sends the task back to pending: the evicted run's
//!   work is lost, as in Borg; the emulator's own scheduler makes its own
//!   evictions.
//! - A task that ends (FAIL, KILL, LOST) without having run is **dropped**;
//!   a later SUBMIT of the same task is a new task.
//! - UPDATE events change the priority and requests of a task in flight
//!   (and, in 2011, its different-machine restriction).
//! - A task's job is the first part of its key (job ID; collection ID):
//!   the tenant reports job response times and keeps restricted tasks of
//!   one job apart ([`crate::trace_jobs`]).
//! - A task still unresolved [`ImportOptions::lookahead`] after its arrival
//!   (by the trace's clock), or at the end of the file, is released: if it
//!   is running it is **unfinished** and runs until the end of the run
//!   (duration `run_end - arrival`); if it never started it is **dropped**.
//!   Events about a released task are then ignored. This is what keeps
//!   memory bounded: only tasks submitted within the lookahead are held.
//! - Events about tasks never submitted in the file (the trace's tasks that
//!   were submitted before it began, without a SUBMIT at time 0) are
//!   ignored and counted.
//!
//! Tasks come out in order of arrival, because the file is read in time
//! order and a task is released only when every earlier arrival is.

use std::collections::BTreeMap;

use dcemu_topology::SimTime;

use super::common::{DefectKind, ImportOptions, Tally};
use crate::trace::{AppRef, TraceJob, TraceTask};

/// What an event does to a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Submit,
    Schedule,
    Evict,
    /// FINISH, FAIL, KILL, LOST: the task's run (if any) ends.
    End,
    /// UPDATE_PENDING, UPDATE_RUNNING (and 2019's QUEUE / ENABLE, which change nothing).
    Update,
}

/// One event, parsed.
pub struct EventRow {
    /// Nanoseconds; `None` for the traces' "after the end" sentinel.
    pub time: Option<SimTime>,
    pub key: (u64, u64),
    pub event: Event,
    pub priority: Option<u8>,
    /// Normalised CPU and memory requests, when the row has them.
    pub cpu: Option<f64>,
    pub memory: Option<f64>,
    /// Google 2011's different-machine restriction, when the row has it.
    pub apart: Option<bool>,
    pub line: u64,
}

struct InFlight {
    key: (u64, u64),
    arrival: SimTime,
    started: Option<SimTime>,
    priority: Option<u8>,
    cpu: Option<f64>,
    memory: Option<f64>,
    apart: bool,
    line: u64,
    /// Set once resolved: the run's duration, or `None` when dropped.
    outcome: Option<Option<SimTime>>,
}

/// The tasks in flight and the rule above.
pub struct Lifecycle {
    /// By order of first submission.
    queue: BTreeMap<u64, InFlight>,
    /// Unresolved tasks' sequence numbers by key.
    by_key: BTreeMap<(u64, u64), u64>,
    next_seq: u64,
    /// Latest event time read.
    pub now: SimTime,
    cores_per_unit: f64,
    gb_per_unit: f64,
    default_priority: u8,
    lookahead: SimTime,
    run_end: SimTime,
}

impl Lifecycle {
    pub fn new(o: &ImportOptions) -> Self {
        Lifecycle {
            queue: BTreeMap::new(),
            by_key: BTreeMap::new(),
            next_seq: 0,
            now: 0,
            cores_per_unit: o.cores_per_unit,
            gb_per_unit: o.gb_per_unit,
            default_priority: o.default_priority,
            lookahead: o.lookahead,
            run_end: o.run_end,
        }
    }

    /// Tasks held in memory.
    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    pub fn apply(&mut self, e: EventRow, tally: &mut Tally) {
        let Some(time) = e.time else {
            // After the end of the trace: as if the file ended first.
            return;
        };
        self.now = self.now.max(time);
        let seq = self.by_key.get(&e.key).copied();
        if e.event == Event::Submit && seq.is_none() {
            let seq = self.next_seq;
            self.next_seq += 1;
            self.by_key.insert(e.key, seq);
            self.queue.insert(
                seq,
                InFlight {
                    key: e.key,
                    arrival: time,
                    started: None,
                    priority: e.priority,
                    cpu: e.cpu,
                    memory: e.memory,
                    apart: e.apart.unwrap_or(false),
                    line: e.line,
                    outcome: None,
                },
            );
            return;
        }
        let Some(task) = seq.and_then(|s| self.queue.get_mut(&s)) else {
            tally.stats.events_ignored += 1;
            tally.defect(DefectKind::GoogleEventNotInFlight, e.line, None);
            return;
        };
        if e.priority.is_some() {
            task.priority = e.priority;
        }
        if e.cpu.is_some() {
            task.cpu = e.cpu;
        }
        if e.memory.is_some() {
            task.memory = e.memory;
        }
        if let Some(apart) = e.apart {
            task.apart = apart;
        }
        match e.event {
            Event::Submit | Event::Update => {}
            Event::Schedule => task.started = Some(time),
            Event::Evict => task.started = None,
            Event::End => {
                task.outcome = Some(task.started.map(|s| {
                    time.saturating_sub(s)
                        .max(super::common::micros(1).unwrap_or(1))
                }));
                self.by_key.remove(&e.key);
            }
        }
    }

    /// The next task whose arrival is final: every earlier one is resolved.
    /// At the end of the file (`eof`) every task in flight is released.
    pub fn pop(&mut self, eof: bool, tally: &mut Tally) -> Option<TraceTask> {
        loop {
            let entry = self.queue.first_entry()?;
            let t = entry.get();
            let outcome = match t.outcome {
                Some(o) => o,
                None if eof || self.now >= t.arrival.saturating_add(self.lookahead) => {
                    match t.started {
                        Some(_) => {
                            tally.stats.tasks_unfinished += 1;
                            Some(self.run_end.saturating_sub(t.arrival).max(1))
                        }
                        None => None,
                    }
                }
                None => return None,
            };
            let seq = *entry.key();
            let t = entry.remove();
            if t.outcome.is_none() && self.by_key.get(&t.key) == Some(&seq) {
                // Released: later events of this key are ignored.
                self.by_key.remove(&t.key);
            }
            let Some(duration) = outcome else {
                tally.stats.tasks_dropped += 1;
                continue;
            };
            let cpu = t.cpu.unwrap_or(0.0) * self.cores_per_unit;
            if cpu <= 0.0 {
                tally.defect(DefectKind::GoogleCpuRequestMissing, t.line, None);
            }
            return Some(TraceTask {
                arrival: t.arrival,
                priority: t.priority.unwrap_or(self.default_priority),
                // The emulator gives a task whole cores (at least one); a
                // missing or zero request still needs a valid record.
                cpu: if cpu > 0.0 { cpu } else { 1e-3 },
                memory_gb: t.memory.unwrap_or(0.0) * self.gb_per_unit,
                duration,
                app: AppRef::None,
                line: t.line,
                requested: 0,
                job: Some(Box::new(TraceJob {
                    key: t.key.0,
                    dag: None,
                    apart: t.apart,
                })),
            });
        }
    }
}
