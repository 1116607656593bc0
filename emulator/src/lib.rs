//! dcemu's engine and command-line front end.
//!
//! Data flows one way: a [`scenario`] is loaded and validated, the model is
//! built from it, the [`engine`] drives the actors through virtual time in
//! windows, and [`results`] writes what came out (with its digest).

pub mod engine;
