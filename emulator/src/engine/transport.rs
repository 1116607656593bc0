//! How partitions move their rounds' frames to each other.
//!
//! A [`Transport`] only carries [`Frame`]s: it sends each to the partition
//! it is for and hands over, one at a time, those addressed here. Who takes
//! part in a round, what the frames say and what the partitions agree on is
//! [`super::rounds`]'s job, the same for every transport.
//!
//! [`InMemoryTransport`] connects partitions on threads of one process with
//! crossbeam channels; the QUIC transport between processes implements the
//! same trait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use dcemu_actors::kernel::Envelope;
use dcemu_topology::SimTime;
use serde::{Deserialize, Serialize};

use super::horizon::Horizon;

/// Why an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("partition {peer} aborted the run")]
    PeerAborted { peer: usize },
    #[error("partition {peer} disappeared without finishing the window")]
    PeerGone { peer: usize },
    #[error(
        "partition {peer} sent a batch for window {got} while this one is in window {expected}"
    )]
    OutOfStep {
        peer: usize,
        got: u64,
        expected: u64,
    },
    #[error("received an envelope for actor #{dst}, which partition {partition} does not host")]
    Misrouted { dst: u32, partition: usize },
    #[error(
        "received an envelope for actor #{dst} due at {at} ns, but this partition has already \
         handled everything before {handled_until} ns"
    )]
    Late {
        dst: u32,
        at: SimTime,
        handled_until: SimTime,
    },
    #[error("the link to partition {peer} failed: {reason}")]
    Link { peer: usize, reason: String },
    #[error("stopped: {reason}")]
    Stopped { reason: String },
}

/// What a partition tells the others of a round (see [`super::rounds`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub round: u64,
    /// Its contribution to the agreement: its pending events and the
    /// envelopes it sends in this round.
    pub horizon: Horizon,
    /// The part of `horizon` that stays true while it handles nothing and
    /// receives nothing: its pending events alone.
    pub standing: Horizon,
    /// The partitions it sends envelopes to in this round, ascending.
    pub sends_to: Vec<u32>,
    /// Present when the frame wakes a partition that sat the last rounds
    /// out.
    pub wake: Option<Wake>,
}

/// What a woken partition needs besides the members' reports to agree as
/// they do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wake {
    /// The partitions that took part in the round, ascending.
    pub members: Vec<u32>,
    /// The standing horizon of every partition that did not (sent by the
    /// round's lowest member only; empty from the others).
    pub sleepers: Vec<(u32, Horizon)>,
}

/// What travels between partitions.
#[derive(Debug)]
pub enum Frame<M> {
    /// A round's report (shared by the frames to every peer) with the
    /// envelopes for the receiver.
    Batch {
        report: Arc<Report>,
        envelopes: Vec<Envelope<M>>,
    },
    /// The run is over (sent to the partitions sitting it out).
    End { round: u64 },
}

/// A frame and who sent it, or what a transport saw of a peer.
#[derive(Debug)]
pub enum Received<M> {
    Frame {
        from: usize,
        frame: Frame<M>,
    },
    /// The peer's link ended cleanly: it finished, or it is gone (a
    /// partition still waiting for it must fail).
    Closed {
        peer: usize,
    },
}

/// The link between one partition and all the others.
pub trait Transport<M>: Send {
    /// Sends each `(peer, frame)`, in order.
    fn send(&mut self, frames: Vec<(usize, Frame<M>)>) -> Result<(), TransportError>;

    /// The next frame addressed here, waiting for it.
    fn recv(&mut self) -> Result<Received<M>, TransportError>;

    /// Tells the peers this partition is stopping early, so none waits forever.
    fn abort(&mut self);

    /// Whether partitions with nothing to do sit rounds out
    /// ([`super::rounds`]); every partition of a run must answer alike.
    /// Worth it where waking a waiting peer is dear (a process asleep on
    /// a socket); see [`InMemoryTransport`] for where it is not.
    fn lets_partitions_sit_out(&self) -> bool {
        true
    }
}

/// A borrowed transport, so its owner can still use it after the run (e.g.
/// to close links gracefully).
impl<M, T: Transport<M> + ?Sized> Transport<M> for &mut T {
    fn send(&mut self, frames: Vec<(usize, Frame<M>)>) -> Result<(), TransportError> {
        (**self).send(frames)
    }

    fn recv(&mut self) -> Result<Received<M>, TransportError> {
        (**self).recv()
    }

    fn abort(&mut self) {
        (**self).abort()
    }

    fn lets_partitions_sit_out(&self) -> bool {
        (**self).lets_partitions_sit_out()
    }
}

enum Message<M> {
    Frame { from: usize, frame: Frame<M> },
    Abort { from: usize },
}

/// One partition's end of an all-to-all mesh of crossbeam channels.
pub struct InMemoryTransport<M> {
    me: usize,
    peers: Vec<Sender<Message<M>>>,
    inbox: Receiver<Message<M>>,
    /// How long to poll for a peer's frame before sleeping on the channel.
    spin: Duration,
    /// See [`Transport::lets_partitions_sit_out`] (tests turn it on).
    sit_out: bool,
}

