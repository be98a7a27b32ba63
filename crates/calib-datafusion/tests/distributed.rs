//! Two datafusion-distributed workers on loopback run a grouped query over Parquet shards and
//! give the single-node answer.
#![cfg(feature = "distributed")]

mod common;

use calib_datafusion::distributed::datafusion_distributed::display_plan_ascii;
use calib_datafusion::distributed::{
    DataRoot, WorkerSettings, WorkerToken, cluster_context, serve, worker_urls,
};
use calib_datafusion::sql::{local_context, run_blocking, to_json_rows};
use common::{Scratch, batches, models, write_shards};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use url::Url;

/// A runtime for in-process workers.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

/// Two workers on free loopback ports of `runtime`, each with the settings `settings` makes.
fn start_workers(runtime: &Runtime, settings: impl Fn() -> WorkerSettings) -> Vec<Url> {
    let addresses: Vec<String> = (0..2)
        .map(|_| {
            let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
            let address = listener.local_addr().unwrap().to_string();
            runtime.spawn(serve(listener, settings()));
            address
        })
        .collect();
    worker_urls(&addresses).unwrap()
}

/// Settings that serve calls carrying `token`.
fn with_token(token: &WorkerToken) -> impl Fn() -> WorkerSettings + '_ {
    || WorkerSettings { token: Some(token.clone()), ..WorkerSettings::default() }
}

#[test]
fn two_loopback_workers_equal_the_single_node_answer() {
    let models = models();
    let dir = Scratch::new("distributed");
    write_shards(&dir.0, &batches(&models, 101), 4);
    let workers = runtime();
    // An authenticated cluster: the coordinator's calls and the workers' calls to each other
    // carry the token.
    let token = WorkerToken::new("a-test-token-of-32-characters-00").unwrap();
    let addresses = start_workers(&workers, with_token(&token));
    let q = format!(
        "SELECT model, calib_ece(logits, label) AS ece, calib_sce(logits, label, 10) AS sce, \
         calib_nll(logits, label) AS nll, calib_brier(logits, label) AS brier, \
         calib_accuracy(logits, label) AS acc, count(*) AS n \
         FROM '{}/*.parquet' GROUP BY model ORDER BY model",
        dir.0.display()
    );
    let cluster = cluster_context(addresses, Some(1), Some(&token)).unwrap();
    let plan = workers.block_on(async {
        let plan = cluster.sql(&q).await.unwrap().create_physical_plan().await.unwrap();
        display_plan_ascii(plan.as_ref(), false)
    });
    assert!(plan.contains("Stage 1") && plan.contains("tasks=2"), "not distributed:\n{plan}");
    let distributed = to_json_rows(&run_blocking(&cluster, &q).unwrap());
    let single = to_json_rows(&run_blocking(&local_context(), &q).unwrap());
    assert_eq!(distributed.len(), models.len());
    for (d, s) in distributed.iter().zip(&single) {
        assert_eq!(d["model"], s["model"]);
        assert_eq!(d["n"], s["n"]);
        for key in ["ece", "sce", "nll", "brier", "acc"] {
            let (a, b) = (d[key].as_f64().unwrap(), s[key].as_f64().unwrap());
            assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{key}: {a} vs {b}");
        }
    }
    workers.shutdown_background();
}

#[test]
fn workers_refuse_calls_without_their_token() {
    let models = models();
    let dir = Scratch::new("distributed-token");
    write_shards(&dir.0, &batches(&models, 37), 2);
    let workers = runtime();
    let token = WorkerToken::new("the-cluster-token-0123456789").unwrap();
    let addresses = start_workers(&workers, with_token(&token));
    let q = format!("SELECT calib_ece(logits, label) AS ece FROM '{}/*.parquet'", dir.0.display());
    let wrong = WorkerToken::new("another-token-0123456789abc").unwrap();
    for presented in [None, Some(&wrong)] {
        let cluster = cluster_context(addresses.clone(), Some(1), presented).unwrap();
        let e = run_blocking(&cluster, &q).expect_err("a call without the token runs nothing");
        let text = e.to_string();
        assert!(text.contains("unauthenticated: the calib worker refused"), "{text}");
    }
    let cluster = cluster_context(addresses, Some(1), Some(&token)).unwrap();
    let rows = to_json_rows(&run_blocking(&cluster, &q).unwrap());
    let single = to_json_rows(&run_blocking(&local_context(), &q).unwrap());
    let (a, b) = (rows[0]["ece"].as_f64().unwrap(), single[0]["ece"].as_f64().unwrap());
    assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
    workers.shutdown_background();
}

