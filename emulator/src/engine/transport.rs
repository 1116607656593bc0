//! How partitions exchange envelopes at the end of each window.
//!
//! A [`Transport`] does one thing per window: deliver this partition's
//! outgoing envelopes to their partitions, collect the envelopes addressed
//! here, and agree with every other partition on the next windows. Folding
//! the agreement into the exchange keeps it to one round per window: each
//! partition contributes its [`Horizon`] (its earliest pending event or
//! envelope in flight, and how soon it could reach each partition), and the
//! element-wise minimum over all contributions is what they agree on.
//!
//! [`InMemoryTransport`] connects partitions on threads of one process with
//! crossbeam channels; the QUIC transport between processes implements the
//! same trait.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use dcemu_actors::kernel::Envelope;
use dcemu_topology::SimTime;

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

/// The link between one partition and all the others.
pub trait Transport<M>: Send {
    /// Sends `outgoing[p]` to partition `p` (leaving each vector empty), with
    /// `local`, this partition's contribution to the next windows; appends
    /// the envelopes addressed here to `incoming` and returns the element-wise
    /// minimum of every partition's horizon (its `next` is `SimTime::MAX`
    /// when nothing is pending anywhere). Every partition calls this once per
    /// window.
    fn exchange(
        &mut self,
        outgoing: &mut [Vec<Envelope<M>>],
        local: &Horizon,
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<Horizon, TransportError>;

    /// Tells the peers this partition is stopping early, so none waits forever.
    fn abort(&mut self);
}

/// A borrowed transport, so its owner can still use it after the run (e.g.
/// to close links gracefully).
impl<M, T: Transport<M> + ?Sized> Transport<M> for &mut T {
    fn exchange(
        &mut self,
        outgoing: &mut [Vec<Envelope<M>>],
        local: &Horizon,
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<Horizon, TransportError> {
        (**self).exchange(outgoing, local, incoming)
    }

    fn abort(&mut self) {
        (**self).abort()
    }
}

enum Frame<M> {
    Batch {
        window: u64,
        from: usize,
        horizon: Horizon,
        envelopes: Vec<Envelope<M>>,
    },
    Abort {
        from: usize,
    },
}

/// One partition's end of an all-to-all mesh of crossbeam channels.
pub struct InMemoryTransport<M> {
    me: usize,
    window: u64,
    peers: Vec<Sender<Frame<M>>>,
    inbox: Receiver<Frame<M>>,
    /// Batches of the next window from peers that are already ahead (a peer
    /// can be at most one window ahead: it cannot leave window `w + 1` before
    /// this partition's batch of window `w + 1` arrives).
    early: Vec<(usize, Horizon, Vec<Envelope<M>>)>,
    /// How long to poll for a peer's batch before sleeping on the channel.
    spin: Duration,
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
            window: 0,
            peers: senders.clone(),
            inbox,
            early: Vec::new(),
            spin,
        })
        .collect()
}

