//! The binary maps that are sorts and scans, on rows that live on a GPU (wgpu; Mesa's
//! software Vulkan in CI): each class's pairs sorted on the device (`calib::engine::DevicePairs`),
//! then pooled (isotonic regression) or cut into bins (histogram binning, equal width or
//! equal mass) there, only the blocks or bin sums and the training NLL read back; centred
//! isotonic regression pools as isotonic regression does, each block with its mean score. On
//! probabilities stored in f32 the device's maps equal the host's fits on the same values
//! bit for bit (ties, runs longer than a tile, scores closer than 1e-15, absent classes); on
//! logits they are the fits of the kernels' f32 softmax; the costs are counted.
#![cfg(feature = "wgpu")]

mod common;

use calib::burn::tensor::{Device, Int, Tensor, TensorData};
use calib::engine::{DeviceCost, DevicePairs};
use calib::input::Predictions;
use calib::train::{
    AffineLogitScalingConfig, BayesianBinningConfig, BetaCalibrationConfig, BinStrategy, BinaryMap,
    CentredIsotonicMap, CentredIsotonicRegressionConfig, Fit, FitEngine, HistogramBinningConfig,
    HistogramMap, IsotonicMap, IsotonicRegressionConfig, PlattMapConfig,
    QuadraticLogitScalingConfig,
};
use common::Rng;

fn probabilities(values: &[f32], labels: &[i64], k: usize, device: &Device) -> Predictions {
    let n = labels.len();
    let v = Tensor::<2>::from_data(TensorData::new(values.to_vec(), [n, k]), device);
    let l = Tensor::<1, Int>::from_data(TensorData::new(labels.to_vec(), [n]), device);
    Predictions::probabilities(v, l).unwrap()
}

/// `n` rows of `k` probabilities: a third drawn from five fixed rows (long runs of tied
/// scores, crossing the device's 256-item tiles), a third with tiny scores closer than
/// 1e-15 apart (the tie rule's run-first case), the rest random; labels follow the rows'
/// top class 60 % of the time; class `absent` never occurs.
fn tied_rows(n: usize, k: usize, absent: usize, seed: u64) -> (Vec<f32>, Vec<i64>) {
    let mut rng = Rng(seed);
    let fixed: Vec<Vec<f32>> = (0..5)
        .map(|r| (0..k).map(|c| if c == r % k { 0.5 } else { 0.5 / (k - 1) as f32 }).collect())
        .collect();
    let (mut p, mut y) = (Vec::new(), Vec::new());
    for i in 0..n {
        let row: Vec<f32> = match i % 3 {
            0 => fixed[rng.below(5)].clone(),
            1 => {
                let tiny = 1e-20 + 4e-16 * rng.below(8) as f64;
                let mut row = vec![tiny as f32; k];
                row[rng.below(k)] = 1.0 - (k - 1) as f32 * tiny as f32;
                row
            }
            _ => {
                let raw: Vec<f64> = (0..k).map(|_| rng.uniform().powi(3)).collect();
                let sum: f64 = raw.iter().sum();
                raw.iter().map(|v| (v / sum) as f32).collect()
            }
        };
        let top = (0..k).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
        let mut label = if rng.uniform() < 0.6 { top } else { rng.below(k) };
        if label == absent {
            label = (absent + 1) % k;
        }
        p.extend(row);
        y.push(label as i64);
    }
    (p, y)
}

fn thresholds(map: &IsotonicMap) -> (Vec<u64>, Vec<u64>) {
    let (x, y) = map.thresholds();
    (x.iter().map(|v| v.to_bits()).collect(), y.iter().map(|v| v.to_bits()).collect())
}

