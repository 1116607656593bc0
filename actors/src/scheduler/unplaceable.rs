//! What an energy-aware pass has already failed to place, so that it does
//! not search the datacenter again for a task that asks for at least as
//! much.
//!
//! Within one pass of [`super::energy::EnergyStage::schedule`] the servers
//! only fill up (placements book CPU, memory, slots and bandwidth; nothing
//! is released until the pass ends), and whether a task fits a server is
//! monotone in what it asks for: its CPU requirement, memory, slots and
//! the bandwidth of its external flow (§4.2.2, thesis Table 4.2's setting).
//! So a task that asks for no less than one that found no server finds
//! none either, and the search would only cost time: near saturation, tens
//! of thousands of queued tasks were searched against 1,250 servers on
//! every pass (issue 38, the GEMS calibration). Skipping them changes no
//! placement and draws nothing from the stream: a failed search draws
//! nothing either.

use crate::task::Task;

/// What a task asks of a server, as far as whether it fits: compared
/// componentwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Demand {
    cpu: f64,
    memory_mb: u64,
    cores: u32,
    net: Net,
}

/// The external flow's bandwidth as a placement derives it: a fixed rate,
/// or a job's bytes over the task's shortest execution time on the server
/// (`bandwidth_bps`), which grows with the bytes and with bytes per unit
/// of work, whatever the server.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Net {
    Fixed(u64),
    Job { bytes: u64, work_ns: u64 },
}

impl Demand {
    /// `cpu` is the task's requirement as the stage normalises it.
    pub(super) fn of(task: &Task, cpu: f64) -> Self {
        let net = match task.job {
            Some(j) => Net::Job {
                bytes: j.external_bytes,
                work_ns: task.service_ns,
            },
            None => Net::Fixed(task.flow_bps),
        };
        Demand {
            cpu,
            memory_mb: task.memory_mb,
            cores: task.cores,
            net,
        }
    }

    /// Whether `self` asks for at least as much as `other` in every
    /// respect, on every server.
    fn covers(&self, other: &Demand) -> bool {
        self.cpu >= other.cpu
            && self.memory_mb >= other.memory_mb
            && self.cores >= other.cores
            && match (self.net, other.net) {
                (Net::Fixed(a), Net::Fixed(b)) => a >= b,
                (
                    Net::Job { bytes, work_ns },
                    Net::Job {
                        bytes: b0,
                        work_ns: w0,
                    },
                ) => {
                    bytes >= b0
                        && u128::from(bytes) * u128::from(w0)
                            >= u128::from(b0) * u128::from(work_ns)
                }
                _ => false,
            }
    }
}

/// The least demands that found no server in this pass (none covers
/// another), at most [`Unplaceable::CAP`] of them, and what the roomiest
/// server had free at the pass's start in each respect apart: a task that
/// asks for more than that in one respect fits nowhere, and near
/// saturation most of the queue does.
#[derive(Debug, Default)]
pub(super) struct Unplaceable {
    failed: Vec<Demand>,
    most_free: Option<Free>,
}

/// The most CPU, memory and threads any one server had room for (each its
/// own maximum; they may be on different servers; threads within its free
/// slots, `crate::slot_share::threads_in`, and its primary tenant's room).
#[derive(Clone, Copy, Debug)]
pub(super) struct Free {
    pub cpu: f64,
    pub memory_mb: u64,
    pub threads: u32,
}

impl Unplaceable {
    /// Enough to hold the few shapes that dominate a queue; past it a
    /// failure is simply not remembered (the search runs, as before).
    const CAP: usize = 64;

    /// A pass's ledger, given what the roomiest server has free in each
    /// respect (servers only fill up during a pass, so it stays a bound).
    pub(super) fn with_most_free(most_free: Free) -> Self {
        Unplaceable {
            failed: Vec::new(),
            most_free: Some(most_free),
        }
    }

    /// Whether `d` cannot fit anywhere: it asks for more than the roomiest
    /// server has in some respect, or for no less than a demand that
    /// found no server in this pass.
    pub(super) fn rules_out(&self, d: &Demand) -> bool {
        let beyond = self.most_free.is_some_and(|m| {
            d.cpu > m.cpu + 1e-6 || d.memory_mb > m.memory_mb || d.cores > m.threads
        });
        beyond || self.failed.iter().any(|f| d.covers(f))
    }

