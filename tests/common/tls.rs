//! In-process TLS test servers (rustls over a blocking `TcpListener`, one thread per
//! connection; after the handshake, some seal their own records to send what rustls never
//! writes) and the certificates they present, made with rcgen: a CA and leaves signed by it,
//! self-signed leaves, expired ones, client certificates, chains of any size; a Unix-socket
//! HTTP server; and the helpers of the HTTPS tests that use them. Included with
//! `#[path = "common/tls.rs"] mod tls;` by `tests/quick/tls.rs` and `tests/quick/tls_refused.rs`, which
//! both have `mod common;` at their root.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};
use serde_json::Value;

use crate::common::{assert_invariant, volley};

pub const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n.";

/// A certificate authority that signs leaves.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, in the forms rustls and volley want.
pub struct Leaf {
    pub der: CertificateDer<'static>,
    pub pem: String,
    key_der: Vec<u8>,
    pub key_pem: String,
}

impl Leaf {
    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A server certificate for `names`, valid now.
    pub fn server(&self, names: &[&str]) -> Leaf {
        self.sign(leaf_params(names, ExtendedKeyUsagePurpose::ServerAuth))
    }

    /// A server certificate for `names` that expired in 2021.
    pub fn expired_server(&self, names: &[&str]) -> Leaf {
        let mut p = leaf_params(names, ExtendedKeyUsagePurpose::ServerAuth);
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        self.sign(p)
    }

    /// A client certificate.
    pub fn client(&self, name: &str) -> Leaf {
        let mut p = leaf_params(&[], ExtendedKeyUsagePurpose::ClientAuth);
        p.distinguished_name.push(DnType::CommonName, name);
        self.sign(p)
    }

    fn sign(&self, params: CertificateParams) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf {
            der: cert.der().clone(),
            pem: cert.pem(),
            key_der: key.serialize_der(),
            key_pem: key.serialize_pem(),
        }
    }
}

fn leaf_params(names: &[&str], eku: ExtendedKeyUsagePurpose) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut p = CertificateParams::new(names).unwrap();
    p.is_ca = IsCa::ExplicitNoCa;
    p.extended_key_usages = vec![eku];
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p
}

/// A self-signed server certificate for `names`.
pub fn self_signed(names: &[&str]) -> Leaf {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(names).unwrap();
    Leaf {
        der: cert.der().clone(),
        pem: cert.pem(),
        key_der: signing_key.serialize_der(),
        key_pem: signing_key.serialize_pem(),
    }
}

/// Writes `text` to `dir/name` and returns the path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p: PathBuf = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Which TLS versions a server offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versions {
    Both,
    Tls12,
}

fn protocol_versions(versions: Versions) -> &'static [&'static rustls::SupportedProtocolVersion] {
    static BOTH: [&rustls::SupportedProtocolVersion; 2] =
        [&rustls::version::TLS13, &rustls::version::TLS12];
    static TLS12: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS12];
    match versions {
        Versions::Both => &BOTH,
        Versions::Tls12 => &TLS12,
    }
}

/// A server configuration presenting `chain` (leaf first) with `key`.
pub fn config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    versions: Versions,
) -> ServerConfig {
    let mut c = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(protocol_versions(versions))
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    c
}

/// A TLS 1.2 server configuration whose only cipher suite needs an RSA key, with an ECDSA
/// certificate: no handshake can succeed (the server answers `handshake_failure`).
pub fn config_no_common_suite(leaf: &Leaf) -> ServerConfig {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites =
        vec![rustls::crypto::ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256];
    ServerConfig::builder_with_provider(Arc::new(p))
        .with_protocol_versions(protocol_versions(Versions::Tls12))
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der.clone()], leaf.key())
        .unwrap()
}

