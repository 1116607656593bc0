//! Slot configurations for a heterogeneous cluster (thesis §8.1.1): the
//! workload-aware slot configuration WASC, and the CPU-based homogeneous
//! configurations SC1–SC4 it is compared with (Table 8.1).
//!
//! Pure arithmetic over workload statistics and server descriptions; nothing
//! here touches actors or randomness, so a plan can be computed offline (for
//! instance from a trace with [`sample_stats`]) and written into a scenario.
//!
//! # Our reading of the thesis
//!
//! * **Units.** Server capacities `C_l` and task CPU usages share one unit:
//!   1.0 is the CPU of the reference machine, the most powerful server (the
//!   Google trace normalises the same way). The reference capacity is
//!   therefore `C = 1.0` ([`REFERENCE_CAPACITY`]).
//! * **Groups** ([`Groups`]). Production is `priority >= production` (9 by
//!   default), middle is `middle..production` (2 by default), gratis is
//!   below `middle`. Their slow-down sensitivities are δ = 1.0, 0.75 and 0.5
//!   (§8.1.1.1). "Non-production" is middle and gratis together.
//! * **Phase I.** Shares `P_i` are normalised to sum to 1. Occupancy
//!   `φ_i = P_i ω_i` (eq. 8.1); the production share of occupancy is
//!   `φ_p = Σ_prod φ_i / Σ_all φ_i` (eq. 8.2, as a fraction, not a
//!   percentage). Estimated usage `θ_i = δ_i (ξ_i + c σ_i)` with `c = 2`
//!   (eq. 8.3). The thesis does not say how the classes' `θ_i` combine into
//!   a group's; we take the task-share weighted mean,
//!   `θ_group = Σ_{i∈group} P_i θ_i / Σ_{i∈group} P_i`. Slots on the
//!   reference machine are `N = C / θ` (eq. 8.4), rounded to the nearest
//!   multiple of the smallest core count among the servers, and at least
//!   that core count (§8.1.1.2). A server of capacity `C_l` gets
//!   `round(C_l / C × N)` slots, at least 1 (eq. 8.5).
//! * **Phase II.** Servers are sorted by core speed, fastest first (ties:
//!   larger capacity first, then lower index). Walking that order, a server
//!   gets the production configuration while the capacity handed out so
//!   far plus its own stays within `φ_p × total capacity` plus half its own
//!   capacity, i.e. the production capacity is rounded to the nearest whole
//!   server; the first server that does not fit ends the walk, and all
//!   later servers get the non-production configuration. Two guards keep
//!   both groups served: at least one server is production (the statistics
//!   always have production tasks, see [`WascError::NoProductionTasks`]),
//!   and when non-production tasks exist and there are two or more servers,
//!   at least one server is non-production. Production servers are marked
//!   `powerful` — they are the ones WASP (§8.1.2) sends production tasks to,
//!   whether or not their slots actually carry more CPU.
//! * **CPU-based configurations** (Table 8.1). `SCk` gives a server
//!   `round(k × cores × C_l / C_min)` slots (at least 1), `C_min` being the
//!   smallest capacity among the servers, so every slot carries about the
//!   same CPU. In any plan, a server is `powerful` when its CPU per slot is
//!   strictly above the cluster's smallest CPU per slot (relative tolerance
//!   [`CPU_PER_SLOT_TOLERANCE`]); for SCk on a cluster whose capacities are
//!   proportional to cores, that is no server.
//!
//! # On Table 5.2
//!
//! Table 5.2 gives mean usages but no deviations, so [`table_5_2_stats`]
//! takes `σ_i = cv × ξ_i` for one `cv`. Then `θ_p / θ_np` does not depend
//! on `cv` (about 0.67: class 9 uses less CPU on average than class 4), and
//! WASC gives production *more* slots than non-production (48 against 32
//! on a D server for `cv = 1`), the reverse of Table 8.1 (24 against 48).
//! Table 8.1's numbers follow when production deviates much more than the
//! rest, e.g. `cv ≈ 2.5` for production and `≈ 0.5` for the others. Phase
//! II (five of eight D servers) does not depend on usages at all.

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::google::TABLE_5_2;

/// Capacity of the reference (most powerful) machine, the unit of server
/// capacities and CPU usages (thesis eq. 8.4, 8.5).
pub const REFERENCE_CAPACITY: f64 = 1.0;
/// Confidence indicator `c` of the Chebyshev estimate (thesis eq. 8.3):
/// at least 75 % of the values lie within two standard deviations.
pub const CHEBYSHEV_C: f64 = 2.0;
/// Slow-down sensitivity δ of production classes (§8.1.1.1).
pub const DELTA_PRODUCTION: f64 = 1.0;
/// Slow-down sensitivity δ of middle classes (§8.1.1.1).
pub const DELTA_MIDDLE: f64 = 0.75;
/// Slow-down sensitivity δ of gratis classes (§8.1.1.1).
pub const DELTA_GRATIS: f64 = 0.5;
/// Upper bound on the slots of one server; a plan needing more is an error
/// (a θ that is tiny but positive).
pub const MAX_SLOTS_PER_SERVER: u32 = 1 << 20;
/// Relative tolerance when comparing CPU per slot for `powerful` in
/// CPU-based plans.
pub const CPU_PER_SLOT_TOLERANCE: f64 = 1e-9;

