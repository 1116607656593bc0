//! Paragon's server selection (Delimitrou & Kozyrakis, "Paragon: QoS-Aware
//! Scheduling for Heterogeneous Datacenters", TOCS 2013): the greedy search of
//! §3.2 and the hash-sampled statistical selection of §3.3.
//!
//! Everything here works on Paragon's sensitivity scores, 0–100 per source of
//! interference (SoI), for the ten sources of [`SOURCES`]. An application has
//! a *tolerated* score per source (high = robust) and a *caused* score (high =
//! aggressive). A server's state ([`ServerInterference`], §3.1) sums the caused
//! scores of the applications it runs and takes the minimum of their tolerated
//! scores. For a new application on a server, per source,
//!
//! * `D1 = t_server − c_new`: can the resident load stand the newcomer?
//! * `D2 = t_new − c_server`: can the newcomer stand the resident load?
//!
//! Negative values are QoS violations; values near zero are tight packing.
//!
//! ## Reading of the paper's open points
//!
//! * **Order of the checks.** §3.2 filters D1 source by source, from the
//!   source the newcomer is most aggressive on, and says D2 is handled the
//!   same way, then intersects the two sets. Here the twenty checks (D1 and D2
//!   on each source) run as *one* chain, ordered by how hard each is to meet:
//!   a D1 check by the newcomer's caused score, a D2 check by how little it
//!   tolerates (`100 − t_new`), both decreasing; ties keep D1 before D2 and
//!   lower sources first. Without backtracking the survivors are exactly the
//!   intersection of the two sets; with one chain, backtracking also covers
//!   the case the paper leaves open, where each set alone is non-empty but
//!   their intersection is empty.
//! * **Relaxing.** When a check empties the set, the check before it is
//!   dropped (its filtering undone) and the failing check is retried on the
//!   larger set; if that is still empty, one more earlier check is dropped,
//!   and so on (§3.2's backtracking to further levels). If no candidate meets
//!   the failing check even with every earlier check dropped, that check is
//!   itself dropped instead. `Selection::backtracked` counts dropped checks.
//! * **Colocation quality** (§3.3): see [`colocation_quality`].

use sha2::{Digest, Sha256};

use crate::ground_truth::SOURCES;

/// Top of the 0–100 sensitivity scale. An empty server tolerates this much on
/// every source.
pub const MAX_SCORE: f64 = 100.0;

/// Predicted speeds this close to each other count as the same class rank.
pub const SPEED_TIE: f64 = 1e-9;

/// Bits of a quantised score fed to the §3.3 hash functions.
pub const HASH_BITS: u32 = 14;

/// One application resident on a server, as the scheduler classified it.
#[derive(Clone, Copy, Debug)]
struct Resident {
    id: u64,
    tolerated: [f64; SOURCES],
    caused: [f64; SOURCES],
}

/// Paragon's per-server interference state (§3.1), kept incrementally as
/// applications start and finish.
///
/// The paper keeps about 64 B per server (application ids and cumulative
/// sensitivities). To recover the minimum tolerated score after the minimum
/// application leaves, this keeps each resident's two score arrays, in
/// arrival order, and recomputes the aggregates from them on removal, so the
/// state after a removal is bit-for-bit the state of adding the remaining
/// applications in order (an emptied server reads exactly 0 / 100).
#[derive(Clone, Debug)]
pub struct ServerInterference {
    residents: Vec<Resident>,
    caused: [f64; SOURCES],
    tolerated: [f64; SOURCES],
    /// Share of a co-runner's caused score that reaches the others on each
    /// source on this server's hardware (1.0: Paragon's plain sum).
    contention: [f64; SOURCES],
    /// Keep as tolerated state the headroom each resident has left under
    /// the others' pressure, rather than its bare tolerated score.
    headroom: bool,
}

impl Default for ServerInterference {
    fn default() -> Self {
        ServerInterference {
            residents: Vec::new(),
            caused: [0.0; SOURCES],
            tolerated: [MAX_SCORE; SOURCES],
            contention: [1.0; SOURCES],
            headroom: false,
        }
    }
}

impl ServerInterference {
    /// An empty server: causes nothing, tolerates everything.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty server whose hardware passes on `contention[s]` of a
    /// co-runner's caused score on source `s`: the state then holds the
    /// weighted sum of caused scores, and a newcomer's caused scores are
    /// weighted the same way in D1. Paragon (§3.2) uses the plain sum, as
    /// if every server were the high-end profiling server (§2.4).
    ///
    /// The tolerated state then becomes each resident's *headroom*, its
    /// tolerated score minus the pressure the other residents already put on
    /// it, minimised over residents: so D1 ≥ 0 means no resident is pushed
    /// past its tolerance, however many have accumulated. Paragon's plain
    /// minimum of tolerated scores checks each newcomer against residents
    /// one at a time and lets their pressure pile up unchecked.
    pub fn with_contention(contention: [f64; SOURCES]) -> Self {
        ServerInterference {
            contention,
            headroom: true,
            ..Self::default()
        }
    }

    /// Recomputes the cached state from the residents.
    fn refresh(&mut self) {
        self.caused = [0.0; SOURCES];
        self.tolerated = [MAX_SCORE; SOURCES];
        for r in &self.residents {
            let weighted: [f64; SOURCES] =
                std::array::from_fn(|s| self.contention[s] * r.caused[s]);
            fold(
                &mut self.caused,
                &mut self.tolerated,
                &r.tolerated,
                &weighted,
            );
        }
        if self.headroom {
            self.tolerated = [MAX_SCORE; SOURCES];
            for r in &self.residents {
                for s in 0..SOURCES {
                    let others = self.caused[s] - self.contention[s] * r.caused[s];
                    self.tolerated[s] = self.tolerated[s].min(r.tolerated[s] - others);
                }
            }
        }
    }

