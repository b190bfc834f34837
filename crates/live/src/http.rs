//! The small HTTP/1.1 server behind the dashboard and `/metrics`: a thread that accepts, and a
//! thread per connection (at most [`MAX_CONNECTIONS`]), far from the engine's workers. It
//! answers GET and HEAD only and closes every connection after its response (an event stream
//! lasts as long as the run). Every request passes the `Host` guard ([`host_allowed`]: a name
//! that resolves to 127.0.0.1 is refused, against DNS rebinding) before its handler sees it, and
//! no CORS header is ever sent (docs/contract.md, "Watching a run live"). The dashboard's token
//! is the handler's check (`/metrics` is scraped without one, as Prometheus expects).

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Connections served at once; more are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 32;
/// The longest request head read.
const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send its whole request head (one deadline, not a timeout
/// per read: a byte every few seconds must not hold a connection's slot).
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one write of an answer may wait for a client that does not read (the event
/// stream sets its own).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// A request that passed the guards.
#[derive(Debug)]
pub struct Request {
    /// `GET` or `HEAD`.
    pub head_only: bool,
    /// The path, without the query.
    pub path: String,
    /// The query's `name=value` pairs (percent-decoding is not needed: tokens are hex).
    pub query: Vec<(String, String)>,
    /// `Last-Event-ID`, when sent.
    pub last_event_id: Option<String>,
}

impl Request {
    /// The value of query parameter `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What answers the requests of one listener.
pub(crate) trait Handler: Send + Sync + 'static {
    /// Writes the whole response to `out` (the connection is closed after it).
    fn respond(&self, req: &Request, out: &mut TcpStream) -> io::Result<()>;
}

/// A listening server; dropping it stops accepting (connections in progress end on their own).
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and starts serving with `handler`.
    pub fn start(addr: SocketAddr, handler: Arc<dyn Handler>) -> io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("volley-live".into())
                .spawn(move || accept_loop(listener, addr, handler, &stop))?
        };
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The bound address (the port chosen when 0 was asked for).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    bound: SocketAddr,
    handler: Arc<dyn Handler>,
    stop: &AtomicBool,
) {
    let active = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.set_nonblocking(false);
                if active.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                    let _ = status(&mut stream, 503, "too many connections");
                    continue;
                }
                active.fetch_add(1, Ordering::Relaxed);
                let (handler, count) = (handler.clone(), active.clone());
                let spawned = std::thread::Builder::new()
                    .name("volley-live-conn".into())
                    .spawn(move || {
                        serve(stream, bound, &*handler);
                        count.fetch_sub(1, Ordering::Relaxed);
                    });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::Relaxed);
                }
            }
            // Polled (not blocked in accept) so that dropping the server ends this thread.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn serve(mut stream: TcpStream, bound: SocketAddr, handler: &dyn Handler) {
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let req = match read_request(&mut stream, bound) {
        Ok(r) => r,
        Err((code, why)) => {
            let _ = status(&mut stream, code, why);
            return;
        }
    };
    let _ = handler.respond(&req, &mut stream);
    let _ = stream.flush();
}

/// Reads and checks one request head: `Err((status, reason))` for an answer without handler.
fn read_request(stream: &mut TcpStream, bound: SocketAddr) -> Result<Request, (u16, &'static str)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let deadline = std::time::Instant::now() + HEAD_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err((408, "request head not received in time"));
        }
        let _ = stream.set_read_timeout(Some(left));
        let n = stream
            .read(&mut chunk)
            .map_err(|_| (408, "request head not received in time"))?;
        if n == 0 {
            return Err((400, "connection closed before the request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => return check(&parsed, bound),
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD_BYTES => continue,
            Ok(httparse::Status::Partial) => return Err((431, "request head too large")),
            Err(_) => return Err((400, "not an HTTP request")),
        }
    }
}

fn check(req: &httparse::Request, bound: SocketAddr) -> Result<Request, (u16, &'static str)> {
    let head_only = match req.method {
        Some("GET") => false,
        Some("HEAD") => true,
        _ => return Err((405, "only GET and HEAD")),
    };
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    };
    if !host_allowed(header("host").unwrap_or(""), bound) {
        return Err((403, "Host not allowed: use the printed address"));
    }
    let target = req.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_string(), v.to_string())
        })
        .collect();
    Ok(Request {
        head_only,
        path: path.to_string(),
        query,
        last_event_id: header("last-event-id").map(str::to_string),
    })
}

/// A `Host` that names an address literal or `localhost`, with the bound port: a DNS name
/// cannot be rebound to an address literal, and `localhost` never leaves the machine.
pub fn host_allowed(host: &str, bound: SocketAddr) -> bool {
    let (name, port) = match host.rsplit_once(':') {
        Some((n, p)) if !n.ends_with(':') && !n.is_empty() => (n, p.parse::<u16>().ok()),
        _ => (host, None),
    };
    // Without a port the client used the scheme's default: only right when bound there.
    if port.unwrap_or(80) != bound.port() {
        return false;
    }
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok()
}

/// A short plain-text answer.
pub fn status(out: &mut TcpStream, code: u16, text: &str) -> io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let body = format!("{text}\n");
    write!(
        out,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A complete answer with `body` (nothing of it for HEAD).
pub fn ok(
    out: &mut TcpStream,
    req: &Request,
    content_type: &str,
    extra: &str,
    body: &[u8],
) -> io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )?;
    if !req.head_only {
        out.write_all(body)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_cannot_be_rebound_are_allowed() {
        let b: SocketAddr = "127.0.0.1:8123".parse().unwrap();
        for ok in [
            "127.0.0.1:8123",
            "localhost:8123",
            "LOCALHOST:8123",
            "[::1]:8123",
            "10.0.0.5:8123",
        ] {
            assert!(host_allowed(ok, b), "{ok}");
        }
        for bad in [
            "evil.example:8123",
            "127.0.0.1:9999",
            "127.0.0.1",
            "",
            "localhost.evil:8123",
            "[::1]",
        ] {
            assert!(!host_allowed(bad, b), "{bad}");
        }
        let b80: SocketAddr = "127.0.0.1:80".parse().unwrap();
        assert!(host_allowed("127.0.0.1", b80));
        assert!(!host_allowed("rebind.example", b80));
    }
}