/// Workload statistics of one priority class (thesis Table 5.2 columns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassStats {
    pub priority: u8,
    /// Share of task arrivals `P_i`; any non-negative weight, normalised
    /// over all classes.
    pub share: f64,
    /// Mean CPU demand `ω_i`, normalised cpu·s.
    pub demand_mean: f64,
    /// Mean CPU usage `ξ_i`, normalised rate.
    pub usage_mean: f64,
    /// Standard deviation `σ_i` of the CPU usage.
    pub usage_std: f64,
}

/// The priority group a class belongs to (§8.1.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Production,
    Middle,
    Gratis,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Production => "production",
            Group::Middle => "middle",
            Group::Gratis => "gratis",
        }
    }
}

/// Priority thresholds of the groups: production is `>= production`,
/// middle is `middle..production`, gratis is `< middle`. With
/// `middle > production` the middle group is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Groups {
    pub production: u8,
    pub middle: u8,
}

impl Default for Groups {
    fn default() -> Self {
        Groups {
            production: 9,
            middle: 2,
        }
    }
}

impl Groups {
    pub fn group(&self, priority: u8) -> Group {
        if priority >= self.production {
            Group::Production
        } else if priority >= self.middle {
            Group::Middle
        } else {
            Group::Gratis
        }
    }

    pub fn is_production(&self, priority: u8) -> bool {
        self.group(priority) == Group::Production
    }

    /// Slow-down sensitivity δ of a priority (thesis eq. 8.3).
    pub fn delta(&self, priority: u8) -> f64 {
        match self.group(priority) {
            Group::Production => DELTA_PRODUCTION,
            Group::Middle => DELTA_MIDDLE,
            Group::Gratis => DELTA_GRATIS,
        }
    }
}

/// The CPU of one server, as WASC needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerCpu {
    /// Server type, e.g. "A"; rows of [`SlotPlan::render_table`] group by it.
    pub type_name: String,
    pub cores: u32,
    /// Normalised CPU capacity `C_l`; 1.0 is the most powerful server.
    pub capacity: f64,
    /// Speed of one core (same unit as `capacity`); Phase II sorts by it.
    pub core_speed: f64,
}

/// Slots of every server (indexed like the server list) and whether they
/// are "powerful" slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotPlan {
    /// "WASC", "SC1", ...
    pub name: String,
    pub slots: Vec<u32>,
    pub powerful: Vec<bool>,
}

/// One priority class as Phase I saw it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassRow {
    pub priority: u8,
    pub group: Group,
    /// Normalised share of task arrivals `P_i`.
    pub share: f64,
    /// CPU occupancy `φ_i = P_i ω_i` (thesis eq. 8.1).
    pub occupancy: f64,
    /// `φ_i / Σ φ_j` (thesis eq. 8.2, as a fraction).
    pub occupancy_share: f64,
    /// Estimated usage `θ_i = δ_i (ξ_i + c σ_i)` (thesis eq. 8.3).
    pub theta: f64,
}

