//! `calib sql` (= `calib eval` per group) and `calib sql --workers` on two `calib worker`s.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, StringArray};

use crate::common::*;
use crate::tables::{batch, densenet_test, fixed_list, write_parquet};

/// Three models' DenseNet-40 rows (thirds of the test split) as two Parquet shards.
fn model_shards(dir: &Scratch) -> (Vec<f32>, Vec<i64>, usize) {
    let (z, y, k) = densenet_test();
    std::fs::create_dir_all(dir.path("preds")).unwrap();
    let model: Vec<&str> = (0..y.len()).map(|i| ["m0", "m1", "m2"][i % 3]).collect();
    let b = batch(vec![
        ("model", Arc::new(StringArray::from(model)) as ArrayRef),
        ("logits", fixed_list(&z, k)),
        ("label", Arc::new(Int64Array::from(y.clone())) as ArrayRef),
    ]);
    write_parquet(&dir.path("preds/a.parquet"), &b.slice(0, 6000), 1000);
    write_parquet(&dir.path("preds/b.parquet"), &b.slice(6000, 4000), 1000);
    (z, y, k)
}

const QUERY: &str = "SELECT model, calib_ece(logits, label) AS ece, calib_nll(logits, label) AS nll, \
    calib_brier(logits, label) AS brier, calib_accuracy(logits, label) AS accuracy, count(*) AS n \
    FROM 'preds/*.parquet' GROUP BY model ORDER BY model";

/// `calib eval`'s metrics of each model's rows, as written to .npy.
fn per_model_eval(
    dir: &Scratch,
    z: &[f32],
    y: &[i64],
    k: usize,
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    (0..3)
        .map(|m| {
            let rows: Vec<usize> = (m..y.len()).step_by(3).collect();
            let zm: Vec<f32> =
                rows.iter().flat_map(|&i| z[i * k..(i + 1) * k].iter().copied()).collect();
            let ym: Vec<i64> = rows.iter().map(|&i| y[i]).collect();
            write_npy(&dir.path("zm.npy"), &[ym.len() as u64, k as u64], &zm);
            write_npy(&dir.path("ym.npy"), &[ym.len() as u64], &ym);
            metrics_of(&dir.calib(&[
                "eval",
                "zm.npy",
                "--labels",
                "ym.npy",
                "--metrics",
                "ece,nll,brier,accuracy",
                "--format",
                "json",
            ]))
        })
        .collect()
}

#[track_caller]
fn assert_rows_match(
    rows: &serde_json::Value,
    want: &[serde_json::Map<String, serde_json::Value>],
) {
    let rows = rows.as_array().expect("a JSON array of rows");
    assert_eq!(rows.len(), 3);
    for (m, (row, w)) in rows.iter().zip(want).enumerate() {
        assert_eq!(row["model"], format!("m{m}"));
        for key in ["ece", "nll", "brier", "accuracy"] {
            let (a, b) = (row[key].as_f64().unwrap(), w[key].as_f64().unwrap());
            assert!((a - b).abs() <= 1e-12, "m{m} {key}: {a} vs {b}");
        }
    }
}

#[test]
fn sql_groups_equal_eval_per_model() {
    let dir = Scratch::new("sql");
    let (z, y, k) = model_shards(&dir);
    let want = per_model_eval(&dir, &z, &y, k);
    let run = dir.calib(&["sql", QUERY, "--format", "json"]);
    assert_rows_match(&run.json(), &want);
    let table = dir.calib(&["sql", QUERY]);
    assert!(table.ok().lines().next().unwrap().contains("model"), "{}", table.stdout);
    let csv = dir.calib(&["sql", QUERY, "--format", "csv"]);
    assert!(csv.ok().starts_with("model,ece,nll,brier,accuracy,n\n"), "{}", csv.stdout);
    dir.calib(&["sql", "SELECT calib_ace(logits, label) FROM 'preds/*.parquet'"]).fails_with(&[
        "query",
        "calib_ace",
        "second pass",
    ]);
    dir.calib(&["sql", "SELEC 1"]).fails_with(&["query"]);
    // No rows: the header alone, an empty array.
    let none = "SELECT model, calib_ece(logits, label) AS ece FROM 'preds/*.parquet' \
                WHERE label > 100 GROUP BY model";
    assert_eq!(dir.calib(&["sql", none, "--format", "csv"]).ok(), "model,ece\n");
    assert_eq!(dir.calib(&["sql", none, "--format", "json"]).json(), serde_json::json!([]));
    dir.calib(&["sql", QUERY, "--bytes-per-task", "5"]).fails_with(&["--workers"]);
}

