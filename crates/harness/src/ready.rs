//! Waiting for a started server to be ready: `GET ready_path` every 50 ms until it answers
//! below 500, the server exits, the timeout passes, Ctrl-C, or the server's process tree is
//! seen listening on other ports than `$PORT` (docs/contract.md, "Suites"). In an https cell
//! the request goes over TLS, trusting only the certificate the server was given; in an h2
//! cell too, offering h2 by ALPN and asking in HTTP/2; in an h2c cell it is
//! asked in cleartext HTTP/2 with prior knowledge, so a server that speaks only HTTP/2 on the
//! port is seen ready. The requests are the engine's blocking client's
//! (`volley_engine::probe`).

use std::collections::BTreeSet;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, ServerName};

use super::lifecycle::{describe, members, Running};
use volley_config::suite::Protocol;
use volley_engine::probe::h2::{self as probe_h2, H2ProbeError};
use volley_engine::probe::Probe;
use volley_model::sys::listeners;
use volley_monitor::read::socket_inodes;

/// How often the process tree's listening sockets are looked at while waiting.
const LISTEN_CHECK_EVERY: Duration = Duration::from_millis(250);

/// How long the tree must listen elsewhere (and not on `$PORT`) before the cell fails: a
/// server may open an admin port a moment before its main one.
const WRONG_PORT_GRACE: Duration = Duration::from_secs(1);

