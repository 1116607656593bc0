//! Frames on the wire: a 4-byte big-endian length, then a bincode body.
//!
//! Every stream between dcemu processes carries such frames. A length over
//! the limit is refused before anything is read or allocated, and a body
//! that does not decode is an error, never a panic.

use super::local_link::LocalOffer;
#[cfg(doc)]
use crate::engine::Horizon;
use crate::engine::Report;
use dcemu_actors::kernel::{Envelope, Metrics};
use dcemu_topology::SimTime;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The default largest frame accepted (bytes).
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;

/// The largest frame any setting allows (`--max-frame`); bincode's own
/// limit on what a body may claim to contain.
pub const HARD_MAX_FRAME: usize = 1 << 30;

/// Version of the protocol; processes of different versions refuse each other.
/// 2: the coordinator names its run ([`ToNode::Welcome`]) and peers check
/// it in their hellos; batches carry a [`Horizon`] instead of a next time.
/// 3: step series in the gathered metrics are packed 8 bytes a change
/// (`dcemu_actors::kernel::Steps`).
/// 4: a task carries the ideal time it ran on earlier configurations
/// (`Task::solo_ns`, Paragon's platform grading after a migration).
/// 5: envelopes carry their cross-partition causal depth
/// (`Envelope::causal_hops`) and nodes report the deepest
/// ([`Finished::causal_steps`]).
/// 6: the setup names the directory an external scheduler's program runs
/// in. 7: that directory ([`Setup::shared_dir`]) is also where nodes read
/// public-format traces. 8: log chunks are byte strings. 9: the model's
/// messages carry an external program's power orders and the servers'
/// answers (`Body::Power`, `Body::Awake`, external protocol v3). 10: peers
/// on one host offer each other a same-host link ([`PeerFrame::Local`],
/// [`Setup::same_host_links`]). 11: nodes with nothing to do sit rounds
/// out; batches carry a round's [`Report`], and [`PeerFrame::End`] tells
/// those sitting out that the run is over. 13: an actor's output carries
/// the heap it held at the end ([`ToCoordinator::Actor`]'s `held_bytes`).
pub const PROTOCOL: u32 = 13;

/// Length of a run id in bytes before hex encoding (`tls::random_run_id`).
pub const RUN_ID_BYTES: usize = 16;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("frame of {len} bytes is over the limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
    #[error("undecodable frame: {0}")]
    Decode(String),
    #[error("cannot encode a frame: {0}")]
    Encode(String),
    #[error("stream error: {0}")]
    Stream(String),
    #[error("the stream ended in the middle of a frame")]
    Truncated,
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<HARD_MAX_FRAME>()
}

/// Encodes `msg` as one frame (length prefix included), refusing it when
/// it is over `max`.
pub fn encode<T: Serialize>(msg: &T, max: usize) -> Result<Vec<u8>, WireError> {
    let mut buf = vec![0u8; 4];
    bincode::serde::encode_into_std_write(msg, &mut buf, config())
        .map_err(|e| WireError::Encode(e.to_string()))?;
    let len = buf.len() - 4;
    if len > max {
        return Err(WireError::TooLarge { len, max });
    }
    buf[..4].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(buf)
}

/// Decodes a frame body; trailing bytes are an error.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, WireError> {
    let (msg, used) = bincode::serde::decode_from_slice(body, config())
        .map_err(|e| WireError::Decode(e.to_string()))?;
    if used != body.len() {
        return Err(WireError::Decode(format!(
            "{} bytes left over after the message",
            body.len() - used
        )));
    }
    Ok(msg)
}

/// Writes one message as a frame, on a QUIC stream or a same-host socket.
pub async fn write<T: Serialize, W: AsyncWrite + Unpin>(
    send: &mut W,
    msg: &T,
    max: usize,
) -> Result<(), WireError> {
    let buf = encode(msg, max)?;
    send.write_all(&buf)
        .await
        .map_err(|e| WireError::Stream(e.to_string()))
}

/// Reads one frame; `Ok(None)` when the stream ended cleanly between frames.
pub async fn read<T: DeserializeOwned, R: AsyncRead + Unpin>(
    recv: &mut R,
    max: usize,
) -> Result<Option<T>, WireError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match recv
            .read(&mut len[got..])
            .await
            .map_err(|e| WireError::Stream(e.to_string()))?
        {
            0 if got == 0 => return Ok(None),
            0 => return Err(WireError::Truncated),
            n => got += n,
        }
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > max {
        return Err(WireError::TooLarge { len, max });
    }
    let mut body = vec![0u8; len];
    recv.read_exact(&mut body)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => WireError::Truncated,
            _ => WireError::Stream(e.to_string()),
        })?;
    decode(&body).map(Some)
}

/// A node's request to join a run (first frame on its control stream).
#[derive(Debug, Serialize, Deserialize)]
pub struct Join {
    pub protocol: u32,
    pub name: String,
    /// HMAC-SHA256 of the cluster secret over this TLS session's exporter
    /// keying material (see `tls::proof`).
    pub proof: Vec<u8>,
    /// Certificate signing request (DER) for the node's own key.
    pub csr: Vec<u8>,
    /// Port its peer endpoint listens on.
    pub port: u16,
    /// Address peers should dial, when the one the coordinator sees is not it.
    pub advertise: Option<std::net::SocketAddr>,
}

/// One node of the run as every node learns it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerInfo {
    pub name: String,
    pub addr: std::net::SocketAddr,
    /// Its certificate (DER), issued by the run's CA.
    pub cert: Vec<u8>,
}

