//! Paper vs ours: per-row statistics over seeds, magnitude and ordering verdicts.

use super::calibration::Role;
use super::experiments::{Experiment, Ordering, Row};

/// The outcome of one check.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Pass,
    Fail,
    /// Fails, and the experiment file explains why (a known gap).
    Open(String),
    /// Marked open, but passes now: the explanation should be removed.
    Closed(String),
    /// Nothing to check (the row has no paper value).
    None,
}

impl Verdict {
    fn judge(ok: bool, open: &Option<String>) -> Verdict {
        match (ok, open) {
            (true, None) => Verdict::Pass,
            (false, None) => Verdict::Fail,
            (false, Some(why)) => Verdict::Open(why.clone()),
            (true, Some(why)) => Verdict::Closed(why.clone()),
        }
    }

    /// The word the tables show.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Open(_) => "open",
            Verdict::Closed(_) => "passes (marked open)",
            Verdict::None => "",
        }
    }

    /// Whether `--check` fails on it: a failure nobody explained, or an
    /// explanation that is no longer true.
    pub fn fails_check(&self) -> bool {
        matches!(self, Verdict::Fail | Verdict::Closed(_))
    }
}

/// One row's values over the seeds.
#[derive(Clone, Debug)]
pub struct RowResult {
    /// Per calibration seed (`--seeds`), in order; `None` where the metric was null.
    pub values: Vec<Option<f64>>,
    pub mean: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Per unseen seed (`--validation-seeds`), in order; empty when the row
    /// did not run on them (a calibrated row, or no validation seeds).
    pub unseen: Vec<Option<f64>>,
    pub unseen_mean: Option<f64>,
    pub magnitude: Verdict,
}

/// The mean of `values`, if every one is known (and there is one).
fn complete_mean(values: &[Option<f64>]) -> Option<f64> {
    let known: Vec<f64> = values.iter().flatten().copied().collect();
    (known.len() == values.len() && !known.is_empty())
        .then(|| known.iter().sum::<f64>() / known.len() as f64)
}

impl RowResult {
    /// A calibrated row is judged on the calibration seeds; a validated
    /// one on those and, when it ran on them, on the unseen seeds too.
    pub fn new(row: &Row, values: Vec<Option<f64>>, unseen: Vec<Option<f64>>) -> RowResult {
        let mean = complete_mean(&values);
        let unseen_mean = complete_mean(&unseen);
        let complete = mean.is_some();
        let known = values.iter().flatten().copied();
        let min = complete.then(|| known.clone().fold(f64::INFINITY, f64::min));
        let max = complete.then(|| known.fold(f64::NEG_INFINITY, f64::max));
        let within = |m: Option<f64>| match (m, row.paper, row.bound, row.tolerance) {
            (Some(m), Some(paper), Some(bound), _) => bound.holds(m, paper),
            (Some(m), Some(paper), None, Some(tol)) => (m - paper).abs() <= tol + 1e-12,
            _ => false,
        };
        let judged = row.paper.is_some() && (row.bound.is_some() || row.tolerance.is_some());
        let magnitude = if judged {
            let unseen_ok =
                row.role == Role::Calibrated || unseen.is_empty() || within(unseen_mean);
            Verdict::judge(within(mean) && unseen_ok, &row.open)
        } else {
            Verdict::None
        };
        RowResult {
            values,
            mean,
            min,
            max,
            unseen,
            unseen_mean,
            magnitude,
        }
    }

    /// Every value, calibration seeds then unseen seeds.
    pub fn all_values(&self) -> impl Iterator<Item = &Option<f64>> {
        self.values.iter().chain(&self.unseen)
    }

    /// Ours minus the paper's, on the mean.
    pub fn diff(&self, row: &Row) -> Option<f64> {
        Some(self.mean? - row.paper?)
    }
}

/// Relative difference under which `>=` and `<=` claims count two values
/// as equal: runs that end in the same state by different event orders
/// (two placements that mirror each other) give sums of ratios of integer
/// nanosecond times that differ in the last digits (1e-16 to 1e-10
/// relative, measured on `distributed/mixes`).
const TIE: f64 = 1e-9;

/// One ordering's outcome on each seed.
#[derive(Clone, Debug)]
pub struct OrderingResult {
    /// Per seed, calibration seeds then unseen seeds: whether the claim
    /// held (`None`: a value was missing).
    pub held: Vec<Option<bool>>,
    pub verdict: Verdict,
}

