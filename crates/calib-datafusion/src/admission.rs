//! A worker's door for queries: [`Admission`] sits behind the token check and in front of the
//! worker's gRPC service. A query reaches a worker as calls of two kinds, each with the query's
//! id in its first message: `CoordinatorChannel` (a task's plan) and `ExecuteTask` (a stream of
//! a task's results). The door reads that message (refusing one longer than the worker's
//! message limit before buffering it), and admits the call when its query already holds a
//! place here or fewer than `max_queries` queries do. A query holds its place until the last
//! of its calls' response streams ends (or its caller goes away); past the worker's time
//! limit, counted from its first admitted call, its response streams end with
//! `DeadlineExceeded`. Refusals are gRPC `ResourceExhausted` statuses that say which limit and
//! how to raise it.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::future::Either;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::sync::broadcast;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;

/// The gRPC method whose calls carry a task's plan.
const PLAN_METHOD: &str = "/CoordinatorChannel";
/// The gRPC method whose calls stream a task's results.
const EXECUTE_METHOD: &str = "/ExecuteTask";
/// How long a call may take to send its first message (a coordinator sends it at once).
const FIRST_MESSAGE: Duration = Duration::from_secs(30);
/// A gRPC message's prefix: a compression flag and a 4-byte big-endian length.
const PREFIX: usize = 5;

/// The open queries of a worker: each query id with the number of its open calls and when its
/// first call was admitted.
#[derive(Debug, Default)]
struct Open(Mutex<HashMap<Vec<u8>, (usize, Instant)>>);

/// A query's place among the open ones, given back on drop.
struct Place {
    open: Arc<Open>,
    query: Vec<u8>,
    /// When the query's first call here was admitted.
    started: Instant,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.open.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((n, _)) = open.get_mut(&self.query) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.query);
            }
        }
    }
}

impl Open {
    /// A place for a task of `query`: granted when the query runs already or fewer than `max`
    /// queries do.
    fn admit(self: &Arc<Self>, query: Vec<u8>, max: usize) -> Result<Place, usize> {
        let mut open = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !open.contains_key(&query) && open.len() >= max {
            return Err(open.len());
        }
        let (n, started) = open.entry(query.clone()).or_insert((0, Instant::now()));
        *n += 1;
        Ok(Place { open: Arc::clone(self), query, started: *started })
    }
}

/// Plan calls refused lately, by query: a call of a refused query for its results gets the
/// same answer at once (also when it came first and waits for the plan), instead of waiting
/// for a plan that will never come.
struct Refusals {
    recent: Mutex<VecDeque<(Vec<u8>, Status, Instant)>>,
    news: broadcast::Sender<(Vec<u8>, Status)>,
}

/// How long a refusal is remembered (datafusion-distributed waits 10 s for a task's plan).
const REMEMBERED: Duration = Duration::from_secs(120);
/// How many refusals are remembered at most.
const REMEMBERED_REFUSALS: usize = 1024;

impl Default for Refusals {
    fn default() -> Self {
        Self { recent: Mutex::default(), news: broadcast::channel(64).0 }
    }
}

impl Refusals {
    fn record(&self, query: Vec<u8>, status: &Status) {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        while recent.front().is_some_and(|(_, _, at)| at.elapsed() > REMEMBERED)
            || recent.len() >= REMEMBERED_REFUSALS
        {
            recent.pop_front();
        }
        recent.push_back((query.clone(), status.clone(), Instant::now()));
        let _ = self.news.send((query, status.clone()));
    }

    fn of(&self, query: &[u8]) -> Option<Status> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.iter().rev().find(|(q, _, _)| q == query).map(|(_, s, _)| s.clone())
    }
}

