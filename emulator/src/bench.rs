//! `dcemu bench`: wall time and peak memory of the papers' scenarios, the
//! 1 vs 2 partition ratio, and the scale study, as Markdown tables written
//! into `docs/performance.md` (between `<!-- bench:SUITE -->` markers, so the
//! prose around them stays) and, for the scale study, an SVG plot.
//!
//! Every case is a child `dcemu run` of this same executable, so each gets
//! a fresh process whose peak RSS it reports itself (`run.json`'s
//! `peak_rss_kb`, Linux's `VmHWM`). Ratios are measured side by side in one
//! invocation, never against numbers from another machine or another day.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

mod runner;
pub mod scale;
mod soak;

pub use runner::BenchError;
use runner::{Runner, mb, write_atomic};

/// Which measurements to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Suite {
    /// Every scenario the papers' targets name, and the other paper scenarios.
    Paper,
    /// One scenario on 1 and on 2 partitions (threads): same digest, ratio.
    Partitions,
    /// The mission datacenter at 1,000 to 100,000 servers, and Paragon alone
    /// at 1,000 to 10,000 (`bench/scale.rs`).
    Scale,
    /// A long coordinator + nodes run under CPU contention against one
    /// process (only when asked for: it takes as long as `--soak-*` make it).
    Soak,
}

/// `dcemu bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Suites to run (repeatable); all of them by default.
    #[arg(long = "suite", value_enum)]
    pub suites: Vec<Suite>,
    /// The scenarios directory of a dcemu checkout.
    #[arg(long, default_value = "scenarios")]
    pub scenarios: PathBuf,
    /// The Markdown file whose `<!-- bench:SUITE -->` sections get the
    /// tables (created if missing); the scale plot goes beside it.
    #[arg(long, default_value = "docs/performance.md")]
    pub out: PathBuf,
    /// Where the children write their results directories (a temporary
    /// directory by default, removed at the end).
    #[arg(long)]
    pub work: Option<PathBuf>,
    /// Soak: the scenario, relative to --scenarios.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "harvest/datacenter-month.toml"
    )]
    pub soak_scenario: String,
    /// Soak: an override for both runs, as `dcemu run --set` (repeatable).
    #[arg(long = "soak-set", value_name = "KEY=VALUE")]
    pub soak_sets: Vec<String>,
    /// Soak: node processes.
    #[arg(long, allow_negative_numbers = true, default_value_t = 4,
          value_parser = crate::whole::Whole::new(1, crate::engine::MAX_PARTITIONS as u64).as_u32())]
    pub soak_nodes: u32,
    /// Soak: CPU hogs (busy-loop processes) running beside the nodes.
    #[arg(long, allow_negative_numbers = true, default_value_t = 2, value_parser = crate::whole::Whole::new(0, 64).as_u32())]
    pub soak_hogs: u32,
    /// Soak: the multi-process run fails if it takes longer than this.
    #[arg(long, value_name = "DURATION", default_value = "3h")]
    pub soak_limit: dcemu_topology::Duration,
}

/// One scenario to run, with an issue's target where it sets one.
struct Case {
    file: &'static str,
    sets: Vec<String>,
    target_s: Option<f64>,
    note: &'static str,
}

fn case(file: &'static str, target_s: Option<f64>, note: &'static str) -> Case {
    Case {
        file,
        sets: Vec::new(),
        target_s,
        note,
    }
}

