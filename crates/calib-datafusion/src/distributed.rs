//! calib's aggregates on [datafusion-distributed] workers: a worker is a Tonic (gRPC) service
//! whose sessions register [`crate::udafs`]; a coordinator plans the query with the
//! distributed planner, the workers run the scans and partial aggregates (calib's mergeable
//! states travel as Arrow binary columns), the coordinator merges them.
//!
//! Every worker must reach the files the query names at the same path (one machine, a shared
//! file system, or object storage). A worker's [`WorkerSettings`] say what it enforces: with a
//! [`WorkerToken`] it serves only calls that carry it, and a coordinator's and its workers'
//! calls carry it; with a [`DataRoot`] its scans read under one directory alone; with a memory
//! limit each query holds at most that much (docs/security.md).
//!
//! [datafusion-distributed]: https://github.com/datafusion-contrib/datafusion-distributed

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_distributed::{
    DistributedExt, SessionStateBuilderExt, Worker, WorkerQueryContext, WorkerResolver,
    display_plan_ascii,
};
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use url::Url;

use crate::auth::Gate;
pub use crate::auth::{MIN_TOKEN_CHARS, WorkerToken};
pub use crate::data_root::DataRoot;
pub use datafusion_distributed;

/// What a worker enforces.
#[derive(Debug, Default)]
pub struct WorkerSettings {
    /// Serve only calls that carry this token (and send it with calls to other workers).
    pub token: Option<WorkerToken>,
    /// Read files under this root alone (`None`: whatever the worker's user can read).
    pub data_root: Option<DataRoot>,
    /// The memory each query may hold in DataFusion's pool (aggregate states, sorts, joins),
    /// in bytes: past it, the query fails with "Resources exhausted" (`None`: no limit).
    pub memory_limit: Option<usize>,
}

/// A worker whose sessions know calib's aggregates, with `settings`' token on its calls to
/// other workers; each query runs in a runtime of its own, with `settings`' memory limit and
/// its scans confined to `settings`' data root.
pub fn worker(settings: WorkerSettings) -> Worker {
    let WorkerSettings { token, data_root, memory_limit } = settings;
    let root = data_root.map(Arc::new);
    Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let (token, root) = (token.clone(), root.clone());
        async move { worker_state(ctx, token.as_ref(), root, memory_limit) }
    })
}

fn worker_state(
    ctx: WorkerQueryContext,
    token: Option<&WorkerToken>,
    root: Option<Arc<DataRoot>>,
    memory_limit: Option<usize>,
) -> Result<SessionState> {
    let mut builder = crate::with_udafs(ctx.builder);
    if let Some(token) = token {
        builder = builder.with_distributed_passthrough_headers(token.headers()?)?;
    }
    if root.is_some() || memory_limit.is_some() {
        let runtime = match memory_limit {
            Some(bytes) => RuntimeEnvBuilder::new().with_memory_limit(bytes, 1.0),
            None => RuntimeEnvBuilder::new(),
        }
        .build()?;
        if let Some(root) = root {
            DataRoot::register(root, &runtime);
        }
        builder = builder.with_runtime_env(Arc::new(runtime));
    }
    Ok(builder.build())
}

/// Serves a [`worker`] with `settings` on `listener` until the task is dropped or the server
/// fails; with a token, only calls that carry it (any other gets `Unauthenticated`).
///
/// # Errors
/// Tonic's transport errors.
pub async fn serve(listener: TcpListener, settings: WorkerSettings) -> Result<()> {
    let token = settings.token.clone();
    let service = worker(settings).into_worker_server();
    Server::builder()
        .add_service(InterceptedService::new(service, Gate(token)))
        .serve_with_incoming(TcpIncoming::from(listener))
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))
}

/// Binds `addr` and serves a [`worker`] on it, blocking; `on_bound` gets the bound address
/// (port 0 picks a free one) before serving starts.
///
/// # Errors
/// Binding and transport errors.
pub fn serve_blocking(
    addr: SocketAddr,
    settings: WorkerSettings,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<()> {
    crate::sql::runtime()?.block_on(async {
        let listener = TcpListener::bind(addr).await?;
        on_bound(listener.local_addr()?);
        serve(listener, settings).await
    })
}

/// The fixed worker list of a cluster.
#[derive(Debug, Clone)]
struct Workers(Vec<Url>);

#[async_trait]
impl WorkerResolver for Workers {
    fn get_urls(&self) -> Result<Vec<Url>> {
        Ok(self.0.clone())
    }
}

/// Parses worker addresses (`host:port` or `http://host:port`).
///
/// # Errors
/// [`DataFusionError::Configuration`] for an address that is not a URL.
pub fn worker_urls(addresses: &[String]) -> Result<Vec<Url>> {
    addresses
        .iter()
        .map(|a| {
            let text = if a.contains("://") { a.clone() } else { format!("http://{a}") };
            Url::parse(&text)
                .map_err(|e| DataFusionError::Configuration(format!("worker address `{a}`: {e}")))
        })
        .collect()
}

/// A coordinator session over `workers`, with calib's aggregates and quoted paths as tables;
/// with `token`, every call to a worker carries it. `bytes_per_partition` splits file scans
/// finer than DataFusion's default (small files would otherwise stay in one task).
///
/// # Errors
/// [`DataFusionError::Configuration`] for an empty worker list or a bad partition size.
pub fn cluster_context(
    workers: Vec<Url>,
    bytes_per_partition: Option<usize>,
    token: Option<&WorkerToken>,
) -> Result<SessionContext> {
    if workers.is_empty() {
        return Err(DataFusionError::Configuration("no workers given".into()));
    }
    let defaults = SessionStateBuilder::new()
        .with_config(SessionConfig::new().with_information_schema(true))
        .with_default_features();
    let mut builder = crate::with_udafs(defaults)
        .with_distributed_worker_resolver(Workers(workers))
        .with_distributed_planner();
    if let Some(bytes) = bytes_per_partition {
        builder = builder.with_distributed_file_scan_config_bytes_per_partition(bytes)?;
    }
    if let Some(token) = token {
        builder = builder.with_distributed_passthrough_headers(token.headers()?)?;
    }
    Ok(SessionContext::new_with_state(builder.build()).enable_url_table())
}

/// The distributed plan of `sql` on a [`cluster_context`]: its stages and the tasks of each.
///
/// # Errors
/// DataFusion's planning errors.
pub fn explain_blocking(ctx: &SessionContext, sql: &str) -> Result<String> {
    let plan = crate::sql::runtime()?
        .block_on(async { ctx.sql(sql).await?.create_physical_plan().await })?;
    Ok(display_plan_ascii(plan.as_ref(), false))
}
