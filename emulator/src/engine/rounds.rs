//! Who takes part in each round, and what the partitions agree on.
//!
//! Every round `k` ends one window: the partitions agree on the element-wise
//! minimum of their [`Horizon`]s (the earliest pending event anywhere and,
//! for each partition, how soon anything from outside could reach it) and
//! each handles its events before its bound. A partition whose window holds
//! nothing and that receives nothing in the round does not change, so its
//! horizon stays what it was; it need not say it again. Such a partition
//! *sits out*: the others keep its standing horizon (its pending events
//! alone, without the envelopes it sent, which their receivers now hold) in
//! every later agreement, and wake it when it has work: when someone sends
//! it envelopes, or when its earliest event falls before its bound. The
//! agreement is therefore exactly the all-partition one of every round, the
//! windows are the same and so is every event's order (MODEL.md §2); what
//! changes is how many partitions must meet per round. In a datacenter most
//! windows hold work in one or two partitions (a scheduler's and a
//! server's), and a round with one member costs no message at all. Whether
//! partitions sit out is the transport's choice
//! ([`Transport::lets_partitions_sit_out`]): without it every partition
//! takes part in every round.
//!
//! A round, for each member (the partitions taking part):
//!
//! 1. send every other member a [`Report`] (its horizon, its standing
//!    horizon, whom it sends envelopes to) with their envelopes;
//! 2. with every member's report, each member computes the same agreement,
//!    the same set of partitions to wake and the same set to sit out
//!    (`Rounds::settle`);
//! 3. every member sends each woken partition its report (with the round's
//!    members, and from the lowest member the standing horizons) and its
//!    envelopes; the woken partition settles the round exactly as the members
//!    did and joins the next one;
//! 4. a member that sits out waits for a wake frame, or for the lowest
//!    member's [`Frame::End`] when the run is over. In the last round a
//!    partition sitting out that is sent envelopes is woken as in any other
//!    (they stay pending at the end, as in a sequential run); the rest get
//!    the end.
//!
//! Someone always has work until the end: the partition holding the
//! earliest pending event is bound at least a lookahead later (its own
//! events do not bound it), and an envelope's receiver is woken by it.

use std::sync::Arc;

use dcemu_actors::kernel::Envelope;
use dcemu_topology::SimTime;

use super::horizon::Horizon;
use super::transport::{Frame, Received, Report, Transport, TransportError, Wake};

/// What a partition learns from a round it takes part in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Agreed {
    /// Handle window `round`, bounded by `horizon.reach[me]`.
    Window { round: u64, horizon: Horizon },
    /// Nothing is pending before the end; the run took `rounds` windows.
    Done { rounds: u64 },
}

/// One partition's view of the rounds.
pub(crate) struct Rounds<M> {
    me: usize,
    end: SimTime,
    round: u64,
    /// Partitions hosting actors (the others never take part).
    hosts: Vec<bool>,
    /// The members of the current round.
    members: Vec<bool>,
    /// The standing horizon of every partition sitting the round out.
    standing: Vec<Option<Horizon>>,
    /// Frames of later rounds that came before this round ended.
    early: Vec<(usize, Arc<Report>, Vec<Envelope<M>>)>,
    /// Peers whose links ended.
    closed: Vec<bool>,
    /// Rounds this partition took part in (engine bookkeeping).
    taken: u64,
    /// Whether partitions may sit rounds out (the same in every partition
    /// of a run: [`Transport::lets_partitions_sit_out`]).
    sit_out: bool,
}

/// The outcome of a round, the same at every member and woken partition.
struct Settled {
    merged: Horizon,
    done: bool,
    woken: Vec<usize>,
    sitting_out: Vec<usize>,
}

impl<M> Rounds<M> {
    /// `hosts[p]`: whether partition `p` hosts any actor; all of those take
    /// part in round 0, and without `sit_out` in every round.
    pub(crate) fn new(me: usize, hosts: Vec<bool>, end: SimTime, sit_out: bool) -> Self {
        let n = hosts.len();
        Rounds {
            me,
            end,
            round: 0,
            members: hosts.clone(),
            standing: hosts
                .iter()
                .map(|&h| (!h).then(|| Horizon::idle(n)))
                .collect(),
            hosts,
            early: Vec::new(),
            closed: vec![false; n],
            taken: 0,
            sit_out,
        }
    }

    /// Rounds this partition took part in.
    pub(crate) fn taken(&self) -> u64 {
        self.taken
    }