/// f32 probabilities on the device: every class's map equals the host fit's on the same
/// values, bit for bit; the absent class keeps the identity with the host's warning; the
/// record's NLL agrees to f32 rounding; checked and unchecked launches agree.
#[test]
fn the_device_map_is_the_host_fit_on_its_scores() {
    let Some(gpu) = common::wgpu() else { return };
    let host = Device::flex();
    let config = IsotonicRegressionConfig::new();
    for (n, k) in [(3_000, 7), (700, 3), (41, 5)] {
        let (p, y) = tied_rows(n, k, 2, n as u64);
        let want = config.fit(&probabilities(&p, &y, k, &host)).unwrap();
        for checked in [false, true] {
            calib::engine::set_checked_kernels(checked);
            let got = config.fit(&probabilities(&p, &y, k, &gpu)).unwrap();
            calib::engine::set_checked_kernels(false);
            assert_eq!(got.record.engine, FitEngine::Kernels);
            for (c, (a, b)) in got.calibrator.maps().iter().zip(want.calibrator.maps()).enumerate()
            {
                assert_eq!(thresholds(a), thresholds(b), "N={n} K={k} class {c}");
            }
            assert_eq!(got.record.warnings, want.record.warnings);
            let (a, b) = (got.record.final_nll, want.record.final_nll);
            assert!((a - b).abs() <= 1e-5 * b.max(1.0), "N={n} K={k}: NLL {a} vs {b}");
        }
    }
}

/// Binary input: the one problem's map equals the host's; one outcome only is the host's
/// error.
#[test]
fn binary_scores_pool_on_the_device() {
    let Some(gpu) = common::wgpu() else { return };
    let host = Device::flex();
    let mut rng = Rng(3);
    let n = 2_500;
    let s: Vec<f32> =
        (0..n).map(|i| if i % 4 == 0 { 0.25 } else { rng.uniform() as f32 }).collect();
    let y: Vec<i64> = s.iter().map(|&v| i64::from(rng.uniform() < f64::from(v))).collect();
    let binary = |labels: &[i64], device: &Device| {
        let v = Tensor::<1>::from_data(TensorData::new(s.clone(), [n]), device);
        let l = Tensor::<1, Int>::from_data(TensorData::new(labels.to_vec(), [n]), device);
        Predictions::binary(v, l).unwrap()
    };
    let config = IsotonicRegressionConfig::new();
    let got = config.fit(&binary(&y, &gpu)).unwrap();
    let want = config.fit(&binary(&y, &host)).unwrap();
    assert_eq!(thresholds(&got.calibrator.maps()[0]), thresholds(&want.calibrator.maps()[0]));
    let (a, b) = (got.record.final_nll, want.record.final_nll);
    assert!((a - b).abs() <= 1e-5, "NLL {a} vs {b}");
    let none = vec![0; n];
    let device_error = config.fit(&binary(&none, &gpu)).unwrap_err().to_string();
    assert_eq!(device_error, config.fit(&binary(&none, &host)).unwrap_err().to_string());
}

/// Real logits (LeNet-5 on CIFAR-100, K = 100): the maps are fits of the kernels' f32 softmax,
/// so they match the host's f64 fit to f32 rounding of the scores: the training NLL to 1e-4,
/// the calibrated label probabilities to 1e-3 on average.
#[test]
fn logits_pool_on_the_device_close_to_the_host_fit() {
    let Some(gpu) = common::wgpu() else { return };
    let dump = common::load_dump("lenet5_cifar100.npz", "test");
    let config = IsotonicRegressionConfig::new();
    let got = config.fit(&dump.on(&gpu)).unwrap();
    let want = config.fit(&dump.on(&Device::flex())).unwrap();
    let (a, b) = (got.record.final_nll, want.record.final_nll);
    assert!((a - b).abs() <= 1e-4 * b, "NLL {a} vs {b}");
    let k = dump.n_classes;
    let mut gap = 0.0;
    for (i, &label) in dump.labels.iter().enumerate() {
        let row = &dump.logits[i * k..(i + 1) * k];
        let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let sum: f64 = row.iter().map(|&z| f64::from(z - m).exp()).sum();
        let p = f64::from(row[label as usize] - m).exp() / sum;
        let (g, w) =
            (&got.calibrator.maps()[label as usize], &want.calibrator.maps()[label as usize]);
        gap += (g.predict(p) - w.predict(p)).abs();
    }
    let mean = gap / dump.n_samples() as f64;
    assert!(mean <= 1e-3, "mean gap {mean}");
}

