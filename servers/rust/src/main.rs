//! Reference server for volley: hyper 1 (HTTP/1.1) on tokio's multi-threaded runtime.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
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
        tokio::spawn(async move {
            // Keep-alive is on by default; a failed connection only ends that connection.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(handle))
                .await;
        });
    }
}
