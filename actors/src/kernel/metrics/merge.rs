//! Merging the values two partitions collected for one metric.

/// `to.extend(from)`, or `from` itself when `to` is empty.
pub(super) fn extend_or_take<T>(to: &mut Vec<T>, from: Vec<T>) {
    if to.is_empty() {
        *to = from;
    } else {
        to.extend(from);
    }
}
