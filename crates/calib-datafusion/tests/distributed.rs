//! Two datafusion-distributed workers on loopback run a grouped query over Parquet shards and
//! give the single-node answer.
#![cfg(feature = "distributed")]

mod common;

use calib_datafusion::datafusion::error::Result;
use calib_datafusion::datafusion::physical_plan::ExecutionPlan;
use calib_datafusion::datafusion::physical_plan::empty::EmptyExec;
use calib_datafusion::datafusion::physical_plan::joins::CrossJoinExec;
use calib_datafusion::datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use calib_datafusion::datafusion::prelude::SessionContext;
use calib_datafusion::distributed::datafusion_distributed::display_plan_ascii;
use calib_datafusion::distributed::datafusion_distributed::grpc::DefaultChannelResolver;
use calib_datafusion::distributed::datafusion_distributed::{
    ChannelResolver, CoordinatorToWorkerMsg, MaybeEncoded, SetPlanRequest, TaskKey,
    WorkerToCoordinatorMsg,
};
use calib_datafusion::distributed::{
    ClusterSettings, DataRoot, TlsCa, WorkerIdentity, WorkerSettings, WorkerToken, cluster_context,
    serve, worker_urls,
};
use calib_datafusion::sql::{local_context, run_blocking, to_json_rows};
use common::{Scratch, batches, models, write_shards};
use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use futures::stream::BoxStream;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tonic::codegen::http::HeaderMap;
use url::Url;

/// A runtime for in-process workers.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

/// Two workers on free loopback ports of `runtime`, each with the settings `settings` makes
/// (`https://` URLs when they serve through TLS).
fn start_workers(runtime: &Runtime, settings: impl Fn() -> WorkerSettings) -> Vec<Url> {
    let mut tls = false;
    let addresses: Vec<String> = (0..2)
        .map(|_| {
            let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
            let address = listener.local_addr().unwrap().to_string();
            let settings = settings();
            tls = settings.identity.is_some();
            runtime.spawn(serve(listener, settings));
            address
        })
        .collect();
    worker_urls(&addresses, tls).unwrap()
}

/// A coordinator over `workers` with `token`, a scan task per file.
fn coordinator(workers: Vec<Url>, token: Option<&WorkerToken>) -> SessionContext {
    let settings = ClusterSettings {
        token: token.cloned(),
        bytes_per_partition: Some(1),
        ..ClusterSettings::default()
    };
    cluster_context(workers, &settings).unwrap()
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
    let cluster = coordinator(addresses, Some(&token));
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
        let cluster = coordinator(addresses.clone(), presented);
        let e = run_blocking(&cluster, &q).expect_err("a call without the token runs nothing");
        let text = e.to_string();
        assert!(text.contains("unauthenticated: the calib worker refused"), "{text}");
    }
    let cluster = coordinator(addresses, Some(&token));
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
    let cluster = coordinator(addresses, None);
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
    let cluster = coordinator(tight, None);
    let e = run_blocking(&cluster, &q).expect_err("64 bytes hold no aggregate state");
    assert!(e.to_string().contains("Resources exhausted"), "{e}");
    let ample = start_workers(&workers, limited(64 << 20));
    let cluster = coordinator(ample, None);
    assert_eq!(to_json_rows(&run_blocking(&cluster, &q).unwrap()).len(), models.len());
    workers.shutdown_background();
}

#[test]
fn plans_with_functions_of_the_coordinators_own_never_reach_the_workers() {
    let models = models();
    let dir = Scratch::new("distributed-udf");
    write_shards(&dir.0, &batches(&models, 19), 2);
    let workers = runtime();
    let addresses = start_workers(&workers, WorkerSettings::default);
    let cluster = coordinator(addresses, None);
    // A function of the coordinator's own: the plan cannot be encoded for the workers (calib's
    // codec carries calib's aggregates and DataFusion's built-ins alone), so nothing runs.
    cluster.register_udf(mine());
    let q = format!(
        "SELECT calib_ece(logits, mine(label)) AS ece FROM '{}/*.parquet'",
        dir.0.display()
    );
    let e = run_blocking(&cluster, &q).expect_err("no codec ships a function of one's own");
    assert!(e.to_string().contains("scalar function mine"), "{e}");
    workers.shutdown_background();
}

/// A CA, and certificates it signs for 127.0.0.1.
struct Authority {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Authority {
    fn new() -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        Self { issuer: rcgen::CertifiedIssuer::self_signed(params, key).unwrap() }
    }

    fn ca(&self) -> TlsCa {
        TlsCa::from_pem(self.issuer.pem()).unwrap()
    }