    /// D1 on source `s` for a newcomer causing `caused`.
    fn d1(&self, s: usize, caused: f64) -> f64 {
        self.tolerated[s] - self.contention[s] * caused
    }

    /// Records application `id` starting on the server. Adding an id already
    /// present replaces its scores.
    pub fn add(&mut self, id: u64, tolerated: &[f64; SOURCES], caused: &[f64; SOURCES]) {
        if self.contains(id) {
            self.remove(id);
        }
        self.residents.push(Resident {
            id,
            tolerated: *tolerated,
            caused: *caused,
        });
        if self.headroom {
            self.refresh();
        } else {
            fold(&mut self.caused, &mut self.tolerated, tolerated, caused);
        }
    }

    /// Records application `id` finishing; `false` if it is not on the server.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(pos) = self.residents.iter().position(|r| r.id == id) else {
            return false;
        };
        self.residents.remove(pos);
        self.refresh();
        true
    }

    /// Whether application `id` is on the server.
    pub fn contains(&self, id: u64) -> bool {
        self.residents.iter().any(|r| r.id == id)
    }

    /// Interference the server's load causes: the sum over its applications,
    /// weighted by the server's contention (0 when empty).
    pub fn caused(&self) -> [f64; SOURCES] {
        self.caused
    }

    /// Interference the server's load tolerates: the minimum over its
    /// applications (100 when empty); with hardware contention, the minimum
    /// headroom left to them.
    pub fn tolerated(&self) -> [f64; SOURCES] {
        self.tolerated
    }

    /// Number of applications on the server.
    pub fn apps(&self) -> usize {
        self.residents.len()
    }

    /// Total QoS violation (score points, as [`Selection::violation`]) of a
    /// newcomer with scores `tolerated` and `caused` on this server's load.
    pub fn violation(&self, tolerated: &[f64; SOURCES], caused: &[f64; SOURCES]) -> f64 {
        deviation(tolerated, caused, self).1
    }
}

fn fold(
    sum_caused: &mut [f64; SOURCES],
    min_tolerated: &mut [f64; SOURCES],
    tolerated: &[f64; SOURCES],
    caused: &[f64; SOURCES],
) {
    for (sum, c) in sum_caused.iter_mut().zip(caused) {
        *sum += c;
    }
    for (min, &t) in min_tolerated.iter_mut().zip(tolerated) {
        if t < *min {
            *min = t;
        }
    }
}

/// One candidate server as the placement stage sees it.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    /// The caller's server index, returned in [`Selection::index`].
    pub index: u32,
    /// Server class (SC), an index into the `speed` slice of [`select`].
    pub class: usize,
    pub state: &'a ServerInterference,
}

/// Switches and bounds of the greedy search.
#[derive(Clone, Copy, Debug)]
pub struct GreedyParams {
    /// `false` ignores D1/D2 (Paragon-NI style): every candidate survives.
    pub interference: bool,
    /// `false` ignores server classes (Paragon-NH style).
    pub heterogeneity: bool,
    /// Bound on (server, check) tests: the §3.2 timeout.
    pub max_steps: u32,
}

impl Default for GreedyParams {
    fn default() -> Self {
        GreedyParams {
            interference: true,
            heterogeneity: true,
            max_steps: 20_000,
        }
    }
}

/// Outcome of [`select`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Selection {
    /// [`Candidate::index`] of the chosen server.
    pub index: u32,
    /// Checks dropped by backtracking.
    pub backtracked: u32,
    /// The step bound cut the search short.
    pub timed_out: bool,
    /// Total QoS violation at the chosen server: the sum over sources of
    /// `max(0, −D1) + max(0, −D2)`, so 0 when nothing is violated.
    pub violation: f64,
    /// (server, check) tests made.
    pub steps: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metric {
    D1,
    D2,
}

#[derive(Clone, Copy, Debug)]
struct Check {
    metric: Metric,
    source: usize,
}

impl Check {
    fn passes(
        self,
        tolerated: &[f64; SOURCES],
        caused: &[f64; SOURCES],
        server: &ServerInterference,
    ) -> bool {
        let s = self.source;
        match self.metric {
            Metric::D1 => server.d1(s, caused[s]) >= 0.0,
            Metric::D2 => tolerated[s] - server.caused[s] >= 0.0,
        }
    }
}

/// The twenty checks, hardest first (see the module docs).
fn check_order(tolerated: &[f64; SOURCES], caused: &[f64; SOURCES]) -> [Check; 2 * SOURCES] {
    let mut keyed = [(
        0.0,
        Check {
            metric: Metric::D1,
            source: 0,
        },
    ); 2 * SOURCES];
    for s in 0..SOURCES {
        // `+ 0.0` turns −0.0 into 0.0 so it ties with 0.0 under total_cmp.
        keyed[s] = (
            caused[s] + 0.0,
            Check {
                metric: Metric::D1,
                source: s,
            },
        );
        keyed[SOURCES + s] = (
            MAX_SCORE - tolerated[s] + 0.0,
            Check {
                metric: Metric::D2,
                source: s,
            },
        );
    }
    // Stable: equal keys keep D1 before D2 and lower sources first.
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    keyed.map(|(_, check)| check)
}

/// ‖D1 + D2‖₁ and the violation (sum of the negative parts of D1 and D2) of
/// a newcomer on `server`.
fn deviation(
    tolerated: &[f64; SOURCES],
    caused: &[f64; SOURCES],
    server: &ServerInterference,
) -> (f64, f64) {
    let mut l1 = 0.0;
    let mut violation = 0.0;
    for s in 0..SOURCES {
        let d1 = server.d1(s, caused[s]);
        let d2 = tolerated[s] - server.caused[s];
        l1 += libm::fabs(d1 + d2);
        if d1 < 0.0 {
            violation -= d1;
        }
        if d2 < 0.0 {
            violation -= d2;
        }
    }
    (l1, violation)
}

