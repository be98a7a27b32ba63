//! Synthetic predictions of several models as Arrow batches and Parquet shards, and the
//! in-memory evaluation they must equal.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::tensor::Device;
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_core::{EvaluationConfig, Metric};
use datafusion::arrow::array::{
    ArrayRef, FixedSizeListArray, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Float32Type, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;

pub const K: usize = 5;

/// One model's logits `[n, K]` and labels.
pub struct Model {
    pub name: String,
    pub logits: Vec<f32>,
    pub labels: Vec<i64>,
}

/// Three models of different sizes and confidence.
pub fn models() -> Vec<Model> {
    [("a", 900, 1.5, 1), ("b", 1300, 3.0, 2), ("c", 450, 0.7, 3)]
        .into_iter()
        .map(|(name, n, scale, seed)| {
            let (z, y) = calib_core::synthetic::overconfident_logits(n, K, 0.8, scale, seed);
            Model { name: name.into(), logits: z, labels: y }
        })
        .collect()
}

/// The in-memory value of `metric`'s report value `value` for `model` (probabilities when
/// `probs`), with `bins` bins.
pub fn expected(model: &Model, metric: Metric, value: &str, bins: usize, probs: bool) -> f64 {
    expected_weighted(model, (metric, value), bins, probs, None)
}

/// [`expected`] with the rows weighted by `weights`, if given.
pub fn expected_weighted(
    model: &Model,
    (metric, value): (Metric, &str),
    bins: usize,
    probs: bool,
    weights: Option<&[f64]>,
) -> f64 {
    let (scores, kind) = if probs {
        (softmax(&model.logits), ScoreKind::Probabilities)
    } else {
        (model.logits.iter().map(|&v| f64::from(v)).collect(), ScoreKind::Logits)
    };
    let preds =
        Predictions::from_host(&scores, K, &model.labels, InputConfig::new(kind), &Device::flex())
            .unwrap();
    let preds = match weights {
        Some(w) => preds.with_weights(w.to_vec()).unwrap(),
        None => preds,
    };
    let config =
        EvaluationConfig::new().with_metrics(vec![metric]).with_n_bins(bins).with_n_ranges(bins);
    let report = config.evaluate(&preds).unwrap();
    report.named_values().into_iter().find(|(k, _)| k == value).unwrap().1
}

/// Row softmax in f64.
pub fn softmax(z: &[f32]) -> Vec<f64> {
    z.chunks(K)
        .flat_map(|row| {
            let m = row.iter().fold(f32::MIN, |a, &b| a.max(b)) as f64;
            let e: Vec<f64> = row.iter().map(|&v| (f64::from(v) - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s)
        })
        .collect()
}

pub fn schema() -> Arc<Schema> {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    Arc::new(Schema::new(vec![
        Field::new("model", DataType::Utf8, false),
        Field::new("logits", DataType::FixedSizeList(item, K as i32), false),
        Field::new("label", DataType::Int64, false),
    ]))
}

/// Rows `range` of `model` as a batch.
pub fn batch(model: &Model, range: std::ops::Range<usize>) -> RecordBatch {
    let n = range.len();
    let names = StringArray::from(vec![model.name.as_str(); n]);
    let rows =
        range.clone().map(|i| Some(model.logits[i * K..(i + 1) * K].iter().map(|&v| Some(v))));
    let logits = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(rows, K as i32);
    let labels = Int64Array::from(model.labels[range].to_vec());
    let columns: Vec<ArrayRef> = vec![Arc::new(names), Arc::new(logits), Arc::new(labels)];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// Every model's rows in batches of at most `rows`, interleaved across models.
pub fn batches(models: &[Model], rows: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        let mut any = false;
        for m in models {
            let n = m.labels.len();
            if start < n {
                out.push(batch(m, start..(start + rows).min(n)));
                any = true;
            }
        }
        if !any {
            return out;
        }
        start += rows;
    }
}

/// Writes `batches` as `shards` Parquet files in `dir` (row groups of 256 rows).
pub fn write_shards(dir: &Path, batches: &[RecordBatch], shards: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(256)).build();
    let per = batches.len().div_ceil(shards);
    batches
        .chunks(per)
        .enumerate()
        .map(|(i, part)| {
            let path = dir.join(format!("part-{i}.parquet"));
            let file = std::fs::File::create(&path).unwrap();
            let mut w = ArrowWriter::try_new(file, schema(), Some(props.clone())).unwrap();
            part.iter().for_each(|b| w.write(b).unwrap());
            w.close().unwrap();
            path
        })
        .collect()
}

/// A scratch directory removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("calib-df-{name}-{}", std::process::id()));
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
