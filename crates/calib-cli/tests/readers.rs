//! Every reader (npz stored and compressed, npy whole and in row chunks, safetensors, CSV,
//! Parquet and Arrow IPC files and streams whole and in row chunks; the evaluation-state readers, JSON and binary; the saved-calibrator loader) fed truncated,
//! bit-flipped, overwritten and random inputs derived from valid files gives a correct read or
//! an error naming the file: never a panic, and never an allocation far beyond the file's size
//! (16 times it, plus 1 MiB, or 4 MiB for the table decoders' batch buffers).
//! `PROPTEST_CASES` raises the cases of each target (docs/security.md, "Hostile inputs").
//!
//! A counting global allocator measures the peak of each read, so this file is a test binary
//! of its own with one test at a time holding the allocator's gauge.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use burn::tensor::Device;
use calib_cli::io::{
    DataSpec, Dataset, NpyChunks, OutArray, OutValues, Scores, is_table, read_state, write_arrays,
};
use calib_core::EvaluationConfig;
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_train::{
    AnyCalibrator, Fit, IsotonicRegressionConfig, SavedCalibrator, TemperatureScalingConfig,
};
use proptest::prelude::*;

/// The system allocator with a gauge of live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// The one unsafe item of the tests: forwarding to the system allocator, as `GlobalAlloc`
// requires, while counting.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Serialises the tests of this binary, so each read's peak is its own.
static GAUGE: Mutex<()> = Mutex::new(());

const N: usize = 40;
const K: usize = 3;

fn logits() -> Vec<f32> {
    (0..N * K).map(|i| ((i * 7919) % 23) as f32 / 4.0 - 2.0).collect()
}

fn labels() -> Vec<i64> {
    (0..N as i64).map(|i| i % K as i64).collect()
}

/// `.npy` bytes of one array, as calib's own writer produces them.
fn npy_bytes(shape: &[usize], values: OutValues) -> Vec<u8> {
    let path = std::env::temp_dir().join(format!("calib-readers-{}.npy", std::process::id()));
    let array = OutArray { name: "a".into(), shape: shape.to_vec(), values };
    write_arrays(&path, &[array]).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

fn logits_npy() -> Vec<u8> {
    npy_bytes(&[N, K], OutValues::Float(Scores::F32(logits())))
}

fn labels_npy() -> Vec<u8> {
    npy_bytes(&[N], OutValues::Int(labels()))
}

/// A valid `.npz` whose members are stored (as `numpy.savez` writes them).
fn stored_npz() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::FileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("test_logits.npy", options).unwrap();
    zip.write_all(&logits_npy()).unwrap();
    zip.start_file("test_labels.npy", options).unwrap();
    zip.write_all(&labels_npy()).unwrap();
    zip.finish().unwrap().into_inner()
}

/// A valid compressed `.npz`, written by calib's own writer.
fn compressed_npz(dir: &Path) -> Vec<u8> {
    let path = dir.join("valid.npz");
    let arrays = [
        OutArray {
            name: "test_logits".into(),
            shape: vec![N, K],
            values: OutValues::Float(Scores::F32(logits())),
        },
        OutArray { name: "test_labels".into(), shape: vec![N], values: OutValues::Int(labels()) },
    ];
    write_arrays(&path, &arrays).unwrap();
    std::fs::read(path).unwrap()
}

fn safetensors_bytes() -> Vec<u8> {
    use safetensors::tensor::TensorView;
    let z: Vec<u8> = logits().iter().flat_map(|v| v.to_le_bytes()).collect();
    let y: Vec<u8> = labels().iter().flat_map(|v| v.to_le_bytes()).collect();
    let views = vec![
        (
            "test_logits".to_string(),
            TensorView::new(safetensors::Dtype::F32, vec![N, K], &z).unwrap(),
        ),
        ("test_labels".to_string(), TensorView::new(safetensors::Dtype::I64, vec![N], &y).unwrap()),
    ];
    safetensors::tensor::serialize(views, None).unwrap()
}

fn csv_bytes() -> Vec<u8> {
    let mut out = String::from("a,b,c,label\n");
    for (row, y) in logits().chunks(K).zip(labels()) {
        out.push_str(&format!("{},{},{},{y}\n", row[0], row[1], row[2]));
    }
    out.into_bytes()
}