/// Predicted speed of a candidate's class; unknown classes and NaN rank last.
fn class_speed(speed: &[f64], class: usize) -> f64 {
    match speed.get(class) {
        Some(&v) if !v.is_nan() => v,
        _ => f64::NEG_INFINITY,
    }
}

/// Highest predicted speed among the candidates `in_pool` accepts.
fn best_speed(
    speed: &[f64],
    candidates: &[Candidate<'_>],
    in_pool: &impl Fn(usize) -> bool,
) -> f64 {
    let mut best = f64::NEG_INFINITY;
    for (i, c) in candidates.iter().enumerate() {
        if in_pool(i) {
            let v = class_speed(speed, c.class);
            if v > best {
                best = v;
            }
        }
    }
    best
}

/// §3.2's final ranking over the candidates `in_pool` accepts: the best
/// predicted class (if `heterogeneity`), then the least ‖D1 + D2‖₁, then the
/// least violation, then the lowest [`Candidate::index`]. `None` if the pool
/// is empty.
fn rank(
    tolerated: &[f64; SOURCES],
    caused: &[f64; SOURCES],
    speed: &[f64],
    candidates: &[Candidate<'_>],
    heterogeneity: bool,
    in_pool: impl Fn(usize) -> bool,
) -> Option<usize> {
    let floor = if heterogeneity {
        best_speed(speed, candidates, &in_pool) - SPEED_TIE
    } else {
        f64::NEG_INFINITY
    };
    let mut best: Option<(usize, f64, f64)> = None;
    for (i, c) in candidates.iter().enumerate() {
        if !in_pool(i) || (heterogeneity && class_speed(speed, c.class) < floor) {
            continue;
        }
        let (l1, violation) = deviation(tolerated, caused, c.state);
        let better = match best {
            None => true,
            Some((j, best_l1, best_violation)) => l1
                .total_cmp(&best_l1)
                .then(violation.total_cmp(&best_violation))
                .then(c.index.cmp(&candidates[j].index))
                .is_lt(),
        };
        if better {
            best = Some((i, l1, violation));
        }
    }
    best.map(|(i, _, _)| i)
}

/// Marks a candidate that passed a check while backtracking, before the
/// levels are rewritten.
const RETRY_PASSED: u8 = u8::MAX;

/// Paragon §3.2 greedy selection of a server for a new application with
/// scores `tolerated` and `caused`, and predicted relative speed `speed[sc]`
/// on each server class `sc` (best = 1.0; classes not in `speed` rank last).
///
/// With `params.interference`, the D1/D2 checks filter the candidates one by
/// one, hardest first, backtracking when a check would leave none (module
/// docs). Among the survivors the best predicted class wins (speeds within
/// [`SPEED_TIE`] are equal; with `heterogeneity == false` classes are
/// ignored), then the least ‖D1 + D2‖₁ (tightest packing), then the least
/// violation, then the lowest [`Candidate::index`].
///
/// Every (server, check) test is a step. When the next test would exceed
/// `params.max_steps` the search stops (`timed_out`) and the same ranking
/// picks among the servers still in the running: those that passed every
/// check applied so far, or, if time ran out during the very first check, the
/// servers tested so far (all candidates if none was).
///
/// With `params.interference == false` nothing is tested (`steps == 0`):
/// the first candidate *in slice order* of the best predicted class wins (or
/// simply the first candidate without `heterogeneity`), so the caller breaks
/// ties through the order it passes candidates in. `violation` is still
/// reported for the chosen server.
///
/// Returns `None` only when `candidates` is empty. Allocates one byte per
/// candidate; the work is O(candidates × checks) without backtracking.
pub fn select(
    tolerated: &[f64; SOURCES],
    caused: &[f64; SOURCES],
    speed: &[f64],
    candidates: &[Candidate<'_>],
    params: &GreedyParams,
) -> Option<Selection> {
    if candidates.is_empty() {
        return None;
    }
    if !params.interference {
        let pick = if params.heterogeneity {
            let floor = best_speed(speed, candidates, &|_| true) - SPEED_TIE;
            candidates
                .iter()
                .position(|c| class_speed(speed, c.class) >= floor)
                .unwrap_or(0)
        } else {
            0
        };
        let c = &candidates[pick];
        return Some(Selection {
            index: c.index,
            backtracked: 0,
            timed_out: false,
            violation: deviation(tolerated, caused, c.state).1,
            steps: 0,
        });
    }

    // level[i]: how many of the currently applied checks candidate i passed.
    // The current set is the candidates at level `depth`; the set before the
    // last k applied checks is those at level ≥ depth − k.
    let mut level = vec![0u8; candidates.len()];
    let mut depth: u8 = 0;
    let mut steps: u32 = 0;
    let mut backtracked: u32 = 0;
    // Some(k): time ran out during the very first check after k tests.
    let mut first_pass_cut: Option<usize> = None;
    let mut first_pass_done = false;
    let mut timed_out = false;

    'checks: for check in check_order(tolerated, caused) {
        // Filter the current set.
        let mut any = false;
        for (i, c) in candidates.iter().enumerate() {
            if level[i] != depth {
                continue;
            }
            if steps >= params.max_steps {
                timed_out = true;
                if !first_pass_done {
                    first_pass_cut = Some(i);
                }
                break 'checks;
            }
            steps += 1;
            if check.passes(tolerated, caused, c.state) {
                level[i] = depth + 1;
                any = true;
            }
        }
        first_pass_done = true;
        if any {
            depth += 1;
            continue;
        }
        // Backtrack: drop the last `back` applied checks, retrying this one
        // on the candidates they had filtered out (the rest already failed).
        let applied = depth;
        for back in 1..=applied {
            let lower = applied - back;
            let mut found = false;
            for (i, c) in candidates.iter().enumerate() {
                if level[i] != lower {
                    continue;
                }
                if steps >= params.max_steps {
                    timed_out = true;
                    break 'checks;
                }
                steps += 1;
                if check.passes(tolerated, caused, c.state) {
                    level[i] = RETRY_PASSED;
                    found = true;
                }
            }
            if found {
                for l in level.iter_mut() {
                    if *l == RETRY_PASSED {
                        *l = lower + 1;
                    } else if *l > lower {
                        *l = lower;
                    }
                }
                depth = lower + 1;
                backtracked += u32::from(back);
                continue 'checks;
            }
        }
        // No candidate meets this check whatever was dropped: drop it instead.
        backtracked += 1;
    }

    let pick = match first_pass_cut {
        Some(0) => rank(
            tolerated,
            caused,
            speed,
            candidates,
            params.heterogeneity,
            |_| true,
        ),
        Some(tested) => rank(
            tolerated,
            caused,
            speed,
            candidates,
            params.heterogeneity,
            |i| i < tested,
        ),
        None => rank(
            tolerated,
            caused,
            speed,
            candidates,
            params.heterogeneity,
            |i| level[i] != RETRY_PASSED && level[i] >= depth,
        ),
    }?;
    let c = &candidates[pick];
    Some(Selection {
        index: c.index,
        backtracked,
        timed_out,
        violation: deviation(tolerated, caused, c.state).1,
        steps,
    })
}

/// Paragon §3.3 colocation quality of a server for a new application, from
/// the server's tolerated scores `t` and the application's caused scores `c`
/// (both 0–100).
///
/// Reading of the paper's formula: with `L = Σ_k |t_k − c_k|` and
/// `S = Σ_k (t_k − c_k)` over the ten sources,
///
/// `Q = sign(S) · |1 − L / 1000|`,
///
/// where 1000 = 10 sources × 100 is the largest possible `L` (the paper's
/// "maximum value 10" in units of 100 %), so `|Q| ≤ 1`, and `sign(S)` is taken
/// as +1 when `S ≥ 0` (a perfect fit, `t = c`, is then the best possible
/// quality, 1, rather than the 0 a literal `sign(0) = 0` would give) and −1
/// otherwise. A server that preserves QoS in aggregate gets a positive
/// quality, higher the closer it fits; one that violates it gets a negative
/// one. As written in the paper, among violating servers the one deviating
/// *more* is closer to 0 and so ranks higher; this follows the paper.
pub fn colocation_quality(server_tolerated: &[f64; SOURCES], app_caused: &[f64; SOURCES]) -> f64 {
    let mut sum = 0.0;
    let mut l1 = 0.0;
    for (&t, &c) in server_tolerated.iter().zip(app_caused) {
        sum += t - c;
        l1 += libm::fabs(t - c);
    }
    let sign = if sum >= 0.0 { 1.0 } else { -1.0 };
    sign * libm::fabs(1.0 - l1 / (SOURCES as f64 * MAX_SCORE))
}

/// A score quantised to [`HASH_BITS`] bits (NaN counts as 0).
fn quantise(score: f64) -> u16 {
    let x = if score.is_nan() {
        0.0
    } else {
        score.clamp(0.0, MAX_SCORE)
    };
    let top = f64::from((1u32 << HASH_BITS) - 1);
    libm::round(x / MAX_SCORE * top) as u16
}

/// Source `k`'s hash function h_k: SHA-256 keyed by a per-source prefix (the
/// paper's per-SoI variations of SHA-1).
fn soi_hash(k: usize, input: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"dcemu/paragon-3.3/soi/");
    h.update([k as u8]);
    h.update(input);
    h.finalize().into()
}

/// Server index in `0..n` from the first four bytes of a digest, by
/// multiply-shift on `u32` (platform-independent).
fn digest_index(digest: &[u8; 32], n: u32) -> u32 {
    let x = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    ((u64::from(x) * u64::from(n)) >> 32) as u32
}

/// Distinct server indices drawn so far: a bitmap when it is no larger than
/// the sample, else a sorted vector.
enum Drawn {
    Bits { words: Vec<u64>, count: usize },
    Sorted(Vec<u32>),
}

impl Drawn {
    fn new(n: u32, target: usize) -> Self {
        let words = (n as usize).div_ceil(64);
        if words <= target {
            Drawn::Bits {
                words: vec![0; words],
                count: 0,
            }
        } else {
            Drawn::Sorted(Vec::with_capacity(target))
        }
    }

    fn insert(&mut self, i: u32) {
        match self {
            Drawn::Bits { words, count } => {
                let (w, b) = ((i / 64) as usize, i % 64);
                if words[w] & (1 << b) == 0 {
                    words[w] |= 1 << b;
                    *count += 1;
                }
            }
            Drawn::Sorted(v) => {
                if let Err(pos) = v.binary_search(&i) {
                    v.insert(pos, i);
                }
            }
        }
    }

    fn contains(&self, i: u32) -> bool {
        match self {
            Drawn::Bits { words, .. } => words[(i / 64) as usize] & (1 << (i % 64)) != 0,
            Drawn::Sorted(v) => v.binary_search(&i).is_ok(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Drawn::Bits { count, .. } => *count,
            Drawn::Sorted(v) => v.len(),
        }
    }

    fn into_sorted(self) -> Vec<u32> {
        match self {
            Drawn::Bits { words, count } => {
                let mut out = Vec::with_capacity(count);
                for (w, &word) in words.iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        out.push(w as u32 * 64 + bits.trailing_zeros());
                        bits &= bits - 1;
                    }
                }
                out
            }
            Drawn::Sorted(v) => v,
        }
    }
}

