//! QUIC for `--http3` (RFC 9000, with TLS 1.3 by RFC 9001): quinn's sans-IO state machine
//! (`quinn-proto`), driven from a worker's own event loop over UDP sockets — no async runtime
//! on the hot path. [`QuicClient`] is the run's shared configuration (the same rustls
//! verification, `--cacert`, `-k` and client certificates as TCP's TLS, ALPN `h3`);
//! [`conn::QuicConn`] one connection on its own connected UDP socket, its datagrams read in
//! batches ([`udp`]); `testing` (with the `testing` feature) an in-process server for the
//! tests.

pub mod conn;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod udp;

use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{ClientConfig, EndpointConfig, TransportConfig, VarInt};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::tls::TlsClient;

pub use crate::tls::ALPN_H3;

/// What every QUIC connection of a run starts from.
#[derive(Clone)]
pub struct QuicClient {
    /// quinn's client configuration (TLS with ALPN `h3` and the run's session store,
    /// transport parameters).
    pub config: ClientConfig,
    /// The name the server's certificate must carry (the URL's host).
    pub server_name: String,
    /// `--0rtt`: a resumed connection sends its first requests as early data.
    pub zero_rtt: bool,
}

impl std::fmt::Debug for QuicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicClient")
            .field("server_name", &self.server_name)
            .field("zero_rtt", &self.zero_rtt)
            .finish_non_exhaustive()
    }
}

/// The QUIC setting cannot be used (exit 2 before any load).
#[derive(Debug, thiserror::Error)]
#[error("--http3: {0}")]
pub struct QuicSetupError(String);

impl QuicClient {
    /// The run's QUIC client from its TLS client (whose ALPN offer is replaced by `h3`;
    /// QUIC needs TLS 1.3, which the TLS client offers), with `streams` concurrent request
    /// streams a connection may have; `zero_rtt` offers early data on resumed sessions.
    pub fn new(
        tls: &TlsClient,
        host: &str,
        streams: u32,
        zero_rtt: bool,
    ) -> Result<Self, QuicSetupError> {
        let mut rustls = (*tls.config).clone();
        rustls.alpn_protocols = vec![ALPN_H3.to_vec()];
        rustls.enable_early_data = zero_rtt;
        // One check for every QUIC connection of the run: a session ticket is only used with
        // the check it was made under (rustls compares them).
        let observed = Observed(Arc::clone(&tls.verifier));
        rustls
            .dangerous()
            .set_certificate_verifier(Arc::new(observed));
        let crypto = QuicClientConfig::try_from(Arc::new(rustls))
            .map_err(|e| QuicSetupError(format!("the TLS settings cannot carry QUIC: {e}")))?;
        let mut config = ClientConfig::new(Arc::new(crypto));
        config.transport_config(Arc::new(transport(streams)));
        Ok(QuicClient {
            config,
            server_name: host.to_string(),
            zero_rtt,
        })
    }
}

thread_local! {
    /// Set when this thread's TLS checked a server's certificate (see [`take_verified`]).
    static VERIFIED: Cell<bool> = const { Cell::new(false) };
}

/// Whether a certificate was checked on this thread since the last call. A connection's
/// handshake runs on its worker's thread while its datagrams are handled, so asking right
/// after handling them says whether that handshake checked one — a resumed handshake carries
/// no certificate (rustls tells TCP's connections directly, not QUIC's).
pub(crate) fn take_verified() -> bool {
    VERIFIED.replace(false)
}

/// The run's certificate check, noting on its thread that it was asked.
#[derive(Debug)]
struct Observed(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for Observed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        VERIFIED.set(true);
        self.0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.0.root_hint_subjects()
    }
}

/// How long a connection may go without a packet before QUIC closes it; a keep-alive PING
/// goes out at a third of it, so connections that wait (think time, a slow open loop) stay.
const IDLE: Duration = Duration::from_secs(30);

/// The transport parameters a client offers: the server's push and control streams (a few
/// unidirectional streams), no bidirectional stream of the server's, and the idle timeout.
fn transport(streams: u32) -> TransportConfig {
    let mut t = TransportConfig::default();
    // The server opens its control stream and QPACK's two: room for a few more.
    t.max_concurrent_uni_streams(VarInt::from_u32(16));
    // A client's requests are its own bidirectional streams; the server opens none.
    t.max_concurrent_bidi_streams(VarInt::from_u32(0));
    t.max_idle_timeout(IDLE.try_into().ok());
    t.keep_alive_interval(Some(IDLE / 3));
    // Responses of the run's streams in flight at once, each up to a window.
    t.stream_receive_window(VarInt::from_u32(1 << 20));
    t.receive_window(VarInt::from_u32(
        streams.max(1).saturating_mul(1 << 20).min(1 << 30),
    ));
    t
}

/// A worker's endpoint: it routes datagrams to its connections by connection ID.
pub fn endpoint() -> quinn_proto::Endpoint {
    quinn_proto::Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None)
}
