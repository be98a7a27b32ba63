//! Shared test helpers: backends, the real logit dumps, and an independent f64 reference.
#![allow(dead_code)]

pub mod fixtures;
pub mod reference;

use std::path::{Path, PathBuf};

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};

/// The devices under test: flex always, ndarray and wgpu when compiled in.
///
/// wgpu is asked for a Vulkan adapter: the tolerances of the device tests are those of
/// Vulkan drivers (a GPU's or Mesa's lavapipe); other APIs round differently (OpenGL's
/// llvmpipe misses the 1e-6 references). With `CALIB_REQUIRE_WGPU=1` (CI), a wgpu build
/// without one fails instead of skipping the device.
pub fn devices() -> Vec<(&'static str, Device)> {
    #[allow(unused_mut)]
    let mut out = vec![("flex", calib::backend::open_device("flex").unwrap())];
    #[cfg(feature = "ndarray")]
    out.push(("ndarray", calib::backend::open_device("ndarray").unwrap()));
    #[cfg(feature = "wgpu")]
    match calib::backend::open_wgpu(calib::backend::WgpuApi::Vulkan) {
        Ok(d) => out.push(("wgpu", d)),
        Err(e) if std::env::var("CALIB_REQUIRE_WGPU").as_deref() == Ok("1") => {
            panic!("CALIB_REQUIRE_WGPU=1 but wgpu has no Vulkan adapter: {e}")
        }
        Err(e) => eprintln!(
            "skipping wgpu: no Vulkan adapter ({e}); the wgpu tests run on Vulkan only; CALIB_REQUIRE_WGPU=1 makes this a failure"
        ),
    }
    out
}

/// A split of a real `.npz` logit dump: `(values [N*K], K, labels)`.
pub struct Dump {
    pub logits: Vec<f32>,
    pub n_classes: usize,
    pub labels: Vec<i64>,
}

/// The wgpu device of [`devices`] (`None` where this build or machine has none, as there).
pub fn wgpu() -> Option<Device> {
    devices().into_iter().find(|(name, _)| *name == "wgpu").map(|(_, d)| d)
}

/// Path of a dump shipped in the repository's `data/` folder.
pub fn dump_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(name)
}

/// Loads `{split}_logits` and `{split}_labels` of a dump shipped in `data/`.
pub fn load_dump(name: &str, split: &str) -> Dump {
    load_dump_at(&dump_path(name), split)
}

/// Loads `{split}_logits` and `{split}_labels` of the `.npz` at `path`.
pub fn load_dump_at(path: &Path, split: &str) -> Dump {
    let mut npz =
        npyz::npz::NpzArchive::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let logits = npz.by_name(&format!("{split}_logits")).unwrap().expect("logits array");
    let shape = logits.shape().to_vec();
    let logits: Vec<f32> = logits.into_vec().unwrap();
    let labels = npz.by_name(&format!("{split}_labels")).unwrap().expect("labels array");
    let labels: Vec<i64> = labels.into_vec().unwrap();
    Dump { logits, n_classes: shape[1] as usize, labels }
}

impl Dump {
    pub fn n_samples(&self) -> usize {
        self.labels.len()
    }

    /// The predictions on `device`, uploaded as device tensors.
    pub fn on(&self, device: &Device) -> Predictions {
        use calib::burn::tensor::{Int, Tensor, TensorData};
        let n = self.n_samples();
        let v = Tensor::<2>::from_data(
            TensorData::new(self.logits.clone(), [n, self.n_classes]),
            device,
        );
        let l = Tensor::<1, Int>::from_data(TensorData::new(self.labels.clone(), [n]), device);
        Predictions::logits(v, l).unwrap()
    }

    /// The predictions kept on the host and uploaded in chunks.
    pub fn host_on(&self, device: &Device) -> Predictions {
        Predictions::from_host(
            &self.logits,
            self.n_classes,
            &self.labels,
            InputConfig::new(ScoreKind::Logits),
            device,
        )
        .unwrap()
    }
}

