//! The scheduler actor: receives submissions, server reports and releases,
//! and decides where each task runs through a pipeline of stages chosen in
//! the scenario (MODEL.md §3, docs/scheduler.md). Each stage is a folder
//! with its trait in `mod.rs`, its registry in `registry.rs` and one file
//! per policy:
//!
//! 1. **classification** (`classification/`, Paragon §2): a new application
//!    is profiled (`profile_time`, part of its response time) and
//!    classified by collaborative filtering, when a stage needs its profile;
//! 2. **admission** (`admission/`): `fifo`, `arq` or `easy-backfill`,
//!    which task to place next and on which servers (Paragon §4);
//! 3. **placement** (`placement/`): `random`, `least-loaded`, `best-fit`,
//!    `paragon`, `paragon-nh`, `paragon-ni`, and the YARN placements on
//!    harvested servers `yarn-stock`, `yarn-pt`, `yarn-h`;
//! 4. **slots** (`preemption/`): `none` (a task takes a slot per thread, no
//!    preemption), or the thesis's slot stages `priority`, `wasp` and
//!    `hybrid`, which today still replace admission and placement with one
//!    priority queue scheduled every time slot, with priority evictions
//!    (thesis §6.2.3, §8.1.2, §9.2); the energy-aware placements
//!    (`energy/`) queue by themselves under `fifo` without slots, and are
//!    the placement behind ARQ or a slot stage otherwise; `annealing`
//!    (`annealing.rs`) queues distributed runs by itself beside the
//!    pipeline's single tasks without slots, and chooses the hosts of the
//!    slot stage's gang starts under one (a batch of one, ASPLOS'16 §5.1,
//!    thesis §6.2.3.2); under any other placement `gang.rs`
//!    queues a run whole for the placement to place unit by unit (a slot
//!    stage starts it whole in free slots, `preemption/gang.rs`; an
//!    energy stage that queues by itself, `energy_gang.rs`).
//!    docs/scheduler.md lists what composes and what is still refused.
//!
//! Admission, placement and the slot stage also take policies a crate of
//! yours registers by name (`registered.rs`, each stage's `custom.rs`).
//!
//! After placement, reactive phase detection (Paragon §3.4) watches the
//! progress servers report, reclassifies a lagging application in vivo and
//! migrates it when a better server pays back the migration.
//!
//! The actor itself is `actor.rs` (its state and message handling), its
//! passes over the queues `passes.rs`, what every stage places, dispatches
//! and releases through `state.rs` (`Core`), the placement stage's
//! answer to the slot stage and ARQ `placer.rs`, phase detection and
//! migration `migration.rs`, and its log records `logs.rs`.
//!
//! The scheduler sees only what a real one could: server configurations,
//! its own dispatches, the servers' releases and reports, and profiling
//! measurements (`crate::profiling`). It never reads server state or the
//! ground truth directly.

pub mod admission;
pub mod annealing;
pub mod classification;
mod cluster_view;
pub mod energy;
mod energy_gang;
mod flows;
pub mod gang;
mod outbox;
pub mod placement;
pub mod preemption;
pub mod registered;
mod run_ledger;
mod unplaceable;
pub mod wasc;

pub use cluster_view::{ClusterView, ServerSlots, ServerSpec};
pub use flows::FlowTable;
pub use placement::{
    Awareness, Choice, LeastLoaded, ParagonPlacement, Placement, RandomPlacement, Request,
    VictimOption,
};

mod actor;
mod logs;
mod migration;
mod passes;
mod placer;
mod state;

pub use actor::Scheduler;
pub use state::{MAX_ISOLATION_MOVES, MAX_RECLASSIFICATIONS};