/// The cost: two synchronisations (the blocks' number per class, then the blocks with the
/// NLL), 26 launches making 18 reads of N K words (module docs of `pooled_pairs.rs`), and a read-back of two words
/// per class, four per block and the NLL: it does not grow with the rows' bytes.
#[test]
fn pooling_reads_back_the_blocks_alone() {
    let Some(gpu) = common::wgpu() else { return };
    let k = 10;
    for n in [2_000, 8_000] {
        let dump = common::synthetic(n, k, 5);
        let preds = dump.on(&gpu);
        let (pooled, cost) =
            DeviceCost::measure(|| DevicePairs::sort(&preds).and_then(|pairs| pairs.pooled()));
        let pooled = pooled.unwrap();
        let blocks: usize = pooled.blocks.iter().map(Vec::len).sum();
        assert_eq!(cost.syncs, 2, "{cost:?}");
        assert_eq!(cost.passes((n * k * 4) as u64), 18.0, "{cost:?}");
        assert_eq!(cost.launches, 26, "{cost:?}");
        assert_eq!(cost.read_back_bytes, (4 * 2 * k + 16 * blocks + 4) as u64, "{cost:?}");
        assert!(cost.read_back_bytes * 10 < (n * k * 4) as u64, "{cost:?}");
        for class in &pooled.blocks {
            assert_eq!(class.iter().map(|b| b.count as usize).sum::<usize>(), n);
            assert!(class.windows(2).all(|w| w[0].last < w[1].first));
        }
    }
}

/// Centred isotonic regression on f32 probabilities on the device: every class's map is the
/// host fit's on the same values, its values bit for bit and its points (the blocks' first and
/// last scores exactly, their centres from the device's f32 mean) to 1e-6 relative; the
/// absent class keeps the identity with the host's warning; the training NLL (the maps'
/// own, applied on the device) agrees to f32 rounding; binary input too.
#[test]
fn centred_isotonic_pools_on_the_device_as_the_host_fit() {
    let Some(gpu) = common::wgpu() else { return };
    let host = Device::flex();
    let config = CentredIsotonicRegressionConfig::new();
    let same = |a: &CentredIsotonicMap, b: &CentredIsotonicMap, what: &str| {
        let ((ax, ay), (bx, by)) = (a.points(), b.points());
        assert_eq!(ax.len(), bx.len(), "{what}");
        let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(ay), bits(by), "{what}");
        for (x, w) in ax.iter().zip(bx) {
            assert!((x - w).abs() <= 1e-6 * w.abs(), "{what}: point {x} vs {w}");
        }
    };
    for (n, k) in [(3_000, 7), (700, 3), (41, 5)] {
        let (p, y) = tied_rows(n, k, 2, n as u64 + 7);
        let want = config.fit(&probabilities(&p, &y, k, &host)).unwrap();
        let got = config.fit(&probabilities(&p, &y, k, &gpu)).unwrap();
        assert_eq!(got.record.engine, FitEngine::Kernels);
        for (c, (a, b)) in got.calibrator.maps().iter().zip(want.calibrator.maps()).enumerate() {
            same(a, b, &format!("N={n} K={k} class {c}"));
        }
        assert_eq!(got.record.warnings, want.record.warnings);
        let (a, b) = (got.record.final_nll, want.record.final_nll);
        assert!((a - b).abs() <= 1e-5 * b.max(1.0), "N={n} K={k}: NLL {a} vs {b}");
    }
    let mut rng = Rng(13);
    let n = 2_500;
    let s: Vec<f32> =
        (0..n).map(|i| if i % 4 == 0 { 0.25 } else { rng.uniform() as f32 }).collect();
    let y: Vec<i64> = s.iter().map(|&v| i64::from(rng.uniform() < f64::from(v))).collect();
    let binary = |device: &Device| {
        let v = Tensor::<1>::from_data(TensorData::new(s.clone(), [n]), device);
        let l = Tensor::<1, Int>::from_data(TensorData::new(y.clone(), [n]), device);
        Predictions::binary(v, l).unwrap()
    };
    let (got, want) = (config.fit(&binary(&gpu)).unwrap(), config.fit(&binary(&host)).unwrap());
    same(&got.calibrator.maps()[0], &want.calibrator.maps()[0], "binary");
    let (a, b) = (got.record.final_nll, want.record.final_nll);
    assert!((a - b).abs() <= 1e-5, "binary NLL {a} vs {b}");
}

