//! `dcemu bench --suite scale`: two studies of how a run's cost grows with
//! the datacenter.
//!
//! - Paragon alone (`scale/paragon-10k.toml`) at 1,000 to 10,000 servers,
//!   10 applications a server (issue 12).
//! - The mission datacenter with every mechanism on
//!   (`scale/datacenter-100k.toml`) at 1,000 to 100,000 servers (issue 43).
//!
//! Each smaller size is the big scenario with its counts, pools and rates
//! scaled alike through `--set`, so the load per server stays the same.
//! Each table gives wall time, peak memory and events, the cost of one
//! event against the smallest size's, and the memory per server and per
//! task in flight.

use std::fmt::Write as _;
use std::path::Path;

use crate::scenario::{self, Override};

use super::runner::{BenchError, Measured, Runner, mb, write_atomic};

/// The Paragon study's sizes, in servers.
const PARAGON_SIZES: [u32; 4] = [1_000, 2_500, 5_000, 10_000];
const PARAGON_FILE: &str = "scale/paragon-10k.toml";

/// The datacenter study's sizes, in servers.
const DATACENTER_SIZES: [u32; 4] = [1_000, 10_000, 30_000, 100_000];
const DATACENTER_FILE: &str = "scale/datacenter-100k.toml";

/// `--set`s that shrink the 10,000-server scenario to `servers`: every
/// server type, the access and aggregation switches, the pods and the
/// arrival rate scale alike (10 applications per server).
pub(super) fn paragon_sets(base: &scenario::Scenario, servers: u32) -> Vec<String> {
    let f = f64::from(servers) / 10_000.0;
    let mut sets = server_and_switch_sets(base, f);
    if let Some(rate) = base.tenants.first().and_then(|t| t.arrivals.rate_per_s) {
        sets.push(format!("tenants.0.arrivals.rate_per_s={}", rate * f));
    }
    sets
}

fn server_and_switch_sets(base: &scenario::Scenario, f: f64) -> Vec<String> {
    let scaled = |n: u32| (f64::from(n) * f).round().max(1.0);
    let mut sets: Vec<String> = base
        .server_types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("server_types.{i}.count={}", scaled(t.count)))
        .collect();
    let topo = &base.topology;
    let pods = scaled(topo.pods);
    sets.push(format!("topology.access={}", scaled(topo.access)));
    sets.push(format!(
        "topology.aggregation={}",
        scaled(topo.aggregation).max(pods)
    ));
    sets.push(format!("topology.pods={pods}"));
    sets
}

/// `--set`s that shrink the 100,000-server datacenter to `servers`: as
/// [`paragon_sets`], and every tenant's arrival rate, every primary
/// tenant's `copies`, the file system's blocks and read rate and the
/// sticky slots alike. `raw` is the scenario file's own table: the loaded
/// scenario holds the primary tenants' copies expanded.
pub(super) fn datacenter_sets(
    base: &scenario::Scenario,
    raw: &toml::Table,
    servers: u32,
) -> Vec<String> {
    let total: u32 = base.server_types.iter().map(|t| t.count).sum();
    let f = f64::from(servers) / f64::from(total.max(1));
    let mut sets = server_and_switch_sets(base, f);
    for (i, t) in base.tenants.iter().enumerate() {
        if let Some(rate) = t.arrivals.rate_per_s {
            sets.push(format!("tenants.{i}.arrivals.rate_per_s={}", rate * f));
        }
    }
    let primaries = raw
        .get("primary_tenants")
        .and_then(toml::Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, p) in primaries.iter().enumerate() {
        let copies = p
            .get("copies")
            .and_then(toml::Value::as_integer)
            .unwrap_or(1);
        let n = (copies as f64 * f).round().max(1.0);
        sets.push(format!("primary_tenants.{i}.copies={n}"));
    }
    if let Some(s) = &base.storage {
        sets.push(format!(
            "storage.blocks={}",
            (s.blocks as f64 * f).round().max(1.0)
        ));
        sets.push(format!("storage.read_rate_per_s={}", s.read_rate_per_s * f));
    }
    if base.scheduler.sticky_slots > 0 {
        let sticky = (f64::from(base.scheduler.sticky_slots) * f)
            .round()
            .max(1.0);
        sets.push(format!("scheduler.sticky_slots={sticky}"));
    }
    sets
}

