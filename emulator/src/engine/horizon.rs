//! How far each partition may run before it must hear from the others.
//!
//! MODEL.md §2 gives every partition the window `[t, t + L)`, with `L` the
//! smallest latency of any message. Where the actors' messages follow a
//! network, most actors are several links away from any other partition,
//! so a partition can safely run further: the classic distance-based
//! lookahead of conservative simulation.
//!
//! For every actor `x` and partition `q`, [`Distances`] holds `D[x][q]`: the
//! least total latency of a chain of messages that starts at `x` and ends
//! with a message entering `q` from outside it (for `x` inside `q` the chain
//! must leave and come back). An event at `x` at time `t` can therefore
//! cause nothing to arrive in `q` from elsewhere before `t + D[x][q]`. Each
//! partition sums this up over its pending events and the envelopes it
//! sends, for every partition but the one that will handle them, into a
//! [`Horizon`]; the element-wise minimum over all partitions bounds
//! partition `q`'s next window. The events `q` handles reach `q` from
//! outside only through the envelopes they send out, so instead of counting
//! them in advance `q` ends its window, as each envelope leaves, where that
//! envelope's consequences could first come back: in a datacenter most
//! events (a server's report to a scheduler in its own partition, a packet
//! between two of its switches) never leave. A partition alone has no
//! outside, so its window is the whole run.
//!
//! The model declares its links in a [`Reach`]. With several partitions and
//! a declared graph, the engine checks every message against the distances
//! (`D[x][q] ≤ latency + D[y][q]`, or `≤ latency` when the message enters
//! `q`; with [`Reach::Uniform`], `Ctx::send`'s lookahead check is the same
//! condition), so a model that sends faster than it declared fails loudly
//! instead of breaking causality.

use dcemu_topology::SimTime;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Who can message whom, and at what least latency.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Reach {
    /// Any actor may message any other with the engine's lookahead `L`.
    #[default]
    Uniform,
    /// `links[x]` lists every `(y, least latency)` actor `x` may message
    /// (besides itself). Each latency must be at least `L`.
    Graph(Vec<Vec<(u32, SimTime)>>),
}

/// `D[x][q]` for every actor and partition (see the module docs);
/// `SimTime::MAX` where no chain exists.
#[derive(Clone, Debug)]
pub struct Distances {
    partitions: usize,
    table: Vec<SimTime>,
    /// `alike[p]`: an actor of partition `p` when all its actors have the
    /// same distances (always so in a flat network).
    alike: Vec<Option<usize>>,
    /// `class[x]`: actors with equal distances share a class (in a 3-tier
    /// network: a handful per partition, by tier and position).
    class: Vec<u32>,
    /// The distances of each class.
    class_rows: Vec<Vec<SimTime>>,
}

