//! Reference server for volley: hyper 1 on tokio's multi-threaded runtime, HTTP/1.1 and HTTP/2
//! through hyper-util's auto builder (cleartext: HTTP/1.1 and h2c with prior knowledge on the
//! same port, always); HTTPS with rustls (tokio-rustls), ALPN h2 and http/1.1, when TLS_CERT
//! and TLS_KEY name a PEM certificate chain and key.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

type Reply = Response<Full<Bytes>>;

/// Caps /bytes?n= (1 GiB): a larger body is refused rather than allocated.
const MAX_BYTES: u64 = 1 << 30;

/// A text/plain response; `Full` bodies have a known size, so hyper sends Content-Length.
fn text(status: StatusCode, body: impl Into<Bytes>) -> Reply {
    let mut res = Response::new(Full::new(body.into()));
    *res.status_mut() = status;
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    res
}

/// The query parameter `name` as a non-negative integer.
fn param(req: &Request<Incoming>, name: &str) -> Option<u64> {
    req.uri()
        .query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?
        .parse()
        .ok()
}

async fn handle(req: Request<Incoming>) -> Result<Reply, Infallible> {
    let reply = match (req.method(), req.uri().path()) {
        (&Method::GET, "/") => text(StatusCode::OK, "."),
        (&Method::POST, "/") => {
            // Read the body frame by frame, counting bytes without buffering them.
            let mut body = req.into_body();
            let mut n = 0usize;
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(frame) => n += frame.data_ref().map_or(0, |d| d.len()),
                    Err(_) => return Ok(text(StatusCode::BAD_REQUEST, "bad body")),
                }
            }
            text(StatusCode::OK, format!("length:{n}"))
        }
        (&Method::GET, "/hello") => text(StatusCode::OK, "Hello, World!"),
        (&Method::GET, "/delay") => match param(&req, "ms") {
            Some(ms) => {
                // A timer on the runtime: the worker thread serves other requests meanwhile.
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text(StatusCode::OK, ".")
            }
            None => text(StatusCode::BAD_REQUEST, "ms must be a non-negative integer"),
        },
        (&Method::GET, "/bytes") => match param(&req, "n") {
            Some(n) if n <= MAX_BYTES => text(StatusCode::OK, vec![b'x'; n as usize]),
            _ => text(
                StatusCode::BAD_REQUEST,
                "n must be an integer from 0 to 2^30",
            ),
        },
        (_, "/") | (_, "/hello") | (_, "/delay") | (_, "/bytes") => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
        }
        _ => text(StatusCode::NOT_FOUND, "not found"),
    };
    Ok(reply)
}

/// The TLS acceptor for TLS_CERT and TLS_KEY, or None when they are not set (plain HTTP).
fn tls_acceptor() -> Result<Option<TlsAcceptor>, Box<dyn std::error::Error>> {
    let (Some(cert), Some(key)) = (std::env::var_os("TLS_CERT"), std::env::var_os("TLS_KEY"))
    else {
        return Ok(None);
    };
    let chain = CertificateDer::pem_file_iter(&cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("TLS_CERT {}: {e}", cert.to_string_lossy()))?;
    let key = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| format!("TLS_KEY {}: {e}", key.to_string_lossy()))?;
    // rustls' defaults: TLS 1.2 and 1.3, its safe cipher suites, and session resumption from
    // an in-memory cache of 256 sessions (by session id in 1.2, by ticket in 1.3).
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(chain, key)?;
    // h2 first: a client offering both gets HTTP/2, as from the other servers.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

/// Serves one connection, plain or TLS: HTTP/2 when it opens with the HTTP/2 preface (h2c
/// with prior knowledge, or h2 chosen by ALPN), else HTTP/1.1 with keep-alive; hyper's
/// defaults for both.
async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: S) {
    // A failed connection only ends that connection.
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service_fn(handle))
        .await;
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let tls = tls_acceptor()?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            // Out of file descriptors and the like: wait a moment instead of spinning.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                // The handshake runs in the connection's task, not in the accept loop; a
                // failed one only ends that connection.
                Some(tls) => {
                    if let Ok(stream) = tls.accept(stream).await {
                        serve(stream).await;
                    }
                }
                None => serve(stream).await,
            }
        });
    }
}
