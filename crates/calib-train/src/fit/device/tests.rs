//! The device passes against the fused host pass (the same function), on flex.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use calib_core::engine::DeviceCost;
use calib_core::synthetic::SplitMix64;

use super::DeviceObjective;
use super::objective::transposed_product;
use crate::fit::Regularisation;
use crate::fit::host::{AffineObjective, AffineShape, FlatObjective, HostForm};
use crate::fit::host_rows::HostRows;

/// The forms under test: vector scaling and the full maps with each penalty.
fn forms() -> Vec<HostForm> {
    let full = |penalty| HostForm { shape: AffineShape::Full, penalty };
    vec![
        HostForm { shape: AffineShape::Diagonal, penalty: Regularisation::None },
        full(Regularisation::None),
        full(Regularisation::Odir { lambda: 0.5, mu: 0.2 }),
        full(Regularisation::L2 { lambda: 0.3 }),
        full(Regularisation::Ridge { intercept: 0.2, diagonal: 0.3, off_diagonal: 0.4 }),
        HostForm {
            shape: AffineShape::Diagonal,
            penalty: Regularisation::Ridge { intercept: 0.2, diagonal: 0.3, off_diagonal: 0.0 },
        },
    ]
}

/// `n` rows of `k` spread-out features (values exact in f32) with uniform labels.
fn rows(n: usize, k: usize, seed: u64) -> HostRows {
    let mut rng = SplitMix64(seed);
    let features = (0..n * k).map(|_| f64::from((2.0 * rng.normal()) as f32)).collect();
    let labels = (0..n).map(|_| rng.below(k)).collect();
    HostRows { features, labels, n, k, weights: None }
}

/// `rows` as device tensors in `dtype`.
fn on_device(rows: &HostRows, dtype: DType) -> (Tensor<2>, Tensor<2, Int>) {
    let device = Device::flex();
    let x = TensorData::new(rows.features.clone(), [rows.n, rows.k]);
    let y: Vec<i64> = rows.labels.iter().map(|&l| l as i64).collect();
    let x = Tensor::<2>::from_data(x, (&device, dtype));
    let y = Tensor::<2, Int>::from_data(TensorData::new(y, [rows.n, 1]), &device);
    (x, y)
}

fn params(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| 0.3 * rng.normal() + 0.1).collect()
}

/// `|a - b| <= tol max(1, |b|)` entry by entry.
fn assert_close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * y.abs().max(1.0), "{what} {i}: {x} vs {y}");
    }
}

/// Value, NLL, gradient and Hessian diagonal of the device passes against the host pass.
fn compare(dtype: DType, tol: f64, rows_per_chunk: usize) {
    let data = rows(300, 6, 1);
    let (x, y) = on_device(&data, dtype);
    for form in forms() {
        let host = AffineObjective::new(&data, form);
        let device = DeviceObjective::chunked(&x, &y, form, rows_per_chunk).unwrap();
        let p = params(form.shape.n_params(data.k), 2);
        let (mut gh, mut gd) = (vec![0.0; p.len()], vec![0.0; p.len()]);
        let (vh, vd) = (host.evaluate(&p, &mut gh), FlatObjective::evaluate(&device, &p, &mut gd));
        let what = format!("{form:?} {dtype:?}");
        assert_close(&[vd.objective, vd.nll], &[vh.objective, vh.nll], tol, &what);
        assert_close(&gd, &gh, tol, &what);
        assert_close(&[FlatObjective::nll(&device, &p)], &[host.nll(&p)], tol, &what);
        let (dh, dd) = (host.hessian_diagonal(&p), FlatObjective::hessian_diagonal(&device, &p));
        assert_close(&dd, &dh, tol, &what);
        assert!(device.take_failure().is_none());
    }
}

#[test]
fn device_passes_equal_the_host_pass_in_f64() {
    // 64-row chunks: five chunks, the last one partial.
    compare(DType::F64, 1e-12, 64);
    compare(DType::F64, 1e-12, 1000);
}

#[test]
fn device_passes_in_f32_agree_to_f32_rounding() {
    compare(DType::F32, 2e-5, 64);
}

/// calib's kernels on wgpu (lavapipe in CI), the diagonal maps' fused pass and the full maps'
/// softmax terms, against the host pass with every penalty: value, NLL, gradient and Hessian
/// diagonal to f32 rounding, for K within one lane's classes, past two lanes' (K = 70) and
/// past one column cube's (K = 300), rows in several chunks and row blocks; and on integer
/// scores, whose rows tie at their maximum.
#[cfg(feature = "wgpu")]
#[test]
fn the_fused_kernel_equals_the_host_pass() {
    use calib_core::backend::{WgpuApi, open_wgpu};
    let device = match open_wgpu(WgpuApi::Vulkan) {
        Ok(d) => d,
        Err(e) if std::env::var("CALIB_REQUIRE_WGPU").as_deref() == Ok("1") => panic!("{e}"),
        Err(e) => return eprintln!("skipping the fused kernel's test: no Vulkan adapter ({e})"),
    };
    let tied = |k| {
        let mut data = rows(300, k, 3);
        data.features.iter_mut().for_each(|v| *v = v.round());
        data
    };
    for data in [rows(300, 6, 3), rows(300, 70, 3), rows(300, 300, 3), tied(70)] {
        let k = data.k;
        let (x, y) = on_device(&data, DType::F32);
        let (x, y) = (x.to_device(&device), y.to_device(&device));
        for form in forms() {
            let host = AffineObjective::new(&data, form);
            let fused = DeviceObjective::chunked(&x, &y, form, 128).unwrap();
            let p = params(form.shape.n_params(k), 2);
            let (mut gh, mut gd) = (vec![0.0; p.len()], vec![0.0; p.len()]);
            let vh = host.evaluate(&p, &mut gh);
            let (vd, dd) = FlatObjective::evaluate_with_diagonal(&fused, &p, &mut gd);
            let what = format!("K = {k}, {form:?}");
            assert_close(&[vd.objective, vd.nll], &[vh.objective, vh.nll], 2e-5, &what);
            assert_close(&gd, &gh, 2e-5, &what);
            assert_close(&dd.unwrap(), &host.hessian_diagonal(&p), 2e-5, &what);
            assert_close(&[FlatObjective::nll(&fused, &p)], &[host.nll(&p)], 2e-5, &what);
            assert!(fused.take_failure().is_none());
        }
    }
}

