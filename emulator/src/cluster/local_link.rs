//! Same-host links: a Unix socket between two nodes that share a network
//! namespace, offered over their authenticated QUIC link and used in its
//! place for the windows' batches.
//!
//! On one host, QUIC's encryption, acknowledgements and pacing cost more
//! than the window's work: the window barrier is the cost of a multi-process
//! run (docs/performance.md, "Same-host links"). A Unix socket carries the
//! same frames with one system call per write and read.
//!
//! The socket is in Linux's abstract namespace, which belongs to a network
//! namespace: two processes on one host (and in one container) reach each
//! other; two containers or two `ip netns` hosts do not, and keep QUIC
//! without being told. Anyone in the namespace may connect to an abstract
//! socket, so the acceptor hands the dialer, over their QUIC link (whose
//! certificates the run's CA issued), a random name and a random key; the
//! first connection that presents the key is the peer's, any other is
//! dropped. From then on the bytes are checked exactly as QUIC's are
//! (`PeerLink`).

use std::os::linux::net::SocketAddrExt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::time::timeout;

/// Bytes of the key the dialer must present.
pub const KEY_BYTES: usize = 32;

/// How long the acceptor waits for a connection's key: the dialer writes
/// it as soon as it connects, so a connection that is slower is not the
/// peer's and must not hold the socket for long.
const KEY_WAIT: Duration = Duration::from_millis(500);

/// How long the dialer waits for the acceptor's acknowledgement: long
/// enough for a few strangers' connections to be dropped before its own.
const ACK_WAIT: Duration = Duration::from_secs(5);

/// Round trips each side times after the handshake, to report the link's
/// one-way latency (the floor's unit, `rtt_us` in `run.json`).
const PINGS: usize = 16;

/// What the acceptor offers the dialer over their QUIC link.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LocalOffer {
    /// Abstract socket name (without the leading NUL).
    pub name: String,
    pub key: Vec<u8>,
}

/// A same-host link ready for the run, with the smallest round trip it
/// measured.
#[derive(Debug)]
pub struct LocalLink {
    pub stream: UnixStream,
    pub rtt: Duration,
}

/// The acceptor's side before the dialer answers.
pub struct Offered {
    listener: UnixListener,
    key: Vec<u8>,
}

/// Why a same-host link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("no system randomness for the link's name and key")]
    Random,
    #[error("cannot open a same-host socket: {0}")]
    Io(#[from] std::io::Error),
    #[error("the peer did not connect to the same-host socket in time")]
    NoPeer,
    #[error("the offered key is {0} bytes, not {KEY_BYTES}")]
    BadKey(usize),
    #[error("the same-host handshake stalled")]
    Stalled,
    #[error("the same-host handshake got {0:?} where it expected an echo")]
    BadEcho(u8),
}

/// Binds a fresh abstract socket for the link from node `me` to node
/// `peer` of run `run`; call within a tokio runtime.
pub fn offer(run: &str, me: usize, peer: usize) -> Result<(LocalOffer, Offered), LocalError> {
    let mut random = [0u8; 16 + KEY_BYTES];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random)
        .map_err(|_| LocalError::Random)?;
    let short_run: String = run.chars().take(16).collect();
    let name = format!(
        "dcemu-{short_run}-{me}-{peer}-{}",
        hex::encode(&random[..16])
    );
    let key = random[16..].to_vec();
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr)?;
    listener.set_nonblocking(true)?;
    let listener = UnixListener::from_std(listener)?;
    Ok((
        LocalOffer {
            name,
            key: key.clone(),
        },
        Offered { listener, key },
    ))
}

impl Offered {
    /// Takes the first connection that presents the key before `deadline`
    /// (others are dropped), then times the link.
    pub async fn accept(self, deadline: Instant) -> Result<LocalLink, LocalError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (mut stream, _) = timeout(left, self.listener.accept())
                .await
                .map_err(|_| LocalError::NoPeer)??;
            let mut key = vec![0u8; KEY_BYTES];
            let presented = timeout(KEY_WAIT, stream.read_exact(&mut key)).await;
            if matches!(presented, Ok(Ok(_))) && key == self.key {
                stream.write_all(b"k").await?;
                echo(&mut stream).await?;
                let rtt = ping(&mut stream).await?;
                return Ok(LocalLink { stream, rtt });
            }
        }
    }
}

/// Connects to an offered socket; fails at once where the socket is not
/// reachable (another network namespace). Call within a tokio runtime.
pub fn connect(offer: &LocalOffer) -> Result<UnixStream, LocalError> {
    if offer.key.len() != KEY_BYTES {
        return Err(LocalError::BadKey(offer.key.len()));
    }
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(offer.name.as_bytes())?;
    let stream = std::os::unix::net::UnixStream::connect_addr(&addr)?;
    stream.set_nonblocking(true)?;
    Ok(UnixStream::from_std(stream)?)
}

