//! TLS to the database: rustls, verifying the server's certificate chain
//! and name against the system's trust store, or against the URL's
//! `sslrootcert` file (libpq's key; the client library does not know it,
//! so it is taken out of the URL here). Whatever `sslmode` asks beyond
//! `disable`, a certificate that does not verify is refused: what libpq
//! calls `verify-full`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// `url` without its `sslrootcert`, and that file's path.
pub(crate) fn split_root_cert(url: &str) -> (String, Option<PathBuf>) {
    let is_root = |kv: &str| kv.starts_with("sslrootcert=");
    let value = |kv: &str| PathBuf::from(percent_decoded(&kv["sslrootcert=".len()..]));
    if let Some((base, query)) = url.split_once('?') {
        let (root, rest): (Vec<&str>, Vec<&str>) = query.split('&').partition(|kv| is_root(kv));
        let url = if rest.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        return (url, root.last().map(|kv| value(kv)));
    }
    if url.contains("://") {
        return (url.to_string(), None);
    }
    // libpq's `key=value key=value` form.
    let (root, rest): (Vec<&str>, Vec<&str>) = url.split_whitespace().partition(|kv| is_root(kv));
    (rest.join(" "), root.last().map(|kv| value(kv)))
}

/// `%2F` and the like, as a URL carries a path.
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The connector: trusting `root`'s certificates if given, else the
/// system's.
pub(crate) fn connector(root: Option<&Path>) -> Result<MakeRustlsConnect, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Some(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<_, _>>())
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "sslrootcert {}: no certificate in it",
                    path.display()
                ));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            }
        }
        None => {
            // Certificates the system store holds that rustls cannot read
            // are skipped, as the system's own clients skip them.
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_certificate_is_taken_out_of_either_form() {
        let (url, root) =
            split_root_cert("postgresql://u@h/db?sslmode=require&sslrootcert=%2Fetc%2Fca.pem");
        assert_eq!(url, "postgresql://u@h/db?sslmode=require");
        assert_eq!(root.as_deref(), Some(Path::new("/etc/ca.pem")));
        let (url, root) = split_root_cert("postgresql://u@h/db?sslrootcert=/ca.pem");
        assert_eq!(url, "postgresql://u@h/db");
        assert_eq!(root.as_deref(), Some(Path::new("/ca.pem")));
        let (url, root) = split_root_cert("host=h user=u sslrootcert=/ca.pem sslmode=require");
        assert_eq!(url, "host=h user=u sslmode=require");
        assert_eq!(root.as_deref(), Some(Path::new("/ca.pem")));
        assert_eq!(split_root_cert("postgresql://u@h/db").1, None);
    }
}