/// The intermediate numbers of a WASC run.
#[derive(Clone, Debug, PartialEq)]
pub struct WascReport {
    /// Production share of CPU occupancy `φ_p`, a fraction (eq. 8.2).
    pub phi_p: f64,
    /// Estimated usage of the production group.
    pub theta_p: f64,
    /// Estimated usage of the non-production group; `None` when the
    /// statistics have no non-production tasks.
    pub theta_np: Option<f64>,
    /// `C / θ_p` before rounding (eq. 8.4).
    pub n_p_exact: f64,
    pub n_np_exact: Option<f64>,
    /// Production slots on the reference machine, a multiple of `min_cores`.
    pub n_p: u32,
    /// Non-production slots on the reference machine.
    pub n_np: Option<u32>,
    /// Smallest core count among the servers.
    pub min_cores: u32,
    /// Servers given the production configuration.
    pub production_servers: usize,
    /// Their capacity, and the capacity of all servers.
    pub production_capacity: f64,
    pub total_capacity: f64,
    /// One row per input class, in input order.
    pub classes: Vec<ClassRow>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WascError {
    #[error("no servers to configure")]
    NoServers,
    #[error("server {index} ({type_name}): {reason}")]
    InvalidServer {
        index: usize,
        type_name: String,
        reason: &'static str,
    },
    #[error(
        "workload statistics, priority {priority}: {field} is {value}, expected a finite number >= 0"
    )]
    InvalidStats {
        priority: u8,
        field: &'static str,
        value: f64,
    },
    #[error("the workload statistics have no tasks (no class with a positive share)")]
    NoTasks,
    #[error("the workload statistics have no CPU demand (every class's occupancy is zero)")]
    NoCpuDemand,
    #[error("no production tasks (priority >= {production}) in the workload statistics")]
    NoProductionTasks { production: u8 },
    #[error(
        "estimated CPU usage θ of the {group} group is {value}; it must be positive and finite (is the CPU usage all zero?)"
    )]
    ThetaNotPositive { group: &'static str, value: f64 },
    #[error("{what} needs {slots} slots on one server, more than {MAX_SLOTS_PER_SERVER}")]
    TooManySlots { what: &'static str, slots: f64 },
}

/// Workload-aware slot configuration (thesis §8.1.1, Algorithm 8.1). See
/// the module documentation for our reading of both phases.
pub fn wasc(
    stats: &[ClassStats],
    groups: Groups,
    servers: &[ServerCpu],
) -> Result<(SlotPlan, WascReport), WascError> {
    validate_servers(servers)?;
    for s in stats {
        for (field, value) in [
            ("share", s.share),
            ("demand_mean", s.demand_mean),
            ("usage_mean", s.usage_mean),
            ("usage_std", s.usage_std),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(WascError::InvalidStats {
                    priority: s.priority,
                    field,
                    value,
                });
            }
        }
    }

    // Phase I.
    let total_share: f64 = stats.iter().map(|s| s.share).sum();
    if !(total_share.is_finite() && total_share > 0.0) {
        return Err(WascError::NoTasks);
    }
    let mut classes: Vec<ClassRow> = stats
        .iter()
        .map(|s| {
            let share = s.share / total_share;
            ClassRow {
                priority: s.priority,
                group: groups.group(s.priority),
                share,
                occupancy: share * s.demand_mean, // thesis eq. 8.1
                occupancy_share: 0.0,
                // thesis eq. 8.3
                theta: groups.delta(s.priority) * (s.usage_mean + CHEBYSHEV_C * s.usage_std),
            }
        })
        .collect();
    let total_occupancy: f64 = classes.iter().map(|c| c.occupancy).sum();
    if !(total_occupancy.is_finite() && total_occupancy > 0.0) {
        return Err(WascError::NoCpuDemand);
    }
    for c in &mut classes {
        c.occupancy_share = c.occupancy / total_occupancy; // thesis eq. 8.2
    }
    let is_prod = |c: &ClassRow| c.group == Group::Production;
    let prod_share: f64 = classes.iter().filter(|c| is_prod(c)).map(|c| c.share).sum();
    if prod_share <= 0.0 {
        return Err(WascError::NoProductionTasks {
            production: groups.production,
        });
    }
    let phi_p: f64 = classes
        .iter()
        .filter(|c| is_prod(c))
        .map(|c| c.occupancy_share)
        .sum();
    let theta_p = classes
        .iter()
        .filter(|c| is_prod(c))
        .map(|c| c.share * c.theta)
        .sum::<f64>()
        / prod_share;
    let np_share: f64 = classes
        .iter()
        .filter(|c| !is_prod(c))
        .map(|c| c.share)
        .sum();
    let theta_np = (np_share > 0.0).then(|| {
        classes
            .iter()
            .filter(|c| !is_prod(c))
            .map(|c| c.share * c.theta)
            .sum::<f64>()
            / np_share
    });

    // Slots on the reference machine (thesis eq. 8.4), as multiples of the
    // smallest core count (§8.1.1.2).
    let min_cores = servers.iter().map(|s| s.cores).min().unwrap_or(1);
    let reference_slots = |group: &'static str, theta: f64| -> Result<(f64, u32), WascError> {
        if !(theta.is_finite() && theta > 0.0) {
            return Err(WascError::ThetaNotPositive {
                group,
                value: theta,
            });
        }
        let exact = REFERENCE_CAPACITY / theta;
        let rounded = round_to_multiple(exact, min_cores);
        Ok((exact, to_slots(group, rounded)?))
    };
    let (n_p_exact, n_p) = reference_slots("production", theta_p)?;
    let (n_np_exact, n_np) = match theta_np {
        Some(t) => {
            let (e, n) = reference_slots("non-production", t)?;
            (Some(e), Some(n))
        }
        None => (None, None),
    };

    // Phase II: production configuration on the fastest servers, for φ_p of
    // the capacity rounded to whole servers.
    let order = speed_order(servers);
    let total_capacity: f64 = servers.iter().map(|s| s.capacity).sum();
    let target = phi_p * total_capacity;
    let mut production = vec![false; servers.len()];
    let mut assigned = 0.0;
    let mut count = 0usize;
    for &i in &order {
        let c = servers[i].capacity;
        if assigned + c <= target + 0.5 * c {
            production[i] = true;
            assigned += c;
            count += 1;
        } else {
            break;
        }
    }
    if count == 0 {
        if let Some(&first) = order.first() {
            production[first] = true;
            assigned += servers[first].capacity;
            count = 1;
        }
    }
    if n_np.is_some() && count == servers.len() && count >= 2 {
        if let Some(&last) = order.last() {
            production[last] = false;
            assigned -= servers[last].capacity;
            count -= 1;
        }
    }

    // Per-server slots (thesis eq. 8.5).
    let mut slots = Vec::with_capacity(servers.len());
    for (s, &prod) in servers.iter().zip(&production) {
        let (group, n) = match (prod, n_np) {
            (true, _) | (false, None) => ("production slots", n_p),
            (false, Some(n)) => ("non-production slots", n),
        };
        slots.push(scale_slots(group, s.capacity, n)?);
    }
    let plan = SlotPlan {
        name: "WASC".to_string(),
        slots,
        powerful: production,
    };
    let report = WascReport {
        phi_p,
        theta_p,
        theta_np,
        n_p_exact,
        n_np_exact,
        n_p,
        n_np,
        min_cores,
        production_servers: count,
        production_capacity: assigned,
        total_capacity,
        classes,
    };
    Ok((plan, report))
}

