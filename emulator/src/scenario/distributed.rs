//! Validation of distributed applications' sections (`[workload]`,
//! `tenants.distributed`, `scheduler.placement = "annealing"`).

use dcemu_actors::config::PlacementKind;
use dcemu_actors::trace_formats::TraceFormat;

use super::data::Scenario;

/// Problems as `(dotted field, problem)`.
pub fn problems(s: &Scenario) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let distributed = s.tenants.iter().any(|t| t.distributed);
    if let Some(w) = &s.workload {
        for (field, p) in w.validate() {
            out.push((format!("workload.{field}"), p));
        }
        let biggest = s
            .server_types
            .iter()
            .filter(|t| t.count > 0)
            .map(|t| t.slots)
            .max()
            .unwrap_or(0);
        if w.unit_cores > biggest {
            out.push((
                "workload.unit_cores".into(),
                format!(
                    "no server has {} slots (the largest has {biggest})",
                    w.unit_cores
                ),
            ));
        }
    } else if distributed {
        out.push((
            "workload".into(),
            "a tenant with `distributed = true` needs the [workload] section".into(),
        ));
    }
    for (i, t) in s.tenants.iter().enumerate() {
        let other = t.service.is_some()
            || t.applications.is_some()
            || t.google_memory_gb.is_some()
            || t.synthetic.is_some()
            || t.mapreduce.is_some()
            || t.dag_jobs.is_some();
        if t.distributed && other {
            out.push((
                format!("tenants[{i}].distributed"),
                "a distributed tenant submits the [workload] mix: remove `service`, `applications` and the generators".into(),
            ));
        }
    }
    if s.scheduler.placement == PlacementKind::Annealing {
        for (i, t) in s.tenants.iter().enumerate() {
            if t.arrivals.format == TraceFormat::Swf {
                out.push((
                    format!("tenants[{i}].arrivals.format"),
                    "`annealing` places the ASPLOS'16 catalog's applications by their profiles; \
                     an SWF log's parallel jobs have none: choose another placement"
                        .into(),
                ));
            }
        }
        let n = s.scheduler.dist_profile_noise;
        if !(0.0..=0.5).contains(&n) {
            out.push((
                "scheduler.dist_profile_noise".into(),
                "must be in [0, 0.5]".into(),
            ));
        }
        let sc = s.scheduler.dist_profile_scale;
        if !(0.0..=1.0).contains(&sc) {
            out.push((
                "scheduler.dist_profile_scale".into(),
                "must be in [0, 1]".into(),
            ));
        }
        if s.scheduler.annealing_iterations > 10_000_000 {
            out.push((
                "scheduler.annealing_iterations".into(),
                "must be at most 10000000".into(),
            ));
        }
        let restarts = s.scheduler.annealing_restarts;
        if !(1..=1000).contains(&restarts) {
            out.push((
                "scheduler.annealing_restarts".into(),
                format!("must be from 1 to 1000 walks per placement pass, got {restarts}"),
            ));
        }
        if u64::from(restarts) * u64::from(s.scheduler.annealing_iterations) > 100_000_000 {
            out.push((
                "scheduler.annealing_restarts".into(),
                "annealing_restarts x annealing_iterations must be at most 100000000 swaps per pass"
                    .into(),
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}
