//! TLS client settings for an `https://` run: the rustls configuration built once before the
//! run (trusted roots, `-k`, a client certificate, ALPN, session resumption), and what a failed
//! handshake means in words a user can act on. The byte-level side is in [`super::stream`].

use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Tls13ClientSessionValue;
use rustls::client::{ClientSessionStore, Resumption, Tls12ClientSessionValue};
use rustls::crypto::{self, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, Error, NamedGroup};
use rustls::{RootCertStore, SignatureScheme};

use super::stream::MAX_RECORDS_WITHOUT_DATA;
use volley_model::units::thousands;
use volley_plan::{HttpVersion, TlsSpec};

/// ALPN name of HTTP/1.1.
pub(crate) const ALPN_HTTP1: &[u8] = b"http/1.1";
/// ALPN name of HTTP/2 over TLS.
pub(crate) const ALPN_H2: &[u8] = b"h2";
/// ALPN name of HTTP/3 (QUIC's TLS).
pub const ALPN_H3: &[u8] = b"h3";

/// The ALPN protocols a run offers, preferred first: HTTP/2 when it may speak it.
pub(crate) fn alpn_offer(http: HttpVersion) -> Vec<Vec<u8>> {
    match http {
        HttpVersion::Http1 | HttpVersion::H2c => vec![ALPN_HTTP1.to_vec()],
        HttpVersion::Negotiate => vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()],
        HttpVersion::H2 => vec![ALPN_H2.to_vec()],
        HttpVersion::H3 => vec![ALPN_H3.to_vec()],
    }
}

/// What every connection of a run needs to start TLS: the shared configuration (with its
/// session store) and the name the certificate must carry (SNI unless it is an address).
#[derive(Clone)]
pub struct TlsClient {
    /// The rustls configuration, shared by all workers.
    pub config: Arc<ClientConfig>,
    /// The URL's host.
    pub server_name: ServerName<'static>,
    /// How the server's certificate is checked (`config`'s): QUIC's connections wrap it to
    /// learn whether their handshake saw a certificate (a resumed one does not).
    pub verifier: Arc<dyn ServerCertVerifier>,
}

impl fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsClient")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// A TLS setting that cannot be used (exit 2 before any load).
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// A PEM file named by a flag is unusable.
    #[error("{flag} {path}: {reason}")]
    File {
        /// `--cacert`, `--cert` or `--key`.
        flag: &'static str,
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The URL's host is not a name a certificate can carry.
    #[error("URL: `{0}` is not a valid TLS server name")]
    ServerName(String),
    /// rustls refused the combination (e.g. a key that does not match the certificate).
    #[error("TLS settings: {0}")]
    Config(String),
}

/// Builds the run's TLS client for `host` from `spec`, offering the ALPN protocols of `http`.
/// `connections` sizes the session store, so that every reconnecting connection can find a
/// ticket to resume with.
pub fn client(
    spec: &TlsSpec,
    host: &str,
    connections: usize,
    http: HttpVersion,
) -> Result<TlsClient, TlsSetupError> {
    let provider = Arc::new(crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsSetupError::Config(e.to_string()))?;
    let verifier: Arc<dyn ServerCertVerifier> = if spec.verify {
        let roots = Arc::new(roots(spec.cacert.as_deref())?);
        let pinned = match &spec.cacert {
            Some(p) => certificates("--cacert", p)?,
            None => Vec::new(),
        };
        let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
            roots,
            Arc::clone(&provider),
        )
        .build()
        .map_err(|e| TlsSetupError::Config(e.to_string()))?;
        Arc::new(Pinned { webpki, pinned })
    } else {
        Arc::new(NoVerify(provider))
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::clone(&verifier));
    let mut config = match &spec.cert {
        None => builder.with_no_client_auth(),
        Some(cert) => {
            let key_path = spec.key.as_deref().unwrap_or(cert);
            let chain = certificates("--cert", cert)?;
            let flag = if spec.key.is_some() {
                "--key"
            } else {
                "--cert"
            };
            let key = private_key(flag, key_path)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsSetupError::Config(format!("--cert/--key: {e}")))?
        }
    };
    config.alpn_protocols = alpn_offer(http);
    config.resumption = if spec.resume {
        Resumption::store(Arc::new(TicketPool::new(connections)))
    } else {
        Resumption::disabled()
    };
    let server_name = ServerName::try_from(host.to_string())
        .map_err(|_| TlsSetupError::ServerName(host.to_string()))?;
    Ok(TlsClient {
        config: Arc::new(config),
        server_name,
        verifier,
    })
}

