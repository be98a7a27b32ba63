//! Parquet and Arrow IPC input (= the same rows from .npz), bad tables (exit 2, one line).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{
    ArrayRef, FixedSizeListArray, Float32Array, Int32Array, Int64Array, ListArray, RecordBatch,
    StringArray,
};
use arrow_ipc::writer::{FileWriter, StreamWriter};
use calib_cli::io::Scores;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use crate::common::*;

/// DenseNet-40's test split: logits `[N, K]` (f32), labels, K.
pub(crate) fn densenet_test() -> (Vec<f32>, Vec<i64>, usize) {
    let test = split(&densenet(), "test");
    let Scores::F32(z) = test.scores else { panic!("float32 dump") };
    (z, test.labels, test.n_columns)
}

pub(crate) fn fixed_list(z: &[f32], k: usize) -> ArrayRef {
    let rows = z.chunks(k).map(|r| Some(r.iter().map(|&v| Some(v))));
    Arc::new(FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(rows, k as i32))
}

pub(crate) fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

pub(crate) fn write_parquet(path: &Path, batch: &RecordBatch, rows_per_group: usize) {
    let props =
        WriterProperties::builder().set_max_row_group_row_count(Some(rows_per_group)).build();
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

const ALL: &str = "ece,mce,rmsce,sce,ace,tace,toplabel_ece,debiased_l2,nll,brier,accuracy";

#[test]
fn tables_equal_the_npz_in_every_layout() {
    let dir = Scratch::new("tables");
    let (z, y, k) = densenet_test();
    let labels: ArrayRef = Arc::new(Int64Array::from(y.clone()));
    // A fixed-size list of f32 in row groups of 1,000 (= the .npz exactly).
    write_parquet(
        &dir.path("fixed.parquet"),
        &batch(vec![("logits", fixed_list(&z, k)), ("labels", labels.clone())]),
        1000,
    );
    // A list of f64 (values widened from f32, so the metrics are the same) with int32 labels.
    let rows = z.chunks(k).map(|r| Some(r.iter().map(|&v| Some(f64::from(v)))));
    let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Float64Type, _, _>(rows));
    let y32: ArrayRef = Arc::new(Int32Array::from(y.iter().map(|&v| v as i32).collect::<Vec<_>>()));
    write_parquet(&dir.path("list.parquet"), &batch(vec![("target", y32), ("scores", list)]), 4096);
    // K float columns p_0 .. p_9 and a string column that is not a score.
    let mut cols: Vec<(String, ArrayRef)> = (0..k)
        .map(|j| {
            (
                format!("p_{j}"),
                Arc::new(Float32Array::from(
                    z.iter().skip(j).step_by(k).copied().collect::<Vec<_>>(),
                )) as ArrayRef,
            )
        })
        .collect();
    cols.push(("label".into(), labels.clone()));
    cols.push(("note".into(), Arc::new(StringArray::from(vec!["x"; y.len()]))));
    let wide =
        RecordBatch::try_from_iter(cols.iter().map(|(n, c)| (n.as_str(), c.clone()))).unwrap();
    write_parquet(&dir.path("wide.parquet"), &wide, 3000);
    // Arrow IPC file and stream.
    let b = batch(vec![("logits", fixed_list(&z, k)), ("labels", labels)]);
    let mut w =
        FileWriter::try_new(File::create(dir.path("t.arrow")).unwrap(), &b.schema()).unwrap();
    w.write(&b.slice(0, 4000)).unwrap();
    w.write(&b.slice(4000, 6000)).unwrap();
    w.finish().unwrap();
    let mut w =
        StreamWriter::try_new(File::create(dir.path("t.arrows")).unwrap(), &b.schema()).unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();

    let npz = densenet();
    let npz = npz.to_str().unwrap();
    let eval = |extra: &[&str]| {
        let mut args = vec!["eval"];
        args.extend(extra);
        args.extend(["--metrics", ALL, "--format", "json"]);
        metrics_of(&dir.calib(&args))
    };
    let whole = eval(&[npz, "--split", "test"]);
    for args in [
        vec!["fixed.parquet"],
        vec!["fixed.parquet", "--chunk-rows", "777"],
        vec!["list.parquet", "--logits-key", "scores", "--labels-key", "target"],
        vec![
            "list.parquet",
            "--logits-key",
            "scores",
            "--labels-key",
            "target",
            "--chunk-rows",
            "5000",
        ],
        vec!["wide.parquet"],
        vec!["wide.parquet", "--logits-key", "p_", "--chunk-rows", "64"],
        vec!["wide.parquet", "--logits-key", "p_0,p_1,p_2,p_3,p_4,p_5,p_6,p_7,p_8,p_9"],
        vec!["t.arrow"],
        vec!["t.arrows", "--chunk-rows", "3333"],
    ] {
        let got = eval(&args);
        assert_same_metrics(&whole, &got, 1e-12);
    }
}

