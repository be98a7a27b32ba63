//! How a coordinator or worker reaches workers: one HTTP/2 channel per worker URL, opened on
//! first use and reused; `https://` URLs through TLS checked against the cluster's
//! [`TlsCa`], `http://` ones in the clear. HTTP/2 keep-alive pings find a worker that stopped
//! answering (killed, or cut off by the network) within [`KEEP_ALIVE`] + [`KEEP_ALIVE_TIMEOUT`],
//! so a query fails instead of hanging; every error of a call names the worker it was made to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion_distributed::grpc::{BoxCloneSyncChannel, create_worker_client};
use datafusion_distributed::{
    ChannelResolver, CoordinatorToWorkerMsg, ExecuteTaskRequest, GetWorkerInfoRequest,
    GetWorkerInfoResponse, SetPlanRequest, WorkerChannel, WorkerToCoordinatorMsg,
};
use futures::future::{BoxFuture, Shared};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use tonic::codegen::http::HeaderMap;
use tonic::transport::{Channel, Endpoint};
use url::Url;

use crate::tls::{TlsCa, error_chain};

/// How often an idle or busy channel pings its worker.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// How long a ping may go unanswered before the channel, and the queries on it, fail.
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long opening a connection (TCP and TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

type Opening =
    Shared<BoxFuture<'static, std::result::Result<BoxCloneSyncChannel, Arc<DataFusionError>>>>;

/// The channels of one coordinator or worker process, by worker URL.
#[derive(Clone, Default)]
pub(crate) struct Channels {
    ca: Option<TlsCa>,
    open: Arc<Mutex<HashMap<Url, Opening>>>,
}

impl Channels {
    /// Channels that check `https://` workers against `ca` (without one, `https://` URLs are
    /// refused).
    pub(crate) fn new(ca: Option<TlsCa>) -> Self {
        Self { ca, open: Arc::default() }
    }

    /// The channel to `url`: the open one, or one opened now.
    async fn channel(&self, url: &Url) -> Result<BoxCloneSyncChannel> {
        let opening = {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            let ca = self.ca.clone();
            let target = url.clone();
            open.entry(url.clone()).or_insert_with(|| connect(target, ca).boxed().shared()).clone()
        };
        opening.await.map_err(|e| {
            self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(url);
            DataFusionError::Shared(e)
        })
    }
}

/// Opens a channel to the worker at `url`, through TLS checked against `ca` for `https://`.
async fn connect(
    url: Url,
    ca: Option<TlsCa>,
) -> std::result::Result<BoxCloneSyncChannel, Arc<DataFusionError>> {
    let fail = |why: String| Arc::new(DataFusionError::Execution(format!("worker {url}: {why}")));
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .map_err(|e| fail(format!("not a worker address: {e}")))?
        .connect_timeout(CONNECT_TIMEOUT)
        .http2_keep_alive_interval(KEEP_ALIVE)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
        .keep_alive_while_idle(true);
    if url.scheme() == "https" {
        let ca = ca.ok_or_else(|| {
            fail("an https:// worker, and no CA to check its certificate (--tls-ca)".into())
        })?;
        let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
        endpoint = endpoint
            .tls_config(ca.client_config(host))
            .map_err(|e| fail(format!("TLS: {}", error_chain(&e))))?;
    }
    let channel: Channel = endpoint
        .connect()
        .await
        .map_err(|e| fail(format!("cannot connect: {}", error_chain(&e))))?;
    Ok(BoxCloneSyncChannel::new(channel))
}

#[async_trait]
impl ChannelResolver for Channels {
    async fn get_worker_client_for_url(&self, url: &Url) -> Result<Box<dyn WorkerChannel>> {
        let inner = self.channel(url).await.map(create_worker_client)?;
        Ok(Box::new(Named { url: url.clone(), inner }))
    }
}

/// A worker's client whose errors name the worker: a call that fails when the worker dies or
/// the connection breaks mid-query says which worker it lost.
struct Named {
    url: Url,
    inner: Box<dyn WorkerChannel>,
}

impl Named {
    fn name(url: &Url, e: DataFusionError) -> DataFusionError {
        let host = url.authority();
        if e.to_string().contains(host) {
            return e;
        }
        DataFusionError::Context(format!("worker {host}"), Box::new(e))
    }
}

#[async_trait]
impl WorkerChannel for Named {
    async fn coordinator_channel(
        &mut self,
        headers: HeaderMap,
        request: SetPlanRequest,
        c2w_stream: BoxStream<'static, CoordinatorToWorkerMsg>,
        metrics: ExecutionPlanMetricsSet,
        task_ctx: &Arc<TaskContext>,
    ) -> Result<BoxStream<'static, Result<WorkerToCoordinatorMsg>>> {
        let url = self.url.clone();
        let call = self.inner.coordinator_channel(headers, request, c2w_stream, metrics, task_ctx);
        let stream = call.await.map_err(|e| Self::name(&url, e))?;
        Ok(stream.map_err(move |e| Self::name(&url, e)).boxed())
    }

    async fn execute_task(
        &mut self,
        headers: HeaderMap,
        request: ExecuteTaskRequest,
        metrics: ExecutionPlanMetricsSet,
        task_ctx: &Arc<TaskContext>,
    ) -> Result<Vec<BoxStream<'static, Result<RecordBatch>>>> {
        let url = &self.url;
        let streams = self.inner.execute_task(headers, request, metrics, task_ctx).await;
        let streams = streams.map_err(|e| Self::name(url, e))?;
        let name = |stream: BoxStream<'static, Result<RecordBatch>>| {
            let url = url.clone();
            stream.map_err(move |e| Self::name(&url, e)).boxed()
        };
        Ok(streams.into_iter().map(name).collect())
    }

    async fn get_worker_info(
        &mut self,
        request: GetWorkerInfoRequest,
    ) -> Result<GetWorkerInfoResponse> {
        let info = self.inner.get_worker_info(request).await;
        info.map_err(|e| Self::name(&self.url, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_and_unverifiable_workers_are_named() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let channels = Channels::new(None);
        let https = Url::parse("https://127.0.0.1:1").unwrap();
        let e = runtime.block_on(channels.channel(&https)).err().unwrap().to_string();
        assert!(e.contains("https://127.0.0.1:1") && e.contains("--tls-ca"), "{e}");
        let http = Url::parse("http://127.0.0.1:1").unwrap();
        let e = runtime.block_on(channels.channel(&http)).err().unwrap().to_string();
        assert!(e.contains("http://127.0.0.1:1") && e.contains("cannot connect"), "{e}");
        // A failed opening is forgotten, so the next query tries again.
        assert!(channels.open.lock().unwrap().is_empty());
    }
}
