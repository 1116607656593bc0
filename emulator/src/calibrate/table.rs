//! `calibration.md` (also printed at the end) and `calibration.csv`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::search::Outcome;
use super::target::Target;
use crate::reproduce::calibration::Calibration;
use crate::reproduce::experiments::Paper;

/// Everything the final table shows.
pub(super) struct Report<'a> {
    pub command: &'a str,
    pub commit: &'a str,
    pub date: &'a str,
    pub paper: &'a Paper,
    /// The stage, when the paper's parameters are fitted in more than one.
    pub stage: Option<u32>,
    /// The parameters this table fits, in file order.
    pub blocks: &'a [&'a Calibration],
    pub targets: &'a [Target<'a>],
    pub outcome: &'a Outcome,
    pub means: &'a BTreeMap<Vec<u64>, Vec<Option<f64>>>,
    pub budget: usize,
}

/// A loss as the tables show it.
pub(super) fn loss_text(l: f64) -> String {
    if l.is_finite() {
        format!("{l:.4}")
    } else {
        "∞".into()
    }
}

fn mean_text(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.4}"))
}

impl Report<'_> {
    fn means_at(&self, point: &[f64]) -> Vec<Option<f64>> {
        let key: Vec<u64> = point.iter().map(|v| v.to_bits()).collect();
        self.means
            .get(&key)
            .cloned()
            .unwrap_or_else(|| vec![None; self.targets.len()])
    }

    pub fn markdown(&self) -> String {
        let o = self.outcome;
        let mut s = String::new();
        match self.stage {
            None => {
                let _ = writeln!(s, "# Calibration: {}\n", self.paper.title);
            }
            Some(k) => {
                let _ = writeln!(s, "# Calibration: {}, stage {k}\n", self.paper.title);
            }
        }
        let _ = writeln!(
            s,
            "`{}` at commit `{}` on {}: {} iteration(s), {} run(s) of a budget of {}; stopped: {}.\n",
            self.command,
            self.commit,
            self.date,
            o.iterations,
            o.runs,
            self.budget,
            o.stop.words()
        );
        let _ = writeln!(
            s,
            "Loss = Σ over the target rows of ((mean over the seeds − paper) / tolerance)² \
             (tolerance 0: max(10 % of |paper|, 0.01)): **{} at the start, {} fitted**.\n",
            loss_text(o.start_loss),
            loss_text(o.best_loss)
        );
        if o.start_losses.len() > 1 {
            let losses: Vec<String> = o.start_losses.iter().map(|l| loss_text(*l)).collect();
            let _ = writeln!(
                s,
                "Searched from {} starts (the committed `start`, then each of `starts`), \
                 their losses {}; the fitted point is the search from start {}'s.\n",
                o.start_losses.len(),
                losses.join(", "),
                o.from_start + 1
            );
        }
        s.push_str("| free parameter | key | start | fitted | range |\n|---|---|---|---|---|\n");
        for (i, c) in self.blocks.iter().enumerate() {
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {} | {} |",
                c.name,
                c.key,
                c.show(o.start[i]),
                c.show(o.best[i]),
                c.range_text()
            );
        }
        let (at_start, fitted) = (self.means_at(&o.start), self.means_at(&o.best));
        s.push_str(
            "\n| target | metric | paper | ours at start | ours fitted | tolerance | within? |\n|---|---|---|---|---|---|---|\n",
        );
        for (k, t) in self.targets.iter().enumerate() {
            let within = fitted[k].is_some_and(|m| (m - t.paper).abs() <= t.tolerance + 1e-12);
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {} | {} | {} | {} |",
                t.name.replace('|', "\\|"),
                t.row.metric,
                t.paper,
                mean_text(at_start[k]),
                mean_text(fitted[k]),
                t.tolerance,
                if within { "yes" } else { "no" }
            );
        }
        s
    }

    pub fn csv(&self) -> String {
        let cell = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut head = vec!["iteration".to_string()];
        head.extend(self.blocks.iter().map(|c| cell(&c.name)));
        head.extend(self.targets.iter().map(|t| cell(&t.name)));
        head.push("loss".into());
        let mut s = head.join(",");
        s.push('\n');
        for e in &self.outcome.evaluated {
            let mut line = vec![e.iteration.to_string()];
            line.extend(self.blocks.iter().zip(&e.point).map(|(c, v)| c.show(*v)));
            line.extend(
                self.means_at(&e.point)
                    .iter()
                    .map(|m| m.map_or_else(String::new, |x| format!("{x}"))),
            );
            line.push(if e.loss.is_finite() {
                format!("{}", e.loss)
            } else {
                "inf".into()
            });
            s.push_str(&line.join(","));
            s.push('\n');
        }
        s
    }
}
