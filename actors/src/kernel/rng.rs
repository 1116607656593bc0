use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

/// The random stream of one actor.
pub type ActorRng = ChaCha8Rng;

/// The actor's own ChaCha stream: keyed by the scenario seed, with the stream
/// number derived from the actor's name.
///
/// Deriving the stream from the name rather than the numeric id means adding
/// a tenant to a scenario does not reshuffle every server's randomness, so two
/// scenario variants share common random numbers wherever their actors agree.
pub fn actor_rng(seed: u64, name: &str) -> ActorRng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let hash = Sha256::digest(name.as_bytes());
    let mut stream = [0u8; 8];
    stream.copy_from_slice(&hash[..8]);
    rng.set_stream(u64::from_le_bytes(stream));
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn streams_depend_on_seed_and_name_only() {
        let a = actor_rng(7, "server-0001").next_u64();
        assert_eq!(a, actor_rng(7, "server-0001").next_u64());
        assert_ne!(a, actor_rng(8, "server-0001").next_u64());
        assert_ne!(a, actor_rng(7, "server-0002").next_u64());
    }

    #[test]
    fn stream_values_are_pinned() {
        // Changing how streams are derived changes every run's results; this
        // pins the derivation so such a change is deliberate.
        let mut rng = actor_rng(1, "scheduler");
        let first = rng.next_u64();
        let mut again = actor_rng(1, "scheduler");
        assert_eq!(first, again.next_u64());
        assert_eq!(first, PINNED_SCHEDULER_SEED1);
    }

    const PINNED_SCHEDULER_SEED1: u64 = 8_406_235_930_324_048_710;
}
