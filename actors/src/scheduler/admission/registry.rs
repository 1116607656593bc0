//! The admission registry: which policy `scheduler.admission` names.
//! Adding a policy is its file in this folder and one line here, or, from
//! a crate of your own, [`super::register`] (docs/scheduler.md, "Adding a
//! policy").

use crate::config::{AdmissionKind, ArqHold, ArqOrder, SchedulerConfig};
use crate::scheduler::cluster_view::ServerSpec;

use super::Admission;
use super::arq::{ArqAdmission, ArqParams, QueueOrder};
use super::custom::{AdmissionContext, UnknownPolicy, find};
use super::easy::EasyBackfill;
use super::fifo::Fifo;

/// The registry: the policy `cfg.admission` names, over `servers`.
pub fn build(
    cfg: &SchedulerConfig,
    servers: &[ServerSpec],
) -> Result<Box<dyn Admission>, UnknownPolicy> {
    Ok(match cfg.admission {
        AdmissionKind::Fifo => Box::new(Fifo::default()),
        AdmissionKind::EasyBackfill => Box::new(EasyBackfill::default()),
        AdmissionKind::Arq => Box::new(ArqAdmission::new(ArqParams {
            classes: cfg.arq_classes.max(1) as usize,
            order: match cfg.arq_order {
                ArqOrder::Fifo => QueueOrder::Fifo,
                ArqOrder::Sjf => QueueOrder::Sjf,
                ArqOrder::Priority => QueueOrder::Priority,
            },
            default_busy_s: 600.0,
            divert: cfg.arq_hold == ArqHold::Budget,
        })),
        // a policy a crate registered (`custom.rs`)
        AdmissionKind::Custom(name) => find(name)?.build(&AdmissionContext {
            scheduler: cfg,
            servers,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Metrics;

    /// Each built-in name builds its own policy: only EASY reads the
    /// machine, only ARQ has pools of its own.
    #[test]
    fn every_built_in_name_builds_its_policy() {
        for kind in AdmissionKind::BUILT_IN {
            let cfg = SchedulerConfig {
                admission: kind,
                ..SchedulerConfig::default()
            };
            let built = build(&cfg, &[]).expect("a built-in");
            assert_eq!(built.reads_machine(), kind == AdmissionKind::EasyBackfill);
            assert_eq!(built.pools() > 1, kind == AdmissionKind::Arq, "{kind:?}");
            built.finish(&mut Metrics::default());
        }
    }
}
