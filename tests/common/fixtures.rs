//! The peer-library fixtures of `tests/fixtures/` and the binary problems built from them.

use std::path::Path;

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};

/// An open `tests/fixtures/*.npz`.
pub struct Fixture(npyz::npz::NpzArchive<std::io::BufReader<std::fs::File>>);

impl Fixture {
    /// Opens `tests/fixtures/{name}`.
    pub fn open(name: &str) -> Self {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
        Self(npyz::npz::NpzArchive::open(&path).unwrap_or_else(|e| panic!("{name}: {e}")))
    }

    /// A float64 array.
    pub fn f64s(&mut self, name: &str) -> Vec<f64> {
        self.0.by_name(name).unwrap().expect(name).into_vec().unwrap()
    }

    /// An int64 array.
    pub fn i64s(&mut self, name: &str) -> Vec<i64> {
        self.0.by_name(name).unwrap().expect(name).into_vec().unwrap()
    }
}

/// Host probability predictions `[N, k]` on flex.
pub fn probs(values: Vec<f64>, k: usize, labels: Vec<i64>) -> Predictions {
    let config = InputConfig::new(ScoreKind::Probabilities);
    Predictions::from_host_vec(values, k, labels, config, &Device::flex()).unwrap()
}

/// Host binary predictions on flex.
pub fn binary(scores: Vec<f64>, labels: Vec<i64>) -> Predictions {
    let config = InputConfig::new(ScoreKind::Binary);
    Predictions::from_host_vec(scores, 1, labels, config, &Device::flex()).unwrap()
}

/// The scores of `p`, as f64.
pub fn values(p: &Predictions) -> Vec<f64> {
    p.host_rows().unwrap().0.into_f64()
}

/// The first largest entry.
pub fn argmax(row: &[f64]) -> usize {
    (0..row.len()).fold(0, |b, k| if row[k] > row[b] { k } else { b })
}

/// `max |a - b|`.
pub fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// `binary_maps.npz`'s K-class calibration and test sets (2000 and 1000 rows, K = 10).
pub fn multiclass() -> (Predictions, Predictions) {
    let mut fx = Fixture::open("binary_maps.npz");
    let cal = probs(fx.f64s("cal_probs"), 10, fx.i64s("cal_labels"));
    let test = probs(fx.f64s("test_probs"), 10, fx.i64s("test_labels"));
    (cal, test)
}

/// `binary_maps.npz`'s binary problem: (top-label confidence, hit), calibration and test.
pub fn top_label_problem() -> (Predictions, Predictions) {
    let mut fx = Fixture::open("binary_maps.npz");
    let problem = |p: Vec<f64>, y: Vec<i64>| {
        let (s, o): (Vec<f64>, Vec<i64>) = p
            .chunks_exact(10)
            .zip(&y)
            .map(|(row, &y)| {
                let c = argmax(row);
                (row[c], i64::from(c as i64 == y))
            })
            .unzip();
        binary(s, o)
    };
    let cal = problem(fx.f64s("cal_probs"), fx.i64s("cal_labels"));
    let test = problem(fx.f64s("test_probs"), fx.i64s("test_labels"));
    (cal, test)
}

/// The first `n` rows of a shipped dump's `split` as f64 logits on flex.
pub fn logit_rows(file: &str, split: &str, n: usize) -> Predictions {
    let dump = super::load_dump(file, split);
    let k = dump.n_classes;
    let logits: Vec<f64> = dump.logits[..n * k].iter().map(|&x| f64::from(x)).collect();
    let config = InputConfig::new(ScoreKind::Logits);
    Predictions::from_host_vec(logits, k, dump.labels[..n].to_vec(), config, &Device::flex())
        .unwrap()
}

/// The softmax of calibrated logits, row by row.
pub fn softmax_rows(calibrated: &Predictions) -> Vec<f64> {
    let k = calibrated.n_columns();
    values(calibrated)
        .chunks_exact(k)
        .flat_map(|row| {
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = row.iter().map(|z| (z - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s)
        })
        .collect()
}
