//! What each submission of a tenant runs: its trace (read whole or
//! streamed) or its generator, and the demands of the next task.

use std::sync::Arc;

use dcemu_topology::Duration;

use super::jobs::{Dags, mb};
use super::stats::{Drawn, Offered};
use crate::config::{AppOrder, ServiceDistribution, SyntheticConfig, TenantConfig};
use crate::google;
use crate::kernel::{Ctx, ModelError};
use crate::net::Msg;
use crate::sampling::{exponential, index, to_nanos};
use crate::trace::{AppRef, TraceJob, TraceTask};
use crate::trace_formats::{ImportStats, StreamSpec, TraceStream};
use crate::world::World;

/// What a tenant's submissions run, by precedence: its trace, a Google-like
/// generator, catalog applications, plain tasks (the scenario's validation
/// leaves exactly one).
pub(super) fn work(cfg: &TenantConfig, trace: TraceInput) -> Work {
    if let Some(spec) = trace.1 {
        return Work::Stream(Box::new(Streamed {
            spec,
            stream: None,
            next: None,
        }));
    }
    if let Some(rows) = trace.0 {
        return Work::Trace { rows, next: 0 };
    }
    if cfg.distributed {
        return Work::Mix { rounds_left: 0 };
    }
    if let Some(memory_gb) = cfg.google_memory_gb {
        return Work::Google {
            memory_gb,
            reference_cores: cfg
                .google_reference_cores
                .unwrap_or(google::REFERENCE_CORES),
            mix: cfg.google_class_mix.unwrap_or_default(),
            demand_scale: cfg.google_demand_scale.unwrap_or(1.0),
            class0_demand_scale: cfg.google_class0_demand_scale.unwrap_or(1.0),
            demand_cv: google::DemandSpread {
                all: cfg.google_demand_cv.unwrap_or(1.0),
                class0: cfg.google_class0_demand_cv,
            },
        };
    }
    if let Some(g) = &cfg.synthetic {
        return Work::Synthetic(synthetic(g));
    }
    if let Some(g) = &cfg.mapreduce {
        return Work::MapReduce(g.generator());
    }
    if let Some(g) = &cfg.dag_jobs {
        return Work::Dag(Box::new(Dags::new(g)));
    }
    match (cfg.applications, &cfg.service) {
        (Some(order), _) => Work::Apps(order),
        (None, Some(service)) => Work::Service {
            distribution: service.distribution,
            mean_ns: service.mean.as_nanos() as f64,
            memory_mb: mb(service.memory_gb.unwrap_or(0.0)),
        },
        // refused when the scenario loads; a task of 1 s keeps the model total
        (None, None) => Work::Service {
            distribution: ServiceDistribution::Constant,
            mean_ns: 1e9,
            memory_mb: 0,
        },
    }
}

/// The synthetic generator a tenant's `synthetic` table configures.
pub(super) fn synthetic(g: &SyntheticConfig) -> google::Synthetic {
    let seconds = |d: Duration| d.as_nanos() as f64 / 1e9;
    google::Synthetic {
        cpu_usage: g.cpu_usage,
        memory_usage: g.memory_usage,
        execution_s: seconds(g.execution),
        production_cpu_usage: g.production_cpu_usage,
        production_memory_usage: g.production_memory_usage,
        production_execution_s: seconds(g.production_execution),
        production_priority: g.production_priority,
        memory_gb: g.memory_gb,
        reference_cores: g.reference_cores,
    }
}

/// One submission's demands.
pub(super) struct Demand {
    pub(super) service_ns: u64,
    /// The run time its submitter asked for (a log's), ns; 0: none.
    pub(super) requested_ns: u64,
    pub(super) app: Option<u32>,
    pub(super) priority: u8,
    pub(super) memory_mb: u64,
    pub(super) cores: u32,
    /// The job a trace row says it belongs to.
    pub(super) job: Option<Box<TraceJob>>,
}

/// A tenant's trace: the rows of a CSV trace read whole, or a public-format
/// trace to stream.
pub type TraceInput = (Option<Arc<Vec<TraceTask>>>, Option<StreamSpec>);

