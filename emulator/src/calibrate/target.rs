//! One target row of a fit, as the fit (`mod.rs`) and its table
//! (`table.rs`) both read it: a leaf, so that neither imports the other.

use crate::reproduce::experiments::Row;

/// One target row of the fit.
pub(super) struct Target<'a> {
    /// `experiment-id/row label`.
    pub(super) name: String,
    pub(super) row: &'a Row,
    /// What one unit of the loss is: the tolerance (or the default).
    pub(super) scale: f64,
    pub(super) tolerance: f64,
    pub(super) paper: f64,
}