/// CPU-based homogeneous configuration `SCk` (thesis Table 8.1): a server
/// gets `k × cores × C_l / C_min` slots (rounded, at least 1), so that all
/// slots carry about the same CPU.
pub fn cpu_based(k: u32, servers: &[ServerCpu]) -> Result<SlotPlan, WascError> {
    validate_servers(servers)?;
    let c_min = servers
        .iter()
        .map(|s| s.capacity)
        .fold(f64::INFINITY, f64::min);
    let mut slots = Vec::with_capacity(servers.len());
    for s in servers {
        let exact = f64::from(k) * f64::from(s.cores) * s.capacity / c_min;
        slots.push(to_slots(
            "a CPU-based configuration",
            exact.round().max(1.0),
        )?);
    }
    let powerful = above_min_cpu_per_slot(servers, &slots);
    Ok(SlotPlan {
        name: format!("SC{k}"),
        slots,
        powerful,
    })
}

/// Statistics of Table 5.2 (`crate::google::TABLE_5_2`): share of tasks
/// normalised to sum 1, CPU demand, CPU usage, and a usage standard
/// deviation of `usage_cv × usage` (the table gives no deviations).
pub fn table_5_2_stats(usage_cv: f64) -> Vec<ClassStats> {
    let total: f64 = TABLE_5_2.iter().map(|r| r.1).sum();
    TABLE_5_2
        .iter()
        .map(|r| ClassStats {
            priority: r.0,
            share: r.1 / total,
            demand_mean: r.2,
            usage_mean: r.4,
            usage_std: usage_cv * r.4,
        })
        .collect()
}

/// Per-class statistics from task samples `(priority, CPU demand in cpu·s,
/// CPU usage)`: share = count / total, mean demand, mean usage and its
/// population standard deviation. Samples with a value that is negative or
/// not finite are skipped. Classes come out in priority order; classes
/// without samples are left out.
pub fn sample_stats(samples: impl IntoIterator<Item = (u8, f64, f64)>) -> Vec<ClassStats> {
    #[derive(Clone, Copy, Default)]
    struct Acc {
        n: u64,
        demand_mean: f64,
        usage_mean: f64,
        usage_m2: f64,
    }
    let mut acc = [Acc::default(); 256];
    let mut total = 0u64;
    for (priority, demand, usage) in samples {
        if !(demand.is_finite() && demand >= 0.0 && usage.is_finite() && usage >= 0.0) {
            continue;
        }
        // Welford's online mean and variance.
        let a = &mut acc[usize::from(priority)];
        a.n += 1;
        let n = a.n as f64;
        a.demand_mean += (demand - a.demand_mean) / n;
        let d = usage - a.usage_mean;
        a.usage_mean += d / n;
        a.usage_m2 += d * (usage - a.usage_mean);
        total += 1;
    }
    (0..=u8::MAX)
        .zip(acc.iter())
        .filter(|(_, a)| a.n > 0)
        .map(|(priority, a)| ClassStats {
            priority,
            share: a.n as f64 / total as f64,
            demand_mean: a.demand_mean,
            usage_mean: a.usage_mean,
            usage_std: libm::sqrt((a.usage_m2 / a.n as f64).max(0.0)),
        })
        .collect()
}

impl SlotPlan {
    /// Slots over all servers.
    pub fn total_slots(&self) -> u64 {
        self.slots.iter().map(|&s| u64::from(s)).sum()
    }

    /// Servers marked powerful.
    pub fn powerful_count(&self) -> usize {
        self.powerful.iter().filter(|&&p| p).count()
    }

    /// An aligned Markdown table in the shape of thesis Table 8.1: one row
    /// per (server type, slots, powerful) with the quantity of servers,
    /// slots per server, their total, CPU per slot and "powerful"/"normal",
    /// then a total row. Rows follow the order in which types first appear
    /// in `servers`; within a type, powerful rows first, then more slots
    /// first. `servers` must be the list the plan was made for (extra
    /// entries on either side are ignored).
    pub fn render_table(&self, servers: &[ServerCpu], title: &str) -> String {
        struct Row<'a> {
            type_rank: usize,
            type_name: &'a str,
            slots: u32,
            powerful: bool,
            quantity: u64,
            capacity: f64,
        }
        let mut rows: Vec<Row> = Vec::new();
        let mut total_servers = 0u64;
        let mut total_slots = 0u64;
        for (i, ((s, &slots), &powerful)) in servers
            .iter()
            .zip(&self.slots)
            .zip(&self.powerful)
            .enumerate()
        {
            total_servers += 1;
            total_slots += u64::from(slots);
            let type_rank = servers[..i]
                .iter()
                .position(|t| t.type_name == s.type_name)
                .unwrap_or(i);
            match rows
                .iter_mut()
                .find(|r| r.type_name == s.type_name && r.slots == slots && r.powerful == powerful)
            {
                Some(r) => {
                    r.quantity += 1;
                    r.capacity += s.capacity;
                }
                None => rows.push(Row {
                    type_rank,
                    type_name: &s.type_name,
                    slots,
                    powerful,
                    quantity: 1,
                    capacity: s.capacity,
                }),
            }
        }
        rows.sort_by(|a, b| {
            a.type_rank
                .cmp(&b.type_rank)
                .then(b.powerful.cmp(&a.powerful))
                .then(b.slots.cmp(&a.slots))
        });