/// Resolves with the refusal of `query` that `news` brings, if one comes.
async fn refusal_of(mut news: broadcast::Receiver<(Vec<u8>, Status)>, query: Vec<u8>) -> Status {
    loop {
        match news.recv().await {
            Ok((q, status)) if q == query => return status,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

/// What the door lets through.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    /// Queries at once.
    pub(crate) max_queries: Option<usize>,
    /// Bytes of a plan message.
    pub(crate) max_message: usize,
    /// How long a query may run here, from its first admitted call.
    pub(crate) max_time: Option<Duration>,
}

/// The door in front of a worker's service `S`.
#[derive(Clone)]
pub(crate) struct Admission<S> {
    inner: S,
    open: Arc<Open>,
    refusals: Arc<Refusals>,
    limits: Limits,
}

impl<S> Admission<S> {
    /// A door with `limits` in front of `inner`.
    pub(crate) fn new(inner: S, limits: Limits) -> Self {
        Self { inner, open: Arc::default(), refusals: Arc::default(), limits }
    }
}

impl<S: NamedService> NamedService for Admission<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<Request<Body>> for Admission<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
    S: Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Response<Body>, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let path = request.uri().path();
        let plan = path.ends_with(PLAN_METHOD);
        if !plan && !path.ends_with(EXECUTE_METHOD) {
            return Box::pin(self.inner.call(request));
        }
        // The clone that was made ready goes into the future; the new one waits for its turn.
        let ready = self.inner.clone();
        let door = Self {
            inner: std::mem::replace(&mut self.inner, ready),
            open: Arc::clone(&self.open),
            refusals: Arc::clone(&self.refusals),
            limits: self.limits,
        };
        Box::pin(door.admit(request, plan))
    }
}

impl<S> Admission<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    /// Reads the first message of a `plan` call or a results call, and passes the call on or
    /// answers it with a refusal.
    async fn admit(
        mut self,
        request: Request<Body>,
        plan: bool,
    ) -> Result<Response<Body>, Infallible> {
        // Subscribed before the recorded refusals are read, so that none falls in between.
        let news = (!plan).then(|| self.refusals.news.subscribe());
        let (parts, body) = request.into_parts();
        let read =
            tokio::time::timeout(FIRST_MESSAGE, first_message(body, self.limits.max_message));
        let read = read.await.unwrap_or_else(|_| {
            let status = Status::deadline_exceeded("no first message within 30 s of the call");
            Err((status, Bytes::new()))
        });
        let (first, rest) = match read {
            Ok(read) => read,
            Err((status, seen)) => {
                if let Some(query) = plan.then(|| leading_query_id(&seen, plan)).flatten() {
                    self.refusals.record(query, &status);
                }
                return Ok(status.into_http());
            }
        };
        let query = query_id(&first, plan).unwrap_or_else(anonymous);
        if let Some(status) = self.refusals.of(&query) {
            return Ok(status.into_http());
        }
        let max_queries = self.limits.max_queries.unwrap_or(usize::MAX);
        let place = match self.open.admit(query.clone(), max_queries) {
            Ok(place) => place,
            Err(running) => {
                let status = busy(running, max_queries);
                if plan {
                    self.refusals.record(query, &status);
                }
                return Ok(status.into_http());
            }
        };
        let body = Body::new(Prefixed { first: Some(first), rest });
        let call = self.inner.call(Request::from_parts(parts, body));
        let response = match news {
            None => call.await?,
            Some(news) => {
                let refused = Box::pin(refusal_of(news, query));
                match futures::future::select(Box::pin(call), refused).await {
                    Either::Left((response, _)) => response?,
                    Either::Right((status, _)) => return Ok(status.into_http()),
                }
            }
        };
        let limit = self.limits.max_time.map(|limit| {
            let deadline = tokio::time::Instant::from_std(place.started + limit);
            (Box::pin(tokio::time::sleep_until(deadline)), limit)
        });
        Ok(response.map(|body| Body::new(Holding { body: Some(body), _place: place, limit })))
    }
}

/// A query id of its own for a call whose query id could not be read: such a call counts as a
/// query alone.
fn anonymous() -> Vec<u8> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("anonymous-{}", NEXT.fetch_add(1, Ordering::Relaxed)).into_bytes()
}

/// The refusal of a query past `max` running ones.
fn busy(running: usize, max: usize) -> Status {
    Status::resource_exhausted(format!(
        "the calib worker runs {running} queries already, its limit (--max-queries {max}); try \
         again when one ends"
    ))
}