/// The blocks with their mean scores cost one more read of the keys than the blocks alone
/// (19 reads of N K words, the same 26 launches and 2 synchronisations) and a fifth word per
/// block; every mean lies between its block's first and last score. The CIR fit adds the
/// maps' NLL on the device: one more synchronisation of one value.
#[test]
fn block_means_cost_one_read_and_a_word_per_block() {
    let Some(gpu) = common::wgpu() else { return };
    let (n, k) = (4_000, 10);
    let preds = common::synthetic(n, k, 5).on(&gpu);
    let (pooled, cost) = DeviceCost::measure(|| {
        DevicePairs::sort(&preds).and_then(|pairs| pairs.pooled_with_means())
    });
    let pooled = pooled.unwrap();
    let blocks: usize = pooled.blocks.iter().map(Vec::len).sum();
    assert_eq!(cost.syncs, 2, "{cost:?}");
    assert_eq!(cost.passes((n * k * 4) as u64), 19.0, "{cost:?}");
    assert_eq!(cost.launches, 26, "{cost:?}");
    assert_eq!(cost.read_back_bytes, (4 * 2 * k + 20 * blocks + 4) as u64, "{cost:?}");
    for b in pooled.blocks.iter().flatten() {
        let mean = b.mean.unwrap();
        assert!(f64::from(b.first) <= mean && mean <= f64::from(b.last), "{b:?}");
    }
    let config = CentredIsotonicRegressionConfig::new();
    let (fitted, fit_cost) = DeviceCost::measure(|| config.fit(&preds));
    assert_eq!(fitted.unwrap().record.engine, FitEngine::Kernels);
    assert_eq!(fit_cost.syncs, 3, "{fit_cost:?}");
    assert_eq!(fit_cost.read_back_bytes, cost.read_back_bytes + 4, "{fit_cost:?}");
}

/// Real logits (CIFAR-100): the device's CIR maps fit the kernels' f32 softmax, so the
/// training NLL is the host's f64 fit's to 1e-4.
#[test]
fn centred_isotonic_on_logits_is_close_to_the_host_fit() {
    let Some(gpu) = common::wgpu() else { return };
    let dump = common::load_dump("lenet5_cifar100.npz", "test");
    let config = CentredIsotonicRegressionConfig::new();
    let got = config.fit(&dump.on(&gpu)).unwrap();
    let want = config.fit(&dump.on(&Device::flex())).unwrap();
    assert_eq!(got.record.engine, FitEngine::Kernels);
    let (a, b) = (got.record.final_nll, want.record.final_nll);
    assert!((a - b).abs() <= 1e-4 * b, "NLL {a} vs {b}");
}

/// The logistic maps (affine and quadratic on the logit, Platt one-vs-rest) fitted on the
/// device's sums: on f32 probabilities and on the CIFAR-100 logits the record says so, the
/// training NLL is the host fit's to 1e-5 relative and the calibrated label probabilities
/// agree to 1e-4 on average (the sums are f32, so the coefficients stop within f32 noise of
/// the optimum); the absent class keeps the identity with the host's warning. Each Newton
/// iteration synchronises once and reads back 11 words a class; one more for the positives
/// (Platt's targets) and one for the NLL.
#[test]
fn logistic_maps_fit_on_the_device_close_to_the_host_fit() {
    use calib::train::AnyCalibrator;
    let Some(gpu) = common::wgpu() else { return };
    let host = Device::flex();
    let (k, n) = (7, 3_000);
    let (p, y) = tied_rows(n, k, 2, 31);
    let dump = common::load_dump("lenet5_cifar100.npz", "test");
    type Fitter = Box<dyn Fn(&Predictions) -> (AnyCalibrator, calib::train::FitRecord)>;
    let fitters: [(&str, Fitter); 3] = [
        (
            "affine",
            Box::new(|p| {
                let f = AffineLogitScalingConfig::new().fit(p).unwrap();
                (f.calibrator.into(), f.record)
            }),
        ),
        (
            "quadratic",
            Box::new(|p| {
                let f = QuadraticLogitScalingConfig::new().fit(p).unwrap();
                (f.calibrator.into(), f.record)
            }),
        ),
        (
            "platt",
            Box::new(|p| {
                let f = PlattMapConfig::new().fit(p).unwrap();
                (f.calibrator.into(), f.record)
            }),
        ),
    ];
    for (what, fit) in &fitters {
        for (rows, on_gpu, on_host) in [
            ("probabilities", probabilities(&p, &y, k, &gpu), probabilities(&p, &y, k, &host)),
            ("logits", dump.on(&gpu), dump.on(&host)),
        ] {
            let ((got, record), cost) = DeviceCost::measure(|| fit(&on_gpu));
            let (want, want_record) = fit(&on_host);
            assert_eq!(record.engine, FitEngine::Kernels, "{what} {rows}");
            assert_eq!(record.warnings, want_record.warnings, "{what} {rows}");
            let (a, b) = (record.final_nll, want_record.final_nll);
            assert!((a - b).abs() <= 1e-5 * b, "{what} {rows}: NLL {a} vs {b}");
            let extra = 2 + u64::from(*what == "platt");
            assert_eq!(cost.syncs, record.iterations as u64 + extra, "{what} {rows}: {cost:?}");
            let classes = on_gpu.n_columns() as u64;
            let budget = cost.syncs * (4 * 11 * classes + 64);
            assert!(cost.read_back_bytes <= budget, "{what} {rows}: {cost:?}");
            let (a, b) = (
                host_values(&got.calibrate(&on_host).unwrap()),
                host_values(&want.calibrate(&on_host).unwrap()),
            );
            let mean = a.iter().zip(&b).map(|(a, b)| (a - b).abs()).sum::<f64>() / a.len() as f64;
            assert!(mean <= 1e-4, "{what} {rows}: mean gap {mean}");
        }
    }
}