/// Paragon §3.3 candidate sampling: `min(count, n)` distinct server indices
/// in `0..n`, in increasing order, drawn by hashing the application's caused
/// scores.
///
/// For each source k the caused score, quantised to 14 bits, goes through
/// h_k; each output names a server (first four bytes, multiply-shift onto
/// `0..n`) and is rehashed by h_k for the next one. Sources take turns, one
/// hash each, until enough distinct servers are drawn. The paper also hashes
/// the servers' tolerated scores; mapping outputs straight to indices gives
/// the uniform sample its analysis assumes without that table. In the
/// paper a server's hashed value changes with its load, so the same
/// application arriving again meets other servers; here `draw` (which of
/// the scheduler's decisions this is) goes into the first hash for that
/// purpose: without it every instance of one application would meet the
/// same `count` servers however large the datacenter, and queue once those
/// are full (issue 43, measured at 30,000 servers). Should the chains still
/// lack servers after `64 × count + 1024` hashes (vanishingly unlikely),
/// the lowest undrawn indices complete the sample. Depends only on the
/// inputs.
pub fn sample_servers(app_caused: &[f64; SOURCES], draw: u64, n: u32, count: u32) -> Vec<u32> {
    let target = count.min(n) as usize;
    if target == 0 {
        return Vec::new();
    }
    let mut drawn = Drawn::new(n, target);
    let mut state = [[0u8; 32]; SOURCES];
    for (k, s) in state.iter_mut().enumerate() {
        let mut input = quantise(app_caused[k]).to_be_bytes().to_vec();
        input.extend_from_slice(&draw.to_be_bytes());
        *s = soi_hash(k, &input);
    }
    let budget = 64 * target + 1024;
    let mut hashes = SOURCES;
    'draw: loop {
        for (k, s) in state.iter_mut().enumerate() {
            drawn.insert(digest_index(s, n));
            if drawn.len() == target {
                break 'draw;
            }
            *s = soi_hash(k, s.as_slice());
            hashes += 1;
        }
        if hashes >= budget {
            break;
        }
    }
    let mut next = 0;
    while drawn.len() < target {
        if !drawn.contains(next) {
            drawn.insert(next);
        }
        next += 1;
    }
    drawn.into_sorted()
}

