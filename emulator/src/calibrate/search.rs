//! Compass search (coordinate pattern search; Torczon 1997, Kolda, Lewis &
//! Torczon 2003), bounded, batched, with a run budget.
//!
//! Why this method and not a library: the objective is a sum over a few
//! target rows of means of deterministic runs, not smooth in the
//! parameters (each point costs whole scenario runs), the parameters are few and boxed, and some are
//! integers. Compass search needs no gradient, respects bounds by
//! clamping, handles integers by rounding, evaluates each iteration's 2·n
//! points as one parallel batch, and is deterministic by construction
//! (fixed candidate order, fixed tie-break). The Rust optimisation crates
//! we looked at (argmin's Nelder–Mead, for instance) evaluate one point at
//! a time and have neither bounds, integers nor a batch budget; wrapping
//! them would cost more than these hundred lines.
//!
//! One iteration from the current point `x` with steps `h`: the
//! candidates are `x + h_i·e_i` then `x − h_i·e_i` for each parameter `i`
//! in order whose step is still above its resolution, each clamped to the
//! range, rounded to the parameter's grid ([`Param::snap`]), dropped if
//! equal to `x` or to an earlier candidate. Points evaluated before are
//! not evaluated again (the cache is keyed by the exact vector). The
//! search moves to the candidate with the lowest loss if it is strictly
//! below `x`'s (ties: the first in candidate order); otherwise every step
//! is halved (integers: halved and rounded down). It stops when every
//! step is below its resolution (`(high − low) / 256`; integers: 1), or
//! before a batch whose new runs would take it past the budget.

use std::collections::BTreeMap;

use crate::reproduce::calibration::round_sig;

/// Resolution of a real parameter, as a fraction of its range.
pub const RESOLUTION: f64 = 1.0 / 256.0;

/// One free parameter as the search sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub lo: f64,
    pub hi: f64,
    pub start: f64,
    pub step: f64,
    pub integer: bool,
}

impl Param {
    /// `v` on the parameter's grid: clamped to the range, then rounded to
    /// an integer or to four significant digits (and clamped again, so a
    /// bound is kept exactly).
    pub fn snap(&self, v: f64) -> f64 {
        let v = v.clamp(self.lo, self.hi);
        let v = if self.integer {
            v.round()
        } else {
            round_sig(v)
        };
        v.clamp(self.lo, self.hi)
    }

    fn first_step(&self) -> f64 {
        if self.integer {
            self.step.round().max(1.0)
        } else {
            self.step
        }
    }

    fn halve(&self, step: f64) -> f64 {
        if self.integer {
            (step / 2.0).floor()
        } else {
            step / 2.0
        }
    }

    /// Whether a step this small is the end of this parameter's search.
    fn resolved(&self, step: f64) -> bool {
        if self.integer {
            step < 1.0
        } else {
            step < (self.hi - self.lo) * RESOLUTION
        }
    }
}

/// Why the search stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every step fell below its parameter's resolution.
    Converged,
    /// The next batch would have gone past the run budget.
    Budget,
}

impl Stop {
    pub fn words(self) -> &'static str {
        match self {
            Stop::Converged => "converged (every step below its resolution)",
            Stop::Budget => "run budget reached (the next batch would exceed it)",
        }
    }
}

/// One evaluated point.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluated {
    /// 0 for the start, then the iteration whose batch evaluated it.
    pub iteration: usize,
    pub point: Vec<f64>,
    pub loss: f64,
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub start: Vec<f64>,
    pub start_loss: f64,
    pub best: Vec<f64>,
    pub best_loss: f64,
    /// The start (index into the starts, committed first) whose search
    /// reached `best`.
    pub from_start: usize,
    /// Each distinct start's own loss, in order.
    pub start_losses: Vec<f64>,
    /// Every point evaluated, in evaluation order.
    pub evaluated: Vec<Evaluated>,
    pub iterations: usize,
    /// Runs spent (as counted by the cost function).
    pub runs: usize,
    pub stop: Stop,
}

/// Why the search could not run.
#[derive(Debug, thiserror::Error)]
pub enum SearchError<E> {
    #[error("the starting point alone needs {needed} runs, more than the budget of {budget}")]
    BudgetTooSmall { needed: usize, budget: usize },
    #[error(transparent)]
    Objective(E),
}

fn key(point: &[f64]) -> Vec<u64> {
    point.iter().map(|v| v.to_bits()).collect()
}

