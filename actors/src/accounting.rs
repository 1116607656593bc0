//! Bookkeeping shared by actors for the run's task ledger.

use crate::kernel::Metrics;
use crate::net::Body;

/// Tasks still on the wire at the end: submissions not yet at the scheduler,
/// dispatches not yet at their server, kills not yet reported, wherever the
/// packet is.
pub(crate) fn count_in_transit<'a>(bodies: impl Iterator<Item = &'a Body>, out: &mut Metrics) {
    let n = bodies
        .filter(|b| {
            matches!(
                b,
                Body::Submit(_)
                    | Body::Dispatch(_)
                    | Body::Killed(_)
                    | Body::Migrating(_)
                    | Body::Preempt { .. }
                    | Body::Evicted { .. }
            )
        })
        .count();
    out.add("tasks_in_transit_end", n as u64);
}
