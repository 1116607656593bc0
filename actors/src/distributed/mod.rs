//! Distributed parallel applications under interference (ASPLOS'16, Han et
//! al., `003_9b9f1a6a49fd0128.txt`): the ground truth ([`truth`]: bubble
//! scores, propagation curves, heterogeneity mapping policies), profiling
//! ([`profile`]: Algorithms 1 and 2, random baselines, the scheduler's model)
//! and the run-time side on servers ([`runtime`]).

pub mod profile;
pub mod truth;
