//! `--verify`: before any load, each request (each of a requests file, or the one of the
//! flags) goes once, on a fresh HTTP/1.1 connection of its own (over TLS for `https://`, ALPN
//! `http/1.1`), and what came back is shown — status, headers, the first bytes of the body —
//! with its checks. A request that fails a check, answers 400 or more (when no status is
//! expected), or gets no response stops the run before the load: nobody benchmarks a 404 page
//! by mistake (TechEmpower's verify step).

use std::sync::Arc;
use std::time::Duration;

use volley_config::RunConfig;
use volley_engine::check::{CheckState, Watch};
use volley_engine::probe::Probe;
use volley_engine::response::ResponseObserver;
use volley_engine::transport::Endpoint;
use volley_engine::Route;
use volley_model::units::{quoted_bytes, thousands};
use volley_plan::workload::{Checks, Context};
use volley_plan::{MixRequest, RequestTemplate};

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
    let mut out = Vec::new();
    match &load.workload {
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
                };
                let mut bytes = Vec::new();
                r.render_http1(&ctx, &mut bytes, &mut Vec::new());
                let label = match e.endpoint {
                    Some(n) => w.endpoints[n as usize].clone(),
                    None => format!("{} {}", e.method, e.path.text(columns)),
                };
                let checks = strict(&e.checks);
                out.push(one(
                    route,
                    label,
                    &bytes,
                    &checks,
                    r.head_request,
                    load.timeout,
                ));
            }
        }
        None => {
            let t = RequestTemplate::build(load);
            let label = format!("{} {}", load.method, load.target.path);
            let checks = strict(&load.checks);
            out.push(one(
                route,
                label,
                &t.bytes,
                &checks,
                t.is_head(),
                load.timeout,
            ));
        }
    }
    out
}

/// The checks as `--verify` applies them: without an expected status, 400 and more fail.
fn strict(c: &Checks) -> Checks {
    let mut c = c.clone();
    if c.status.is_empty() {
        c.status = vec![(100, 399)];
    }
    c
}

/// One request on a connection of its own.
fn one(
    route: &Route,
    label: String,
    bytes: &[u8],
    checks: &Checks,
    head: bool,
    timeout: Duration,
) -> Verified {
    let request_line =
        String::from_utf8_lossy(bytes.split(|b| *b == b'\r').next().unwrap_or(&[])).into_owned();
    let mut v = Verified {
        label,
        request_line,
        status: 0,
        headers: Vec::new(),
        body: Vec::new(),
        body_bytes: 0,
        failed: Vec::new(),
        error: None,
    };
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
    let result = exchange(route, bytes, head, timeout, &mut seen);
    v.headers = std::mem::take(&mut seen.headers);
    v.body = std::mem::take(&mut seen.body);
    drop(seen);
    match result {
        Ok((status, body_bytes)) => {
            v.status = status;
            v.body_bytes = body_bytes;
            v.failed = state.failed(checks, status, body_bytes);
        }
        Err(e) => v.error = Some(e),
    }
    v
}

/// A connection of the engine's blocking client to the run's target (TCP or Unix; through
/// the proxy's tunnel; over TLS for `https://`, offering only HTTP/1.1 by ALPN).
fn connect(route: &Route, timeout: Duration) -> Result<Probe, String> {
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
    match &route.tls {
        None => Ok(plain),
        Some(t) => {
            let mut cfg = (*t.config).clone();
            cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
            plain
                .tls(Arc::new(cfg), t.server_name.clone())
                .map_err(|e| format!("TLS: {e}"))
        }
    }
}

/// Writes `bytes` and reads one response: its status and body length.
fn exchange(
    route: &Route,
    bytes: &[u8],
    head: bool,
    timeout: Duration,
    seen: &mut Seen,
) -> Result<(u16, u64), String> {
    connect(route, timeout)?.exchange(bytes, head, timeout, seen)
}

/// What `--verify` prints: each request, what came back, and its checks.
pub fn report(vs: &[Verified]) -> String {
    let mut o = String::new();
    for v in vs {
        o += &format!("verify {}: {}\n", v.label, v.request_line);
        match &v.error {
            Some(e) => o += &format!("  no response: {e}\n"),
            None => {
                o += &format!("  {} · {} body bytes\n", v.status, thousands(v.body_bytes));
                for (n, val) in &v.headers {
                    o += &format!("  {n}: {val}\n");
                }
                if !v.body.is_empty() {
                    o += &format!("  body: {}\n", quoted_bytes(&v.body, SHOWN_BODY_BYTES));
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
