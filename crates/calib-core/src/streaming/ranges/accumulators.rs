//! [`PassAccumulators`]: a range pass's sums, and the parts of them that threads and blocks
//! accumulate apart over the whole pass and add only at its end.
//!
//! Adding every part into the sums after each chunk cost a merge of whole histograms (two of
//! 409,600 counts each for ACE and TACE at K = 100) or of every collected interval's key list
//! per chunk, on one thread while the others waited: most of a pass's serial time. Kept apart
//! until the pass ends, the parts add once. Written, compared or merged mid-pass, the
//! accumulators are their sum, so a state reads the same whenever it is taken.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::search::PassSums;
use crate::error::Result;

/// The current pass's accumulators, one per search: `sums`, plus `parts` not yet added to it,
/// each with one accumulator per search (a histogram pass's threads beyond the first, a
/// collecting pass's blocks: part `b` holds block `b` of every chunk, so the parts add in
/// block order and the range sums have the same bits at every thread count).
#[derive(Debug, Clone, Default)]
pub(crate) struct PassAccumulators {
    pub(super) sums: Vec<Option<PassSums>>,
    pub(super) parts: Vec<Vec<Option<PassSums>>>,
}

impl PassAccumulators {
    /// Accumulators `sums` with no parts apart.
    pub(crate) fn new(sums: Vec<Option<PassSums>>) -> Self {
        Self { sums, parts: vec![] }
    }

    /// Whether the pass has no accumulators yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.sums.is_empty()
    }

    /// The sums with every part added, and no parts left (a later chunk makes them anew).
    ///
    /// # Errors
    /// [`crate::CalibError::Incompatible`] for parts of another pass.
    pub(crate) fn settle(&mut self) -> Result<&mut Vec<Option<PassSums>>> {
        for part in &mut self.parts {
            drain(part, &mut self.sums)?;
        }
        self.parts.clear();
        Ok(&mut self.sums)
    }

    /// The sums with every part added, and no parts: what ends the pass.
    ///
    /// # Errors
    /// As [`Self::settle`].
    pub(crate) fn into_sums(mut self) -> Result<Vec<Option<PassSums>>> {
        self.settle()?;
        Ok(self.sums)
    }

    /// The sums with every part added, leaving `self` as it is (a copy when parts are apart).
    pub(crate) fn whole(&self) -> Result<Cow<'_, [Option<PassSums>]>> {
        if self.parts.is_empty() {
            return Ok(Cow::Borrowed(&self.sums));
        }
        self.clone().into_sums().map(Cow::Owned)
    }
}

/// Drains the accumulators `part` into `sums`, search by search.
fn drain(part: &mut [Option<PassSums>], sums: &mut [Option<PassSums>]) -> Result<()> {
    for (acc, p) in sums.iter_mut().zip(part) {
        if let (Some(acc), Some(p)) = (acc, p) {
            p.drain_into(acc)?;
        }
    }
    Ok(())
}

impl PartialEq for PassAccumulators {
    fn eq(&self, other: &Self) -> bool {
        match (self.whole(), other.whole()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

/// Serialised as the sums with the parts added: the format of a state does not change.
impl Serialize for PassAccumulators {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.whole().map_err(serde::ser::Error::custom)?.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PassAccumulators {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(counts: &[u64]) -> Option<PassSums> {
        Some(PassSums::Histogram(counts.to_vec()))
    }

    #[test]
    fn parts_apart_read_as_their_sum() {
        let mut acc = PassAccumulators::new(vec![histogram(&[1, 0, 2]), None]);
        acc.parts.push(vec![histogram(&[0, 3, 1]), None]);
        acc.parts.push(vec![histogram(&[5, 0, 0]), None]);
        let whole = PassAccumulators::new(vec![histogram(&[6, 3, 3]), None]);
        assert_eq!(acc, whole);
        let json = serde_json::to_string(&acc).unwrap();
        assert_eq!(json, serde_json::to_string(&whole).unwrap());
        let back: PassAccumulators = serde_json::from_str(&json).unwrap();
        assert!(back.parts.is_empty() && back == whole);
        assert_eq!(acc.settle().unwrap(), &whole.sums);
        // Settled, no parts are left, so settling again adds nothing.
        assert!(acc.parts.is_empty());
        assert_eq!(acc.clone().into_sums().unwrap(), whole.sums);
    }

    #[test]
    fn parts_of_another_pass_are_refused() {
        let mut acc = PassAccumulators::new(vec![histogram(&[1, 2])]);
        acc.parts.push(vec![histogram(&[1, 2, 3])]);
        assert!(acc.settle().is_err() && acc.whole().is_err());
    }
}
