//! Link capacity.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::units::parse_scaled;

/// A link capacity in bits per second. Scenario files write it as a string
/// with a unit: `"10Gbps"`, `"1Gbps"`, `"100Mbps"`, `"2.5Gbps"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bandwidth(u64);

const UNITS: &[(&str, u64)] = &[
    ("Tbps", 1_000_000_000_000),
    ("Gbps", 1_000_000_000),
    ("Mbps", 1_000_000),
    ("kbps", 1_000),
    ("bps", 1),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid bandwidth {0:?}: expected a positive number with a unit (bps, kbps, Mbps, Gbps, Tbps), e.g. \"10Gbps\""
)]
pub struct BandwidthError(String);

impl Bandwidth {
    pub const fn from_bps(bps: u64) -> Self {
        Bandwidth(bps)
    }
    pub const fn from_mbps(m: u64) -> Self {
        Bandwidth(m * 1_000_000)
    }
    pub const fn from_gbps(g: u64) -> Self {
        Bandwidth(g * 1_000_000_000)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }

    /// Time to put `bytes` on the wire, rounded up to the next nanosecond.
    pub fn serialization_ns(self, bytes: u64) -> u64 {
        if self.0 == 0 {
            return u64::MAX;
        }
        let bits = u128::from(bytes) * 8 * 1_000_000_000;
        u64::try_from(bits.div_ceil(u128::from(self.0))).unwrap_or(u64::MAX)
    }
}

impl FromStr for Bandwidth {
    type Err = BandwidthError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        match parse_scaled(raw.trim(), &[UNITS]) {
            Ok(bps) if bps > 0 => Ok(Bandwidth(bps)),
            _ => Err(BandwidthError(raw.to_string())),
        }
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, scale) = UNITS
            .iter()
            .find(|(_, scale)| self.0 % scale == 0)
            .copied()
            .unwrap_or(("bps", 1));
        write!(f, "{}{name}", self.0 / scale)
    }
}

impl Serialize for Bandwidth {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Bandwidth {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_canonically() {
        assert_eq!("10Gbps".parse::<Bandwidth>().unwrap().bps(), 10_000_000_000);
        assert_eq!("2.5Gbps".parse::<Bandwidth>().unwrap().bps(), 2_500_000_000);
        assert_eq!(
            "100Mbps".parse::<Bandwidth>().unwrap().to_string(),
            "100Mbps"
        );
        assert_eq!(
            "1000Mbps".parse::<Bandwidth>().unwrap().to_string(),
            "1Gbps"
        );
        for bad in [
            "",
            "10",
            "10 gigs",
            "0Gbps",
            "-1Gbps",
            "1.2.3Gbps",
            "0.0000000001bps",
        ] {
            assert!(bad.parse::<Bandwidth>().is_err(), "{bad}");
        }
    }

    #[test]
    fn serialization_delay_rounds_up() {
        let gig = Bandwidth::from_gbps(1);
        assert_eq!(gig.serialization_ns(125), 1_000);
        assert_eq!(gig.serialization_ns(1), 8);
        assert_eq!(Bandwidth::from_bps(3).serialization_ns(1), 2_666_666_667);
    }
}
