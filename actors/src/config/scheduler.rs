//! `[scheduler]`: the pipeline's stages (admission, slots, placement), the
//! classification engine, the external program and distributed placement
//! (docs/scheduler.md).

use dcemu_topology::Duration;
use serde::{Deserialize, Serialize};

use super::Problem;

/// `[scheduler]`: the scheduler's pipeline stages (admission, placement,
/// slots) and what its classification engine does (Paragon §2–§4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    /// Admission stage: `fifo` (one queue, head of line), `arq` (Paragon
    /// §4), `easy-backfill`, or the name of a policy a crate registered
    /// (`scheduler::admission::register`).
    #[serde(default)]
    pub admission: AdmissionKind,
    #[serde(default)]
    pub placement: PlacementKind,
    /// Slot and preemption stage: `none`, the thesis's `priority`, `wasp`
    /// and `hybrid`, or the name of a policy a crate registered
    /// (`scheduler::preemption::register`).
    #[serde(default)]
    pub slots: SlotPolicy,
    /// How long a task killed for a primary tenant (or evicted) waits before
    /// it is placed again (a node manager's heartbeat, harvesting §5). Default 1s.
    #[serde(default = "default_resubmit")]
    pub resubmit_delay: Duration,
    /// Memory eviction policy (thesis §6.2.3.4): `lsf`, `lpf`, or `none`
    /// (memory is not enforced). Default none.
    #[serde(default)]
    pub memory_eviction: MemoryEviction,
    /// Evicted tasks resume where they stopped (true) or start over (false:
    /// their work so far is wasted). Default false.
    #[serde(default)]
    pub resume: bool,
    /// How often each server reports its state to the scheduler; "0s" (the
    /// default) turns reports off. Reports keep a run going until its end,
    /// so they are on only where a policy reads them.
    #[serde(default = "default_report")]
    pub report_interval: Duration,
    /// Paragon §3.2 greedy search or §3.3 hash-sampled statistical selection.
    #[serde(default)]
    pub selection: SelectionKind,
    /// Servers the statistical selection samples (§3.3, Fig. 5: 16–128).
    #[serde(default = "default_samples")]
    pub samples: u32,
    /// Bound on the greedy search's server examinations (§3.2 timeout).
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// Length of the profiling runs of a new application (§2.4: about a
    /// minute on two configurations and against two microbenchmarks, in
    /// parallel). Part of its response time.
    #[serde(default = "default_profile_time")]
    pub profile_time: Duration,
    /// The profiling and classification overhead as a share of the
    /// application's declared ideal time instead of `profile_time`
    /// (Paragon §6.1, Fig. 12: training 1.2 % and classification 0.09 % of
    /// an application's run). Issue 37 decides the conflict between §5's
    /// 1-6 minute applications and §3's one-minute profiling this way, so
    /// that ARQ's slack `1.05·CT − P` (§4.2) stays positive. Unset (the
    /// default): `profile_time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_share: Option<f64>,
    /// Relative noise of a profiling measurement: the standard deviation of
    /// ln IPS, and of a sensitivity score in units of 100 points.
    #[serde(default = "default_profile_noise")]
    pub profile_noise: f64,
    /// Applications profiled offline on every configuration and source
    /// (§2.2: 20 for the 40-server cluster, 30 for 1,000 servers).
    #[serde(default = "default_training_apps")]
    pub training_apps: u32,
    /// Applications declaring an ideal time below this skip profiling and go
    /// to a random server among the least loaded, least interfering (§3.5).
    /// "0s" (default): none does.
    #[serde(default = "default_zero")]
    pub short_job: Duration,
    /// Latent dimensions of the collaborative filtering (§2.1).
    #[serde(default = "default_cf_rank")]
    pub cf_rank: u32,
    /// SGD learning rate η (§2.1).
    #[serde(default = "default_cf_learning_rate")]
    pub cf_learning_rate: f64,
    /// SGD regularisation λ (§2.1).
    #[serde(default = "default_cf_regularization")]
    pub cf_regularization: f64,
    /// Most SGD epochs of one reconstruction.
    #[serde(default = "default_cf_max_epochs")]
    pub cf_max_epochs: u32,
    /// SGD stops when an epoch improves the L2 error by less than this share.
    #[serde(default = "default_cf_tolerance")]
    pub cf_tolerance: f64,
    /// Every this many newly classified applications the whole utility
    /// matrix is reconstructed again (in between, new rows are folded in).
    #[serde(default = "default_cf_retrain_every")]
    pub cf_retrain_every: u32,
    /// Reactive phase detection (§3.4): an application progressing at less
    /// than `1 − reclassify_below` of its expected rate is reclassified in
    /// vivo and possibly migrated. 0 turns it off. Needs `report_interval`.
    #[serde(default = "default_reclassify_below")]
    pub reclassify_below: f64,
    /// How long an in-vivo reclassification takes (§3.4).
    #[serde(default = "default_reclassify_time")]
    pub reclassify_time: Duration,
    /// How long a migration stops an application (§3.4: live migration).
    #[serde(default = "default_migration_time")]
    pub migration_time: Duration,
    /// How the scheduler sums co-runners' caused scores on a server:
    /// `server` weighs them by what the server's hardware passes on (shared
    /// resources grow with √cores; per-core ones are private while every
    /// thread has a core), `sum` is Paragon's plain sum (§3.2).
    #[serde(default)]
    pub contention: Contention,
    /// ARQ: number of classes, queues and server pools (§4.1: ten).
    #[serde(default = "default_arq_classes")]
    pub arq_classes: u32,
    /// ARQ: an application still in its own queue takes only a server
    /// where no interference constraint is violated and its predicted speed
    /// is at least `arq_speed` × 0.95 (0: interference alone decides, the
    /// resource quality of ARQ §3.1; 1: the configuration must meet QoS too).
    #[serde(default)]
    pub arq_speed: f64,
    /// ARQ: order within a queue, `fifo`, `sjf` or `priority` (§4.4).
    #[serde(default)]
    pub arq_order: ArqOrder,
    /// ARQ: how long an application waits for its own pool (§4.1-4.2).
    #[serde(default, skip_serializing_if = "ArqHold::is_default")]
    pub arq_hold: ArqHold,
    /// How a server's CPU is shared among its running tasks: eq. 6.2's
    /// equal core shares (default), or GEMS's §4.2.5 model, where each task
    /// gets its CPU requirement plus an equal share of what the
    /// requirements leave free.
    #[serde(default, skip_serializing_if = "CpuSharing::is_default")]
    pub cpu_sharing: CpuSharing,
    /// Slot stages: which running task of the lowest priority a priority
    /// eviction picks (thesis §6.2.3.3).
    #[serde(default)]
    pub eviction: EvictionPolicy,
    /// Slot stages: a task evicted more than this many times is dropped
    /// (thesis §7.3.4, `mrs5`); 0 never drops.
    #[serde(default)]
    pub eviction_threshold: u32,
    /// HYBRID: size of the pool of sticky slots (thesis §9.2.1).
    #[serde(default)]
    pub sticky_slots: u32,
    /// HYBRID: which queued tasks phase I may put on a sticky slot
    /// (thesis §9.2.1, read two ways; [`StickyPhase`]). Left out of the
    /// scenario as run when it is the default, so that runs recorded
    /// before the setting existed keep their digests.
    #[serde(default, skip_serializing_if = "StickyPhase::is_default")]
    pub sticky_phase: StickyPhase,
    /// Slot stages: the servers' slot counts (thesis Table 8.1).
    #[serde(default)]
    pub slot_config: SlotConfig,
    /// Slot stages: the scheduler's time slot (thesis §6.2.3.2: 1 s).
    #[serde(default = "default_slot_interval")]
    pub slot_interval: Duration,
    /// Lowest priority class of the production group (thesis §5.1.1:
    /// 9–11 production, 2–8 middle, 0–1 gratis).
    #[serde(default = "default_production_priority")]
    pub production_priority: u8,
    /// Lowest priority class of the middle group.
    #[serde(default = "default_middle_priority")]
    pub middle_priority: u8,
    /// BEPS: the dimension its queue is sorted by (thesis §3.3.1).
    #[serde(default)]
    pub sort_by: SortKey,
    /// YARN-H: how often the clustering service re-clusters the primary
    /// tenants (harvesting §4.1 does it daily; default 1h).
    #[serde(default = "default_cluster_every")]
    pub cluster_every: Duration,
    /// YARN-H: the utilisation history the clustering looks at (default
    /// 24h); a tenant keeps its configured pattern, average and peak until
    /// a whole window of it has been observed.
    #[serde(default = "default_cluster_window")]
    pub cluster_window: Duration,
    /// YARN-H: most k-means classes within each pattern (default 4).
    #[serde(default = "default_cluster_classes")]
    pub cluster_classes: u32,
    /// YARN-H: weights of the first, second and third ranked pattern for a
    /// job's length type (Algorithm 1's W; default 3, 2, 1).
    #[serde(default = "default_rank_weights")]
    pub rank_weights: [f64; 3],
    /// `annealing` (ASPLOS'16 §4–§5): its goal, the model it predicts with,
    /// the profiling algorithm and its noise, the share of a production
    /// run one profiling run lasts, and the annealing steps
    /// (`scenarios/README.md`).
    #[serde(default)]
    pub annealing_goal: AnnealingGoal,
    #[serde(default)]
    pub interference_model: InterferenceModel,
    #[serde(default)]
    pub dist_profiling: Algorithm,
    #[serde(default = "default_iterations")]
    pub annealing_iterations: u32,
    /// `annealing`: independent walks per placement pass, each of
    /// `annealing_iterations` swaps from its own random start; the best
    /// end is kept (ASPLOS'16 §5.1 gives no schedule; restarts escape the
    /// local minima one walk can end in).
    #[serde(
        default = "default_restarts",
        skip_serializing_if = "is_default_restarts"
    )]
    pub annealing_restarts: u32,
    #[serde(default = "default_dist_noise")]
    pub dist_profile_noise: f64,
    #[serde(default = "default_dist_scale")]
    pub dist_profile_scale: f64,
    /// `[scheduler.external]`: a program outside dcemu that takes the
    /// decisions of the stages it names (docs/external-scheduler.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalConfig>,
    /// `[scheduler.params]`: the parameters of a placement policy a crate
    /// registered under the name `placement` gives (docs/scheduler.md,
    /// "Adding a policy"); the policy checks them. Empty for the built-in
    /// policies, and then left out of the scenario as run.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub params: toml::Table,
    /// `[scheduler.admission_params]`: the parameters of a registered
    /// admission policy (`admission`). Each stage has a table of its own,
    /// so that a registered admission, placement and slot policy in one
    /// scenario never read (or refuse) each other's keys.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub admission_params: toml::Table,
    /// `[scheduler.slots_params]`: the parameters of a registered slot
    /// policy (`slots`).
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub slots_params: toml::Table,
}