/// The bytes of `body` up to the end of its first gRPC message at least (its prefix
/// included; the last frame read may run on into the next message) and the rest of the body;
/// a message declared longer than `max` bytes is refused before it is read (with the
/// bytes read so far).
async fn first_message(mut body: Body, max: usize) -> Result<(Bytes, Body), (Status, Bytes)> {
    let mut read = BytesMut::new();
    loop {
        if let Some(length) = declared_length(&read) {
            if length > max {
                return Err((too_long(length, max), read.freeze()));
            }
            if read.len() >= PREFIX + length {
                return Ok((read.freeze(), body));
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    read.extend_from_slice(&data);
                }
            }
            Some(Err(status)) => return Err((status, read.freeze())),
            None => {
                let status = Status::invalid_argument("a call ended before its first message");
                return Err((status, read.freeze()));
            }
        }
    }
}

/// The length a gRPC message declares in its prefix, once the prefix is read.
fn declared_length(message: &[u8]) -> Option<usize> {
    let prefix: [u8; 4] = message.get(1..PREFIX)?.try_into().ok()?;
    usize::try_from(u32::from_be_bytes(prefix)).ok()
}

/// The refusal of a message of `length` bytes past `max`.
fn too_long(length: usize, max: usize) -> Status {
    Status::resource_exhausted(format!(
        "a message of {length} bytes is past the calib worker's limit of {max} bytes \
         (--max-message-size)"
    ))
}

/// The query id in a call's first message, whole: `CoordinatorToWorkerMsg.set_plan_request (1)
/// .task_key (1) .query_id (1)` in a `plan` call, `ExecuteTaskRequest.task_key (1) .query_id
/// (1)` in the other (`None` when it holds none, which the worker then refuses itself).
fn query_id(message: &Bytes, plan: bool) -> Option<Vec<u8>> {
    #[derive(Clone, PartialEq, prost::Message)]
    struct PlanMessage {
        #[prost(message, optional, tag = "1")]
        set_plan_request: Option<Keyed>,
    }
    /// `SetPlanRequest` and `ExecuteTaskRequest` alike: the task key first.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Keyed {
        #[prost(message, optional, tag = "1")]
        task_key: Option<TaskKey>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct TaskKey {
        #[prost(bytes = "vec", tag = "1")]
        query_id: Vec<u8>,
    }
    // The bytes read may run on into the next message.
    let end = (PREFIX + declared_length(message).unwrap_or(0)).min(message.len());
    let payload = message.slice(PREFIX.min(end)..end);
    let keyed = if plan {
        <PlanMessage as prost::Message>::decode(payload).ok().and_then(|m| m.set_plan_request)
    } else {
        <Keyed as prost::Message>::decode(payload).ok()
    };
    keyed.and_then(|k| k.task_key).map(|k| k.query_id).filter(|id| !id.is_empty())
}

/// The query id at the start of a message of which only `seen` was read, where it lies when
/// the fields come in their tag order (as every protobuf encoder writes them): a field 1,
/// length-delimited, within another (twice, or three times in a `plan` call).
fn leading_query_id(seen: &[u8], plan: bool) -> Option<Vec<u8>> {
    let mut rest = seen.get(PREFIX..)?;
    for _ in 0..if plan { 3 } else { 2 } {
        rest = first_field(rest)?;
    }
    Some(rest.to_vec()).filter(|id| !id.is_empty())
}

/// The bytes of field 1 at the start of `message` when it is length-delimited (up to where the
/// read bytes end).
fn first_field(message: &[u8]) -> Option<&[u8]> {
    let (&tag, mut rest) = message.split_first()?;
    if tag != 0x0a {
        return None;
    }
    let mut length = 0usize;
    for shift in (0..64).step_by(7) {
        let (&byte, after) = rest.split_first()?;
        rest = after;
        length |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return rest.get(..length.min(rest.len()));
        }
    }
    None
}

/// A request body whose first message was read already: that message, then the rest.
struct Prefixed {
    first: Option<Bytes>,
    rest: Body,
}