/// Connects to an offered socket and presents its key, then times the link.
pub async fn dial(offer: &LocalOffer) -> Result<LocalLink, LocalError> {
    let stream = connect(offer)?;
    handshake(stream, offer).await
}

/// Presents the offer's key on a connected socket, then times the link.
pub async fn handshake(
    mut stream: UnixStream,
    offer: &LocalOffer,
) -> Result<LocalLink, LocalError> {
    if offer.key.len() != KEY_BYTES {
        return Err(LocalError::BadKey(offer.key.len()));
    }
    stream.write_all(&offer.key).await?;
    let mut ack = [0u8; 1];
    timeout(ACK_WAIT, stream.read_exact(&mut ack))
        .await
        .map_err(|_| LocalError::Stalled)??;
    if ack != *b"k" {
        return Err(LocalError::BadEcho(ack[0]));
    }
    let rtt = ping(&mut stream).await?;
    echo(&mut stream).await?;
    Ok(LocalLink { stream, rtt })
}

/// Sends [`PINGS`] bytes one at a time, each after the last one's echo;
/// the smallest round trip.
async fn ping(stream: &mut UnixStream) -> Result<Duration, LocalError> {
    let mut best = Duration::MAX;
    for i in 0..PINGS {
        let sent = Instant::now();
        stream.write_all(&[i as u8]).await?;
        let mut back = [0u8; 1];
        timeout(Duration::from_secs(2), stream.read_exact(&mut back))
            .await
            .map_err(|_| LocalError::Stalled)??;
        if back[0] != i as u8 {
            return Err(LocalError::BadEcho(back[0]));
        }
        best = best.min(sent.elapsed());
    }
    Ok(best)
}

/// Echoes the peer's [`PINGS`] bytes, for the peer to time.
async fn echo(stream: &mut UnixStream) -> Result<(), LocalError> {
    for _ in 0..PINGS {
        let mut byte = [0u8; 1];
        timeout(Duration::from_secs(2), stream.read_exact(&mut byte))
            .await
            .map_err(|_| LocalError::Stalled)??;
        stream.write_all(&byte).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dialer_with_the_key_gets_the_link_and_both_sides_time_it() {
        let (offer, offered) = offer("0123456789abcdef", 0, 1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let accepting = tokio::spawn(offered.accept(deadline));
        let mut dialed = dial(&offer).await.unwrap();
        let mut accepted = accepting.await.unwrap().unwrap();
        assert!(dialed.rtt < Duration::from_secs(1) && accepted.rtt < Duration::from_secs(1));
        dialed.stream.write_all(b"frame").await.unwrap();
        let mut got = [0u8; 5];
        accepted.stream.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"frame");
    }

    #[tokio::test]
    async fn a_connection_without_the_key_is_dropped_and_the_peer_still_gets_in() {
        let (offer, offered) = offer("0123456789abcdef", 0, 1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let accepting = tokio::spawn(offered.accept(deadline));
        let mut rogue = LocalOffer {
            name: offer.name.clone(),
            key: vec![7; KEY_BYTES],
        };
        assert!(dial(&rogue).await.is_err(), "a wrong key got a link");
        rogue.key = vec![1; 3];
        assert!(matches!(dial(&rogue).await, Err(LocalError::BadKey(3))));
        let dialed = dial(&offer).await;
        assert!(dialed.is_ok(), "{dialed:?}");
        assert!(accepting.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_silent_stranger_holds_the_socket_only_briefly() {
        let (offer, offered) = offer("0123456789abcdef", 0, 1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let accepting = tokio::spawn(offered.accept(deadline));
        let _stranger = connect(&offer).unwrap();
        let started = Instant::now();
        let dialed = dial(&offer).await;
        assert!(dialed.is_ok(), "{dialed:?}");
        assert!(started.elapsed() < ACK_WAIT);
        assert!(accepting.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn nobody_dialing_ends_at_the_deadline() {
        let (_offer, offered) = offer("0123456789abcdef", 0, 1).unwrap();
        let deadline = Instant::now() + Duration::from_millis(100);
        assert!(matches!(
            offered.accept(deadline).await,
            Err(LocalError::NoPeer)
        ));
    }

    #[test]
    fn an_unknown_socket_is_an_error() {
        let rogue = LocalOffer {
            name: "dcemu-no-such-socket".into(),
            key: vec![0; KEY_BYTES],
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert!(matches!(rt.block_on(dial(&rogue)), Err(LocalError::Io(_))));
    }
}