/// The valid logits and labels as a table: a `logits` column of fixed-size lists and a
/// `label` column.
fn table() -> arrow_array::RecordBatch {
    use arrow_array::types::Float32Type;
    use arrow_array::{ArrayRef, FixedSizeListArray, Int64Array, RecordBatch};
    let rows: Vec<_> =
        logits().chunks(K).map(|r| Some(r.iter().map(|&v| Some(v)).collect::<Vec<_>>())).collect();
    let logits = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(rows, K as i32);
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("logits", std::sync::Arc::new(logits)),
        ("label", std::sync::Arc::new(Int64Array::from(labels()))),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

/// The table as Parquet, in row groups of 16 rows (so that a chunked read crosses them).
fn parquet_bytes() -> Vec<u8> {
    let batch = table();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(16))
        .build();
    let mut out = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out
}

/// The table as an Arrow IPC file (`stream: false`) or stream, in batches of 16 rows.
fn ipc_bytes(stream: bool) -> Vec<u8> {
    let batch = table();
    let mut out = Vec::new();
    let parts = (0..N).step_by(16).map(|at| batch.slice(at, 16.min(N - at)));
    if stream {
        let mut writer =
            arrow_ipc::writer::StreamWriter::try_new(&mut out, &batch.schema()).unwrap();
        parts.for_each(|b| writer.write(&b).unwrap());
        writer.finish().unwrap();
    } else {
        let mut writer = arrow_ipc::writer::FileWriter::try_new(&mut out, &batch.schema()).unwrap();
        parts.for_each(|b| writer.write(&b).unwrap());
        writer.finish().unwrap();
    }
    out
}

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("calib-readers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The valid inputs, by file name (the extension picks the reader).
fn valid_files(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("stored.npz", stored_npz()),
        ("compressed.npz", compressed_npz(dir)),
        ("scores.npy", logits_npy()),
        ("data.safetensors", safetensors_bytes()),
        ("data.csv", csv_bytes()),
        ("table.parquet", parquet_bytes()),
        ("table.arrow", ipc_bytes(false)),
        ("table.arrows", ipc_bytes(true)),
    ]
}

/// The spec reading `name` in `dir`; a `.npy` takes its labels from a valid side file; a table
/// has no split.
fn spec_for(dir: &Path, name: &str) -> DataSpec {
    let spec = DataSpec::new(dir.join(name));
    let mut spec = if is_table(&dir.join(name)) { spec } else { spec.with_split("test") };
    if name.ends_with(".npy") {
        let labels_path = dir.join("labels.npy");
        std::fs::write(&labels_path, labels_npy()).unwrap();
        spec.labels_path = Some(labels_path);
    }
    spec
}

/// Keeps the panic hook quiet for the decoder panics that calib-io turns into errors: with
/// `RUST_BACKTRACE` set, the default hook symbolises a backtrace, tens of MB that the gauge
/// would count against the read. Any other panic is printed as before.
fn quiet_caught_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !calib_io::catching_decoder_panics() {
                default(info);
            }
        }));
    });
}

/// Reads `bytes` as the file `name` and checks the outcome: a read with the shape it should
/// have, or an error naming the file (returned); the peak allocation stays within a small
/// multiple of the file's size ([`check_loader`]).
fn check_read(dir: &Path, name: &str, bytes: &[u8]) -> Option<String> {
    quiet_caught_panics();
    let spec = spec_for(dir, name);
    let outcome = check_loader(dir, name, bytes, |path| {
        let data = Dataset::load(&spec, "test").map_err(|e| e.to_string());
        if name.ends_with(".npy") {
            // The row-chunk reader of `eval --chunk-rows` too.
            let chunks = NpyChunks::open(path).and_then(|mut chunks| {
                // Each chunk read into the last one's buffer, as `eval` does.
                let mut spare = None;
                while let Some((_, scores)) = chunks.next_chunk(7, spare.take())? {
                    spare = Some(scores);
                }
                Ok(())
            });
            if let Err(e) = chunks {
                assert!(e.to_string().contains(name), "{name} in chunks: {e}");
            }
        }
        if is_table(path) {
            // The row-chunk reader of `eval --chunk-rows`.
            let chunks = spec.open_table(7).and_then(|mut chunks| {
                while chunks.next_chunk(7)?.is_some() {}
                Ok(())
            });
            if let Err(e) = chunks {
                assert!(e.to_string().contains(name), "{name} in chunks: {e}");
            }
        }
        data
    });
    match outcome {
        Ok(data) => {
            assert!(data.n_samples >= 1 && data.n_columns >= 1, "{name}");
            None
        }
        Err(message) => Some(message),
    }
}

