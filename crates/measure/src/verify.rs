//! `--verify`: before any load, each request (each of a requests file, or the one of the
//! flags) goes once, on a fresh connection of its own in the protocol the run speaks there
//! (HTTP/1.1, HTTP/2 with `--h2c` or when TLS chooses `h2`, HTTP/3 with `--http3`), and what
//! came back is shown — status, headers, the first bytes of the body —
//! with its checks. A request that fails a check, answers 400 or more (when no status is
//! expected), or gets no response stops the run before the load: nobody benchmarks a 404 page
//! by mistake (TechEmpower's verify step).

use std::sync::Arc;

use volley_config::RunConfig;
use volley_engine::check::{self, CheckState, Watch};
use volley_engine::h2::request as h2_request;
use volley_engine::h3::request as h3_request;
use volley_engine::probe::h3::{exchange_h3, H3Request};
use volley_engine::probe::session::{H2Answer, H2Request};
use volley_engine::probe::Probe;
use volley_engine::response::ResponseObserver;
use volley_engine::transport::Endpoint;
use volley_engine::Route;
use volley_model::units::{quoted_bytes, thousands};
use volley_plan::workload::{Checks, Context, REGEX_WINDOW_BYTES};
use volley_plan::{HttpVersion, LoadSpec, MixRequest, RequestTemplate};

#[path = "verify_journey.rs"]
mod journey;

/// Body bytes shown per response.
pub(crate) const SHOWN_BODY_BYTES: usize = 200;

/// What one request got.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The request's name, or `METHOD path`.
    pub label: String,
    /// Its request line.
    pub request_line: String,
    /// The response's status (0: none).
    pub status: u16,
    /// Its header fields, as sent.
    pub headers: Vec<(String, String)>,
    /// Its body's first bytes.
    pub body: Vec<u8>,
    /// Its body's length.
    pub body_bytes: u64,
    /// Its trailer fields (HTTP/2, HTTP/3: a gRPC call's status and metadata).
    pub trailers: Vec<(String, String)>,
    /// A gRPC reply's first message as JSON (or why it could not be decoded).
    pub decoded: Option<String>,
    /// The checks it failed (`status` also when no status was expected and it was 400 or more).
    pub failed: Vec<&'static str>,
    /// Why there was no response.
    pub error: Option<String>,
}

impl Verified {
    /// It passed.
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.failed.is_empty()
    }
}

/// Captures the head's fields and the body's first bytes, and feeds the checks.
struct Seen<'a> {
    watch: Watch<'a>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl ResponseObserver for Seen<'_> {
    fn header(&mut self, name: &str, value: &[u8]) {
        self.headers.push((
            name.to_string(),
            String::from_utf8_lossy(value).into_owned(),
        ));
        self.watch.header(name, value);
    }
    fn body(&mut self, bytes: &[u8]) {
        let room = SHOWN_BODY_BYTES.saturating_sub(self.body.len());
        self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.watch.body(bytes);
    }
}

/// Sends each request of `cfg` once along `route` and reports what came back.
pub fn verify(cfg: &RunConfig, route: &Route, seed: u64) -> Vec<Verified> {
    let load = &cfg.load;
    let https = load.tls.is_some();
    let mut out = Vec::new();
    match &load.workload {
        Some(w) if w.is_journey() => return journey::verify(route, load, seed, w),
        Some(w) => {
            let columns = w.data.as_ref().map_or(&[][..], |d| &d.columns[..]);
            for (k, e) in w.entries.iter().enumerate() {
                let r = MixRequest::compile(load, e);
                let ctx = Context {
                    index: k as u64,
                    conn: 0,
                    user: 0,
                    seed,
                    row: w.row(k as u64, seed),
                    vars: &[],
                    cookie: None,
                };
                let mut bytes = Vec::new();
                r.render_http1(&ctx, &mut bytes, &mut Vec::new());
                let body = r.body_for(&ctx);
                let block = h2_request::for_mix(&r, &ctx, https, body.len());
                let h3 = h3_request::frames_for_mix(&r, &ctx, &body);
                let label = match e.endpoint {
                    Some(n) => w.endpoints[n as usize].clone(),
                    None => format!(
                        "{} {}",
                        e.method,
                        e.path.text_with(columns, &w.journey.vars)
                    ),
                };
                let req = Lone {
                    label,
                    http1: &bytes,
                    h2: H2Request {
                        block: &block,
                        body,
                        head: r.head_request,
                    },
                    h3,
                };
                out.push(one(route, load, &req, &strict(&e.checks)).0);
            }
        }
        None => {
            let t = RequestTemplate::build(load);
            let block = h2_request::for_spec(load);
            let req = Lone {
                label: format!("{} {}", load.method, load.target.path),
                http1: &t.bytes,
                h2: H2Request {
                    block: &block,
                    body: Arc::clone(&load.body),
                    head: t.is_head(),
                },
                h3: h3_request::frames_for_spec(load).into(),
            };
            out.push(one(route, load, &req, &strict(&load.checks)).0);
        }
    }
    out
}

