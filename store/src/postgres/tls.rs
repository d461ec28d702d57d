//! TLS to PostgreSQL, as libpq spells it in the connection string:
//!
//! - `sslmode=disable`: in the clear;
//! - `allow`, `prefer` (libpq's default): TLS when the server offers it,
//!   the certificate not checked;
//! - `require`: TLS or nothing, the certificate not checked (checked
//!   against `sslrootcert` when one is named, as libpq does);
//! - `verify-ca`: TLS, the certificate chain checked;
//! - `verify-full`: TLS, the chain and the host name checked.
//!
//! The roots are `sslrootcert` (a PEM file; `system` means the platform's),
//! else the platform's and the PEM file in `OKFIT_TLS_CA`. Client
//! certificates (`sslcert`, `sslkey`) are not supported yet and are
//! refused rather than ignored.

use super::pool::pg_err;
use crate::error::Error;
use postgres::config::SslMode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{
    verify_tls12_signature, verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// What the certificate of a TLS connection must show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// Nothing: encryption without authentication.
    Nothing,
    /// A chain to a trusted root.
    Chain,
    /// A chain to a trusted root, for the host connected to.
    Full,
}

/// Where the trusted roots come from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Roots {
    /// The platform's, and `OKFIT_TLS_CA`.
    Default,
    /// The platform's only (`sslrootcert=system`).
    System,
    /// A PEM file.
    File(PathBuf),
}

/// The TLS a connection string asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tls {
    /// `None`: in the clear.
    mode: Option<SslMode>,
    check: Check,
    roots: Roots,
}