/// Why a server never became ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// The started process exited (`exited with status 1`).
    Exited(String),
    /// Ctrl-C while waiting.
    Interrupted,
    /// `ready_timeout` passed; the last thing the probe saw.
    Timeout {
        /// `ready_timeout`.
        after: Duration,
        /// The last probe's outcome.
        last: String,
    },
    /// An https or h2 cell's server answered the readiness request in plain HTTP.
    PlainHttp(Protocol),
    /// An h2 cell's server finished the TLS handshake without choosing h2 by ALPN (what it
    /// chose instead).
    NoH2(String),
    /// An h2c cell's server did not answer the HTTP/2 preface in HTTP/2 (what it sent).
    NotH2c(String),
    /// The readiness check's TLS client could not be set up.
    Tls(String),
    /// The server's processes listen on these ports, none of them `port`.
    WrongPort {
        /// Where they listen.
        listening: Vec<u16>,
        /// `$PORT`.
        port: u16,
    },
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotReady::Exited(how) => write!(f, "{how} before it was ready"),
            NotReady::Interrupted => {
                write!(f, "interrupted while waiting for the server to be ready")
            }
            NotReady::Timeout { after, last } => write!(
                f,
                "not ready after {} (ready_timeout; last: {last})",
                humantime::format_duration(Duration::from_millis(after.as_millis() as u64))
            ),
            NotReady::PlainHttp(p) => write!(
                f,
                "the server answered plain HTTP: does it read TLS_CERT/TLS_KEY? (the cell's protocol is {})",
                p.as_str()
            ),
            NotReady::NoH2(chose) => write!(
                f,
                "the server did not choose h2 by ALPN ({chose}): does it offer h2 over TLS? (the cell's protocol is h2; leave it out with the server's protocols = [...])"
            ),
            NotReady::NotH2c(line) => write!(
                f,
                "the server did not answer the HTTP/2 preface in HTTP/2 (it sent `{line}`): does it read H2C=1? (the cell's protocol is h2c; leave it out with the server's protocols = [...])"
            ),
            NotReady::Tls(e) => write!(f, "TLS client for the readiness check: {e}"),
            NotReady::WrongPort { listening, port } => write!(
                f,
                "listening on {}, not on $PORT={port} — use $PORT or {{port}} in the start line",
                listening
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Polls `GET ready_path` until the server answers with a status below 500 (`Ok`: how long
/// that took). Fails as soon as the server exits or its process tree has listened for
/// `WRONG_PORT_GRACE` on other ports but not on `$PORT`.
pub(crate) fn wait_ready(
    r: &mut Running,
    ready_path: &str,
    timeout: Duration,
    interrupts: &AtomicUsize,
) -> Result<Duration, NotReady> {
    let t0 = Instant::now();
    let addr = SocketAddr::from(([127, 0, 0, 1], r.port));
    let mut next_check = t0;
    let mut elsewhere_since: Option<Instant> = None;
    let asker = Asker::for_cell(r)?;
    loop {
        if let Ok(Some(status)) = r.child.try_wait() {
            return Err(NotReady::Exited(describe(status)));
        }
        if interrupts.load(Ordering::SeqCst) > 0 {
            return Err(NotReady::Interrupted);
        }
        let last = match asker.ask(addr, ready_path)? {
            Ok(code) if code < 500 => return Ok(t0.elapsed()),
            Ok(code) => format!("GET {ready_path} answered {code}"),
            Err(e) => format!("GET {ready_path} on {addr}: {e}"),
        };
        if Instant::now() >= next_check {
            next_check = Instant::now() + LISTEN_CHECK_EVERY;
            let ports = tree_ports(r.pgid());
            if ports.is_empty() || ports.contains(&r.port) {
                elsewhere_since = None;
            } else if elsewhere_since.get_or_insert_with(Instant::now).elapsed() >= WRONG_PORT_GRACE
            {
                return Err(NotReady::WrongPort {
                    listening: ports.into_iter().collect(),
                    port: r.port,
                });
            }
        }
        if t0.elapsed() >= timeout {
            return Err(NotReady::Timeout {
                after: timeout,
                last,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How a cell's readiness request is asked, by its protocol.
enum Asker {
    /// HTTP/1.1 in cleartext.
    Plain,
    /// Over TLS with this client: HTTP/1.1 (https), or HTTP/2 chosen by ALPN (h2).
    Tls(Arc<rustls::ClientConfig>, Protocol),
    /// HTTP/2 in cleartext with prior knowledge.
    H2c,
}

impl Asker {
    /// The asker for a started server's cell, trusting the certificate it was given.
    fn for_cell(r: &Running) -> Result<Asker, NotReady> {
        let client = |alpn: &[&[u8]]| match &r.tls {
            Some(files) => tls_client(&files.cert_der, alpn).map_err(NotReady::Tls),
            None => Err(NotReady::Tls("no certificate was made for the cell".into())),
        };
        Ok(match r.protocol {
            Protocol::Http1 => Asker::Plain,
            Protocol::Https => Asker::Tls(client(&[])?, Protocol::Https),
            Protocol::H2 => Asker::Tls(client(&[b"h2", b"http/1.1"])?, Protocol::H2),
            Protocol::H2c => Asker::H2c,
            // Readiness over TCP and TLS: an HTTP/3 server also serves HTTPS on its port
            // (Caddy, nginx, h2o do, and announce h3 there).
            Protocol::H3 => Asker::Tls(client(&[])?, Protocol::Https),
            // A WebSocket endpoint answers a plain GET too (400, 426): the server is up.
            Protocol::Ws => Asker::Plain,
            Protocol::Wss => Asker::Tls(client(&[])?, Protocol::Https),
        })
    }

    /// One readiness request: its answer (a status, or why there is none yet), or why the
    /// cell fails at once.
    fn ask(&self, addr: SocketAddr, path: &str) -> Result<std::io::Result<u16>, NotReady> {
        match self {
            Asker::Plain => Ok(probe(addr, path)),
            Asker::Tls(config, protocol) => {
                match probe_tls(addr, path, config, *protocol == Protocol::H2) {
                    Ok(code) => Ok(Ok(code)),
                    Err(TlsProbeError::Io(e)) => Ok(Err(e)),
                    Err(TlsProbeError::PlainHttp) => Err(NotReady::PlainHttp(*protocol)),
                    Err(TlsProbeError::NoH2(chose)) => Err(NotReady::NoH2(chose)),
                }
            }
            Asker::H2c => match probe_h2c(addr, path) {
                Ok(code) => Ok(Ok(code)),
                Err(H2ProbeError::Io(e)) => Ok(Err(e)),
                Err(H2ProbeError::NotHttp2(line)) => Err(NotReady::NotH2c(line)),
            },
        }
    }
}

/// One readiness request in cleartext HTTP/2 with prior knowledge: the status of the answer.
pub(crate) fn probe_h2c(addr: SocketAddr, path: &str) -> Result<u16, H2ProbeError> {
    let mut s = connect(addr)?;
    probe_h2::request_status(&mut s, "http", &addr.to_string(), path)
}

/// The TCP ports the processes of group `pgid` (and their descendants) listen on.
pub(crate) fn tree_ports(pgid: i32) -> BTreeSet<u16> {
    let inodes: BTreeSet<u64> = members(pgid, pgid)
        .into_iter()
        .flat_map(socket_inodes)
        .collect();
    if inodes.is_empty() {
        return BTreeSet::new();
    }
    listeners::sockets()
        .into_iter()
        .filter(|l| inodes.contains(&l.inode))
        .map(|l| l.addr.port())
        .collect()
}

/// Whether a start line puts its server in the background: it ends with `&` (not `&&`)
/// outside quotes, so `sh` exits at once and the server runs on without it.
pub(crate) fn backgrounds(line: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut last: Option<(usize, char)> = None;
    let chars: Vec<char> = line.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if c == '\\' && !single {
            escaped = true;
        } else if c == '\'' && !double {
            single = !single;
        } else if c == '"' && !single {
            double = !double;
        }
        if !c.is_whitespace() {
            last = Some((i, c));
        }
    }
    match last {
        Some((i, '&')) if !single && !double => {
            let before = if i > 0 { chars[i - 1] } else { ' ' };
            before != '&' && before != '\\'
        }
        _ => false,
    }
}

/// The hint added to a failure of a server whose start line [`backgrounds`] it.
pub(crate) fn background_hint(line: &str) -> String {
    let fg = line.trim_end().trim_end_matches('&').trim_end();
    format!(
        "the start line ends with `&`, so sh exits at once and the server runs in the background: keep it in the foreground (`exec {fg}`)"
    )
}

/// A TLS client for readiness checks that trusts `cert_der` only (the certificate the server
/// was given), with rustls' ring provider, offering `alpn` (none when empty).
pub(crate) fn tls_client(
    cert_der: &[u8],
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(cert_der.to_vec()))
        .map_err(|e| e.to_string())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut config = config;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// Why a readiness request over TLS got no status.
#[derive(Debug)]
pub(crate) enum TlsProbeError {
    /// The server speaks plain HTTP on the port.
    PlainHttp,
    /// Asked for HTTP/2, the server's handshake chose something else by ALPN (said how).
    NoH2(String),
    /// Anything else (refused, a handshake or certificate error, no HTTP answer).
    Io(std::io::Error),
}

/// One readiness request over TLS to `addr` (verified as its IP address, as the engine does
/// for `https://127.0.0.1:…`): the status code of the answer. With `http2` the handshake must
/// choose h2 by ALPN and the request is asked in HTTP/2.
pub(crate) fn probe_tls(
    addr: SocketAddr,
    path: &str,
    config: &Arc<rustls::ClientConfig>,
    http2: bool,
) -> Result<u16, TlsProbeError> {
    let name = ServerName::IpAddress(addr.ip().into());
    let mut tls = connect(addr)
        .map_err(TlsProbeError::Io)?
        .tls(config.clone(), name)
        .map_err(|e| TlsProbeError::Io(std::io::Error::other(e)))?;
    let answer = if http2 {
        match h2_over_tls(&mut tls, addr, path) {
            Err(TlsProbeError::Io(e)) => Err(e),
            done => return done,
        }
    } else {
        tls.http1_status(&addr.to_string(), path)
    };
    match answer {
        Ok(code) => Ok(code),
        Err(_) if tls.first_bytes().starts_with(b"HTTP/") => Err(TlsProbeError::PlainHttp),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(TlsProbeError::Io(e)),
        // A plain HTTP server may wait for a line end that a ClientHello lacks, so the
        // handshake times out instead of reading `HTTP/`, or answer in HTTP/0.9 (a body
        // without a status line): ask it in plain HTTP. A TLS server
        // answers that with a 400 (nginx: "plain HTTP request was sent to HTTPS port"), which
        // is not a plain server. Other errors (a reset while it starts, a certificate) are
        // retried until `ready_timeout` like any other.
        Err(e) if handshake_stalled_or_not_tls(&e) => match probe(addr, path) {
            Ok(code) if code != 400 => Err(TlsProbeError::PlainHttp),
            _ => Err(TlsProbeError::Io(with_tls_context(e))),
        },
        Err(e) => Err(TlsProbeError::Io(with_tls_context(e))),
    }
}

/// Finishes the handshake, checks that ALPN chose h2 and asks in HTTP/2.
fn h2_over_tls(tls: &mut Probe, addr: SocketAddr, path: &str) -> Result<u16, TlsProbeError> {
    tls.handshake().map_err(TlsProbeError::Io)?;
    match tls.alpn() {
        Some(b"h2") => {}
        Some(p) => {
            let chose = format!("it chose {}", String::from_utf8_lossy(p));
            return Err(TlsProbeError::NoH2(chose));
        }
        None => return Err(TlsProbeError::NoH2("it answered no ALPN protocol".into())),
    }
    match probe_h2::request_status(tls, "https", &addr.to_string(), path) {
        Ok(code) => Ok(code),
        Err(H2ProbeError::Io(e)) => Err(TlsProbeError::Io(e)),
        Err(H2ProbeError::NotHttp2(line)) => Err(TlsProbeError::Io(std::io::Error::other(
            format!("not HTTP/2 after ALPN h2: `{line}`"),
        ))),
    }
}

/// The handshake timed out, or what came back was not TLS at all: worth asking in plain HTTP.
fn handshake_stalled_or_not_tls(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    let not_tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|t| {
            matches!(
                t,
                rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. }
            )
        });
    not_tls || matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// A handshake error says it was one.
fn with_tls_context(e: std::io::Error) -> std::io::Error {
    if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) {
        std::io::Error::new(e.kind(), format!("TLS: {e}"))
    } else {
        e
    }
}

/// A connection to `addr` with the readiness check's timeouts.
fn connect(addr: SocketAddr) -> std::io::Result<Probe> {
    Probe::tcp(addr, Duration::from_millis(500), Duration::from_secs(2))
}

/// One readiness request: the status code of the answer.
pub fn probe(addr: SocketAddr, path: &str) -> std::io::Result<u16> {
    connect(addr)?.http1_status(&addr.to_string(), path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn a_trailing_ampersand_outside_quotes_backgrounds() {
        assert!(backgrounds("node server.js &"));
        assert!(backgrounds("node server.js&  \n"));
        assert!(!backgrounds("exec node server.js"));
        assert!(!backgrounds("a && b"));
        assert!(!backgrounds("a &&"));
        assert!(!backgrounds("echo 'x &'"));
        assert!(!backgrounds("echo \"x &\""));
        assert!(!backgrounds("echo x \\&"));
        assert!(!backgrounds("a & b"));
        assert!(background_hint("node server.js &").ends_with("(`exec node server.js`)"));
    }

    #[test]
    fn reasons_read_well() {
        let w = NotReady::WrongPort {
            listening: vec![3000],
            port: 41213,
        };
        assert_eq!(
            w.to_string(),
            "listening on 3000, not on $PORT=41213 — use $PORT or {port} in the start line"
        );
        assert_eq!(
            NotReady::Exited("exited with status 0".into()).to_string(),
            "exited with status 0 before it was ready"
        );
    }

    /// A server on 127.0.0.1 that answers `conns` connections with `serve`.
    fn server(
        conns: usize,
        serve: impl Fn(TcpStream) + Send + 'static,
    ) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            for s in l.incoming().take(conns) {
                serve(s.unwrap());
            }
        });
        (addr, h)
    }

    /// Reads what the peer sent until nothing more comes for 200 ms (or it closes), so that
    /// closing sends FIN, not a reset that could overtake what was written.
    fn drain(s: &mut TcpStream) {
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = std::io::copy(s, &mut std::io::sink());
    }

    /// Reads from `r` until a blank line (the end of a request head) or the end.
    fn read_head(r: &mut impl Read) {
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && matches!(r.read(&mut b), Ok(1)) {
            head.push(b[0]);
        }
    }

    fn tls_server(files: &crate::certificate::CertFiles) -> Arc<rustls::ServerConfig> {
        use rustls::pki_types::pem::PemObject;
        let cert = CertificateDer::from_pem_file(&files.cert).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_file(&files.key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![cert], key)
                .unwrap(),
        )
    }

    #[test]
    fn https_readiness_speaks_tls_with_the_given_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let files = crate::certificate::generate(dir.path()).unwrap();
        let config = tls_server(&files);
        let (addr, h) = server(1, move |s| {
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            read_head(&mut tls);
            let _ = tls.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
            let _ = tls.flush();
            tls.conn.send_close_notify();
            let _ = tls.flush();
        });
        let client = tls_client(&files.cert_der, &[]).unwrap();
        assert_eq!(probe_tls(addr, "/ready", &client, false).unwrap(), 204);
        h.join().unwrap();

        // Another certificate than the one the client trusts: a handshake error, said so.
        let other = tempfile::tempdir().unwrap();
        let other = crate::certificate::generate(other.path()).unwrap();
        let config = tls_server(&other);
        let (addr, h) = server(2, move |s| {
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            read_head(&mut tls);
        });
        match probe_tls(addr, "/", &client, false) {
            Err(TlsProbeError::Io(e)) => assert!(e.to_string().starts_with("TLS: "), "{e}"),
            other => panic!("{other:?}"),
        }
        // The plain check that follows it found no HTTP either; this thread is done.
        drop(TcpStream::connect(addr));
        h.join().unwrap();
    }

    #[test]
    fn a_plain_http_answer_on_an_https_cell_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let files = crate::certificate::generate(dir.path()).unwrap();
        let client = tls_client(&files.cert_der, &[]).unwrap();
        // Answers at once, whatever came (nginx without ssl says 400 to a ClientHello).
        let (addr, h) = server(1, |mut s| {
            let _ = s.read(&mut [0u8; 512]);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            // A close with bytes unread would reset the answer away.
            drain(&mut s);
        });
        assert!(matches!(
            probe_tls(addr, "/", &client, false),
            Err(TlsProbeError::PlainHttp)
        ));
        h.join().unwrap();
        assert!(NotReady::PlainHttp(Protocol::Https)
            .to_string()
            .contains("does it read TLS_CERT/TLS_KEY?"));

        // And an http cell whose server speaks TLS is told so.
        let config = tls_server(&files);
        let (addr, h) = server(1, move |s| {
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            read_head(&mut tls);
            // Closing with the rest of the request unread would reset the connection, and a
            // reset can overtake the alert rustls just sent (the probe would see "reset", not
            // TLS): read what the probe sent before closing.
            drain(&mut tls.sock);
        });
        let e = probe(addr, "/").unwrap_err();
        assert!(e.to_string().contains("answered with TLS"), "{e}");
        h.join().unwrap();
    }

    /// The server side of an HTTP/2 readiness request: reads the preface, SETTINGS and
    /// HEADERS, answers SETTINGS and a HEADERS of `:status` 204.
    fn serve_h2(s: &mut (impl Read + Write)) {
        let mut head = vec![0u8; volley_engine::h2::frame::PREFACE.len() + 9 + 9];
        s.read_exact(&mut head).unwrap();
        assert!(head.starts_with(volley_engine::h2::frame::PREFACE));
        let len = u32::from_be_bytes([
            0,
            head[head.len() - 9],
            head[head.len() - 8],
            head[head.len() - 7],
        ]);
        s.read_exact(&mut vec![0u8; len as usize]).unwrap();
        let block = loona_hpack::Encoder::new().encode([(&b":status"[..], &b"204"[..])]);
        let mut out = Vec::new();
        // An empty SETTINGS, then HEADERS (END_STREAM | END_HEADERS) on stream 1.
        out.extend_from_slice(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&(block.len() as u32).to_be_bytes()[1..]);
        out.extend_from_slice(&[0x1, 0x5, 0, 0, 0, 1]);
        out.extend_from_slice(&block);
        s.write_all(&out).unwrap();
        s.flush().unwrap();
    }

    fn alpn_server(
        files: &crate::certificate::CertFiles,
        alpn: &[&[u8]],
    ) -> Arc<rustls::ServerConfig> {
        let mut config = Arc::unwrap_or_clone(tls_server(files));
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }

    #[test]
    fn h2_readiness_needs_h2_by_alpn_and_asks_in_http2() {
        let dir = tempfile::tempdir().unwrap();
        let files = crate::certificate::generate(dir.path()).unwrap();
        let client = tls_client(&files.cert_der, &[b"h2", b"http/1.1"]).unwrap();
        let config = alpn_server(&files, &[b"h2", b"http/1.1"]);
        let (addr, h) = server(1, move |s| {
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            serve_h2(&mut tls);
        });
        assert_eq!(probe_tls(addr, "/", &client, true).unwrap(), 204);
        h.join().unwrap();

        // A server offering http/1.1 only: the cell fails at once, saying what it chose.
        let config = alpn_server(&files, &[b"http/1.1"]);
        let (addr, h) = server(1, move |s| {
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            let _ = tls.read(&mut [0u8; 64]);
        });
        match probe_tls(addr, "/", &client, true) {
            Err(TlsProbeError::NoH2(chose)) => assert_eq!(chose, "it chose http/1.1"),
            other => panic!("{other:?}"),
        }
        h.join().unwrap();
        let msg = NotReady::NoH2("it chose http/1.1".into()).to_string();
        assert!(
            msg.contains("did not choose h2 by ALPN (it chose http/1.1)"),
            "{msg}"
        );
    }

    #[test]
    fn h2c_readiness_asks_with_prior_knowledge_and_names_an_http1_answer() {
        let (addr, h) = server(1, |mut s| serve_h2(&mut s));
        assert_eq!(probe_h2c(addr, "/ready").unwrap(), 204);
        h.join().unwrap();

        // An HTTP/1.1-only server answers the preface with a 400.
        let (addr, h) = server(1, |mut s| {
            let _ = s.read(&mut [0u8; 512]);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            // A close with bytes unread would reset the answer away.
            drain(&mut s);
        });
        match probe_h2c(addr, "/") {
            Err(H2ProbeError::NotHttp2(line)) => {
                let msg = NotReady::NotH2c(line).to_string();
                assert!(
                    msg.contains("(it sent `HTTP/1.1 400 Bad Request`): does it read H2C=1?"),
                    "{msg}"
                );
            }
            other => panic!("{other:?}"),
        }
        h.join().unwrap();
    }

    #[test]
    fn a_listener_of_this_process_is_traced_to_it() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let inode = listeners::sockets()
            .into_iter()
            .find(|s| s.addr.port() == port)
            .expect("the listener is in /proc/net/tcp")
            .inode;
        assert!(socket_inodes(std::process::id() as i32).contains(&inode));
    }
}
