//! calib's aggregates on [datafusion-distributed] workers: a worker is a Tonic (gRPC) service
//! whose sessions register [`crate::udafs`]; a coordinator plans the query with the
//! distributed planner, the workers run the scans and partial aggregates (calib's mergeable
//! states travel as Arrow binary columns), the coordinator merges them.
//!
//! Every worker must reach the files the query names at the same path (one machine, a shared
//! file system, or object storage). A worker's [`WorkerSettings`] say what it enforces: with a
//! [`WorkerToken`] it serves only calls that carry it, and a coordinator's and its workers'
//! calls carry it; with a [`WorkerIdentity`] it serves through TLS, and its callers check its
//! certificate against a [`TlsCa`]; with a [`DataRoot`] its scans read under one directory
//! alone; it runs plans made of calib's kinds of nodes only; with a memory limit each query
//! holds at most that much, with a query limit at most that many queries run at once, and no
//! plan message may pass its message limit (docs/security.md).
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

use crate::admission::{Admission, Limits};
use crate::auth::Gate;
pub use crate::auth::{MIN_TOKEN_CHARS, WorkerToken};
use crate::channels::Channels;
pub use crate::channels::{KEEP_ALIVE, KEEP_ALIVE_TIMEOUT};
pub use crate::data_root::DataRoot;
use crate::tls::error_chain;
pub use crate::tls::{TlsCa, WorkerIdentity};
pub use datafusion_distributed;

/// The longest gRPC message a worker reads when its settings name no other limit: 64 MiB
/// (calib's plans are kilobytes).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 << 20;

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
    /// Serve through TLS with this certificate and key (`None`: plain HTTP/2).
    pub identity: Option<WorkerIdentity>,
    /// Check the certificates of the `https://` workers this one calls against this CA.
    pub ca: Option<TlsCa>,
    /// Run at most this many queries at once; a task of another query is refused with
    /// `ResourceExhausted` (`None`: no limit).
    pub max_queries: Option<usize>,
    /// The longest gRPC message the worker reads, in bytes (`None`:
    /// [`DEFAULT_MAX_MESSAGE_SIZE`]).
    pub max_message_size: Option<usize>,
    /// How long a query may run on the worker, from its first call there; past it, its
    /// streams end with `DeadlineExceeded` (`None`: no limit).
    pub max_query_time: Option<std::time::Duration>,
}

/// A worker whose sessions know calib's aggregates and run plans of calib's kinds of nodes
/// alone, with `settings`' token on its calls to other workers (through TLS checked against
/// `settings`' CA where their URLs are `https://`); each task runs in a runtime of its own,
/// with `settings`' memory limit and its scans confined to `settings`' data root.
pub fn worker(settings: WorkerSettings) -> Worker {
    let WorkerSettings { token, data_root, memory_limit, ca, .. } = settings;
    let root = data_root.map(Arc::new);
    let channels = Channels::new(ca);
    Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let (token, root, channels) = (token.clone(), root.clone(), channels.clone());
        async move { worker_state(ctx, token.as_ref(), root, memory_limit, channels) }
    })
}

fn worker_state(
    ctx: WorkerQueryContext,
    token: Option<&WorkerToken>,
    root: Option<Arc<DataRoot>>,
    memory_limit: Option<usize>,
    channels: Channels,
) -> Result<SessionState> {
    let mut builder = crate::with_udafs(ctx.builder)
        .with_distributed_channel_resolver(channels)
        .with_distributed_worker_plan_rewrite_handler(crate::plan_rules::admit_plan);
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
/// fails: through TLS with the settings' identity; with a token, only calls that carry it
/// (any other gets `Unauthenticated` before anything else is read); plan calls past the query
/// or message limit get `ResourceExhausted`, and a query past the time limit
/// `DeadlineExceeded`.
///
/// # Errors
/// A TLS identity that rustls cannot use, and Tonic's transport errors.
pub async fn serve(listener: TcpListener, settings: WorkerSettings) -> Result<()> {
    let max_message = settings.max_message_size.unwrap_or(DEFAULT_MAX_MESSAGE_SIZE);
    let limits = Limits {
        max_queries: settings.max_queries,
        max_message,
        max_time: settings.max_query_time,
    };
    let (token, identity) = (settings.token.clone(), settings.identity.clone());
    let service = worker(settings).into_worker_server().max_decoding_message_size(max_message);
    let admitted = Admission::new(service, limits);
    let mut server = Server::builder()
        .http2_keepalive_interval(Some(KEEP_ALIVE))
        .http2_keepalive_timeout(Some(KEEP_ALIVE_TIMEOUT));
    if let Some(identity) = &identity {
        server = server.tls_config(identity.server_config()).map_err(|e| {
            DataFusionError::Configuration(format!("TLS certificate or key: {}", error_chain(&e)))
        })?;
    }
    server
        .add_service(InterceptedService::new(admitted, Gate(token)))
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

/// Parses worker addresses (`host:port`, `http://host:port` or `https://host:port`); a bare
/// `host:port` is `https://` when `tls`, else `http://`.
///
/// # Errors
/// [`DataFusionError::Configuration`] for an address that is not a URL, or of another scheme.
pub fn worker_urls(addresses: &[String], tls: bool) -> Result<Vec<Url>> {
    let scheme = if tls { "https" } else { "http" };
    addresses
        .iter()
        .map(|a| {
            let text = if a.contains("://") { a.clone() } else { format!("{scheme}://{a}") };
            let url = Url::parse(&text).map_err(|e| {
                DataFusionError::Configuration(format!("worker address `{a}`: {e}"))
            })?;
            match url.scheme() {
                "http" | "https" if url.host_str().is_some() => Ok(url),
                _ => Err(DataFusionError::Configuration(format!(
                    "worker address `{a}`: not host:port, http://host:port or https://host:port"
                ))),
            }
        })
        .collect()
}

/// Whether `url` names this machine (a loopback address, or `localhost`): traffic to it never
/// crosses a network.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// How a coordinator reaches its workers.
#[derive(Debug, Clone, Default)]
pub struct ClusterSettings {
    /// Send this token with every call.
    pub token: Option<WorkerToken>,
    /// Check the certificates of `https://` workers against this CA.
    pub ca: Option<TlsCa>,
    /// Bytes of file per scan task: splits file scans finer than DataFusion's default (small
    /// files would otherwise stay in one task).
    pub bytes_per_partition: Option<usize>,
}

/// A coordinator session over `workers`, with calib's aggregates and quoted paths as tables,
/// reaching them as `settings` say.
///
/// # Errors
/// [`DataFusionError::Configuration`] for an empty worker list or a bad partition size.
pub fn cluster_context(workers: Vec<Url>, settings: &ClusterSettings) -> Result<SessionContext> {
    if workers.is_empty() {
        return Err(DataFusionError::Configuration("no workers given".into()));
    }
    let defaults = SessionStateBuilder::new()
        .with_config(SessionConfig::new().with_information_schema(true))
        .with_default_features();
    let mut builder = crate::with_udafs(defaults)
        .with_distributed_worker_resolver(Workers(workers))
        .with_distributed_channel_resolver(Channels::new(settings.ca.clone()))
        .with_distributed_planner();
    if let Some(bytes) = settings.bytes_per_partition {
        builder = builder.with_distributed_file_scan_config_bytes_per_partition(bytes)?;
    }
    if let Some(token) = &settings.token {
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