impl OrderingResult {
    pub fn new(o: &Ordering, rows: &[RowResult]) -> OrderingResult {
        let (hi, lo) = (&rows[o.higher], &rows[o.lower]);
        let held: Vec<Option<bool>> = hi
            .all_values()
            .zip(lo.all_values())
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => Some(if o.strict {
                    a > b
                } else {
                    *a >= *b - TIE * a.abs().max(b.abs())
                }),
                _ => None,
            })
            .collect();
        let ok = !held.is_empty() && held.iter().all(|h| *h == Some(true));
        OrderingResult {
            verdict: Verdict::judge(ok, &o.open),
            held,
        }
    }
}

/// An experiment with its results.
#[derive(Debug)]
pub struct Judged<'a> {
    pub experiment: &'a Experiment,
    pub rows: Vec<RowResult>,
    pub orderings: Vec<OrderingResult>,
    /// Per row, the sorted `perf_norm` of the first seed's run.
    pub perf: Vec<Vec<f64>>,
    /// Per row, the first seed's performance over time.
    pub over_time: Vec<Vec<(f64, f64)>>,
    /// Per row, the mean over seeds of each `response_s_class0_pe_*_mean`
    /// (`None` where no run had such a task).
    pub by_evictions: Vec<Vec<Option<f64>>>,
    /// Per row, the first seed's switches powered over time.
    pub switches_on: Vec<Vec<(f64, f64)>>,
}

impl Judged<'_> {
    /// Every verdict of the experiment, magnitudes first.
    pub fn verdicts(&self) -> impl Iterator<Item = &Verdict> {
        self.rows
            .iter()
            .map(|r| &r.magnitude)
            .chain(self.orderings.iter().map(|o| &o.verdict))
    }
}

/// Counts of verdicts, for the summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub pass: usize,
    pub fail: usize,
    pub open: usize,
    pub closed: usize,
}

impl Tally {
    pub fn add(&mut self, v: &Verdict) {
        match v {
            Verdict::Pass => self.pass += 1,
            Verdict::Fail => self.fail += 1,
            Verdict::Open(_) => self.open += 1,
            Verdict::Closed(_) => self.closed += 1,
            Verdict::None => {}
        }
    }