#[test]
fn the_valid_files_read_back() {
    let _gauge = GAUGE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Scratch::new("valid");
    for (name, bytes) in valid_files(&dir.0) {
        std::fs::write(dir.0.join(name), &bytes).unwrap();
        let data = Dataset::load(&spec_for(&dir.0, name), "test")
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((data.n_samples, data.n_columns, &data.labels), (N, K, &labels()), "{name}");
        let want: Vec<f64> = logits().iter().map(|&v| f64::from(v)).collect();
        assert_eq!(data.scores.to_f64(), want, "{name}");
    }
}

/// A `.npy` of the valid logits whose header claims `shape`.
fn npy_claiming(shape: &str) -> Vec<u8> {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    let width = (10 + dict.len() + 1).div_ceil(64) * 64 - 10;
    let text = format!("{dict:<w$}\n", w = width - 1);
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((text.len() as u16).to_le_bytes());
    out.extend(text.bytes());
    out.extend(logits().iter().flat_map(|v| v.to_le_bytes()));
    out
}

/// A header claiming far more data than the file holds is refused before any allocation.
#[test]
fn a_header_claiming_a_trillion_rows_is_refused_up_front() {
    let _gauge = GAUGE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Scratch::new("huge");
    assert!(check_read(&dir.0, "honest.npy", &npy_claiming("(40, 3)")).is_none());
    let npy = npy_claiming("(1000000000000, 3)");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::FileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("test_logits.npy", options).unwrap();
    zip.write_all(&npy).unwrap();
    zip.start_file("test_labels.npy", options).unwrap();
    zip.write_all(&labels_npy()).unwrap();
    let npz = zip.finish().unwrap().into_inner();
    for (name, bytes) in [("claim.npy", npy), ("claim.npz", npz)] {
        let err = check_read(&dir.0, name, &bytes).expect("refused");
        assert!(err.contains("truncated") && err.contains("1000000000000"), "{name}: {err}");
    }
}

/// How a valid file is damaged.
#[derive(Debug, Clone)]
enum Damage {
    /// Cut at a fraction of the length.
    Truncate(f64),
    /// One bit flipped at a fraction of the length.
    FlipBit(f64, u8),
    /// Bytes overwritten from a fraction of the length.
    Overwrite(f64, Vec<u8>),
    /// Replaced by random bytes.
    Random(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0.0..1.0f64).prop_map(Damage::Truncate),
        (0.0..1.0f64, 0..8u8).prop_map(|(at, bit)| Damage::FlipBit(at, bit)),
        (0.0..1.0f64, prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, b)| Damage::Overwrite(at, b)),
        prop::collection::vec(any::<u8>(), 0..256).prop_map(Damage::Random),
    ]
}

fn apply(bytes: &[u8], damage: &Damage) -> Vec<u8> {
    let at = |f: f64| ((bytes.len() as f64 * f) as usize).min(bytes.len().saturating_sub(1));
    let mut out = bytes.to_vec();
    match damage {
        Damage::Truncate(f) => out.truncate(at(*f)),
        Damage::FlipBit(f, bit) => out[at(*f)] ^= 1 << bit,
        Damage::Overwrite(f, with) => {
            let start = at(*f);
            for (i, b) in with.iter().enumerate() {
                if let Some(slot) = out.get_mut(start + i) {
                    *slot = *b;
                }
            }
        }
        Damage::Random(random) => out = random.clone(),
    }
    out
}

/// Cases per target: `PROPTEST_CASES`, else 256.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256)
}

/// The test rows as predictions.
fn predictions(kind: ScoreKind) -> Predictions {
    Predictions::from_host(&logits(), K, &labels(), InputConfig::new(kind), &Device::flex())
        .unwrap()
}

/// A first-pass state of the test rows (ECE, NLL and the adaptive ranges of ACE), as written
/// in both forms: JSON and binary.
fn state_files() -> Vec<(&'static str, Vec<u8>)> {
    let mut stream = EvaluationConfig::new().streaming().unwrap();
    stream.update(&predictions(ScoreKind::Logits)).unwrap();
    let state = stream.state();
    vec![("s.json", state.to_json().into_bytes()), ("s.state", state.to_bytes())]
}

