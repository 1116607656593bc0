//! Helpers shared by the fuzz targets of dcemu (issue 12): the wire decoder
//! under test, and the checks that must hold on whatever a target accepts.
//!
//! The targets themselves live in `fuzz_targets/`; `README.md` says what
//! each asserts and how to run it.

use bincode::config::{Configuration, Limit, LittleEndian, Varint};
use dcemu_actors::kernel::Envelope;
use dcemu_actors::model::Msg;

/// Largest frame the decoder accepts, in bytes. Bincode's limit also bounds
/// what a length prefix inside the frame may make it allocate.
pub const WIRE_LIMIT: usize = 1 << 20;

/// The wire configuration: bincode's standard (little-endian, varint
/// integers) with a size limit.
pub type WireConfig = Configuration<LittleEndian, Varint, Limit<WIRE_LIMIT>>;

/// The configuration the transport encodes and decodes with.
pub fn wire_config() -> WireConfig {
    bincode::config::standard().with_limit::<WIRE_LIMIT>()
}

/// Why a frame was refused.
#[derive(Debug)]
pub enum WireError {
    Decode(bincode::error::DecodeError),
    /// The frame holds more bytes than the batch it encodes.
    Trailing {
        used: usize,
        len: usize,
    },
}

/// Decodes one frame's payload (the bytes after its length prefix) as a
/// batch of envelopes, refusing trailing bytes.
///
/// This is the decoder the `wire` target fuzzes. When the QUIC transport
/// lands with its own decode function, make this call it instead: the
/// target and its checks stay as they are.
pub fn decode_batch(frame: &[u8]) -> Result<Vec<Envelope<Msg>>, WireError> {
    decode_whole(frame)
}

/// Decodes one envelope, refusing trailing bytes.
pub fn decode_envelope(bytes: &[u8]) -> Result<Envelope<Msg>, WireError> {
    decode_whole(bytes)
}

fn decode_whole<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, WireError> {
    let (value, used) =
        bincode::serde::decode_from_slice(bytes, wire_config()).map_err(WireError::Decode)?;
    if used != bytes.len() {
        return Err(WireError::Trailing {
            used,
            len: bytes.len(),
        });
    }
    Ok(value)
}

/// Encodes a batch the way [`decode_batch`] reads it.
pub fn encode_batch(batch: &[Envelope<Msg>]) -> Vec<u8> {
    bincode::serde::encode_to_vec(batch, wire_config())
        .unwrap_or_else(|e| panic!("a decoded batch must encode again: {e}"))
}

/// Uses a decoded envelope the way a receiving partition does, so that a
/// value which breaks its type's invariants (say, a route longer than the
/// array holding it) panics here rather than in the engine.
pub fn touch(envelope: &Envelope<Msg>) {
    let _ = envelope.key();
    let _ = envelope.payload.name();
    if let Msg::Packet(p) = &envelope.payload {
        let nodes = p.route.nodes();
        assert!(
            nodes.len() >= 2,
            "a route has a sender and a receiver: {nodes:?}"
        );
        assert_eq!(p.route.hops(), nodes.len() - 1);
        assert_eq!(p.src().0, nodes[0]);
        assert_eq!(p.dst().0, nodes[nodes.len() - 1]);
        let _ = p.next_node();
        let _ = p.body.name();
    }
}
