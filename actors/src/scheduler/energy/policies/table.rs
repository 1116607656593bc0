//! The function table: the choice rule each [`Rule`] names.

use crate::scheduler::energy::types::Rule;

use super::ChoiceRule;
use super::beps::Beps;
use super::brfs::{Brfs, Fit};
use super::gems::{Gems, GemsNoNetwork};
use super::rrs::Rrs;

/// The choice rule of `r`.
pub(in crate::scheduler::energy) fn rule(r: Rule) -> &'static dyn ChoiceRule {
    match r {
        Rule::Gems => &Gems,
        Rule::GemsNoNetwork => &GemsNoNetwork,
        Rule::Beps => &Beps,
        Rule::BrfsDot => &Brfs(Fit::Dot),
        Rule::BrfsNorm => &Brfs(Fit::Norm),
        Rule::Rrs => &Rrs,
    }
}