/// `config` offering the ALPN protocols `alpn` (none: the server chooses no protocol).
pub fn with_alpn(mut config: ServerConfig, alpn: &[&[u8]]) -> ServerConfig {
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

/// A TLS 1.3 configuration with one cipher suite (AES-128-GCM), no tickets of its own, and its
/// traffic secrets extractable: what a flooding server ([`After::Flood`]) needs to write its
/// own records.
pub fn config_flood(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> ServerConfig {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites = vec![rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256];
    let mut c = ServerConfig::builder_with_provider(Arc::new(p))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    c.send_tls13_tickets = 0;
    c.enable_secret_extraction = true;
    c
}

/// A server configuration that requires a client certificate signed by `client_ca`.
pub fn config_client_auth(leaf: &Leaf, client_ca: &Ca, versions: Versions) -> ServerConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(client_ca.der()).unwrap();
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .unwrap();
    let mut c = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(protocol_versions(versions))
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![leaf.der.clone()], leaf.key())
        .unwrap();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    c
}

/// What a TLS test server does with a connection once the handshake is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Answers every request with 200 `.` (keep-alive).
    Answer,
    /// Reads one request, then writes a raw fatal alert record onto the TCP socket.
    RawAlert,
    /// Reads one request, then writes an application-data record of garbage (it cannot
    /// decrypt) onto the TCP socket.
    CorruptRecord,
    /// Answers every request with a body of this many bytes.
    Body(usize),
    /// Before each answer, updates its traffic keys and asks the client to do the same
    /// (TLS 1.3 KeyUpdate).
    KeyUpdate,
    /// Answers one request with `Connection: close`, then sends close_notify and closes.
    CloseNotify,
    /// Answers one request with a body delimited by the end of the connection (no
    /// Content-Length), then closes: with close_notify or without (a bare TCP close).
    UntilClose { notify: bool },
    /// Answers every request one byte per TLS record.
    Trickle,
    /// Answers one request, waits 20 ms, then closes the idle connection with close_notify.
    IdleClose,
    /// Reads one request, writes the first bytes of a record and closes the TCP connection:
    /// the partial record and the FIN arrive together.
    Truncated,
    /// Reads one request, then writes TLS records that carry no data (NewSessionTicket
    /// messages) as fast as the client takes them; with `data_every`, the head of a response
    /// that never ends first, then one byte of its body after each `data_every` tickets. Ends
    /// when the client goes (or after 20 s). Needs [`config_flood`].
    Flood { data_every: Option<usize> },
    /// Answers every request with this many NewSessionTicket messages, then 200 `.`, in one
    /// write. Needs [`config_flood`].
    Burst { tickets: usize },
}

/// A TLS test server: its address, and what it saw.
pub struct TlsServer {
    pub addr: SocketAddr,
    /// Handshakes that completed.
    pub handshakes: Arc<AtomicU64>,
    /// Requests read (over TLS, after a handshake).
    pub requests: Arc<AtomicU64>,
    names: Arc<Mutex<Vec<Option<String>>>>,
    durations: Arc<Mutex<Vec<Duration>>>,
}

impl TlsServer {
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.addr.port())
    }
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Ordering::SeqCst)
    }
}

/// Starts a TLS server with `config`, each connection on its own thread doing `after`.
pub fn serve(config: ServerConfig, after: After) -> TlsServer {
    let config = Arc::new(config);
    serve_with(move |_| Arc::clone(&config), after)
}

/// Starts a TLS server whose `k`-th connection (from 0) uses `config(k)`.
pub fn serve_with<F>(config: F, after: After) -> TlsServer
where
    F: Fn(u64) -> Arc<ServerConfig> + Send + 'static,
{
    serve_each(config, move |_| after)
}

/// Starts a TLS server whose `k`-th connection (from 0) uses `config(k)` and does `after(k)`.
pub fn serve_each<F, G>(config: F, after: G) -> TlsServer
where
    F: Fn(u64) -> Arc<ServerConfig> + Send + 'static,
    G: Fn(u64) -> After + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = TlsServer {
        addr,
        handshakes: Arc::default(),
        requests: Arc::default(),
        names: Arc::default(),
        durations: Arc::default(),
    };
    let seen = server.seen();
    std::thread::spawn(move || {
        for (k, s) in listener.incoming().enumerate() {
            let Ok(sock) = s else { continue };
            let _ = sock.set_nodelay(true);
            // No thread outlives a test by much, whatever the client does.
            let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
            let (config, after, seen) = (config(k as u64), after(k as u64), seen.clone());
            std::thread::spawn(move || connection(config, sock, after, &seen));
        }
    });
    server
}