/// The system's roots plus `--cacert`'s.
fn roots(cacert: Option<&Path>) -> Result<RootCertStore, TlsSetupError> {
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = cacert {
        for c in certificates("--cacert", path)? {
            roots.add(c).map_err(|e| TlsSetupError::File {
                flag: "--cacert",
                path: path.display().to_string(),
                reason: format!("not a usable CA certificate: {e}"),
            })?;
        }
    }
    Ok(roots)
}

/// The private key in a PEM file named by `flag`.
pub fn private_key(
    flag: &'static str,
    path: &Path,
) -> Result<PrivateKeyDer<'static>, TlsSetupError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsSetupError::File {
        flag,
        path: path.display().to_string(),
        reason: format!("no private key found ({e}); expected PEM"),
    })
}

/// Every certificate of a PEM file named by `flag`; none is an error.
pub fn certificates(
    flag: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let bad = |reason: String| TlsSetupError::File {
        flag,
        path: path.display().to_string(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("{e}; expected PEM")))?;
    if certs.is_empty() {
        return Err(bad("no certificate in the file (expected PEM)".into()));
    }
    Ok(certs)
}

/// The usual WebPKI verification, plus one case curl accepts: the server presents exactly a
/// certificate given with `--cacert` (a self-signed certificate made with `openssl req -x509`,
/// which marks itself a CA). WebPKI refuses a CA certificate as a server's own; a certificate
/// the user named byte for byte is trusted as it is — its host name is still checked.
#[derive(Debug)]
struct Pinned {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verdict = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        let ca_as_server =
            matches!(&verdict, Err(Error::InvalidCertificate(c)) if is_ca_as_server(c));
        if !ca_as_server
            || !self
                .pinned
                .iter()
                .any(|p| p.as_ref() == end_entity.as_ref())
        {
            return verdict;
        }
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
        cert.verify_is_valid_for_subject_name(server_name)
            .map_err(|_| Error::InvalidCertificate(CertificateError::NotValidForName))?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// WebPKI refused a CA certificate as the server's own (a self-signed one made with
/// `openssl req -x509`).
fn is_ca_as_server(c: &CertificateError) -> bool {
    matches!(c, CertificateError::Other(o)
        if o.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity))
}

/// `-k`: the server's certificate is not checked (chain, name, dates), but the handshake's
/// signatures still are, with the provider's algorithms — as curl -k and wrk do.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Session store sized to the run: rustls's default keeps 8 TLS 1.3 tickets per server, so
/// with more connections reconnecting at once most would find none and make a full handshake —
/// `--no-keepalive` would then measure key exchange, not resumption. A run talks to one server
/// name, so the store is one set of sessions (the name is not looked up or copied): one lock
/// per handshake, no allocation.
#[derive(Debug)]
struct TicketPool {
    per_server: usize,
    sessions: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: VecDeque<Tls13ClientSessionValue>,
}

