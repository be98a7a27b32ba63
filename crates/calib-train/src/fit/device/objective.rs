//! [`DeviceObjective`]: the affine maps' objective (`super::super::host::AffineObjective`'s
//! function) as explicit burn tensor passes on the fit's device, with no autodiff graph.
//!
//! ```text
//! S = X W^T + b   (diagonal: S = X ⊙ w + b),   P = softmax(S),   G = P - onehot(y)
//! nll_i = max_k S_ik + ln sum_k exp(S_ik - max) - S_iy
//! dnll/dW = (1/N) G^T X,   dnll/db = (1/N) sum_i G_i   (diagonal: dw = (1/N) sum_i G_i ⊙ X_i)
//! d2nll/dW_kj^2 = (1/N) sum_i P_ik (1 - P_ik) X_ij^2    (the Jacobi preconditioner)
//! ```
//!
//! Only the parameters go to the device and only `K x K + K` sums and the per-row NLL come
//! back per evaluation: the per-row values are summed in f64 on the host, as the autodiff path
//! does, because an f32 reduction over N rows is as coarse as the decrease the line search
//! must see near the optimum. The penalty, the span projection and the canonical form are the
//! host's ([`AffineTerms`]), computed from the parameters alone.

use std::cell::RefCell;

use burn::tensor::{DType, Device, IndexingUpdateOp, Int, Tensor, TensorData};

use super::span::device_span;
use crate::error::{FitError, Result};
use crate::fit::host::{AffineShape, AffineTerms, FlatObjective, HostForm, Value};
use crate::fit::params::read_all;

/// Values per row chunk: the passes' intermediates (`S`, `P`) stay at 64 MiB in f32, under
/// the buffer limits of software Vulkan drivers.
const CHUNK_VALUES: usize = 1 << 24;

/// The fewest rows of a block of [`transposed_product`].
const SPLIT_ROWS: usize = 256;
/// The most values of its stack of per-block products (16 MiB in f32).
const SPLIT_MAX_VALUES: usize = 1 << 22;
/// The fewest classes whose `K x K` product is left whole.
const SPLIT_CLASSES: usize = 512;

/// What one pass over the rows computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// The per-row NLL.
    Nll,
    /// The per-row NLL and the summed gradient.
    Gradient,
    /// The summed Hessian diagonal.
    Diagonal,
    /// The per-row NLL, the summed gradient and the summed Hessian diagonal.
    Both,
}

impl Want {
    fn rows(self) -> bool {
        self != Want::Diagonal
    }

    fn gradient(self) -> bool {
        matches!(self, Want::Gradient | Want::Both)
    }

    fn diagonal(self) -> bool {
        matches!(self, Want::Diagonal | Want::Both)
    }
}

/// calib's kernels' row NLLs, gradient sums and Hessian diagonal sums, on the device.
type FusedSums = (Tensor<1>, Tensor<1>, Option<Tensor<1>>);

/// What one pass read back: the gradient sums, the Hessian diagonal sums and the per-row NLLs
/// (each empty when not asked for).
struct Sums {
    gradient: Vec<f64>,
    diagonal: Vec<f64>,
    nll: Vec<f64>,
}

/// The affine objective of `terms.form` on rows held on a device.
pub(crate) struct DeviceObjective {
    /// Row chunks: features `[n_c, K]` and labels `[n_c, 1]`.
    chunks: Vec<(Tensor<2>, Tensor<2, Int>)>,
    /// Per chunk, `[n_c, 1]` of -1: the one-hot the gradient scatters into the probabilities,
    /// made once rather than at every evaluation.
    minus_ones: Vec<Tensor<2>>,
    n: usize,
    device: Device,
    dtype: DType,
    terms: AffineTerms,
    /// The first device error of a pass (a read-back that failed); the optimiser sees a
    /// non-finite point and stops, the caller returns this error.
    failure: RefCell<Option<FitError>>,
}

impl DeviceObjective {
    /// The objective of `form` on `features` `[N, K]` and `labels` `[N, 1]` (plain tensors on
    /// one device).
    ///
    /// # Errors
    /// A failed read-back while finding the flat directions of an unpenalised full map.
    pub fn new(features: &Tensor<2>, labels: &Tensor<2, Int>, form: HostForm) -> Result<Self> {
        let [_, k] = features.dims();
        Self::chunked(features, labels, form, (CHUNK_VALUES / k.max(1)).max(1))
    }