impl Tls {
    /// Splits the TLS parameters out of `url`, leaving the rest for the
    /// client's own parser.
    pub(crate) fn split(url: &str) -> Result<(String, Tls), Error> {
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, q),
            None => (url, ""),
        };
        let mut mode = "prefer".to_string();
        let mut rootcert = None;
        let mut rest = url::form_urlencoded::Serializer::new(String::new());
        let mut kept = 0;
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "sslmode" => mode = v.into_owned(),
                "sslrootcert" => rootcert = Some(v.into_owned()),
                "sslcert" | "sslkey" | "sslpassword" => {
                    return Err(Error::Usage(format!(
                        "{k}: client certificates are not supported for PostgreSQL yet; authenticate with a password or trust instead"
                    )))
                }
                _ => {
                    rest.append_pair(&k, &v);
                    kept += 1;
                }
            }
        }
        let roots = match rootcert.as_deref() {
            None => Roots::Default,
            Some("system") => Roots::System,
            Some(path) => Roots::File(PathBuf::from(path)),
        };
        let (mode, check) = match mode.as_str() {
            "disable" => (None, Check::Nothing),
            "allow" | "prefer" => (Some(SslMode::Prefer), Check::Nothing),
            // libpq checks the chain under `require` when a root file is
            // named.
            "require" if rootcert.is_some() => (Some(SslMode::Require), Check::Chain),
            "require" => (Some(SslMode::Require), Check::Nothing),
            "verify-ca" => (Some(SslMode::Require), Check::Chain),
            "verify-full" => (Some(SslMode::Require), Check::Full),
            other => {
                return Err(Error::Usage(format!(
                    "sslmode={other}: expected disable, allow, prefer, require, verify-ca or verify-full"
                )))
            }
        };
        let rest = if kept == 0 {
            base.to_string()
        } else {
            format!("{base}?{}", rest.finish())
        };
        Ok((rest, Tls { mode, check, roots }))
    }

    /// The client's TLS mode (meaningful when [`Tls::connector`] is some).
    pub(crate) fn mode(&self) -> SslMode {
        self.mode.unwrap_or(SslMode::Disable)
    }

    /// The TLS connector, or `None` to connect in the clear.
    pub(crate) fn connector(&self) -> Result<Option<MakeRustlsConnect>, Error> {
        if self.mode.is_none() {
            return Ok(None);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match self.check {
            Check::Full => self.webpki(&provider)?,
            Check::Chain => Arc::new(Lenient {
                chain: Some(self.webpki(&provider)?),
                provider: provider.clone(),
            }),
            Check::Nothing => Arc::new(Lenient {
                chain: None,
                provider: provider.clone(),
            }),
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Usage(format!("postgresql TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(Some(MakeRustlsConnect::new(config)))
    }

    fn webpki(&self, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, Error> {
        let mut store = RootCertStore::empty();
        for c in self.roots()? {
            store
                .add(c)
                .map_err(|e| Error::Usage(format!("postgresql TLS root certificate: {e}")))?;
        }
        if store.is_empty() {
            return Err(Error::Usage(
                "postgresql TLS: no trusted root certificates: name one with sslrootcert=FILE or OKFIT_TLS_CA".into(),
            ));
        }
        WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
            .build()
            .map_err(|e| Error::Usage(format!("postgresql TLS: {e}")))
    }

    fn roots(&self) -> Result<Vec<CertificateDer<'static>>, Error> {
        match &self.roots {
            Roots::File(path) => pem_file(path, "sslrootcert"),
            Roots::System => Ok(crate::tls::platform_roots()),
            Roots::Default => crate::tls::trusted_roots(),
        }
    }

    /// Whether the certificate is checked at all.
    pub(crate) fn checks(&self) -> bool {
        self.mode.is_some() && self.check != Check::Nothing
    }
}

/// The certificates of a PEM file.
fn pem_file(path: &PathBuf, what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| Error::Usage(format!("{what}: cannot read {} ({e})", path.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Usage(format!("{what}: {} is not PEM ({e})", path.display())))?;
    if certs.is_empty() {
        return Err(Error::Usage(format!(
            "{what}: no certificate in {}",
            path.display()
        )));
    }
    Ok(certs)
}

/// A refused connection as a store error, with what to do when the
/// server's certificate was the reason (read from the rustls error in its
/// causes, never from its text).
pub(crate) fn explain(e: postgres::Error, tls: &Tls) -> Error {
    let hint = match certificate_error(&e) {
        Some(CertificateError::UnknownIssuer) if tls.checks() => {
            "sslmode asks for the server's certificate to be checked: name its CA with sslrootcert=FILE or OKFIT_TLS_CA"
        }
        Some(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. })
            if tls.checks() =>
        {
            "connect by a name the certificate carries, or check the chain alone with sslmode=verify-ca"
        }
        _ => return pg_err(e),
    };
    match pg_err(e) {
        Error::Store(m) => Error::Store(format!("{m} ({hint})")),
        other => other,
    }
}

/// The certificate refusal among an error's causes (rustls reaches
/// tokio-postgres inside an `io::Error`).
fn certificate_error(e: &postgres::Error) -> Option<CertificateError> {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let inner = c
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .map_or(c, |i| i as &(dyn std::error::Error + 'static));
        if let Some(rustls::Error::InvalidCertificate(ce)) = inner.downcast_ref::<rustls::Error>() {
            return Some(ce.clone());
        }
        cause = c.source();
    }
    None
}

/// A handshake signature's verdict.
type Valid = Result<HandshakeSignatureValid, rustls::Error>;
type Cert<'a> = CertificateDer<'a>;
type Signed = DigitallySignedStruct;

#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl Lenient {
    fn algorithms(&self) -> &WebPkiSupportedAlgorithms {
        &self.provider.signature_verification_algorithms
    }
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(&self, m: &[u8], c: &Cert<'_>, d: &Signed) -> Valid {
        verify_tls12_signature(m, c, d, self.algorithms())
    }

    fn verify_tls13_signature(&self, m: &[u8], c: &Cert<'_>, d: &Signed) -> Valid {
        verify_tls13_signature(m, c, d, self.algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms().supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_taken_out_and_the_rest_kept() {
        let (rest, tls) = Tls::split(
            "postgres://u@h/db?application_name=x&sslmode=verify-full&sslrootcert=/ca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u@h/db?application_name=x");
        assert_eq!(tls.check, Check::Full);
        assert_eq!(tls.roots, Roots::File("/ca.pem".into()));
        let (rest, tls) = Tls::split("postgres://u@h/db").unwrap();
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(tls.mode, Some(SslMode::Prefer));
        assert!(!tls.checks());
        let (_, tls) = Tls::split("postgres://u@h/db?sslmode=disable").unwrap();
        assert_eq!(tls.mode, None);
        let (_, tls) = Tls::split("postgres://u@h/db?sslmode=require&sslrootcert=system").unwrap();
        assert_eq!((tls.check, tls.roots), (Check::Chain, Roots::System));
        let (_, tls) = Tls::split("postgres://u@h/db?sslmode=verify-ca").unwrap();
        assert_eq!(tls.check, Check::Chain);
    }

    #[test]
    fn unknown_modes_and_client_certificates_are_refused() {
        let e = Tls::split("postgres://h/db?sslmode=verify").unwrap_err();
        assert!(e.to_string().contains("verify-full"), "{e}");
        let e = Tls::split("postgres://h/db?sslcert=/c.pem").unwrap_err();
        assert!(e.to_string().contains("client certificates"), "{e}");
    }
}