/// Normalises a quality over a sample's range as §3.3 describes:
/// `(Q + |min|) / (|max| + |min|)`; 1 when every quality in the sample is 0.
/// This is a min-max normalisation onto [0, 1] when `min ≤ 0 ≤ max`.
fn normalise(q: f64, min: f64, max: f64) -> f64 {
    let span = libm::fabs(max) + libm::fabs(min);
    if span > 0.0 {
        (q + libm::fabs(min)) / span
    } else {
        1.0
    }
}

/// Paragon §3.3 statistical selection among `n` servers: draws `samples`
/// candidates with [`sample_servers`], drops those for which `eligible` is
/// false (they still used up their draw: the cost stays constant), and
/// returns the eligible one of highest [`colocation_quality`] (ties → lower
/// index) with its quality normalised over the eligible sample.
///
/// `draw` is which decision this is ([`sample_servers`]).
/// `server_tolerated(i)` is server `i`'s tolerated scores. `None` when
/// `n == 0`, `samples == 0` or no sampled server is eligible.
pub fn statistical_select(
    app_caused: &[f64; SOURCES],
    draw: u64,
    n: u32,
    samples: u32,
    server_tolerated: impl Fn(u32) -> [f64; SOURCES],
    eligible: impl Fn(u32) -> bool,
) -> Option<(u32, f64)> {
    let mut best: Option<(u32, f64)> = None;
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    for i in sample_servers(app_caused, draw, n, samples) {
        if !eligible(i) {
            continue;
        }
        let q = colocation_quality(&server_tolerated(i), app_caused);
        if q < min {
            min = q;
        }
        if q > max {
            max = q;
        }
        // Indices come in increasing order: strict `>` keeps the lower on ties.
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((i, q));
        }
    }
    best.map(|(i, q)| (i, normalise(q, min, max)))
}