        let header = [
            "server".to_string(),
            "quantity".to_string(),
            format!("{} slots", self.name),
            "total slots".to_string(),
            "CPU/slot".to_string(),
            "CPU".to_string(),
        ];
        let mut cells: Vec<[String; 6]> = rows
            .iter()
            .map(|r| {
                let slots_total = r.quantity * u64::from(r.slots);
                [
                    r.type_name.to_string(),
                    r.quantity.to_string(),
                    r.slots.to_string(),
                    slots_total.to_string(),
                    format!("{:.4}", r.capacity / slots_total.max(1) as f64),
                    if r.powerful { "powerful" } else { "normal" }.to_string(),
                ]
            })
            .collect();
        cells.push([
            "total".to_string(),
            total_servers.to_string(),
            "-".to_string(),
            total_slots.to_string(),
            "-".to_string(),
            "-".to_string(),
        ]);
        let mut widths = header.clone().map(|h| h.chars().count());
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let right = [false, true, true, true, true, false];

        let mut out = String::new();
        let _ = writeln!(out, "{title}");
        let line = |out: &mut String, row: &[String; 6]| {
            out.push('|');
            for ((c, &w), &r) in row.iter().zip(&widths).zip(&right) {
                if r {
                    let _ = write!(out, " {c:>w$} |");
                } else {
                    let _ = write!(out, " {c:<w$} |");
                }
            }
            out.push('\n');
        };
        line(&mut out, &header);
        out.push('|');
        for (&w, &r) in widths.iter().zip(&right) {
            if r {
                let _ = write!(out, "{}:|", "-".repeat(w + 1));
            } else {
                let _ = write!(out, "{}|", "-".repeat(w + 2));
            }
        }
        out.push('\n');
        for row in &cells {
            line(&mut out, row);
        }
        out
    }
}

/// Checks what both configurations need of the servers.
fn validate_servers(servers: &[ServerCpu]) -> Result<(), WascError> {
    if servers.is_empty() {
        return Err(WascError::NoServers);
    }
    for (index, s) in servers.iter().enumerate() {
        let reason = if s.cores == 0 {
            Some("no cores")
        } else if !(s.capacity.is_finite() && s.capacity > 0.0) {
            Some("CPU capacity must be positive and finite")
        } else if !(s.core_speed.is_finite() && s.core_speed > 0.0) {
            Some("core speed must be positive and finite")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(WascError::InvalidServer {
                index,
                type_name: s.type_name.clone(),
                reason,
            });
        }
    }
    Ok(())
}

/// Nearest multiple of `m` (half away from zero), at least `m` (§8.1.1.2).
fn round_to_multiple(n: f64, m: u32) -> f64 {
    let m = f64::from(m.max(1));
    (n / m).round().max(1.0) * m
}

/// A whole slot count, or an error past [`MAX_SLOTS_PER_SERVER`].
fn to_slots(what: &'static str, n: f64) -> Result<u32, WascError> {
    if n.is_finite() && n <= f64::from(MAX_SLOTS_PER_SERVER) {
        Ok(n.max(1.0) as u32)
    } else {
        Err(WascError::TooManySlots { what, slots: n })
    }
}

/// `round(C_l / C × N)`, at least 1 (thesis eq. 8.5).
fn scale_slots(what: &'static str, capacity: f64, n: u32) -> Result<u32, WascError> {
    to_slots(
        what,
        (capacity / REFERENCE_CAPACITY * f64::from(n))
            .round()
            .max(1.0),
    )
}

/// Server indices, fastest cores first; ties by larger capacity, then index.
fn speed_order(servers: &[ServerCpu]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..servers.len()).collect();
    order.sort_by(|&a, &b| {
        let (sa, sb) = (&servers[a], &servers[b]);
        sb.core_speed
            .total_cmp(&sa.core_speed)
            .then(sb.capacity.total_cmp(&sa.capacity))
            .then(a.cmp(&b))
    });
    order
}

