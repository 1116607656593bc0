//! Model actors of dcemu and the sans-IO contract they obey ([`kernel`]).
//!
//! `kernel` defines what an actor is; [`model`] wires today's actors (workload
//! tenants, the scheduler with its placement stage, servers, switches) into
//! one [`model::Node`] type that the engine drives. Messages travel as
//! [`net::Packet`]s hop by hop through the switches of the network. Configuration types for the
//! scenario sections these actors read live in [`config`].

mod accounting;
pub mod clustering;
pub mod config;
pub mod device;
pub mod disk;
pub mod distributed;
pub mod external;
pub mod flow_sizes;
pub mod google;
pub mod ground_truth;
pub mod hpc_jobs;
pub mod kernel;
pub mod model;
pub mod namenode;
pub mod net;
pub mod primary;
pub mod profiling;
pub mod sampling;
pub mod scheduler;
pub mod server;
pub mod sharing;
pub mod slot_plan;
pub mod slot_share;
pub mod storage_placement;
pub mod switch;
pub mod task;
pub mod tenant;
pub mod trace;
pub mod trace_formats;
pub mod trace_jobs;
pub mod world;
