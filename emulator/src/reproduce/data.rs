//! The experiments as data, what the experiment files (`experiments.rs`)
//! and their `[[calibration]]` blocks (`calibration.rs`) both read and
//! write: a leaf, so that neither imports the other's types.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use crate::scenario::Override;

/// A paper value that is a bound, not a measurement ("the overheads from
/// queuing are less than 1.5 %", Paragon §6.1): the row passes when its
/// mean is on the stated side of `paper`, and needs no tolerance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    AtMost,
    AtLeast,
}

impl Bound {
    /// Whether `value` is on the bound's side of `paper`.
    pub fn holds(self, value: f64, paper: f64) -> bool {
        match self {
            Bound::AtMost => value <= paper + 1e-12,
            Bound::AtLeast => value >= paper - 1e-12,
        }
    }

    /// How the tables show the paper's value: `≤ 0.015`.
    pub fn symbol(self) -> &'static str {
        match self {
            Bound::AtMost => "≤",
            Bound::AtLeast => "≥",
        }
    }

    /// The word `bound` takes in the experiment file and the csv.
    pub fn word(self) -> &'static str {
        match self {
            Bound::AtMost => "at-most",
            Bound::AtLeast => "at-least",
        }
    }
}

/// Whether an experiment checks a statistic of the inputs the paper
/// reports (calibration) or one of its results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Input,
    #[default]
    Output,
}

/// Extra plots an experiment asks for (bars of paper vs ours are always drawn).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Plot {
    /// Paragon Fig. 8: each application's performance, worst to best, one
    /// line per row, with the paper's QoS share marked on the 0.95 line.
    PerfCurve,
    /// Paragon Fig. 10(d): the running applications' mean performance over
    /// time, one line per row.
    PerfOverTime,
    /// Thesis Fig. 9.2: the mean response time of class-0 tasks by the
    /// priority evictions they suffered (1, 2, 3, 4, 5 or more), one bar
    /// per row, averaged over seeds.
    ByEvictions,
    /// Thesis Table 4.2 / Figure 4.3 style: switches powered over time,
    /// one line per row.
    SwitchesOn,
}

/// One experiment, validated: its scenario loads with every row's overrides.
#[derive(Debug)]
pub struct Experiment {
    pub id: String,
    pub title: String,
    /// The scenario file as given, relative to the experiment file
    /// (rows may name their own).
    pub scenario: String,
    pub citation: String,
    pub kind: Kind,
    pub quick: bool,
    pub note: Option<String>,
    pub plots: Vec<Plot>,
    pub rows: Vec<Row>,
    pub orderings: Vec<Ordering>,
}

/// One policy (or configuration) of an experiment.
#[derive(Debug)]
pub struct Row {
    pub label: String,
    /// The row's scenario: its own, or the experiment's.
    pub scenario: String,
    pub scenario_path: PathBuf,
    pub scenario_text: Arc<String>,
    /// The experiment's overrides followed by the row's own.
    pub overrides: Vec<Override>,
    pub metric: String,
    pub paper: Option<f64>,
    /// `paper` is a bound on the mean rather than a value to be near.
    pub bound: Option<Bound>,
    pub citation: Option<String>,
    pub tolerance: Option<f64>,
    pub open: Option<String>,
    /// Calibrated (a target of a `[[calibration]]`) or validated.
    pub role: Role,
}

/// "`higher` is above `lower`" on every seed (`strict`: strictly above).
#[derive(Debug)]
pub struct Ordering {
    pub claim: String,
    pub higher: usize,
    pub lower: usize,
    pub strict: bool,
    pub citation: Option<String>,
    pub open: Option<String>,
}

/// Whether a row was a target of the fit, or never seen by it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// Named by a `[[calibration]]`'s targets: the fit read it.
    Calibrated,
    /// Never read by a fit: what the model predicts with the fitted values held.
    #[default]
    Validated,
}

impl Role {
    pub fn word(self) -> &'static str {
        match self {
            Role::Calibrated => "calibrated",
            Role::Validated => "validated",
        }
    }
}
