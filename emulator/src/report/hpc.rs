//! The report's plots of a replayed SWF log (issue 41): the machine's
//! utilisation over time (`utilisation.csv`) and the CDFs of its jobs'
//! wait and bounded slowdown (`jobs.csv`), one line per run, each drawn
//! only when a run has the file.

use std::path::Path;

use super::data::{Figure, HpcData, ReportError, RunData, bad, read_text};
use super::plots::cdf_points;
use super::plots::lines_plot;

/// The columns `want` of a CSV file's rows, as numbers: every row, in
/// order; an empty cell is `None`. Errors name the file, line and column.
fn columns(path: &Path, text: &str, want: &[&str]) -> Result<Vec<Vec<Option<f64>>>, ReportError> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let at: Vec<usize> = want
        .iter()
        .map(|w| {
            header
                .iter()
                .position(|h| h == w)
                .ok_or_else(|| bad(path, format!("no {w} column")))
        })
        .collect::<Result<_, _>>()?;
    lines
        .enumerate()
        .map(|(i, line)| {
            let cells: Vec<&str> = line.split(',').collect();
            at.iter()
                .zip(want)
                .map(|(&c, name)| match cells.get(c).copied().unwrap_or("") {
                    "" => Ok(None),
                    cell => cell.parse().map(Some).map_err(|_| {
                        bad(
                            path,
                            format!("line {}: {name} {cell:?} is not a number", i + 2),
                        )
                    }),
                })
                .collect()
        })
        .collect()
}

/// Reads `utilisation.csv` and `jobs.csv` of a results directory (absent
/// files leave the series empty).
pub fn load(dir: &Path) -> Result<HpcData, ReportError> {
    let mut data = HpcData::default();
    let path = dir.join("utilisation.csv");
    if let Some(text) = read_text(&path)? {
        for row in columns(&path, &text, &["t_s", "utilisation"])? {
            if let [Some(t), Some(u)] = row[..] {
                data.utilisation.push((t, u));
            }
        }
    }
    let path = dir.join("jobs.csv");
    if let Some(text) = read_text(&path)? {
        for row in columns(&path, &text, &["wait_s", "bounded_slowdown"])? {
            if let [Some(w), Some(b)] = row[..] {
                data.wait_s.push(w);
                data.slowdown.push(b);
            }
        }
        data.wait_s.sort_by(f64::total_cmp);
        data.slowdown.sort_by(f64::total_cmp);
    }
    Ok(data)
}

/// One CDF plot: its figure id, title, x axis, caption and each run's
/// sorted values.
struct Cdf {
    id: &'static str,
    title: &'static str,
    x_desc: &'static str,
    caption: &'static str,
    values: fn(&RunData) -> &[f64],
}

/// Adds the utilisation-over-time plot and the wait and bounded-slowdown
/// CDFs, or says why each was skipped.
pub(super) fn figures(
    runs: &[RunData],
    figures: &mut Vec<Figure>,
    skip: &mut impl FnMut(&str, &str),
) -> Result<(), ReportError> {
    let title = "Utilisation of the machine over time (SWF logs)";
    if runs.iter().any(|r| !r.hpc.utilisation.is_empty()) {
        let series: Vec<_> = runs
            .iter()
            .filter(|r| !r.hpc.utilisation.is_empty())
            .map(|r| (r.label.clone(), r.hpc.utilisation.clone()))
            .collect();
        figures.push(Figure {
            id: "hpc-utilisation".into(),
            title: title.into(),
            caption: "Share of the machine's processors busy with the log's jobs, per time bin (utilisation.csv): finished jobs over their run, jobs still running at the end up to it.".into(),
            svg: lines_plot("hpc_utilisation", "virtual time (s)", "busy processors / processors", &series)?,
        });
    } else {
        skip(title, "no run replayed an SWF log (utilisation.csv)");
    }
    let cdfs = [
        Cdf {
            id: "hpc-wait-cdf",
            title: "CDF of job wait (SWF logs)",
            x_desc: "wait (s)",
            caption: "Share of the log's finished jobs that waited at most x seconds from submission to start (jobs.csv).",
            values: |r| &r.hpc.wait_s,
        },
        Cdf {
            id: "hpc-slowdown-cdf",
            title: "CDF of bounded slowdown (SWF logs)",
            x_desc: "bounded slowdown",
            caption: "Share of the log's finished jobs whose bounded slowdown, max(1, response / max(run, 10 s)), is at most x (jobs.csv).",
            values: |r| &r.hpc.slowdown,
        },
    ];
    for c in cdfs {
        if runs.iter().any(|r| !(c.values)(r).is_empty()) {
            let series: Vec<_> = runs
                .iter()
                .filter(|r| !(c.values)(r).is_empty())
                .map(|r| (r.label.clone(), cdf_points((c.values)(r), 400)))
                .collect();
            figures.push(Figure {
                id: c.id.into(),
                title: c.title.into(),
                caption: c.caption.into(),
                svg: lines_plot(c.id, c.x_desc, "fraction of jobs", &series)?,
            });
        } else {
            skip(c.title, "no run has finished jobs of an SWF log (jobs.csv)");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_cell_names_the_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("jobs.csv"),
            "job,procs,submit_s,wait_s,run_s,response_s,bounded_slowdown\n0,1,0,2,3,5,1\n1,1,0,x,3,5,1\n",
        )
        .unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("jobs.csv") && err.contains("line 3: wait_s \"x\""),
            "{err}"
        );
        std::fs::write(dir.path().join("jobs.csv"), "job,wait_s\n").unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no bounded_slowdown column"), "{err}");
        std::fs::write(
            dir.path().join("jobs.csv"),
            "job,procs,submit_s,wait_s,run_s,response_s,bounded_slowdown\n0,1,0,9,3,5,4\n1,1,0,2,3,5,1\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("utilisation.csv"),
            "t_s,busy_procs,utilisation\n0,2,0.5\n5,0,\n",
        )
        .unwrap();
        let data = load(dir.path()).unwrap();
        assert_eq!(data.wait_s, [2.0, 9.0]);
        assert_eq!(data.slowdown, [1.0, 4.0]);
        assert_eq!(data.utilisation, [(0.0, 0.5)]);
    }
}