/// A public-format trace read as the tenant goes: the file is opened when
/// the tenant starts (on the partition that hosts it) and holds one task
/// ahead, the next to submit.
pub(super) struct Streamed {
    pub(super) spec: StreamSpec,
    pub(super) stream: Option<TraceStream>,
    pub(super) next: Option<TraceTask>,
}

impl Streamed {
    /// Reads the next task into `next` (none at the end of the trace).
    pub(super) fn advance(&mut self) -> Result<(), ModelError> {
        let stream = match &mut self.stream {
            Some(s) => s,
            None => self.stream.insert(
                TraceStream::open(&self.spec).map_err(|e| ModelError::Input(e.to_string()))?,
            ),
        };
        self.next = stream
            .next_task()
            .map_err(|e| ModelError::Input(e.to_string()))?;
        Ok(())
    }

    pub(super) fn stats(&self) -> ImportStats {
        self.stream
            .as_ref()
            .map(TraceStream::stats)
            .unwrap_or_default()
    }
}

/// What each submission runs.
pub(super) enum Work {
    /// The rows of a trace, in order; `next` is the next row to submit.
    Trace {
        rows: Arc<Vec<TraceTask>>,
        next: usize,
    },
    /// A public-format trace, streamed.
    Stream(Box<Streamed>),
    /// A plain task with a service time from a distribution.
    Service {
        distribution: ServiceDistribution,
        mean_ns: f64,
        memory_mb: u64,
    },
    /// A catalog application, chosen in this order.
    Apps(AppOrder),
    /// A task drawn from the Google trace's per-priority statistics.
    Google {
        memory_gb: f64,
        reference_cores: u32,
        mix: google::ClassMix,
        demand_scale: f64,
        /// Class 0's own further factor (`google_class0_demand_scale`).
        class0_demand_scale: f64,
        demand_cv: google::DemandSpread,
    },
    /// A task from the synthetic Google-like generator (thesis Table 9.4).
    Synthetic(google::Synthetic),
    /// A MapReduce-like job of Table 5.2 tasks per arrival (thesis §4.2.2).
    MapReduce(google::MapReduce),
    /// A TPC-DS-like DAG job per arrival (harvesting §6.1).
    Dag(Box<Dags>),
    /// The `[workload]` mix of distributed applications per arrival, for
    /// this many more arrivals (ASPLOS'16 §5).
    Mix { rounds_left: u32 },
}

/// What the next draw of a tenant's work reads and records beside it.
pub(super) struct Draw<'a> {
    pub(super) world: &'a World,
    /// The tenant's priority, for work that has none of its own.
    pub(super) priority: u8,
    /// Tasks submitted so far (catalog applications in order).
    pub(super) submitted: u64,
    pub(super) drawn: &'a mut Option<Drawn>,
    pub(super) offered: &'a mut Offered,
}

