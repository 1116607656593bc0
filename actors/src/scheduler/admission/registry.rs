//! The admission registry: which policy `scheduler.admission` names.

use crate::config::{AdmissionKind, ArqHold, ArqOrder, SchedulerConfig};

use super::Admission;
use super::arq::{ArqAdmission, ArqParams, QueueOrder};
use super::easy::EasyBackfill;
use super::fifo::Fifo;

/// The registry: the policy `cfg.admission` names.
pub fn build(cfg: &SchedulerConfig) -> Box<dyn Admission> {
    match cfg.admission {
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
    }
}