#[test]
fn workers_read_under_their_data_root_alone() {
    let models = models();
    let dir = Scratch::new("distributed-root");
    let (inside, outside) = (dir.0.join("root"), dir.0.join("private"));
    write_shards(&inside, &batches(&models, 29), 2);
    let private = write_shards(&outside, &batches(&models, 31), 2);
    // Links inside the root to the files outside it.
    let links = inside.join("links");
    std::fs::create_dir_all(&links).unwrap();
    for (i, p) in private.iter().enumerate() {
        std::os::unix::fs::symlink(p, links.join(format!("link-{i}.parquet"))).unwrap();
    }
    let workers = runtime();
    let rooted = || WorkerSettings {
        data_root: Some(DataRoot::new(&inside).unwrap()),
        ..WorkerSettings::default()
    };
    let addresses = start_workers(&workers, rooted);
    let cluster = cluster_context(addresses, Some(1), None).unwrap();
    let ece = |from: &std::path::Path| {
        format!("SELECT calib_ece(logits, label) AS ece FROM '{}/*.parquet'", from.display())
    };
    let rows = to_json_rows(&run_blocking(&cluster, &ece(&inside)).unwrap());
    let single = to_json_rows(&run_blocking(&local_context(), &ece(&inside)).unwrap());
    let (a, b) = (rows[0]["ece"].as_f64().unwrap(), single[0]["ece"].as_f64().unwrap());
    assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
    // Scans that reach outside the root, by path or through links, fail naming the file.
    for from in [&outside, &links] {
        let e = run_blocking(&cluster, &ece(from)).expect_err("outside the data root");
        let text = e.to_string();
        assert!(text.contains("outside the worker's data root"), "{text}");
        assert!(private.iter().any(|p| text.contains(&p.display().to_string())), "{text}");
    }
    workers.shutdown_background();
}

#[test]
fn a_query_past_the_memory_limit_fails_saying_so() {
    let models = models();
    let dir = Scratch::new("distributed-memory");
    write_shards(&dir.0, &batches(&models, 23), 2);
    let workers = runtime();
    let q = format!(
        "SELECT model, calib_ece(logits, label) AS ece FROM '{}/*.parquet' GROUP BY model",
        dir.0.display()
    );
    let limited = |bytes: usize| {
        move || WorkerSettings { memory_limit: Some(bytes), ..WorkerSettings::default() }
    };
    let tight = start_workers(&workers, limited(64));
    let cluster = cluster_context(tight, Some(1), None).unwrap();
    let e = run_blocking(&cluster, &q).expect_err("64 bytes hold no aggregate state");
    assert!(e.to_string().contains("Resources exhausted"), "{e}");
    let ample = start_workers(&workers, limited(64 << 20));
    let cluster = cluster_context(ample, Some(1), None).unwrap();
    assert_eq!(to_json_rows(&run_blocking(&cluster, &q).unwrap()).len(), models.len());
    workers.shutdown_background();
}

#[test]
fn plans_with_functions_of_the_coordinators_own_never_reach_the_workers() {
    use std::sync::Arc;

    use calib_datafusion::datafusion::arrow::datatypes::DataType;
    use calib_datafusion::datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};

    let models = models();
    let dir = Scratch::new("distributed-udf");
    write_shards(&dir.0, &batches(&models, 19), 2);
    let workers = runtime();
    let addresses = start_workers(&workers, WorkerSettings::default);
    let cluster = cluster_context(addresses, Some(1), None).unwrap();
    // A function of the coordinator's own: the plan cannot be encoded for the workers (calib's
    // codec carries calib's aggregates and DataFusion's built-ins alone), so nothing runs.
    let same = |args: &[ColumnarValue]| Ok(args[0].clone());
    let udf = create_udf(
        "mine",
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(same),
    );
    cluster.register_udf(udf);
    let q = format!(
        "SELECT calib_ece(logits, mine(label)) AS ece FROM '{}/*.parquet'",
        dir.0.display()
    );
    let e = run_blocking(&cluster, &q).expect_err("no codec ships a function of one's own");
    assert!(e.to_string().contains("scalar function mine"), "{e}");
    workers.shutdown_background();
}
