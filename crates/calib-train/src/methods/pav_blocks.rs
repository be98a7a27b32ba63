//! Weighted pool-adjacent-violators (Ayer et al. 1955) as blocks: the core of isotonic
//! regression and centred isotonic regression.
//!
//! ```text
//! points (x_i, y_i, w_i) in score order; blocks pooled while the last two are out of order,
//! s_0 / w_0 > s_1 / w_1 (block sums s = sum w y, weights w), compared as s_0 w_1 > s_1 w_0
//! ```
//!
//! The pooled blocks are the fit: a block's points all take its value `s / w`. Scores within
//! [`TIE`] of the first of their run are one point first ([`tied_points`]), as scikit-learn's
//! `_make_unique` merges them. Where every sum and weight is a whole number below 2^53 (0/1
//! outcomes without weights, fewer than 2^26 pairs so that the comparisons' products are
//! whole too) every pooling order reaches the same blocks, bit for bit.

#[cfg(feature = "wgpu")]
use crate::binary::DeviceFit;

/// scikit-learn's tie tolerance (`np.finfo(np.float64).resolution`).
pub(crate) const TIE: f64 = 1e-15;

/// Unique scores (within [`TIE`] of a run's first score) with their weighted outcome sum and
/// total weight (the count and the positives, for unit weights and 0/1 outcomes), from
/// `(score, outcome, weight)` triples in score order: `(score, sum, weight)` points.
pub(crate) fn tied_points<I: Iterator<Item = (f64, f64, f64)>>(
    triples: impl IntoIterator<IntoIter = I>,
) -> TiedPoints<I> {
    TiedPoints(triples.into_iter().peekable())
}

/// [`tied_points`]' iterator (a type of its own, not `from_fn`, so that its `next` inlines into
/// the pooling loop: one-vs-rest fits measured it called).
pub(crate) struct TiedPoints<I: Iterator>(std::iter::Peekable<I>);

impl<I: Iterator<Item = (f64, f64, f64)>> Iterator for TiedPoints<I> {
    type Item = (f64, f64, f64);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let triples = &mut self.0;
        let (first, outcome, weight) = triples.next()?;
        let (mut sum, mut total) = (0.0 + weight * outcome, 0.0 + weight);
        while let Some(&(s, outcome, weight)) = triples.peek() {
            if s - first >= TIE {
                break;
            }
            sum += weight * outcome;
            total += weight;
            triples.next();
        }
        Some((first, sum, total))
    }
}

/// A block of weighted pool-adjacent-violators: its points' weighted outcome sum and weight
/// (its value `sum / weight`), and its first and last point's score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Block {
    pub(crate) sum: f64,
    pub(crate) weight: f64,
    pub(crate) first: f64,
    pub(crate) last: f64,
}

impl Block {
    /// The block of one `(score, sum, weight)` point.
    #[inline(always)]
    pub(crate) fn point((x, sum, weight): (f64, f64, f64)) -> Self {
        Self { sum, weight, first: x, last: x }
    }

    /// The block of one pooled on the device: its pairs' positives over their count.
    #[cfg(feature = "wgpu")]
    pub(crate) fn of_device(b: &calib_core::engine::PooledBlock) -> Self {
        let (first, last) = (f64::from(b.first), f64::from(b.last));
        Self { sum: f64::from(b.positives), weight: f64::from(b.count), first, last }
    }

    /// The fitted value of the block's points.
    pub(crate) fn value(&self) -> f64 {
        self.sum / self.weight
    }

    /// The runs of consecutive blocks with one value: what the map and the NLL read, however
    /// a fit grouped equal blocks.
    pub(crate) fn runs(blocks: &[Block]) -> impl Iterator<Item = &[Block]> {
        blocks.chunk_by(|a, b| a.value() == b.value())
    }
}

/// The fit of every problem from its blocks pooled on the device (`pooled`, as
/// `DevicePairs::pooled` or `pooled_with_means` returns them): each problem's map `map` makes
/// of its blocks, its positives, and the device's training NLL where `device_nll` (else the
/// maps' own, [`DeviceFit::nll`]).
#[cfg(feature = "wgpu")]
pub(crate) fn fit_pooled<M>(
    pooled: calib_core::Result<calib_core::engine::PooledProblems>,
    map: impl Fn(&[calib_core::engine::PooledBlock]) -> M,
    device_nll: bool,
) -> crate::error::Result<DeviceFit<M>> {
    let pooled = pooled?;
    let positives = pooled.blocks.iter().map(|b| b.iter().map(|b| b.positives as usize).sum());
    let maps = pooled.blocks.iter().map(|blocks| map(blocks)).collect();
    let nll = device_nll.then_some(pooled.nll);
    Ok(DeviceFit::exact(maps, positives.collect(), nll))
}

/// The pooled blocks of weighted pool-adjacent-violators over `(score, sum, weight)` points in
/// score order (weights positive), in order.
pub(crate) fn pooled_blocks(points: impl IntoIterator<Item = (f64, f64, f64)>) -> Vec<Block> {
    // The comparisons chain from one point to the next, and a division's latency in each was
    // most of the fit's time; each block's mean is divided once, at the end.
    let mut blocks: Vec<Block> = Vec::new();
    for point in points {
        push(&mut blocks, Block::point(point));
    }
    blocks
}

/// Pushes `block` after `blocks`, pooling it with the last ones while they are out of order;
/// how many it pooled.
#[inline(always)]
pub(crate) fn push(blocks: &mut Vec<Block>, mut block: Block) -> usize {
    let mut pooled = 0;
    while let Some(top) = blocks.last() {
        if top.sum * block.weight <= block.sum * top.weight {
            break;
        }
        block = Block {
            sum: top.sum + block.sum,
            weight: top.weight + block.weight,
            first: top.first,
            last: block.last,
        };
        blocks.pop();
        pooled += 1;
    }
    blocks.push(block);
    pooled
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ties: scores within 1e-15 of their run's first are one point, with the exact sums.
    #[test]
    fn ties_sum_their_pairs() {
        let triples = [(0.5, 1.0, 1.0), (0.5 + 5e-16, 0.0, 2.0), (0.5 + 2e-15, 1.0, 0.5)];
        let points: Vec<_> = tied_points(triples).collect();
        assert_eq!(points, [(0.5, 1.0, 3.0), (0.5 + 2e-15, 0.5, 0.5)]);
    }

    /// Worked by hand: sums 1, 0, 0, 1 pool to blocks 0 | 1/2 over two points | 1.
    #[test]
    fn pools_out_of_order_blocks() {
        let points = [(0.1, 0.0, 1.0), (0.3, 1.0, 1.0), (0.35, 0.0, 1.0), (0.6, 1.0, 1.0)];
        let blocks = pooled_blocks(points);
        let values: Vec<_> = blocks.iter().map(|b| (b.first, b.last, b.value())).collect();
        assert_eq!(values, [(0.1, 0.1, 0.0), (0.3, 0.35, 0.5), (0.6, 0.6, 1.0)]);
    }
}