/// `[scheduler.external]`: the scheduler program dcemu starts and asks, over
/// protocols v1 to v3 (JSON Lines on its stdin and stdout,
/// docs/external-scheduler.md), for the decisions of `stages`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalConfig {
    /// The program and its arguments, run from the scenario file's
    /// directory, e.g. `["python3", "my_scheduler.py"]`.
    pub command: Vec<String>,
    /// The stages it decides: `placement` (the default), `preemption`
    /// under a slot stage (with `placement`, or alone beside a built-in
    /// `placement`), and with `placement` `power` (servers' sleep and
    /// wake-up) and `migration`.
    #[serde(default = "default_external_stages")]
    pub stages: Vec<ExternalStage>,
    /// Virtual time a decision takes: its dispatch leaves the scheduler this
    /// long after the request (decisions leave in order). Default 0s.
    #[serde(default = "default_zero")]
    pub decision_latency: Duration,
    /// Virtual time a decision takes on top of `decision_latency`, per
    /// server the request lists. Default 0s.
    #[serde(default = "default_zero")]
    pub latency_per_server: Duration,
    /// Wall-clock time the program may take to answer one message before
    /// the run stops with an error. Default 30s.
    #[serde(default = "default_external_timeout")]
    pub timeout: Duration,
}

/// A stage an external program may decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExternalStage {
    /// Where each task runs (the placement stage's `place`).
    Placement,
    /// Which running task a task that found no free slot evicts, among
    /// those the slot stage admits (protocol v2's `preempt`), under a slot
    /// stage; with `placement`, or alone beside a built-in placement.
    Preemption,
    /// The servers' power: the program puts idle servers to sleep and
    /// wakes them (protocol v3's `power` orders); with `placement`, under
    /// `power.policy = "idle"` (the program is then the only one that
    /// sleeps servers).
    Power,
    /// Migrations: the program moves running tasks to other servers with
    /// their progress (protocol v3's `migrate` orders; Paragon §3.4's
    /// mechanism and `migration_time`); with `placement`, with or without
    /// a slot stage (under one, the stage holds the target's slot from the
    /// order on).
    Migration,
    /// The network: the program chooses the path each task's flow
    /// reserves from a core switch down to its server (thesis §4.2.2,
    /// GEMS's joint choice of server and path, §4.3), among every
    /// shortest path (protocol v3's `paths` and `path`); with `placement`,
    /// on a three-tier topology.
    Network,
}