#[test]
fn bad_tables_exit_2_with_one_line() {
    let dir = Scratch::new("tables-bad");
    let z = [0.1f32, 0.9, 0.8, 0.2, 0.3, 0.7];
    let list = fixed_list(&z, 2);
    let good: ArrayRef = Arc::new(Int64Array::from(vec![1, 0, 1]));
    write_parquet(
        &dir.path("nolabel.parquet"),
        &batch(vec![("logits", list.clone()), ("y", good.clone())]),
        10,
    );
    dir.calib(&["eval", "nolabel.parquet"]).fails_with(&[
        "nolabel.parquet",
        "no label column",
        "--labels-key",
        "logits, y",
    ]);
    dir.calib(&["eval", "nolabel.parquet", "--labels-key", "z"])
        .fails_with(&["no label column `z`"]);
    let nulls: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(0), None]));
    write_parquet(
        &dir.path("null.parquet"),
        &batch(vec![("logits", list.clone()), ("labels", nulls)]),
        10,
    );
    dir.calib(&["eval", "null.parquet"]).fails_with(&["null.parquet", "row 2", "label is null"]);
    dir.calib(&["eval", "null.parquet", "--chunk-rows", "1"])
        .fails_with(&["row 2", "label is null"]);
    let ragged: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Float32Type, _, _>(vec![
        Some(vec![Some(0.1f32), Some(0.9)]),
        Some(vec![Some(0.5), Some(0.2), Some(0.3)]),
    ]));
    let two: ArrayRef = Arc::new(Int64Array::from(vec![1, 0]));
    write_parquet(
        &dir.path("ragged.parquet"),
        &batch(vec![("logits", ragged), ("labels", two)]),
        10,
    );
    dir.calib(&["eval", "ragged.parquet"]).fails_with(&[
        "ragged.parquet",
        "row 1",
        "3 scores, earlier rows 2",
    ]);
    let text: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c"]));
    write_parquet(
        &dir.path("text.parquet"),
        &batch(vec![("logits", text), ("labels", good.clone())]),
        10,
    );
    dir.calib(&["eval", "text.parquet"]).fails_with(&[
        "text.parquet",
        "scores `logits` must be",
        "Utf8",
    ]);
    write_parquet(
        &dir.path("out.parquet"),
        &batch(vec![
            ("logits", list),
            ("labels", Arc::new(Int64Array::from(vec![1, 0, 7])) as ArrayRef),
        ]),
        10,
    );
    dir.calib(&["eval", "out.parquet"]).fails_with(&["out.parquet", "row 2", "label 7"]);
    // One row per row group: groups decoded on several threads still number rows in order.
    let labels: Vec<i64> = (0..40).map(|i| if i == 37 { 9 } else { i % 2 }).collect();
    let z: Vec<f32> = (0..80).map(|i| (i % 7) as f32 * 0.1).collect();
    let rows = batch(vec![
        ("logits", fixed_list(&z, 2)),
        ("labels", Arc::new(Int64Array::from(labels)) as ArrayRef),
    ]);
    write_parquet(&dir.path("groups.parquet"), &rows, 1);
    dir.calib(&["eval", "groups.parquet"]).fails_with(&["groups.parquet", "row 37", "label 9"]);
    std::fs::write(dir.path("junk.parquet"), b"PAR1 not really").unwrap();
    dir.calib(&["eval", "junk.parquet"])
        .fails_with(&["junk.parquet", "not a readable Parquet file"]);
    std::fs::write(dir.path("junk.arrow"), b"nothing").unwrap();
    dir.calib(&["eval", "junk.arrow"]).fails_with(&["junk.arrow", "not a readable Arrow IPC"]);
    dir.calib(&["eval", "nolabel.parquet", "--labels", "y.npy"])
        .fails_with(&["--labels is for .npy"]);
}