/// The `--set`s that run the scenario `text` (any scenario, `label` naming
/// it in errors) at `servers` servers with the load per server it has,
/// as the datacenter study runs its smaller sizes: the test catalog runs
/// the 100,000-server datacenter this way at 1,000.
pub fn shrink(label: &str, text: &str, servers: u32) -> Result<Vec<String>, BenchError> {
    let base = scenario::load(label, text, &[] as &[Override])
        .map_err(|e| BenchError::Input(e.to_string()))?;
    let raw: toml::Table = text
        .parse()
        .map_err(|e| BenchError::Input(format!("{label}: {e}")))?;
    Ok(datacenter_sets(&base, &raw, servers))
}

/// Both studies' tables.
pub(super) fn scale(runner: &Runner, out: &Path) -> Result<String, BenchError> {
    let mut body = String::from("**The mission datacenter, every mechanism on**\n\n");
    body.push_str(&datacenter(runner)?);
    body.push_str("\n**Paragon alone**\n\n");
    body.push_str(&paragon(runner, out)?);
    Ok(body)
}

fn load(runner: &Runner, file: &str) -> Result<(scenario::Scenario, toml::Table), BenchError> {
    let path = runner.scenarios.join(file);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| BenchError::Input(format!("{}: {e}", path.display())))?;
    let base = scenario::load(&path.display().to_string(), &text, &[] as &[Override])
        .map_err(|e| BenchError::Input(e.to_string()))?;
    let raw: toml::Table = text
        .parse()
        .map_err(|e| BenchError::Input(format!("{}: {e}", path.display())))?;
    Ok((base, raw))
}

fn datacenter(runner: &Runner) -> Result<String, BenchError> {
    let (base, raw) = load(runner, DATACENTER_FILE)?;
    let full: u32 = base.server_types.iter().map(|t| t.count).sum();
    let mut rows = Vec::new();
    for servers in DATACENTER_SIZES {
        let sets = if servers == full {
            Vec::new()
        } else {
            datacenter_sets(&base, &raw, servers)
        };
        rows.push((servers, runner.run(DATACENTER_FILE, &sets, 1)?));
    }
    Ok(table(&rows))
}

/// One row per size: `per event` is the wall time of one event against
/// the first size's; memory per server and per task in flight each divide
/// the whole peak, so each is an upper bound.
fn table(rows: &[(u32, Measured)]) -> String {
    let per_event = |m: &Measured| m.wall_s / (m.events.max(1) as f64);
    let first = rows.first().map_or(1.0, |r| per_event(&r.1));
    let mut t = String::from(
        "| servers | tasks | wall s | peak RSS MB | events | events / task | µs / event | \
         per event / first size's | KB / server | KB / task in flight |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (servers, m) in rows {
        let kb = |n: u64| {
            m.peak_rss_kb.map_or("n/a".into(), |kb| {
                format!("{:.1}", kb as f64 / n.max(1) as f64)
            })
        };
        let _ = writeln!(
            t,
            "| {servers} | {} | {:.2} | {} | {} | {:.0} | {:.3} | {:.2} | {} | {} |",
            m.tasks,
            m.wall_s,
            mb(m.peak_rss_kb),
            m.events,
            m.events as f64 / m.tasks.max(1) as f64,
            per_event(m) * 1e6,
            per_event(m) / first.max(1e-15),
            kb(u64::from(*servers)),
            kb(m.in_flight),
        );
    }
    t
}

fn paragon(runner: &Runner, out: &Path) -> Result<String, BenchError> {
    let (base, _) = load(runner, PARAGON_FILE)?;
    let mut rows = Vec::new();
    for servers in PARAGON_SIZES {
        let sets = if servers == 10_000 {
            Vec::new()
        } else {
            paragon_sets(&base, servers)
        };
        rows.push((servers, runner.run(PARAGON_FILE, &sets, 1)?));
    }
    let mut t = table(&rows);
    let svg = out.with_file_name("scale.svg");
    plot(&svg, &rows)?;
    let _ = writeln!(
        t,
        "\n![wall time against servers](scale.svg) (the dashed line: linear from 1,000 servers)"
    );
    Ok(t)
}