/// The paper suite: the targets first, then every other scenario.
fn paper_cases() -> Vec<Case> {
    vec![
        case("paragon/local-low.toml", Some(1.0), "Paragon 40 servers"),
        case("paragon/local-medium.toml", Some(1.0), "Paragon 40 servers"),
        case(
            "paragon/local-oversubscribed.toml",
            Some(1.0),
            "Paragon 40 servers",
        ),
        case("paragon/local-phases.toml", Some(1.0), "Paragon 40 servers"),
        case(
            "paragon/ec2-oversubscribed.toml",
            Some(10.0),
            "EC2 1,000 servers, 8,500 apps",
        ),
        case(
            "thesis/google-15h.toml",
            Some(10.0),
            "thesis 125 servers, 15 h",
        ),
        case(
            "gems/mapreduce-24h.toml",
            Some(60.0),
            "GEMS 1,250 servers, 24 h",
        ),
        case(
            "harvest/durability-year.toml",
            Some(120.0),
            "a year, 4 M blocks",
        ),
        case("paragon/ec2-low.toml", None, ""),
        case("paragon/ec2-high.toml", None, ""),
        case("thesis/cluster-125.toml", None, ""),
        case("thesis/w-b.toml", None, ""),
        case("gems/mapreduce-4h.toml", None, ""),
        case("gems/small-dc-2h.toml", None, ""),
        case("network/thesis-large-dc.toml", None, ""),
        case("harvest/testbed-5h.toml", None, ""),
        case(
            "harvest/datacenter-month.toml",
            None,
            "2,000 servers, a month",
        ),
        case("distributed/mixes.toml", None, ""),
        case("distributed/large.toml", None, ""),
    ]
}

/// Runs the suites and writes their tables.
pub fn bench(args: &BenchArgs) -> Result<(), BenchError> {
    let mut suites = args.suites.clone();
    if suites.is_empty() {
        suites = vec![Suite::Paper, Suite::Partitions, Suite::Scale];
    }
    suites.sort();
    suites.dedup();
    if !args.scenarios.is_dir() {
        return Err(BenchError::Input(format!(
            "--scenarios {}: not a directory (run from a dcemu checkout or pass its scenarios/)",
            args.scenarios.display()
        )));
    }
    let exe = std::env::current_exe()
        .map_err(|e| BenchError::Failed(format!("cannot find this executable: {e}")))?;
    let temp;
    let work = match &args.work {
        Some(w) => w.clone(),
        // the soak's logs are kept so that a failure can be read
        None if suites.contains(&Suite::Soak) => {
            let w = soak::default_work();
            eprintln!("bench: working in {} (kept)", w.display());
            w
        }
        None => {
            temp = tempfile::tempdir()
                .map_err(|e| BenchError::Failed(format!("cannot create a work directory: {e}")))?;
            temp.path().to_path_buf()
        }
    };
    let runner = Runner {
        exe,
        scenarios: args.scenarios.clone(),
        work,
    };
    let mut sections = Vec::new();
    for suite in suites {
        let (name, body) = match suite {
            Suite::Paper => ("paper", paper(&runner)?),
            Suite::Partitions => ("partitions", partitions(&runner)?),
            Suite::Scale => ("scale", scale::scale(&runner, &args.out)?),
            Suite::Soak => {
                let plan = soak::SoakPlan {
                    scenario: args.soak_scenario.clone(),
                    sets: args.soak_sets.clone(),
                    nodes: args.soak_nodes,
                    hogs: args.soak_hogs,
                    limit: std::time::Duration::from_nanos(args.soak_limit.as_nanos()),
                };
                match soak::soak(&runner, &plan) {
                    Ok(body) => ("soak", body),
                    Err((body, e)) => {
                        // a failed soak is recorded as such, then reported
                        println!("{body}");
                        sections.push(("soak", body));
                        write_sections(&args.out, &sections)?;
                        return Err(e);
                    }
                }
            }
        };
        println!("{body}");
        sections.push((name, body));
    }
    write_sections(&args.out, &sections)
}

fn paper(runner: &Runner) -> Result<String, BenchError> {
    let mut t = String::from(
        "| scenario | what | target | wall s | peak RSS MB | events | events/s | verdict |\n\
         |---|---|---:|---:|---:|---:|---:|---|\n",
    );
    for c in paper_cases() {
        let m = runner.run(c.file, &c.sets, 1)?;
        let verdict = match c.target_s {
            Some(target) if m.wall_s < target => "met",
            Some(_) => "**missed**",
            None => "",
        };
        let _ = writeln!(
            t,
            "| `{}` | {} | {} | {:.2} | {} | {} | {:.2} M | {} |",
            c.file,
            c.note,
            c.target_s.map_or(String::new(), |s| format!("< {s} s")),
            m.wall_s,
            mb(m.peak_rss_kb),
            m.events,
            m.events as f64 / m.wall_s.max(1e-9) / 1e6,
            verdict
        );
    }
    Ok(t)
}