impl ExternalStage {
    /// Its name in `stages` and in the `hello`.
    pub fn name(self) -> &'static str {
        match self {
            ExternalStage::Placement => "placement",
            ExternalStage::Preemption => "preemption",
            ExternalStage::Power => "power",
            ExternalStage::Migration => "migration",
            ExternalStage::Network => "network",
        }
    }
}

fn default_external_stages() -> Vec<ExternalStage> {
    vec![ExternalStage::Placement]
}

fn default_external_timeout() -> Duration {
    Duration::from_secs(30)
}

impl ExternalConfig {
    /// The virtual time a decision over a request listing `servers`
    /// servers takes, in ns.
    pub fn latency_ns(&self, servers: usize) -> u64 {
        let per = self.latency_per_server.as_nanos();
        self.decision_latency
            .as_nanos()
            .saturating_add(per.saturating_mul(servers as u64))
    }

    /// The command as one line, for error messages.
    pub fn shown(&self) -> String {
        self.command.join(" ")
    }
}

fn default_cluster_every() -> Duration {
    Duration::from_secs(3600)
}

fn default_cluster_window() -> Duration {
    Duration::from_secs(24 * 3600)
}

fn default_cluster_classes() -> u32 {
    4
}

fn default_rank_weights() -> [f64; 3] {
    [3.0, 2.0, 1.0]
}

fn default_slot_interval() -> Duration {
    Duration::from_nanos(1_000_000_000)
}

fn default_production_priority() -> u8 {
    9
}

fn default_middle_priority() -> u8 {
    2
}

fn default_report() -> Duration {
    Duration::ZERO
}

fn default_zero() -> Duration {
    Duration::ZERO
}

fn default_samples() -> u32 {
    64
}

fn default_max_steps() -> u32 {
    20_000
}

fn default_profile_time() -> Duration {
    Duration::from_nanos(60_000_000_000)
}

fn default_profile_noise() -> f64 {
    0.03
}

fn default_training_apps() -> u32 {
    20
}

fn default_cf_rank() -> u32 {
    5
}

fn default_cf_learning_rate() -> f64 {
    CfDefaults::LEARNING_RATE
}

fn default_cf_regularization() -> f64 {
    CfDefaults::REGULARIZATION
}

fn default_cf_max_epochs() -> u32 {
    CfDefaults::MAX_EPOCHS
}

fn default_cf_tolerance() -> f64 {
    CfDefaults::TOLERANCE
}