    /// A certificate for 127.0.0.1 and its key, valid now or (`expired`) only in 2020.
    fn identity(&self, expired: bool) -> WorkerIdentity {
        let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2020, 12, 31);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        WorkerIdentity::from_pem(cert.pem(), key.serialize_pem()).unwrap()
    }
}

/// The query of the TLS and limit tests over the shards in `dir`.
fn ece_query(dir: &std::path::Path) -> String {
    format!("SELECT calib_ece(logits, label) AS ece FROM '{}/*.parquet'", dir.display())
}

#[test]
fn an_authenticated_tls_cluster_gives_the_single_node_answer_and_checks_certificates() {
    let models = models();
    let dir = Scratch::new("distributed-tls");
    write_shards(&dir.0, &batches(&models, 41), 4);
    let workers = runtime();
    let (authority, token) =
        (Authority::new(), WorkerToken::new("tls-cluster-token-0123456789").unwrap());
    let tls = || WorkerSettings {
        token: Some(token.clone()),
        identity: Some(authority.identity(false)),
        ca: Some(authority.ca()),
        ..WorkerSettings::default()
    };
    let addresses = start_workers(&workers, tls);
    assert!(addresses.iter().all(|u| u.scheme() == "https"), "{addresses:?}");
    assert_eq!(format!("{:?}", authority.identity(false)), "WorkerIdentity(..)");
    let q = ece_query(&dir.0);
    let single = to_json_rows(&run_blocking(&local_context(), &q).unwrap());
    let with = |ca: Option<TlsCa>| {
        let settings =
            ClusterSettings { token: Some(token.clone()), ca, bytes_per_partition: Some(1) };
        cluster_context(addresses.clone(), &settings).unwrap()
    };
    let rows = to_json_rows(&run_blocking(&with(Some(authority.ca())), &q).unwrap());
    let (a, b) = (rows[0]["ece"].as_f64().unwrap(), single[0]["ece"].as_f64().unwrap());
    assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
    // Without the CA, or with another one, no connection is made.
    let e = run_blocking(&with(None), &q).expect_err("no CA").to_string();
    assert!(e.contains("--tls-ca") && e.contains("https://127.0.0.1:"), "{e}");
    let e = run_blocking(&with(Some(Authority::new().ca())), &q).expect_err("another CA");
    assert!(e.to_string().contains("invalid peer certificate"), "{e}");
    // A plain-text coordinator gets no answer from a TLS worker.
    let plain: Vec<String> = addresses.iter().map(|u| u.authority().to_string()).collect();
    let plain = worker_urls(&plain, false).unwrap();
    assert!(run_blocking(&coordinator(plain, Some(&token)), &q).is_err());
    // A worker whose certificate expired is refused, saying so.
    let expired = start_workers(&workers, || WorkerSettings {
        identity: Some(authority.identity(true)),
        ..WorkerSettings::default()
    });
    let settings = ClusterSettings {
        ca: Some(authority.ca()),
        bytes_per_partition: Some(1),
        ..ClusterSettings::default()
    };
    let cluster = cluster_context(expired, &settings).unwrap();
    let e = run_blocking(&cluster, &q).expect_err("an expired certificate").to_string();
    assert!(e.contains("invalid peer certificate") && e.contains("xpired"), "{e}");
    workers.shutdown_background();
}

