//! What a tenant tallies beside its tasks' times: the inputs a generator
//! drew and the load its applications offer.

use dcemu_topology::SimTime;

use crate::google;
use crate::kernel::Metrics;

/// The inputs a Google-like generator drew, to set beside the statistics
/// the thesis reports about its trace: the class mix and mean CPU demand of
/// Table 5.2 and the arrival peaks and longest gap of Table 9.2.
#[derive(Default)]
pub(super) struct Drawn {
    pub(super) per_class: [u64; 12],
    /// CPU demand Δ of each task, cpu·s of the normalised capacity.
    pub(super) demand: Vec<f64>,
    /// Submission times, in order.
    pub(super) at: Vec<SimTime>,
}

/// Counters of tasks submitted per class (`tasks_submitted_class_<p>`).
pub(super) const SUBMITTED_BY_CLASS: [&str; 12] = [
    "tasks_submitted_class_0",
    "tasks_submitted_class_1",
    "tasks_submitted_class_2",
    "tasks_submitted_class_3",
    "tasks_submitted_class_4",
    "tasks_submitted_class_5",
    "tasks_submitted_class_6",
    "tasks_submitted_class_7",
    "tasks_submitted_class_8",
    "tasks_submitted_class_9",
    "tasks_submitted_class_10",
    "tasks_submitted_class_11",
];

impl Drawn {
    pub(super) fn record(&mut self, now: SimTime, t: &google::GoogleTask) {
        if let Some(c) = self.per_class.get_mut(t.priority as usize) {
            *c += 1;
        }
        self.demand.push(t.cpu_demand);
        self.at.push(now);
    }

    /// The most submissions in any window of `window` (sliding, closed on
    /// the left, open on the right).
    pub(super) fn max_in(&self, window: SimTime) -> u64 {
        let (mut best, mut lo) = (0usize, 0usize);
        for hi in 0..self.at.len() {
            while self.at[hi] - self.at[lo] >= window {
                lo += 1;
            }
            best = best.max(hi + 1 - lo);
        }
        best as u64
    }

    pub(super) fn finish(&mut self, out: &mut Metrics) {
        for (name, &n) in SUBMITTED_BY_CLASS.iter().zip(&self.per_class) {
            if n > 0 {
                out.add(name, n);
            }
        }
        out.append_samples("task_cpu_demand_s", std::mem::take(&mut self.demand));
        out.add("arrivals_max_1min", self.max_in(60_000_000_000));
        out.add("arrivals_max_10min", self.max_in(600_000_000_000));
        let gap = self.at.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        out.add_f64("arrival_gap_s_max", gap as f64 / 1e9);
    }
}

/// What a tenant's catalog applications ask of the cluster (Paragon §5
/// classes load by "the required core count" against the cores available;
/// Fig. 11 draws it from arrivals and ideal execution times).
#[derive(Default)]
pub(super) struct Offered {
    pub(super) core_s: f64,
}

impl Offered {
    pub(super) fn record(&mut self, cores: u32, ideal_s: f64) {
        self.core_s += f64::from(cores) * ideal_s;
    }

    /// This tenant's share of the mean required core count over the
    /// application tenants' common `window`, as a share of the cluster's
    /// `cores`; the shares of all tenants add up to the cluster's load.
    pub(super) fn load(&self, cores: u64, (from, to): (SimTime, SimTime)) -> Option<f64> {
        let window = to.checked_sub(from)?;
        (window > 0 && cores > 0).then(|| self.core_s / (cores as f64 * window as f64 / 1e9))
    }
}

/// Sample series of response times per priority class (thesis Figure 7.5).
pub const RESPONSE_BY_CLASS: [&str; 12] = [
    "response_s_class_0",
    "response_s_class_1",
    "response_s_class_2",
    "response_s_class_3",
    "response_s_class_4",
    "response_s_class_5",
    "response_s_class_6",
    "response_s_class_7",
    "response_s_class_8",
    "response_s_class_9",
    "response_s_class_10",
    "response_s_class_11",
];