fn default_cf_retrain_every() -> u32 {
    200
}

fn default_reclassify_below() -> f64 {
    0.10
}

fn default_reclassify_time() -> Duration {
    Duration::from_nanos(10_000_000_000)
}

fn default_migration_time() -> Duration {
    Duration::from_nanos(10_000_000_000)
}

fn default_arq_classes() -> u32 {
    10
}

/// Defaults of the SGD reconstruction.
pub struct CfDefaults;

impl CfDefaults {
    pub const LEARNING_RATE: f64 = 0.02;
    pub const REGULARIZATION: f64 = 0.02;
    pub const MAX_EPOCHS: u32 = 200;
    pub const TOLERANCE: f64 = 1e-4;
}

/// `scheduler.memory_eviction` (thesis §6.2.3.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryEviction {
    /// Memory is not enforced: tasks always get what they use.
    #[default]
    None,
    /// Last Started First: evict the last started task whose memory is not
    /// yet satisfied, whatever its priority.
    Lsf,
    /// Lowest Priority First: evict the lowest priority tasks, most recently
    /// started first, until the task at its checkpoint has its memory.
    Lpf,
}

fn default_resubmit() -> Duration {
    Duration::from_nanos(1_000_000_000)
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            admission: AdmissionKind::default(),
            placement: PlacementKind::default(),
            slots: SlotPolicy::default(),
            resubmit_delay: default_resubmit(),
            memory_eviction: MemoryEviction::default(),
            resume: false,
            report_interval: default_report(),
            selection: SelectionKind::default(),
            samples: default_samples(),
            max_steps: default_max_steps(),
            profile_time: default_profile_time(),
            profile_share: None,
            profile_noise: default_profile_noise(),
            training_apps: default_training_apps(),
            short_job: default_zero(),
            cf_rank: default_cf_rank(),
            cf_learning_rate: default_cf_learning_rate(),
            cf_regularization: default_cf_regularization(),
            cf_max_epochs: default_cf_max_epochs(),
            cf_tolerance: default_cf_tolerance(),
            cf_retrain_every: default_cf_retrain_every(),
            reclassify_below: default_reclassify_below(),
            reclassify_time: default_reclassify_time(),
            migration_time: default_migration_time(),
            contention: Contention::default(),
            arq_classes: default_arq_classes(),
            arq_speed: 0.0,
            arq_order: ArqOrder::default(),
            arq_hold: ArqHold::default(),
            cpu_sharing: CpuSharing::default(),
            eviction: EvictionPolicy::default(),
            eviction_threshold: 0,
            sticky_slots: 0,
            sticky_phase: StickyPhase::default(),
            slot_config: SlotConfig::default(),
            slot_interval: default_slot_interval(),
            production_priority: default_production_priority(),
            middle_priority: default_middle_priority(),
            sort_by: SortKey::default(),
            cluster_every: default_cluster_every(),
            cluster_window: default_cluster_window(),
            cluster_classes: default_cluster_classes(),
            rank_weights: default_rank_weights(),
            annealing_goal: Default::default(),
            interference_model: Default::default(),
            dist_profiling: Default::default(),
            annealing_iterations: default_iterations(),
            annealing_restarts: default_restarts(),
            dist_profile_noise: default_dist_noise(),
            dist_profile_scale: default_dist_scale(),
            external: None,
            params: toml::Table::new(),
            admission_params: toml::Table::new(),
            slots_params: toml::Table::new(),
        }
    }
}

impl SchedulerConfig {
    /// Whether the pipeline classifies applications (Paragon §2): the
    /// Paragon placements and ARQ admission need their profiles.
    pub fn classifies(&self) -> bool {
        self.admission == AdmissionKind::Arq
            || matches!(
                self.placement,
                PlacementKind::Paragon | PlacementKind::ParagonNh | PlacementKind::ParagonNi
            )
    }

    /// Whether reactive phase detection runs (Paragon §3.4): only Paragon
    /// itself reclassifies and migrates (its baselines of §5 do not), and
    /// only with server reports to detect from. Under a slot stage a
    /// migrating task takes a free slot of its new server and cannot be
    /// evicted until it runs there (`SlotStage::begin_move`).
    pub fn detects_phases(&self) -> bool {
        self.placement == PlacementKind::Paragon
            && self.reclassify_below > 0.0
            && self.report_interval.as_nanos() > 0
    }

    /// `[scheduler.external]` naming the placement stage selects the
    /// external placement, as `placement = "external"` does; the scenario
    /// loader calls this before [`SchedulerConfig::problems`].
    pub fn select_external(&mut self) {
        let decides = self
            .external
            .as_ref()
            .is_some_and(|e| e.stages.contains(&ExternalStage::Placement));
        if decides && self.placement == PlacementKind::Random {
            self.placement = PlacementKind::External;
        }
    }