    pub fn total(&self) -> usize {
        self.pass + self.fail + self.open + self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(paper: Option<f64>, open: Option<&str>) -> Row {
        Row {
            label: "P".into(),
            scenario: String::new(),
            scenario_path: Default::default(),
            scenario_text: Default::default(),
            overrides: Vec::new(),
            metric: "m".into(),
            paper,
            bound: None,
            citation: None,
            tolerance: Some(0.1),
            open: open.map(str::to_string),
            role: Default::default(),
        }
    }

    #[test]
    fn magnitude_is_judged_on_the_mean_within_the_tolerance() {
        let r = RowResult::new(&row(Some(0.5), None), vec![Some(0.35), Some(0.45)], vec![]);
        assert_eq!(r.mean, Some(0.4));
        assert_eq!((r.min, r.max), (Some(0.35), Some(0.45)));
        assert_eq!(r.magnitude, Verdict::Pass);
        let r = RowResult::new(&row(Some(0.79), None), vec![Some(0.4), Some(0.4)], vec![]);
        assert_eq!(r.magnitude, Verdict::Fail);
        assert!((r.diff(&row(Some(0.79), None)).unwrap() + 0.39).abs() < 1e-12);
    }

    #[test]
    fn a_bound_is_judged_by_its_side_on_both_means_without_a_tolerance() {
        use super::super::experiments::Bound;
        let mut r = row(Some(0.015), None);
        (r.bound, r.tolerance) = (Some(Bound::AtMost), None);
        let judge = |r: &Row, seen: f64, unseen: f64| {
            RowResult::new(r, vec![Some(seen)], vec![Some(unseen)]).magnitude
        };
        assert_eq!(judge(&r, 0.0, 0.015), Verdict::Pass);
        assert_eq!(judge(&r, 0.02, 0.0), Verdict::Fail);
        assert_eq!(judge(&r, 0.0, 0.02), Verdict::Fail);
        r.bound = Some(Bound::AtLeast);
        assert_eq!(judge(&r, 0.5, 0.02), Verdict::Pass);
        assert_eq!(judge(&r, 0.01, 0.5), Verdict::Fail);
    }

    #[test]
    fn open_gaps_pass_the_check_until_they_close() {
        let r = RowResult::new(&row(Some(0.79), Some("cause 3")), vec![Some(0.4)], vec![]);
        assert_eq!(r.magnitude, Verdict::Open("cause 3".into()));
        assert!(!r.magnitude.fails_check());
        let r = RowResult::new(&row(Some(0.79), Some("cause 3")), vec![Some(0.75)], vec![]);
        assert!(r.magnitude.fails_check());
        let r = RowResult::new(&row(Some(0.79), None), vec![Some(0.75), None], vec![]);
        assert_eq!(r.mean, None);
        assert_eq!(r.magnitude, Verdict::Fail);
        assert_eq!(
            RowResult::new(&row(None, None), vec![Some(1.0)], vec![]).magnitude,
            Verdict::None
        );
    }

    #[test]
    fn a_validated_row_needs_both_means_and_a_calibrated_row_only_its_own() {
        let mut r = row(Some(0.5), None);
        let both = RowResult::new(&r, vec![Some(0.5)], vec![Some(0.55), Some(0.45)]);
        assert_eq!(both.unseen_mean, Some(0.5));
        assert_eq!(both.magnitude, Verdict::Pass);
        let unseen_off = RowResult::new(&r, vec![Some(0.5)], vec![Some(0.9)]);
        assert_eq!(unseen_off.magnitude, Verdict::Fail);
        let unseen_null = RowResult::new(&r, vec![Some(0.5)], vec![None]);
        assert_eq!(unseen_null.magnitude, Verdict::Fail);
        r.role = Role::Calibrated;
        let fitted = RowResult::new(&r, vec![Some(0.5)], vec![Some(0.9)]);
        assert_eq!(fitted.magnitude, Verdict::Pass);
    }

    #[test]
    fn an_ordering_must_also_hold_on_every_unseen_seed() {
        let rows = vec![
            RowResult::new(
                &row(None, None),
                vec![Some(0.4)],
                vec![Some(0.4), Some(0.1)],
            ),
            RowResult::new(
                &row(None, None),
                vec![Some(0.2)],
                vec![Some(0.3), Some(0.3)],
            ),
        ];
        let o = Ordering {
            claim: "P > LL".into(),
            higher: 0,
            lower: 1,
            strict: true,
            citation: None,
            open: None,
        };
        let r = OrderingResult::new(&o, &rows);
        assert_eq!(r.held, vec![Some(true), Some(true), Some(false)]);
        assert_eq!(r.verdict, Verdict::Fail);
    }

    #[test]
    fn an_ordering_must_hold_on_every_seed() {
        let rows = vec![
            RowResult::new(&row(None, None), vec![Some(0.4), Some(0.3)], vec![]),
            RowResult::new(&row(None, None), vec![Some(0.2), Some(0.3)], vec![]),
        ];
        let mut o = Ordering {
            claim: "P > LL".into(),
            higher: 0,
            lower: 1,
            strict: true,
            citation: None,
            open: None,
        };
        let r = OrderingResult::new(&o, &rows);
        assert_eq!(r.held, vec![Some(true), Some(false)]);
        assert_eq!(r.verdict, Verdict::Fail);
        o.strict = false;
        assert_eq!(OrderingResult::new(&o, &rows).verdict, Verdict::Pass);
    }

    #[test]
    fn a_non_strict_ordering_forgives_rounding_ties_and_nothing_more() {
        let rows = |a: f64, b: f64| {
            vec![
                RowResult::new(&row(None, None), vec![Some(a)], vec![]),
                RowResult::new(&row(None, None), vec![Some(b)], vec![]),
            ]
        };
        let mut o = Ordering {
            claim: "best <= naive".into(),
            higher: 1,
            lower: 0,
            strict: false,
            citation: None,
            open: None,
        };
        // measured: the same placement, 4.2353964355667 vs 4.2353964350617
        let tie = rows(4.235396435566667, 4.235396435061666);
        assert_eq!(OrderingResult::new(&o, &tie).verdict, Verdict::Pass);
        let worse = rows(4.2354, 4.2353);
        assert_eq!(OrderingResult::new(&o, &worse).verdict, Verdict::Fail);
        o.strict = true;
        assert_eq!(OrderingResult::new(&o, &tie).verdict, Verdict::Fail);
    }
}