#[test]
fn a_pyarrow_parquet_file_equals_its_rows_from_the_npz() {
    let dir = Scratch::new("pyarrow");
    let (z, y, k) = densenet_test();
    write_npy(&dir.path("z.npy"), &[1000, k as u64], &z[..1000 * k]);
    write_npy(&dir.path("y.npy"), &[1000], &y[..1000]);
    let want = metrics_of(&dir.calib(&[
        "eval",
        "z.npy",
        "--labels",
        "y.npy",
        "--metrics",
        ALL,
        "--format",
        "json",
    ]));
    let parquet = shipped("densenet40_cifar10_test1000.parquet");
    let got = metrics_of(&dir.calib(&[
        "eval",
        parquet.to_str().unwrap(),
        "--metrics",
        ALL,
        "--format",
        "json",
    ]));
    assert_same_metrics(&want, &got, 1e-12);
}

#[test]
fn a_weight_column_weighs_rows_in_memory_and_in_chunks() {
    let dir = Scratch::new("tables-weights");
    let (z, y, k) = densenet_test();
    let w: Vec<f64> = (0..y.len()).map(|i| ((i * 13) % 7) as f64 * 0.25).collect();
    write_npy(&dir.path("z.npy"), &[y.len() as u64, k as u64], &z);
    write_npy(&dir.path("y.npy"), &[y.len() as u64], &y);
    write_npy(&dir.path("w.npy"), &[w.len() as u64], &w);
    let labels: ArrayRef = Arc::new(Int64Array::from(y.clone()));
    let weights: ArrayRef = Arc::new(arrow_array::Float64Array::from(w.clone()));
    let columns = vec![("logits", fixed_list(&z, k)), ("labels", labels.clone()), ("w", weights)];
    write_parquet(&dir.path("fixed.parquet"), &batch(columns), 1000);
    // One float column per class, and a float32 weight column the scores must not take in.
    let mut wide: Vec<(String, ArrayRef)> = (0..k)
        .map(|j| {
            let column: Vec<f32> = z.iter().skip(j).step_by(k).copied().collect();
            (format!("p_{j}"), Arc::new(Float32Array::from(column)) as ArrayRef)
        })
        .collect();
    let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
    wide.push(("weight".into(), Arc::new(Float32Array::from(w32))));
    wide.push(("labels".into(), labels));
    let wide = RecordBatch::try_from_iter(wide.iter().map(|(n, c)| (n.as_str(), c.clone())));
    write_parquet(&dir.path("wide.parquet"), &wide.unwrap(), 3000);
    let eval = |args: &[&str]| {
        let base = ["eval", "--metrics", ALL, "--format", "json"];
        metrics_of(&dir.calib(&[&base[..], args].concat()))
    };
    let want = eval(&["z.npy", "--labels", "y.npy", "--weights", "w.npy"]);
    for args in [
        vec!["fixed.parquet", "--weights-key", "w"],
        vec!["fixed.parquet", "--weights-key", "w", "--chunk-rows", "777"],
        vec!["fixed.parquet", "--weights", "w.npy", "--chunk-rows", "777"],
        vec!["wide.parquet", "--weights-key", "weight"],
        vec!["wide.parquet", "--weights-key", "weight", "--chunk-rows", "500"],
    ] {
        assert_same_metrics(&want, &eval(&args), 1e-12);
    }
    dir.calib(&["eval", "fixed.parquet", "--weights-key", "nope"])
        .fails_with(&["fixed.parquet", "no weight column `nope`"]);
    dir.calib(&["eval", "fixed.parquet", "--weights-key", "logits"])
        .fails_with(&["weights `logits` must be numbers"]);
    // Bad weights name their row in the whole file, chunked or not.
    let mut bad = w.clone();
    bad[4_321] = -1.0;
    let columns = vec![
        ("logits", fixed_list(&z, k)),
        ("labels", Arc::new(Int64Array::from(y.clone())) as ArrayRef),
        ("w", Arc::new(arrow_array::Float64Array::from(bad)) as ArrayRef),
    ];
    write_parquet(&dir.path("bad.parquet"), &batch(columns), 1000);
    for chunks in [&[][..], &["--chunk-rows", "1000"][..]] {
        let args = [&["eval", "bad.parquet", "--weights-key", "w", "--metrics", "ece"][..], chunks];
        dir.calib(&args.concat()).fails_with(&["bad.parquet", "row 4321", "non-negative"]);
    }
}
