//! `[storage]`: replicated blocks and where the name node places them
//! (harvesting §4.2, §5.1).

use serde::{Deserialize, Serialize};

use super::Problem;

/// `[storage]`: harvested block storage and its name node (harvesting §4.2,
/// §5.1, §5.4, §6.4). Every field is documented in `scenarios/README.md`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// Replica placement: stock HDFS, HDFS-PT or HDFS-H.
    #[serde(default)]
    pub placement: StoragePlacement,
    /// Replicas per block (§6.4 studies 3 and 4).
    #[serde(default = "default_storage_replicas")]
    pub replicas: u32,
    /// Blocks created at time 0, each by a random server.
    pub blocks: u64,
    /// Size of a block, MB (HDFS: 256, §5.1).
    #[serde(default = "default_block_mb")]
    pub block_mb: u64,
    /// Re-replication budget per source server, blocks per hour (§5.1: 30).
    #[serde(default = "default_rereplicate")]
    pub rereplicate_per_hour: u32,
    /// Client reads of uniformly random blocks per second (0: none).
    #[serde(default)]
    pub read_rate_per_s: f64,
    /// A data node is busy (denies accesses, §5.4) while its primary tenant
    /// uses more than this share of its cores; default: while it eats into
    /// its reserve (more than cores − reserve_cores in use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_above: Option<f64>,
    /// Servers per rack in a flat network (three-tier: the access switch).
    #[serde(default = "default_rack_size")]
    pub rack_size: u32,
}

/// `storage.placement`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoragePlacement {
    /// Rack-aware default of stock HDFS (§5.1), blind to primary tenants.
    #[default]
    HdfsStock,
    /// The same, never on (or from) a busy data node (§5.4).
    HdfsPt,
    /// Algorithm 2 (§4.2) on top of HDFS-PT's busy awareness.
    HdfsH,
}

impl StoragePlacement {
    pub fn name(self) -> &'static str {
        match self {
            StoragePlacement::HdfsStock => "hdfs-stock",
            StoragePlacement::HdfsPt => "hdfs-pt",
            StoragePlacement::HdfsH => "hdfs-h",
        }
    }

    /// Whether busy data nodes are left out as destinations and sources.
    pub fn avoids_busy(self) -> bool {
        self != StoragePlacement::HdfsStock
    }
}

/// Most replicas per block.
pub const MAX_REPLICAS: u32 = 8;

/// Most replicas a run may hold in all (memory guard: 4 bytes each, twice).
pub const MAX_STORED_REPLICAS: u64 = 200_000_000;

fn default_storage_replicas() -> u32 {
    3
}

fn default_block_mb() -> u64 {
    256
}

fn default_rereplicate() -> u32 {
    30
}

fn default_rack_size() -> u32 {
    20
}

impl StorageConfig {
    /// Field problems, relative to `storage`.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out: Vec<Problem> = Vec::new();
        if !(1..=MAX_REPLICAS).contains(&self.replicas) {
            out.push((
                "replicas".into(),
                format!(
                    "must be between 1 and {MAX_REPLICAS}, got {}",
                    self.replicas
                ),
            ));
        }
        if self.blocks > u64::from(u32::MAX - 1) {
            out.push((
                "blocks".into(),
                format!("must be below {}, got {}", u32::MAX - 1, self.blocks),
            ));
        } else if self.blocks.saturating_mul(u64::from(self.replicas)) > MAX_STORED_REPLICAS {
            out.push((
                "blocks".into(),
                format!(
                    "{} blocks × {} replicas exceed the limit of {MAX_STORED_REPLICAS} replicas",
                    self.blocks, self.replicas
                ),
            ));
        }
        if self.block_mb == 0 {
            out.push(("block_mb".into(), "must be at least 1".into()));
        }
        if !(1..=3600).contains(&self.rereplicate_per_hour) {
            out.push((
                "rereplicate_per_hour".into(),
                format!(
                    "must be between 1 and 3600 blocks per hour per server, got {}",
                    self.rereplicate_per_hour
                ),
            ));
        }
        if !(self.read_rate_per_s.is_finite() && (0.0..=1e6).contains(&self.read_rate_per_s)) {
            out.push((
                "read_rate_per_s".into(),
                format!(
                    "must be between 0 and 1000000 reads per second, got {}",
                    self.read_rate_per_s
                ),
            ));
        }
        if let Some(b) = self
            .busy_above
            .filter(|b| !(b.is_finite() && (0.0..=1.0).contains(b)))
        {
            out.push((
                "busy_above".into(),
                format!("must be between 0 and 1 (a share of the cores), got {b}"),
            ));
        }
        if self.rack_size == 0 {
            out.push(("rack_size".into(), "must be at least 1".into()));
        }
        out
    }
}