    pub fn problems(&self) -> Vec<Problem> {
        let mut out: Vec<Problem> = Vec::new();
        let mut push = |f: &str, p: String| out.push((f.to_string(), p));
        match (&self.external, self.placement) {
            (None, PlacementKind::External) => push(
                "placement",
                "\"external\" needs a [scheduler.external] section with the program's `command`"
                    .into(),
            ),
            (Some(e), p) => {
                if e.command.is_empty() || e.command[0].trim().is_empty() {
                    push(
                        "external.command",
                        "must name a program, e.g. [\"python3\", \"my_scheduler.py\"]".into(),
                    );
                }
                if e.stages.is_empty() {
                    push("external.stages", "must name at least one stage".into());
                }
                if e.stages.contains(&ExternalStage::Placement) && p != PlacementKind::External {
                    push(
                        "placement",
                        format!(
                            "is {:?} but scheduler.external.stages names the placement stage: \
                             remove one of them",
                            p.name()
                        ),
                    );
                }
                if !e.stages.contains(&ExternalStage::Placement) && p == PlacementKind::External {
                    push(
                        "placement",
                        "is \"external\" but scheduler.external.stages does not name the \
                         placement stage: name the built-in placement that places beside the \
                         program (e.g. \"least-loaded\"), or add \"placement\" to the stages"
                            .into(),
                    );
                }
                if e.stages.contains(&ExternalStage::Preemption) && self.slots == SlotPolicy::None {
                    push(
                        "external.stages",
                        "names \"preemption\" but scheduler.slots is \"none\": there is no \
                         preemption stage to hand out (choose \"priority\", \"wasp\" or \
                         \"hybrid\")"
                            .into(),
                    );
                }
                if e.stages.contains(&ExternalStage::Power)
                    && !e.stages.contains(&ExternalStage::Placement)
                {
                    push(
                        "external.stages",
                        "names \"power\" without \"placement\": the program decides power \
                         in its answers to placement requests, so it decides both: \
                         [\"placement\", \"power\"]"
                            .into(),
                    );
                }
                if e.stages.contains(&ExternalStage::Migration)
                    && !e.stages.contains(&ExternalStage::Placement)
                {
                    push(
                        "external.stages",
                        "names \"migration\" without \"placement\": the program orders \
                         migrations in its answers to placement requests, so it decides both: \
                         [\"placement\", \"migration\"]"
                            .into(),
                    );
                }
                if e.stages.contains(&ExternalStage::Network)
                    && !e.stages.contains(&ExternalStage::Placement)
                {
                    push(
                        "external.stages",
                        "names \"network\" without \"placement\": the program names a task's \
                         path with its server, in its answers to placement requests, so it \
                         decides both: [\"placement\", \"network\"]"
                            .into(),
                    );
                }
                if e.timeout.as_nanos() == 0 {
                    push("external.timeout", "must be above 0s".into());
                }
            }
            (None, _) => {}
        }
        if self.samples == 0 {
            push("samples", "must be at least 1".into());
        }
        if self.max_steps == 0 {
            push("max_steps", "must be at least 1".into());
        }
        if let Some(share) = self.profile_share
            && !(share.is_finite() && (0.0..=1.0).contains(&share))
        {
            push(
                "profile_share",
                format!("must be a share between 0 and 1, got {share}"),
            );
        }
        if !(self.profile_noise.is_finite() && (0.0..=1.0).contains(&self.profile_noise)) {
            push(
                "profile_noise",
                format!("must be between 0 and 1, got {}", self.profile_noise),
            );
        }
        if self.cf_rank == 0 || self.cf_rank > 20 {
            push(
                "cf_rank",
                format!("must be between 1 and 20, got {}", self.cf_rank),
            );
        }
        for (f, v) in [
            ("cf_learning_rate", self.cf_learning_rate),
            ("cf_regularization", self.cf_regularization),
            ("cf_tolerance", self.cf_tolerance),
        ] {
            if !(v.is_finite() && (0.0..1.0).contains(&v)) {
                push(f, format!("must be at least 0 and below 1, got {v}"));
            }
        }
        if self.cf_learning_rate == 0.0 {
            push("cf_learning_rate", "must be greater than 0".into());
        }
        if self.cf_max_epochs == 0 || self.cf_max_epochs > 100_000 {
            push(
                "cf_max_epochs",
                format!("must be between 1 and 100000, got {}", self.cf_max_epochs),
            );
        }
        if self.cf_retrain_every == 0 {
            push("cf_retrain_every", "must be at least 1".into());
        }
        if !(self.reclassify_below.is_finite() && (0.0..1.0).contains(&self.reclassify_below)) {
            push(
                "reclassify_below",
                format!(
                    "must be at least 0 and below 1, got {}",
                    self.reclassify_below
                ),
            );
        }
        if !(self.arq_speed.is_finite() && (0.0..=1.0).contains(&self.arq_speed)) {
            push(
                "arq_speed",
                format!("must be between 0 and 1, got {}", self.arq_speed),
            );
        }
        if self.arq_classes == 0 || self.arq_classes > 100 {
            push(
                "arq_classes",
                format!("must be between 1 and 100, got {}", self.arq_classes),
            );
        }
        if self.slots.slotted() && self.slot_interval.as_nanos() == 0 {
            push("slot_interval", "must be longer than 0s".into());
        }
        if self.placement.energy_aware()
            && !self.slots.slotted()
            && self.slot_interval.as_nanos() == 0
        {
            // they batch per time slot (thesis §4.2.5), behind any stage
            push("slot_interval", "must be longer than 0s".into());
        }
        if self.cluster_every.as_nanos() == 0 {
            push("cluster_every", "must be longer than 0s".into());
        }
        if self.cluster_window.as_nanos() == 0 {
            push("cluster_window", "must be longer than 0s".into());
        }
        if !(1..=100).contains(&self.cluster_classes) {
            push(
                "cluster_classes",
                format!("must be between 1 and 100, got {}", self.cluster_classes),
            );
        }
        let w = self.rank_weights;
        if !(w.iter().all(|v| v.is_finite() && *v > 0.0) && w[0] >= w[1] && w[1] >= w[2]) {
            push(
                "rank_weights",
                format!(
                    "must be three positive numbers, highest rank first (non-increasing), got {w:?}"
                ),
            );
        }
        if self.middle_priority > self.production_priority {
            push(
                "middle_priority",
                format!(
                    "must not be above production_priority ({}), got {}",
                    self.production_priority, self.middle_priority
                ),
            );
        }
        out
    }
}