impl Distances {
    /// Computes the distances of `reach` under `assignment[actor] = partition`.
    pub fn new(
        reach: &Reach,
        lookahead: SimTime,
        assignment: &[usize],
        partitions: usize,
    ) -> Result<Self, String> {
        let n = assignment.len();
        let mut table = vec![SimTime::MAX; n * partitions];
        match reach {
            Reach::Uniform => {
                let mut sizes = vec![0usize; partitions];
                for &p in assignment {
                    sizes[p] += 1;
                }
                for (x, &px) in assignment.iter().enumerate() {
                    for q in 0..partitions {
                        let outside = n - sizes[q];
                        table[x * partitions + q] = if sizes[q] == 0 {
                            SimTime::MAX
                        } else if px != q {
                            lookahead
                        } else if outside > 0 {
                            lookahead.saturating_mul(2)
                        } else {
                            SimTime::MAX
                        };
                    }
                }
            }
            Reach::Graph(links) => {
                if links.len() != n {
                    return Err(format!(
                        "the reach graph has {} actors, the run {n}",
                        links.len()
                    ));
                }
                let mut into: Vec<Vec<(u32, SimTime)>> = vec![Vec::new(); n];
                for (x, out) in links.iter().enumerate() {
                    for &(y, w) in out {
                        if y as usize >= n {
                            return Err(format!("actor #{x} links to unknown actor #{y}"));
                        }
                        if w < lookahead {
                            return Err(format!(
                                "the link #{x} → #{y} ({w} ns) is below the lookahead ({lookahead} ns)"
                            ));
                        }
                        into[y as usize].push((x as u32, w));
                    }
                }
                let mut dist = vec![SimTime::MAX; n];
                for q in 0..partitions {
                    dist.fill(SimTime::MAX);
                    let mut heap = BinaryHeap::new();
                    for (x, out) in links.iter().enumerate() {
                        if assignment[x] == q {
                            continue;
                        }
                        for &(y, w) in out {
                            if assignment[y as usize] == q && w < dist[x] {
                                dist[x] = w;
                            }
                        }
                        if dist[x] < SimTime::MAX {
                            heap.push(Reverse((dist[x], x as u32)));
                        }
                    }
                    while let Some(Reverse((d, v))) = heap.pop() {
                        if d > dist[v as usize] {
                            continue;
                        }
                        for &(u, w) in &into[v as usize] {
                            let via = d.saturating_add(w);
                            if via < dist[u as usize] {
                                dist[u as usize] = via;
                                heap.push(Reverse((via, u)));
                            }
                        }
                    }
                    for (x, &d) in dist.iter().enumerate() {
                        table[x * partitions + q] = d;
                    }
                }
            }
        }
        let mut alike: Vec<Option<usize>> = vec![None; partitions];
        let row = |a: usize| &table[a * partitions..(a + 1) * partitions];
        let mut differ = vec![false; partitions];
        for (x, &p) in assignment.iter().enumerate() {
            match alike[p] {
                None => alike[p] = Some(x),
                Some(first) => differ[p] |= row(first) != row(x),
            }
        }
        for (a, d) in alike.iter_mut().zip(differ) {
            if d {
                *a = None;
            }
        }
        let mut classes: std::collections::BTreeMap<&[SimTime], u32> = Default::default();
        let mut class = Vec::with_capacity(n);
        for x in 0..n {
            let row = &table[x * partitions..(x + 1) * partitions];
            let next = classes.len() as u32;
            class.push(*classes.entry(row).or_insert(next));
        }
        let mut class_rows = vec![Vec::new(); classes.len()];
        for (row, &c) in &classes {
            class_rows[c as usize] = row.to_vec();
        }
        Ok(Distances {
            partitions,
            table,
            alike,
            class,
            class_rows,
        })
    }

    /// The class of actor `x`: actors of one class have equal distances.
    #[inline]
    pub fn class(&self, x: usize) -> usize {
        self.class[x] as usize
    }

    /// How many classes there are.
    pub fn classes(&self) -> usize {
        self.class_rows.len()
    }

    /// The distances of class `c`.
    pub fn class_row(&self, c: usize) -> &[SimTime] {
        &self.class_rows[c]
    }

    /// An actor of partition `p` whose distances every actor of `p`
    /// shares, if they all share them.
    pub fn alike(&self, p: usize) -> Option<usize> {
        self.alike.get(p).copied().flatten()
    }

    /// `D[x][·]`, one entry per partition.
    #[inline]
    pub fn of(&self, actor: usize) -> &[SimTime] {
        &self.table[actor * self.partitions..(actor + 1) * self.partitions]
    }
}

/// Moves every relay (an actor with links to more than one other, e.g. a
/// switch) to the partition most of its neighbours are in, nearest relays
/// to the leaves first (ties go to the partition that has taken the fewest
/// relays so far, then the lowest: a datacenter's core switches, whose
/// neighbours split evenly, are shared out rather than all put with the
/// first partition, which already hosts the scheduler). Keeping a rack's
/// switch with its servers, and a pod's with its racks, puts most actors
/// several hops from any other partition, which is what lets windows grow.
/// Does nothing with [`Reach::Uniform`].
pub fn place_relays(reach: &Reach, assignment: &mut [usize], partitions: usize) {
    let Reach::Graph(links) = reach else {
        return;
    };
    if links.len() != assignment.len() || partitions < 2 {
        return;
    }
    let RelayOrder {
        relay,
        undirected,
        order,
        ..
    } = relay_order(links);
    let mut placed: Vec<bool> = relay.iter().map(|r| !r).collect();
    let mut votes = vec![0usize; partitions];
    let mut taken = vec![0usize; partitions];
    for x in order {
        votes.fill(0);
        for &y in &undirected[x] {
            if placed[y as usize] {
                votes[assignment[y as usize]] += 1;
            }
        }
        let best = votes
            .iter()
            .enumerate()
            .max_by(|a, b| {
                a.1.cmp(b.1)
                    .then(taken[b.0].cmp(&taken[a.0]))
                    .then(b.0.cmp(&a.0))
            })
            .map_or(0, |(p, _)| p);
        if votes[best] > 0 {
            assignment[x] = best;
        }
        taken[assignment[x]] += 1;
        placed[x] = true;
    }
}