/// One request in both forms: HTTP/1.1 bytes and HTTP/2 parts (which one goes depends on
/// what the connection speaks).
pub(crate) struct Lone<'a> {
    pub(crate) label: String,
    pub(crate) http1: &'a [u8],
    pub(crate) h2: H2Request<'a>,
    /// Its HTTP/3 frames (`--http3`).
    pub(crate) h3: bytes::Bytes,
}

/// The checks as `--verify` applies them: without an expected status, 400 and more fail.
pub(crate) fn strict(c: &Checks) -> Checks {
    let mut c = c.clone();
    if c.status.is_empty() {
        c.status = vec![(100, 399)];
    }
    c
}

/// One request on a connection of its own, in the protocol the run speaks there, and what
/// its response offered a journey's captures and cookies (when its checks read them).
pub(crate) fn one(
    route: &Route,
    load: &LoadSpec,
    req: &Lone,
    checks: &Checks,
) -> (Verified, Option<CheckState>) {
    let mut v = Verified {
        label: req.label.clone(),
        request_line: String::new(),
        status: 0,
        headers: Vec::new(),
        body: Vec::new(),
        body_bytes: 0,
        trailers: Vec::new(),
        decoded: None,
        failed: Vec::new(),
        error: None,
    };
    let timeout = load.timeout;
    // A gRPC reply is kept whole (as far as checks read) to be decoded; its first bytes shown.
    let keep = if checks.reply.is_some() {
        REGEX_WINDOW_BYTES
    } else {
        SHOWN_BODY_BYTES
    };
    if let (Some(client), Endpoint::Tcp(addr)) = (&route.quic, &route.endpoint) {
        v.request_line = line_of(req.http1, "HTTP/3");
        let h3 = H3Request {
            frames: &req.h3,
            head: req.h2.head,
        };
        let answer = exchange_h3(client, *addr, &h3, Arc::new(checks.clone()), keep, timeout);
        return answer_of(v, checks, answer);
    }
    let (mut probe, h2) = match connect(route, load) {
        Ok(c) => c,
        Err(e) => {
            v.request_line = line_of(req.http1, "HTTP/1.1");
            v.error = Some(e);
            return (v, None);
        }
    };
    v.request_line = line_of(req.http1, if h2 { "HTTP/2" } else { "HTTP/1.1" });
    if h2 {
        let answer = probe.exchange_h2(&req.h2, Arc::new(checks.clone()), keep, timeout);
        return answer_of(v, checks, answer);
    }
    let mut state = CheckState::default();
    state.reset(checks);
    let mut seen = Seen {
        watch: Watch {
            state: &mut state,
            checks,
        },
        headers: Vec::new(),
        body: Vec::new(),
    };
    let result = probe.exchange(req.http1, req.h2.head, timeout, &mut seen);
    v.headers = std::mem::take(&mut seen.headers);
    v.body = std::mem::take(&mut seen.body);
    drop(seen);
    match result {
        Ok((status, body_bytes)) => {
            v.status = status;
            v.body_bytes = body_bytes;
            v.failed = state.failed(checks, status, body_bytes);
            (v, Some(state))
        }
        Err(e) => {
            v.error = Some(e);
            (v, None)
        }
    }
}

