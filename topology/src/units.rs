//! Units of the physical model.
//!
//! Virtual time is an integer count of nanoseconds ([`SimTime`]); no model
//! code ever sees floating-point time (MODEL.md §2). Scenario files write
//! durations as strings with a unit (`"30s"`, `"5ms"`, `"15h"`, `"1.5s"`),
//! which [`Duration`] parses exactly.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in virtual time: nanoseconds since the start of the run.
pub type SimTime = u64;

/// A non-negative span of virtual time with nanosecond resolution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

/// Units accepted in duration strings, largest first (display picks the
/// largest one that divides the value exactly).
const UNITS: &[(&str, u64)] = &[
    ("d", 86_400_000_000_000),
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// Extra spellings accepted on input.
const ALIASES: &[(&str, u64)] = &[("min", 60_000_000_000), ("µs", 1_000)];

/// Why a duration string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0:?}: durations cannot be negative")]
    Negative(String),
    #[error(
        "invalid duration {0:?}: expected a number followed by a unit (ns, us, ms, s, m, h, d), e.g. \"30s\""
    )]
    Malformed(String),
    #[error("invalid duration {0:?}: unknown unit {1:?} (use ns, us, ms, s, m, h or d)")]
    UnknownUnit(String, String),
    #[error("invalid duration {0:?}: finer than the 1 ns resolution of virtual time")]
    TooFine(String),
    #[error("invalid duration {0:?}: does not fit in 64-bit nanoseconds (about 584 years)")]
    Overflow(String),
}

impl Duration {
    pub const ZERO: Duration = Duration(0);

    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reporting only (never for model time).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let s = raw.trim();
        if s.starts_with('-') {
            return Err(DurationError::Negative(raw.to_string()));
        }
        match parse_scaled(s, &[UNITS, ALIASES]) {
            Ok(ns) => Ok(Duration(ns)),
            Err(ScaledError::MissingUnit { zero: true }) => Ok(Duration::ZERO),
            Err(ScaledError::MissingUnit { zero: false } | ScaledError::Malformed) => {
                Err(DurationError::Malformed(raw.to_string()))
            }
            Err(ScaledError::UnknownUnit(unit)) => {
                Err(DurationError::UnknownUnit(raw.to_string(), unit))
            }
            Err(ScaledError::TooFine) => Err(DurationError::TooFine(raw.to_string())),
            Err(ScaledError::Overflow) => Err(DurationError::Overflow(raw.to_string())),
        }
    }
}

/// Why [`parse_scaled`] refused a quantity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScaledError {
    Malformed,
    /// A number without a unit; `zero` if the number was zero.
    MissingUnit {
        zero: bool,
    },
    UnknownUnit(String),
    /// The quantity is not a whole number of the smallest unit.
    TooFine,
    Overflow,
}

/// Parses a non-negative decimal with a unit (`"1.5s"`, `"2.5Gbps"`,
/// `"1_000ms"`) exactly into a count of the smallest unit, refusing what
/// would need rounding. `units` lists unit names with their scales.
pub(crate) fn parse_scaled(s: &str, units: &[&[(&str, u64)]]) -> Result<u64, ScaledError> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (number, unit) = (&s[..split], s[split..].trim());
    let number: String = number.chars().filter(|&c| c != '_').collect();
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(ScaledError::Malformed);
    }
    if unit.is_empty() {
        let zero = number.chars().all(|c| c == '0' || c == '.');
        return Err(ScaledError::MissingUnit { zero });
    }
    let scale = units
        .iter()
        .flat_map(|list| list.iter())
        .find(|(name, _)| *name == unit)
        .map(|&(_, scale)| scale)
        .ok_or_else(|| ScaledError::UnknownUnit(unit.to_string()))?;
    let (whole, frac) = number.split_once('.').unwrap_or((&number, ""));
    if frac.contains('.') {
        return Err(ScaledError::Malformed);
    }
    let whole: u64 = whole.parse().map_err(|_| ScaledError::Overflow)?;
    let mut total = whole.checked_mul(scale).ok_or(ScaledError::Overflow)?;
    if !frac.is_empty() {
        let digits = u32::try_from(frac.len()).map_err(|_| ScaledError::Overflow)?;
        let denom = 10u128.checked_pow(digits).ok_or(ScaledError::TooFine)?;
        let frac_val: u128 = frac.parse().map_err(|_| ScaledError::Overflow)?;
        let scaled = frac_val * u128::from(scale);
        if scaled % denom != 0 {
            return Err(ScaledError::TooFine);
        }
        let extra = u64::try_from(scaled / denom).map_err(|_| ScaledError::Overflow)?;
        total = total.checked_add(extra).ok_or(ScaledError::Overflow)?;
    }
    Ok(total)
}