/// A graph's relays (actors linked to more than one other) ordered by
/// their distance in links from the nearest leaf, nearest first.
pub(crate) struct RelayOrder {
    pub relay: Vec<bool>,
    /// Every link, both ways.
    pub undirected: Vec<Vec<u32>>,
    /// Links from the nearest leaf (0 for leaves; `u32::MAX` if none).
    pub depth: Vec<u32>,
    pub order: Vec<usize>,
}

pub(crate) fn relay_order(links: &[Vec<(u32, SimTime)>]) -> RelayOrder {
    let relay: Vec<bool> = links.iter().map(|l| l.len() > 1).collect();
    let mut undirected: Vec<Vec<u32>> = vec![Vec::new(); links.len()];
    for (x, out) in links.iter().enumerate() {
        for &(y, _) in out {
            undirected[x].push(y);
            undirected[y as usize].push(x as u32);
        }
    }
    let mut depth = vec![u32::MAX; links.len()];
    let mut frontier: std::collections::VecDeque<usize> =
        (0..links.len()).filter(|&x| !relay[x]).collect();
    for &x in &frontier {
        depth[x] = 0;
    }
    let mut order = Vec::new();
    while let Some(x) = frontier.pop_front() {
        if relay[x] {
            order.push(x);
        }
        for &y in &undirected[x] {
            if depth[y as usize] == u32::MAX {
                depth[y as usize] = depth[x] + 1;
                frontier.push_back(y as usize);
            }
        }
    }
    RelayOrder {
        relay,
        undirected,
        depth,
        order,
    }
}

/// What a partition tells the others at the end of a window, and, merged
/// over all partitions, what they agree on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Horizon {
    /// The earliest pending event or envelope in flight (`SimTime::MAX`
    /// when there is none).
    pub next: SimTime,
    /// `reach[q]`: nothing from outside partition `q` arrives there before
    /// this time.
    pub reach: Vec<SimTime>,
}

impl Horizon {
    /// Nothing pending, for `partitions` partitions.
    pub fn idle(partitions: usize) -> Self {
        Horizon {
            next: SimTime::MAX,
            reach: vec![SimTime::MAX; partitions],
        }
    }

    /// A horizon that speaks of no partition, for a field nobody reads.
    pub fn unused() -> Self {
        Horizon {
            next: SimTime::MAX,
            reach: Vec::new(),
        }
    }

    /// Takes the element-wise minimum with `other`, which must speak of as
    /// many partitions.
    pub fn merge(&mut self, other: &Horizon) -> Result<(), String> {
        if other.reach.len() != self.reach.len() {
            return Err(format!(
                "a horizon over {} partitions where the run has {}",
                other.reach.len(),
                self.reach.len()
            ));
        }
        self.next = self.next.min(other.next);
        for (mine, theirs) in self.reach.iter_mut().zip(&other.reach) {
            *mine = (*mine).min(*theirs);
        }
        Ok(())
    }

    /// Lowers the horizon for an event (or envelope) at time `t` of an
    /// actor with distances `d`.
    #[inline]
    pub fn include(&mut self, t: SimTime, d: &[SimTime]) {
        for (r, &dq) in self.reach.iter_mut().zip(d) {
            let at = t.saturating_add(dq);
            if at < *r {
                *r = at;
            }
        }
    }