/// What a multiplexed protocol's exchange (HTTP/2's or HTTP/3's) showed of the response, and
/// what it offered a journey.
fn answer_of(
    mut v: Verified,
    checks: &Checks,
    answer: Result<H2Answer, String>,
) -> (Verified, Option<CheckState>) {
    match answer {
        Ok(a) => {
            v.status = a.status;
            v.body_bytes = a.body_bytes;
            v.failed = check::failed_with(checks, a.status, a.body_bytes, a.content_failed);
            v.headers = a
                .recorded
                .fields
                .into_iter()
                .map(|(n, val)| (n, String::from_utf8_lossy(&val).into_owned()))
                .collect();
            v.trailers = a
                .recorded
                .trailers
                .into_iter()
                .map(|(n, val)| (n, String::from_utf8_lossy(&val).into_owned()))
                .collect();
            if let Some(d) = &checks.reply {
                v.decoded = Some(match (d.0)(&a.recorded.body) {
                    Ok(json) => json.to_string(),
                    Err(e) => format!("not decoded: {e}"),
                });
            }
            v.body = a.recorded.body;
            v.body.truncate(SHOWN_BODY_BYTES);
            (v, a.offered.map(|b| *b))
        }
        Err(e) => {
            v.error = Some(e);
            (v, None)
        }
    }
}

/// The request line shown: HTTP/1.1's as written, with `version` in its place.
fn line_of(http1: &[u8], version: &str) -> String {
    let line = String::from_utf8_lossy(http1.split(|b| *b == b'\r').next().unwrap_or(&[]));
    match line.strip_suffix(" HTTP/1.1") {
        Some(start) => format!("{start} {version}"),
        None => line.into_owned(),
    }
}

/// A connection of the engine's blocking client to the run's target (TCP or Unix; through
/// the proxy's tunnel; over TLS for `https://`, offering by ALPN what the run offers), and
/// whether it speaks HTTP/2: `--h2c`, or TLS that chose `h2`.
pub(crate) fn connect(route: &Route, load: &LoadSpec) -> Result<(Probe, bool), String> {
    let timeout = load.timeout;
    let mut plain = match &route.endpoint {
        Endpoint::Tcp(a) => {
            Probe::tcp(*a, timeout, timeout).map_err(|e| format!("connect {a}: {e}"))?
        }
        Endpoint::Unix(p) => {
            Probe::unix(p, timeout).map_err(|e| format!("connect {}: {e}", p.display()))?
        }
        Endpoint::Mem(_) => return Err("in-memory connections are the fuzz target's".into()),
    };
    if let Some(t) = &route.tunnel {
        plain.tunnel(&t.request)?;
    }
    let Some(t) = &route.tls else {
        return Ok((plain, load.http == HttpVersion::H2c));
    };
    let mut probe = plain
        .tls(Arc::clone(&t.config), t.server_name.clone())
        .map_err(|e| format!("TLS: {e}"))?;
    probe.handshake().map_err(|e| format!("TLS: {e}"))?;
    let h2 = probe.alpn() == Some(&b"h2"[..]);
    if load.http == HttpVersion::H2 && !h2 {
        return Err("TLS: the server did not choose h2 by ALPN (--http2)".into());
    }
    Ok((probe, h2))
}

/// `text` cut to about `max` bytes (on a character boundary), with `…` when cut.
fn shortened(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// What `--verify` prints: each request, what came back, and its checks.
pub fn report(vs: &[Verified]) -> String {
    let mut o = String::new();
    for v in vs {
        o += &format!("verify {}: {}\n", v.label, v.request_line);
        match &v.error {
            Some(e) if e.starts_with("not sent") => o += &format!("  {e}\n"),
            Some(e) => o += &format!("  no response: {e}\n"),
            None => {
                o += &format!("  {} · {} body bytes\n", v.status, thousands(v.body_bytes));
                for (n, val) in &v.headers {
                    o += &format!("  {n}: {val}\n");
                }
                if !v.body.is_empty() {
                    o += &format!("  body: {}\n", quoted_bytes(&v.body, SHOWN_BODY_BYTES));
                }
                if let Some(json) = &v.decoded {
                    o += &format!("  reply: {}\n", shortened(json, 2 * SHOWN_BODY_BYTES));
                }
                for (n, val) in &v.trailers {
                    o += &format!("  trailer {n}: {val}\n");
                }
                o += &if v.failed.is_empty() {
                    "  checks passed\n".to_string()
                } else {
                    format!("  FAILED: {}\n", v.failed.join(", "))
                };
            }
        }
    }
    o
}
