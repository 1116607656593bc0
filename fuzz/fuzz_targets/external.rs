//! The external scheduler's response decoder (docs/external-scheduler.md):
//! bytes a scheduler program writes to its stdout, split into lines as
//! dcemu reads them (`dcemu::external::read_line`: bounded, UTF-8), each
//! decoded as a response and as a `hello`. Beyond "no panic", checks that:
//! - an accepted response encodes (`encode_response`, as a program writes
//!   it) to a line that decodes to the same response, its `evict` list
//!   (protocol v2) and `power` and `migrate` orders (v3) included, and never evicts
//!   with a `wait`;
//! - a refused line gets a non-empty message, and a refused response one
//!   that says what is wrong (malformed, a decision, a server);
//! - the same for the answer to an `idle` request (v3,
//!   `decode_idle_response`): accepted, it round-trips through
//!   `encode_idle_response`; refused, it is malformed, holds a bad order,
//!   or places or evicts where only orders may be.
#![no_main]

use std::io::BufReader;

use dcemu::external::read_line;
use dcemu_actors::external::{
    Decision, decode_hello, decode_idle_response, decode_response, encode_idle_response,
    encode_response,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = BufReader::new(data);
    for _ in 0..64 {
        let line = match read_line(&mut reader) {
            Ok(line) => line,
            Err(e) => {
                assert!(!e.is_empty());
                if e.contains("closed") {
                    break;
                }
                continue;
            }
        };
        assert!(!line.contains('\n'), "a line never holds its newline");
        match decode_response(&line) {
            Ok(r) => {
                assert!(
                    r.evict.is_empty() || r.decision != Decision::Wait,
                    "evictions go with a place"
                );
                let again = encode_response(&r);
                assert_eq!(decode_response(&again), Ok(r), "round trip of {again}");
            }
            Err(e) => assert!(
                e.starts_with("malformed response")
                    || e.contains("decision")
                    || e.contains("server"),
                "{e}"
            ),
        }
        match decode_idle_response(&line) {
            Ok(r) => {
                let again = encode_idle_response(&r);
                assert_eq!(decode_idle_response(&again), Ok(r), "round trip of {again}");
            }
            Err(e) => assert!(
                e.starts_with("malformed response")
                    || e.contains("no task to place or evict")
                    || e.contains("power order"),
                "{e}"
            ),
        }
        if let Err(e) = decode_hello(&line) {
            assert!(!e.is_empty());
        }
    }
});