/// What the search minimises.
pub trait Objective {
    type Error;
    /// The number of new runs evaluating `points` would take (runs shared
    /// with points evaluated before, or with each other, count once).
    fn cost(&self, points: &[Vec<f64>]) -> usize;
    /// Each point's loss, in order; `iteration` is 0 for the start.
    fn evaluate(&mut self, iteration: usize, points: &[Vec<f64>]) -> Result<Vec<f64>, Self::Error>;
}

/// Searches from every parameter's `start` within `budget` runs. A loss
/// that is not a number counts as +∞.
pub fn search<O: Objective>(
    params: &[Param],
    budget: usize,
    objective: &mut O,
) -> Result<Outcome, SearchError<O::Error>> {
    let start: Vec<f64> = params.iter().map(|p| p.start).collect();
    search_from(params, &[start], budget, objective)
}

/// A compass search from each of `starts` in turn (multi-start local
/// search), sharing one cache of evaluated points and one budget; the
/// result is the lowest loss any of them reached (ties: the earlier
/// start). `starts[0]` is the committed start the report compares with.
/// Every start's first evaluation is paid before any search moves, so a
/// budget that cannot evaluate every start is an error.
pub fn search_from<O: Objective>(
    params: &[Param],
    starts: &[Vec<f64>],
    budget: usize,
    objective: &mut O,
) -> Result<Outcome, SearchError<O::Error>> {
    let clean = |l: f64| if l.is_nan() { f64::INFINITY } else { l };
    let mut points: Vec<Vec<f64>> = Vec::new();
    for st in starts {
        let x: Vec<f64> = params.iter().zip(st).map(|(p, &v)| p.snap(v)).collect();
        if !points.contains(&x) {
            points.push(x);
        }
    }
    let needed = objective.cost(&points);
    if needed > budget {
        return Err(SearchError::BudgetTooSmall { needed, budget });
    }
    let losses = objective
        .evaluate(0, &points)
        .map_err(SearchError::Objective)?;
    let mut state = State {
        runs: needed,
        cache: BTreeMap::new(),
        evaluated: Vec::new(),
        iterations: 0,
    };
    for (x, l) in points.iter().zip(losses) {
        let l = clean(l);
        state.cache.insert(key(x), l);
        state.evaluated.push(Evaluated {
            iteration: 0,
            point: x.clone(),
            loss: l,
        });
    }
    let start = points[0].clone();
    let start_loss = state.cache[&key(&start)];
    let mut best: Option<(Vec<f64>, f64, usize)> = None;
    let mut stop = Stop::Converged;
    let mut start_losses = Vec::new();
    for (n, x0) in points.iter().enumerate() {
        start_losses.push(state.cache[&key(x0)]);
        let (x, f, s) = compass(params, x0.clone(), budget, &mut state, objective)?;
        if best.as_ref().is_none_or(|(_, b, _)| f < *b) {
            best = Some((x, f, n));
        }
        if s == Stop::Budget {
            stop = Stop::Budget;
            break;
        }
    }
    let (best, best_loss, from_start) = best.unwrap_or((start.clone(), start_loss, 0));
    Ok(Outcome {
        start,
        start_loss,
        best,
        best_loss,
        from_start,
        start_losses,
        evaluated: state.evaluated,
        iterations: state.iterations,
        runs: state.runs,
        stop,
    })
}

/// What the searches from several starts share.
struct State {
    runs: usize,
    cache: BTreeMap<Vec<u64>, f64>,
    evaluated: Vec<Evaluated>,
    iterations: usize,
}

