//! Binning schemes: even bins, adaptive equal-mass ranges and custom edges.
//!
//! The rules are docs/conventions.md's "Bins" section: bins are right-closed (`b/B < p <= (b+1)/B`,
//! bin 0 also holds `p = 0`), adaptive range `r` holds the sorted positions
//! `floor(r N / R) .. floor((r + 1) N / R) - 1` of a stable sort.

mod adaptive;
mod edges;

pub(crate) use adaptive::{
    RankedPair, accumulate_ranges, adaptive_stats, multi_select, range_start,
};
pub use adaptive::{adaptive_range_of, weighted_range_start};
pub(crate) use edges::{BinLookup, f32_below, validate_edges};
pub use edges::{bin_of, even_edges};

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// How scores are grouped into bins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Binning {
    /// `n_bins` equal-width, right-closed bins on `[0, 1]`.
    Even {
        /// B.
        n_bins: usize,
    },
    /// `n_ranges` equal-mass ranges of the sorted scores (Nixon et al. 2019).
    Adaptive {
        /// R.
        n_ranges: usize,
    },
    /// Right-closed bins between sorted edges `0 = e0 < e1 < ... < eB = 1`.
    Custom {
        /// The `B + 1` edges.
        edges: Vec<f64>,
    },
}

impl Binning {
    /// Number of bins (B or R).
    pub fn n_bins(&self) -> usize {
        match self {
            Self::Even { n_bins } => *n_bins,
            Self::Adaptive { n_ranges } => *n_ranges,
            Self::Custom { edges } => edges.len().saturating_sub(1),
        }
    }

    /// The edges of a static binning, `None` for adaptive ranges.
    pub fn edges(&self) -> Option<Vec<f64>> {
        match self {
            Self::Even { n_bins } => Some(even_edges(*n_bins)),
            Self::Custom { edges } => Some(edges.clone()),
            Self::Adaptive { .. } => None,
        }
    }

    /// Checks the parameters (at least one bin; custom edges sorted from 0 to 1).
    pub fn validate(&self) -> Result<()> {
        match self {
            Self::Even { n_bins: 0 } | Self::Adaptive { n_ranges: 0 } => Err(
                crate::CalibError::InvalidConfig("the number of bins must be at least 1".into()),
            ),
            Self::Custom { edges } => validate_edges(edges),
            _ => Ok(()),
        }
    }
}
