//! Histogram counters in a serialised state: scores crowd a few buckets, so most of a pass's
//! up to 2^21 counters are zero, and a state carries only the others, as (gap, value) pairs
//! (`#[serde(with = "sparse")]`; pair counts, or the weight sums of a weighted pass).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Counters a deserialised histogram may have: far above any pass's (`HISTOGRAM_BUDGET`),
/// low enough that a corrupt length cannot exhaust memory.
const MAX_COUNTERS: u64 = 1 << 26;

/// Writes `counts` as its length and the (gap since the last non-zero index, value) pairs.
pub(super) fn serialize<S, T>(counts: &[T], s: S) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    T: Serialize + Copy + Default + PartialEq,
{
    let mut pairs = Vec::new();
    let mut next = 0;
    for (i, &c) in counts.iter().enumerate().filter(|(_, c)| **c != T::default()) {
        pairs.push(((i - next) as u64, c));
        next = i + 1;
    }
    (counts.len() as u64, pairs).serialize(s)
}

/// Reads what [`serialize`] wrote.
pub(super) fn deserialize<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Copy + Default,
{
    let (len, pairs) = <(u64, Vec<(u64, T)>)>::deserialize(d)?;
    if len > MAX_COUNTERS {
        return Err(D::Error::custom(format!("a histogram of {len} counters")));
    }
    let mut counts = vec![T::default(); len as usize];
    let mut next = 0u64;
    for (gap, c) in pairs {
        let i = next.checked_add(gap).filter(|&i| i < len);
        let i = i.ok_or_else(|| D::Error::custom("histogram index out of range"))?;
        counts[i as usize] = c;
        next = i + 1;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Counts(#[serde(with = "super")] Vec<u64>);

    #[test]
    fn counts_round_trip_and_bad_indexes_are_refused() {
        for v in [vec![], vec![0; 5], vec![3, 0, 0, 7, 0, 1], vec![0, 0, 9]] {
            let c = Counts(v);
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Counts>(&json).unwrap(), c);
            let bytes = postcard::to_stdvec(&c).unwrap();
            assert_eq!(postcard::from_bytes::<Counts>(&bytes).unwrap(), c);
        }
        assert_eq!(serde_json::to_string(&Counts(vec![0, 0, 9, 4])).unwrap(), "[4,[[2,9],[0,4]]]");
        assert!(serde_json::from_str::<Counts>("[3,[[3,1]]]").is_err());
        assert!(serde_json::from_str::<Counts>("[3,[[1,1],[18446744073709551615,1]]]").is_err());
        assert!(serde_json::from_str::<Counts>("[1000000000000,[]]").is_err());
    }
}
