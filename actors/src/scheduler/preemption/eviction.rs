//! `scheduler.eviction`: which of the candidate victims a priority eviction
//! picks (thesis §6.2.3.3, Statement 7.3), for every slot policy.

use rand::RngCore;

use crate::config::EvictionPolicy;
use crate::sampling::index;

/// The victim `policy` picks among `candidates`, least recently started
/// first: `mrs` the most recently started (the least work lost), `lrs` the
/// least recently started, `rnd` one uniformly at random (one draw, among
/// the `count()` candidates).
pub fn pick<T>(
    policy: EvictionPolicy,
    mut candidates: impl DoubleEndedIterator<Item = T>,
    count: impl FnOnce() -> u32,
    rng: &mut impl RngCore,
) -> Option<T> {
    match policy {
        EvictionPolicy::Mrs => candidates.next_back(),
        EvictionPolicy::Lrs => candidates.next(),
        EvictionPolicy::Rnd => candidates.nth(index(rng, count()) as usize),
    }
}