/// Wall time against servers, with the line linear growth from the first
/// size would follow.
fn plot(path: &Path, rows: &[(u32, Measured)]) -> Result<(), BenchError> {
    use plotters::prelude::*;
    let fail = |e: &dyn std::fmt::Display| BenchError::Failed(format!("{}: {e}", path.display()));
    let max_x = rows.iter().map(|r| r.0).max().unwrap_or(1) as f64;
    let (x0, w0) = rows
        .first()
        .map_or((1.0, 0.0), |r| (f64::from(r.0), r.1.wall_s));
    let linear = |x: f64| w0 * x / x0;
    let max_y = rows
        .iter()
        .map(|r| r.1.wall_s)
        .fold(linear(max_x), f64::max)
        * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("dcemu scale: wall time against servers", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..max_x * 1.05, 0.0..max_y.max(1.0))
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc("servers (10 applications each)")
            .y_desc("wall s")
            .draw()
            .map_err(|e| fail(&e))?;
        chart
            .draw_series(LineSeries::new(
                rows.iter().map(|r| (f64::from(r.0), r.1.wall_s)),
                BLUE.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?
            .label("measured")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE));
        chart
            .draw_series(
                rows.iter()
                    .map(|r| Circle::new((f64::from(r.0), r.1.wall_s), 4, BLUE.filled())),
            )
            .map_err(|e| fail(&e))?;
        chart
            .draw_series(DashedLineSeries::new(
                [(x0, linear(x0)), (max_x, linear(max_x))],
                6,
                4,
                RED.into(),
            ))
            .map_err(|e| fail(&e))?
            .label("linear from the first size")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE)
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    write_atomic(path, svg.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenarios() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
    }

    fn servers(s: &scenario::Scenario) -> u32 {
        s.server_types.iter().map(|t| t.count).sum()
    }

    #[test]
    fn paragon_sets_shrink_servers_switches_and_rate_alike() {
        let text = std::fs::read_to_string(scenarios().join(PARAGON_FILE)).unwrap();
        let base = scenario::load("s", &text, &[]).unwrap();
        let overrides: Vec<Override> = paragon_sets(&base, 1_000)
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let small = scenario::load("s", &text, &overrides).unwrap();
        assert_eq!(servers(&base), 10_000);
        assert!(
            (990..=1_010).contains(&servers(&small)),
            "{}",
            servers(&small)
        );
        assert_eq!(small.topology.access, 25);
        assert_eq!(small.topology.pods, 1);
        let rate = |s: &scenario::Scenario| s.tenants[0].arrivals.rate_per_s.unwrap();
        assert!((rate(&small) * 10.0 - rate(&base)).abs() < 1e-9);
    }

    #[test]
    fn datacenter_sets_keep_every_load_per_server() {
        let text = std::fs::read_to_string(scenarios().join(DATACENTER_FILE)).unwrap();
        let base = scenario::load("d", &text, &[]).unwrap();
        let raw: toml::Table = text.parse().unwrap();
        assert_eq!(servers(&base), 100_000);
        let overrides: Vec<Override> = datacenter_sets(&base, &raw, 1_000)
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let small = scenario::load("d", &text, &overrides).unwrap();
        assert!(
            (990..=1_010).contains(&servers(&small)),
            "{}",
            servers(&small)
        );
        for (a, b) in base.tenants.iter().zip(&small.tenants) {
            let (ra, rb) = (
                a.arrivals.rate_per_s.unwrap(),
                b.arrivals.rate_per_s.unwrap(),
            );
            assert!((rb * 100.0 - ra).abs() < 1e-9 * ra, "{}", a.name);
        }
        let owned = |s: &scenario::Scenario| -> u32 {
            s.primary_tenants.iter().map(|p| p.servers).sum::<u32>()
        };
        let (big, little) = (f64::from(owned(&base)), f64::from(owned(&small)));
        assert!(
            (little * 100.0 / big - 1.0).abs() < 0.05,
            "{little} of {big}"
        );
        let blocks = |s: &scenario::Scenario| s.storage.as_ref().unwrap().blocks;
        assert_eq!(blocks(&small) * 100, blocks(&base));
        let sticky = |s: &scenario::Scenario| f64::from(s.scheduler.sticky_slots);
        assert!((sticky(&small) * 100.0 / sticky(&base) - 1.0).abs() < 0.01);
        assert!(small.topology.access >= 1 && small.topology.pods >= 1);
    }
}
