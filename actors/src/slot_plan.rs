//! `scheduler.slot_config`: how many slots each server gets (thesis Table
//! 8.1), decided once when the model is built. `scenario` keeps each
//! server type's `slots`; `sc1`–`sc4` are the CPU-based configurations;
//! `wasc` runs the workload-aware configuration (`scheduler::wasc`, thesis
//! §8.1.1) offline on the statistics of the scenario's workload:
//!
//! - the Table 5.2 generator (`google_memory_gb`): the table's shares and
//!   mean CPU demands and usages. The thesis computed each class's usage
//!   spread σ from the raw trace and does not publish it; we take σ =
//!   [`PRODUCTION_USAGE_CV`] × mean for production classes and
//!   [`OTHER_USAGE_CV`] × mean for the others, the spreads with which WASC
//!   gives Table 8.1 on the thesis cluster (production 24 slots on 5 of the
//!   8 D servers, everything else 48 per unit of CPU: 3,072 slots). With
//!   one spread for every class, production would get *more* slots than
//!   the rest, because its mean usage (0.0071) is below class 4's (0.019);
//!   so the trace's production usage must be far more spread out;
//! - the synthetic generator (`synthetic`, Table 9.4): its exponential
//!   usages (σ = mean) and a mean demand of mean usage × mean execution;
//! - a trace: every row, with usage `cpu / reference cores` and demand
//!   usage × duration.

use crate::config::{SchedulerConfig, ServerTypeConfig, SlotConfig, TenantConfig};
use crate::google::{REFERENCE_CORES, TABLE_5_2};
use crate::scheduler::wasc::{self, ClassStats, Groups, ServerCpu, SlotPlan};
use crate::trace::TraceTask;
use std::sync::Arc;

/// Usage spread (σ / mean) of production classes in Table 5.2's statistics.
pub const PRODUCTION_USAGE_CV: f64 = 2.5;
/// Usage spread (σ / mean) of the other classes.
pub const OTHER_USAGE_CV: f64 = 0.5;

/// The slot count of every server, in server order, and the plan's table
/// when it is not the scenario's own.
pub struct Slots {
    pub per_server: Vec<u32>,
    pub table: Option<String>,
}

/// Applies `scheduler.slot_config` to the servers (expanded from their
/// types, in order).
pub fn plan(
    scheduler: &SchedulerConfig,
    servers: &[&ServerTypeConfig],
    tenants: &[TenantConfig],
    traces: &[Option<Arc<Vec<TraceTask>>>],
) -> Result<Slots, String> {
    let k = match scheduler.slot_config {
        SlotConfig::Scenario => {
            return Ok(Slots {
                per_server: servers.iter().map(|s| s.slots).collect(),
                table: None,
            });
        }
        SlotConfig::Sc1 => 1,
        SlotConfig::Sc2 => 2,
        SlotConfig::Sc3 => 3,
        SlotConfig::Sc4 => 4,
        SlotConfig::Wasc => 0,
    };
    let strongest = servers
        .iter()
        .map(|s| s.core_speed * f64::from(s.cores()))
        .fold(0.0, f64::max);
    let cpus: Vec<ServerCpu> = servers
        .iter()
        .map(|s| ServerCpu {
            type_name: s.name.clone(),
            cores: s.cores(),
            capacity: s.core_speed * f64::from(s.cores()) / strongest.max(f64::MIN_POSITIVE),
            core_speed: s.core_speed,
        })
        .collect();
    let (plan, title): (SlotPlan, String) = if k > 0 {
        let plan = wasc::cpu_based(k, &cpus).map_err(|e| e.to_string())?;
        (plan, format!("CPU-based slot configuration SC{k}"))
    } else {
        let groups = Groups {
            production: scheduler.production_priority,
            middle: scheduler.middle_priority,
        };
        let stats = workload_stats(tenants, traces, &groups)?;
        let (plan, report) = wasc::wasc(&stats, groups, &cpus).map_err(|e| e.to_string())?;
        let title = format!(
            "WASC (thesis §8.1.1): production share of CPU φp = {:.2} %, θp = {:.4}, θnp = {}, Np = {}, Nnp = {} on the reference machine",
            report.phi_p * 100.0,
            report.theta_p,
            report
                .theta_np
                .map_or_else(|| "-".to_string(), |t| format!("{t:.4}")),
            report.n_p,
            report
                .n_np
                .map_or_else(|| "-".to_string(), |n| n.to_string()),
        );
        (plan, title)
    };
    let table = plan.render_table(&cpus, &title);
    Ok(Slots {
        per_server: plan.slots,
        table: Some(table),
    })
}

/// Per-class statistics of the scenario's workload for WASC.
fn workload_stats(
    tenants: &[TenantConfig],
    traces: &[Option<Arc<Vec<TraceTask>>>],
    groups: &Groups,
) -> Result<Vec<ClassStats>, String> {
    let mut found: Vec<(String, Vec<ClassStats>)> = Vec::new();
    for (i, t) in tenants.iter().enumerate() {
        if let Some(Some(rows)) = traces.get(i) {
            let cores = f64::from(t.google_reference_cores.unwrap_or(REFERENCE_CORES));
            let samples = rows.iter().map(|r| {
                let usage = r.cpu / cores;
                (r.priority, usage * r.duration as f64 / 1e9, usage)
            });
            found.push((t.name.clone(), wasc::sample_stats(samples)));
        } else if t.google_memory_gb.is_some() {
            let stats = wasc::table_5_2_stats(1.0)
                .into_iter()
                .map(|mut c| {
                    c.usage_std = c.usage_mean
                        * if groups.is_production(c.priority) {
                            PRODUCTION_USAGE_CV
                        } else {
                            OTHER_USAGE_CV
                        };
                    c
                })
                .collect();
            found.push((t.name.clone(), stats));
        } else if let Some(s) = &t.synthetic {
            let stats = TABLE_5_2
                .iter()
                .map(|row| {
                    let production = row.0 >= s.production_priority;
                    let (usage, execution) = if production {
                        (s.production_cpu_usage, s.production_execution)
                    } else {
                        (s.cpu_usage, s.execution)
                    };
                    ClassStats {
                        priority: row.0,
                        share: row.1,
                        demand_mean: usage * execution.as_nanos() as f64 / 1e9,
                        usage_mean: usage,
                        usage_std: usage,
                    }
                })
                .collect();
            found.push((t.name.clone(), stats));
        }
    }
    match found.len() {
        0 => Err(
            "slot_config = \"wasc\" needs workload statistics: a tenant with google_memory_gb, synthetic or a trace"
                .into(),
        ),
        1 => Ok(found.remove(0).1),
        _ => Err(format!(
            "slot_config = \"wasc\" needs the statistics of one workload, but tenants {} each have their own",
            found
                .iter()
                .map(|(n, _)| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