/// Saved calibrators of the test rows: a scaling and a map.
fn saved_files() -> Vec<(&'static str, Vec<u8>)> {
    let preds = predictions(ScoreKind::Logits);
    let ts = TemperatureScalingConfig::new().fit(&preds).unwrap().to_saved().unwrap();
    let iso = IsotonicRegressionConfig::new().fit(&preds).unwrap().to_saved().unwrap();
    vec![("ts.json", ts.to_json().into_bytes()), ("iso.json", iso.to_json().into_bytes())]
}

/// Runs `read` on `bytes` written as `name` in `dir` and returns its outcome: its error (if
/// any) names the file, and its peak allocation stays within a small multiple of the file's
/// size.
fn check_loader<T>(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    read: impl FnOnce(&Path) -> Result<T, String>,
) -> Result<T, String> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let outcome = read(&path);
    let peak = PEAK.load(Ordering::Relaxed) - before;
    // Parquet's and Arrow's decoders hold buffers for a batch of rows whatever the file's
    // size (about 2.4 MB at calib's batch of 65,536 rows): a constant, not a claim's size.
    let fixed = if is_table(&path) { 4 << 20 } else { 1 << 20 };
    let bound = 16 * bytes.len() + fixed;
    assert!(peak <= bound, "{name}: peak allocation {peak} bytes for a {}-byte file", bytes.len());
    if let Err(message) = &outcome {
        assert!(message.contains(name), "{name}: error does not name the file: {message}");
    }
    outcome
}

#[test]
fn the_valid_states_and_calibrators_read_back() {
    let _gauge = GAUGE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Scratch::new("valid-loaders");
    for (name, bytes) in state_files() {
        std::fs::write(dir.0.join(name), &bytes).unwrap();
        assert_eq!(read_state(&dir.0.join(name)).unwrap().n_samples(), N as u64, "{name}");
    }
    for (name, bytes) in saved_files() {
        std::fs::write(dir.0.join(name), &bytes).unwrap();
        let saved = SavedCalibrator::load(dir.0.join(name)).unwrap();
        AnyCalibrator::from_saved(&saved, &Device::flex()).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn damaged_states_give_a_state_or_an_error_naming_the_file(
        which in 0..2usize,
        damage in damage(),
    ) {
        let _gauge = GAUGE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("damaged-states");
        let (name, bytes) = state_files().swap_remove(which);
        let _ = check_loader(&dir.0, name, &apply(&bytes, &damage), |path| {
            read_state(path).map_err(|e| e.to_string())
        });
    }

    #[test]
    fn damaged_calibrators_load_or_give_an_error_naming_the_file(
        which in 0..2usize,
        damage in damage(),
    ) {
        let _gauge = GAUGE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("damaged-saved");
        let (name, bytes) = saved_files().swap_remove(which);
        let _ = check_loader(&dir.0, name, &apply(&bytes, &damage), |path| {
            let saved = SavedCalibrator::load(path).map_err(|e| e.to_string())?;
            let named = |e: calib_train::FitError| format!("{}: {e}", path.display());
            AnyCalibrator::from_saved(&saved, &Device::flex()).map_err(named)
        });
    }
}

/// The damaged files the targets below found, kept (docs/security.md, "Hostile inputs").
#[test]
fn the_damaged_files_found_stay_refused() {
    let _gauge = GAUGE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Scratch::new("found");
    // A stream claiming 16 MiB of metadata in 4 bytes (arrow-ipc allocated 432 MB for it).
    let found = [(7, Damage::Random(vec![0, 0, 0, 1]))];
    for (which, damage) in found {
        let (name, bytes) = valid_files(&dir.0).swap_remove(which);
        check_read(&dir.0, name, &apply(&bytes, &damage));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn damaged_files_give_a_read_or_an_error_naming_the_file(
        which in 0..8usize,
        damage in damage(),
    ) {
        let _gauge = GAUGE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("damaged");
        let (name, bytes) = valid_files(&dir.0).swap_remove(which);
        check_read(&dir.0, name, &apply(&bytes, &damage));
    }
}