fn partitions(runner: &Runner) -> Result<String, BenchError> {
    let mut t = String::from(
        "| scenario | partitions | wall s | events/s | same digest | ratio 1 / 2 |\n\
         |---|---:|---:|---:|---|---:|\n",
    );
    for file in ["paragon/ec2-oversubscribed.toml", "gems/mapreduce-4h.toml"] {
        let one = runner.run(file, &[], 1)?;
        let two = runner.run(file, &[], 2)?;
        for (p, m) in [(1, &one), (2, &two)] {
            let _ = writeln!(
                t,
                "| `{file}` | {p} | {:.2} | {:.2} M | {} | {} |",
                m.wall_s,
                m.events as f64 / m.wall_s.max(1e-9) / 1e6,
                if p == 1 {
                    String::new()
                } else if one.digest == two.digest {
                    "yes".into()
                } else {
                    "**no**".into()
                },
                if p == 1 {
                    String::new()
                } else {
                    format!("{:.2}", one.wall_s / two.wall_s.max(1e-9))
                }
            );
        }
        if one.digest != two.digest {
            return Err(BenchError::Failed(format!(
                "{file}: 1 and 2 partitions gave different digests ({} vs {})",
                one.digest, two.digest
            )));
        }
    }
    Ok(t)
}

/// The machine the numbers were taken on.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or("?".into(), |kb| format!("{:.0}", kb / 1024.0 / 1024.0));
    format!(
        "{cpu}, {cores} cores available, {mem_gb} GB; dcemu {} (release build); {}",
        env!("CARGO_PKG_VERSION"),
        today()
    )
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub(crate) fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    let (y, m, d) = civil_date(days as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Year, month, day of the `days`-th day since 1970-01-01 (proleptic
/// Gregorian; Howard Hinnant's `civil_from_days`).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Puts each section's table between its markers in `out`, appending
/// sections that have none yet, and writes the file atomically.
fn write_sections(out: &Path, sections: &[(&str, String)]) -> Result<(), BenchError> {
    let mut doc = std::fs::read_to_string(out).unwrap_or_else(|_| "# Performance\n".into());
    for (name, body) in sections {
        let start = format!("<!-- bench:{name} -->");
        let end = format!("<!-- /bench:{name} -->");
        let block = format!("{start}\nMeasured on {}.\n\n{body}{end}", machine());
        match (doc.find(&start), doc.find(&end)) {
            (Some(a), Some(b)) if a < b => doc.replace_range(a..b + end.len(), &block),
            _ => {
                doc.push('\n');
                doc.push_str(&block);
                doc.push('\n');
            }
        }
    }
    write_atomic(out, doc.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_replace_their_own_markers_and_keep_the_prose() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("perf.md");
        std::fs::write(
            &out,
            "# P\nprose\n<!-- bench:paper -->\nold\n<!-- /bench:paper -->\nafter\n",
        )
        .unwrap();
        write_sections(
            &out,
            &[("paper", "| new |\n".into()), ("scale", "| s |\n".into())],
        )
        .unwrap();
        let doc = std::fs::read_to_string(&out).unwrap();
        assert!(doc.starts_with("# P\nprose\n<!-- bench:paper -->\nMeasured on "));
        assert!(doc.contains("| new |\n<!-- /bench:paper -->\nafter\n"));
        assert!(!doc.contains("old"));
        assert!(doc.trim_end().ends_with("| s |\n<!-- /bench:scale -->"));
    }

    #[test]
    fn civil_dates_are_right_around_leap_years() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(20_779), (2026, 11, 22));
    }
}
