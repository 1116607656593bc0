//! Harvested storage and its name node (harvesting §4.2, §5.1, §5.4, §6.4):
//! determinism across partitionings, errors that name the `[storage]` field,
//! and the durability and availability orderings of the placements on a
//! shortened `harvest/durability-year.toml`.

use std::path::Path;

use dcemu::run::Outcome;
use dcemu::scenario::{Override, load};
use dcemu_tests::{kind, log, metric, run_with, scenario, t};

const STORAGE: &str = "[storage]\nblocks = 20000\nread_rate_per_s = 0.5\nrack_size = 8\n";

/// 120 servers of 12 cores (4 in reserve) in 12 primary tenants (p0, p3
/// and p6, of one reimage rate, share an environment), 20 more servers
/// unowned; 20,000 blocks.
fn small(extra_storage: &str, topology: &str) -> String {
    let mut tenants = String::new();
    for t in 0..12 {
        let pattern = match t % 3 {
            0 => "pattern = \"periodic\", mean = 0.45, amplitude = 0.3, period = \"1d\"",
            1 => "pattern = \"constant\", mean = 0.2",
            _ => "pattern = \"unpredictable\", mean = 0.2, spikes_per_day = 6.0, spike_util = 0.95",
        };
        let env = if [0, 3, 6].contains(&t) {
            ", environment = \"shared\""
        } else {
            ""
        };
        tenants.push_str(&format!(
            "  {{ name = \"p{t}\", servers = 10, {pattern}, update_interval = \"30m\", reimages_per_month = {}, reimage_correlation = 0.2{env} }},\n",
            [0.2, 1.0, 4.0][t % 3]
        ));
    }
    format!(
        r#"
primary_tenants = [
{tenants}]

[run]
name = "storage-small"
end = "20d"

{topology}

{STORAGE}{extra_storage}

[[server_types]]
name = "box"
count = 140
cores = 12
slots = 6
disk_gb = 1000.0

[[tenants]]
name = "batch"
arrivals = {{ process = "poisson", rate_per_s = 0.001 }}
service = {{ distribution = "exponential", mean = "20m" }}
"#
    )
}

#[test]
fn storage_runs_give_the_same_digest_on_one_or_two_partitions() {
    let three_tier = "[topology]\nkind = \"three-tier\"\ncore = 1\naggregation = 2\naccess = 10";
    for (placement, topology) in [("hdfs-h", ""), ("hdfs-stock", three_tier), ("hdfs-pt", "")] {
        let text = small(&format!("placement = \"{placement}\""), topology);
        let s = scenario("small.toml", &text, &[]);
        let one = run_with(&s, 1);
        let two = run_with(&s, 2);
        assert_eq!(one.digest, two.digest, "{placement}");
        assert_eq!(one.events, two.events);
        let m = |k: &str| metric(&one, k);
        assert_eq!(m("blocks_total"), 20_000.0);
        assert!(
            m("reimages") > 0.0 && m("replicas_rereplicated") > 0.0,
            "{placement}"
        );
        assert!(m("block_reads") > 100_000.0);
        assert!(
            m("datanode_busy_reports") > 0.0,
            "{placement}: no busy data node"
        );
        // the name node's ledger: every replica is stored or was destroyed
        assert_eq!(
            m("replicas_end") + m("replicas_lost_reimage"),
            3.0 * m("blocks_total") + m("replicas_rereplicated") - m("replicas_unplaced"),
            "{placement}"
        );
        let nn = log(&one, "namenode");
        assert_eq!(kind(&nn, "storage_init").len(), 1);
        let reported = kind(&nn, "datanode_reimaged").len() as f64;
        assert!(
            reported <= m("reimages") && reported + 10.0 >= m("reimages"),
            "{placement}: every reimage reaches the name node (bar the last in flight)"
        );
        if placement == "hdfs-h" {
            assert!(!kind(&nn, "storage_classes").is_empty());
        }
        // copies happen on ticks of 1h / 30: one block per source each
        let ticks: Vec<u64> = kind(&nn, "rereplicate").iter().map(|v| t(v)).collect();
        assert!(!ticks.is_empty());
        assert!(
            ticks.iter().all(|t| t % 120_000_000_000 == 0),
            "{placement}"
        );
        assert!(ticks.windows(2).all(|w| w[0] < w[1]));
    }
}

