//! "Did you mean …?": the nearest of the names a user could have meant,
//! for error messages about a mistyped field, value, kind or actor.

/// The candidate nearest to `word` by edit distance (Damerau-Levenshtein,
/// case-insensitive), if it is near enough to be a typo: at most a third
/// of the longer name's length, and at least one edit. Ties: the first.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|(d, c)| *d <= (word.len().max(c.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// ` (did you mean "x"?)` when one is near, else nothing: to append to a
/// message.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    nearest(word, candidates).map_or_else(String::new, |c| format!(" (did you mean {c:?}?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_word_and_strangers_find_none() {
        let fields = ["placement", "admission", "slots", "eviction"];
        assert_eq!(nearest("placment", fields), Some("placement"));
        assert_eq!(nearest("Admision", fields), Some("admission"));
        assert_eq!(nearest("slot", fields), Some("slots"));
        assert_eq!(nearest("colour", fields), None);
        assert_eq!(
            did_you_mean("task_arive", ["task_arrive", "task_done"]),
            " (did you mean \"task_arrive\"?)"
        );
        assert_eq!(did_you_mean("zzz", ["task_arrive"]), "");
    }
}
