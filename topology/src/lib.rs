//! The physical datacenter for dcemu: units of time, and the network that sets
//! how long a message between two actors takes.
//!
//! This crate sits at the bottom of the workspace (`topology` ← `actors` ←
//! `emulator`) and knows nothing about actors or the engine. Today it models a
//! flat network (every actor one link away from every other); the 3-tier
//! builder with switches, routing and power lands here next.

pub mod network;
pub mod units;

pub use network::{Network, TopologyConfig, TopologyKind};
pub use units::{Duration, DurationError, SimTime, format_sim_time};