/// How long a partition polls for its peers' batches before it sleeps, when
/// every partition has a core of its own. A window of a flat network holds
/// a few microseconds of work, and waking a sleeping thread costs about as
/// much again on a quiet machine; on a busy one a woken thread waits for a
/// core, often for milliseconds. Polling keeps the core. It spins rather
/// than yields: yielding hands the core to whatever else is running.
///
/// Measured on 2 cores, `ec2-oversubscribed` on 2 partitions: quiet, 50 µs
/// to 1 ms poll alike (4.8–5.0 s, against 6.4 s without polling); beside
/// 2 busy loops, without polling over 120 s, polling 50 or 200 µs 17–57 s
/// (it varies from run to run), polling 200 µs with yields over 120 s.
const SPIN: Duration = Duration::from_micros(50);

/// Connects `n` partitions to each other. They poll for each other's
/// batches briefly (see [`SPIN`]) only when there are at least `n` cores,
/// since a polling thread would otherwise take the core a peer needs.
pub fn in_memory_mesh<M: Send>(n: usize) -> Vec<InMemoryTransport<M>> {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let spin = if n > 1 && n <= cores {
        SPIN
    } else {
        Duration::ZERO
    };
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..n).map(|_| crossbeam_channel::unbounded()).unzip();
    receivers
        .into_iter()
        .enumerate()
        .map(|(me, inbox)| InMemoryTransport {
            me,
            peers: senders.clone(),
            inbox,
            spin,
            sit_out: false,
        })
        .collect()
}

impl<M> InMemoryTransport<M> {
    /// Lets the partitions sit rounds out, as processes do: the same results
    /// by other rounds (the engine tests run both).
    pub(crate) fn sitting_out(mut self, sit_out: bool) -> Self {
        self.sit_out = sit_out;
        self
    }

    /// The next message: polled for up to `spin`, then waited for.
    fn next_message(&self) -> Result<Message<M>, TransportError> {
        if !self.spin.is_zero() {
            let start = Instant::now();
            loop {
                match self.inbox.try_recv() {
                    Ok(message) => return Ok(message),
                    Err(TryRecvError::Disconnected) => {
                        return Err(TransportError::PeerGone { peer: usize::MAX });
                    }
                    Err(TryRecvError::Empty) => {}
                }
                if start.elapsed() >= self.spin {
                    break;
                }
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            }
        }
        self.inbox
            .recv()
            .map_err(|_| TransportError::PeerGone { peer: usize::MAX })
    }
}

impl<M: Send> Transport<M> for InMemoryTransport<M> {
    fn send(&mut self, frames: Vec<(usize, Frame<M>)>) -> Result<(), TransportError> {
        for (peer, frame) in frames {
            let sender = self
                .peers
                .get(peer)
                .ok_or(TransportError::PeerGone { peer })?;
            sender
                .send(Message::Frame {
                    from: self.me,
                    frame,
                })
                .map_err(|_| TransportError::PeerGone { peer })?;
        }
        Ok(())
    }

    fn recv(&mut self) -> Result<Received<M>, TransportError> {
        match self.next_message()? {
            Message::Frame { from, frame } => Ok(Received::Frame { from, frame }),
            Message::Abort { from } => Err(TransportError::PeerAborted { peer: from }),
        }
    }

    fn abort(&mut self) {
        for (peer, sender) in self.peers.iter().enumerate() {
            if peer != self.me {
                let _ = sender.send(Message::Abort { from: self.me });
            }
        }
    }

    /// Threads meet every round unless told otherwise. A thread waiting on a channel yields its
    /// core a while before it parks, and one that takes part in every round
    /// rarely parks; one sitting rounds out parks, and waking a parked
    /// thread costs more than the rounds it skipped. Measured on 2 cores
    /// (`farm-bench`, quiet): with sitting out, 4 partitions were 1.56×
    /// (`ec2-low`) and 1.61× (`thesis-large-dc`) slower, 2 partitions of
    /// `ec2-oversubscribed` 1.14× slower (12,937 futex calls against 2,093
    /// on `thesis-large-dc`).
    fn lets_partitions_sit_out(&self) -> bool {
        self.sit_out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(round: u64) -> Report {
        Report {
            round,
            horizon: Horizon::idle(2),
            standing: Horizon::idle(2),
            sends_to: Vec::new(),
            wake: None,
        }
    }

    #[test]
    fn frames_arrive_in_order_with_their_sender() {
        let mut mesh = in_memory_mesh::<()>(2);
        let mut b = mesh.pop().unwrap();
        let mut a = mesh.pop().unwrap();
        let batch = |round| Frame::Batch {
            report: Arc::new(report(round)),
            envelopes: Vec::new(),
        };
        a.send(vec![(1, batch(0)), (1, batch(1))]).unwrap();
        for round in 0..2 {
            match b.recv().unwrap() {
                Received::Frame {
                    from: 0,
                    frame: Frame::Batch { report, .. },
                } => assert_eq!(report.round, round),
                other => panic!("received {other:?}"),
            }
        }
        assert_eq!(
            a.send(vec![(7, Frame::End { round: 0 })]).unwrap_err(),
            TransportError::PeerGone { peer: 7 }
        );
    }

    #[test]
    fn abort_reaches_peers_instead_of_hanging_them() {
        let mut mesh = in_memory_mesh::<()>(2);
        let mut b = mesh.pop().unwrap();
        let mut a = mesh.pop().unwrap();
        a.abort();
        assert_eq!(
            b.recv().unwrap_err(),
            TransportError::PeerAborted { peer: 0 }
        );
    }
}
