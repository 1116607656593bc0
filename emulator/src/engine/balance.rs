//! Partitions by measured work (issue 43): a run writes each actor's events
//! and the wall time they took to `work.csv` beside its results; a later
//! run of the same scenario given that directory (`--balance-from`) cuts
//! its contiguous blocks of actors where the measured time, not the count
//! of actors, is split evenly. The scheduler of a Paragon datacenter does
//! half of the work in 7 % of the events, so a split by count leaves one
//! partition computing while the other waits.
//!
//! The file also records the memory each actor held at the end of virtual
//! time ([`crate::heap`]); `--balance-by memory` cuts by that instead, for
//! a coordinator whose nodes must each hold a fair share of the model's
//! memory (a scheduler's view of 100,000 servers weighs as much as a
//! quarter of them).
//!
//! Either way a cut falls among the leaves (servers, the scheduler,
//! tenants) and each switch then follows its neighbours, so a switch's
//! weight is first moved onto the leaves below it
//! ([`fold_relays_onto_leaves`]).
//!
//! Which actor lands where never changes a result (MODEL.md §2); the file
//! only moves the cuts, so a stale or foreign file is refused rather than
//! guessed at.

use std::path::{Path, PathBuf};

use super::Reach;
use super::horizon::{RelayOrder, relay_order};

/// The file a run writes its measured work to, in its results directory.
pub const WORK_FILE: &str = "work.csv";

const HEADER: &str = "actor,events,busy_ns,held_bytes";

/// The header of files written before `held_bytes` (time only).
const HEADER_TIME_ONLY: &str = "actor,events,busy_ns";

/// What a cut evens out between partitions (`--balance-by`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Weigh {
    /// The wall time each actor's events took: partitions that finish
    /// their windows together.
    #[default]
    Time,
    /// The memory each actor held at the end of virtual time: nodes that
    /// peak alike.
    Memory,
}

/// Why a work file cannot balance this run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BalanceError {
    #[error("{path}: cannot read it: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{path}: line {line}: {problem}")]
    Line {
        path: PathBuf,
        line: usize,
        problem: String,
    },
    #[error(
        "{path}: it measures {found} actors but this scenario has {expected}: \
         balance from a run of the same scenario"
    )]
    Count {
        path: PathBuf,
        found: usize,
        expected: usize,
    },
}

/// `work.csv`'s text: one row per actor in id order, `(name, events,
/// busy_ns, held_bytes)`.
pub fn work_csv<'a>(actors: impl Iterator<Item = (&'a str, u64, u64, u64)>) -> Vec<u8> {
    let mut out = format!("{HEADER}\n");
    for (name, events, busy_ns, held_bytes) in actors {
        out.push_str(&format!("{name},{events},{busy_ns},{held_bytes}\n"));
    }
    out.into_bytes()
}