/// The coordinator's end of an open task: the task ends when it is dropped.
type OpenTask =
    (BoxStream<'static, Result<WorkerToCoordinatorMsg>>, UnboundedSender<CoordinatorToWorkerMsg>);

/// Opens a task of query `query` on the worker at `url` with `plan`, whose coordinator stream
/// stays open until the returned sender is dropped.
async fn open_task(
    url: &Url,
    plan: std::sync::Arc<dyn ExecutionPlan>,
    query: u128,
) -> Result<OpenTask> {
    let mut client = DefaultChannelResolver::default().get_worker_client_for_url(url).await?;
    let request = SetPlanRequest {
        task_key: TaskKey { query_id: uuid::Uuid::from_u128(query), stage_id: 1, task_number: 0 },
        task_count: 1,
        plan: MaybeEncoded::Decoded(plan),
        work_unit_feed_declarations: vec![],
        target_worker_url: url.clone(),
        query_start_time_ns: 0,
    };
    let ctx = SessionContext::new().task_ctx();
    let metrics = ExecutionPlanMetricsSet::new();
    let (sender, held) = futures::channel::mpsc::unbounded();
    let stream =
        client.coordinator_channel(HeaderMap::new(), request, held.boxed(), metrics, &ctx).await?;
    Ok((stream, sender))
}

fn empty_plan() -> std::sync::Arc<dyn ExecutionPlan> {
    use calib_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
    let schema = Schema::new(vec![Field::new("a", DataType::Int64, false)]);
    std::sync::Arc::new(EmptyExec::new(std::sync::Arc::new(schema)))
}

#[test]
fn hand_crafted_plans_of_other_node_kinds_are_refused_by_name() {
    let workers = runtime();
    let addresses = start_workers(&workers, WorkerSettings::default);
    let join: std::sync::Arc<dyn ExecutionPlan> =
        std::sync::Arc::new(CrossJoinExec::new(empty_plan(), empty_plan()));
    let e = workers.block_on(open_task(&addresses[0], join, 7)).err().expect("a join is refused");
    assert!(e.to_string().contains("refuses a plan with CrossJoinExec"), "{e}");
    assert!(workers.block_on(open_task(&addresses[0], empty_plan(), 8)).is_ok());
    // A function the worker does not know (encoded by name) fails to decode there.
    let e = workers.block_on(open_task(&addresses[0], with_unknown_function(), 9));
    let e = e.err().expect("an unknown function is refused").to_string();
    assert!(e.contains("mine"), "{e}");
    workers.shutdown_background();
}

/// `mine(x) = x` on Int64: a function of the test's own, unknown to the workers.
fn mine() -> calib_datafusion::datafusion::logical_expr::ScalarUDF {
    use calib_datafusion::datafusion::arrow::datatypes::DataType;
    use calib_datafusion::datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};

    let same = |args: &[ColumnarValue]| Ok(args[0].clone());
    let same = std::sync::Arc::new(same);
    create_udf("mine", vec![DataType::Int64], DataType::Int64, Volatility::Immutable, same)
}

/// `SELECT mine(a)` over an empty table.
fn with_unknown_function() -> std::sync::Arc<dyn ExecutionPlan> {
    use std::sync::Arc;

    use calib_datafusion::datafusion::config::ConfigOptions;
    use calib_datafusion::datafusion::physical_expr::ScalarFunctionExpr;
    use calib_datafusion::datafusion::physical_expr::expressions::col;
    use calib_datafusion::datafusion::physical_plan::projection::ProjectionExec;

    let input = empty_plan();
    let schema = input.schema();
    let args = vec![col("a", &schema).unwrap()];
    let config = Arc::new(ConfigOptions::default());
    let call = ScalarFunctionExpr::try_new(Arc::new(mine()), args, &schema, config).unwrap();
    let expr: Arc<dyn calib_datafusion::datafusion::physical_expr::PhysicalExpr> = Arc::new(call);
    Arc::new(ProjectionExec::try_new(vec![(expr, "b".to_string())], input).unwrap())
}

#[test]
fn queries_past_a_workers_query_message_and_time_limits_are_refused_saying_so() {
    let models = models();
    let dir = Scratch::new("distributed-limits");
    write_shards(&dir.0, &batches(&models, 17), 2);
    let q = ece_query(&dir.0);
    let workers = runtime();
    let one = start_workers(&workers, || WorkerSettings {
        max_queries: Some(1),
        ..WorkerSettings::default()
    });
    // A query holds each worker's one place while its task is open ...
    let held: Vec<_> =
        one.iter().map(|url| workers.block_on(open_task(url, empty_plan(), 1)).unwrap()).collect();
    let e = run_blocking(&coordinator(one.clone(), None), &q).expect_err("both places taken");
    assert!(e.to_string().contains("runs 1 queries already, its limit (--max-queries 1)"), "{e}");
    // ... and gives it back when the task ends.
    drop(held);
    let answered = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        run_blocking(&coordinator(one.clone(), None), &q).is_ok()
    });
    assert!(answered, "the places were not given back");
    // A plan message past the worker's message limit is refused unread.
    let tight = start_workers(&workers, || WorkerSettings {
        max_message_size: Some(64),
        ..WorkerSettings::default()
    });
    let e = run_blocking(&coordinator(tight, None), &q).expect_err("a plan of over 64 bytes");
    assert!(e.to_string().contains("past the calib worker's limit of 64 bytes"), "{e}");
    // A query past the worker's time limit ends, saying so (a limit of zero: at once).
    let timed = |secs: u64| {
        move || WorkerSettings {
            max_query_time: Some(std::time::Duration::from_secs(secs)),
            ..WorkerSettings::default()
        }
    };
    let e = run_blocking(&coordinator(start_workers(&workers, timed(0)), None), &q)
        .expect_err("no time at all");
    assert!(e.to_string().contains("time limit of 0 s (--query-timeout)"), "{e}");
    let ample = start_workers(&workers, timed(600));
    assert!(run_blocking(&coordinator(ample, None), &q).is_ok());
    workers.shutdown_background();
}