    /// `d` found no server.
    pub(super) fn remember(&mut self, d: Demand) {
        if self.rules_out(&d) {
            return;
        }
        self.failed.retain(|f| !f.covers(&d));
        if self.failed.len() < Self::CAP {
            self.failed.push(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(cpu: f64, memory_mb: u64, cores: u32, net: Net) -> Demand {
        Demand {
            cpu,
            memory_mb,
            cores,
            net,
        }
    }

    #[test]
    fn a_failure_rules_out_only_demands_at_least_as_large_in_every_respect() {
        let mut u = Unplaceable::default();
        u.remember(demand(0.5, 1000, 1, Net::Fixed(10)));
        assert!(u.rules_out(&demand(0.5, 1000, 1, Net::Fixed(10))));
        assert!(u.rules_out(&demand(0.6, 2000, 2, Net::Fixed(20))));
        assert!(
            !u.rules_out(&demand(0.4, 2000, 2, Net::Fixed(20))),
            "less CPU"
        );
        assert!(
            !u.rules_out(&demand(0.6, 999, 2, Net::Fixed(20))),
            "less memory"
        );
        assert!(
            !u.rules_out(&demand(0.6, 2000, 0, Net::Fixed(20))),
            "fewer slots"
        );
        assert!(
            !u.rules_out(&demand(0.6, 2000, 2, Net::Fixed(9))),
            "less bandwidth"
        );
        let job = Net::Job {
            bytes: 10,
            work_ns: 10,
        };
        assert!(
            !u.rules_out(&demand(0.6, 2000, 2, job)),
            "a job's flow is not comparable to a fixed one"
        );
    }

    #[test]
    fn a_jobs_flow_is_covered_only_with_as_many_bytes_and_bytes_per_unit_of_work() {
        let mut u = Unplaceable::default();
        u.remember(demand(
            0.1,
            1,
            1,
            Net::Job {
                bytes: 100,
                work_ns: 1_000,
            },
        ));
        let with = |bytes, work_ns| demand(0.1, 1, 1, Net::Job { bytes, work_ns });
        assert!(u.rules_out(&with(100, 1_000)));
        assert!(u.rules_out(&with(200, 1_000)), "more bytes, same work");
        assert!(
            u.rules_out(&with(100, 500)),
            "same bytes, less work: a higher rate"
        );
        assert!(
            !u.rules_out(&with(200, 4_000)),
            "more bytes at a lower rate"
        );
        assert!(
            !u.rules_out(&with(50, 100)),
            "a higher rate, fewer bytes (the 1 ms floor)"
        );
    }

    #[test]
    fn what_the_roomiest_server_lacks_in_one_respect_rules_a_task_out() {
        let u = Unplaceable::with_most_free(Free {
            cpu: 0.5,
            memory_mb: 1000,
            threads: 2,
        });
        assert!(
            !u.rules_out(&demand(0.5, 1000, 2, Net::Fixed(5))),
            "fits the bound"
        );
        assert!(u.rules_out(&demand(0.51, 10, 1, Net::Fixed(0))), "CPU");
        assert!(u.rules_out(&demand(0.1, 1001, 1, Net::Fixed(0))), "memory");
        assert!(u.rules_out(&demand(0.1, 10, 3, Net::Fixed(0))), "slots");
    }

    #[test]
    fn only_the_least_failures_are_kept() {
        let mut u = Unplaceable::default();
        u.remember(demand(0.5, 1000, 1, Net::Fixed(0)));
        u.remember(demand(0.6, 1000, 1, Net::Fixed(0)));
        assert_eq!(u.failed.len(), 1, "a larger failure adds nothing");
        u.remember(demand(0.4, 1000, 1, Net::Fixed(0)));
        assert_eq!(u.failed.len(), 1, "a smaller one replaces it");
        u.remember(demand(0.9, 10, 1, Net::Fixed(0)));
        assert_eq!(u.failed.len(), 2, "an incomparable one joins");
        for k in 0..200u32 {
            u.remember(demand(
                1.0 - f64::from(k) * 1e-3,
                20 + u64::from(k),
                1,
                Net::Fixed(0),
            ));
        }
        assert!(u.failed.len() <= Unplaceable::CAP);
    }
}