#[test]
fn hdfs_h_with_four_replicas_in_a_small_cluster() {
    let text = small("placement = \"hdfs-h\"\nreplicas = 4", "");
    let o = run_with(&scenario("small.toml", &text, &[]), 1);
    let m = |k: &str| metric(&o, k);
    assert_eq!(
        m("replicas_end") + m("replicas_lost_reimage"),
        4.0 * m("blocks_total") + m("replicas_rereplicated") - m("replicas_unplaced")
    );
    assert_eq!(m("replicas_unplaced"), 0.0);
    assert!(
        m("replicas_relaxed") < 0.01 * m("replicas_end"),
        "13 environments in 9 classes rarely force a repeated row or column"
    );
}

fn errors(overrides: &[&str]) -> String {
    let text = small("", "");
    let overrides: Vec<Override> = overrides.iter().map(|s| s.parse().unwrap()).collect();
    match load("small.toml", &text, &overrides) {
        Ok(_) => panic!("{overrides:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_storage_input_is_an_error_naming_the_field() {
    for (set, field) in [
        ("storage.replicas=0", "storage.replicas"),
        ("storage.replicas=9", "storage.replicas"),
        ("storage.placement=hdfs-x", "storage.placement"),
        ("storage.block_mb=0", "storage.block_mb"),
        (
            "storage.rereplicate_per_hour=0",
            "storage.rereplicate_per_hour",
        ),
        (
            "storage.rereplicate_per_hour=4000",
            "storage.rereplicate_per_hour",
        ),
        ("storage.read_rate_per_s=-1", "storage.read_rate_per_s"),
        ("storage.read_rate_per_s=nan", "storage.read_rate_per_s"),
        ("storage.busy_above=1.5", "storage.busy_above"),
        ("storage.rack_size=0", "storage.rack_size"),
        ("storage.blocks=100000000000", "storage.blocks"),
        ("storage.blocks=-3", "storage.blocks"),
        ("storage.blocks=600000", "storage.blocks"),
        ("storage.colour=blue", "storage.colour"),
        (
            "primary_tenants.0.environment=a b",
            "primary_tenants[0].environment",
        ),
    ] {
        let e = errors(&[set]);
        assert!(e.contains(&format!("`{field}`")), "{set}: {e}");
    }
    // a scenario without [storage] set from the command line needs `blocks`
    let text = small("", "").replace(STORAGE, "");
    assert!(!text.contains("[storage]"));
    let e = load(
        "small.toml",
        &text,
        &["storage.replicas=4".parse().unwrap()],
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(e.contains("storage.blocks"), "{e}");
}

/// `harvest/durability-year.toml` shortened: `days` of reimages over
/// `blocks` blocks.
fn durability(placement: &str, replicas: u32, days: u32, blocks: u32, seed: u32) -> Outcome {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/harvest/durability-year.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let sets = [
        format!("storage.placement={placement}"),
        format!("storage.replicas={replicas}"),
        format!("storage.blocks={blocks}"),
        format!("run.end={days}d"),
        format!("run.seed={seed}"),
    ];
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    run_with(&scenario(&path.display().to_string(), &text, &sets), 1)
}

#[test]
fn hdfs_h_loses_an_order_of_magnitude_fewer_blocks_than_stock() {
    let stock = durability("hdfs-stock", 3, 60, 200_000, 1);
    let h = durability("hdfs-h", 3, 60, 200_000, 1);
    let (ls, lh) = (metric(&stock, "blocks_lost"), metric(&h, "blocks_lost"));
    assert!(
        ls >= 100.0,
        "stock placement loses blocks to correlated reimages: {ls}"
    );
    assert!(lh * 10.0 <= ls, "hdfs-h lost {lh}, hdfs-stock {ls}");
}

#[test]
fn hdfs_h_with_four_replicas_loses_nothing() {
    let h4 = durability("hdfs-h", 4, 60, 200_000, 1);
    assert_eq!(metric(&h4, "blocks_lost"), 0.0);
    assert!(
        metric(&h4, "replicas_rereplicated") > 100_000.0,
        "reimages were many"
    );
}

#[test]
fn hdfs_h_fails_no_more_reads_than_pt() {
    let pt = durability("hdfs-pt", 3, 60, 200_000, 1);
    let h = durability("hdfs-h", 3, 60, 200_000, 1);
    let (fp, fh) = (
        metric(&pt, "failed_accesses"),
        metric(&h, "failed_accesses"),
    );
    assert!(fp > 0.0, "hdfs-pt leaves some blocks on busy tenants only");
    assert!(fh <= fp, "failed accesses: hdfs-h {fh}, hdfs-pt {fp}");
    assert!(
        metric(&h, "failed_accesses_busy") <= metric(&pt, "failed_accesses_busy"),
        "unavailability alone"
    );
}
