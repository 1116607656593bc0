//! The combinations a scenario may not ask for, and why: the table of
//! docs/scheduler.md ("What is refused, and why"), defined once. Each row
//! names its combination as the table does, the reason its errors give, and
//! which fields of a scenario meet it. Every combination of stages,
//! topology and tenant kinds not listed here runs (issue 22).

use dcemu_actors::config::{ExternalStage, SlotPolicy, StickyPhase};
use dcemu_topology::{PowerPolicy, TopologyKind};

use super::data::Scenario;

/// One row of the table.
pub struct Refusal {
    /// The combination, as docs/scheduler.md's table writes it.
    pub combination: &'static str,
    /// Why, as the error says it.
    pub reason: &'static str,
    /// The fields of a scenario that meet the combination (none: it does
    /// not apply).
    pub fields: fn(&Scenario) -> Vec<String>,
}

/// The table. Rows that are settings of one stage (a `slot_interval` of 0,
/// a rate out of range) stay with that stage's own validation.
pub const REFUSALS: &[Refusal] = &[
    Refusal {
        combination: "energy-aware `placement` on `topology.kind = \"flat\"`",
        reason: "energy-aware placements choose paths through switches: they need topology.kind = \"three-tier\"",
        fields: |s| {
            let flat = s.topology.kind == TopologyKind::Flat;
            field_if(
                flat && s.scheduler.placement.energy_aware(),
                "scheduler.placement",
            )
        },
    },
    Refusal {
        combination: "`tenants[].flow_bandwidth` on `topology.kind = \"flat\"`",
        reason: "flows reserve bandwidth on switch links: they need topology.kind = \"three-tier\"",
        fields: |s| match s.topology.kind {
            TopologyKind::Flat => (0..s.tenants.len())
                .filter(|&i| s.tenants[i].flow_bandwidth.is_some())
                .map(|i| format!("tenants[{i}].flow_bandwidth"))
                .collect(),
            _ => Vec::new(),
        },
    },
    Refusal {
        combination: "`yarn-pt`, `yarn-h` without `report_interval`",
        reason: "`yarn-pt` and `yarn-h` read the primary tenants' use from the servers' reports: set report_interval (e.g. \"3s\", YARN's heartbeat)",
        fields: |s| {
            let blind = s.scheduler.report_interval.as_nanos() == 0;
            let reads = s.scheduler.placement.reads_primary_use();
            field_if(reads && blind, "scheduler.report_interval")
        },
    },
    Refusal {
        combination: "`sticky_slots`, `sticky_phase` without `slots = \"hybrid\"`",
        reason: "only HYBRID has sticky slots (thesis §9.2): set slots = \"hybrid\", or remove sticky_slots and sticky_phase",
        fields: |s| {
            let hybrid = s.scheduler.slots == SlotPolicy::Hybrid;
            let mut fields = field_if(
                s.scheduler.sticky_slots > 0 && !hybrid,
                "scheduler.sticky_slots",
            );
            fields.extend(field_if(
                s.scheduler.sticky_phase != StickyPhase::default() && !hybrid,
                "scheduler.sticky_phase",
            ));
            fields
        },
    },
    Refusal {
        combination: "`scheduler.external.stages` with `\"power\"` under `power.policy = \"sleep\"`",
        reason: "under power.policy = \"sleep\" servers sleep by themselves as soon as they are idle, so a program deciding their power would have nothing to decide: use power.policy = \"idle\" (the default), and the program sleeps them",
        fields: |s| {
            let managed = s
                .scheduler
                .external
                .as_ref()
                .is_some_and(|e| e.stages.contains(&ExternalStage::Power));
            field_if(
                managed && s.power.policy == PowerPolicy::Sleep,
                "power.policy",
            )
        },
    },
    Refusal {
        combination: "`scheduler.external.stages` with `\"network\"` on `topology.kind = \"flat\"`",
        reason: "the network stage chooses the path of each task's flow through the switches, and a flat network has none: use topology.kind = \"three-tier\", or remove \"network\"",
        fields: |s| {
            let paths = s
                .scheduler
                .external
                .as_ref()
                .is_some_and(|e| e.stages.contains(&ExternalStage::Network));
            field_if(
                paths && s.topology.kind == TopologyKind::Flat,
                "scheduler.external.stages",
            )
        },
    },
    Refusal {
        combination: "`scheduler.external.stages` with `\"preemption\"` beside an energy-aware `placement`",
        reason: "an energy-aware placement keeps the preemption stage's victim choice (it gates victims by the CPU, memory and network path its task needs and reserves that path as the task starts), so a program would never be asked: use another built-in placement beside the program, or leave preemption to the stage",
        fields: |s| {
            let picks = s
                .scheduler
                .external
                .as_ref()
                .is_some_and(|e| e.stages.contains(&ExternalStage::Preemption));
            field_if(
                picks && s.scheduler.placement.energy_aware(),
                "scheduler.external.stages",
            )
        },
    },
];

fn field_if(refused: bool, field: &str) -> Vec<String> {
    if refused {
        vec![field.to_string()]
    } else {
        Vec::new()
    }
}

/// The rows `s` meets, as (field, reason), in the table's order.
pub fn problems(s: &Scenario) -> Vec<(String, String)> {
    REFUSALS
        .iter()
        .flat_map(|r| (r.fields)(s).into_iter().map(|f| (f, r.reason.to_string())))
        .collect()
}