fn bins(map: &HistogramMap) -> (Vec<u64>, Vec<u64>) {
    let (e, v) = map.bins();
    (e.iter().map(|x| x.to_bits()).collect(), v.iter().map(|x| x.to_bits()).collect())
}

/// Histogram binning, equal width and equal mass, one-vs-rest and binary: the device's maps
/// equal the host fit's on the same f32 scores bit for bit (scores on the edges, ties at the
/// equal-mass cuts, an absent class with the host's warning); the NLL agrees to f32 rounding;
/// checked and unchecked launches agree; bootstrap resamples and fewer rows than bins take
/// the host path.
#[test]
fn histogram_bins_on_the_device_are_the_host_fit_on_its_scores() {
    let Some(gpu) = common::wgpu() else { return };
    let host = Device::flex();
    for (n, k) in [(3_000, 7), (40, 5), (12, 3)] {
        let (p, y) = tied_rows(n, k, 2, n as u64 + 1);
        for strategy in [BinStrategy::Width, BinStrategy::Mass] {
            let config = HistogramBinningConfig::new().with_strategy(strategy);
            let want = config.fit(&probabilities(&p, &y, k, &host)).unwrap();
            for checked in [false, true] {
                calib::engine::set_checked_kernels(checked);
                let got = config.fit(&probabilities(&p, &y, k, &gpu)).unwrap();
                calib::engine::set_checked_kernels(false);
                let engine = if n < 15 { FitEngine::Host } else { FitEngine::Kernels };
                assert_eq!(got.record.engine, engine, "N={n}");
                let maps = got.calibrator.maps().iter().zip(want.calibrator.maps());
                for (c, (a, b)) in maps.enumerate() {
                    assert_eq!(bins(a), bins(b), "N={n} K={k} {strategy:?} class {c}");
                }
                assert_eq!(got.record.warnings, want.record.warnings);
                let (a, b) = (got.record.final_nll, want.record.final_nll);
                assert!((a - b).abs() <= 1e-5 * b.max(1.0), "N={n} {strategy:?}: NLL {a} vs {b}");
            }
        }
    }
    let (p, y) = tied_rows(500, 4, 9, 4);
    let bootstrap = HistogramBinningConfig::new().with_bootstrap(3);
    let got = bootstrap.fit(&probabilities(&p, &y, 4, &gpu)).unwrap();
    assert_eq!(got.record.engine, FitEngine::Host);
    // Binary scores on the even edges themselves (right-closed bins).
    let n = 1_500;
    let s: Vec<f32> = (0..n).map(|i| (i % 16) as f32 / 15.0).map(|v| v.min(1.0)).collect();
    let y: Vec<i64> = (0..n).map(|i| i64::from(i % 3 == 0)).collect();
    let binary = |device: &Device| {
        let v = Tensor::<1>::from_data(TensorData::new(s.clone(), [n]), device);
        let l = Tensor::<1, Int>::from_data(TensorData::new(y.clone(), [n]), device);
        Predictions::binary(v, l).unwrap()
    };
    for strategy in [BinStrategy::Width, BinStrategy::Mass] {
        let config = HistogramBinningConfig::new().with_strategy(strategy);
        let got = config.fit(&binary(&gpu)).unwrap();
        let want = config.fit(&binary(&host)).unwrap();
        assert_eq!(bins(&got.calibrator.maps()[0]), bins(&want.calibrator.maps()[0]));
    }
}

