//! The fast path against arrow-rs on the same files, and its hand-over at a null.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{Int32Array, ListArray};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::{WriterProperties, WriterVersion};

use super::*;

/// Every row group of `path` through the fast path: the scores, labels and how each
/// group ended.
fn fast(path: &Path, score: &str, label: &str, batch: usize) -> (Vec<f32>, Vec<i64>, Vec<Ended>) {
    let file = File::open(path).unwrap();
    let meta = ParquetRecordBatchReaderBuilder::try_new(file.try_clone().unwrap()).unwrap();
    let meta = meta.metadata().clone();
    let columns = PageColumns::find(&meta, score, label).expect("the fast layout");
    let (mut z, mut y, mut ends) = (Vec::new(), Vec::new(), Vec::new());
    for g in 0..meta.num_row_groups() {
        let mut send = |b: RecordBatch| {
            assert!(b.num_rows() <= batch);
            let list = b.column(0).as_fixed_size_list();
            z.extend(list.values().as_primitive::<Float32Type>().values());
            y.extend(b.column(1).as_primitive::<Int64Type>().values());
            true
        };
        ends.push(decode_group(&columns, &file, &meta, g, batch, &mut send));
    }
    (z, y, ends)
}

/// The same through arrow-rs.
fn slow(path: &Path, score: &str, label: &str) -> (Vec<f32>, Vec<i64>) {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let rows = crate::table::rows::gather;
    let (mut z, mut y) = (Vec::new(), Vec::new());
    for b in reader.build().unwrap() {
        let b = b.unwrap();
        let got = rows(b.column_by_name(score).unwrap(), b.column_by_name(label).unwrap(), None);
        let got = got.unwrap();
        let crate::Scores::F32(v) = got.scores else { panic!("f32") };
        z.extend(v);
        y.extend(got.labels);
    }
    (z, y)
}

#[test]
fn a_pyarrow_file_takes_the_fast_path_and_equals_arrow_rs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/densenet40_cifar10_test1000.parquet");
    let (z, y, ends) = fast(&path, "logits", "labels", 333);
    assert!(ends.iter().all(|e| *e == Ended::Done), "{ends:?}");
    assert_eq!((z, y), slow(&path, "logits", "labels"));
}

/// Rows `i` of K = 3 scores, a label column of i32 with a null at `null_at`.
fn write(path: &Path, n: usize, null_at: Option<usize>, props: WriterProperties) {
    let values: Vec<f32> = (0..n * 3).map(|i| ((i * 7919) % 1000) as f32 / 7.0).collect();
    let list = ListArray::from_iter_primitive::<Float32Type, _, _>(
        values.chunks(3).map(|r| Some(r.iter().map(|v| Some(*v)).collect::<Vec<_>>())),
    );
    let labels: Int32Array =
        (0..n).map(|i| (Some(i) != null_at).then_some((i % 3) as i32)).collect();
    let batch = RecordBatch::try_from_iter(vec![
        ("logits", Arc::new(list) as ArrayRef),
        ("labels", Arc::new(labels) as ArrayRef),
    ])
    .unwrap();
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn pages_of_every_kind_equal_arrow_rs_and_nulls_fall_back() {
    let dir = std::env::temp_dir().join(format!("calib-pages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.parquet");
    for (version, dictionary) in [
        (WriterVersion::PARQUET_1_0, true),
        (WriterVersion::PARQUET_2_0, false),
        (WriterVersion::PARQUET_2_0, true),
        (WriterVersion::PARQUET_1_0, false),
    ] {
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_dictionary_enabled(dictionary)
            .set_data_page_row_count_limit(50) // pages that split rows
            .set_write_batch_size(17)
            .set_max_row_group_row_count(Some(400))
            .build();
        write(&path, 1_000, None, props.clone());
        let (z, y, ends) = fast(&path, "logits", "labels", 64);
        assert!(ends.iter().all(|e| *e == Ended::Done), "{version:?} {dictionary}: {ends:?}");
        assert_eq!((z, y), slow(&path, "logits", "labels"), "{version:?} {dictionary}");
        // A null label at row 530 (group 1, its row 130): the batches before it were sent.
        write(&path, 1_000, Some(530), props);
        let (_, y, ends) = fast(&path, "logits", "labels", 64);
        assert_eq!(ends, [Ended::Done, Ended::FallBack(128), Ended::Done]);
        assert_eq!(y.len(), 1_000 - (400 - 128));
    }
    std::fs::remove_dir_all(&dir).ok();
}