    /// [`Self::new`] with `rows_per_chunk` rows per pass chunk.
    pub(super) fn chunked(
        features: &Tensor<2>,
        labels: &Tensor<2, Int>,
        form: HostForm,
        rows_per_chunk: usize,
    ) -> Result<Self> {
        let [n, k] = features.dims();
        let chunks = (0..n)
            .step_by(rows_per_chunk)
            .map(|lo| {
                let hi = (lo + rows_per_chunk).min(n);
                (features.clone().slice([lo..hi, 0..k]), labels.clone().slice([lo..hi, 0..1]))
            })
            .collect::<Vec<_>>();
        let span = if AffineTerms::may_have_flat_directions(form) {
            device_span(&chunks, k)?
        } else {
            None
        };
        let (device, dtype) = (features.device(), features.dtype());
        let minus_ones = chunks
            .iter()
            .map(|(x, _)| Tensor::<2>::full([x.dims()[0], 1], -1.0, (&device, dtype)))
            .collect();
        Ok(Self {
            chunks,
            minus_ones,
            n,
            device,
            dtype,
            terms: AffineTerms { k, form, span },
            failure: RefCell::new(None),
        })
    }

    /// The parameter-only terms (penalty, span, canonical form).
    pub fn terms(&self) -> &AffineTerms {
        &self.terms
    }

    /// The error that ended a pass, if one did.
    pub fn take_failure(&self) -> Option<FitError> {
        self.failure.borrow_mut().take()
    }

    /// One pass at `params`, computing what `want` asks for; one read-back.
    fn pass(&self, params: &[f64], want: Want) -> Result<Sums> {
        let (weight, bias) = self.upload(params);
        let (mut gradient, mut diagonal) = (None, None);
        let mut rows = Vec::new();
        for ((x, y), minus_one) in self.chunks.iter().zip(&self.minus_ones) {
            if let Some((nll, grad, diag)) = self.fused(x, y, &weight, &bias, want) {
                if want.rows() {
                    rows.push(nll);
                }
                if want.gradient() {
                    add(&mut gradient, grad);
                }
                if let Some(diag) = diag {
                    add(&mut diagonal, diag);
                }
                continue;
            }
            let s = self.logits(x, &weight, &bias);
            let (probs, nll) = softmax_and_nll(s, y);
            if want.rows() {
                rows.push(nll);
            }
            if want.gradient() {
                add(&mut gradient, self.gradient(probs.clone(), x, y, minus_one));
            }
            if want.diagonal() {
                add(&mut diagonal, self.diagonal(probs, x));
            }
        }
        let empty = || Tensor::<1>::zeros([0], (&self.device, self.dtype));
        let n_rows = rows.len();
        let sums = [gradient.unwrap_or_else(empty), diagonal.unwrap_or_else(empty)];
        let mut reads = read_all(sums.into_iter().chain(rows).collect())?;
        let (gradient, diagonal) = (reads.remove(0), reads.remove(0));
        debug_assert_eq!(reads.len(), n_rows);
        let nll = reads.concat();
        debug_assert!(!want.rows() || nll.len() == self.n);
        Ok(Sums { gradient, diagonal, nll })
    }

    /// A pass over the chunk `x`, `y` by calib's kernels on a GPU device: a diagonal map's by
    /// its row and column kernels (`calib_core::engine::diagonal_affine_pass`), a full map's
    /// as burn's product `X W^T`, the softmax terms `G` (and `Q`) by `affine_softmax_terms`
    /// and the products `G^T X` (and `Q^T X^2`), instead of a pass per tensor op: row NLLs,
    /// gradient sums (empty unless `want` asks) and, for `want`, Hessian diagonal sums; `None`
    /// where the kernels do not apply.
    #[cfg(feature = "wgpu")]
    fn fused(
        &self,
        x: &Tensor<2>,
        y: &Tensor<2, Int>,
        weight: &Tensor<2>,
        bias: &Tensor<2>,
        want: Want,
    ) -> Option<FusedSums> {
        use calib_core::engine::{affine_softmax_terms, diagonal_affine_pass};
        let [n, k] = x.dims();
        let (y, bias) = (y.clone().reshape([n]), bias.clone().reshape([k]));
        if self.terms.form.shape == AffineShape::Diagonal {
            return diagonal_affine_pass(
                x,
                &y,
                &weight.clone().reshape([k]),
                &bias,
                want.diagonal(),
            );
        }
        let scores = x.clone().matmul(weight.clone().transpose());
        let (nll, g, q) = affine_softmax_terms(&scores, &y, &bias, want.diagonal())?;
        let gradient = if want.gradient() {
            self.weight_and_bias_sums(g, x.clone())
        } else {
            Tensor::<1>::zeros([0], (&self.device, self.dtype))
        };
        let diagonal = q.map(|q| self.weight_and_bias_sums(q, x.clone().powi_scalar(2)));
        Some((nll, gradient, diagonal))
    }

