//! The aggregates equal calib's in-memory evaluation: per group, across partitions and
//! Parquet shards, for logits, probabilities and binary scores; bad input is refused clearly.

mod common;

use std::sync::Arc;

use calib_core::Metric;
use calib_datafusion::sql::{local_context, run_blocking, to_json_rows};
use common::{Model, Scratch, batches, expected, expected_weighted, models, schema, write_shards};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

/// Every one-pass metric's report values with the metric they come from.
const VALUES: [(Metric, &str); 10] = [
    (Metric::Ece, "ece"),
    (Metric::Mce, "mce"),
    (Metric::Sce, "sce"),
    (Metric::ToplabelEce, "toplabel_ece"),
    (Metric::Nll, "nll"),
    (Metric::Brier, "brier"),
    (Metric::Accuracy, "accuracy"),
    (Metric::BrierDecomposition, "brier_reliability"),
    (Metric::BrierDecomposition, "brier_resolution"),
    (Metric::BrierDecomposition, "brier_uncertainty"),
];

/// A session with the models in table `preds`, spread over 4 partitions of small batches.
fn memory_context(models: &[Model]) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(4);
    let ctx = SessionContext::new_with_config(config);
    calib_datafusion::register(&ctx);
    let all = batches(models, 97);
    let parts: Vec<Vec<_>> =
        (0..4).map(|p| all.iter().skip(p).step_by(4).cloned().collect()).collect();
    ctx.register_table("preds", Arc::new(MemTable::try_new(schema(), parts).unwrap())).unwrap();
    ctx
}

/// `calib_<value><suffix>(s, label[, bins])` for every value, the bins argument on binned
/// metrics only.
fn select_all(suffix: &str, bins: Option<usize>) -> String {
    let call = |(metric, value): &(Metric, &str)| {
        let unbinned = matches!(metric, Metric::Nll | Metric::Brier | Metric::Accuracy);
        let extra = match bins {
            Some(b) if !unbinned => format!(", {b}"),
            _ => String::new(),
        };
        format!("calib_{value}{suffix}(s, label{extra}) AS {value}")
    };
    VALUES.iter().map(call).collect::<Vec<_>>().join(", ")
}

#[track_caller]
fn close(got: &serde_json::Value, want: f64, what: &str) {
    let got = got.as_f64().unwrap_or_else(|| panic!("{what}: {got}"));
    assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "{what}: {got} vs {want}");
}

#[test]
fn grouped_aggregates_equal_the_in_memory_metrics() {
    let models = models();
    let ctx = memory_context(&models);
    let q = format!(
        "SELECT model, {} FROM (SELECT model, logits AS s, label FROM preds) GROUP BY model ORDER BY model",
        select_all("", None)
    );
    let rows = to_json_rows(&run_blocking(&ctx, &q).unwrap());
    assert_eq!(rows.len(), models.len());
    for (row, m) in rows.iter().zip(&models) {
        assert_eq!(row["model"], m.name);
        for (metric, value) in VALUES {
            close(
                &row[value],
                expected(m, metric, value, 15, false),
                &format!("{} {value}", m.name),
            );
        }
    }
}