impl TicketPool {
    fn new(connections: usize) -> Self {
        TicketPool {
            per_server: connections.clamp(8, 4096),
            sessions: Mutex::new(Sessions::default()),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Sessions) -> T) -> T {
        f(&mut self.sessions.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl ClientSessionStore for TicketPool {
    fn set_kx_hint(&self, _: ServerName<'static>, group: NamedGroup) {
        self.with(|s| s.kx_hint = Some(group));
    }

    fn kx_hint(&self, _: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(|s| s.kx_hint)
    }

    fn set_tls12_session(&self, _: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with(|s| s.tls12 = Some(value));
    }

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(|s| s.tls12.clone())
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {
        self.with(|s| s.tls12 = None);
    }

    fn insert_tls13_ticket(&self, _: ServerName<'static>, value: Tls13ClientSessionValue) {
        let cap = self.per_server;
        self.with(|s| {
            if s.tls13.len() >= cap {
                s.tls13.pop_front();
            }
            s.tls13.push_back(value);
        });
    }

    fn take_tls13_ticket(&self, _: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        // The newest ticket first: the oldest are the likeliest to have expired.
        self.with(|s| s.tls13.pop_back())
    }
}

/// A TLS failure after the handshake (an alert, a record that does not decrypt), carried in an
/// `io::Error` of kind `InvalidData` from [`super::stream::Stream::read`].
#[derive(Debug, thiserror::Error)]
#[error("TLS: {0}")]
pub(crate) struct TlsReadError(pub Error);

impl TlsReadError {
    /// The rustls error inside `e`, if it is one.
    pub fn of(e: &std::io::Error) -> Option<&Error> {
        e.get_ref()?.downcast_ref::<TlsReadError>().map(|t| &t.0)
    }
}

/// The server sent more than [`MAX_RECORDS_WITHOUT_DATA`] TLS records in a row that carried no
/// data (tickets, key updates, empty records), carried in an `io::Error` of kind `InvalidData`
/// from [`super::stream::Stream::read`]: a flood, which ends the connection.
#[derive(Debug)]
pub(crate) struct TlsFlood;

impl fmt::Display for TlsFlood {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TLS: the server sent more than {} records in a row without any data \
             (tickets, key updates or empty records: a flood)",
            thousands(MAX_RECORDS_WITHOUT_DATA)
        )
    }
}

impl std::error::Error for TlsFlood {}

/// An alert that refuses the client's certificate (or its absence). With TLS 1.3 it arrives
/// after the client's side of the handshake ended, with the first response.
pub(crate) fn refuses_client(e: &Error) -> bool {
    use rustls::AlertDescription as A;
    matches!(
        e,
        Error::AlertReceived(
            A::CertificateRequired
                | A::BadCertificate
                | A::UnknownCA
                | A::CertificateUnknown
                | A::UnsupportedCertificate
                | A::CertificateRevoked
                | A::CertificateExpired
                | A::AccessDenied
        )
    )
}

/// Why a handshake failed, and whether that says something about the server's setup (it will
/// fail the same way on every connection) rather than about one connection.
#[derive(Debug)]
pub enum HandshakeError {
    /// rustls refused what the server sent (certificate, alert, not TLS at all).
    Tls {
        /// The error.
        error: Error,
        /// The first bytes the server sent, when that helps (plain HTTP on a TLS port).
        head: Vec<u8>,
    },
    /// The socket failed or closed during the handshake.
    Io(std::io::Error),
}

impl HandshakeError {
    /// A failure that repeats on every connection (the server's certificate, its TLS settings,
    /// or a server that does not speak TLS): before any handshake succeeded, it ends the run.
    pub(crate) fn is_setup(&self) -> bool {
        use rustls::AlertDescription as A;
        match self {
            HandshakeError::Tls { error, head } => {
                head.starts_with(b"HTTP/")
                    || refuses_client(error)
                    || matches!(
                        error,
                        Error::InvalidCertificate(_)
                            | Error::NoCertificatesPresented
                            | Error::UnsupportedNameType
                            | Error::PeerIncompatible(_)
                            | Error::NoApplicationProtocol
                            | Error::InvalidMessage(_)
                            | Error::InappropriateMessage { .. }
                            | Error::InappropriateHandshakeMessage { .. }
                            | Error::AlertReceived(
                                A::HandshakeFailure
                                    | A::ProtocolVersion
                                    | A::InsufficientSecurity
                                    | A::NoApplicationProtocol
                                    | A::UnrecognisedName
                                    | A::IllegalParameter
                                    | A::DecodeError
                                    | A::UnexpectedMessage
                            )
                    )
            }
            // rustls's bound on handshake messages (64 KiB) comes back as InvalidData.
            HandshakeError::Io(e) => e.kind() == std::io::ErrorKind::InvalidData,
        }
    }

    /// The server refused every protocol offered by ALPN (rustls servers send the
    /// no_application_protocol alert).
    pub(crate) fn refuses_alpn(&self) -> bool {
        match self {
            HandshakeError::Tls { error, .. } => matches!(
                error,
                Error::NoApplicationProtocol
                    | Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)
            ),
            HandshakeError::Io(_) => false,
        }
    }

    /// What went wrong, for one line naming the host: actionable where the cause is known.
    pub fn describe(&self) -> String {
        match self {
            HandshakeError::Tls { error, head } => describe_tls(error, head),
            HandshakeError::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => format!(
                "the server's handshake message is larger than 64 KiB (a huge certificate chain?): {e}"
            ),
            HandshakeError::Io(e) => format!("the connection failed during the handshake: {e}"),
        }
    }

    /// Why the connect failed, for the warning on connect errors and the line of a run that got
    /// no response: what the server did to the connection, or what it said.
    pub(crate) fn connect_reason(&self) -> String {
        use std::io::ErrorKind as K;
        match self {
            HandshakeError::Io(e)
                if matches!(e.kind(), K::ConnectionReset | K::ConnectionAborted) =>
            {
                "reset by the server during the TLS handshake".into()
            }
            HandshakeError::Io(e) if e.kind() == K::UnexpectedEof => {
                "closed by the server during the TLS handshake".into()
            }
            _ => format!("TLS handshake: {}", self.describe()),
        }
    }
}

