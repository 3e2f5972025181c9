//! Percentiles by nearest rank: the rule both SQL engines of
//! docs/analysis.md compute exactly, so that a figure of ours and one of
//! theirs are the same number, not two estimates.
//!
//! The `p`-th percentile of `n` values is the value at 1-based rank
//! `⌈p·n / 100⌉` once they are sorted (the least value at least `p`% of
//! them do not exceed): no interpolation, always one of the values. In
//! integers, rank = `(p·n + 99) div 100`, which is how the ClickHouse
//! query spells it, `arraySort(groupArray(x))[intDiv(p * count() + 99,
//! 100)]`; DuckDB's `quantile_disc(x, p / 100)` is the same rule (checked
//! for every `n` from 1 to 3000 at p50 and p99, and on ties). Neither
//! ClickHouse's `quantileExact` nor `quantileExactLow` is: for 100 values
//! 1..=100 they give 100 for p99 where this rule gives 99.

/// The `percent`-th percentile of `sorted` (ascending) by nearest rank:
/// the value at rank `⌈percent·n / 100⌉`, counted from 1; the least
/// value for `percent` 0; `None` when there is no value. A `percent`
/// above 100 counts as 100.
///
/// ```
/// use ringtrace_export::analysis::nearest_rank;
/// let hundred: Vec<u64> = (1..=100).collect();
/// assert_eq!(nearest_rank(&hundred, 99), Some(99));
/// assert_eq!(nearest_rank(&hundred, 50), Some(50));
/// assert_eq!(nearest_rank(&[7, 9], 50), Some(7), "the lower of two");
/// assert_eq!(nearest_rank(&[], 50), None);
/// ```
pub fn nearest_rank(sorted: &[u64], percent: u32) -> Option<u64> {
    let n = sorted.len() as u64;
    let rank = (u64::from(percent.min(100)) * n).div_ceil(100).max(1);
    sorted.get(usize::try_from(rank - 1).ok()?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_is_the_ceiling_of_p_n_over_100_for_small_and_round_counts() {
        // n = 1, 2, 3: p50 and p99 by hand.
        assert_eq!(nearest_rank(&[5], 50), Some(5));
        assert_eq!(nearest_rank(&[5], 99), Some(5));
        assert_eq!(nearest_rank(&[1, 2], 50), Some(1));
        assert_eq!(nearest_rank(&[1, 2], 99), Some(2));
        assert_eq!(nearest_rank(&[1, 2, 3], 50), Some(2));
        assert_eq!(nearest_rank(&[1, 2, 3], 99), Some(3));
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&hundred, 99), Some(99));
        assert_eq!(nearest_rank(&hundred, 100), Some(100));
        assert_eq!(nearest_rank(&hundred, 0), Some(1));
        assert_eq!(nearest_rank(&hundred, 250), Some(100), "above 100 is 100");
        let hundred_one: Vec<u64> = (1..=101).collect();
        assert_eq!(nearest_rank(&hundred_one, 99), Some(100));
        assert_eq!(nearest_rank(&hundred_one, 50), Some(51));
    }

    #[test]
    fn ties_give_the_tied_value_and_every_rank_is_one_of_the_values() {
        let tied = [1, 1, 2, 2, 2, 3];
        assert_eq!(nearest_rank(&tied, 50), Some(2));
        assert_eq!(nearest_rank(&tied, 25), Some(1));
        assert_eq!(nearest_rank(&tied, 99), Some(3));
        for n in 1..=300u64 {
            let values: Vec<u64> = (0..n).map(|i| i * 10).collect();
            for p in [1, 50, 90, 99] {
                // The SQL's integer rank, spelled as the queries spell it.
                #[allow(clippy::manual_div_ceil)]
                let rank = (p * n + 99) / 100;
                assert_eq!(
                    nearest_rank(&values, p as u32),
                    Some((rank - 1) * 10),
                    "n={n} p={p}"
                );
            }
        }
    }

    #[test]
    fn no_value_has_no_percentile() {
        assert_eq!(nearest_rank(&[], 0), None);
        assert_eq!(nearest_rank(&[], 99), None);
    }
}