/// Starts a TLS server with `config` on a Unix socket at `path`; `addr` is unspecified.
pub fn serve_unix(config: ServerConfig, path: &Path) -> TlsServer {
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    let server = TlsServer {
        addr: "0.0.0.0:0".parse().unwrap(),
        handshakes: Arc::default(),
        requests: Arc::default(),
        names: Arc::default(),
        durations: Arc::default(),
    };
    let seen = server.seen();
    let config = Arc::new(config);
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(sock) = s else { continue };
            let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
            let (config, seen) = (Arc::clone(&config), seen.clone());
            std::thread::spawn(move || connection(config, sock, After::Answer, &seen));
        }
    });
    server
}

/// The counters a connection updates.
#[derive(Clone)]
struct Seen {
    handshakes: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
    names: Arc<Mutex<Vec<Option<String>>>>,
    durations: Arc<Mutex<Vec<Duration>>>,
}

impl TlsServer {
    fn seen(&self) -> Seen {
        Seen {
            handshakes: Arc::clone(&self.handshakes),
            requests: Arc::clone(&self.requests),
            names: Arc::clone(&self.names),
            durations: Arc::clone(&self.durations),
        }
    }

    /// How long the completed handshakes took on the server, sorted.
    pub fn durations(&self) -> Vec<Duration> {
        let mut d = self.durations.lock().unwrap().clone();
        d.sort();
        d
    }

    /// The server names (SNI) of the completed handshakes.
    pub fn names(&self) -> Vec<Option<String>> {
        self.names.lock().unwrap().clone()
    }
}

fn connection<S: Read + Write>(config: Arc<ServerConfig>, mut sock: S, after: After, seen: &Seen) {
    let Ok(mut conn) = ServerConnection::new(config) else {
        return;
    };
    // The handshake's time on the server: from the ClientHello's arrival to the client's
    // Finished.
    if conn.read_tls(&mut sock).is_err() {
        return;
    }
    let start = Instant::now();
    if conn.process_new_packets().is_err() {
        let _ = conn.write_tls(&mut sock);
        return;
    }
    while conn.is_handshaking() {
        if conn.complete_io(&mut sock).is_err() {
            // Send the alert rustls queued, if any.
            let _ = conn.write_tls(&mut sock);
            return;
        }
    }
    seen.durations.lock().unwrap().push(start.elapsed());
    seen.handshakes.fetch_add(1, Ordering::SeqCst);
    seen.names
        .lock()
        .unwrap()
        .push(conn.server_name().map(str::to_string));
    match after {
        After::Flood { data_every } => return flood(conn, sock, data_every),
        After::Burst { tickets } => return burst(conn, sock, tickets),
        _ => {}
    }
    let mut tls = StreamOwned::new(conn, sock);
    let mut reader = Requests::default();
    while reader.next(&mut tls) {
        seen.requests.fetch_add(1, Ordering::SeqCst);
        match after {
            After::Answer => {
                if tls.write_all(OK).and_then(|_| tls.flush()).is_err() {
                    return;
                }
            }
            After::Body(size) => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
                let body = vec![b'b'; size];
                let ok = tls.write_all(head.as_bytes()).is_ok()
                    && tls.write_all(&body).is_ok()
                    && tls.flush().is_ok();
                if !ok {
                    return;
                }
            }
            After::KeyUpdate => {
                if tls.conn.refresh_traffic_keys().is_err()
                    || tls.write_all(OK).and_then(|_| tls.flush()).is_err()
                {
                    return;
                }
            }
            After::CloseNotify => {
                let _ = tls.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: close\r\n\r\n.",
                );
                tls.conn.send_close_notify();
                let _ = tls.flush();
                return;
            }
            After::UntilClose { notify } => {
                let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello");
                if notify {
                    tls.conn.send_close_notify();
                }
                let _ = tls.flush();
                return;
            }
            After::Trickle => {
                for b in OK {
                    if tls.write_all(&[*b]).and_then(|_| tls.flush()).is_err() {
                        return;
                    }
                }
            }
            After::IdleClose => {
                let _ = tls.write_all(OK).and_then(|_| tls.flush());
                std::thread::sleep(Duration::from_millis(20));
                tls.conn.send_close_notify();
                let _ = tls.flush();
                return;
            }
            After::Truncated => {
                let _ = tls
                    .sock
                    .write_all(&[0x17, 0x03, 0x03, 0x00, 0x40, 0x01, 0x02]);
                return;
            }
            After::CorruptRecord => {
                let mut record = vec![0x17, 0x03, 0x03, 0x00, 0x40];
                record.extend_from_slice(&[0xa5; 0x40]);
                let _ = tls.sock.write_all(&record);
                std::thread::sleep(Duration::from_millis(200));
                return;
            }
            After::Flood { .. } | After::Burst { .. } => unreachable!("served by hand"),
            After::RawAlert => {
                // A plaintext fatal alert (decode_error) where an encrypted record belongs.
                let _ = tls
                    .sock
                    .write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32]);
                std::thread::sleep(Duration::from_millis(200));
                return;
            }
        }
    }
}