/// The cost of binning: the sort's, then one synchronisation for equal width (two for equal
/// mass: the scores at the cuts first), a read-back of two words per edge and the NLL.
#[test]
fn binning_reads_back_the_bin_sums_alone() {
    let Some(gpu) = common::wgpu() else { return };
    let (n, k, b) = (4_000, 10, 15);
    let preds = common::synthetic(n, k, 6).on(&gpu);
    let pairs = DevicePairs::sort(&preds).unwrap();
    let even: Vec<f64> = (0..=b).map(|j| j as f64 / b as f64).collect();
    let (binned, cost) = DeviceCost::measure(|| pairs.binned(&vec![even; k]));
    let binned = binned.unwrap();
    assert_eq!(cost.syncs, 1, "{cost:?}");
    assert_eq!(cost.launches, 6, "{cost:?}");
    assert_eq!(cost.passes((n * k * 4) as u64), 3.0, "{cost:?}");
    assert_eq!(cost.read_back_bytes, (4 * 2 * k * (b + 1) + 4) as u64, "{cost:?}");
    assert!(binned.bins.iter().all(|c| c.iter().map(|&(n, _)| n as usize).sum::<usize>() == n));
}

/// The values of `preds` on the host, row-major.
fn host_values(preds: &Predictions) -> Vec<f64> {
    preds.host_rows().unwrap().0.into_f64()
}

