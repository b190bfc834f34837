//! `volley serve`: the reference server contract (servers/README.md: its endpoints, HTTPS when
//! given a certificate) built in, so volley can be tried with nothing else installed and tests
//! have a target. One thread per connection with blocking I/O: simple, and enough for a demo
//! target (use nginx or a reference server for serious comparisons). HTTPS is rustls (TLS 1.2 and
//! 1.3, ALPN `http/1.1`, sessions resumable), with `--tls-cert FILE --tls-key FILE` or
//! `TLS_CERT`/`TLS_KEY` in the environment, as the reference servers read them. Beyond that
//! contract: `GET /_volley/counts` (docs/contract.md, "Workloads"; [`PathCounts`]) and
//! `GET /burn?us=N`, a test aid that spends N µs of CPU, then answers `.`.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::ServerConfig;

use crate::engine::tls;

use socket2::{Domain, Protocol, Socket, Type};

/// Largest `/bytes?n=` and `/delay?ms=` values served.
const MAX_BYTES: u64 = 1 << 30;
const MAX_DELAY_MS: u64 = 60_000;
const MAX_BURN_US: u64 = 1_000_000;

/// CPU time this thread has used (CLOCK_THREAD_CPUTIME_ID): unlike wall time it does not
/// advance while the thread waits for a core, so a burn costs the same CPU on a busy machine.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn burn_cpu(d: Duration) {
    let end = thread_cpu_time() + d;
    // Reading a thread's CPU clock is a real syscall (the vDSO does not serve it): check it
    // every few microseconds only, so the burn stays user time.
    while thread_cpu_time() < end {
        for _ in 0..1000 {
            std::hint::spin_loop();
        }
    }
}

/// A running server.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Requests answered so far.
    pub requests: Arc<AtomicU64>,
    /// Requests by `METHOD path`.
    pub paths: PathCounts,
}

/// Requests answered by `METHOD path` (the query left out): every request but
/// `GET /_volley/counts` itself, a 404 too. Each connection counts into a map of its own (its
/// lock is never contended: only a reader of the totals takes it too), registered here.
#[derive(Clone, Default)]
pub struct PathCounts {
    maps: Arc<Mutex<Vec<ConnectionCounts>>>,
}

/// One connection's requests by `METHOD path`.
type ConnectionCounts = Arc<Mutex<HashMap<String, u64>>>;

impl PathCounts {
    /// A new connection's map.
    fn connection(&self) -> ConnectionCounts {
        let m = Arc::new(Mutex::new(HashMap::new()));
        if let Ok(mut maps) = self.maps.lock() {
            maps.push(Arc::clone(&m));
        }
        m
    }

    /// Every connection's counts added up, by `METHOD path`.
    pub fn totals(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        let maps = match self.maps.lock() {
            Ok(m) => m.clone(),
            Err(_) => return out,
        };
        for m in maps {
            if let Ok(m) = m.lock() {
                for (k, v) in m.iter() {
                    *out.entry(k.clone()).or_insert(0) += v;
                }
            }
        }
        out
    }
}

/// Where Linux keeps the longest accept queue a listener may have.
const SOMAXCONN_PATH: &str = "/proc/sys/net/core/somaxconn";
/// The accept queue when somaxconn cannot be read: Linux's somaxconn since 5.4.
const DEFAULT_BACKLOG: i32 = 4096;

/// The accept queue to listen with, from the text of `/proc/sys/net/core/somaxconn` (`None`
/// when unreadable): the longest the system allows, so that `-c 2000` against the reference
/// server finds room for every SYN (the standard library's fixed 128 dropped the rest, and
/// volley counted connect errors that were the server's queue, not the server).
pub(crate) fn backlog(somaxconn: Option<&str>) -> i32 {
    somaxconn
        .and_then(|t| t.trim().parse::<i32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_BACKLOG)
}