/// A connection's TLS 1.3 records sealed and opened by hand with its traffic keys once rustls
/// has done the handshake: for servers that send what rustls never writes (tickets after the
/// handshake's, as many as they like).
struct ByHand {
    sealer: Box<dyn rustls::crypto::cipher::MessageEncrypter>,
    sent: u64,
    opener: Box<dyn rustls::crypto::cipher::MessageDecrypter>,
    read: u64,
}

impl ByHand {
    /// Takes `conn` over after its handshake (made with [`config_flood`]): its keys, and the
    /// plaintext rustls already read (a request that came with the client's Finished).
    fn take_over(mut conn: ServerConnection, sock: &mut impl Write) -> Option<(ByHand, Vec<u8>)> {
        use rustls::ConnectionTrafficSecrets::Aes128Gcm;
        while conn.wants_write() {
            conn.write_tls(sock).ok()?;
        }
        let mut early = Vec::new();
        let _ = conn.reader().read_to_end(&mut early);
        let secrets = conn.dangerous_extract_secrets().ok()?;
        let (
            (
                sent,
                Aes128Gcm {
                    key: tx_key,
                    iv: tx_iv,
                },
            ),
            (read, Aes128Gcm { key, iv }),
        ) = (secrets.tx, secrets.rx)
        else {
            return None;
        };
        let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
        let aead = suite.tls13().unwrap().aead_alg;
        let hand = ByHand {
            sealer: aead.encrypter(tx_key, tx_iv),
            sent,
            opener: aead.decrypter(key, iv),
            read,
        };
        Some((hand, early))
    }

    /// Appends a record of type `typ` carrying `payload` to `out`.
    fn seal(&mut self, out: &mut Vec<u8>, typ: rustls::ContentType, payload: &[u8]) {
        use rustls::crypto::cipher::{OutboundChunks, OutboundPlainMessage};
        let m = OutboundPlainMessage {
            typ,
            version: rustls::ProtocolVersion::TLSv1_2,
            payload: OutboundChunks::Single(payload),
        };
        out.extend(self.sealer.encrypt(m, self.sent).unwrap().encode());
        self.sent += 1;
    }

    /// The data of the next record from `sock` (empty for a record of another type); `None` at
    /// the end of the stream or on a record that does not open.
    fn open(&mut self, sock: &mut impl Read) -> Option<Vec<u8>> {
        use rustls::crypto::cipher::InboundOpaqueMessage;
        let mut header = [0u8; 5];
        sock.read_exact(&mut header).ok()?;
        let mut payload = vec![0; usize::from(u16::from_be_bytes([header[3], header[4]]))];
        sock.read_exact(&mut payload).ok()?;
        let m = InboundOpaqueMessage::new(
            rustls::ContentType::from(header[0]),
            rustls::ProtocolVersion::TLSv1_2,
            &mut payload,
        );
        let plain = self.opener.decrypt(m, self.read).ok()?;
        self.read += 1;
        Some(match plain.typ {
            rustls::ContentType::ApplicationData => plain.payload.to_vec(),
            _ => Vec::new(),
        })
    }
}

