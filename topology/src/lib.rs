//! The physical datacenter for dcemu: units, the network and its routes, and
//! the power models of servers and switches.
//!
//! This crate sits at the bottom of the workspace (`topology` ← `actors` ←
//! `emulator`) and knows nothing about actors or the engine: it answers
//! questions such as "which links does a message from A to B cross, and how
//! long does it take on an empty network" and "how much power does this
//! server draw at this utilisation".

pub mod bandwidth;
pub mod network;
pub mod power;
pub mod units;

pub use bandwidth::Bandwidth;
pub use network::{
    Attach, Ecmp, HostWiring, Network, NetworkError, PathChooser, Port, Refused, Reservations,
    Route, SwitchInfo, Tier, TopologyConfig, TopologyKind, Wiring,
};
pub use power::{EnergyMeter, PowerConfig, PowerPolicy, ServerPower, SwitchPower};
pub use units::{Duration, DurationError, SimTime, format_sim_time};