impl HttpBody for Prefixed {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.rest.size_hint();
        let first = self.first.as_ref().map_or(0, |b| b.len() as u64);
        hint.set_lower(hint.lower() + first);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + first);
        }
        hint
    }
}

/// A response body that holds its query's place until it ends or is dropped, and ends with
/// `DeadlineExceeded` (dropping the stream that feeds it) when the query's time is up.
struct Holding {
    body: Option<Body>,
    _place: Place,
    limit: Option<(Pin<Box<tokio::time::Sleep>>, Duration)>,
}

impl HttpBody for Holding {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        let Some(body) = this.body.as_mut() else { return Poll::Ready(None) };
        if let Some((deadline, limit)) = &mut this.limit
            && deadline.as_mut().poll(cx).is_ready()
        {
            let status = over_time(*limit);
            this.body = None;
            let mut trailers = tonic::codegen::http::HeaderMap::new();
            return Poll::Ready(Some(
                status.add_header(&mut trailers).map(|()| Frame::trailers(trailers)),
            ));
        }
        Pin::new(body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.body.as_ref().map(HttpBody::size_hint).unwrap_or_default()
    }
}

/// The end of a query past the worker's time limit `limit`.
fn over_time(limit: Duration) -> Status {
    Status::deadline_exceeded(format!(
        "the query ran past the calib worker's time limit of {} s (--query-timeout)",
        limit.as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_hold_places_until_their_last_task_ends() {
        let open = Arc::new(Open::default());
        let a1 = open.admit(b"a".to_vec(), 2).unwrap();
        let a2 = open.admit(b"a".to_vec(), 2).unwrap();
        let b = open.admit(b"b".to_vec(), 2).unwrap();
        assert_eq!(open.admit(b"c".to_vec(), 2).err(), Some(2));
        drop(a1);
        assert_eq!(open.admit(b"c".to_vec(), 2).err(), Some(2));
        drop(a2);
        let c = open.admit(b"c".to_vec(), 2).unwrap();
        drop((b, c));
        assert!(open.0.lock().unwrap().is_empty());
    }

    #[test]
    fn the_query_id_is_read_from_the_first_message() {
        // CoordinatorToWorkerMsg { set_plan_request: { task_key: { query_id: "q1" } } }.
        let key = [0x0a, 2, b'q', b'1'];
        let request = [&[0x0a, key.len() as u8][..], &key].concat();
        let message = [&[0x0a, request.len() as u8][..], &request].concat();
        let framed = [&[0, 0, 0, 0, message.len() as u8][..], &message].concat();
        assert_eq!(query_id(&Bytes::from(framed.clone()), true).unwrap(), b"q1");
        // The next message's first bytes behind the first.
        let run_on = Bytes::from([&framed[..], &[0, 0, 0, 0, 9, 1]].concat());
        assert_eq!(query_id(&run_on, true).unwrap(), b"q1");
        assert_eq!(leading_query_id(&framed, true).unwrap(), b"q1");
        // ExecuteTaskRequest { task_key: { query_id: "q1" } }.
        let framed = [&[0, 0, 0, 0, request.len() as u8][..], &request].concat();
        assert_eq!(query_id(&Bytes::from(framed.clone()), false).unwrap(), b"q1");
        assert_eq!(leading_query_id(&framed, false).unwrap(), b"q1");
        assert!(query_id(&Bytes::from_static(&[0, 0, 0, 0, 1, 0xff]), true).is_none());
        assert!(leading_query_id(&[0, 0, 0, 0, 1, 0x12, 0], true).is_none());
    }

    #[test]
    fn long_first_messages_are_refused_unread() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let body = Body::new(http_body_util::Full::new(Bytes::from_static(&[0, 0, 1, 0, 0])));
        let (status, _) = runtime.block_on(first_message(body, 1000)).err().unwrap();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert!(status.message().contains("65536 bytes") && status.message().contains("1000"));
        let body = Body::new(http_body_util::Full::new(Bytes::from_static(&[0, 0, 0, 0, 2, 7])));
        let (status, _) = runtime.block_on(first_message(body, 1000)).err().unwrap();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
    }
}