    #[cfg(not(feature = "wgpu"))]
    fn fused(
        &self,
        _: &Tensor<2>,
        _: &Tensor<2, Int>,
        _: &Tensor<2>,
        _: &Tensor<2>,
        _: Want,
    ) -> Option<FusedSums> {
        None
    }

    /// The weight (`[K, K]`, or `[1, K]` for a diagonal map) and bias `[1, K]` on the device.
    fn upload(&self, params: &[f64]) -> (Tensor<2>, Tensor<2>) {
        let k = self.terms.k;
        let (w, b) = params.split_at(params.len() - k);
        let to_device = |values: &[f64], shape: [usize; 2]| {
            let data = TensorData::new(values.to_vec(), shape);
            Tensor::<2>::from_data(data, (&self.device, self.dtype))
        };
        let w_shape = match self.terms.form.shape {
            AffineShape::Full => [k, k],
            AffineShape::Diagonal => [1, k],
        };
        (to_device(w, w_shape), to_device(b, [1, k]))
    }

    /// Calibrated logits of the chunk `x`.
    fn logits(&self, x: &Tensor<2>, weight: &Tensor<2>, bias: &Tensor<2>) -> Tensor<2> {
        match self.terms.form.shape {
            AffineShape::Full => x.clone().matmul(weight.clone().transpose()) + bias.clone(),
            AffineShape::Diagonal => x.clone() * weight.clone() + bias.clone(),
        }
    }

    /// `[sum G^T X (or G ⊙ X), sum G]` flattened, `G = P - onehot(y)`.
    fn gradient(
        &self,
        probs: Tensor<2>,
        x: &Tensor<2>,
        y: &Tensor<2, Int>,
        minus_one: &Tensor<2>,
    ) -> Tensor<1> {
        let g = probs.scatter(1, y.clone(), minus_one.clone(), IndexingUpdateOp::Add);
        self.weight_and_bias_sums(g, x.clone())
    }

    /// `[sum Q^T X^2 (or Q ⊙ X^2), sum Q]` flattened, `Q = P (1 - P)`.
    fn diagonal(&self, probs: Tensor<2>, x: &Tensor<2>) -> Tensor<1> {
        let q = probs.clone() - probs.powi_scalar(2);
        self.weight_and_bias_sums(q, x.clone().powi_scalar(2))
    }

    /// `[sum_i a_i b_i^T (full) or sum_i a_i ⊙ b_i (diagonal), sum_i a_i]`, flattened.
    fn weight_and_bias_sums(&self, a: Tensor<2>, b: Tensor<2>) -> Tensor<1> {
        let k = self.terms.k;
        let on_weight = match self.terms.form.shape {
            AffineShape::Full => {
                let rows = split_rows(a.dims()[0], k);
                transposed_product(a.clone(), b, rows).reshape([k * k])
            }
            AffineShape::Diagonal => (a.clone() * b).sum_dim(0).reshape([k]),
        };
        Tensor::cat(vec![on_weight, a.sum_dim(0).reshape([k])], 0)
    }

    /// The objective and gradient at `params` (and the diagonal, for [`Want::Both`]) from one
    /// pass; a failed pass gives NaN (the error kept).
    fn evaluate_in(
        &self,
        params: &[f64],
        grad: &mut [f64],
        want: Want,
    ) -> (Value, Option<Vec<f64>>) {
        let nan = Value { objective: f64::NAN, nll: f64::NAN };
        let Some(sums) = self.or_record(self.pass(params, want).map(Some), None) else {
            return (nan, None);
        };
        let inv_n = 1.0 / self.n as f64;
        grad.iter_mut().zip(&sums.gradient).for_each(|(g, s)| *g = s * inv_n);
        let nll = sums.nll.iter().sum::<f64>() * inv_n;
        let penalty = self.terms.add_penalty(params, grad);
        let diagonal = want.diagonal().then(|| self.scaled_diagonal(sums.diagonal));
        (Value { objective: nll + penalty, nll }, diagonal)
    }

    /// The mean Hessian diagonal of the summed `diag`, with the penalty's.
    fn scaled_diagonal(&self, mut diag: Vec<f64>) -> Vec<f64> {
        let inv_n = 1.0 / self.n as f64;
        diag.iter_mut().for_each(|d| *d *= inv_n);
        self.terms.add_penalty_diagonal(&mut diag);
        diag
    }