/// `calib sql query` on `workers`, a task per file, as JSON.
fn on_workers(dir: &Scratch, query: &str, workers: &str) -> Run {
    let args = ["sql", query, "--workers", workers, "--bytes-per-task", "1", "--format", "json"];
    dir.calib(&args)
}

/// A `calib worker` on a free loopback port; killed on drop.
struct Worker(Child, String);

impl Worker {
    /// A worker in `dir` (its data root).
    fn start(dir: &Scratch) -> Self {
        Self::with_args(dir, &[])
    }

    /// A worker in `dir` started with `args` after `--listen`.
    fn with_args(dir: &Scratch, args: &[&str]) -> Self {
        Self::on(dir, "127.0.0.1:0", args)
    }

    /// A worker in `dir` listening on `address`, started with `args`.
    fn on(dir: &Scratch, address: &str, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_calib"))
            .args(["worker", "--listen", address])
            .args(args)
            .current_dir(&dir.0)
            .env_remove("CALIB_WORKER_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("calib worker starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let address = line.trim().rsplit(' ').next().unwrap().to_string();
        assert!(address.starts_with("127.0.0.1:"), "{line}");
        Self(child, address)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sql_on_two_workers_equals_one_node() {
    let dir = Scratch::new("workers");
    let (z, y, k) = model_shards(&dir);
    let want = per_model_eval(&dir, &z, &y, k);
    let (a, b) = (Worker::start(&dir), Worker::start(&dir));
    let workers = format!("{},{}", a.1, b.1);
    let run = on_workers(&dir, QUERY, &workers);
    assert_rows_match(&run.json(), &want);
    // The plan puts the scans and partial aggregates on the workers ...
    let plan =
        dir.calib(&["sql", QUERY, "--workers", &workers, "--bytes-per-task", "1", "--explain"]);
    assert!(plan.ok().contains("Stage 1") && plan.stdout.contains("tasks=2"), "{}", plan.stdout);
    // ... so without a worker there is no answer.
    dir.calib(&["sql", QUERY, "--workers", "127.0.0.1:1,127.0.0.1:2", "--bytes-per-task", "1"])
        .fails_with(&["query"]);
}

#[test]
fn workers_with_a_token_serve_its_holders_alone() {
    let dir = Scratch::new("workers-token");
    let (z, y, k) = model_shards(&dir);
    let want = per_model_eval(&dir, &z, &y, k);
    std::fs::write(dir.path("worker.token"), "c2VjcmV0LXRva2VuLW9mLXRoZS1jbHVzdGVy\n").unwrap();
    std::fs::write(dir.path("wrong.token"), "YW5vdGhlci10b2tlbi1vZi1hbm90aGVyLW9uZQ==\n").unwrap();
    let token = ["--token-file", "worker.token"];
    let path = dir.path("worker.token");
    let (a, b) = (
        Worker::with_args(&dir, &["--token-file", path.to_str().unwrap()]),
        Worker::with_args(&dir, &["--token-file", path.to_str().unwrap()]),
    );
    let workers = format!("{},{}", a.1, b.1);
    let query = ["sql", QUERY, "--workers", &workers, "--bytes-per-task", "1", "--format", "json"];
    fn with<'a>(query: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [query, extra].concat()
    }
    // The holders of the token get the single-node answer ...
    assert_rows_match(&dir.calib(&with(&query, &token)).json(), &want);
    let secret = std::fs::read_to_string(&path).unwrap();
    let from_env = calib_env(&dir.0, &query, &[("CALIB_WORKER_TOKEN", secret.trim())]);
    assert_rows_match(&from_env.json(), &want);
    // ... a coordinator without it, or with another, gets nothing but the refusal.
    dir.calib(&query).fails_with(&["query", "unauthenticated", "with no token"]);
    dir.calib(&with(&query, &["--token-file", "wrong.token"])).fails_with(&[
        "query",
        "unauthenticated",
        "a wrong token",
    ]);
    calib_env(&dir.0, &query, &[("CALIB_WORKER_TOKEN", "not-the-token-0123456789")]).fails_with(&[
        "query",
        "unauthenticated",
        "a wrong token",
    ]);
}

#[test]
fn a_worker_off_loopback_needs_a_token() {
    let dir = Scratch::new("worker-open");
    for listen in ["0.0.0.0:0", "[::]:0"] {
        dir.calib(&["worker", "--listen", listen]).fails_with(&[
            listen,
            "needs a token",
            "head -c 32",
        ]);
    }
    std::fs::write(dir.path("short.token"), "abc\n").unwrap();
    dir.calib(&["worker", "--listen", "0.0.0.0:0", "--token-file", "short.token"])
        .fails_with(&["short.token", "at least 16"]);
    dir.calib(&["worker", "--listen", "0.0.0.0:0", "--token-file", "missing.token"])
        .fails_with(&["missing.token"]);
    calib_env(&dir.0, &["sql", QUERY, "--workers", "127.0.0.1:1"], &[("CALIB_WORKER_TOKEN", "x")])
        .fails_with(&["CALIB_WORKER_TOKEN", "at least 16"]);
}

#[test]
fn workers_read_under_their_data_root_alone() {
    let dir = Scratch::new("workers-root");
    let (z, y, k) = model_shards(&dir);
    let want = per_model_eval(&dir, &z, &y, k);
    let root = dir.path("preds");
    let root = root.to_str().unwrap();
    let (a, b) = (
        Worker::with_args(&dir, &["--data-root", root]),
        Worker::with_args(&dir, &["--data-root", root]),
    );
    let workers = format!("{},{}", a.1, b.1);
    let run = |query: &str| on_workers(&dir, query, &workers);
    assert_rows_match(&run(QUERY).json(), &want);
    // Files outside the root are refused, named: read directly, or through links inside it.
    std::fs::create_dir_all(dir.path("private")).unwrap();
    std::fs::create_dir_all(dir.path("preds/linked")).unwrap();
    for entry in std::fs::read_dir(dir.path("preds")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let private = dir.path("private").join(path.file_name().unwrap());
            std::fs::copy(&path, &private).unwrap();
            let link = dir.path("preds/linked").join(path.file_name().unwrap());
            std::os::unix::fs::symlink(&private, link).unwrap();
        }
    }
    for from in ["private/", "preds/linked/"] {
        let query = QUERY.replace("preds/", from);
        run(&query).fails_with(&["query", "outside the worker's data root", "/private/"]);
    }
    // A root of / or one that does not exist never starts.
    dir.calib(&["worker", "--data-root", "/"]).fails_with(&["data root of /", "--data-root DIR"]);
    dir.calib(&["worker", "--data-root", "missing"]).fails_with(&["missing"]);
}

#[test]
fn a_query_past_a_workers_memory_limit_fails_saying_so() {
    let dir = Scratch::new("workers-memory");
    model_shards(&dir);
    let (a, b) = (
        Worker::with_args(&dir, &["--memory-limit", "64"]),
        Worker::with_args(&dir, &["--memory-limit", "64"]),
    );
    let workers = format!("{},{}", a.1, b.1);
    dir.calib(&["sql", QUERY, "--workers", &workers, "--bytes-per-task", "1"])
        .fails_with(&["query", "Resources exhausted"]);
    dir.calib(&["worker", "--memory-limit", "0"]).fails_with(&["--memory-limit"]);
}

#[test]
fn queries_past_a_workers_message_and_time_limits_fail_in_one_line() {
    let dir = Scratch::new("workers-limits");
    model_shards(&dir);
    for limit in [["--max-message-size", "64"], ["--query-timeout", "0.000001"]] {
        let (a, b) = (Worker::with_args(&dir, &limit), Worker::with_args(&dir, &limit));
        let workers = format!("{},{}", a.1, b.1);
        let want =
            if limit[0] == "--max-message-size" { "limit of 64 bytes" } else { "time limit" };
        on_workers(&dir, QUERY, &workers).fails_with(&["query", want, limit[0]]);
    }
}

#[test]
fn a_query_past_its_time_limit_is_stopped_saying_so() {
    let dir = Scratch::new("sql-timeout");
    model_shards(&dir);
    dir.calib(&["sql", QUERY, "--timeout", "0.000001"]).fails_with(&["query", "time limit"]);
    assert!(dir.calib(&["sql", QUERY, "--timeout", "600", "--format", "csv"]).ok().contains("m0"));
    for bad in ["--timeout=0", "--timeout=-1", "--timeout=nan"] {
        dir.calib(&["sql", QUERY, bad]).fails_with(&["--timeout"]);
    }
}

#[test]
fn a_killed_worker_fails_the_query_naming_it_and_a_restarted_one_serves() {
    let dir = Scratch::new("workers-kill");
    let (z, y, k) = model_shards(&dir);
    let want = per_model_eval(&dir, &z, &y, k);
    let (a, mut b) = (Worker::start(&dir), Worker::start(&dir));
    let workers = format!("{},{}", a.1, b.1);
    assert_rows_match(&on_workers(&dir, QUERY, &workers).json(), &want);
    // SIGKILL: the query fails soon, naming the worker it lost, with no partial answer.
    b.0.kill().unwrap();
    b.0.wait().unwrap();
    let started = std::time::Instant::now();
    let run = on_workers(&dir, QUERY, &workers);
    run.fails_with(&["query", &b.1]);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    // A worker started again on the same address serves the next query.
    let _b = Worker::on(&dir, &b.1, &[]);
    assert_rows_match(&on_workers(&dir, QUERY, &workers).json(), &want);
}

/// Writes a CA (`ca.pem`) and a certificate for 127.0.0.1 that it signs (`worker.pem`,
/// `worker.key`) into `dir`, and a CA that signed nothing (`other-ca.pem`).
fn write_certificates(dir: &Scratch) {
    let authority = |name: &str| {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        let issuer = rcgen::CertifiedIssuer::self_signed(params, key).unwrap();
        std::fs::write(dir.path(name), issuer.pem()).unwrap();
        issuer
    };
    let ca = authority("ca.pem");
    authority("other-ca.pem");
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    std::fs::write(dir.path("worker.pem"), cert.pem()).unwrap();
    std::fs::write(dir.path("worker.key"), key.serialize_pem()).unwrap();
}

#[test]
fn an_authenticated_tls_cluster_gives_the_single_node_answer() {
    let dir = Scratch::new("workers-tls");
    let (z, y, k) = model_shards(&dir);
    let want = per_model_eval(&dir, &z, &y, k);
    write_certificates(&dir);
    std::fs::write(dir.path("worker.token"), "dGxzLWNsdXN0ZXItdG9rZW4tb2YtdGhlLXRlc3Q=\n").unwrap();
    let tls = [
        "--token-file",
        "worker.token",
        "--tls-cert",
        "worker.pem",
        "--tls-key",
        "worker.key",
        "--tls-ca",
        "ca.pem",
    ];
    let (a, b) = (Worker::with_args(&dir, &tls), Worker::with_args(&dir, &tls));
    let workers = format!("{},{}", a.1, b.1);
    let query = ["sql", QUERY, "--workers", &workers, "--bytes-per-task", "1", "--format", "json"];
    let with = |extra: &[&str]| dir.calib(&[&query[..], extra].concat());
    let ca = ["--token-file", "worker.token", "--tls-ca", "ca.pem"];
    assert_rows_match(&with(&ca).json(), &want);
    // Another CA's check fails, saying why; plain text gets no answer.
    with(&["--token-file", "worker.token", "--tls-ca", "other-ca.pem"])
        .fails_with(&["query", "invalid peer certificate"]);
    with(&["--token-file", "worker.token"]).fails_with(&["query"]);
    // https:// addresses need the CA.
    let https = format!("https://{}", a.1);
    dir.calib(&["sql", QUERY, "--workers", &https]).fails_with(&[&https, "--tls-ca"]);
}

#[test]
fn traffic_off_loopback_needs_tls_or_an_explicit_no() {
    let dir = Scratch::new("workers-no-tls");
    model_shards(&dir);
    write_certificates(&dir);
    std::fs::write(dir.path("worker.token"), "c2VjcmV0LXRva2VuLW9mLXRoZS1jbHVzdGVy\n").unwrap();
    let token = ["--token-file", "worker.token"];
    let worker = |extra: &[&str]| {
        dir.calib(&[&["worker", "--listen", "0.0.0.0:0"][..], &token, extra].concat())
    };
    worker(&[]).fails_with(&["0.0.0.0:0", "--tls-cert CERT --tls-key KEY", "--no-tls"]);
    worker(&["--tls-cert", "missing.pem", "--tls-key", "worker.key"]).fails_with(&["missing.pem"]);
    worker(&["--tls-cert", "worker.key", "--tls-key", "worker.key"])
        .fails_with(&["worker.key", "no PEM certificate"]);
    worker(&["--tls-cert", "worker.pem", "--tls-key", "worker.pem"])
        .fails_with(&["worker.pem", "no PEM private key"]);
    // Both blocks, but a key that is not the certificate's: refused before listening.
    std::fs::write(dir.path("other.key"), rcgen::KeyPair::generate().unwrap().serialize_pem())
        .unwrap();
    let mismatched = worker(&["--tls-cert", "worker.pem", "--tls-key", "other.key"]);
    mismatched.fails_with(&["worker.pem and other.key", "the certificate and key files"]);
    assert!(mismatched.stdout.is_empty(), "{}", mismatched.stdout);
    worker(&["--tls-ca", "worker.key", "--no-tls"]).fails_with(&["worker.key", "CA file"]);
    assert_eq!(worker(&["--tls-cert", "worker.pem"]).code, 2, "--tls-cert needs --tls-key");
    assert_eq!(worker(&["--no-tls", "--tls-cert", "a", "--tls-key", "b"]).code, 2);
    for limit in ["--max-queries", "--max-message-size"] {
        dir.calib(&["worker", limit, "0"]).fails_with(&[limit, "at least 1"]);
    }
    for bad in ["0", "-1", "nan", "inf"] {
        dir.calib(&["worker", &format!("--query-timeout={bad}")])
            .fails_with(&["--query-timeout", "seconds above 0"]);
    }
    // --no-tls serves off loopback in plain text (a token still required).
    let mut open = Command::new(env!("CARGO_BIN_EXE_calib"))
        .args(["worker", "--listen", "0.0.0.0:0", "--no-tls", "--token-file", "worker.token"])
        .current_dir(&dir.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(open.stdout.take().unwrap()).read_line(&mut line).unwrap();
    open.kill().unwrap();
    open.wait().unwrap();
    assert!(line.starts_with("calib worker listening on 0.0.0.0:"), "{line}");
    // A coordinator sends nothing off loopback in plain text unless told to, even to an
    // http:// address.
    let refused = ["10.255.255.1:50051", "--tls-ca CA", "--no-tls"];
    dir.calib(&["sql", QUERY, "--workers", "10.255.255.1:50051"]).fails_with(&refused);
    let explicit = ["sql", QUERY, "--workers", "http://10.255.255.1:50051", "--tls-ca", "ca.pem"];
    dir.calib(&explicit).fails_with(&refused);
}

/// Sends `signal` (`STOP`, `KILL`) to the worker.
fn signal(worker: &Worker, signal: &str) {
    let pid = worker.0.id().to_string();
    let status = Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

#[test]
fn a_worker_killed_mid_query_fails_it_naming_the_worker_and_a_restarted_one_serves() {
    let dir = Scratch::new("workers-kill-mid");
    let (z, y, k) = model_shards(&dir);
    let want = per_model_eval(&dir, &z, &y, k);
    let (a, mut b) = (Worker::start(&dir), Worker::start(&dir));
    let workers = format!("{},{}", a.1, b.1);
    // Stopped, b takes the query's calls and answers none: the query waits on it ...
    signal(&b, "STOP");
    let mut coordinator = Command::new(env!("CARGO_BIN_EXE_calib"))
        .args(["sql", QUERY, "--workers", &workers, "--bytes-per-task", "1", "--format", "json"])
        .current_dir(&dir.0)
        .env_remove("CALIB_WORKER_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(coordinator.try_wait().unwrap().is_none(), "the query ended before the kill");
    // ... until SIGKILL: then it fails soon, naming b, with no partial answer.
    let killed = std::time::Instant::now();
    signal(&b, "KILL");
    b.0.wait().unwrap();
    let done = loop {
        if let Some(status) = coordinator.try_wait().unwrap() {
            break status;
        }
        assert!(killed.elapsed().as_secs() < 60, "the query hangs after the kill");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let output = coordinator.wait_with_output().unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(done.code(), Some(2), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains(&b.1), "{stderr}");
    // A worker started again on the same address serves the next query.
    let _b = Worker::on(&dir, &b.1, &[]);
    assert_rows_match(&on_workers(&dir, QUERY, &workers).json(), &want);
}
