//! Scheduling policies of your own, in your own crate, run by dcemu
//! (docs/scheduler.md, "Adding a policy", from your own crate): one per
//! stage that takes them, each registered under a name that a scenario
//! then gives like a built-in one.
//!
//! - `p2c-memory` (`scheduler.placement`, [`p2c_memory`]): power of two
//!   choices with memory awareness; `[scheduler.params]`.
//! - `token-bucket` (`scheduler.admission`, [`token_bucket`]): tasks in
//!   arrival order, at most `burst` at once and `rate` per second after
//!   that; `[scheduler.admission_params]`.
//! - `least-work-lost` (`scheduler.slots`, [`least_work_lost`]): a task
//!   that finds no free slot evicts, among every running task at least
//!   `min_gap` classes below it, the one that started last;
//!   `[scheduler.slots_params]`.
//!
//! Every process that builds the model calls [`register_all`] before it
//! loads a scenario (this crate's binary `custom-dcemu` does).

pub mod least_work_lost;
pub mod p2c_memory;
pub mod token_bucket;

use dcemu_actors::scheduler::registered::RegisterError;
use dcemu_actors::scheduler::{admission, placement, preemption};

pub use p2c_memory::{NAME, Policy, PowerOfTwoMemory};

/// Registers `p2c-memory` with dcemu for this process (once: a second call
/// is an error, [`RegisterError::Taken`]).
pub fn register_policy() -> Result<(), RegisterError> {
    placement::register(NAME, Policy)
}

/// Registers the three policies of this crate for this process (once).
pub fn register_all() -> Result<(), RegisterError> {
    register_policy()?;
    admission::register(token_bucket::NAME, token_bucket::Policy)?;
    preemption::register(least_work_lost::NAME, least_work_lost::Policy)
}

/// A parameter of `params` that must be an integer within `range`, or
/// `default` when it is not given.
pub(crate) fn integer(
    params: &toml::Table,
    key: &str,
    range: std::ops::RangeInclusive<i64>,
    default: i64,
) -> Result<i64, String> {
    match params.get(key) {
        None => Ok(default),
        Some(toml::Value::Integer(n)) if range.contains(n) => Ok(*n),
        Some(v) => Err(format!(
            "must be an integer from {} to {}, found {v}",
            range.start(),
            range.end()
        )),
    }
}

/// The problems of the keys of `params` that `policy` does not take.
pub(crate) fn unknown_keys(
    policy: &str,
    params: &toml::Table,
    takes: &[&str],
) -> Vec<(String, String)> {
    params
        .keys()
        .filter(|k| !takes.contains(&k.as_str()))
        .map(|k| {
            (
                k.clone(),
                format!(
                    "{policy} has no parameter {k:?} (it takes: {})",
                    takes.join(", ")
                ),
            )
        })
        .collect()
}