/// A listener on the first of `addr`'s addresses that binds, with the system's [`backlog`]
/// (and `SO_REUSEADDR`, as the standard library sets it).
pub(crate) fn listen(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
    let queue = backlog(std::fs::read_to_string(SOMAXCONN_PATH).ok().as_deref());
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to bind");
    for a in addr.to_socket_addrs()? {
        let socket = Socket::new(Domain::for_address(a), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        match socket.bind(&a.into()).and_then(|()| socket.listen(queue)) {
            Ok(()) => return Ok(socket.into()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The TLS settings of an HTTPS server from a PEM certificate chain and its private key.
/// Errors name the flag and file (`--tls-cert PATH: no certificate in the file …`).
pub(crate) fn tls_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let chain = tls::certificates("--tls-cert", cert).map_err(|e| e.to_string())?;
    let key = tls::private_key("--tls-key", key).map_err(|e| e.to_string())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert/--tls-key: the certificate and key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Binds `addr` and serves on background threads. Returns once it listens.
pub fn spawn(addr: &str) -> io::Result<Server> {
    spawn_with(addr, None)
}

/// [`spawn`], over TLS when `tls` is given.
pub(crate) fn spawn_with(addr: &str, tls: Option<Arc<ServerConfig>>) -> io::Result<Server> {
    let listener = listen(addr)?;
    let local = listener.local_addr()?;
    let requests = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&requests);
    let paths = PathCounts::default();
    let by_path = paths.clone();
    std::thread::Builder::new()
        .name("volley-serve".into())
        .spawn(move || accept_loop(listener, counter, by_path, tls))?;
    Ok(Server {
        addr: local,
        requests,
        paths,
    })
}

/// Serves in the foreground until the process ends (`volley serve`), over TLS when `tls` is
/// given; `listening` is told the bound address once it listens.
pub(crate) fn run(
    bind: &str,
    port: u16,
    tls: Option<Arc<ServerConfig>>,
    listening: impl FnOnce(SocketAddr),
) -> io::Result<()> {
    let listener = listen((bind, port))?;
    listening(listener.local_addr()?);
    accept_loop(
        listener,
        Arc::new(AtomicU64::new(0)),
        PathCounts::default(),
        tls,
    );
    Ok(())
}

fn accept_loop(
    listener: TcpListener,
    requests: Arc<AtomicU64>,
    paths: PathCounts,
    tls: Option<Arc<ServerConfig>>,
) {
    for stream in listener.incoming() {
        match stream {
            Ok(s) => {
                let counter = Counters {
                    requests: Arc::clone(&requests),
                    paths: paths.clone(),
                };
                let tls = tls.clone();
                let _ = std::thread::Builder::new()
                    .stack_size(128 * 1024)
                    .spawn(move || {
                        let _ = s.set_nodelay(true);
                        let _ = match tls {
                            None => serve_connection(s, &counter),
                            Some(cfg) => rustls::ServerConnection::new(cfg)
                                .map_err(io::Error::other)
                                .and_then(|c| {
                                    serve_connection(rustls::StreamOwned::new(c, s), &counter)
                                }),
                        };
                    });
            }
            // Out of descriptors or similar: back off briefly rather than spin.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// What a connection counts into.
struct Counters {
    requests: Arc<AtomicU64>,
    paths: PathCounts,
}

struct Request {
    method: String,
    path: String,
    query: String,
    keep_alive: bool,
    body_len: u64,
}

fn serve_connection<S: Read + Write>(stream: S, counters: &Counters) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    let mine = counters.paths.connection();
    // The count's key is built in one buffer per connection: no allocation per request.
    let mut key = String::new();
    loop {
        let req = match read_request(&mut reader)? {
            Some(r) => r,
            None => return Ok(()),
        };
        let keep = req.keep_alive;
        if req.path == "/_volley/counts" {
            let body = serde_json::to_string(&counters.paths.totals()).unwrap_or_default();
            respond_json(reader.get_mut(), &body, keep)?;
        } else {
            counters.requests.fetch_add(1, Ordering::Relaxed);
            key.clear();
            key.push_str(&req.method);
            key.push(' ');
            key.push_str(&req.path);
            if let Ok(mut m) = mine.lock() {
                match m.get_mut(key.as_str()) {
                    Some(n) => *n += 1,
                    None => {
                        m.insert(key.clone(), 1);
                    }
                }
            }
            respond(reader.get_mut(), &req)?;
        }
        if !keep {
            return Ok(());
        }
    }
}

/// Reads one request head and its body. `None` at a clean end of stream.
fn read_request<S: Read>(r: &mut BufReader<S>) -> io::Result<Option<Request>> {
    let mut head = Vec::with_capacity(512);
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        // Copy up to and including the blank line.
        let start = head.len();
        head.extend_from_slice(buf);
        let scan_from = start.saturating_sub(3);
        if let Some(pos) = find_blank_line(&head[scan_from..]) {
            let end = scan_from + pos;
            let used = end - start;
            r.consume(used);
            head.truncate(end);
            break;
        }
        let n = buf.len();
        r.consume(n);
        if head.len() > 64 * 1024 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "bad request")),
    }
    let version = req.version.unwrap_or(1);
    let mut keep_alive = version == 1;
    let mut body_len = 0u64;
    let mut chunked = false;
    for h in req.headers.iter() {
        let v = String::from_utf8_lossy(h.value);
        if h.name.eq_ignore_ascii_case("connection") {
            if v.to_ascii_lowercase().contains("close") {
                keep_alive = false;
            } else if v.to_ascii_lowercase().contains("keep-alive") {
                keep_alive = true;
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            body_len = v
                .trim()
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad length"))?;
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            && v.to_ascii_lowercase().contains("chunked")
        {
            chunked = true;
        }
    }
    let target = req.path.unwrap_or("/").to_string();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target, String::new()),
    };
    let method = req.method.unwrap_or("GET").to_string();
    if chunked {
        body_len = read_chunked_body(r)?;
    } else {
        io::copy(&mut r.by_ref().take(body_len), &mut io::sink())?;
    }
    Ok(Some(Request {
        method,
        path,
        query,
        keep_alive,
        body_len,
    }))
}

fn read_chunked_body<S: Read>(r: &mut BufReader<S>) -> io::Result<u64> {
    let mut total = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line)?;
        let size = u64::from_str_radix(line.trim().split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        if size == 0 {
            // Trailers until a blank line.
            loop {
                line.clear();
                if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
                    return Ok(total);
                }
            }
        }
        io::copy(&mut r.by_ref().take(size), &mut io::sink())?;
        total += size;
        line.clear();
        r.read_line(&mut line)?;
    }
}

fn find_blank_line(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn query_u64(query: &str, key: &str) -> Option<u64> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

fn respond_json<W: Write>(w: &mut W, body: &str, keep_alive: bool) -> io::Result<()> {
    let conn = if keep_alive {
        ""
    } else {
        "Connection: close\r\n"
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{conn}\r\n",
        body.len()
    );
    w.write_all(head.as_bytes())?;
    w.write_all(body.as_bytes())
}

fn respond<W: Write>(w: &mut W, req: &Request) -> io::Result<()> {
    let head_only = req.method == "HEAD";
    let get = req.method == "GET" || head_only;
    let conn = if req.keep_alive {
        ""
    } else {
        "Connection: close\r\n"
    };
    let small = |w: &mut W, status: &str, body: &[u8]| -> io::Result<()> {
        let mut out = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{conn}\r\n",
            body.len()
        )
        .into_bytes();
        if !head_only {
            out.extend_from_slice(body);
        }
        w.write_all(&out)
    };
    match (req.path.as_str(), get, req.method.as_str()) {
        ("/", true, _) => small(w, "200 OK", b"."),
        ("/", _, "POST") => small(w, "200 OK", format!("length:{}", req.body_len).as_bytes()),
        ("/hello", true, _) => small(w, "200 OK", b"Hello, World!"),
        ("/delay", true, _) => {
            let ms = query_u64(&req.query, "ms").unwrap_or(0).min(MAX_DELAY_MS);
            std::thread::sleep(Duration::from_millis(ms));
            small(w, "200 OK", b".")
        }
        // Hidden test aid (not in the reference contract): spends N µs of this thread's CPU
        // time in a busy loop, so the server monitor's per-request CPU can be checked.
        ("/burn", true, _) => {
            burn_cpu(Duration::from_micros(
                query_u64(&req.query, "us").unwrap_or(0).min(MAX_BURN_US),
            ));
            small(w, "200 OK", b".")
        }
        ("/bytes", true, _) => {
            let n = query_u64(&req.query, "n").unwrap_or(0).min(MAX_BYTES);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {n}\r\n{conn}\r\n"
            );
            w.write_all(head.as_bytes())?;
            if !head_only {
                let block = [b'x'; 64 * 1024];
                let mut left = n;
                while left > 0 {
                    let k = left.min(block.len() as u64) as usize;
                    w.write_all(&block[..k])?;
                    left -= k as u64;
                }
            }
            Ok(())
        }
        (_, _, _) if ["/", "/hello", "/delay", "/bytes"].contains(&req.path.as_str()) => {
            small(w, "405 Method Not Allowed", b"method not allowed")
        }
        _ => small(w, "404 Not Found", b"not found"),
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpStream;

    use super::*;

    #[test]
    fn serves_https_with_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let (cert_path, key_path) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        std::fs::write(&cert_path, key.cert.pem()).unwrap();
        std::fs::write(&key_path, key.signing_key.serialize_pem()).unwrap();
        let server = spawn_with(
            "127.0.0.1:0",
            Some(tls_config(&cert_path, &key_path).unwrap()),
        )
        .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(key.cert.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let conn = rustls::ClientConnection::new(Arc::new(client), "localhost".try_into().unwrap())
            .unwrap();
        let tcp = TcpStream::connect(server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        tls.write_all(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.starts_with("HTTP/1.1 200 OK") && text.ends_with("Hello, World!"),
            "{text}"
        );
        assert_eq!(server.requests.load(Ordering::Relaxed), 1);
        let e = tls_config(&key_path, &key_path).unwrap_err();
        assert!(
            e.starts_with("--tls-cert ") && e.contains("no certificate"),
            "{e}"
        );
        let e = tls_config(&cert_path, &cert_path).unwrap_err();
        assert!(e.starts_with("--tls-key "), "{e}");
    }

    #[test]
    fn the_backlog_is_somaxconn_or_linux_default() {
        assert_eq!(backlog(Some("4096\n")), 4096);
        assert_eq!(backlog(Some("65535\n")), 65535);
        assert_eq!(backlog(Some("garbage")), DEFAULT_BACKLOG);
        assert_eq!(backlog(Some("0")), DEFAULT_BACKLOG);
        assert_eq!(backlog(None), DEFAULT_BACKLOG);
    }

    #[test]
    fn more_than_128_connections_wait_in_the_queue() {
        let system = backlog(std::fs::read_to_string(SOMAXCONN_PATH).ok().as_deref());
        // 300 connects the server has not accepted yet: with the standard library's 128 the
        // kernel drops the SYNs past 129 and these connects time out.
        let want = 300.min(system as usize);
        assert!(want > 129, "this machine's somaxconn is {system}");
        let listener = listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut held = Vec::new();
        for k in 0..want {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
                Ok(s) => held.push(s),
                Err(e) => panic!("connect {k} of {want} failed: {e}"),
            }
        }
        assert_eq!(held.len(), want);
    }
}
