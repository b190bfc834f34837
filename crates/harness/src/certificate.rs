//! The certificate a managed server of an https cell is given: ECDSA P-256, self-signed, valid
//! for `localhost`, `127.0.0.1` and `::1`, written as `cert.pem` and `key.pem` into the cell's
//! private folder. The server reads them through `TLS_CERT` and `TLS_KEY`; the client trusts
//! exactly that certificate (`--cacert`), so verification stays on (docs/contract.md, "Suites").

use std::path::{Path, PathBuf};

/// The names the certificate is valid for: whatever loopback name a server or client uses.
pub(crate) const NAMES: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Why no certificate could be made for a cell.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CertificateError {
    /// rcgen could not make the key or the certificate.
    #[error("cannot generate the TLS certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// A PEM file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
}

/// A certificate and its key, written to files.
#[derive(Debug, Clone)]
pub(crate) struct CertFiles {
    /// `cert.pem` (absolute): `TLS_CERT`, and the client's `--cacert`.
    pub cert: PathBuf,
    /// `key.pem` (absolute, PKCS#8, readable by its owner only): `TLS_KEY`.
    pub key: PathBuf,
    /// The certificate in DER, for the readiness check's trust store.
    pub cert_der: Vec<u8>,
}

/// Generates a fresh certificate and writes `cert.pem` and `key.pem` into `dir` (which exists).
pub(crate) fn generate(dir: &Path) -> Result<CertFiles, CertificateError> {
    let names: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
    let rcgen::CertifiedKey { cert, signing_key } = rcgen::generate_simple_self_signed(names)?;
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let files = CertFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
        cert_der: cert.der().to_vec(),
    };
    write(&files.cert, cert.pem().as_bytes(), 0o644)?;
    write(&files.key, signing_key.serialize_pem().as_bytes(), 0o600)?;
    Ok(files)
}

/// Writes `bytes` to a new file `path` with permissions `mode`.
fn write(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CertificateError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |source| CertificateError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(err)?;
    f.write_all(bytes).map_err(err)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::Arc;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

    use super::*;

    /// A rustls server on 127.0.0.1 with `files`, answering one connection with `hi`.
    fn serve_once(files: &CertFiles) -> (u16, std::thread::JoinHandle<()>) {
        let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(&files.cert)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(&files.key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let config = Arc::new(config);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (sock, _) = l.accept().unwrap();
            let conn = rustls::ServerConnection::new(config).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, sock);
            let mut b = [0u8; 2];
            if tls.read_exact(&mut b).is_ok() {
                let _ = tls.write_all(b"hi");
                let _ = tls.flush();
            }
        });
        (port, h)
    }

    /// A verifying client's handshake as `name` against a server with `files`.
    fn handshake(files: &CertFiles, name: &str) -> Result<(), std::io::Error> {
        let (port, h) = serve_once(files);
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(&files.cert).unwrap())
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from(name.to_string()).unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        let r = tls.write_all(b"ok").and_then(|_| {
            let mut b = [0u8; 2];
            tls.read_exact(&mut b)?;
            assert_eq!(&b, b"hi");
            Ok(())
        });
        drop(tls);
        let _ = h.join();
        r
    }

    #[test]
    fn the_certificate_verifies_for_every_loopback_name_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let files = generate(dir.path()).unwrap();
        assert!(files.cert.is_absolute() && files.key.is_absolute());
        assert_eq!(files.cert, dir.path().join("cert.pem"));
        let pem = CertificateDer::from_pem_file(&files.cert).unwrap();
        assert_eq!(pem.as_ref(), files.cert_der.as_slice());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files.key).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the key is its owner's only");
        for name in NAMES {
            handshake(&files, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let e = handshake(&files, "example.com").unwrap_err();
        assert!(e.to_string().contains("certificate"), "{e}");
    }

    #[test]
    fn each_call_makes_a_new_key() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (fa, fb) = (generate(a.path()).unwrap(), generate(b.path()).unwrap());
        assert_ne!(fa.cert_der, fb.cert_der);
        let e = generate(&a.path().join("missing")).unwrap_err();
        assert!(e.to_string().starts_with("cannot write "), "{e}");
    }
}
