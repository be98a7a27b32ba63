//! Shared-secret authentication of worker traffic: a [`WorkerToken`] that workers and their
//! coordinator share. Every gRPC call to a worker carries it as `authorization: Bearer
//! <token>` (the coordinator's calls and the workers' calls to each other alike, as
//! datafusion-distributed's passthrough headers); a Tonic interceptor ([`Gate`]) compares it
//! in constant time before the call reaches the worker, and answers a missing or wrong token
//! with `Unauthenticated` and a line on the worker's stderr naming the peer: no plan is read.

use std::fmt;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use tonic::codegen::http::{HeaderMap, HeaderValue, header::AUTHORIZATION};
use tonic::{Request, Status};

/// The fewest characters a token may have (16 random bytes, base64, are 24).
pub const MIN_TOKEN_CHARS: usize = 16;

/// The secret a cluster's workers and coordinator share: visible ASCII, at least
/// [`MIN_TOKEN_CHARS`] characters. Its `Debug` form does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct WorkerToken(Arc<str>);

impl WorkerToken {
    /// The token in `text` (surrounding whitespace, such as a token file's final newline,
    /// ignored).
    ///
    /// # Errors
    /// [`DataFusionError::Configuration`] for a token shorter than [`MIN_TOKEN_CHARS`] or with
    /// a character outside visible ASCII.
    pub fn new(text: &str) -> Result<Self> {
        let token = text.trim();
        if token.chars().count() < MIN_TOKEN_CHARS {
            return Err(DataFusionError::Configuration(format!(
                "the worker token has {} characters; it needs at least {MIN_TOKEN_CHARS} (make \
                 one with `head -c 32 /dev/urandom | base64 > worker.token`)",
                token.chars().count()
            )));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(DataFusionError::Configuration(
                "the worker token may hold visible ASCII characters only (no spaces or \
                 control characters)"
                    .into(),
            ));
        }
        Ok(Self(token.into()))
    }

    /// The headers every call of a coordinator or worker holding this token carries.
    pub(crate) fn headers(&self) -> Result<HeaderMap> {
        let value = HeaderValue::from_str(&format!("Bearer {}", self.0))
            .map_err(|e| DataFusionError::Configuration(format!("worker token: {e}")))?;
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, value);
        Ok(headers)
    }

    /// Whether `presented` (an `authorization` header's value) is `Bearer <this token>`,
    /// compared in time that does not depend on where they differ.
    pub(crate) fn admits(&self, presented: &[u8]) -> bool {
        let expected = format!("Bearer {}", self.0);
        constant_time_eq(expected.as_bytes(), presented)
    }
}

impl fmt::Debug for WorkerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WorkerToken(..)")
    }
}

/// `a == b`, reading every byte of both whatever they hold (only the lengths leak).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let length_differs = u8::from(a.len() != b.len());
    let longest = a.len().max(b.len());
    let byte = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let differs = (0..longest).fold(length_differs, |acc, i| acc | (byte(a, i) ^ byte(b, i)));
    std::hint::black_box(differs) == 0
}

/// The interceptor in front of a worker's gRPC service: with a token, every call must present
/// it; without one (a loopback worker started without a token), every call passes.
#[derive(Debug, Clone)]
pub(crate) struct Gate(pub(crate) Option<WorkerToken>);

impl tonic::service::Interceptor for Gate {
    fn call(&mut self, request: Request<()>) -> std::result::Result<Request<()>, Status> {
        let Some(token) = &self.0 else { return Ok(request) };
        let presented = request.metadata().get(AUTHORIZATION.as_str());
        if presented.is_some_and(|v| token.admits(v.as_bytes())) {
            return Ok(request);
        }
        let peer =
            request.remote_addr().map_or_else(|| "an unknown peer".into(), |a| a.to_string());
        let why = if presented.is_some() { "a wrong token" } else { "no token" };
        eprintln!("calib worker: refused a call from {peer}: {why}");
        Err(Status::unauthenticated(format!(
            "unauthenticated: the calib worker refused a call with {why}; give the cluster's \
             token with --token-file or CALIB_WORKER_TOKEN"
        )))
    }
}

#[cfg(test)]
mod tests {
    use tonic::service::Interceptor;

    use super::*;

    #[test]
    fn tokens_are_checked_once_and_never_shown() {
        let token = WorkerToken::new("  0123456789abcdef+/=\n").unwrap();
        assert_eq!(format!("{token:?}"), "WorkerToken(..)");
        assert!(WorkerToken::new("short").unwrap_err().to_string().contains("at least 16"));
        assert!(WorkerToken::new("0123456789 abcdef").unwrap_err().to_string().contains("visible"));
        let headers = token.headers().unwrap();
        assert_eq!(headers[AUTHORIZATION], "Bearer 0123456789abcdef+/=");
    }

    #[test]
    fn the_gate_admits_the_token_alone() {
        let token = WorkerToken::new("0123456789abcdef").unwrap();
        let mut gate = Gate(Some(token.clone()));
        let call = |value: Option<&str>| {
            let mut request = Request::new(());
            if let Some(v) = value {
                request.metadata_mut().insert("authorization", v.parse().unwrap());
            }
            request
        };
        assert!(gate.call(call(Some("Bearer 0123456789abcdef"))).is_ok());
        for wrong in [None, Some("Bearer 0123456789abcdeg"), Some("0123456789abcdef")] {
            let status = gate.call(call(wrong)).unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated, "{wrong:?}");
        }
        assert!(Gate(None).call(call(None)).is_ok());
        assert!(constant_time_eq(b"abc", b"abc") && !constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a") && !constant_time_eq(b"abd", b"abc"));
    }
}
