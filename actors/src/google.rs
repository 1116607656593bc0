//! Per-priority statistics of the Google cluster trace (thesis Table 5.2),
//! as a generator of task demands.
//!
//! Each submission draws its priority class in proportion to the class's
//! share of tasks, then an exponential execution time whose mean is the
//! class's CPU demand over its CPU usage (the time it takes to consume its
//! demand at its usage rate), and a memory demand equal to the class's mean
//! normalised memory usage times the memory of the reference (largest)
//! machine. Class 7 has no demand figures in the table and is left out; the
//! classes with "≤ 0.01 %" of tasks are given 0.01 %.

use rand::RngCore;

use crate::sampling::{exponential, uniform_open0};

/// One row of Table 5.2: class, share of tasks (%), CPU demand (cpu·s),
/// memory demand (ram·s), CPU usage, memory usage (both normalised).
pub const TABLE_5_2: [(u8, f64, f64, f64, f64, f64); 11] = [
    (0, 23.29, 15.408, 9.1068, 0.0066832, 0.0035707),
    (1, 12.78, 40.758, 33.47, 0.012176, 0.0049097),
    (2, 0.39, 382.12, 204.4, 0.018668, 0.0061447),
    (3, 0.01, 0.24663, 0.025122, 0.0034657, 0.00036929),
    (4, 59.94, 49.768, 27.721, 0.019338, 0.0064713),
    (5, 0.01, 0.15221, 0.023401, 0.0034661, 0.00041077),
    (6, 1.28, 12.628, 4.6929, 0.020213, 0.00298),
    (8, 1.10, 25.975, 39.625, 0.0037737, 0.003922),
    (9, 1.19, 269.47, 230.65, 0.0071297, 0.0042992),
    (10, 0.01, 66.186, 85.448, 0.0092705, 0.0042258),
    (11, 0.01, 1506.8, 1413.6, 0.010355, 0.014984),
];

/// A task drawn from Table 5.2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoogleTask {
    pub priority: u8,
    pub service_s: f64,
    pub memory_gb: f64,
}

/// Mean execution time of a class, in seconds: CPU demand / CPU usage.
pub fn mean_service_s(row: &(u8, f64, f64, f64, f64, f64)) -> f64 {
    row.2 / row.4
}

/// Draws one task; `reference_memory_gb` is the memory normalised usage 1.0 stands for.
pub fn draw(rng: &mut impl RngCore, reference_memory_gb: f64) -> GoogleTask {
    let total: f64 = TABLE_5_2.iter().map(|r| r.1).sum();
    let mut pick = uniform_open0(rng) * total;
    let mut chosen = &TABLE_5_2[TABLE_5_2.len() - 1];
    for row in &TABLE_5_2 {
        if pick <= row.1 {
            chosen = row;
            break;
        }
        pick -= row.1;
    }
    GoogleTask {
        priority: chosen.0,
        service_s: exponential(rng, mean_service_s(chosen)),
        memory_gb: chosen.5 * reference_memory_gb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    #[test]
    fn classes_come_in_the_tables_proportions() {
        let mut rng = actor_rng(1, "google");
        let n = 100_000;
        let mut counts = [0u32; 12];
        for _ in 0..n {
            counts[draw(&mut rng, 64.0).priority as usize] += 1;
        }
        let share = |p: usize| f64::from(counts[p]) / n as f64 * 100.0;
        assert!((share(4) - 59.94).abs() < 0.6, "{}", share(4));
        assert!((share(0) - 23.29).abs() < 0.5, "{}", share(0));
        assert!((share(1) - 12.78).abs() < 0.4, "{}", share(1));
        assert_eq!(counts[7], 0, "class 7 has no demand figures");
    }

    #[test]
    fn high_classes_run_longer_and_use_more_memory() {
        let class = |p: u8| TABLE_5_2.iter().find(|r| r.0 == p).copied().unwrap();
        assert!((mean_service_s(&class(0)) - 15.408 / 0.0066832).abs() < 1e-9);
        assert!(mean_service_s(&class(11)) > 50.0 * mean_service_s(&class(0)));
        assert!(class(11).5 > class(0).5);
    }
}