impl SlotPolicy {
    pub fn name(self) -> &'static str {
        match self {
            SlotPolicy::None => "none",
            SlotPolicy::Priority => "priority",
            SlotPolicy::Wasp => "wasp",
            SlotPolicy::Hybrid => "hybrid",
            SlotPolicy::Custom(name) => name.as_str(),
        }
    }

    /// Every built-in slot policy, in the order the enum declares them.
    pub const BUILT_IN: [SlotPolicy; 4] = [
        SlotPolicy::None,
        SlotPolicy::Priority,
        SlotPolicy::Wasp,
        SlotPolicy::Hybrid,
    ];

    /// The registered policy's name, if it is one.
    pub fn custom(self) -> Option<PolicyName> {
        match self {
            SlotPolicy::Custom(name) => Some(name),
            _ => None,
        }
    }
}

/// `scheduler.admission` (Paragon §4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdmissionKind {
    /// One queue in arrival order; the head waits for a server (Paragon's
    /// application-agnostic admission, ARQ §2).
    #[default]
    Fifo,
    /// ARQ: queues per resource-quality class with server pools, diverted
    /// up or down to bound waiting (Paragon §4, ARQ).
    Arq,
    /// EASY backfilling: FCFS whose blocked head gets a reservation by the
    /// running tasks' requested times; later tasks start now where they do
    /// not delay it (Lifka 1995; Mu'alem and Feitelson 2001).
    EasyBackfill,
    /// A policy a crate registered under this name
    /// (`dcemu_actors::scheduler::admission::register`), with its
    /// parameters in `[scheduler.admission_params]`. Like a placement's,
    /// any name that is not a built-in one reads as this, and validation
    /// refuses it unless a policy of that name is registered.
    #[serde(untagged)]
    Custom(PolicyName),
}

impl AdmissionKind {
    /// Every built-in admission, in the order the enum declares them.
    pub const BUILT_IN: [AdmissionKind; 3] = [
        AdmissionKind::Fifo,
        AdmissionKind::Arq,
        AdmissionKind::EasyBackfill,
    ];

    /// The value as written in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            AdmissionKind::Fifo => "fifo",
            AdmissionKind::Arq => "arq",
            AdmissionKind::EasyBackfill => "easy-backfill",
            AdmissionKind::Custom(name) => name.as_str(),
        }
    }

    /// The registered policy's name, if it is one.
    pub fn custom(self) -> Option<PolicyName> {
        match self {
            AdmissionKind::Custom(name) => Some(name),
            _ => None,
        }
    }
}

/// `scheduler.arq_order` (Paragon §4.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArqOrder {
    #[default]
    Fifo,
    /// Shortest declared computation time first, within each queue.
    Sjf,
    /// Higher priority first, within each queue.
    Priority,
}

/// `scheduler.arq_hold`: how long ARQ holds an application for a server
/// of its own pool before diverting it to a lower one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArqHold {
    /// Paragon §4.2: the switching rule, within the queueing budget
    /// `0.05·CT − P` (issue 37's reading of the slack `S = 1.05·CT − P`).
    #[default]
    Budget,
    /// Paragon §4.1's first reading: "the system waits for a server of
    /// appropriate quality to be freed before it schedules that workload".
    /// Never diverted down; it still takes a better pool whose queue is
    /// empty (queue bypassing upwards, §4.1).
    UntilSuitable,
}

impl ArqHold {
    fn is_default(&self) -> bool {
        *self == ArqHold::default()
    }
}

/// `scheduler.cpu_sharing`: how a server's CPU is shared among the tasks
/// it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuSharing {
    /// Thesis §6.2.4.1, eq. 6.2: the cores are shared equally among the
    /// running tasks' threads, at most one core per thread.
    #[default]
    Cores,
    /// Thesis §4.2.5 (GEMS's response-time model): processor sharing of
    /// the server's capacity in which every task gets its CPU requirement
    /// (`cpu_ppm` of the strongest server; one core per thread if it
    /// declares none) and the capacity the requirements leave free is
    /// split equally among the tasks. A task alone finishes capacity /
    /// requirement times faster than at its requirement, and never slower
    /// than at it while the requirements fit the server.
    FreeCapacity,
}

impl CpuSharing {
    fn is_default(&self) -> bool {
        *self == CpuSharing::default()
    }
}

/// `scheduler.contention`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contention {
    #[default]
    Server,
    Sum,
}