    /// [`Horizon::include`] for every partition but `own`: for an event
    /// that partition `own` will handle, whose way back into `own` that
    /// partition bounds itself as it sends.
    #[inline]
    pub fn include_others(&mut self, t: SimTime, d: &[SimTime], own: usize) {
        for (q, (r, &dq)) in self.reach.iter_mut().zip(d).enumerate() {
            let at = t.saturating_add(dq);
            if at < *r && q != own {
                *r = at;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line a — b — c — d, 10 ns per link, a and b in partition 0.
    fn line() -> Reach {
        let l = |x: u32| (x, 10);
        Reach::Graph(vec![
            vec![l(1)],
            vec![l(0), l(2)],
            vec![l(1), l(3)],
            vec![l(2)],
        ])
    }

    #[test]
    fn graph_distances_count_links_to_the_nearest_entry() {
        let d = Distances::new(&line(), 10, &[0, 0, 1, 1], 2).unwrap();
        // into partition 1: a is two links from c, b one; back into 0, a
        // must go out to c and in again: three links
        assert_eq!(d.of(0), &[30, 20]);
        assert_eq!(d.of(1), &[20, 10]);
        assert_eq!(d.of(2), &[10, 20]);
        assert_eq!(d.of(3), &[20, 30]);
    }

    #[test]
    fn one_partition_has_no_outside() {
        let d = Distances::new(&line(), 10, &[0, 0, 0, 0], 1).unwrap();
        assert!((0..4).all(|x| d.of(x) == [SimTime::MAX]));
        let u = Distances::new(&Reach::Uniform, 10, &[0, 0], 1).unwrap();
        assert_eq!(u.of(1), &[SimTime::MAX]);
    }

    #[test]
    fn uniform_distances_are_one_or_two_lookaheads() {
        let d = Distances::new(&Reach::Uniform, 7, &[0, 1, 1], 3).unwrap();
        assert_eq!(d.of(0), &[14, 7, SimTime::MAX]);
        assert_eq!(d.of(1), &[7, 14, SimTime::MAX]);
    }

    #[test]
    fn links_below_the_lookahead_or_to_nobody_are_refused() {
        let bad = Reach::Graph(vec![vec![(1, 5)], vec![]]);
        assert!(
            Distances::new(&bad, 10, &[0, 1], 2)
                .unwrap_err()
                .contains("below the lookahead")
        );
        let gone = Reach::Graph(vec![vec![(9, 50)], vec![]]);
        assert!(
            Distances::new(&gone, 10, &[0, 1], 2)
                .unwrap_err()
                .contains("unknown actor")
        );
    }

    #[test]
    fn relays_join_the_partition_of_most_of_their_neighbours() {
        // leaves 0..4; relay 4 links 0, 1, 2; relay 5 links 3 and relay 4
        let l = |x: u32| (x, 10);
        let reach = Reach::Graph(vec![
            vec![l(4)],
            vec![l(4)],
            vec![l(4)],
            vec![l(5)],
            vec![l(0), l(1), l(2), l(5)],
            vec![l(3), l(4)],
        ]);
        let mut a = vec![0, 1, 1, 0, 0, 0];
        place_relays(&reach, &mut a, 2);
        assert_eq!(
            a,
            vec![0, 1, 1, 0, 1, 0],
            "4 follows 1 and 2; 5 ties and goes where fewer relays are"
        );
        // two relays each between a leaf of either partition (core switches
        // over two pods): shared out, not both with partition 0
        // (leaves 0, 1; access 2, 3; core 4, 5)
        let core = Reach::Graph(vec![
            vec![l(2)],
            vec![l(3)],
            vec![l(0), l(4), l(5)],
            vec![l(1), l(4), l(5)],
            vec![l(2), l(3)],
            vec![l(2), l(3)],
        ]);
        let mut a = vec![0, 1, 0, 0, 0, 0];
        place_relays(&core, &mut a, 2);
        assert_eq!(a, vec![0, 1, 0, 1, 0, 1]);
        let mut flat = vec![0, 1];
        place_relays(&Reach::Uniform, &mut flat, 2);
        assert_eq!(flat, vec![0, 1]);
    }

    #[test]
    fn horizons_merge_element_wise_and_refuse_other_sizes() {
        let mut h = Horizon::idle(2);
        h.include(100, &[10, 40]);
        assert_eq!(h.reach, vec![110, 140]);
        h.merge(&Horizon {
            next: 90,
            reach: vec![200, 120],
        })
        .unwrap();
        assert_eq!((h.next, h.reach.clone()), (90, vec![110, 120]));
        assert!(h.merge(&Horizon::idle(3)).is_err());
    }

    #[test]
    fn an_event_pending_at_home_bounds_only_the_other_partitions() {
        let mut h = Horizon::idle(3);
        h.include_others(100, &[10, 20, 30], 1);
        assert_eq!(h.reach, vec![110, SimTime::MAX, 130]);
        h.include_others(50, &[100, 5, 100], 0);
        assert_eq!(h.reach, vec![110, 55, 130]);
    }
}