impl fmt::Display for Duration {
    /// The canonical form: the largest unit that represents the value exactly,
    /// so `"90s"` stays `90s` and `"3600s"` prints as `1h`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0s");
        }
        let (name, scale) = UNITS
            .iter()
            .find(|(_, scale)| self.0 % scale == 0)
            .copied()
            .unwrap_or(("ns", 1));
        write!(f, "{}{name}", self.0 / scale)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string with a unit, e.g. \"30s\", \"5ms\" or \"15h\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "invalid duration {v}: write durations as strings with a unit, e.g. \"{v}s\""
                )))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Duration, E> {
                self.visit_i64(v as i64)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "invalid duration {v}: write durations as strings with a unit, e.g. \"{v}s\""
                )))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Formats virtual time for people: `1h 2m 3.5s`, `250ms`, `0s`.
pub fn format_sim_time(t: SimTime) -> String {
    let secs = t / 1_000_000_000;
    let sub = t % 1_000_000_000;
    if secs == 0 {
        return if sub == 0 {
            "0s".into()
        } else if sub % 1_000_000 == 0 {
            format!("{}ms", sub / 1_000_000)
        } else if sub % 1_000 == 0 {
            format!("{}us", sub / 1_000)
        } else {
            format!("{sub}ns")
        };
    }
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h "));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m "));
    }
    if sub == 0 {
        out.push_str(&format!("{s}s"));
    } else {
        let frac = format!("{sub:09}");
        out.push_str(&format!("{s}.{}s", frac.trim_end_matches('0')));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Result<u64, DurationError> {
        s.parse::<Duration>().map(Duration::as_nanos)
    }

    #[test]
    fn parses_every_unit_exactly() {
        assert_eq!(d("30s"), Ok(30_000_000_000));
        assert_eq!(d("5ms"), Ok(5_000_000));
        assert_eq!(d("15h"), Ok(15 * 3_600_000_000_000));
        assert_eq!(d("2d"), Ok(2 * 86_400_000_000_000));
        assert_eq!(d("3m"), Ok(180_000_000_000));
        assert_eq!(d("3min"), Ok(180_000_000_000));
        assert_eq!(d("7us"), Ok(7_000));
        assert_eq!(d("7µs"), Ok(7_000));
        assert_eq!(d("9ns"), Ok(9));
        assert_eq!(d("0"), Ok(0));
        assert_eq!(d("1_000ms"), Ok(1_000_000_000));
    }

    #[test]
    fn parses_decimals_without_rounding() {
        assert_eq!(d("1.5s"), Ok(1_500_000_000));
        assert_eq!(d("0.25ms"), Ok(250_000));
        assert_eq!(d("1.000000001s"), Ok(1_000_000_001));
        assert!(matches!(d("0.5ns"), Err(DurationError::TooFine(_))));
    }

    #[test]
    fn refuses_bad_input_with_a_reason() {
        assert!(matches!(d("-5s"), Err(DurationError::Negative(_))));
        assert!(matches!(d("abc"), Err(DurationError::Malformed(_))));
        assert!(matches!(d("5"), Err(DurationError::Malformed(_))));
        assert!(matches!(d(""), Err(DurationError::Malformed(_))));
        assert!(matches!(d("1.2.3s"), Err(DurationError::Malformed(_))));
        assert!(matches!(d(".5s"), Err(DurationError::Malformed(_))));
        assert!(matches!(
            d("5 parsecs"),
            Err(DurationError::UnknownUnit(..))
        ));
        assert!(matches!(d("99999999999d"), Err(DurationError::Overflow(_))));
        let msg = d("-5s").unwrap_err().to_string();
        assert!(msg.contains("negative"), "{msg}");
    }

    #[test]
    fn display_round_trips_in_canonical_form() {
        for (input, canonical) in [
            ("90s", "90s"),
            ("3600s", "1h"),
            ("1.5s", "1500ms"),
            ("0ms", "0s"),
        ] {
            let parsed: Duration = input.parse().unwrap();
            assert_eq!(parsed.to_string(), canonical);
            assert_eq!(canonical.parse::<Duration>().unwrap(), parsed);
        }
    }

    #[test]
    fn deserializes_from_toml_strings_only() {
        #[derive(Deserialize)]
        struct T {
            #[allow(dead_code)]
            x: Duration,
        }
        assert!(toml::from_str::<T>("x = \"5s\"").is_ok());
        let err = toml::from_str::<T>("x = 5").err().unwrap().to_string();
        assert!(err.contains("\"5s\""), "{err}");
    }

    #[test]
    fn formats_sim_time_for_people() {
        assert_eq!(format_sim_time(0), "0s");
        assert_eq!(format_sim_time(250_000_000), "250ms");
        assert_eq!(format_sim_time(3_723_500_000_000), "1h 2m 3.5s");
        assert_eq!(format_sim_time(61_000_000_000), "1m 1s");
    }
}