/// `scheduler.slots`: the slot and preemption stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotPolicy {
    /// A task takes as many slots as it has threads; no preemption.
    #[default]
    None,
    /// Thesis §6.2.3: one slot per task, a central queue by priority then
    /// first arrival, scheduled every `slot_interval`; a task that finds no
    /// free slot evicts one of the lowest running priority (`eviction`).
    Priority,
    /// Thesis §8.1.2 (WASP): `priority`, with production tasks on the most
    /// powerful free slot (others on a random one) and production
    /// evictions freeing the most powerful slot.
    Wasp,
    /// Thesis §9.2 (HYBRID): first-arrival order onto `sticky_slots`
    /// uninterruptible slots (phase I), then WASP on the rest (phase II).
    Hybrid,
    /// A policy a crate registered under this name
    /// (`dcemu_actors::scheduler::preemption::register`): the slot stage
    /// with its decisions, and its parameters in
    /// `[scheduler.slots_params]`.
    #[serde(untagged)]
    Custom(PolicyName),
}

impl SlotPolicy {
    /// Whether the thesis's slot scheduler runs (one slot per task,
    /// time-slotted, priority queue).
    pub fn slotted(self) -> bool {
        self != SlotPolicy::None
    }
}

/// `scheduler.sticky_phase`: which queued tasks HYBRID's phase I takes
/// onto its sticky slots, in first-arrival order (thesis §9.2.1). The
/// section says both that phase I sorts "the waiting tasks" by arrival and
/// that it serves "mainly long waited and/or evicted low priorities"; the
/// two readings differ only for a task that arrived in the current time
/// slot and was never evicted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StickyPhase {
    /// Every queued task, new arrivals included: between bursts the
    /// sticky slots go to whatever arrives.
    #[default]
    FirstArrival,
    /// Only tasks that were already queued at the previous time slot
    /// (waited at least `slot_interval`) or were evicted before; new
    /// arrivals go to phase II.
    Waited,
}

impl StickyPhase {
    fn is_default(&self) -> bool {
        *self == StickyPhase::default()
    }
}

/// `scheduler.eviction`: which task of the lowest running priority a
/// priority eviction picks (thesis §6.2.3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvictionPolicy {
    /// Most recently started.
    #[default]
    Mrs,
    /// Uniformly random.
    Rnd,
    /// Least recently started.
    Lrs,
}

/// `scheduler.slot_config`: the servers' slot counts (thesis Table 8.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotConfig {
    /// The `slots` of each server type in the scenario.
    #[default]
    Scenario,
    /// CPU-based homogeneous slots: `k` slots per core on the slowest
    /// servers' CPU capacity, scaled by each server's capacity (SC1–SC4).
    Sc1,
    Sc2,
    Sc3,
    Sc4,
    /// Workload-aware slot configuration (thesis §8.1.1, eq. 8.1–8.5).
    Wasc,
}

/// `scheduler.selection` (Paragon §3.2, §3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SelectionKind {
    /// Greedy D1/D2 filtering with backtracking over all candidates.
    #[default]
    Greedy,
    /// Hash-sampled candidates ranked by colocation quality.
    Statistical,
}

/// `scheduler.placement`: how a server is chosen for a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementKind {
    /// Uniformly among servers with a free slot.
    #[default]
    Random,
    /// The server with the lowest share of slots taken that has the task's
    /// cores and memory free (Paragon §5's LL baseline).
    LeastLoaded,
    /// Bin packing: the server left with the fewest free slots that has the
    /// task's cores and memory free (consolidates, so that others sleep).
    BestFit,
    /// Heterogeneity- and interference-aware (Paragon §3).
    Paragon,
    /// Interference-aware only: no view of server configurations (NH).
    ParagonNh,
    /// Heterogeneity-aware only: no view of interference (NI).
    ParagonNi,
    /// GEMS (thesis §4.3): each time slot, tasks by memory ascending take
    /// the minimum-energy path from a core switch to a server (eq. 4.4),
    /// then the minimum-energy path to their master's server.
    Gems,
    /// GEMS with servers and switches idling instead of sleeping (§4.4.1).
    GemsNosleep,
    /// GEMS on server energy alone, with random paths (§4.4.2).
    GemsNonetwork,
    /// Best Energy Path Scheduling (thesis §3.3.1).
    Beps,
    /// Best Resource Fit Scheduling with the dot-product fit (§3.3.2).
    BrfsDot,
    /// Best Resource Fit Scheduling with the norm-based fit (§3.3.2).
    BrfsNorm,
    /// Round Robin Scheduling with best energy paths (§3.3.3).
    Rrs,
    /// Stock YARN (harvesting §6.1): blind to primary tenants; a container
    /// goes to a server with a free slot, with probability proportional to
    /// its free slots. Its node managers do not kill for primary tenants.
    YarnStock,
    /// Primary-tenant-aware YARN (§5.3, §6.1): a server's primary use and
    /// reserve (from its reports) are unavailable; placement proportional
    /// to what is left.
    YarnPt,
    /// YARN-H/Tez-H (§4.1, §5.3): Algorithm 1 picks utilisation classes
    /// per job, then YARN-PT's placement within them.
    YarnH,
    /// Distributed applications by simulated annealing over the profiled
    /// interference model (ASPLOS'16 §5): `scheduler.annealing_goal`.
    Annealing,
    /// A program outside dcemu decides (`[scheduler.external]`,
    /// docs/external-scheduler.md).
    External,
    /// A policy a crate registered under this name
    /// (`dcemu_actors::scheduler::placement::register`), with its
    /// parameters in `[scheduler.params]`. Any name that is not a built-in
    /// one reads as this; the scenario's validation refuses it unless a
    /// policy of that name is registered.
    #[serde(untagged)]
    Custom(PolicyName),
}

