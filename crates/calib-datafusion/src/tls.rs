//! TLS of worker traffic (rustls, through Tonic): a worker serves with a [`WorkerIdentity`]
//! (its certificate chain and private key), and whoever calls it (the coordinator, or another
//! worker) checks that certificate against a [`TlsCa`] and the name or IP address it dialled.
//! With TLS the cluster's token, plans and results cross the network encrypted, and a
//! coordinator cannot be led to a worker impostor that holds no certificate of the CA.

use std::fmt;

use datafusion::error::{DataFusionError, Result};
use tonic::transport::{Certificate, ClientTlsConfig, Identity, Server, ServerTlsConfig};

/// The PEM marker every certificate starts with.
const CERTIFICATE_PEM: &str = "-----BEGIN CERTIFICATE-----";

/// A certificate authority (PEM, one or more certificates): the certificates of workers that it
/// signed are accepted.
#[derive(Clone)]
pub struct TlsCa(Certificate);

impl TlsCa {
    /// The CA in `pem`.
    ///
    /// # Errors
    /// [`DataFusionError::Configuration`] when `pem` holds no PEM certificate.
    pub fn from_pem(pem: impl AsRef<[u8]>) -> Result<Self> {
        let pem = pem.as_ref();
        if !contains(pem, CERTIFICATE_PEM) {
            return Err(DataFusionError::Configuration(format!(
                "no PEM certificate (`{CERTIFICATE_PEM}`) in the CA file"
            )));
        }
        Ok(Self(Certificate::from_pem(pem)))
    }

    /// What a caller of `domain`'s workers checks their certificates with.
    pub(crate) fn client_config(&self, domain: &str) -> ClientTlsConfig {
        ClientTlsConfig::new().ca_certificate(self.0.clone()).domain_name(domain)
    }
}

impl fmt::Debug for TlsCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsCa(..)")
    }
}

/// A worker's TLS identity: its certificate chain and its private key, PEM. Its `Debug` form
/// does not show the key.
#[derive(Clone)]
pub struct WorkerIdentity(Identity);

impl WorkerIdentity {
    /// The identity of `cert` (the worker's certificate first, then any intermediates) and
    /// `key` (PKCS#8, PKCS#1 or SEC1).
    ///
    /// # Errors
    /// [`DataFusionError::Configuration`] when `cert` holds no PEM certificate or `key` no PEM
    /// private key.
    pub fn from_pem(cert: impl AsRef<[u8]>, key: impl AsRef<[u8]>) -> Result<Self> {
        let (cert, key) = (cert.as_ref(), key.as_ref());
        if !contains(cert, CERTIFICATE_PEM) {
            return Err(DataFusionError::Configuration(format!(
                "no PEM certificate (`{CERTIFICATE_PEM}`) in the certificate file"
            )));
        }
        if !contains(key, "PRIVATE KEY-----") {
            return Err(DataFusionError::Configuration(
                "no PEM private key (`-----BEGIN PRIVATE KEY-----`) in the key file".into(),
            ));
        }
        let identity = Self(Identity::from_pem(cert, key));
        // rustls reads the certificate and the key now, so that a bad pair fails here.
        Server::builder().tls_config(identity.server_config()).map_err(|e| {
            DataFusionError::Configuration(format!(
                "the certificate and key files: {}",
                error_chain(&e)
            ))
        })?;
        Ok(identity)
    }

    /// The server side of TLS with this identity.
    pub(crate) fn server_config(&self) -> ServerTlsConfig {
        ServerTlsConfig::new().identity(self.0.clone())
    }
}

impl fmt::Debug for WorkerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WorkerIdentity(..)")
    }
}

/// `e` and its sources on one line (a TLS failure's reason is two sources down).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        source = s.source();
    }
    text
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_files_without_their_blocks_are_refused_saying_what_is_missing() {
        let e = TlsCa::from_pem("not a certificate").unwrap_err().to_string();
        assert!(e.contains("no PEM certificate") && e.contains("CA file"), "{e}");
        let cert = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n";
        let e = WorkerIdentity::from_pem(cert, "key").unwrap_err().to_string();
        assert!(e.contains("no PEM private key"), "{e}");
        let e = WorkerIdentity::from_pem("cert", "-----BEGIN PRIVATE KEY-----").unwrap_err();
        assert!(e.to_string().contains("certificate file"), "{e}");
        // Both blocks, but nothing rustls can read in them.
        let e = WorkerIdentity::from_pem(cert, "-----BEGIN EC PRIVATE KEY-----").unwrap_err();
        assert!(e.to_string().contains("the certificate and key files"), "{e}");
    }
}
