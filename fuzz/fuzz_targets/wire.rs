//! The wire decoder: bytes from a peer partition, decoded as a batch of
//! `Envelope<Msg>` (and as a single envelope) with bincode's standard
//! configuration and a size limit. Beyond "no panic", checks that:
//! - every decoded envelope can be used (its route is well formed);
//! - an accepted frame re-encodes to bytes that decode to the same batch,
//!   and encoding is then a fixed point (one canonical form per batch);
//! - refused input is refused with an error that renders.
//!
//! The same bytes also go through the QUIC transport's own decoder
//! (`dcemu::cluster::wire::decode` of a `PeerFrame<Msg>`, what a node reads
//! from a peer), whose envelopes must be usable too.
#![no_main]

use dcemu::cluster::wire::{PeerFrame, decode as transport_decode};
use dcemu_actors::model::Msg;
use dcemu_fuzz::{WireError, decode_batch, decode_envelope, encode_batch, touch, wire_config};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match decode_batch(data) {
        Ok(batch) => {
            batch.iter().for_each(touch);
            let again = encode_batch(&batch);
            let decoded = decode_batch(&again)
                .unwrap_or_else(|e| panic!("a re-encoded batch must decode: {e:?}"));
            assert_eq!(decoded, batch, "re-encoding changed the batch");
            assert_eq!(encode_batch(&decoded), again, "encoding is not canonical");
        }
        Err(WireError::Decode(e)) => assert!(!e.to_string().is_empty()),
        Err(WireError::Trailing { used, len }) => assert!(used < len),
    }
    match transport_decode::<PeerFrame<Msg>>(data) {
        Ok(PeerFrame::Batch { envelopes, .. }) => envelopes.iter().for_each(touch),
        Ok(
            PeerFrame::Hello { .. }
            | PeerFrame::Local { .. }
            | PeerFrame::LocalAnswer { .. }
            | PeerFrame::End { .. },
        ) => {}
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    if let Ok(envelope) = decode_envelope(data) {
        touch(&envelope);
        let again = bincode::serde::encode_to_vec(&envelope, wire_config())
            .unwrap_or_else(|e| panic!("a decoded envelope must encode again: {e}"));
        let decoded = decode_envelope(&again)
            .unwrap_or_else(|e| panic!("a re-encoded envelope must decode: {e:?}"));
        assert_eq!(decoded, envelope, "re-encoding changed the envelope");
    }
});
