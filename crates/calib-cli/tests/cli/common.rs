//! Helpers: run the `calib` binary, make scratch directories, write input files in every format.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use calib_cli::io::{DataSpec, Dataset, OutArray, OutValues, Scores, write_arrays};

/// A real CIFAR dump shipped in the repository's `data/` folder.
pub fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data").join(name)
}

/// densenet40_cifar10.npz, the dump most tests use.
pub fn densenet() -> PathBuf {
    shipped("densenet40_cifar10.npz")
}

/// The outcome of one run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts exit 0 and returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        &self.stdout
    }

    /// Asserts exit 2 with one plain error line containing every one of `needles`.
    #[track_caller]
    pub fn fails_with(&self, needles: &[&str]) {
        assert_eq!(
            self.code, 2,
            "expected exit 2; stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        // Notes and warnings may precede it; the error is one line, and the last.
        let lines: Vec<&str> = self.stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(lines.len(), 1, "one error line expected, got:\n{}", self.stderr);
        assert_eq!(self.stderr.lines().last(), Some(lines[0]), "{}", self.stderr);
        assert!(lines[0].starts_with("error: "), "{}", lines[0]);
        for n in needles {
            assert!(lines[0].contains(n), "`{n}` missing from: {}", lines[0]);
        }
        assert!(!self.stderr.contains("panicked") && !self.stderr.contains("RUST_BACKTRACE"));
    }

    /// stdout parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

/// Runs `calib args` in `dir`.
pub fn calib_in(dir: &Path, args: &[&str]) -> Run {
    calib_env(dir, args, &[])
}

/// Runs `calib args` in `dir` with the environment variables `vars` (and no
/// `CALIB_WORKER_TOKEN` but theirs).
pub fn calib_env(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let Output { status, stdout, stderr } = Command::new(env!("CARGO_BIN_EXE_calib"))
        .args(args)
        .current_dir(dir)
        .env_remove("CALIB_WORKER_TOKEN")
        .envs(vars.iter().copied())
        .env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into()))
        // `--backend wgpu` on Vulkan, where the tests' tolerances hold (or not at all: skipped).
        .env("CALIB_WGPU_API", "vulkan")
        .output()
        .expect("the calib binary runs");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// A scratch directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("calib-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    /// Runs `calib` with this directory as the working directory.
    pub fn calib(&self, args: &[&str]) -> Run {
        calib_in(&self.0, args)
    }

    /// Files in the directory (to check nothing half-written was left).
    pub fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One split of a dump, read by the library.
pub fn split(path: &Path, split: &str) -> Dataset {
    Dataset::load(&DataSpec::new(path).with_split(split), split).unwrap()
}

pub fn floats(name: &str, shape: Vec<usize>, values: Scores) -> OutArray {
    OutArray { name: name.into(), shape, values: OutValues::Float(values) }
}

pub fn ints(name: &str, values: Vec<i64>) -> OutArray {
    OutArray { name: name.into(), shape: vec![values.len()], values: OutValues::Int(values) }
}

/// Writes arrays as .npz/.npy with the library's writer.
pub fn write(path: &Path, arrays: &[OutArray]) {
    write_arrays(path, arrays).unwrap();
}

/// Writes a .npy of raw typed values (dtypes the library's writer does not produce).
pub fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], values: &[T]) {
    let mut buf = Vec::new();
    {
        use npyz::WriterBuilder;
        let mut w = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(shape)
            .writer(&mut buf)
            .begin_nd()
            .unwrap();
        w.extend(values.iter().copied()).unwrap();
        w.finish().unwrap();
    }
    std::fs::write(path, buf).unwrap();
}

/// Writes a .safetensors file of (name, dtype, shape, little-endian bytes).
pub fn write_safetensors(path: &Path, tensors: &[(&str, safetensors::Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| {
            ((*n).to_string(), safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap())
        })
        .collect();
    let bytes = safetensors::tensor::serialize(views, None).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Writes scores `z` (`K` columns) and `labels` whole (`z.npy`, `y.npy`) and as shards of
/// the rows between consecutive `cuts` (`z{i}.npy`, `y{i}.npy`); returns the shards' names.
pub fn write_shards(
    dir: &Scratch,
    z: &[f32],
    k: usize,
    labels: &[i64],
    cuts: &[usize],
) -> Vec<(String, String)> {
    write_npy(&dir.path("z.npy"), &[labels.len() as u64, k as u64], z);
    write_npy(&dir.path("y.npy"), &[labels.len() as u64], labels);
    let mut names = Vec::new();
    for (i, w) in cuts.windows(2).enumerate() {
        let (a, b) = (w[0], w[1]);
        let (zn, yn) = (format!("z{i}.npy"), format!("y{i}.npy"));
        write_npy(&dir.path(&zn), &[(b - a) as u64, k as u64], &z[a * k..b * k]);
        write_npy(&dir.path(&yn), &[(b - a) as u64], &labels[a..b]);
        names.push((zn, yn));
    }
    names
}

/// `metric -> value` of an `eval --format json` run.
pub fn metrics_of(run: &Run) -> serde_json::Map<String, serde_json::Value> {
    run.json()["metrics"].as_object().expect("a metrics object").clone()
}

/// Asserts two metric maps agree within `tol`.
#[track_caller]
pub fn assert_same_metrics(
    a: &serde_json::Map<String, serde_json::Value>,
    b: &serde_json::Map<String, serde_json::Value>,
    tol: f64,
) {
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (k, va) in a {
        let (x, y) = (va.as_f64().unwrap(), b[k].as_f64().unwrap());
        assert!((x - y).abs() <= tol, "{k}: {x} vs {y}");
    }
}