impl<M> InMemoryTransport<M> {
    /// The next frame: polled for up to `spin`, then waited for.
    fn next_frame(&self) -> Result<Frame<M>, TransportError> {
        if !self.spin.is_zero() {
            let start = Instant::now();
            loop {
                match self.inbox.try_recv() {
                    Ok(frame) => return Ok(frame),
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
    fn exchange(
        &mut self,
        outgoing: &mut [Vec<Envelope<M>>],
        local: &Horizon,
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<Horizon, TransportError> {
        let n = self.peers.len();
        let window = self.window;
        self.window += 1;
        for (peer, sender) in self.peers.iter().enumerate() {
            if peer == self.me {
                continue;
            }
            let frame = Frame::Batch {
                window,
                from: self.me,
                horizon: local.clone(),
                envelopes: std::mem::take(&mut outgoing[peer]),
            };
            sender
                .send(frame)
                .map_err(|_| TransportError::PeerGone { peer })?;
        }
        let mut agreed = local.clone();
        let mut received = 0;
        let mismatch = |peer, reason| TransportError::Link { peer, reason };
        for (from, horizon, envelopes) in std::mem::take(&mut self.early) {
            agreed.merge(&horizon).map_err(|r| mismatch(from, r))?;
            incoming.extend(envelopes);
            received += 1;
        }
        while received < n - 1 {
            match self.next_frame()? {
                Frame::Batch {
                    window: w,
                    from,
                    horizon,
                    envelopes,
                } => {
                    if w == window {
                        agreed.merge(&horizon).map_err(|r| mismatch(from, r))?;
                        incoming.extend(envelopes);
                        received += 1;
                    } else if w == window + 1 {
                        self.early.push((from, horizon, envelopes));
                    } else {
                        return Err(TransportError::OutOfStep {
                            peer: from,
                            got: w,
                            expected: window,
                        });
                    }
                }
                Frame::Abort { from } => {
                    return Err(TransportError::PeerAborted { peer: from });
                }
            }
        }
        Ok(agreed)
    }

    fn abort(&mut self) {
        for (peer, sender) in self.peers.iter().enumerate() {
            if peer != self.me {
                let _ = sender.send(Frame::Abort { from: self.me });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dcemu_actors::kernel::ActorId;

    fn horizon(next: SimTime, partitions: usize) -> Horizon {
        Horizon {
            next,
            reach: vec![next + 1000; partitions],
        }
    }

    fn env(t: SimTime, dst: u32) -> Envelope<()> {
        Envelope {
            deliver_at: t,
            src: ActorId(0),
            dst: ActorId(dst),
            src_seq: t,
            payload: (),
            causal_hops: 0,
        }
    }

    #[test]
    fn single_partition_exchange_is_the_identity() {
        let mut t = in_memory_mesh::<()>(1).pop().unwrap();
        let mut incoming = Vec::new();
        let h = horizon(42, 3);
        assert_eq!(t.exchange(&mut [Vec::new()], &h, &mut incoming), Ok(h));
        assert!(incoming.is_empty());
    }

    #[test]
    fn all_partitions_agree_on_the_minimum_and_get_their_envelopes() {
        let mesh = in_memory_mesh::<()>(3);
        let results: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = mesh
                .into_iter()
                .enumerate()
                .map(|(me, mut t)| {
                    s.spawn(move || {
                        let mut out: Vec<Vec<Envelope<()>>> = vec![Vec::new(); 3];
                        out[(me + 1) % 3].push(env(100 + me as u64, 0));
                        let mut inc = Vec::new();
                        let mut h = horizon(500 + me as u64, 3);
                        h.reach[me] = 10 * me as u64;
                        let next = t.exchange(&mut out, &h, &mut inc).unwrap();
                        // a second window, so early batches get exercised
                        let next2 = t
                            .exchange(&mut vec![Vec::new(); 3], &horizon(900, 3), &mut Vec::new())
                            .unwrap();
                        (next, inc, next2)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (me, (next, inc, next2)) in results.into_iter().enumerate() {
            assert_eq!(next.next, 500, "partition {me}");
            assert_eq!(next.reach, vec![0, 10, 20]);
            assert_eq!(next2, horizon(900, 3));
            assert_eq!(inc.len(), 1);
            assert_eq!(inc[0].deliver_at, 100 + ((me + 2) % 3) as u64);
        }
    }

    #[test]
    fn abort_reaches_peers_instead_of_hanging_them() {
        let mut mesh = in_memory_mesh::<()>(2);
        let mut b = mesh.pop().unwrap();
        let mut a = mesh.pop().unwrap();
        a.abort();
        let err = b.exchange(
            &mut [Vec::new(), Vec::new()],
            &horizon(0, 2),
            &mut Vec::new(),
        );
        assert_eq!(err, Err(TransportError::PeerAborted { peer: 0 }));
    }
}