    /// Ends this partition's part in the current round: sends `outgoing[p]`
    /// to partition `p` (leaving each vector empty) with this partition's
    /// `horizon` and `standing` horizon, appends the envelopes addressed here
    /// to `incoming`, and returns the next window this partition handles,
    /// waiting out the rounds it sits out.
    pub(crate) fn exchange<T: Transport<M>>(
        &mut self,
        transport: &mut T,
        outgoing: &mut [Vec<Envelope<M>>],
        horizon: Horizon,
        standing: Horizon,
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<Agreed, TransportError> {
        if !self.hosts.get(self.me).copied().unwrap_or(false) {
            return Ok(Agreed::Done { rounds: 0 });
        }
        let k = self.round;
        let mine = Arc::new(Report {
            round: k,
            horizon,
            standing,
            sends_to: (0..outgoing.len())
                .filter(|&p| !outgoing[p].is_empty())
                .map(|p| p as u32)
                .collect(),
            wake: None,
        });
        let frames = self
            .others()
            .map(|m| {
                let frame = Frame::Batch {
                    report: mine.clone(),
                    envelopes: std::mem::take(&mut outgoing[m]),
                };
                (m, frame)
            })
            .collect();
        transport.send(frames)?;
        let mut reports: Vec<Option<Arc<Report>>> = vec![None; self.hosts.len()];
        let lead = self.lead();
        reports[self.me] = Some(mine);
        self.collect(transport, &mut reports, incoming)?;
        let settled = self.settle(&reports)?;
        self.wake(transport, &settled, &reports, outgoing)?;
        if settled.done {
            if lead == Some(self.me) {
                let ends = (0..self.hosts.len())
                    .filter(|&p| self.hosts[p] && !self.members[p] && !settled.woken.contains(&p))
                    .map(|p| (p, Frame::End { round: k }))
                    .collect();
                transport.send(ends)?;
            }
            return Ok(Agreed::Done { rounds: k });
        }
        self.apply(&settled, &reports);
        if settled.sitting_out.contains(&self.me) {
            return self.sit_out(transport, incoming);
        }
        self.taken += 1;
        Ok(Agreed::Window {
            round: k,
            horizon: settled.merged,
        })
    }

    /// Sends each partition the round wakes this member's report, with the
    /// round's members (and, from the lowest member, the standing horizons)
    /// and its envelopes.
    fn wake<T: Transport<M>>(
        &self,
        transport: &mut T,
        settled: &Settled,
        reports: &[Option<Arc<Report>>],
        outgoing: &mut [Vec<Envelope<M>>],
    ) -> Result<(), TransportError> {
        if settled.woken.is_empty() {
            return Ok(());
        }
        let Some(Some(mine)) = reports.get(self.me) else {
            return Err(self.internal("lost its own report"));
        };
        let wake = Wake {
            members: self.member_list(),
            sleepers: if self.lead() == Some(self.me) {
                self.sleepers()
            } else {
                Vec::new()
            },
        };
        let report = Arc::new(Report {
            wake: Some(wake),
            ..Report::clone(mine)
        });
        let frames = settled
            .woken
            .iter()
            .map(|&w| {
                let frame = Frame::Batch {
                    report: report.clone(),
                    envelopes: std::mem::take(&mut outgoing[w]),
                };
                (w, frame)
            })
            .collect();
        transport.send(frames)
    }

    /// Waits until a round wakes this partition, settles that round as its
    /// members did, and returns its window; or until the run ends.
    fn sit_out<T: Transport<M>>(
        &mut self,
        transport: &mut T,
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<Agreed, TransportError> {
        loop {
            let first = self
                .early
                .iter()
                .enumerate()
                .filter(|(_, (_, r, _))| r.wake.is_some())
                .min_by_key(|(_, (_, r, _))| r.round)
                .map(|(i, _)| i);
            let (from, report, envelopes) = match first {
                Some(i) => self.early.swap_remove(i),
                None => match transport.recv()? {
                    Received::Frame {
                        from,
                        frame: Frame::Batch { report, envelopes },
                    } if report.wake.is_some() || report.round <= self.round => {
                        (from, report, envelopes)
                    }
                    Received::Frame {
                        from,
                        frame: Frame::Batch { report, envelopes },
                    } => {
                        // a round after the one that wakes this partition,
                        // from a partition woken with it
                        self.early.push((from, report, envelopes));
                        continue;
                    }
                    Received::Frame {
                        frame: Frame::End { round },
                        ..
                    } => return Ok(Agreed::Done { rounds: round }),
                    Received::Closed { peer } => {
                        self.mark_closed(peer);
                        let open = (0..self.hosts.len())
                            .any(|p| p != self.me && self.hosts[p] && !self.closed[p]);
                        if !open {
                            return Err(TransportError::Stopped {
                                reason: format!(
                                    "every peer closed its link while this partition waited \
                                     to be woken after round {}",
                                    self.round
                                ),
                            });
                        }
                        continue;
                    }
                },
            };
            let Some(wake) = report.wake.clone().filter(|_| report.round >= self.round) else {
                return Err(TransportError::OutOfStep {
                    peer: from,
                    got: report.round,
                    expected: self.round,
                });
            };
            let n = self.hosts.len();
            self.round = report.round;
            self.members = vec![false; n];
            for &m in &wake.members {
                match self.members.get_mut(m as usize) {
                    Some(slot) if self.hosts[m as usize] => *slot = true,
                    _ => {
                        return Err(TransportError::Link {
                            peer: from,
                            reason: format!("named partition {m} a member of its round"),
                        });
                    }
                }
            }
            if !self.members.get(from).copied().unwrap_or(false) || self.members[self.me] {
                return Err(TransportError::Link {
                    peer: from,
                    reason: format!("sent a wake frame for round {} it is not in", report.round),
                });
            }
            self.early.push((from, report, envelopes));
            let mut reports: Vec<Option<Arc<Report>>> = vec![None; n];
            self.collect(transport, &mut reports, incoming)?;
            self.adopt_sleepers(&reports)?;
            let settled = self.settle(&reports)?;
            if settled.done {
                return Ok(Agreed::Done { rounds: self.round });
            }
            if !settled.woken.contains(&self.me) {
                return Err(self.internal("was woken by a round that gives it nothing to do"));
            }
            self.apply(&settled, &reports);
            self.taken += 1;
            return Ok(Agreed::Window {
                round: self.round - 1,
                horizon: settled.merged,
            });
        }
    }

    /// Takes the standing horizons of the partitions sitting out from the
    /// lowest member's wake report.
    fn adopt_sleepers(&mut self, reports: &[Option<Arc<Report>>]) -> Result<(), TransportError> {
        let lead = self
            .lead()
            .ok_or_else(|| self.internal("woken by a round without members"))?;
        let table = reports[lead]
            .as_ref()
            .and_then(|r| r.wake.as_ref())
            .map(|w| w.sleepers.clone())
            .unwrap_or_default();
        let n = self.hosts.len();
        let mut standing: Vec<Option<Horizon>> = vec![None; n];
        for (p, h) in table {
            match standing.get_mut(p as usize) {
                Some(slot) if !self.members[p as usize] => *slot = Some(h),
                _ => {
                    return Err(TransportError::Link {
                        peer: lead,
                        reason: format!("listed partition {p} among those sitting out"),
                    });
                }
            }
        }
        if let Some(p) = (0..n).find(|&p| !self.members[p] && standing[p].is_none()) {
            return Err(TransportError::Link {
                peer: lead,
                reason: format!("left partition {p} out of those sitting out"),
            });
        }
        self.standing = standing;
        Ok(())
    }

    /// Waits until every member of the current round has reported.
    fn collect<T: Transport<M>>(
        &mut self,
        transport: &mut T,
        reports: &mut [Option<Arc<Report>>],
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<(), TransportError> {
        let k = self.round;
        for (from, report, envelopes) in std::mem::take(&mut self.early) {
            self.take_report(from, report, envelopes, reports, incoming)?;
        }
        loop {
            let missing = (0..reports.len()).find(|&p| self.members[p] && reports[p].is_none());
            let Some(missing) = missing else {
                return Ok(());
            };
            if self.closed[missing] {
                return Err(gone(missing, k));
            }
            match transport.recv()? {
                Received::Frame {
                    from,
                    frame: Frame::Batch { report, envelopes },
                } => self.take_report(from, report, envelopes, reports, incoming)?,
                Received::Frame {
                    from,
                    frame: Frame::End { round },
                } => {
                    return Err(TransportError::Link {
                        peer: from,
                        reason: format!(
                            "ended the run after round {round} while this partition is in \
                             round {k}"
                        ),
                    });
                }
                Received::Closed { peer } => self.mark_closed(peer),
            }
        }
    }

    /// Files a member's report of this round, or keeps a later round's.
    fn take_report(
        &mut self,
        from: usize,
        report: Arc<Report>,
        envelopes: Vec<Envelope<M>>,
        reports: &mut [Option<Arc<Report>>],
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<(), TransportError> {
        let k = self.round;
        let expected = from != self.me
            && self.members.get(from).copied().unwrap_or(false)
            && reports.get(from).is_some_and(Option::is_none);
        if report.round == k && expected {
            incoming.extend(envelopes);
            reports[from] = Some(report);
        } else if report.round > k {
            self.early.push((from, report, envelopes));
        } else {
            return Err(TransportError::OutOfStep {
                peer: from,
                got: report.round,
                expected: k,
            });
        }
        Ok(())
    }

    /// The agreement, who wakes and who sits out (see the module docs).
    fn settle(&self, reports: &[Option<Arc<Report>>]) -> Result<Settled, TransportError> {
        let n = self.hosts.len();
        let mut merged = Horizon::idle(n);
        let mut receives = vec![false; n];
        for (m, report) in reports.iter().enumerate() {
            let Some(report) = report else { continue };
            merged
                .merge(&report.horizon)
                .map_err(|reason| TransportError::Link { peer: m, reason })?;
            for &p in &report.sends_to {
                match receives.get_mut(p as usize) {
                    Some(r) if self.hosts[p as usize] => *r = true,
                    _ => {
                        return Err(TransportError::Link {
                            peer: m,
                            reason: format!("claims to send envelopes to partition {p}"),
                        });
                    }
                }
            }
        }
        for (p, standing) in self.standing.iter().enumerate() {
            if let Some(h) = standing {
                merged
                    .merge(h)
                    .map_err(|reason| TransportError::Link { peer: p, reason })?;
            }
        }
        let asleep = |p: usize| self.hosts[p] && self.standing[p].is_some();
        if merged.next >= self.end {
            // the envelopes still in flight reach their partitions as pending
            return Ok(Settled {
                woken: (0..n).filter(|&p| asleep(p) && receives[p]).collect(),
                merged,
                done: true,
                sitting_out: Vec::new(),
            });
        }
        let due = |p: usize| merged.reach[p].min(self.end);
        let woken: Vec<usize> = (0..n)
            .filter(|&p| {
                asleep(p)
                    && self.standing[p]
                        .as_ref()
                        .is_some_and(|h| receives[p] || h.next < due(p))
            })
            .collect();
        let sitting_out: Vec<usize> = (0..n)
            .filter(|&m| {
                self.sit_out
                    && reports[m]
                        .as_ref()
                        .is_some_and(|r| !receives[m] && r.standing.next >= due(m))
            })
            .collect();
        if woken.is_empty() && sitting_out.len() == reports.iter().flatten().count() {
            return Err(self.internal("found no partition with work before the end"));
        }
        Ok(Settled {
            merged,
            done: false,
            woken,
            sitting_out,
        })
    }

    /// Moves to the next round's members.
    fn apply(&mut self, settled: &Settled, reports: &[Option<Arc<Report>>]) {
        for &p in &settled.sitting_out {
            self.members[p] = false;
            self.standing[p] = reports[p].as_ref().map(|r| r.standing.clone());
        }
        for &p in &settled.woken {
            self.members[p] = true;
            self.standing[p] = None;
        }
        self.round += 1;
    }

    fn others(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.members.len()).filter(|&m| self.members[m] && m != self.me)
    }

    fn lead(&self) -> Option<usize> {
        self.members.iter().position(|&m| m)
    }

    fn member_list(&self) -> Vec<u32> {
        (0..self.members.len())
            .filter(|&m| self.members[m])
            .map(|m| m as u32)
            .collect()
    }

    fn sleepers(&self) -> Vec<(u32, Horizon)> {
        self.standing
            .iter()
            .enumerate()
            .filter_map(|(p, h)| h.clone().map(|h| (p as u32, h)))
            .collect()
    }

    fn mark_closed(&mut self, peer: usize) {
        if let Some(c) = self.closed.get_mut(peer) {
            *c = true;
        }
    }

    fn internal(&self, what: &str) -> TransportError {
        TransportError::Stopped {
            reason: format!(
                "partition {} {what} in round {} (a bug in the rounds protocol)",
                self.me, self.round
            ),
        }
    }
}

/// A peer whose link ended while this partition still needs its report.
fn gone(peer: usize, round: u64) -> TransportError {
    TransportError::Link {
        peer,
        reason: format!("it closed its link before window {round}"),
    }
}