/// One synchronisation per pass, whatever the number of row chunks: an evaluation reads back
/// the `K x K + K` gradient sums and the N row NLLs (with the Hessian diagonal, its sums too,
/// equal to those of a pass of its own), the NLL alone the row NLLs, the Hessian diagonal its
/// sums.
#[test]
fn a_pass_synchronises_once() {
    let data = rows(300, 6, 1);
    let (x, y) = on_device(&data, DType::F32);
    let form = HostForm { shape: AffineShape::Full, penalty: Regularisation::L2 { lambda: 0.3 } };
    let device = DeviceObjective::chunked(&x, &y, form, 64).unwrap();
    let p = params(form.shape.n_params(data.k), 2);
    let mut g = vec![0.0; p.len()];
    let (_, cost) = DeviceCost::measure(|| FlatObjective::evaluate(&device, &p, &mut g));
    assert_eq!((cost.syncs, cost.read_back_bytes), (1, (42 + 300) * 4));
    let (both, cost) =
        DeviceCost::measure(|| FlatObjective::evaluate_with_diagonal(&device, &p, &mut g));
    assert_eq!((cost.syncs, cost.read_back_bytes), (1, (42 + 42 + 300) * 4));
    assert_eq!(both.1.unwrap(), FlatObjective::hessian_diagonal(&device, &p));
    let (_, cost) = DeviceCost::measure(|| FlatObjective::nll(&device, &p));
    assert_eq!((cost.syncs, cost.read_back_bytes), (1, 300 * 4));
    let (_, cost) = DeviceCost::measure(|| FlatObjective::hessian_diagonal(&device, &p));
    assert_eq!((cost.syncs, cost.read_back_bytes), (1, 42 * 4));
}

/// `n` rows whose `k` features come from `h` hidden units (rank `h + 1` with the constant).
fn narrow_rows(n: usize, k: usize, h: usize, seed: u64) -> HostRows {
    let mut rng = SplitMix64(seed);
    let layer: Vec<f64> = (0..k * h).map(|_| rng.normal()).collect();
    let mut features = Vec::with_capacity(n * k);
    for _ in 0..n {
        let hidden: Vec<f64> = (0..h).map(|_| rng.normal()).collect();
        for c in 0..k {
            let v: f64 = (0..h).map(|j| layer[c * h + j] * hidden[j]).sum();
            features.push(f64::from(v as f32));
        }
    }
    let labels = (0..n).map(|i| i % k).collect();
    HostRows { features, labels, n, k, weights: None }
}

/// f32 rows from a narrow layer: the f32 Gram's screen sends them to the exact f64 Gram,
/// which finds the host's null directions; full-rank rows pass the screen with none.
#[test]
fn flat_directions_of_f32_rows_are_the_hosts() {
    let form = HostForm { shape: AffineShape::Full, penalty: Regularisation::None };
    let narrow = narrow_rows(400, 10, 6, 3);
    let (x, y) = on_device(&narrow, DType::F32);
    let device = DeviceObjective::chunked(&x, &y, form, 128).unwrap();
    let host = AffineObjective::new(&narrow, form);
    let (Some(a), Some(b)) = (&device.terms().span, &host.terms.span) else {
        panic!("both should find the null directions")
    };
    assert_eq!(a.nullity(), b.nullity());
    let mut rng = SplitMix64(4);
    let step: Vec<f64> = (0..110).map(|_| rng.normal()).collect();
    let (mut sa, mut sb) = (step.clone(), step);
    device.keep_in_span(&mut sa);
    host.keep_in_span(&mut sb);
    assert_close(&sa, &sb, 1e-9, "projected step");

    let wide = rows(400, 10, 5);
    let (x, y) = on_device(&wide, DType::F32);
    assert!(DeviceObjective::new(&x, &y, form).unwrap().terms().span.is_none());
    assert!(AffineObjective::new(&wide, form).terms.span.is_none());
}

/// The blocked `a^T b` equals the plain product, with and without a rest of rows, in f64.
#[test]
fn blocked_products_equal_the_plain_product() {
    let device = Device::flex();
    let mut rng = SplitMix64(7);
    let mut matrix = |n: usize, k: usize| {
        let values: Vec<f64> = (0..n * k).map(|_| rng.normal()).collect();
        Tensor::<2>::from_data(TensorData::new(values, [n, k]), (&device, DType::F64))
    };
    for (n, rows) in [(1000, 64), (1024, 64), (300, 256), (100, 7)] {
        let (a, b) = (matrix(n, 9), matrix(n, 9));
        let plain =
            a.clone().transpose().matmul(b.clone()).into_data().try_to_vec::<f64>().unwrap();
        let blocked = transposed_product(a, b, rows).into_data().try_to_vec::<f64>().unwrap();
        assert_close(&blocked, &plain, 1e-12, &format!("{n} rows by {rows}"));
    }
}