    /// Runs `f`; on a device error keeps the first one and returns `fallback`.
    fn or_record<T>(&self, result: Result<T>, fallback: T) -> T {
        result.unwrap_or_else(|e| {
            self.failure.borrow_mut().get_or_insert(e);
            fallback
        })
    }
}

/// Rows per block of [`transposed_product`] for `[n, K]` factors: at least [`SPLIT_ROWS`],
/// at most [`SPLIT_MAX_VALUES`] in the stack of products; `n` (one block: the plain product)
/// from [`SPLIT_CLASSES`] classes on, where the product's own tiles fill a GPU (on an H200 the
/// blocks halved the time of matrix scaling's fit at 10,000 x 100, and doubled SMS's at
/// 50,000 x 1,000).
fn split_rows(n: usize, k: usize) -> usize {
    if k >= SPLIT_CLASSES {
        return n;
    }
    let most_blocks = (SPLIT_MAX_VALUES / (k * k).max(1)).max(1);
    SPLIT_ROWS.max(n.div_ceil(most_blocks))
}

/// `a^T b` (`[K, K]`) of `a`, `b` `[n, K]`, as the sum of the products of blocks of `rows`
/// rows (the rest, fewer rows, a product of its own). A tiled product of `[K, n] x [n, K]` has
/// only `(K / tile)^2` tiles for a GPU's cores, each a loop over all `n` rows (4 tiles at K =
/// 100); a batch of per-block products has that many per block.
pub(super) fn transposed_product(a: Tensor<2>, b: Tensor<2>, rows: usize) -> Tensor<2> {
    let [n, k] = a.dims();
    let blocks = n / rows.max(1);
    if blocks < 2 {
        return a.transpose().matmul(b);
    }
    let whole = blocks * rows;
    let stack = |t: Tensor<2>| t.narrow(0, 0, whole).reshape([blocks, rows, k]);
    let sums = stack(a.clone()).swap_dims(1, 2).matmul(stack(b.clone()));
    let product = sums.sum_dim(0).reshape([k, k]);
    if whole == n {
        return product;
    }
    let rest = |t: Tensor<2>| t.narrow(0, whole, n - whole);
    product + rest(a).transpose().matmul(rest(b))
}

/// Adds `part` to the running sum `acc`.
fn add(acc: &mut Option<Tensor<1>>, part: Tensor<1>) {
    *acc = Some(match acc.take() {
        Some(sum) => sum + part,
        None => part,
    });
}

/// `(softmax(s), per-row NLL [n_c])` of the logits `s` with labels `y`.
///
/// The row's `ln sum_k exp(s_k - max)` is taken as `log1p` of the sum without its maxima
/// (their terms are exactly 1): on a confident row the sum is `1 + 1e-4` or closer, whose f32
/// rounding (6e-8) would otherwise be a large part of that row's NLL and, summed over the
/// rows, as large as the decreases the line search must see near the optimum.
fn softmax_and_nll(s: Tensor<2>, y: &Tensor<2, Int>) -> (Tensor<2>, Tensor<1>) {
    let [rows, _] = s.dims();
    let max = s.clone().max_dim(1);
    let shifted = s.clone() - max.clone();
    let exps = shifted.clone().exp();
    let at_max = shifted.equal_elem(0.0).float().cast(s.dtype());
    let ties = at_max.clone().sum_dim(1) - 1.0;
    let rest = (exps.clone() - at_max).sum_dim(1) + ties;
    let nll = (max - s.gather(1, y.clone()) + rest.clone().log1p()).reshape([rows]);
    (exps / (rest + 1.0), nll)
}

impl FlatObjective for DeviceObjective {
    fn evaluate(&self, params: &[f64], grad: &mut [f64]) -> Value {
        self.evaluate_in(params, grad, Want::Gradient).0
    }

    fn evaluate_with_diagonal(
        &self,
        params: &[f64],
        grad: &mut [f64],
    ) -> (Value, Option<Vec<f64>>) {
        self.evaluate_in(params, grad, Want::Both)
    }

    fn nll(&self, params: &[f64]) -> f64 {
        let rows = self.or_record(self.pass(params, Want::Nll).map(|s| s.nll), vec![f64::NAN]);
        rows.iter().sum::<f64>() / self.n as f64
    }

    fn hessian_diagonal(&self, params: &[f64]) -> Vec<f64> {
        let ones = vec![1.0; params.len()];
        let diag = self.or_record(self.pass(params, Want::Diagonal).map(|s| s.diagonal), ones);
        self.scaled_diagonal(diag)
    }

    fn keep_in_span(&self, step: &mut [f64]) {
        self.terms.keep_in_span(step);
    }
}