fn describe_tls(error: &Error, head: &[u8]) -> String {
    if head.starts_with(b"HTTP/") {
        let line = head
            .split(|b| *b == b'\r' || *b == b'\n')
            .next()
            .unwrap_or(head);
        return format!(
            "the server does not speak TLS on this port: it answered plain HTTP (`{}`); use http://",
            String::from_utf8_lossy(line)
        );
    }
    match error {
        Error::InvalidCertificate(c) => format!("certificate rejected: {}", describe_cert(c)),
        Error::AlertReceived(a) => {
            let hint = match a {
                rustls::AlertDescription::CertificateRequired
                | rustls::AlertDescription::BadCertificate
                | rustls::AlertDescription::UnknownCA => {
                    " (the server wants a client certificate it trusts: --cert/--key)"
                }
                rustls::AlertDescription::HandshakeFailure
                | rustls::AlertDescription::ProtocolVersion => {
                    " (no TLS version or cipher suite in common: volley offers TLS 1.2 and 1.3)"
                }
                _ => "",
            };
            format!("the server refused the handshake with the alert `{a:?}`{hint}")
        }
        Error::InvalidMessage(rustls::InvalidMessage::HandshakePayloadTooLarge) => format!(
            "the server's handshake message is larger than 64 KiB (a huge certificate chain?): {error}"
        ),
        Error::InvalidMessage(_) | Error::InappropriateMessage { .. } => format!(
            "the server's answer is not a TLS handshake ({error}); is it serving plain HTTP (http://)?"
        ),
        other => other.to_string(),
    }
}

fn describe_cert(c: &CertificateError) -> String {
    match c {
        CertificateError::UnknownIssuer => "it is not signed by a trusted authority (self-signed or a private CA: trust it with --cacert FILE, or skip verification with -k)".into(),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            format!("it has expired ({c}; -k skips verification)")
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            format!("it is not valid yet ({c}; check the clocks, or -k)")
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            format!("it is not valid for this host ({c}; use the name it carries, or -k)")
        }
        c if is_ca_as_server(c) => "it is a CA certificate used as the server's own (trust that exact certificate with --cacert FILE, or -k)".into(),
        other => format!("{other} (-k skips verification)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_as_what_to_do() {
        let self_signed = HandshakeError::Tls {
            error: Error::InvalidCertificate(CertificateError::UnknownIssuer),
            head: Vec::new(),
        };
        assert!(self_signed.is_setup());
        assert!(
            self_signed.describe().contains("--cacert"),
            "{}",
            self_signed.describe()
        );
        let plain = HandshakeError::Tls {
            error: Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
            head: b"HTTP/1.1 400 Bad Request\r\n".to_vec(),
        };
        assert_eq!(
            plain.describe(),
            "the server does not speak TLS on this port: it answered plain HTTP (`HTTP/1.1 400 Bad Request`); use http://"
        );
        let reset = HandshakeError::Io(std::io::ErrorKind::ConnectionReset.into());
        assert!(!reset.is_setup());
        assert_eq!(
            reset.connect_reason(),
            "reset by the server during the TLS handshake"
        );
        let closed = HandshakeError::Io(std::io::ErrorKind::UnexpectedEof.into());
        assert_eq!(
            closed.connect_reason(),
            "closed by the server during the TLS handshake"
        );
        assert!(self_signed
            .connect_reason()
            .starts_with("TLS handshake: certificate rejected: "));
    }

    #[test]
    fn the_pool_hands_out_each_ticket_once_and_keeps_a_bounded_number() {
        let pool = TicketPool::new(2);
        assert_eq!(pool.per_server, 8);
        assert_eq!(TicketPool::new(100_000).per_server, 4096);
        let name = ServerName::try_from("localhost").unwrap();
        assert!(pool.take_tls13_ticket(&name).is_none());
        pool.set_kx_hint(name.clone(), NamedGroup::X25519);
        assert_eq!(pool.kx_hint(&name), Some(NamedGroup::X25519));
    }

    #[test]
    fn unusable_files_name_their_flag() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("ca.pem");
        std::fs::write(&empty, "not pem\n").unwrap();
        let spec = TlsSpec {
            verify: true,
            cacert: Some(empty.clone()),
            cert: None,
            key: None,
            resume: true,
            early_data: false,
        };
        let e = client(&spec, "localhost", 1, HttpVersion::Negotiate)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--cacert ") && e.contains("no certificate"),
            "{e}"
        );
        let spec = TlsSpec {
            verify: false,
            cacert: None,
            cert: Some(empty),
            key: None,
            resume: true,
            early_data: false,
        };
        let e = client(&spec, "localhost", 1, HttpVersion::Negotiate)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--cert "), "{e}");
    }
}