/// What the coordinator sends a node on its control stream.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToNode {
    /// The coordinator's half of the mutual proof, and the id of the run
    /// the node joins: fresh per coordinator start, so a node and every
    /// link it makes belong to one run, and a restarted coordinator (same
    /// address, same secret) is a different run.
    Welcome { proof: Vec<u8>, run: String },
    /// Everything the node needs to run its partition.
    Setup(Box<Setup>),
    /// Every node is connected to every other: start the windows.
    Start,
    /// The run is over and complete; exit successfully.
    Bye,
    /// The run failed; stop and exit non-zero.
    Abort { reason: String },
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Setup {
    /// This node's index (its partition).
    pub index: u32,
    pub nodes: Vec<PeerInfo>,
    /// The run CA's certificate (DER); its key stays with the coordinator.
    pub ca: Vec<u8>,
    /// The scenario as run (`Scenario::to_toml`).
    pub scenario: String,
    /// Replayed traces: `traces/<tenant>.csv` → bytes.
    pub traces: Vec<(String, Vec<u8>)>,
    /// With `[scheduler.external]` or a public-format trace: the
    /// coordinator's scenario directory as an absolute path. The external
    /// scheduler's program runs there (only on the node hosting the
    /// scheduler actor), and every node reads public-format traces from
    /// there (streamed, never shipped: they may be many GB), so it must
    /// exist on the nodes that need it (a shared file system or volume, or
    /// the same checkout at the same path).
    pub shared_dir: Option<String>,
    /// Partition (node index) of every actor, by actor id.
    pub assignment: Vec<u32>,
    pub max_frame: u64,
    pub heartbeat_ms: u64,
    pub failure_timeout_ms: u64,
    /// Whether peers that share a network namespace carry their batches
    /// over a Unix socket instead of QUIC (`cluster::local_link`).
    pub same_host_links: bool,
}

/// What a node sends the coordinator on its control stream.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToCoordinator {
    Join(Box<Join>),
    /// Connected to every peer.
    Ready,
    /// Still alive: the window it is in and the events handled so far.
    Heartbeat {
        vtime: SimTime,
        events: u64,
    },
    /// Its partition reached the end of the run.
    Finished(Box<Finished>),
    /// One hosted actor's output (its log follows in [`ToCoordinator::Log`]).
    Actor {
        id: u32,
        metrics: Metrics,
        /// Events it handled, the wall time they took and the heap it held
        /// at the end ([`crate::engine::ActorOutput::events`], `busy_ns`,
        /// `held_bytes`).
        events: u64,
        busy_ns: u64,
        held_bytes: u64,
    },
    /// A piece of an actor's log, in order (one byte string on the wire,
    /// copied whole, rather than a sequence of single bytes).
    Log {
        id: u32,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// Everything was sent.
    Done,
    /// Its partition failed.
    Failed {
        reason: String,
    },
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Finished {
    pub events: u64,
    pub windows: u64,
    pub last_event: SimTime,
    pub pending: bool,
    /// The longest chain of cross-partition messages behind an event of
    /// this node's partition.
    pub causal_steps: u32,
    pub barrier: BarrierStats,
}

/// Wall-clock cost of the rounds as one node saw it: per round it took part
/// in, the time from handing its batches to the transport to having every
/// member's batch, and the rounds it then sat out (one exchange per round
/// taken part in, and one that ends the run).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct BarrierStats {
    pub exchanges: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// The smallest round-trip time QUIC estimated on any of the node's peer
    /// links at the end of the run (quinn's smoothed RTT), 0 if unknown:
    /// half of it is the transport's one-way latency.
    pub rtt_ns: u64,
    /// How many of the node's peer links were same-host sockets; `rtt_ns`
    /// is then their smallest measured round trip where they are all the
    /// node has.
    pub local_links: u32,
}

impl BarrierStats {
    pub fn mean_us(&self) -> f64 {
        self.total_ns as f64 / self.exchanges.max(1) as f64 / 1e3
    }
}

/// What nodes send each other: per window, one batch (possibly in several
/// frames, the last with `last`).
#[derive(Debug, Serialize, Deserialize)]
pub enum PeerFrame<M> {
    /// The dialing node says who it is (its certificate must match) and
    /// which run it belongs to (must be the acceptor's); the acceptor
    /// answers with its own.
    Hello { from: u32, run: String },
    /// A round's report and envelopes (see `engine::rounds`), split over
    /// several frames when large: the report is repeated, the last is marked.
    Batch {
        report: std::sync::Arc<Report>,
        last: bool,
        envelopes: Vec<Envelope<M>>,
    },
    /// The run is over: from the last round's lowest member to each node
    /// that sat it out.
    End { round: u64 },
    /// After its hello, the acceptor offers a same-host link, or none.
    Local { offer: Option<LocalOffer> },
    /// The dialer's answer to an offer: whether it reached the socket (it
    /// then presents the key there).
    LocalAnswer { connected: bool },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_carry_their_length() {
        let msg = ToCoordinator::Heartbeat {
            vtime: 5,
            events: 7,
        };
        let buf = encode(&msg, DEFAULT_MAX_FRAME).unwrap();
        let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
        assert_eq!(len, buf.len() - 4);
        match decode::<ToCoordinator>(&buf[4..]).unwrap() {
            ToCoordinator::Heartbeat { vtime, events } => assert_eq!((vtime, events), (5, 7)),
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn oversized_and_garbage_frames_are_errors() {
        let msg = ToCoordinator::Log {
            id: 1,
            bytes: vec![0; 100],
        };
        assert!(matches!(
            encode(&msg, 50),
            Err(WireError::TooLarge { max: 50, .. })
        ));
        assert!(matches!(
            decode::<ToCoordinator>(&[0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(WireError::Decode(_))
        ));
        // a claimed length far beyond the bytes present must not allocate it
        assert!(decode::<ToCoordinator>(&[4, 0xfc, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }
}