/// Probability that none of `r` candidates whose (normalised) qualities are
/// independent and uniform on [0, 1] reaches quality `q`: `q^r` (Paragon
/// §3.3, Fig. 5).
pub fn miss_probability(q: f64, r: u32) -> f64 {
    libm::pow(q, f64::from(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ground_truth::Source;

    const MB: usize = Source::MemoryBandwidth.index();

    /// All sources at `default`, with the listed overrides.
    fn scores(default: f64, overrides: &[(usize, f64)]) -> [f64; SOURCES] {
        let mut a = [default; SOURCES];
        for &(s, v) in overrides {
            a[s] = v;
        }
        a
    }

    /// A server running one application with these scores.
    fn loaded(tolerated: [f64; SOURCES], caused: [f64; SOURCES]) -> ServerInterference {
        let mut s = ServerInterference::new();
        s.add(1, &tolerated, &caused);
        s
    }

    fn cands<'a>(states: &'a [ServerInterference], classes: &[usize]) -> Vec<Candidate<'a>> {
        states
            .iter()
            .zip(classes)
            .enumerate()
            .map(|(i, (state, &class))| Candidate {
                index: i as u32,
                class,
                state,
            })
            .collect()
    }

    #[test]
    fn server_state_keeps_sum_of_caused_and_min_of_tolerated() {
        let mut s = ServerInterference::default();
        assert_eq!(s.caused(), [0.0; SOURCES]);
        assert_eq!(s.tolerated(), [100.0; SOURCES]);
        assert_eq!(s.apps(), 0);

        s.add(1, &scores(80.0, &[(0, 50.0)]), &scores(10.0, &[]));
        s.add(2, &scores(70.0, &[(0, 30.0)]), &scores(5.0, &[(3, 20.0)]));
        s.add(3, &scores(90.0, &[(0, 40.0)]), &scores(1.0, &[]));
        assert_eq!(s.apps(), 3);
        assert_eq!(s.tolerated(), scores(70.0, &[(0, 30.0)]));
        assert_eq!(s.caused(), scores(16.0, &[(3, 31.0)]));

        // Removing the minimum exposes the next smallest.
        assert!(s.remove(2));
        assert!(!s.remove(2), "already gone");
        assert!(!s.remove(99), "never there");
        assert_eq!(s.tolerated(), scores(80.0, &[(0, 40.0)]));
        assert_eq!(s.caused(), scores(11.0, &[]));

        // Re-adding an id replaces its scores rather than counting it twice.
        s.add(3, &scores(60.0, &[]), &scores(2.0, &[]));
        assert_eq!(s.apps(), 2);
        assert_eq!(s.tolerated(), scores(60.0, &[(0, 50.0)]));
        assert_eq!(s.caused(), scores(12.0, &[]));

        // Sums that do not cancel exactly in floating point still return to 0.
        s.add(4, &scores(100.0, &[]), &scores(0.1, &[]));
        s.add(5, &scores(100.0, &[]), &scores(0.2, &[]));
        for id in [1, 3, 4, 5] {
            assert!(s.remove(id));
        }
        assert_eq!(s.apps(), 0);
        assert_eq!(s.caused(), [0.0; SOURCES]);
        assert_eq!(s.tolerated(), [100.0; SOURCES]);
    }

    #[test]
    fn d1_and_d2_filter_then_class_then_tightest_fit() {
        // Aggressive on memory bandwidth, tolerates 60 everywhere.
        let app_t = scores(60.0, &[]);
        let app_c = scores(10.0, &[(MB, 70.0)]);
        let states = [
            // 0: its load tolerates only 50 on MB < 70 (D1 < 0); tight otherwise.
            loaded(scores(80.0, &[(MB, 50.0)]), scores(5.0, &[])),
            // 1: covers the app and is covered by it.
            loaded(scores(80.0, &[]), scores(5.0, &[])),
            // 2: tolerates the app but causes 70 on MB > 60 (D2 < 0).
            loaded(scores(80.0, &[]), scores(5.0, &[(MB, 70.0)])),
            // 3: empty: passes, but a loose fit.
            ServerInterference::new(),
        ];
        // Servers 0 and 2 would be the tightest fits if not filtered out.
        let l1 = |i: usize| deviation(&app_t, &app_c, &states[i]).0;
        assert!(l1(0) < l1(1) && l1(2) < l1(1) && l1(1) < l1(3));

        let speed = [0.8, 1.0];
        let same_class = cands(&states, &[0, 0, 0, 0]);
        let sel = select(
            &app_t,
            &app_c,
            &speed,
            &same_class,
            &GreedyParams::default(),
        )
        .unwrap();
        assert_eq!(sel.index, 1, "tightest fit among servers passing D1 and D2");
        assert_eq!(
            (sel.backtracked, sel.timed_out, sel.violation),
            (0, false, 0.0)
        );
        assert!(sel.steps > 0);

        // The empty server on the faster class wins despite its larger L1.
        let faster_empty = cands(&states, &[0, 0, 0, 1]);
        let sel = select(
            &app_t,
            &app_c,
            &speed,
            &faster_empty,
            &GreedyParams::default(),
        )
        .unwrap();
        assert_eq!(sel.index, 3);

        // A faster class among the filtered-out servers does not help them.
        let faster_bad = cands(&states, &[1, 0, 1, 0]);
        let sel = select(
            &app_t,
            &app_c,
            &speed,
            &faster_bad,
            &GreedyParams::default(),
        )
        .unwrap();
        assert_eq!(sel.index, 1);

        // Speeds within SPEED_TIE are one rank: the tighter fit wins again.
        let close = [1.0 - 1e-12, 1.0];
        let sel = select(
            &app_t,
            &app_c,
            &close,
            &faster_empty,
            &GreedyParams::default(),
        )
        .unwrap();
        assert_eq!(sel.index, 1);
    }

    #[test]
    fn backtracking_relaxes_the_previous_check() {
        // Checks in order: D1 on source 0 (80), D1 on source 1 (60), then
        // checks everyone passes (the app tolerates 100, causes 0 elsewhere).
        let app_t = scores(100.0, &[]);
        let app_c = scores(0.0, &[(0, 80.0), (1, 60.0)]);
        let states = [
            loaded(scores(100.0, &[(0, 90.0), (1, 50.0)]), scores(0.0, &[])), // fails 1
            loaded(scores(100.0, &[(0, 70.0), (1, 70.0)]), scores(0.0, &[])), // fails 0
            loaded(scores(100.0, &[(0, 10.0), (1, 10.0)]), scores(0.0, &[])), // fails both
        ];
        let c = cands(&states, &[0, 0, 0]);
        let sel = select(&app_t, &app_c, &[1.0], &c, &GreedyParams::default()).unwrap();
        // Server 0 alone survives source 0 and fails source 1: source 0 is
        // relaxed and server 1, which fails only source 0, is taken.
        assert_eq!(sel.index, 1);
        assert_eq!(sel.backtracked, 1);
        assert_eq!(sel.violation, 10.0, "D1 = 70 − 80 on source 0");
        assert!(!sel.timed_out);
    }

    #[test]
    fn backtracking_extends_to_two_levels() {
        let app_t = scores(100.0, &[]);
        let app_c = scores(0.0, &[(0, 80.0), (1, 60.0), (2, 40.0)]);
        let states = [
            // passes sources 0 and 1, fails 2
            loaded(
                scores(100.0, &[(0, 90.0), (1, 70.0), (2, 30.0)]),
                scores(0.0, &[]),
            ),
            // passes 0, fails 1 and 2
            loaded(
                scores(100.0, &[(0, 90.0), (1, 50.0), (2, 30.0)]),
                scores(0.0, &[]),
            ),
            // fails 0 only
            loaded(
                scores(100.0, &[(0, 70.0), (1, 70.0), (2, 50.0)]),
                scores(0.0, &[]),
            ),
        ];
        let c = cands(&states, &[0, 0, 0]);
        let sel = select(&app_t, &app_c, &[1.0], &c, &GreedyParams::default()).unwrap();
        // Source 2 empties {0}; dropping source 1 adds {1}, which fails too;
        // dropping source 0 as well adds {2}, which passes.
        assert_eq!(sel.index, 2);
        assert_eq!(sel.backtracked, 2);
        assert_eq!(sel.violation, 10.0);
    }

    #[test]
    fn a_check_nobody_meets_is_itself_relaxed() {
        let app_t = scores(100.0, &[]);
        let app_c = scores(0.0, &[(0, 95.0)]);
        // Nobody tolerates 95 on source 0; both pass every other check.
        let states = [
            loaded(scores(100.0, &[(0, 60.0)]), scores(0.0, &[])), // ‖D1+D2‖₁ 1865
            loaded(scores(50.0, &[(0, 90.0)]), scores(0.0, &[])),  // ‖D1+D2‖₁ 1445
            loaded(scores(100.0, &[(0, 90.0)]), scores(0.0, &[])), // ‖D1+D2‖₁ 1895
        ];
        let c = cands(&states, &[0, 0, 0]);
        let sel = select(&app_t, &app_c, &[1.0], &c, &GreedyParams::default()).unwrap();
        assert_eq!(sel.backtracked, 1, "only the impossible check is dropped");
        assert_eq!(sel.index, 1);
        assert_eq!(sel.violation, 5.0);
        assert_eq!(
            sel.steps,
            3 * 2 * SOURCES as u32,
            "every check tested on all three"
        );
    }

    #[test]
    fn step_bound_returns_the_best_examined_so_far() {
        // D2 is exactly 0 everywhere, so ‖D1 + D2‖₁ = Σ|D1|.
        let app_t = scores(50.0, &[]);
        let app_c = scores(50.0, &[]);
        let server = |t: [f64; SOURCES]| loaded(t, scores(50.0, &[]));
        let states = [
            server(scores(50.0, &[(0, 49.0)])), // violates D1 on source 0; L1 1
            server(scores(55.0, &[])),          // L1 50
            server(scores(53.0, &[])),          // L1 30
            server(scores(52.0, &[])),          // L1 20: the answer
        ];
        let c = cands(&states, &[0, 0, 0, 0]);
        let full = select(&app_t, &app_c, &[1.0], &c, &GreedyParams::default()).unwrap();
        assert_eq!((full.index, full.timed_out), (3, false));
        assert!(full.steps > 4);

        // Two tests: only servers 0 and 1 were examined; 0 fits closer.
        let tiny = GreedyParams {
            max_steps: 2,
            ..GreedyParams::default()
        };
        let sel = select(&app_t, &app_c, &[1.0], &c, &tiny).unwrap();
        assert!(sel.timed_out);
        assert_eq!(sel.steps, 2);
        assert_eq!(sel.index, 0);
        assert_eq!(sel.violation, 1.0);

        // After the first check (4 tests), server 0 is out of the running.
        let five = GreedyParams {
            max_steps: 5,
            ..GreedyParams::default()
        };
        let sel = select(&app_t, &app_c, &[1.0], &c, &five).unwrap();
        assert!(sel.timed_out);
        assert_eq!(sel.steps, 5);
        assert_eq!(sel.index, 3);
    }

    #[test]
    fn nh_and_ni_flags_change_the_choice() {
        let app_t = scores(100.0, &[]);
        let app_c = scores(60.0, &[]);
        let states = [
            loaded(scores(65.0, &[]), scores(0.0, &[])), // slow class, tight
            loaded(scores(50.0, &[]), scores(0.0, &[])), // fast class, violates D1
            loaded(scores(90.0, &[]), scores(0.0, &[])), // fast class, loose
        ];
        let c = cands(&states, &[0, 1, 1]);
        let speed = [0.5, 1.0];
        let run = |interference, heterogeneity| {
            let params = GreedyParams {
                interference,
                heterogeneity,
                ..GreedyParams::default()
            };
            select(&app_t, &app_c, &speed, &c, &params).unwrap()
        };
        assert_eq!(
            run(true, true).index,
            2,
            "Paragon: fast class among safe servers"
        );
        assert_eq!(run(true, false).index, 0, "NH: tightest safe server");
        let ni = run(false, true);
        assert_eq!(ni.index, 1, "NI: first fast server in slice order");
        assert_eq!((ni.steps, ni.violation), (0, 100.0));
        assert_eq!(run(false, false).index, 0, "neither: first candidate");

        // NI ties follow the slice order, not the index.
        let mut reversed = c.clone();
        reversed.reverse();
        let params = GreedyParams {
            interference: false,
            ..GreedyParams::default()
        };
        assert_eq!(
            select(&app_t, &app_c, &speed, &reversed, &params)
                .unwrap()
                .index,
            2
        );

        assert!(select(&app_t, &app_c, &speed, &[], &GreedyParams::default()).is_none());
    }

    #[test]
    fn colocation_quality_sign_and_magnitude() {
        let c = scores(40.0, &[]);
        assert_eq!(colocation_quality(&c, &c), 1.0, "perfect fit");
        assert_eq!(
            colocation_quality(&scores(100.0, &[]), &scores(0.0, &[])),
            0.0
        );
        let close = colocation_quality(&scores(50.0, &[]), &c);
        assert!((close - 0.9).abs() < 1e-12);
        let violating = colocation_quality(&scores(30.0, &[]), &c);
        assert!((violating + 0.9).abs() < 1e-12);
        // Mixed: +30 on one source, −10 on two: S = 10 > 0, L = 50.
        let mixed = colocation_quality(&scores(40.0, &[(0, 70.0), (1, 30.0), (2, 30.0)]), &c);
        assert!((mixed - 0.95).abs() < 1e-12);
        // Tighter fits rank higher among QoS-preserving servers.
        let looser = colocation_quality(&scores(60.0, &[]), &c);
        assert!(close > looser && looser > 0.0 && violating < 0.0);
    }

    /// A deterministic spread of servers for the sampling tests.
    fn tolerated_of(i: u32) -> [f64; SOURCES] {
        let mut t = [0.0; SOURCES];
        for (k, v) in t.iter_mut().enumerate() {
            *v = f64::from((i * 37 + k as u32 * 11) % 81) + 19.0;
        }
        t
    }

    fn exhaustive_best(
        app_c: &[f64; SOURCES],
        pool: &[u32],
        eligible: impl Fn(u32) -> bool,
    ) -> (u32, f64) {
        let mut best: Option<(u32, f64)> = None;
        for &i in pool {
            let q = colocation_quality(&tolerated_of(i), app_c);
            if eligible(i) && best.is_none_or(|(_, b)| q > b) {
                best = Some((i, q));
            }
        }
        best.unwrap()
    }

    #[test]
    fn sampling_is_deterministic_distinct_and_pinned() {
        let app_c = scores(50.0, &[(MB, 80.0)]);
        let s = sample_servers(&app_c, 0, 1000, 16);
        assert_eq!(s.len(), 16);
        assert!(s.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
        assert!(s.iter().all(|&i| i < 1000));
        assert_eq!(s, sample_servers(&app_c, 0, 1000, 16));
        assert_ne!(s, sample_servers(&scores(50.0, &[(MB, 81.0)]), 0, 1000, 16));
        // Another decision for the same application meets other servers.
        let again = sample_servers(&app_c, 1, 1000, 16);
        assert_eq!(again.len(), 16);
        assert!(
            again.iter().filter(|i| s.contains(i)).count() < 4,
            "{s:?} {again:?}"
        );
        // A longer draw extends a shorter one, whichever bookkeeping it uses
        // (4 of 1000: sorted vector; 16 and 400: bitmap).
        let four = sample_servers(&app_c, 0, 1000, 4);
        let big = sample_servers(&app_c, 0, 1000, 400);
        assert_eq!(big.len(), 400);
        assert!(four.iter().all(|i| s.contains(i)));
        assert!(s.iter().all(|i| big.contains(i)));
        assert_eq!(
            sample_servers(&app_c, 0, 37, 100),
            (0..37).collect::<Vec<_>>()
        );
        assert!(sample_servers(&app_c, 0, 0, 5).is_empty());
        // Pinned: changing the hashing changes every statistical placement.
        assert_eq!(four, PINNED);
    }

    const PINNED: [u32; 4] = [82, 807, 913, 991];

    #[test]
    fn statistical_select_takes_the_best_sampled_eligible_server() {
        let app_c = scores(45.0, &[(MB, 70.0)]);
        let n = 200;
        let sample = sample_servers(&app_c, 0, n, 12);
        let (i, q) = statistical_select(&app_c, 0, n, 12, tolerated_of, |_| true).unwrap();
        let (best, best_q) = exhaustive_best(&app_c, &sample, |_| true);
        assert_eq!(i, best);
        assert!(best_q > 0.0);
        assert_eq!(
            q, 1.0,
            "the best of a sample with a non-negative max normalises to 1"
        );
        assert_eq!(
            statistical_select(&app_c, 0, n, 12, tolerated_of, |_| true),
            Some((i, q)),
            "deterministic"
        );

        // Without the best, the next best sampled server; ineligible servers
        // still used up their draw, so nothing outside the sample is taken.
        let not_best = |j: u32| j != best;
        let (j, _) = statistical_select(&app_c, 0, n, 12, tolerated_of, not_best).unwrap();
        assert_ne!(j, best);
        assert!(sample.contains(&j));
        assert_eq!(j, exhaustive_best(&app_c, &sample, not_best).0);
        assert_eq!(
            statistical_select(&app_c, 0, n, 12, tolerated_of, |_| false),
            None
        );
        assert_eq!(
            statistical_select(&app_c, 0, 0, 12, tolerated_of, |_| true),
            None
        );
        assert_eq!(
            statistical_select(&app_c, 0, n, 0, tolerated_of, |_| true),
            None
        );

        // Sampling every server finds the exhaustive optimum.
        let all: Vec<u32> = (0..n).collect();
        let (k, _) = statistical_select(&app_c, 0, n, n, tolerated_of, |_| true).unwrap();
        assert_eq!(k, exhaustive_best(&app_c, &all, |_| true).0);
        let (k, _) = statistical_select(&app_c, 0, n, 5 * n, tolerated_of, |j| j % 3 == 0).unwrap();
        assert_eq!(k, exhaustive_best(&app_c, &all, |j| j % 3 == 0).0);
    }

    #[test]
    fn normalisation_follows_the_papers_example() {
        // Qualities in [−1.2, 0.8]: Q = −1.0 normalises to 0.1.
        assert!((normalise(-1.0, -1.2, 0.8) - 0.1).abs() < 1e-12);
        assert_eq!(normalise(0.8, -1.2, 0.8), 1.0);
        assert_eq!(normalise(-1.2, -1.2, 0.8), 0.0);
        assert_eq!(normalise(0.0, 0.0, 0.0), 1.0);
    }

    #[test]
    fn miss_probability_matches_fig_5() {
        // 128 candidates: about 10⁻⁶ chance that none reaches 0.9.
        let p128 = miss_probability(0.9, 128);
        assert!(p128 > 1e-6 && p128 < 2e-6, "{p128}");
        // 64 candidates: about 10⁻³.
        let p64 = miss_probability(0.9, 64);
        assert!(p64 > 1e-3 && p64 < 2e-3, "{p64}");
        assert_eq!(miss_probability(1.0, 64), 1.0);
        assert_eq!(miss_probability(0.3, 0), 1.0);
        assert!(miss_probability(0.5, 16) < miss_probability(0.5, 8));
    }
}
