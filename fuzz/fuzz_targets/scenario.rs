//! The scenario loader (`dcemu::scenario::load`) and the `--set` parser
//! (`Override: FromStr`) on arbitrary text. Lines of the input that start
//! with `#--set ` (TOML comments, so the file stays the same TOML) are also
//! parsed as `--set` flags and applied. Beyond "no panic", checks that:
//! - a parsed `--set` flag prints back to itself and parses to the same flag;
//!   a refused one gets a message naming the flag;
//! - a refused scenario gets at least one error, each naming the file (with
//!   a line and column inside it) or the `--set` flag to blame, and saying
//!   what is wrong;
//! - an accepted scenario has no problems, and written out with
//!   `Scenario::to_toml()` it loads again to an equal scenario.
#![no_main]

use dcemu::scenario::{Origin, Override, load};
use libfuzzer_sys::fuzz_target;

const LABEL: &str = "fuzz/scenario.toml";
const SET: &str = "#--set ";
/// More flags than this add time, not coverage.
const MAX_SETS: usize = 8;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut overrides = Vec::new();
    for flag in text
        .lines()
        .filter_map(|l| l.strip_prefix(SET))
        .take(MAX_SETS)
    {
        match flag.parse::<Override>() {
            Ok(o) => {
                let shown = o.to_string();
                assert_eq!(shown.parse::<Override>().as_ref(), Ok(&o), "{shown}");
                assert!(!o.key.is_empty());
                overrides.push(o);
            }
            Err(e) => assert!(e.starts_with(&format!("--set {flag}: ")), "{e}"),
        }
    }
    let lines = text.lines().count().max(1) + 1;
    match load(LABEL, text, &overrides) {
        Ok(scenario) => {
            assert!(scenario.problems().is_empty(), "{:?}", scenario.problems());
            // Traces are read from files and renamed to where the results
            // keep them; a scenario with one cannot load from its own TOML.
            if scenario.traces.iter().all(Option::is_none) {
                let written = scenario.to_toml();
                let again = load("fuzz/written.toml", &written, &[]).unwrap_or_else(|e| {
                    panic!("an accepted scenario must load from its TOML: {e}\n{written}")
                });
                assert_eq!(again, scenario, "written out and read back\n{written}");
            }
        }
        Err(errors) => {
            assert!(!errors.0.is_empty(), "a refusal says why");
            for e in &errors.0 {
                let msg = e.to_string();
                assert!(!e.problem.trim().is_empty(), "{msg}");
                match &e.origin {
                    Origin::File { path, at } => {
                        assert!(msg.starts_with(path.as_str()), "{msg}");
                        if path == LABEL
                            && let Some((line, col)) = at
                        {
                            assert!((1..=lines).contains(line) && *col >= 1, "{msg}");
                        }
                    }
                    Origin::Override(flag) => {
                        assert!(overrides.iter().any(|o| &o.to_string() == flag), "{msg}");
                        assert!(msg.starts_with("--set "), "{msg}");
                    }
                }
            }
        }
    }
});