/// Each actor's weight from `dir`'s [`WORK_FILE`]: its measured wall time
/// or held heap, as `by` says (plus one, so an idle actor still counts),
/// checked row by row against `names`, this run's actors in id order. A
/// file from before `held_bytes` still gives times.
pub fn read_weights(dir: &Path, names: &[String], by: Weigh) -> Result<Vec<u64>, BalanceError> {
    let path = dir.join(WORK_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| BalanceError::Read {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let line_err = |line: usize, problem: String| BalanceError::Line {
        path: path.clone(),
        line,
        problem,
    };
    let mut lines = text.lines();
    let width = match (lines.next(), by) {
        (Some(HEADER), _) => 4,
        (Some(HEADER_TIME_ONLY), Weigh::Time) => 3,
        (Some(HEADER_TIME_ONLY), Weigh::Memory) => {
            return Err(line_err(
                1,
                "it has no `held_bytes` column (written before memory was measured): \
                 run the scenario again to balance by memory"
                    .into(),
            ));
        }
        (other, _) => {
            return Err(line_err(
                1,
                format!("expected the header `{HEADER}`, found {other:?}"),
            ));
        }
    };
    let rows: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    if rows.len() != names.len() {
        return Err(BalanceError::Count {
            path,
            found: rows.len(),
            expected: names.len(),
        });
    }
    rows.iter()
        .zip(names)
        .enumerate()
        .map(|(i, (row, name))| {
            let line = i + 2;
            let fields: Vec<&str> = row.split(',').collect();
            if fields.len() != width {
                return Err(line_err(
                    line,
                    format!("expected {width} fields, found {}", fields.len()),
                ));
            }
            if fields[0] != name {
                return Err(line_err(
                    line,
                    format!(
                        "expected actor `{name}`, found `{}`: the file is from another scenario",
                        fields[0]
                    ),
                ));
            }
            let number = |field: &str, what: &str| {
                field
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| line_err(line, format!("{what} `{field}` is not a whole number")))
            };
            number(fields[1], "events")?;
            let busy = number(fields[2], "busy_ns")?;
            let held = match fields.get(3) {
                Some(f) => number(f, "held_bytes")?,
                None => 0,
            };
            let w = match by {
                Weigh::Time => busy,
                Weigh::Memory => held,
            };
            Ok(w.saturating_add(1))
        })
        .collect()
}

/// `weights` with each relay's (switch's) weight moved onto the leaves
/// below it, spread evenly, nearest relays first: an access switch's onto
/// its rack, an aggregation switch's onto its pod, a core switch's onto
/// every server. A cut is made among the leaves, and each relay then
/// follows most of its neighbours ([`super::horizon::place_relays`]), so a
/// relay's weight lands where its leaves do. Counting it at its place in
/// id order instead (after every server) weighed a pod's switches on the
/// other side of the scale from where they went: at 10,000 servers their
/// power histories were 45 MB of the scheduler's node's 210 MB of heap.
///
/// With `placed` (where a first cut put every actor), a relay's weight
/// goes only to the leaves below it placed where it was: a pod cut in two
/// follows the side most of its racks are on, with the weight of its
/// aggregation switches (64 MB each at 100,000 servers). [`cut_twice`]
/// does both passes. The total is kept; a relay with no leaf below it
/// keeps its own weight. Weights are returned unchanged with
/// [`Reach::Uniform`] or a graph of another size.
pub fn fold_relays_onto_leaves(
    reach: &Reach,
    weights: &[u64],
    placed: Option<&[usize]>,
) -> Vec<u64> {
    match graph_of(reach, weights) {
        Some(order) => fold(&order, weights, placed),
        None => weights.to_vec(),
    }
}

/// The relay order of `reach` when it is a graph of `weights.len()` actors.
fn graph_of(reach: &Reach, weights: &[u64]) -> Option<RelayOrder> {
    match reach {
        Reach::Graph(links) if links.len() == weights.len() => Some(relay_order(links)),
        _ => None,
    }
}

fn fold(order: &RelayOrder, weights: &[u64], placed: Option<&[usize]>) -> Vec<u64> {
    let mut folded = weights.to_vec();
    let RelayOrder {
        relay,
        undirected,
        depth,
        order,
    } = order;
    let mut below: Vec<Vec<u32>> = vec![Vec::new(); weights.len()];
    for &x in order {
        let mut leaves: Vec<u32> = Vec::new();
        for &y in &undirected[x] {
            if depth[y as usize] >= depth[x] {
                continue;
            }
            if relay[y as usize] {
                leaves.extend_from_slice(&below[y as usize]);
            } else {
                leaves.push(y);
            }
        }
        leaves.sort_unstable();
        leaves.dedup();
        let beside: Vec<u32> = match placed {
            Some(p) if p.len() == weights.len() => leaves
                .iter()
                .copied()
                .filter(|&l| p[l as usize] == p[x])
                .collect(),
            _ => Vec::new(),
        };
        let onto = if beside.is_empty() { &leaves } else { &beside };
        let n = onto.len() as u64;
        if let (Some(each), Some(rest)) = (folded[x].checked_div(n), folded[x].checked_rem(n)) {
            for (i, &leaf) in onto.iter().enumerate() {
                folded[leaf as usize] += each + u64::from((i as u64) < rest);
            }
            folded[x] = 0;
        }
        below[x] = leaves;
    }
    folded
}

/// Cuts by `weights` twice: first with every relay's weight folded onto
/// all the leaves below it, then onto those of its own side of that first
/// cut ([`fold_relays_onto_leaves`]). `cut` turns folded weights into an
/// assignment, relays placed.
pub fn cut_twice(reach: &Reach, weights: &[u64], cut: impl Fn(&[u64]) -> Vec<usize>) -> Vec<usize> {
    let Some(order) = graph_of(reach, weights) else {
        return cut(weights);
    };
    let first = cut(&fold(&order, weights, None));
    cut(&fold(&order, weights, Some(&first)))
}

/// Contiguous blocks of `weights.len()` items over `partitions`, cut where
/// the cumulative weight crosses each `k / partitions` of the total: an
/// item goes to the block its weight's midpoint falls in, so one heavy item
/// (the scheduler) takes a block nearly to itself. Non-decreasing; a block
/// may be empty when one item outweighs it.
pub fn weighted_blocks(weights: &[u64], partitions: usize) -> Vec<usize> {
    let partitions = partitions.max(1);
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if total == 0 {
        let n = weights.len().max(1);
        return (0..weights.len()).map(|i| i * partitions / n).collect();
    }
    let mut before: u128 = 0;
    weights
        .iter()
        .map(|&w| {
            let mid = 2 * before + u128::from(w);
            before += u128::from(w);
            let p = mid * partitions as u128 / (2 * total);
            (p as usize).min(partitions - 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heavy_first_item_takes_a_block_and_blocks_stay_contiguous() {
        let mut w = vec![55u64];
        w.extend(std::iter::repeat_n(1, 45));
        let b = weighted_blocks(&w, 2);
        assert_eq!(b[0], 0);
        assert!(b[1..].iter().all(|&p| p == 1), "{b:?}");
        let even = weighted_blocks(&[1; 10], 2);
        assert_eq!(even, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
        let three = weighted_blocks(&[5, 1, 1, 1, 1, 1, 5, 1, 1, 1, 1, 1], 3);
        assert!(three.windows(2).all(|p| p[0] <= p[1]), "{three:?}");
        assert_eq!(three.last(), Some(&2));
        assert_eq!(weighted_blocks(&[0, 0, 0, 0], 2), [0, 0, 1, 1]);
    }

    #[test]
    fn relays_weights_go_to_the_leaves_below_them_and_the_total_is_kept() {
        // leaves 0..4; access 4 over 0, 1 and access 5 over 2, 3; core 6
        // over both access switches
        let l = |x: u32| (x, 10);
        let reach = Reach::Graph(vec![
            vec![l(4)],
            vec![l(4)],
            vec![l(5)],
            vec![l(5)],
            vec![l(0), l(1), l(6)],
            vec![l(2), l(3), l(6)],
            vec![l(4), l(5)],
        ]);
        let folded = fold_relays_onto_leaves(&reach, &[1, 1, 1, 1, 10, 20, 9], None);
        assert_eq!(folded, vec![9, 8, 13, 13, 0, 0, 0]);
        assert_eq!(folded.iter().sum::<u64>(), 43);
        assert_eq!(
            fold_relays_onto_leaves(&Reach::Uniform, &[1, 2], None),
            vec![1, 2],
            "no graph, nothing to fold"
        );
        // cut by the folded weights, leaf 0's side holds as much as 1's
        let blocks = weighted_blocks(&folded[..4], 2);
        assert_eq!(blocks, [0, 0, 1, 1]);
        assert_eq!(
            weighted_blocks(&[1, 1, 1, 1, 10, 20, 9], 2),
            [0, 0, 0, 0, 0, 1, 1],
            "unfolded, every leaf lands on one side"
        );
        // the core switch placed with partition 1 weighs on its leaves there
        let placed = [0, 0, 1, 1, 0, 1, 1];
        let second = fold_relays_onto_leaves(&reach, &[1, 1, 1, 1, 10, 20, 9], Some(&placed));
        assert_eq!(second, vec![6, 6, 16, 15, 0, 0, 0]);
    }

    #[test]
    fn a_work_file_reads_back_and_a_foreign_one_is_refused_with_the_line() {
        let dir = std::env::temp_dir().join(format!("dcemu-balance-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names: Vec<String> = ["scheduler", "server-0000", "server-0001"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows = [
            ("scheduler", 7, 900, 5_000),
            ("server-0000", 3, 0, 40),
            ("server-0001", 2, 50, 0),
        ];
        std::fs::write(dir.join(WORK_FILE), work_csv(rows.into_iter())).unwrap();
        assert_eq!(
            read_weights(&dir, &names, Weigh::Time).unwrap(),
            [901, 1, 51]
        );
        assert_eq!(
            read_weights(&dir, &names, Weigh::Memory).unwrap(),
            [5_001, 41, 1]
        );

        let other: Vec<String> = ["scheduler", "server-0000", "switch-core-0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let e = read_weights(&dir, &other, Weigh::Time)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 4") && e.contains("switch-core-0"), "{e}");
        let e = read_weights(&dir, &names[..2], Weigh::Time)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("measures 3 actors") && e.contains("has 2"),
            "{e}"
        );

        std::fs::write(
            dir.join(WORK_FILE),
            "actor,events,busy_ns,held_bytes\nscheduler,x,1,1\n",
        )
        .unwrap();
        let e = read_weights(&dir, &names[..1], Weigh::Time)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("events `x`"), "{e}");
        std::fs::write(
            dir.join(WORK_FILE),
            "actor,events,busy_ns,held_bytes\nscheduler,1,1\n",
        )
        .unwrap();
        let e = read_weights(&dir, &names[..1], Weigh::Time)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("expected 4 fields"),
            "{e}"
        );
        std::fs::write(dir.join(WORK_FILE), "actor,events,busy_ns\nscheduler,1,7\n").unwrap();
        assert_eq!(read_weights(&dir, &names[..1], Weigh::Time).unwrap(), [8]);
        let e = read_weights(&dir, &names[..1], Weigh::Memory)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("no `held_bytes`"), "{e}");
        std::fs::write(dir.join(WORK_FILE), "name,n\n").unwrap();
        let e = read_weights(&dir, &names, Weigh::Time)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("header"), "{e}");
        let e = read_weights(&dir.join("missing"), &names, Weigh::Time)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