/// The name of a registered policy, interned: each distinct name is stored
/// once for the process, so that [`PlacementKind`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyName(&'static str);

impl PolicyName {
    /// The interned `name`.
    pub fn new(name: &str) -> Self {
        use std::collections::BTreeSet;
        use std::sync::Mutex;
        static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&known) = names.get(name) {
            return PolicyName(known);
        }
        let stored: &'static str = Box::leak(name.to_string().into_boxed_str());
        names.insert(stored);
        PolicyName(stored)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Debug for PolicyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::fmt::Display for PolicyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for PolicyName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for PolicyName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Ok(PolicyName::new(&name))
    }
}

impl PlacementKind {
    /// Every built-in placement, in the order the enum declares them.
    pub const BUILT_IN: [PlacementKind; 18] = [
        PlacementKind::Random,
        PlacementKind::LeastLoaded,
        PlacementKind::BestFit,
        PlacementKind::Paragon,
        PlacementKind::ParagonNh,
        PlacementKind::ParagonNi,
        PlacementKind::Gems,
        PlacementKind::GemsNosleep,
        PlacementKind::GemsNonetwork,
        PlacementKind::Beps,
        PlacementKind::BrfsDot,
        PlacementKind::BrfsNorm,
        PlacementKind::Rrs,
        PlacementKind::YarnStock,
        PlacementKind::YarnPt,
        PlacementKind::YarnH,
        PlacementKind::Annealing,
        PlacementKind::External,
    ];

    /// Whether the placement reads the primary tenants' use from the
    /// servers' reports (YARN-PT, YARN-H).
    pub fn reads_primary_use(self) -> bool {
        matches!(self, PlacementKind::YarnPt | PlacementKind::YarnH)
    }

    /// The registered policy's name, if it is one.
    pub fn custom(self) -> Option<PolicyName> {
        match self {
            PlacementKind::Custom(name) => Some(name),
            _ => None,
        }
    }

    /// The value as written in a scenario.
    pub fn name(self) -> String {
        if let PlacementKind::Custom(name) = self {
            return name.to_string();
        }
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// Whether this is one of the thesis's energy-aware placements, which
    /// admit by CPU, memory and bandwidth and reserve network paths.
    pub fn energy_aware(self) -> bool {
        matches!(
            self,
            PlacementKind::Gems
                | PlacementKind::GemsNosleep
                | PlacementKind::GemsNonetwork
                | PlacementKind::Beps
                | PlacementKind::BrfsDot
                | PlacementKind::BrfsNorm
                | PlacementKind::Rrs
        )
    }
}

/// `scheduler.sort_by`: the task dimension BEPS sorts its queue by,
/// ascending (thesis §3.3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SortKey {
    #[default]
    Memory,
    Cpu,
    Network,
}

/// `scheduler.annealing_goal` (ASPLOS'16 §5.2, §5.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnnealingGoal {
    /// Lowest sum of predicted normalised runtimes (§5.3).
    #[default]
    Throughput,
    /// First the QoS bound of the runs that carry one, then the lowest sum
    /// (§5.2).
    Qos,
    /// The highest sum: §5.3's *Worst* placement, the baseline Figure 11's
    /// speedups are measured against.
    Worst,
    /// A random placement that keeps each run on distinct hosts, the
    /// model ignored: §5.3's *Random* (Figure 11 averages five; here one
    /// per seed).
    Random,
}

pub fn default_iterations() -> u32 {
    20000
}

pub fn default_restarts() -> u32 {
    4
}

/// Left out of a run's `scenario.toml` at its default: runs without the
/// annealing placement keep their digests.
fn is_default_restarts(n: &u32) -> bool {
    *n == default_restarts()
}

pub fn default_dist_noise() -> f64 {
    0.01
}

/// Profiling runs use an input this share of the production one (our
/// assumption: the paper profiles offline, once per application).
pub fn default_dist_scale() -> f64 {
    0.01
}

/// A profiling algorithm (`scheduler.dist_profiling`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Algorithm 1: a binary search along every pressure's curve.
    BinaryBrute,
    /// Algorithm 2: the top curve and the all-nodes column only; the rest
    /// by proportion (`interpolate_all`).
    #[default]
    BinaryOptimized,
    /// 30 % of the settings at random, always with every pressure's
    /// all-nodes setting (§4.2).
    #[serde(rename = "random-30")]
    Random30,
    /// 50 % of the settings at random, likewise.
    #[serde(rename = "random-50")]
    Random50,
}

/// How the scheduler predicts a distributed application's runtime
/// (`scheduler.interference_model`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterferenceModel {
    /// The profiled curves under the profiled mapping policy (§3.4).
    #[default]
    Proposed,
    /// §5.2's comparison: N+1 max for every application, then the
    /// slowdown of all nodes scaled by the share of interfering nodes
    /// (Figure 2's proportional expectation).
    Naive,
}
