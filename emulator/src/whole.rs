//! Whole-number flags (`--seed`, `--partitions`, `--jobs`), refused in a
//! user's words: `--seed -1` is "a whole number from 0 to …", not clap's
//! advice to write `-- -1` nor Rust's "invalid digit found in string".

use std::ffi::OsStr;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;

/// A whole number within `lo..=hi`. Flags using it also set
/// `allow_negative_numbers`, so that a negative one reaches it.
#[derive(Clone, Copy, Debug)]
pub struct Whole {
    lo: u64,
    hi: u64,
}

impl Whole {
    pub const fn new(lo: u64, hi: u64) -> Self {
        Whole { lo, hi }
    }

    /// The same for a `u32` flag (`hi` must fit one).
    pub fn as_u32(self) -> impl TypedValueParser<Value = u32> {
        self.map(|v| u32::try_from(v).unwrap_or(u32::MAX))
    }

    /// The value `text` stands for, or why it is refused.
    pub fn check(&self, text: &str) -> Result<u64, String> {
        let t = text.trim();
        let range = format!("a whole number from {} to {}", self.lo, self.hi);
        match t.parse::<i128>() {
            Ok(v) if (i128::from(self.lo)..=i128::from(self.hi)).contains(&v) => Ok(v as u64),
            Ok(_) => Err(format!("{t} is out of range: {range} is expected")),
            Err(_) => Err(format!("{t:?} is not {range}")),
        }
    }
}

impl TypedValueParser for Whole {
    type Value = u64;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<u64, clap::Error> {
        let text = value.to_string_lossy();
        self.check(&text).map_err(|why| {
            let flag = arg.map_or_else(|| "a flag".to_string(), |a| format!("'{a}'"));
            clap::Error::raw(
                ErrorKind::ValueValidation,
                format!("invalid value '{text}' for {flag}: {why}\n"),
            )
            .with_cmd(cmd)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_out_of_range_or_not_numbers_are_refused_in_words() {
        let seed = Whole::new(0, 10);
        assert_eq!(seed.check("7"), Ok(7));
        assert_eq!(
            seed.check("-1"),
            Err("-1 is out of range: a whole number from 0 to 10 is expected".into())
        );
        assert_eq!(
            seed.check("x2"),
            Err("\"x2\" is not a whole number from 0 to 10".into())
        );
    }
}
