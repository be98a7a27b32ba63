//! Ensemble temperature scaling's passes over logits held on a GPU ([`TemperedRows`]): the
//! temperature step's derivatives and the mixture's sums, each one launch per part of rows
//! ([`super::ensemble_kernels`]) and one synchronisation, f32 per row, the partial sums of
//! 1,024 rows added on the host in f64.
//!
//! ```text
//! ets_derivatives(u) = (1/N) sum_i (L_i'(u), L_i''(u))                 4 words per 1,024 rows
//! ets_mixture(u)     = sum_i [sum a^2, sum a b, sum b^2, a_y, b_y]_i,   10 words per 1,024 rows
//!                      and every row's (a_y, b_y)                      + 2 words per row
//! ```
//! with `a = softmax(u z)` and `b = softmax(z)`. Each pass reads the logits twice (the
//! kernels' two loops over a row).

use burn::backend::Dispatch;
use burn::tensor::{Tensor, Transaction};

use super::ensemble_ops::EnsembleKernels;
use super::tempered::{TemperedRows, register_blocks};
use crate::engine::read_back;
use crate::error::{CalibError, Result};
use crate::host::read_f64;

/// The mixture step's sums over the rows and each row's label probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct EnsembleMixture {
    /// `[sum a^2, sum a b, sum b^2, a_y, b_y]` summed over the rows.
    pub sums: [f64; 5],
    /// Each row's `(a_y, b_y)`, in row order.
    pub at_label: Vec<[f64; 2]>,
}

impl TemperedRows {
    /// The mean over the rows of ETS's temperature-step derivatives `(L', L'')` in `u = 1/t`:
    /// the MSE's where `mse`, else the NLL's ([`super::ensemble_kernels::ets_derivatives`]).
    ///
    /// # Errors
    /// [`CalibError::Backend`] when the read-back fails.
    pub fn ets_derivatives(&self, u: f64, mse: bool) -> Result<(f64, f64)> {
        let mut tx = Transaction::default();
        for part in &self.parts {
            let out = <Dispatch as EnsembleKernels>::calib_ets_derivatives(
                part.values.clone().into_dispatch(),
                part.labels.clone().into_dispatch(),
                part.max.clone().into_dispatch(),
                u as f32,
                mse,
            );
            tx = register_blocks(tx, Tensor::from_dispatch(out), part.values.dims()[0]).0;
        }
        let mut sums = [0.0; 2];
        for data in read_back(tx)? {
            add_fields(&mut sums, &read_f64(data)?);
        }
        let n = self.n_samples().max(1) as f64;
        Ok((sums[0] / n, sums[1] / n))
    }

    /// ETS's mixture sums at `u` ([`EnsembleMixture`]).
    ///
    /// # Errors
    /// [`CalibError::Backend`] when the read-back fails.
    pub fn ets_mixture(&self, u: f64) -> Result<EnsembleMixture> {
        let mut tx = Transaction::default();
        let mut registered = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            let n = part.values.dims()[0];
            let out: Tensor<2> =
                Tensor::from_dispatch(<Dispatch as EnsembleKernels>::calib_ets_mixture(
                    part.values.clone().into_dispatch(),
                    part.labels.clone().into_dispatch(),
                    part.max.clone().into_dispatch(),
                    u as f32,
                ));
            let (next, blocks) =
                register_blocks(tx.register(out.clone().slice([3..5, 0..n])), out, n);
            tx = next;
            registered.push(blocks);
        }
        let mut data = read_back(tx)?.into_iter();
        let mut mixture = EnsembleMixture { sums: [0.0; 5], at_label: Vec::new() };
        for blocks in registered {
            let rows = read_f64(data.next().ok_or_else(missing)?)?;
            let n = rows.len() / 2;
            mixture.at_label.extend((0..n).map(|i| [rows[i], rows[n + i]]));
            for _ in 0..blocks {
                add_fields(&mut mixture.sums, &read_f64(data.next().ok_or_else(missing)?)?);
            }
        }
        Ok(mixture)
    }
}

/// Adds `values` (`[F, per]`, field after field) into `sums` (`F` fields).
fn add_fields<const F: usize>(sums: &mut [f64; F], values: &[f64]) {
    let per = values.len() / F;
    for (f, sum) in sums.iter_mut().enumerate() {
        *sum += values[f * per..(f + 1) * per].iter().sum::<f64>();
    }
}

fn missing() -> CalibError {
    CalibError::Backend("the device returned fewer tensors than the mixture pass asked".into())
}
