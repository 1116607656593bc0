//! Model actors of dcemu and the sans-IO contract they obey ([`kernel`]).
//!
//! `kernel` defines what an actor is; [`model`] wires today's actors (workload
//! tenants, the scheduler with its placement stage, servers) into one
//! [`model::Node`] type that the engine drives. Configuration types for the
//! scenario sections these actors read live in [`config`].

pub mod config;
pub mod kernel;
pub mod model;
pub mod sampling;
pub mod scheduler;
pub mod server;
pub mod tenant;