/// [`After::Flood`].
fn flood<S: Read + Write>(conn: ServerConnection, mut sock: S, data_every: Option<usize>) {
    use rustls::ContentType::{ApplicationData, Handshake};
    let Some((mut hand, early)) = ByHand::take_over(conn, &mut sock) else {
        return;
    };
    let mut requests = Requests {
        buf: early,
        last_head: String::new(),
    };
    if !requests.next_with(|| hand.open(&mut sock)) {
        return;
    }
    let ticket = new_session_ticket();
    let mut batch = Vec::new();
    if data_every.is_some() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n";
        hand.seal(&mut batch, ApplicationData, head);
    }
    let end = Instant::now() + Duration::from_secs(20);
    let mut tickets = 0usize;
    while Instant::now() < end {
        for _ in 0..256 {
            hand.seal(&mut batch, Handshake, &ticket);
            tickets += 1;
            if data_every.is_some_and(|n| tickets.is_multiple_of(n)) {
                hand.seal(&mut batch, ApplicationData, b"x");
            }
        }
        if sock.write_all(&batch).is_err() {
            return;
        }
        batch.clear();
    }
}

/// [`After::Burst`].
fn burst<S: Read + Write>(conn: ServerConnection, mut sock: S, tickets: usize) {
    use rustls::ContentType::{ApplicationData, Handshake};
    let Some((mut hand, early)) = ByHand::take_over(conn, &mut sock) else {
        return;
    };
    let ticket = new_session_ticket();
    let mut requests = Requests {
        buf: early,
        last_head: String::new(),
    };
    let mut batch = Vec::new();
    while requests.next_with(|| hand.open(&mut sock)) {
        for _ in 0..tickets {
            hand.seal(&mut batch, Handshake, &ticket);
        }
        hand.seal(&mut batch, ApplicationData, OK);
        if sock.write_all(&batch).is_err() {
            return;
        }
        batch.clear();
    }
}

/// A TLS 1.3 NewSessionTicket handshake message (RFC 8446 §4.6.1): an hour's lifetime, a
/// one-byte nonce, a 16-byte ticket, no extensions.
fn new_session_ticket() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&3600u32.to_be_bytes());
    body.extend_from_slice(&7u32.to_be_bytes());
    body.extend_from_slice(&[1, 0]);
    body.extend_from_slice(&16u16.to_be_bytes());
    body.extend_from_slice(&[0x5a; 16]);
    body.extend_from_slice(&0u16.to_be_bytes());
    let mut m = vec![4];
    m.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    m.extend(body);
    m
}

/// Reads HTTP/1.1 requests (head and a Content-Length body) from a byte stream.
#[derive(Default)]
pub struct Requests {
    buf: Vec<u8>,
    /// The head of the last request read.
    pub last_head: String,
}

impl Requests {
    /// Reads the next request; false at the end of the stream (or on an error).
    pub fn next(&mut self, r: &mut impl Read) -> bool {
        let mut tmp = [0u8; 16 * 1024];
        self.next_with(|| match r.read(&mut tmp) {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(tmp[..n].to_vec()),
        })
    }

    /// [`Requests::next`] over the pieces `more` gives (`None`: the end of the stream).
    fn next_with(&mut self, mut more: impl FnMut() -> Option<Vec<u8>>) -> bool {
        let mut fill = |buf: &mut Vec<u8>| more().map(|piece| buf.extend(piece)).is_some();
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let l = l.to_ascii_lowercase();
                        l.strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap_or(0))
                    })
                    .unwrap_or(0);
                let total = end + 4 + len;
                while self.buf.len() < total {
                    if !fill(&mut self.buf) {
                        return false;
                    }
                }
                self.buf.drain(..total);
                self.last_head = head;
                return true;
            }
            if !fill(&mut self.buf) {
                return false;
            }
        }
    }
}

