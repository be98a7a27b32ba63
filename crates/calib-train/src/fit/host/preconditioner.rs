//! [`Preconditioner`]: what Newton-CG ([`super::newton`]) preconditions a full map's Hessian
//! with: per-class blocks, exact ([`super::hessian`]) or low-rank
//! ([`super::low_rank_blocks`]), balanced over the shift space when the penalty curves it
//! ([`super::shift_balance`]).

use super::affine::AffineObjective;
use super::hessian::BlockPreconditioner;
use super::low_rank_blocks::LowRankBlocks;
use super::shift_balance::ShiftBalance;

/// Classes from which a ridge-penalised map takes the low-rank blocks. At K = 100 (5,000
/// rows) the exact blocks cost about as much as six evaluations for a condition number
/// 1.0-1.15 times lower; at K = 10 they are cheap and the low-rank ones 3-10 times worse.
pub(crate) const LOW_RANK_MIN_CLASSES: usize = 64;

/// The per-class blocks, and the shift space's exact solve.
pub(crate) struct Preconditioner {
    blocks: Blocks,
    balance: Option<ShiftBalance>,
}

enum Blocks {
    Exact(BlockPreconditioner),
    LowRank(LowRankBlocks),
}

/// Whether `objective`'s Newton-CG takes low-rank blocks (and so holds `O(K^2)`, not `K^3`,
/// values: any K fits).
pub(crate) fn takes_low_rank(objective: &AffineObjective<'_>) -> bool {
    low_rank_for(objective.rows.k, ShiftBalance::of(&objective.terms).as_ref())
}

/// Whether a map of `k` classes whose penalty balances as `balance` takes low-rank blocks.
fn low_rank_for(k: usize, balance: Option<&ShiftBalance>) -> bool {
    k >= LOW_RANK_MIN_CLASSES && balance.is_some()
}

impl Preconditioner {
    /// The preconditioner at the point whose probabilities `probs` describe.
    pub fn at(objective: &AffineObjective<'_>, probs: &[f64]) -> Self {
        let balance = ShiftBalance::of(&objective.terms);
        let low_rank = low_rank_for(objective.rows.k, balance.as_ref())
            .then(|| objective.low_rank_blocks(probs))
            .flatten();
        let blocks = match low_rank {
            Some(blocks) => Blocks::LowRank(blocks),
            None => Blocks::Exact(objective.block_preconditioner(probs)),
        };
        Self { blocks, balance }
    }

    /// `M^-1 r`.
    pub fn apply(&self, r: &[f64]) -> Vec<f64> {
        let blocks = |r: &[f64]| match &self.blocks {
            Blocks::Exact(b) => b.apply(r),
            Blocks::LowRank(b) => b.apply(r),
        };
        match &self.balance {
            Some(balance) => balance.apply(r, blocks),
            None => blocks(r),
        }
    }
}
