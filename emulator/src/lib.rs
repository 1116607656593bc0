//! dcemu's engine and command-line front end.
//!
//! Data flows one way: a [`scenario`] is loaded and validated, the model is
//! built from it, the [`engine`] drives the actors through virtual time in
//! windows, [`metrics`] summarises what they reported, and [`results`] writes
//! the results directory with its digest. [`run::execute`] strings these
//! together; the `dcemu` binary adds flags, progress and a summary.

pub mod bench;
pub mod calibrate;
pub mod cluster;
pub mod commands;
pub mod engine;
pub mod external;
pub mod heap;
pub mod logs;
pub mod metrics;
pub mod progress;
pub mod replay;
pub mod report;
pub mod reproduce;
pub mod results;
pub mod run;
pub mod scenario;
pub mod suggest;
pub mod sweep;
pub mod toml_file;
pub mod whole;
