//! The scheduler's log records (docs/events.md), one type per event.

use serde::Serialize;

#[derive(Serialize)]
pub(super) struct ArriveLog {
    pub(super) task: u64,
    pub(super) tenant: String,
}

#[derive(Serialize)]
pub(super) struct QueueLog {
    pub(super) task: u64,
    pub(super) queue_len: usize,
}

#[derive(Serialize)]
pub(super) struct DispatchLog<'a> {
    pub(super) task: u64,
    pub(super) server: &'a str,
    pub(super) queued_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) violation: Option<f64>,
}

#[derive(Serialize)]
pub(super) struct EvictedLog<'a> {
    pub(super) task: u64,
    pub(super) server: &'a str,
    pub(super) cause: &'static str,
    pub(super) evictions: u32,
}

#[derive(Serialize)]
pub(super) struct PreemptLog<'a> {
    pub(super) task: u64,
    pub(super) priority: u8,
    pub(super) victim: u64,
    pub(super) victim_priority: u8,
    pub(super) server: &'a str,
    /// The other victims of a task of several slots (issue 39).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) also: Vec<u64>,
}

#[derive(Serialize)]
pub(super) struct FlowLog {
    pub(super) task: u64,
    pub(super) path: Vec<String>,
    pub(super) bps: u64,
}

#[derive(Serialize)]
pub(super) struct FlowRefusedLog<'a> {
    pub(super) task: u64,
    pub(super) server: &'a str,
    pub(super) bps: u64,
}

/// An order to sleep or wake a server, sent for an external program
/// (protocol v3).
#[derive(Serialize)]
pub(super) struct PowerOrderLog<'a> {
    pub(super) server: &'a str,
    pub(super) to: &'static str,
}

#[derive(Serialize)]
pub(super) struct ReleaseLog<'a> {
    pub(super) task: u64,
    pub(super) server: &'a str,
}

#[derive(Serialize)]
pub(super) struct ClassifyLog {
    pub(super) task: u64,
    pub(super) app: u32,
    pub(super) best_class: usize,
    pub(super) demand: f64,
}

#[derive(Serialize)]
pub(super) struct ClassifyKindLog {
    pub(super) task: u64,
    pub(super) workload: String,
    pub(super) best_class: usize,
    pub(super) demand: f64,
    /// Tasks of the kind that waited for this classification.
    pub(super) waiting: usize,
}

#[derive(Serialize)]
pub(super) struct ReclassifyLog<'a> {
    pub(super) task: u64,
    pub(super) server: &'a str,
    pub(super) rate: f64,
    pub(super) expected: f64,
}

#[derive(Serialize)]
pub(super) struct MigrateLog<'a> {
    pub(super) task: u64,
    /// `faster`: the task itself goes where it should run faster;
    /// `isolate`: a co-runner moves away from a degraded task.
    pub(super) why: &'static str,
    pub(super) from: &'a str,
    pub(super) to: &'a str,
    /// Work left by the task's latest rate report (at placement, its
    /// declared work, for the built-in moves); an external program's
    /// move logs it only when a rate report came, and the rates never:
    /// the scheduler knows neither without rate monitoring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) left_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) rate_now: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) rate_expected: Option<f64>,
}
