//! `p2c-memory`: power-of-two-choices placement with memory awareness, a
//! placement policy of this crate's that dcemu runs by name
//! (docs/scheduler.md, "Adding a policy", from your own crate).
//!
//! For each task it samples `samples` servers (2 by default: Mitzenmacher's
//! "power of two choices", 2001) uniformly, with replacement, among those
//! with the task's slots and memory free, and takes the one with the most
//! memory free (then the most free slots, then the lowest index). It draws
//! only from the scheduler's seeded stream (`place`'s `rng`), so its runs
//! keep dcemu's determinism: the same digest on 1 or 3 partitions, in one
//! process or over a coordinator and nodes.
//!
//! `[scheduler.params]` takes `samples`, an integer from 1 to 16; any other
//! key is refused, at its line, like a built-in field.

use dcemu_actors::config::Problem;
use dcemu_actors::kernel::{ActorRng, Metrics};
use dcemu_actors::sampling::index;
use dcemu_actors::scheduler::placement::{PlacementPolicy, PolicyContext};
use dcemu_actors::scheduler::{Choice, ClusterView, Placement, Request};

/// The name scenarios give it: `scheduler.placement = "p2c-memory"`.
pub const NAME: &str = "p2c-memory";

/// Servers sampled per task when `[scheduler.params]` does not say.
pub const DEFAULT_SAMPLES: u32 = 2;

/// Most servers sampled per task.
pub const MAX_SAMPLES: i64 = 16;

/// The policy for one run.
pub struct PowerOfTwoMemory {
    samples: u32,
    /// Tasks it placed, for `p2c_decisions` in metrics.json: a run's
    /// metrics show that this policy decided.
    decisions: u64,
}

impl PowerOfTwoMemory {
    pub fn new(samples: u32) -> Self {
        PowerOfTwoMemory {
            samples: samples.max(1),
            decisions: 0,
        }
    }
}

impl Placement for PowerOfTwoMemory {
    fn name(&self) -> &str {
        NAME
    }

    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        let fits: Vec<u32> = req.fitting(cluster, true).collect();
        if fits.is_empty() {
            return None;
        }
        let servers = cluster.servers();
        let key = |i: u32| {
            let s = &servers[i as usize];
            (s.memory_free_mb, s.free, std::cmp::Reverse(i))
        };
        let mut best: Option<u32> = None;
        for _ in 0..self.samples {
            let i = fits[index(rng, fits.len() as u32) as usize];
            if best.is_none_or(|b| key(i) > key(b)) {
                best = Some(i);
            }
        }
        self.decisions += 1;
        best.map(Choice::clean)
    }

    fn finish(&self, out: &mut Metrics) {
        out.add("p2c_decisions", self.decisions);
    }
}

/// What dcemu's registry builds the policy from.
pub struct Policy;

impl Policy {
    /// `samples` from `params`, when it is valid.
    fn samples(params: &toml::Table) -> Result<u32, String> {
        match params.get("samples") {
            None => Ok(DEFAULT_SAMPLES),
            Some(toml::Value::Integer(n)) if (1..=MAX_SAMPLES).contains(n) => Ok(*n as u32),
            Some(v) => Err(format!(
                "must be an integer from 1 to {MAX_SAMPLES}, found {v}"
            )),
        }
    }
}

impl PlacementPolicy for Policy {
    fn check(&self, params: &toml::Table) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Err(why) = Self::samples(params) {
            problems.push(("samples".to_string(), why));
        }
        for key in params.keys().filter(|k| *k != "samples") {
            problems.push((
                key.clone(),
                format!("{NAME} has no parameter {key:?} (it takes: samples)"),
            ));
        }
        problems
    }

    fn build(&self, ctx: &PolicyContext<'_>) -> Box<dyn Placement> {
        Box::new(PowerOfTwoMemory::new(
            Self::samples(ctx.params()).unwrap_or(DEFAULT_SAMPLES),
        ))
    }
}
