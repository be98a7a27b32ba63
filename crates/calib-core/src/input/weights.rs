//! [`SampleWeights`]: one non-negative weight per row, validated once.
//!
//! ```text
//! w_i >= 0, finite, sum_i w_i > 0
//! every count n becomes W = sum_i w_i, every sum over rows a weighted sum
//! ```
//! Integer weights are the repeated rows exactly (a row of weight 3 counts as three copies of
//! it, in its place in the stable order); docs/conventions.md, "Sample weights".

use std::sync::Arc;

use crate::error::{CalibError, Result};

/// Per-row weights, validated: finite, non-negative, at least one positive.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleWeights {
    values: Arc<[f64]>,
    total: f64,
    integral: bool,
}

impl SampleWeights {
    /// Checks `values` (one per row of `n_rows`).
    ///
    /// # Errors
    /// [`CalibError::BadWeight`] naming the first bad weight; [`CalibError::InvalidConfig`]
    /// for a length that is not `n_rows`, or weights that are all zero.
    ///
    /// ```
    /// use calib_core::input::SampleWeights;
    /// let w = SampleWeights::new(vec![1.0, 2.0, 0.0], 3).unwrap();
    /// assert_eq!((w.total(), w.is_integral()), (3.0, true));
    /// assert!(SampleWeights::new(vec![1.0, -1.0], 2).is_err());
    /// assert!(SampleWeights::new(vec![0.0, 0.0], 2).is_err());
    /// ```
    pub fn new(values: Vec<f64>, n_rows: usize) -> Result<Self> {
        let weights = Self::of_chunk(values, n_rows)?;
        if weights.total == 0.0 {
            return Err(CalibError::InvalidConfig(
                "every weight is zero: at least one must be positive".into(),
            ));
        }
        if !weights.total.is_finite() {
            return Err(CalibError::InvalidConfig(format!(
                "the weights sum to {}: the sum must be finite",
                weights.total
            )));
        }
        Ok(weights)
    }

    /// The weights of a chunk of a larger set's rows (a streamed evaluation's): checked as
    /// [`Self::new`] does, except that they may all be zero.
    ///
    /// # Errors
    /// [`CalibError::BadWeight`] naming the first bad weight; [`CalibError::InvalidConfig`]
    /// for a length that is not `n_rows`.
    pub fn of_chunk(values: Vec<f64>, n_rows: usize) -> Result<Self> {
        if values.len() != n_rows {
            return Err(CalibError::InvalidConfig(format!(
                "{} weights for {n_rows} rows: one weight per row",
                values.len()
            )));
        }
        if let Some(row) = values.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(CalibError::BadWeight { row, value: values[row] });
        }
        let total: f64 = values.iter().sum();
        if !total.is_finite() {
            return Err(CalibError::InvalidConfig(format!(
                "the weights sum to {total}: the sum must be finite"
            )));
        }
        let integral = Self::whole_numbers(&values) && total < 2f64.powi(53);
        Ok(Self { values: values.into(), total, integral })
    }

    /// Whether every one of `values` is a whole number (weights that mean repeated rows).
    pub fn whole_numbers(values: &[f64]) -> bool {
        values.iter().all(|w| w.fract() == 0.0)
    }

    /// The weights, in row order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// `W = sum_i w_i`.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// Whether every weight is a whole number (then W is exact and they mean repeated rows).
    pub fn is_integral(&self) -> bool {
        self.integral
    }

    /// The check of every consumer defined on repeated rows only (`what`, a metric or a
    /// method): whole numbers pass.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] naming `what` for weights with fractions.
    pub fn require_integral(&self, what: &str) -> Result<()> {
        if self.integral {
            return Ok(());
        }
        Err(CalibError::InvalidConfig(format!(
            "{what} takes whole-number sample weights only (as repeated rows); these have \
             fractions"
        )))
    }
}
