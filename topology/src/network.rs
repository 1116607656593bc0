//! How long a message takes between two actors.
//!
//! The foundation models a flat network: every pair of actors is one link
//! apart with the same propagation latency. That latency is also the engine's
//! lookahead `L` (MODEL.md §2), so it can never be zero. The 3-tier network
//! with switch actors replaces this module's `Flat` kind with hop-by-hop paths.

use serde::{Deserialize, Serialize};

use crate::units::{Duration, SimTime};

/// `[topology]` in a scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyConfig {
    /// Network shape. Only `flat` exists today.
    #[serde(default)]
    pub kind: TopologyKind,
    /// Propagation latency of one link; every message crosses at least one.
    #[serde(default = "default_link_latency")]
    pub link_latency: Duration,
}

fn default_link_latency() -> Duration {
    Duration::from_micros(50)
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig {
            kind: TopologyKind::default(),
            link_latency: default_link_latency(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// Every actor one link away from every other.
    #[default]
    Flat,
}

impl TopologyConfig {
    /// Problems with the values (the shape was already checked by serde), as
    /// `(field, problem)` pairs relative to `[topology]`.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.link_latency == Duration::ZERO {
            out.push((
                "link_latency",
                "must be greater than 0: it is the engine's lookahead and a zero lookahead \
                 would make windows empty"
                    .to_string(),
            ));
        }
        out
    }
}

/// The network a run uses, built from [`TopologyConfig`].
#[derive(Clone, Debug)]
pub struct Network {
    link_latency: SimTime,
}

impl Network {
    pub fn build(config: &TopologyConfig) -> Self {
        Network {
            link_latency: config.link_latency.as_nanos(),
        }
    }

    /// Latency of a message from one actor to another (by their actor ids).
    pub fn latency(&self, _from: u32, _to: u32) -> SimTime {
        self.link_latency
    }

    /// The smallest latency any message between two distinct actors can have:
    /// the lookahead `L` of the window protocol.
    pub fn min_latency(&self) -> SimTime {
        self.link_latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_latency_is_refused() {
        let cfg = TopologyConfig {
            link_latency: Duration::ZERO,
            ..TopologyConfig::default()
        };
        assert_eq!(cfg.problems()[0].0, "link_latency");
    }

    #[test]
    fn flat_network_is_one_link_everywhere() {
        let net = Network::build(&TopologyConfig::default());
        assert_eq!(net.latency(0, 7), 50_000);
        assert_eq!(net.min_latency(), 50_000);
    }
}