/// Deterministic pseudo-random numbers for synthetic inputs.
#[allow(unused_imports)]
pub use calib::synthetic::SplitMix64 as Rng;

/// Synthetic over-confident logits `[n, k]` with labels (70 % accuracy, temperature 1.5).
pub fn synthetic(n: usize, k: usize, seed: u64) -> Dump {
    let (logits, labels) = calib::synthetic::overconfident_logits(n, k, 0.7, 1.5, seed);
    Dump { logits, n_classes: k, labels }
}

/// The optional larger collection of dumps: `CALIB_DATA_DIR`, else `../shared/data/logits`
/// beside the checkout. `None` (and a line on stderr saying that `test` skipped) when neither
/// exists; a set but missing `CALIB_DATA_DIR` is an error, not a skip.
pub fn collection_dir(test: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CALIB_DATA_DIR") {
        let dir = PathBuf::from(dir);
        assert!(dir.is_dir(), "CALIB_DATA_DIR={} is not a directory", dir.display());
        return Some(dir);
    }
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/logits");
    if shared.is_dir() {
        return Some(shared);
    }
    // Written to the stderr handle, not through `eprintln!`, which the test harness captures
    // for passing tests: the skip must show.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr().lock(),
        "{test}: skipped, no dump collection (set CALIB_DATA_DIR or place ../shared/data/logits \
         beside the checkout); the dumps in data/ are covered by the other tests"
    );
    None
}

/// Every `.npz` directly in `dir` or one folder below it, sorted.
pub fn npz_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            folders.push(path);
        }
    }
    for folder in folders {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "npz") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The dumps shipped in `data/`, sorted.
pub fn shipped_dumps() -> Vec<PathBuf> {
    npz_files(&dump_path(""))
}

/// Mean NLL of `softmax(z / t)` in f64, a plain loop (independent of calib's code).
pub fn nll_at_temperature(d: &Dump, t: f64) -> f64 {
    let k = d.n_classes;
    let mut total = 0.0;
    for (row, &y) in d.logits.chunks(k).zip(&d.labels) {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64 / t));
        let s: f64 = row.iter().map(|&z| (z as f64 / t - m).exp()).sum();
        total += m + s.ln() - row[y as usize] as f64 / t;
    }
    total / d.n_samples() as f64
}

/// The temperature minimising [`nll_at_temperature`], by golden-section search on `ln T`
/// over `[ln 0.05, ln 50]` to a bracket of 1e-12 (the NLL is unimodal in `ln T`).
pub fn golden_section_temperature(d: &Dump) -> f64 {
    let f = |u: f64| nll_at_temperature(d, u.exp());
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (0.05f64.ln(), 50f64.ln());
    let (mut c, mut e) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fe) = (f(c), f(e));
    while b - a > 1e-12 {
        if fc < fe {
            (b, e, fe) = (e, c, fc);
            c = b - g * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, e, fe);
            e = a + g * (b - a);
            fe = f(e);
        }
    }
    (0.5 * (a + b)).exp()
}

/// The metrics on adaptive ranges. From logits, the wgpu kernels' values differ from the f64
/// engine's by more than the rest: scores that differ in f64 can round to one f32 (a run of top-label
/// confidences just below 1 does) and then split by row order instead of by value, moving
/// pairs between neighbouring ranges. On the same f32 scores the ranges are identical
/// (`tests/device_ranges.rs`).
pub const ADAPTIVE: [&str; 5] = ["rmsce", "ace", "tace", "debiased_l2", "plugin_l2"];

/// The tolerance for metric `name`: `adaptive_tol` for the adaptive ones, else `tol`.
pub fn tolerance_of(name: &str, tol: f64, adaptive_tol: f64) -> f64 {
    if ADAPTIVE.contains(&name) { adaptive_tol } else { tol }
}