// ---- helpers of tests/quick/tls.rs and tests/quick/tls_refused.rs ----

pub const LIMIT: Duration = Duration::from_secs(20);

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn n(j: &Value, path: &[&str]) -> u64 {
    let mut v = j;
    for p in path {
        v = &v[*p];
    }
    v.as_u64().unwrap_or_else(|| panic!("{path:?} in {j}"))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run that must end before any load: exit 2, exactly one line on stderr (returned).
pub fn setup_failure(args: &[&str]) -> String {
    let t = Instant::now();
    let o = volley(args, LIMIT);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("volley: "), "{err}");
    assert!(
        o.stdout.is_empty(),
        "nothing on stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

/// A CA, a leaf for `localhost` signed by it, and `ca.pem` in a temporary folder.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca: Ca,
    pub cacert: String,
}

pub fn pki() -> Pki {
    let dir = tempdir();
    let ca = Ca::new("volley test CA");
    let cacert = write(dir.path(), "ca.pem", &ca.pem());
    Pki { dir, ca, cacert }
}

pub fn trusted_server(p: &Pki, versions: Versions) -> TlsServer {
    let leaf = p.ca.server(&["localhost"]);
    serve(
        config(vec![leaf.der.clone()], leaf.key(), versions),
        After::Answer,
    )
}

pub fn client_auth_server(versions: Versions) -> (Pki, TlsServer, String, String) {
    let p = pki();
    let client_ca = Ca::new("client CA");
    let leaf = p.ca.server(&["localhost"]);
    let s = serve(
        config_client_auth(&leaf, &client_ca, versions),
        After::Answer,
    );
    let client = client_ca.client("volley");
    let cert = write(p.dir.path(), "client.pem", &client.pem);
    let key = write(p.dir.path(), "client.key", &client.key_pem);
    (p, s, cert, key)
}

pub fn check_https_run(j: &Value, version: &str, requests: u64) {
    assert_invariant(j);
    assert_eq!(
        n(j, &["requests", "completed"]),
        requests,
        "{}",
        j["requests"]
    );
    assert_eq!(n(j, &["requests", "errors"]), 0, "{}", j["errors"]);
    let t = &j["target"];
    assert_eq!(t["protocol"], "http/1.1", "{t}");
    assert_eq!(t["tls"]["version"], version, "{t}");
    assert_eq!(t["tls"]["alpn"], "http/1.1", "{t}");
    assert_eq!(t["tls"]["insecure"], false, "{t}");
    assert!(
        t["tls"]["cipher"].as_str().is_some_and(|c| !c.is_empty()),
        "{t}"
    );
    assert!(t["tls"]["handshakes"].as_u64().unwrap() >= 1, "{t}");
    assert!(
        j["tls_handshake_us"]["p50"].as_u64().is_some(),
        "{}",
        j["tls_handshake_us"]
    );
    assert!(
        j["connect_us"]["p50"].as_u64().is_some(),
        "{}",
        j["connect_us"]
    );
}

/// An HTTP/1.1 server on a Unix socket: answers 200 `.` to each request, keeping the heads.
pub fn unix_server(path: &Path) -> (Arc<AtomicU64>, Arc<Mutex<Vec<String>>>) {
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (c, h) = (Arc::clone(&count), Arc::clone(&heads));
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let (c, h) = (Arc::clone(&c), Arc::clone(&h));
            std::thread::spawn(move || {
                let mut r = Requests::default();
                while r.next(&mut s) {
                    c.fetch_add(1, Ordering::SeqCst);
                    h.lock().unwrap().push(r.last_head.clone());
                    if s.write_all(OK).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (count, heads)
}

pub fn assert_schema_valid(doc: &Value, what: &str) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/run.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let errs: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect();
    assert!(errs.is_empty(), "{what}: {}", errs.join("\n"));
}

pub fn assert_percentiles(block: &Value, what: &str) {
    for k in ["p50", "p90", "p99", "max"] {
        assert!(block[k].as_u64().is_some(), "{what}.{k}: {block}");
    }
}