/// Whether each server's CPU per slot is strictly above the cluster's
/// smallest (relative tolerance [`CPU_PER_SLOT_TOLERANCE`]).
fn above_min_cpu_per_slot(servers: &[ServerCpu], slots: &[u32]) -> Vec<bool> {
    let per_slot: Vec<f64> = servers
        .iter()
        .zip(slots)
        .map(|(s, &n)| s.capacity / f64::from(n.max(1)))
        .collect();
    let min = per_slot.iter().copied().fold(f64::INFINITY, f64::min);
    per_slot
        .iter()
        .map(|&p| p.partial_cmp(&(min * (1.0 + CPU_PER_SLOT_TOLERANCE))) == Some(Ordering::Greater))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(type_name: &str, cores: u32, capacity: f64, core_speed: f64) -> ServerCpu {
        ServerCpu {
            type_name: type_name.to_string(),
            cores,
            capacity,
            core_speed,
        }
    }

    /// Thesis Table 7.1 as in our scenario: 69 A, 38 B, 10 C (8 cores at
    /// 0.5) and 8 D (8 cores at 1.0). D last, so Phase II has to sort.
    fn thesis_cluster() -> Vec<ServerCpu> {
        let mut v = Vec::new();
        for (t, n, cap) in [
            ("A", 69, 0.5),
            ("B", 38, 0.5),
            ("C", 10, 0.5),
            ("D", 8, 1.0),
        ] {
            for _ in 0..n {
                v.push(server(t, 8, cap, cap));
            }
        }
        v
    }

    fn class(priority: u8, share: f64, demand: f64, usage: f64, std: f64) -> ClassStats {
        ClassStats {
            priority,
            share,
            demand_mean: demand,
            usage_mean: usage,
            usage_std: std,
        }
    }

    #[test]
    fn thesis_cluster_gets_five_powerful_d_servers() {
        let servers = thesis_cluster();
        let (plan, report) = wasc(&table_5_2_stats(1.0), Groups::default(), &servers).unwrap();
        assert!(
            (0.075..=0.078).contains(&report.phi_p),
            "φ_p = {}",
            report.phi_p
        );
        assert_eq!(report.production_servers, 5);
        assert_eq!(plan.powerful_count(), 5);
        for (s, &p) in servers.iter().zip(&plan.powerful) {
            if p {
                assert_eq!(s.type_name, "D");
            }
        }
        let d_normal = servers
            .iter()
            .zip(&plan.powerful)
            .filter(|(s, p)| s.type_name == "D" && !**p)
            .count();
        assert_eq!(d_normal, 3);
        assert_eq!(report.n_p % 8, 0);
        assert_eq!(report.n_np.unwrap() % 8, 0);
        // Slots follow eq. 8.5: half capacity, half the slots.
        for (s, (&n, &p)) in servers.iter().zip(plan.slots.iter().zip(&plan.powerful)) {
            let full = if p { report.n_p } else { report.n_np.unwrap() };
            assert_eq!(f64::from(n), (s.capacity * f64::from(full)).round());
        }
        assert_eq!(report.classes.len(), TABLE_5_2.len());
        let share_sum: f64 = report.classes.iter().map(|c| c.share).sum();
        assert!((share_sum - 1.0).abs() < 1e-12);
    }

    #[test]
    fn cpu_based_totals_on_our_cluster() {
        let servers = thesis_cluster();
        for (k, total) in [(1, 1064), (2, 2128), (3, 3192), (4, 4256)] {
            let plan = cpu_based(k, &servers).unwrap();
            assert_eq!(plan.total_slots(), total, "SC{k}");
            assert_eq!(plan.powerful_count(), 0, "SC{k}");
            assert_eq!(plan.name, format!("SC{k}"));
        }
        let sc2 = cpu_based(2, &servers).unwrap();
        assert_eq!(sc2.slots[0], 16);
        assert_eq!(sc2.slots[servers.len() - 1], 32);
    }

    #[test]
    fn cpu_based_marks_servers_with_more_cpu_per_slot() {
        // A fast 4-core server: 4 × 1.0 / 0.5 = 8 slots at 0.125 CPU each
        // versus 8 slots at 0.0625 on the slow 8-core one.
        let servers = vec![server("slow", 8, 0.5, 0.0625), server("fast", 4, 1.0, 0.25)];
        let plan = cpu_based(1, &servers).unwrap();
        assert_eq!(plan.slots, vec![8, 8]);
        assert_eq!(plan.powerful, vec![false, true]);
    }

    #[test]
    fn sample_stats_recovers_mean_and_std() {
        let samples = vec![
            (9, 10.0, 2.0),
            (0, 1.0, 1.0),
            (9, 20.0, 4.0),
            (0, 3.0, 1.0),
            (9, 30.0, 4.0),
            (9, 40.0, 4.0),
            (9, f64::NAN, 1.0), // skipped
            (0, 2.0, -1.0),     // skipped
            (9, 50.0, 5.0),
            (9, 60.0, 7.0),
            (9, 70.0, 5.0),
            (9, 80.0, 9.0),
        ];
        let stats = sample_stats(samples);
        assert_eq!(stats.len(), 2);
        assert_eq!(stats[0].priority, 0);
        assert!((stats[0].share - 0.2).abs() < 1e-12);
        assert!((stats[0].demand_mean - 2.0).abs() < 1e-12);
        assert!((stats[0].usage_mean - 1.0).abs() < 1e-12);
        assert!(stats[0].usage_std.abs() < 1e-12);
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population std 2.
        assert_eq!(stats[1].priority, 9);
        assert!((stats[1].share - 0.8).abs() < 1e-12);
        assert!((stats[1].demand_mean - 45.0).abs() < 1e-12);
        assert!((stats[1].usage_mean - 5.0).abs() < 1e-12);
        assert!((stats[1].usage_std - 2.0).abs() < 1e-12);
        assert!(sample_stats(std::iter::empty()).is_empty());
    }

    #[test]
    fn groups_and_sensitivities() {
        let g = Groups::default();
        for p in 0..=1 {
            assert_eq!(g.group(p), Group::Gratis);
            assert_eq!(g.delta(p), 0.5);
        }
        for p in 2..=8 {
            assert_eq!(g.group(p), Group::Middle);
            assert_eq!(g.delta(p), 0.75);
        }
        for p in 9..=11 {
            assert_eq!(g.group(p), Group::Production);
            assert!(g.is_production(p));
            assert_eq!(g.delta(p), 1.0);
        }
        let custom = Groups {
            production: 5,
            middle: 7,
        };
        assert_eq!(custom.group(6), Group::Production);
        assert_eq!(custom.group(4), Group::Gratis);
        assert_eq!(Group::Middle.name(), "middle");
    }

    #[test]
    fn errors_for_empty_or_bad_inputs() {
        let servers = thesis_cluster();
        let stats = table_5_2_stats(1.0);
        let g = Groups::default();
        assert_eq!(wasc(&stats, g, &[]).unwrap_err(), WascError::NoServers);
        assert_eq!(cpu_based(1, &[]).unwrap_err(), WascError::NoServers);
        assert_eq!(wasc(&[], g, &servers).unwrap_err(), WascError::NoTasks);
        let zero_share = [class(9, 0.0, 1.0, 0.1, 0.0)];
        assert_eq!(
            wasc(&zero_share, g, &servers).unwrap_err(),
            WascError::NoTasks
        );
        let no_prod: Vec<_> = stats.iter().copied().filter(|s| s.priority < 9).collect();
        let err = wasc(&no_prod, g, &servers).unwrap_err();
        assert_eq!(err, WascError::NoProductionTasks { production: 9 });
        assert_eq!(
            err.to_string(),
            "no production tasks (priority >= 9) in the workload statistics"
        );
        let idle = [class(9, 0.5, 1.0, 0.0, 0.0), class(0, 0.5, 1.0, 0.1, 0.0)];
        assert!(matches!(
            wasc(&idle, g, &servers),
            Err(WascError::ThetaNotPositive {
                group: "production",
                ..
            })
        ));
        let no_demand = [class(9, 0.5, 0.0, 0.1, 0.0), class(0, 0.5, 0.0, 0.1, 0.0)];
        assert_eq!(
            wasc(&no_demand, g, &servers).unwrap_err(),
            WascError::NoCpuDemand
        );
        let nan = [class(9, f64::NAN, 1.0, 0.1, 0.0)];
        assert!(matches!(
            wasc(&nan, g, &servers),
            Err(WascError::InvalidStats { field: "share", .. })
        ));
        let negative_std = table_5_2_stats(-1.0);
        assert!(matches!(
            wasc(&negative_std, g, &servers),
            Err(WascError::InvalidStats {
                field: "usage_std",
                ..
            })
        ));
        let tiny = [class(9, 1.0, 1.0, 1e-300, 0.0)];
        assert!(matches!(
            wasc(&tiny, g, &servers),
            Err(WascError::TooManySlots { .. })
        ));
        for bad in [
            server("X", 0, 1.0, 1.0),
            server("X", 8, 0.0, 1.0),
            server("X", 8, f64::INFINITY, 1.0),
            server("X", 8, 1.0, f64::NAN),
        ] {
            assert!(matches!(
                wasc(&stats, g, std::slice::from_ref(&bad)),
                Err(WascError::InvalidServer { index: 0, .. })
            ));
            assert!(matches!(
                cpu_based(1, &[bad]),
                Err(WascError::InvalidServer { index: 0, .. })
            ));
        }
    }

    #[test]
    fn reference_slots_round_to_multiples_of_min_cores() {
        assert_eq!(round_to_multiple(46.46, 8), 48.0);
        assert_eq!(round_to_multiple(43.9, 8), 40.0);
        assert_eq!(round_to_multiple(44.0, 8), 48.0);
        assert_eq!(round_to_multiple(3.0, 8), 8.0);
        assert_eq!(round_to_multiple(0.0, 8), 8.0);
        assert_eq!(round_to_multiple(5.0, 0), 5.0);

        // θ_p = 1/46 (N = 46), θ_np = 1/30 (N = 30): with 4-core servers
        // present, multiples of 4 (48 and 32); with only 8-core ones, of 8.
        let stats = [
            class(9, 0.5, 1.0, 1.0 / 46.0, 0.0),
            class(4, 0.5, 1.0, 1.0 / 30.0 / 0.75, 0.0),
        ];
        let mixed = vec![server("big", 8, 1.0, 1.0), server("small", 4, 0.25, 0.5)];
        let (_, r) = wasc(&stats, Groups::default(), &mixed).unwrap();
        assert_eq!(r.min_cores, 4);
        assert_eq!((r.n_p, r.n_np), (48, Some(32)));
        let eights = vec![server("big", 8, 1.0, 1.0), server("big", 8, 1.0, 1.0)];
        let (plan, r) = wasc(&stats, Groups::default(), &eights).unwrap();
        assert_eq!((r.n_p, r.n_np), (48, Some(32)));
        // φ_p = 0.5 of 2 servers: one each.
        assert_eq!(plan.slots, vec![48, 32]);
        assert_eq!(plan.powerful, vec![true, false]);
        // A usage so high that C/θ < min cores still gets min cores.
        let heavy = [class(9, 1.0, 1.0, 0.9, 0.0)];
        let (plan, r) = wasc(&heavy, Groups::default(), &eights).unwrap();
        assert_eq!(r.n_p, 8);
        assert_eq!(r.n_np, None);
        assert_eq!(plan.slots, vec![8, 8]);
        assert_eq!(plan.powerful, vec![true, true]);
    }

    #[test]
    fn heavier_production_gets_fewer_slots_on_the_fastest_servers() {
        // Like the synthetic workloads of thesis Table 9.4: production
        // usage twice the others', σ = ξ.
        let stats = [
            class(0, 0.45, 10.0, 0.01, 0.01),
            class(4, 0.45, 10.0, 0.01, 0.01),
            class(9, 0.10, 20.0, 0.02, 0.02),
        ];
        let servers = thesis_cluster();
        let (plan, r) = wasc(&stats, Groups::default(), &servers).unwrap();
        assert!(r.n_p < r.n_np.unwrap(), "{r:?}");
        // φ_p = 2 / 11 of 66.5 ≈ 12.1: all 8 D (8.0) and 8 servers of 0.5.
        assert!((r.phi_p - 2.0 / 11.0).abs() < 1e-12);
        assert_eq!(r.production_servers, 16);
        let order = speed_order(&servers);
        for (rank, &i) in order.iter().enumerate() {
            assert_eq!(plan.powerful[i], rank < 16, "rank {rank}");
        }
        for (i, s) in servers.iter().enumerate() {
            if s.type_name == "D" {
                assert!(plan.powerful[i]);
            }
        }
        // More CPU per slot on every powerful server than on any normal one.
        let per_slot = |i: usize| servers[i].capacity / f64::from(plan.slots[i]);
        let min_powerful = (0..servers.len())
            .filter(|&i| plan.powerful[i])
            .map(per_slot)
            .fold(f64::INFINITY, f64::min);
        let max_normal = (0..servers.len())
            .filter(|&i| !plan.powerful[i])
            .map(per_slot)
            .fold(0.0, f64::max);
        assert!(min_powerful > max_normal);
    }

    #[test]
    fn phase_two_keeps_both_groups_served() {
        let servers = vec![server("A", 8, 1.0, 1.0), server("B", 8, 1.0, 0.5)];
        // Production is a sliver of the occupancy: still one server.
        let sliver = [
            class(9, 0.001, 1.0, 0.01, 0.0),
            class(0, 0.999, 1.0, 0.01, 0.0),
        ];
        let (plan, _) = wasc(&sliver, Groups::default(), &servers).unwrap();
        assert_eq!(plan.powerful, vec![true, false]);
        // Production is nearly everything: one server stays non-production.
        let bulk = [
            class(9, 0.999, 1.0, 0.01, 0.0),
            class(0, 0.001, 1.0, 0.01, 0.0),
        ];
        let (plan, _) = wasc(&bulk, Groups::default(), &servers).unwrap();
        assert_eq!(plan.powerful, vec![true, false]);
    }

    #[test]
    fn render_table_lists_types_and_total() {
        let servers = thesis_cluster();
        let (plan, _) = wasc(&table_5_2_stats(1.0), Groups::default(), &servers).unwrap();
        let table = plan.render_table(&servers, "WASC on the thesis cluster");
        assert!(table.starts_with("WASC on the thesis cluster\n"));
        for t in [
            "| A ", "| B ", "| C ", "| D ", "| total ", "powerful", "normal",
        ] {
            assert!(table.contains(t), "{t} missing in\n{table}");
        }
        assert!(table.contains(&format!(" {} |", plan.total_slots())));
        // Title, header, rule, A, B, C, D powerful, D normal, total.
        assert_eq!(table.lines().count(), 9, "{table}");
        let widths: Vec<usize> = table.lines().skip(1).map(|l| l.chars().count()).collect();
        assert!(widths.iter().all(|&w| w == widths[0]), "{table}");

        let sc2 = cpu_based(2, &servers).unwrap();
        let table = sc2.render_table(&servers, "SC2");
        assert!(table.contains("| total "));
        assert!(table.contains(" 2128 |"));
        assert!(!table.contains("powerful"));
    }

    #[test]
    fn deterministic_and_independent_of_server_order() {
        let servers = thesis_cluster();
        let stats = table_5_2_stats(1.0);
        let a = wasc(&stats, Groups::default(), &servers).unwrap();
        let b = wasc(&stats, Groups::default(), &servers).unwrap();
        assert_eq!(a, b);
        let mut reversed = servers.clone();
        reversed.reverse();
        let (plan_r, _) = wasc(&stats, Groups::default(), &reversed).unwrap();
        assert_eq!(plan_r.total_slots(), a.0.total_slots());
        assert_eq!(plan_r.powerful_count(), a.0.powerful_count());
    }
}