/// One compass search from `x` (evaluated already, in the cache).
fn compass<O: Objective>(
    params: &[Param],
    mut x: Vec<f64>,
    budget: usize,
    st: &mut State,
    objective: &mut O,
) -> Result<(Vec<f64>, f64, Stop), SearchError<O::Error>> {
    let clean = |l: f64| if l.is_nan() { f64::INFINITY } else { l };
    let mut f = st.cache.get(&key(&x)).copied().unwrap_or(f64::INFINITY);
    let mut steps: Vec<f64> = params.iter().map(Param::first_step).collect();
    let stop = loop {
        if params.iter().zip(&steps).all(|(p, &h)| p.resolved(h)) {
            break Stop::Converged;
        }
        let mut candidates: Vec<Vec<f64>> = Vec::new();
        for (i, p) in params.iter().enumerate() {
            if p.resolved(steps[i]) {
                continue;
            }
            for sign in [1.0, -1.0] {
                let mut y = x.clone();
                y[i] = p.snap(x[i] + sign * steps[i]);
                if y != x && !candidates.contains(&y) {
                    candidates.push(y);
                }
            }
        }
        let fresh: Vec<Vec<f64>> = candidates
            .iter()
            .filter(|c| !st.cache.contains_key(&key(c)))
            .cloned()
            .collect();
        if !fresh.is_empty() {
            let c = objective.cost(&fresh);
            if st.runs + c > budget {
                break Stop::Budget;
            }
            st.iterations += 1;
            let losses = objective
                .evaluate(st.iterations, &fresh)
                .map_err(SearchError::Objective)?;
            st.runs += c;
            for (point, loss) in fresh.into_iter().zip(losses) {
                let loss = clean(loss);
                st.cache.insert(key(&point), loss);
                st.evaluated.push(Evaluated {
                    iteration: st.iterations,
                    point,
                    loss,
                });
            }
        }
        let mut best: Option<(&Vec<f64>, f64)> = None;
        for c in &candidates {
            let l = st.cache.get(&key(c)).copied().unwrap_or(f64::INFINITY);
            if l < f && best.is_none_or(|(_, b)| l < b) {
                best = Some((c, l));
            }
        }
        match best {
            Some((c, l)) => {
                x = c.clone();
                f = l;
            }
            None => {
                for (h, p) in steps.iter_mut().zip(params) {
                    *h = p.halve(*h);
                }
            }
        }
    };
    Ok((x, f, stop))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real(lo: f64, hi: f64, start: f64) -> Param {
        Param {
            lo,
            hi,
            start,
            step: (hi - lo) / 4.0,
            integer: false,
        }
    }

    /// A loss without runs: `runs` per point, every point asked kept.
    struct Synthetic {
        f: fn(&[f64]) -> f64,
        runs: usize,
        asked: Vec<Vec<f64>>,
    }

    impl Objective for Synthetic {
        type Error = ();
        fn cost(&self, points: &[Vec<f64>]) -> usize {
            self.runs * points.len()
        }
        fn evaluate(&mut self, _: usize, points: &[Vec<f64>]) -> Result<Vec<f64>, ()> {
            self.asked.extend(points.iter().cloned());
            Ok(points.iter().map(|p| (self.f)(p)).collect())
        }
    }

    fn synthetic(f: fn(&[f64]) -> f64, runs: usize) -> Synthetic {
        Synthetic {
            f,
            runs,
            asked: Vec::new(),
        }
    }

    fn run(
        params: &[Param],
        budget: usize,
        f: fn(&[f64]) -> f64,
    ) -> Result<Outcome, SearchError<()>> {
        search(params, budget, &mut synthetic(f, 1))
    }

    #[test]
    fn a_quadratic_bowl_is_found_to_the_resolution() {
        let params = [real(-10.0, 10.0, 7.0), real(0.0, 1.0, 0.9)];
        let o = run(&params, 10_000, |p| {
            (p[0] - 1.234).powi(2) + 50.0 * (p[1] - 0.3).powi(2)
        })
        .unwrap();
        assert_eq!(o.stop, Stop::Converged);
        assert!((o.best[0] - 1.234).abs() < 20.0 / 256.0, "{:?}", o.best);
        assert!((o.best[1] - 0.3).abs() < 1.0 / 256.0, "{:?}", o.best);
        assert!(o.best_loss < o.start_loss);
        // every value evaluated is on the 4-significant-digit grid
        for e in &o.evaluated {
            for v in &e.point {
                assert_eq!(*v, round_sig(*v));
            }
        }
        assert_eq!(o.runs, o.evaluated.len());
    }

    /// Two basins, a shallow one around the committed start and a deep one
    /// elsewhere, separated by a ridge no single-coordinate move crosses
    /// (it needs both coordinates to move together): a compass search from
    /// the start stays in the shallow one; a further start in the deep
    /// one's basin reaches it, and the report says which start won.
    #[test]
    fn a_further_start_finds_the_basin_the_committed_one_cannot_reach() {
        fn two_basins(p: &[f64]) -> f64 {
            let d2 = (p[0] - 0.1).powi(2) + (p[1] - 0.1).powi(2);
            if d2 < 0.15 * 0.15 {
                10.0 * d2
            } else {
                5.0 + (p[0] - 0.8).powi(2) + (p[1] - 0.8).powi(2)
            }
        }
        let params = [real(0.0, 1.0, 0.7), real(0.0, 1.0, 0.7)];
        let alone = run(&params, 10_000, two_basins).unwrap();
        assert!(alone.best_loss >= 5.0, "{:?}", alone.best);
        let starts = [vec![0.7, 0.7], vec![0.2, 0.2]];
        let both = search_from(&params, &starts, 10_000, &mut synthetic(two_basins, 1)).unwrap();
        assert!(both.best_loss < 0.01, "{:?} {}", both.best, both.best_loss);
        assert_eq!(both.from_start, 1);
        assert_eq!(both.start, vec![0.7, 0.7]);
        assert_eq!(both.start_losses.len(), 2);
        let again = search_from(&params, &starts, 10_000, &mut synthetic(two_basins, 1)).unwrap();
        assert_eq!(both, again);
        let poor = search_from(&params, &starts, 1, &mut synthetic(two_basins, 1));
        assert!(matches!(
            poor,
            Err(SearchError::BudgetTooSmall { needed: 2, .. })
        ));
    }

    #[test]
    fn the_same_search_gives_the_same_points() {
        let params = [real(0.0, 2.0, 0.1), real(0.0, 2.0, 1.9)];
        let f: fn(&[f64]) -> f64 = |p| (p[0] - 0.77).abs() + (p[1] - 1.1).abs();
        assert_eq!(run(&params, 500, f).unwrap(), run(&params, 500, f).unwrap());
    }

    #[test]
    fn an_integer_parameter_stays_on_integers_and_finds_its_minimum() {
        let params = [Param {
            lo: 1.0,
            hi: 40.0,
            start: 3.0,
            step: 10.0,
            integer: true,
        }];
        let o = run(&params, 1_000, |p| (p[0] - 17.0).powi(2)).unwrap();
        assert_eq!(o.best, vec![17.0]);
        assert_eq!(o.stop, Stop::Converged);
        assert!(o.evaluated.iter().all(|e| e.point[0].fract() == 0.0));
    }

    #[test]
    fn the_budget_stops_before_a_batch_that_would_exceed_it() {
        let params = [real(0.0, 1.0, 0.5), real(0.0, 1.0, 0.5)];
        // 3 runs a point: the start (3) and the first batch of 4 (12) fit in
        // 23, the second batch (3 new points, 9 runs) does not
        let mut objective = synthetic(|p| (p[0] - 0.9).powi(2) + p[1], 3);
        let o = search(&params, 3 + 12 + 8, &mut objective).unwrap();
        assert_eq!(o.stop, Stop::Budget);
        assert_eq!(o.iterations, 1);
        assert_eq!(o.runs, 15);
        assert_eq!(o.evaluated.len(), 5);
        assert_eq!(o.best, vec![0.5, 0.25]);
        let e = run(&params, 0, |_| 0.0).unwrap_err();
        assert!(matches!(
            e,
            SearchError::BudgetTooSmall {
                needed: 1,
                budget: 0
            }
        ));
    }

    #[test]
    fn ties_go_to_the_first_parameter_and_plus_before_minus() {
        // symmetric: x0 ± step and x1 ± step all give the same loss
        let params = [real(-1.0, 1.0, 0.0), real(-1.0, 1.0, 0.0)];
        let o = run(&params, 5, |p| 1.0 - p[0].abs() - p[1].abs()).unwrap();
        assert_eq!(o.evaluated[1].point, vec![0.5, 0.0]);
        assert_eq!(o.evaluated[2].point, vec![-0.5, 0.0]);
        assert_eq!(o.evaluated[3].point, vec![0.0, 0.5]);
        assert_eq!(o.best, vec![0.5, 0.0]);
    }

    #[test]
    fn bounds_clamp_and_a_point_seen_before_is_free() {
        let params = [real(0.0, 1.0, 1.0)];
        let mut objective = synthetic(|p| p[0], 1);
        let o = search(&params, 100, &mut objective).unwrap();
        let asked: Vec<f64> = objective.asked.iter().map(|p| p[0]).collect();
        assert_eq!(o.best, vec![0.0]);
        assert!(asked.iter().all(|v| (0.0..=1.0).contains(v)));
        let mut sorted: Vec<u64> = asked.iter().map(|v| v.to_bits()).collect();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), asked.len(), "no point evaluated twice");
    }
}
