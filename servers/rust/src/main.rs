//! Reference server for volley: hyper 1 on tokio's multi-threaded runtime, HTTP/1.1 and HTTP/2
//! through hyper-util's auto builder (cleartext: HTTP/1.1 and h2c with prior knowledge on the
//! same port, always); HTTPS with rustls (tokio-rustls), ALPN h2 and http/1.1, when TLS_CERT
//! and TLS_KEY name a PEM certificate chain and key, and then HTTP/3 as well (quinn and h3) on
//! the UDP port of the same number. One router answers all three protocols.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A response with its whole body.
type Reply = Response<Bytes>;

/// Caps /bytes?n= (1 GiB): a larger body is refused rather than allocated.
const MAX_BYTES: u64 = 1 << 30;

/// A text/plain response; hyper sends it as a `Full` body, of known size, so with
/// Content-Length (as does the HTTP/3 side).
fn text(status: StatusCode, body: impl Into<Bytes>) -> Reply {
    let mut res = Response::new(body.into());
    *res.status_mut() = status;
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    res
}

/// The query parameter `name` as a non-negative integer.
fn param(uri: &Uri, name: &str) -> Option<u64> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?
        .parse()
        .ok()
}

/// What a request gets, by its method and target: the same for HTTP/1.1, HTTP/2 and HTTP/3.
enum Route {
    /// This answer, whatever the request body.
    Reply(Reply),
    /// `POST /`: `length:N` once the whole body has been read.
    CountBody,
    /// `GET /delay?ms=N`: `.` after N ms.
    Delay(u64),
}

fn route(method: &Method, uri: &Uri) -> Route {
    let reply = match (method, uri.path()) {
        (&Method::GET, "/") => text(StatusCode::OK, "."),
        (&Method::POST, "/") => return Route::CountBody,
        (&Method::GET, "/hello") => text(StatusCode::OK, "Hello, World!"),
        (&Method::GET, "/delay") => match param(uri, "ms") {
            Some(ms) => return Route::Delay(ms),
            None => text(StatusCode::BAD_REQUEST, "ms must be a non-negative integer"),
        },
        (&Method::GET, "/bytes") => match param(uri, "n") {
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
    Route::Reply(reply)
}

/// The response to a request routed to `route`; `body_len` reads the request body (only
/// `POST /` awaits it) and gives its length, or None when it failed.
async fn answer(route: Route, body_len: impl Future<Output = Option<usize>>) -> Reply {
    match route {
        Route::Reply(reply) => reply,
        Route::CountBody => match body_len.await {
            Some(n) => text(StatusCode::OK, format!("length:{n}")),
            None => text(StatusCode::BAD_REQUEST, "bad body"),
        },
        Route::Delay(ms) => {
            // A timer on the runtime: the worker thread serves other requests meanwhile.
            tokio::time::sleep(Duration::from_millis(ms)).await;
            text(StatusCode::OK, ".")
        }
    }
}

/// HTTP/1.1 and HTTP/2 (hyper).
async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let route = route(req.method(), req.uri());
    // Read the body frame by frame, counting bytes without buffering them.
    let body_len = async move {
        let mut body = req.into_body();
        let mut n = 0usize;
        while let Some(frame) = body.frame().await {
            n += frame.ok()?.data_ref().map_or(0, |d| d.len());
        }
        Some(n)
    };
    Ok(answer(route, body_len).await.map(Full::new))
}

/// The certificate chain and key of TLS_CERT and TLS_KEY, or None when they are not set
/// (plain HTTP).
type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn identity() -> Result<Option<Identity>, Box<dyn std::error::Error>> {
    let (Some(cert), Some(key)) = (std::env::var_os("TLS_CERT"), std::env::var_os("TLS_KEY"))
    else {
        return Ok(None);
    };
    let chain = CertificateDer::pem_file_iter(&cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("TLS_CERT {}: {e}", cert.to_string_lossy()))?;
    let key = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| format!("TLS_KEY {}: {e}", key.to_string_lossy()))?;
    Ok(Some((chain, key)))
}

/// rustls with the ring provider and its defaults otherwise: its safe cipher suites, and
/// session resumption from an in-memory cache of 256 sessions (by session id in 1.2, by
/// ticket in 1.3).
fn rustls_config(
    (chain, key): &Identity,
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Result<rustls::ServerConfig, Box<dyn std::error::Error>> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(versions)?
    .with_no_client_auth()
    .with_single_cert(chain.clone(), key.clone_key())?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
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

/// HTTP/3 on the UDP port of the same number: quinn's endpoint with its default transport
/// settings, each connection served by h3 (h3-quinn), each request stream in a task of its own.
async fn serve_h3(endpoint: quinn::Endpoint) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(async move {
            // A failed handshake or connection only ends that connection.
            let Ok(conn) = incoming.await else {
                return;
            };
            let Ok(mut h3) =
                h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(conn)).await
            else {
                return;
            };
            while let Ok(Some(resolver)) = h3.accept().await {
                tokio::spawn(async move {
                    if let Ok((req, stream)) = resolver.resolve_request().await {
                        // A reset stream only ends that request.
                        let _ = handle_h3(req, stream).await;
                    }
                });
            }
        });
    }
}

/// One HTTP/3 request: the same route and answer as over HTTP/1.1 and HTTP/2, with
/// Content-Length.
async fn handle_h3<S: h3::quic::BidiStream<Bytes>>(
    req: Request<()>,
    mut stream: h3::server::RequestStream<S, Bytes>,
) -> Result<(), h3::error::StreamError> {
    let route = route(req.method(), req.uri());
    let body_len = async {
        let mut n = 0usize;
        while let Some(chunk) = stream.recv_data().await.ok()? {
            n += chunk.remaining();
        }
        Some(n)
    };
    let (mut head, body) = answer(route, body_len).await.into_parts();
    head.headers
        .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    stream.send_response(Response::from_parts(head, ())).await?;
    if !body.is_empty() {
        stream.send_data(body).await?;
    }
    stream.finish().await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let identity = identity()?;
    let tls = match &identity {
        // h2 first: a client offering both gets HTTP/2, as from the other servers.
        Some(id) => Some(TlsAcceptor::from(Arc::new(rustls_config(
            id,
            rustls::DEFAULT_VERSIONS,
            &[b"h2", b"http/1.1"],
        )?))),
        None => None,
    };
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    // With TLS, HTTP/3 too, on the UDP port of the same number (QUIC is TLS 1.3 only, ALPN
    // h3); a port that cannot be bound stops the server, as a TCP one does.
    if let Some(id) = &identity {
        let quic = quinn::crypto::rustls::QuicServerConfig::try_from(rustls_config(
            id,
            &[&rustls::version::TLS13],
            &[b"h3"],
        )?)?;
        let config = quinn::ServerConfig::with_crypto(Arc::new(quic));
        let endpoint = quinn::Endpoint::server(config, ([127, 0, 0, 1], port).into())
            .map_err(|e| format!("UDP port {port} (HTTP/3): {e}"))?;
        tokio::spawn(serve_h3(endpoint));
    }
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