/// Calibrating rows on a GPU with these maps stays there: on f32 probabilities (the same
/// values on both sides) the output equals the host's application of the same maps to f32
/// rounding (isotonic, histogram width and mass, CIR, BBQ and the logistic maps: affine,
/// quadratic, beta, Platt; one-vs-rest with an absent class, and binary); on logits, where the device's scores are its f32 softmax, to 1e-4 on average (a
/// steep isotonic piece turns f32 rounding of a score into more); only the output's checks'
/// scalars are read back, never the rows.
#[test]
fn the_maps_apply_on_the_device() {
    use calib::train::Calibrator;
    let Some(gpu) = common::wgpu() else { return };
    let host = Device::flex();
    let gap = |got: &Predictions, want: &Predictions| {
        let (a, b) = (host_values(got), host_values(want));
        assert_eq!(a.len(), b.len());
        let gaps: Vec<f64> = a.iter().zip(&b).map(|(a, b)| (a - b).abs()).collect();
        (gaps.iter().fold(0.0, |m: f64, &g| m.max(g)), gaps.iter().sum::<f64>() / gaps.len() as f64)
    };
    let (k, n) = (7, 3_000);
    let (p, y) = tied_rows(n, k, 2, 21);
    let (p_gpu, p_host) = (probabilities(&p, &y, k, &gpu), probabilities(&p, &y, k, &host));
    let dump = common::load_dump("lenet5_cifar100.npz", "test");
    let (z_gpu, z_host) = (dump.on(&gpu), dump.on(&host));
    let mass = HistogramBinningConfig::new().with_strategy(BinStrategy::Mass);
    for (what, fit) in [
        (
            "isotonic",
            Box::new(|p: &Predictions| {
                IsotonicRegressionConfig::new().fit(p).unwrap().calibrator.into()
            }) as Box<dyn Fn(&Predictions) -> calib::train::AnyCalibrator>,
        ),
        (
            "width",
            Box::new(|p: &Predictions| {
                HistogramBinningConfig::new().fit(p).unwrap().calibrator.into()
            }),
        ),
        ("mass", Box::new(move |p: &Predictions| mass.fit(p).unwrap().calibrator.into())),
        (
            "cir",
            Box::new(|p: &Predictions| {
                CentredIsotonicRegressionConfig::new().fit(p).unwrap().calibrator.into()
            }),
        ),
        (
            "bbq",
            Box::new(|p: &Predictions| {
                BayesianBinningConfig::new().fit(p).unwrap().calibrator.into()
            }),
        ),
        (
            "affine",
            Box::new(|p: &Predictions| {
                AffineLogitScalingConfig::new().fit(p).unwrap().calibrator.into()
            }),
        ),
        (
            "quadratic",
            Box::new(|p: &Predictions| {
                QuadraticLogitScalingConfig::new().fit(p).unwrap().calibrator.into()
            }),
        ),
        (
            "beta",
            Box::new(|p: &Predictions| {
                BetaCalibrationConfig::new().fit(p).unwrap().calibrator.into()
            }),
        ),
        (
            "platt",
            Box::new(|p: &Predictions| PlattMapConfig::new().fit(p).unwrap().calibrator.into()),
        ),
    ] {
        let c = fit(&p_gpu);
        let (worst, _) = gap(&c.calibrate(&p_gpu).unwrap(), &c.calibrate(&p_host).unwrap());
        assert!(worst <= 2e-5, "{what}, probabilities: worst gap {worst}");
        let c = fit(&z_gpu);
        let got = c.calibrate(&z_gpu).unwrap();
        assert_eq!((got.n_samples(), got.n_columns()), (dump.n_samples(), dump.n_classes));
        let (_, mean) = gap(&got, &c.calibrate(&z_host).unwrap());
        assert!(mean <= 1e-4, "{what}, logits: mean gap {mean}");
    }
    let isotonic = IsotonicRegressionConfig::new().fit(&z_gpu).unwrap().calibrator;
    let (out, cost) = DeviceCost::measure(|| isotonic.calibrate(&z_gpu));
    out.unwrap();
    assert!(cost.read_back_bytes < 1024, "{cost:?}");
    let bbq = BayesianBinningConfig::new().fit(&z_gpu).unwrap().calibrator;
    let (out, cost) = DeviceCost::measure(|| bbq.calibrate(&z_gpu));
    out.unwrap();
    assert!(cost.read_back_bytes < 1024, "BBQ: {cost:?}");
    let quadratic = QuadraticLogitScalingConfig::new().fit(&z_gpu).unwrap().calibrator;
    let (out, cost) = DeviceCost::measure(|| quadratic.calibrate(&z_gpu));
    out.unwrap();
    assert!(cost.read_back_bytes < 1024, "quadratic: {cost:?}");
    // Binary scores.
    let mut rng = Rng(8);
    let m = 3_000;
    let s: Vec<f32> = (0..m).map(|_| rng.uniform() as f32).collect();
    let y: Vec<i64> = s.iter().map(|&v| i64::from(rng.uniform() < f64::from(v) * 0.8)).collect();
    let binary = |device: &Device| {
        let v = Tensor::<1>::from_data(TensorData::new(s.clone(), [m]), device);
        let l = Tensor::<1, Int>::from_data(TensorData::new(y.clone(), [m]), device);
        Predictions::binary(v, l).unwrap()
    };
    let (b_gpu, b_host) = (binary(&gpu), binary(&host));
    let isotonic = IsotonicRegressionConfig::new().fit(&b_gpu).unwrap().calibrator;
    let got = isotonic.calibrate(&b_gpu).unwrap();
    assert_eq!(got.kind(), calib::input::ScoreKind::Binary);
    let (worst, _) = gap(&got, &isotonic.calibrate(&b_host).unwrap());
    assert!(worst <= 2e-5, "binary: worst gap {worst}");
}

/// Separable outcomes (every class's scores split its rows exactly): the device's logistic
/// fit stops within its iteration cap and says why, as the host's does.
#[test]
fn separable_logistic_problems_stop_on_the_device() {
    let Some(gpu) = common::wgpu() else { return };
    let (k, n) = (3, 600);
    let y: Vec<i64> = (0..n).map(|i| (i % k) as i64).collect();
    let p: Vec<f32> =
        (0..n).flat_map(|i| (0..k).map(move |c| if c == i % k { 0.8 } else { 0.1 })).collect();
    let fitted = AffineLogitScalingConfig::new().fit(&probabilities(&p, &y, k, &gpu)).unwrap();
    let host = AffineLogitScalingConfig::new().fit(&probabilities(&p, &y, k, &Device::flex()));
    let host = host.unwrap();
    assert_eq!(fitted.record.engine, FitEngine::Kernels);
    assert!(fitted.record.iterations < 100, "{:?}", fitted.record);
    let says = |w: &[String]| w.iter().any(|w| w.contains("separate the outcomes"));
    assert!(says(&fitted.record.warnings), "{:?}", fitted.record.warnings);
    assert!(says(&host.record.warnings), "{:?}", host.record.warnings);
}
