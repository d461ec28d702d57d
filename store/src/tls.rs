//! The certificates a TLS client of okfit trusts, wherever it connects (a
//! daemon over HTTPS, a PostgreSQL server): the platform's roots and the
//! PEM file named by `OKFIT_TLS_CA` (a private CA, a test certificate).

use crate::error::Error;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::path::PathBuf;

/// The platform's root certificates (those it could read).
pub fn platform_roots() -> Vec<CertificateDer<'static>> {
    rustls_native_certs::load_native_certs().certs
}

/// The platform's roots and those of `OKFIT_TLS_CA`; an unreadable or
/// unusable `OKFIT_TLS_CA` is an error naming it.
pub fn trusted_roots() -> Result<Vec<CertificateDer<'static>>, Error> {
    let mut roots = platform_roots();
    if let Some(ca) = std::env::var_os("OKFIT_TLS_CA").filter(|v| !v.is_empty()) {
        let certs = CertificateDer::pem_file_iter(&ca).map_err(|e| {
            Error::Usage(format!(
                "OKFIT_TLS_CA: cannot read {} ({e})",
                PathBuf::from(&ca).display()
            ))
        })?;
        // Each one must make a trust anchor, as the platform's may not.
        let mut check = rustls::RootCertStore::empty();
        for c in certs.flatten() {
            check
                .add(c.clone())
                .map_err(|e| Error::Usage(format!("OKFIT_TLS_CA: {e}")))?;
            roots.push(c);
        }
    }
    Ok(roots)
}
