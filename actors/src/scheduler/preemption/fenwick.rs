//! A Fenwick tree: a uniformly random free slot in O(log n).

/// A Fenwick (binary indexed) tree of non-negative counts.
#[derive(Clone, Debug, Default)]
pub(super) struct Fenwick {
    tree: Vec<i64>,
    total: i64,
}

impl Fenwick {
    pub(super) fn from_counts(counts: &[u32]) -> Self {
        let mut f = Fenwick {
            tree: vec![0; counts.len() + 1],
            total: 0,
        };
        for (i, &c) in counts.iter().enumerate() {
            f.add(i, i64::from(c));
        }
        f
    }

    pub(super) fn total(&self) -> u32 {
        self.total.max(0) as u32
    }

    pub(super) fn add(&mut self, pos: usize, delta: i64) {
        self.total += delta;
        let mut i = pos + 1;
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// The position holding the `k`-th unit (0-based) of the counts.
    pub(super) fn find(&self, k: u32) -> usize {
        let n = self.tree.len() - 1;
        let mut pos = 0;
        let mut rest = i64::from(k);
        let mut step = n.next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next <= n && self.tree[next] <= rest {
                pos = next;
                rest -= self.tree[next];
            }
            step >>= 1;
        }
        pos.min(n.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::Fenwick;

    #[test]
    fn fenwick_finds_the_kth_unit() {
        let mut f = Fenwick::from_counts(&[2, 0, 3, 1]);
        let found: Vec<usize> = (0..6).map(|k| f.find(k)).collect();
        assert_eq!(found, vec![0, 0, 2, 2, 2, 3]);
        f.add(0, -2);
        assert_eq!(f.total(), 4);
        assert_eq!(f.find(0), 2);
    }
}