impl Work {
    /// Work of the next submission: its service time and application.
    pub(super) fn next(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        d: Draw<'_>,
    ) -> Result<Demand, ModelError> {
        let priority = d.priority;
        let world = d.world;
        match self {
            Work::Stream(s) => {
                let Some(row) = s.next.take() else {
                    return Err(ModelError::Invariant(
                        "trace tenant ran past its last row".into(),
                    ));
                };
                s.advance()?;
                let app = trace_app(world, ctx, &row.app, row.line)?;
                Ok(Demand {
                    service_ns: row.duration,
                    requested_ns: row.requested,
                    app,
                    priority: row.priority,
                    memory_mb: mb(row.memory_gb),
                    cores: libm::ceil(row.cpu).max(1.0) as u32,
                    job: row.job,
                })
            }
            Work::Trace { rows, next } => {
                let Some(row) = rows.get(*next) else {
                    return Err(ModelError::Invariant(
                        "trace tenant ran past its last row".into(),
                    ));
                };
                *next += 1;
                let (duration, app, line) = (row.duration, row.app.clone(), row.line);
                let requested_ns = row.requested;
                let (priority, memory_mb, cpu) = (row.priority, mb(row.memory_gb), row.cpu);
                let app = trace_app(world, ctx, &app, line)?;
                Ok(Demand {
                    service_ns: duration,
                    requested_ns,
                    app,
                    priority,
                    memory_mb,
                    cores: libm::ceil(cpu).max(1.0) as u32,
                    job: None,
                })
            }
            &mut Work::Service {
                distribution,
                mean_ns,
                memory_mb,
            } => Ok(Demand {
                requested_ns: 0,
                service_ns: match distribution {
                    ServiceDistribution::Exponential => {
                        to_nanos(exponential(ctx.rng(), mean_ns)).max(1)
                    }
                    ServiceDistribution::Constant => to_nanos(mean_ns),
                },
                app: None,
                priority,
                memory_mb,
                cores: 1,
                job: None,
            }),
            &mut Work::Google {
                memory_gb,
                reference_cores,
                mix,
                demand_scale,
                class0_demand_scale,
                demand_cv,
            } => {
                let t = google::draw_in(ctx.rng(), memory_gb, reference_cores, mix, demand_cv)
                    .with_demand_scaled(demand_scale)
                    .with_class0_demand_scaled(class0_demand_scale);
                if let Some(drawn) = d.drawn.as_mut() {
                    drawn.record(ctx.now(), &t);
                }
                Ok(generated(t))
            }
            Work::Synthetic(generator) => {
                let t = generator.draw(ctx.rng());
                if let Some(drawn) = d.drawn.as_mut() {
                    drawn.record(ctx.now(), &t);
                }
                Ok(generated(t))
            }
            Work::MapReduce(_) | Work::Dag(_) | Work::Mix { .. } => Err(ModelError::Invariant(
                "a job tenant submits whole jobs, not single tasks".into(),
            )),
            &mut Work::Apps(order) => {
                let apps = world.catalog.len() as u32;
                if apps == 0 {
                    return Err(ModelError::Invariant(
                        "a tenant submits applications but the scenario has no [applications] catalog".into(),
                    ));
                }
                let id = match order {
                    AppOrder::Sequential => (d.submitted % u64::from(apps)) as u32,
                    AppOrder::Random => index(ctx.rng(), apps),
                };
                let app = &world.catalog[id as usize];
                d.offered.record(app.cores, app.ideal_s);
                Ok(Demand {
                    requested_ns: 0,
                    service_ns: to_nanos(app.ideal_s * 1e9).max(1),
                    app: Some(id),
                    priority,
                    memory_mb: mb(app.memory_gb),
                    cores: app.cores,
                    job: None,
                })
            }
        }
    }
}

/// A plain one-core task from a Google-like generator.
pub(super) fn generated(t: google::GoogleTask) -> Demand {
    Demand {
        requested_ns: 0,
        service_ns: to_nanos(t.work_s * 1e9).max(1),
        app: None,
        priority: t.priority,
        memory_mb: mb(t.memory_gb),
        cores: 1,
        job: None,
    }
}

/// The catalog application a trace row names: by id, or drawn among the
/// applications of the named family; none for an empty `app` column.
fn trace_app(
    world: &World,
    ctx: &mut Ctx<'_, Msg>,
    app: &AppRef,
    line: u64,
) -> Result<Option<u32>, ModelError> {
    let catalog = &world.catalog;
    let bad = |what: String| ModelError::Invariant(format!("trace line {line}: {what}"));
    match app {
        AppRef::None => Ok(None),
        AppRef::Profile(id) if (*id as usize) < catalog.len() => Ok(Some(*id)),
        AppRef::Profile(id) => Err(bad(format!(
            "app:{id} is not in the catalog of {} applications",
            catalog.len()
        ))),
        AppRef::Family(name) => {
            let ids: Vec<u32> = catalog
                .iter()
                .filter(|a| a.family.name() == name)
                .map(|a| a.id)
                .collect();
            if ids.is_empty() {
                return Err(bad(format!(
                    "no application of family {name:?} in the catalog"
                )));
            }
            Ok(Some(ids[index(ctx.rng(), ids.len() as u32) as usize]))
        }
    }
}