#[test]
fn ungrouped_bins_and_probability_variants() {
    let models = models();
    let ctx = memory_context(&models[..1]);
    let m = &models[0];
    let q = "SELECT calib_ece(logits, label, 7) AS e7, calib_sce(logits, label, 20) AS s20, \
             calib_ece(logits, label) AS e FROM preds";
    let row = &to_json_rows(&run_blocking(&ctx, q).unwrap())[0];
    close(&row["e7"], expected(m, Metric::Ece, "ece", 7, false), "ece 7 bins");
    close(&row["s20"], expected(m, Metric::Sce, "sce", 20, false), "sce 20 bins");
    close(&row["e"], expected(m, Metric::Ece, "ece", 15, false), "ece");

    // Probabilities: the softmax rows as f64 lists.
    let probs: Vec<String> = common::softmax(&m.logits)
        .chunks(common::K)
        .zip(&m.labels)
        .map(|(r, y)| {
            format!(
                "([{}], {y})",
                r.iter().map(|v| format!("{v:e}")).collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    let q = format!(
        "SELECT {} FROM (VALUES {}) AS t(s, label)",
        select_all("_probs", None),
        probs.join(", ")
    );
    let row = &to_json_rows(&run_blocking(&ctx, &q).unwrap())[0];
    for (metric, value) in VALUES {
        let want = expected(m, metric, value, 15, true);
        let got = row[value].as_f64().unwrap();
        // The VALUES literals round-trip through decimal text: 1e-12 still holds.
        assert!((got - want).abs() < 1e-9, "{value}_probs: {got} vs {want}");
    }
}

#[test]
fn binary_scores_are_log_odds_or_probabilities_and_nulls_are_skipped() {
    let ctx = local_context();
    // Log-odds 0 -> p = 0.5; 2 -> 0.8808; -1 -> 0.2689; a null row and a null label skipped.
    let q = "SELECT calib_brier(z, y) AS b, calib_brier_probs(p, y) AS bp, calib_accuracy(z, y) AS a \
             FROM (VALUES (0.0, 0.5, 1), (2.0, 0.8807970779778823, 1), (-1.0, 0.2689414213699951, 1), \
             (NULL, NULL, 0), (3.0, 0.9, NULL)) AS t(z, p, y)";
    let row = &to_json_rows(&run_blocking(&ctx, q).unwrap())[0];
    let p = [0.5f64, 1.0 / (1.0 + (-2.0f64).exp()), 1.0 / (1.0 + 1.0f64.exp())];
    // Binary input's Brier score is `(p - y)^2` (docs/conventions.md), as `calib eval` gives.
    let brier = p.iter().map(|p| (1.0 - p) * (1.0 - p)).sum::<f64>() / 3.0;
    let b = row["b"].as_f64().unwrap();
    assert!((b - brier).abs() < 1e-12, "{b} vs {brier}");
    close(&row["bp"], b, "probabilities = log-odds");
    close(&row["a"], 1.0 / 3.0, "accuracy (p = 0.5 predicts class 0)");
}

/// `calib_brier` on binary log-odds equals the library's (so `calib eval`'s) Brier score of the
/// same rows: `(p - y)^2` with `p` the logistic of the score.
#[test]
fn binary_brier_equals_the_library() {
    use calib_core::EvaluationConfig;
    use calib_core::input::{InputConfig, Predictions, ScoreKind};
    let rows: [(f64, i64); 5] = [(0.0, 1), (2.0, 1), (-1.0, 0), (0.7, 0), (-3.5, 1)];
    let values: Vec<String> = rows.iter().map(|(z, y)| format!("({z:?}, {y})")).collect();
    let q = format!("SELECT calib_brier(z, y) AS b FROM (VALUES {}) AS t(z, y)", values.join(", "));
    let got = to_json_rows(&run_blocking(&local_context(), &q).unwrap())[0]["b"].as_f64().unwrap();
    let device = calib_core::backend::open_device("flex").unwrap();
    let p: Vec<f64> = rows.iter().map(|(z, _)| 1.0 / (1.0 + (-z).exp())).collect();
    let labels: Vec<i64> = rows.iter().map(|r| r.1).collect();
    let preds =
        Predictions::from_host_vec(p, 1, labels, InputConfig::new(ScoreKind::Binary), &device)
            .unwrap();
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Brier]);
    let want = config.evaluate(&preds).unwrap().get(Metric::Brier).unwrap();
    assert!((got - want).abs() < 1e-12, "sql {got} vs library {want}");
}

#[test]
fn parquet_shards_by_glob_equal_memory() {
    let models = models();
    let dir = Scratch::new("glob");
    write_shards(&dir.0.join("preds"), &batches(&models, 113), 3);
    let ctx = local_context();
    let q = format!(
        "SELECT model, {} FROM (SELECT model, logits AS s, label FROM '{}/preds/*.parquet') GROUP BY model ORDER BY model",
        select_all("", Some(10)),
        dir.0.display()
    );
    let rows = to_json_rows(&run_blocking(&ctx, &q).unwrap());
    assert_eq!(rows.len(), models.len());
    for (row, m) in rows.iter().zip(&models) {
        for (metric, value) in VALUES {
            close(
                &row[value],
                expected(m, metric, value, 10, false),
                &format!("{} {value}", m.name),
            );
        }
    }
}

#[test]
fn unsupported_metrics_and_bad_input_fail_with_one_clear_message() {
    let models = models();
    let ctx = memory_context(&models[..1]);
    let fails = |q: &str| run_blocking(&ctx, q).unwrap_err().to_string();
    let e = fails("SELECT calib_ace(logits, label) FROM preds");
    assert!(
        e.contains("calib_ace") && e.contains("second pass") && e.contains("calib eval"),
        "{e}"
    );
    let e = fails("SELECT calib_ks(logits, label) FROM preds");
    assert!(e.contains("calib_ks") && e.contains("all rows at once"), "{e}");
    let e = fails("SELECT calib_ece(label, label) FROM preds");
    assert!(e.contains("calib_ece") && e.contains("list of floats"), "{e}");
    let e = fails("SELECT calib_nll(logits, label, 10) FROM preds");
    assert!(e.contains("calib_nll takes (scores, label)"), "{e}");
    let e = fails("SELECT calib_ece(logits, label, 0) FROM preds");
    assert!(e.contains("bins must be a literal integer >= 1"), "{e}");
    let e = fails("SELECT calib_ece(logits, label + 10) FROM preds");
    assert!(e.contains("calib_ece") && e.contains("label"), "{e}");
    let e = fails(
        "SELECT calib_ece(s, y) FROM (VALUES ([1.0, 2.0], 0), ([1.0, 2.0, 3.0], 1)) AS t(s, y)",
    );
    assert!(e.contains("calib_ece") && e.contains("scores"), "{e}");
    let e = fails("SELECT calib_ece_probs(s, y) FROM (VALUES ([0.5, 0.7], 0)) AS t(s, y)");
    assert!(e.contains("calib_ece_probs") && e.contains("sum"), "{e}");
}

#[test]
fn empty_groups_give_null() {
    let models = models();
    let ctx = memory_context(&models[..1]);
    let q = "SELECT calib_ece(logits, label) AS e FROM preds WHERE label > 100";
    let rows = to_json_rows(&run_blocking(&ctx, q).unwrap());
    assert_eq!(rows[0]["e"], serde_json::Value::Null);
}

#[test]
fn calib_metrics_is_every_value_from_one_pass() {
    let models = models();
    let ctx = memory_context(&models);
    let q = "SELECT model, m['ece'] AS ece, m['nll'] AS nll, m['brier_uncertainty'] AS bu, m \
             FROM (SELECT model, calib_metrics(logits, label, 10) AS m FROM preds GROUP BY model) \
             ORDER BY model";
    let rows = to_json_rows(&run_blocking(&ctx, q).unwrap());
    for (row, m) in rows.iter().zip(&models) {
        close(&row["ece"], expected(m, Metric::Ece, "ece", 10, false), "ece");
        close(&row["nll"], expected(m, Metric::Nll, "nll", 10, false), "nll");
        let bu = expected(m, Metric::BrierDecomposition, "brier_uncertainty", 10, false);
        close(&row["bu"], bu, "brier_uncertainty");
        close(&row["m"]["ece"], expected(m, Metric::Ece, "ece", 10, false), "the struct's ece");
        assert_eq!(row["m"].as_object().unwrap().len(), 10, "{}", row["m"]);
    }
    let whole = "SELECT calib_metrics(logits, label)['accuracy'] AS a FROM preds";
    let row = &to_json_rows(&run_blocking(&ctx, whole).unwrap())[0];
    let n: usize = models.iter().map(|m| m.labels.len()).sum();
    let hits: f64 = models
        .iter()
        .map(|m| expected(m, Metric::Accuracy, "accuracy", 15, false) * m.labels.len() as f64)
        .sum();
    close(&row["a"], hits / n as f64, "accuracy of all rows");
}

#[test]
fn weighted_aggregates_equal_the_weighted_in_memory_metrics() {
    let models = models();
    let ctx = memory_context(&models);
    let weight = |y: i64| y as f64 * 0.5 + 0.25;
    let call = |(metric, value): &(Metric, &str)| {
        let unbinned = matches!(metric, Metric::Nll | Metric::Brier | Metric::Accuracy);
        let bins = if unbinned { "" } else { ", 7" };
        format!("calib_{value}_weighted(s, label, w{bins}) AS {value}")
    };
    let calls: Vec<String> = VALUES.iter().map(call).collect();
    let q = format!(
        "SELECT model, {}, calib_metrics_weighted(s, label, w)['ece'] AS all_ece FROM (SELECT \
         model, logits AS s, label, label * 0.5 + 0.25 AS w FROM preds) GROUP BY model ORDER BY \
         model",
        calls.join(", ")
    );
    let rows = to_json_rows(&run_blocking(&ctx, &q).unwrap());
    for (row, m) in rows.iter().zip(&models) {
        let w: Vec<f64> = m.labels.iter().map(|&y| weight(y)).collect();
        for (metric, value) in VALUES {
            let want = expected_weighted(m, (metric, value), 7, false, Some(&w));
            close(&row[value], want, &format!("{} weighted {value}", m.name));
        }
        let want = expected_weighted(m, (Metric::Ece, "ece"), 15, false, Some(&w));
        close(&row["all_ece"], want, &format!("{} calib_metrics_weighted", m.name));
    }
    // Null weights skip their rows; a group of zero weight is NULL; bad weights fail.
    let m = &models[0];
    let q = "SELECT calib_nll_weighted(logits, label, CASE WHEN label = 0 THEN NULL ELSE 1.0 END) \
             AS nll, calib_ece_weighted(logits, label, 0.0) AS zero FROM preds WHERE model = 'a'";
    let row = &to_json_rows(&run_blocking(&ctx, q).unwrap())[0];
    let kept: Vec<f64> = m.labels.iter().map(|&y| f64::from(u8::from(y != 0))).collect();
    close(&row["nll"], expected_weighted(m, (Metric::Nll, "nll"), 15, false, Some(&kept)), "nulls");
    assert!(row["zero"].is_null(), "{row:?}");
    let q = "SELECT calib_ece_weighted(logits, label, -1.0) FROM preds";
    let e = run_blocking(&ctx, q).unwrap_err().to_string();
    assert!(e.contains("calib_ece_weighted") && e.contains("non-negative"), "{e}");
    let e = run_blocking(&ctx, "SELECT calib_ece_weighted(logits, label) FROM preds");
    let e = e.unwrap_err().to_string();
    assert!(e.contains("(scores, label, weight [, bins])"), "{e}");
}
