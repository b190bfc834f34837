//! Request templates: the bytes of a request are serialized once and written as-is; a
//! workload's requests ([`MixRequest`]) are compiled once into literal bytes and placeholders.

use std::sync::Arc;

use super::workload::{Body, Context, Entry, Part, Template, Workload};
use super::LoadSpec;

/// One pre-serialized request.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    /// Full request bytes (head + body), shared: a 100 MiB body exists once per run, not once
    /// per copy of the template.
    pub bytes: Arc<[u8]>,
    /// The method (HEAD responses carry no body).
    pub method: String,
    /// May be resent after a silent close (RFC 9110 idempotent methods).
    pub idempotent: bool,
    /// The request carries `Connection: close`: the server closing afterwards is expected.
    pub asks_close: bool,
}

impl RequestTemplate {
    /// Serializes the request for `cfg`. Default headers (`Host`, `User-Agent`, `Content-Length`
    /// with a body, `Connection: close` without keep-alive) give way to a user `-H` of the same name.
    pub fn build(cfg: &LoadSpec) -> Self {
        let origin = cfg.target.forward_origin().unwrap_or_default();
        let mut head = format!("{} {origin}{} HTTP/1.1\r\n", cfg.method, cfg.target.path);
        for (name, value) in Self::header_fields(cfg) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        // Collected straight into the shared allocation (the iterator's exact length lets the
        // Arc allocate once): a Vec first would briefly hold the body a second time.
        let bytes: Arc<[u8]> = head.bytes().chain(cfg.body.iter().copied()).collect();
        let asks_close = !cfg.keepalive
            || cfg.headers.iter().any(|(n, v)| {
                n.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close")
            });
        let m = cfg.method.as_str();
        RequestTemplate {
            bytes,
            method: cfg.method.clone(),
            idempotent: matches!(m, "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"),
            asks_close,
        }
    }

    /// The request's header fields in the order they are sent: the defaults (`Host`,
    /// `User-Agent`, `Content-Length` with a body, `Connection: close` without keep-alive) a
    /// user `-H` of the same name does not replace, then the user's. HTTP/2 sends the same
    /// fields (`Host` becomes `:authority`, connection-specific ones are left out).
    pub fn header_fields(cfg: &LoadSpec) -> Vec<(String, String)> {
        let user_has = |name: &str| {
            cfg.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let mut defaults: Vec<(&str, String)> = vec![
            ("Host", cfg.target.host_header.clone()),
            (
                "User-Agent",
                format!("volley/{}", env!("CARGO_PKG_VERSION")),
            ),
        ];
        if !cfg.body.is_empty() || cfg.method == "POST" || cfg.method == "PUT" {
            defaults.push(("Content-Length", cfg.body.len().to_string()));
        }
        if !cfg.keepalive {
            defaults.push(("Connection", "close".to_string()));
        }
        if let Some(auth) = cfg.target.forward_authorization() {
            defaults.push(("Proxy-Authorization", auth.to_string()));
        }
        let mut fields: Vec<(String, String)> = defaults
            .into_iter()
            .filter(|(n, _)| !user_has(n))
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        fields.extend(cfg.headers.iter().cloned());
        fields
    }

    /// True for HEAD: responses have a head only.
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }
}

/// One request of a workload, compiled for the wire once: its whole HTTP/1.1 bytes when
/// nothing in it is templated (a copy per request), else its head and body templates; and what
/// kind of request it is. The HTTP/2 form is the same fields (`h2_block` when fixed).
#[derive(Debug, Clone)]
pub struct MixRequest {
    /// The whole HTTP/1.1 request when no part is templated.
    pub fixed: Option<Arc<[u8]>>,
    /// Request line and header lines (no `Content-Length`, no blank line).
    pub head: Template,
    /// Its body.
    pub body: Body,
    /// It sends `Content-Length` (a body, or POST/PUT).
    pub length: bool,
    /// The method.
    pub method: String,
    /// Path template (HTTP/2's `:path`).
    pub path: Template,
    /// Header fields as sent, values templated (HTTP/2 form; `host` is `:authority`).
    pub fields: Vec<(String, Template)>,
    /// HTTP/2 header block when nothing is templated.
    pub h2_block: Option<Arc<[u8]>>,
    /// The body's bytes when it is not templated (HTTP/2 DATA frames).
    pub body_bytes: Arc<[u8]>,
    /// HEAD: responses have no body.
    pub head_request: bool,
    /// May be resent after a silent close (RFC 9110 idempotent methods).
    pub idempotent: bool,
    /// Asks the server to close (`Connection: close`, `--no-keepalive`).
    pub asks_close: bool,
    /// Its endpoint (named requests).
    pub endpoint: Option<u16>,
    /// What its responses must be (`None`: no check).
    pub checks: Option<Arc<super::workload::Checks>>,
    /// It has a `Cookie` header of its own (`-H` or the file's): a user's jar is not sent with it.
    pub own_cookie: bool,
}

impl MixRequest {
    /// Compiles `entry` of a workload for `cfg`: the default headers as for a single request
    /// (`Host`, `User-Agent`, `Content-Length`, `Connection: close` without keep-alive), then
    /// `-H`, then the entry's own headers; a later header replaces an earlier one of the same
    /// name.
    pub fn compile(cfg: &LoadSpec, entry: &Entry) -> Self {
        let has_body = !matches!(entry.body, Body::None);
        let length = has_body || entry.method == "POST" || entry.method == "PUT";
        let mut fields: Vec<(String, Template)> = Vec::new();
        let mut set = |name: &str, value: Template| {
            fields.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            fields.push((name.to_string(), value));
        };
        set("Host", Template::literal(cfg.target.host_header.clone()));
        set(
            "User-Agent",
            Template::literal(format!("volley/{}", env!("CARGO_PKG_VERSION"))),
        );
        if !cfg.keepalive {
            set("Connection", Template::literal("close"));
        }
        if let Some(auth) = cfg.target.forward_authorization() {
            set("Proxy-Authorization", Template::literal(auth));
        }
        for (n, v) in &cfg.headers {
            set(n, Template::literal(v.clone()));
        }
        for (n, v) in &entry.headers {
            set(n, v.clone());
        }
        // A Content-Length given by hand is the user's; otherwise volley counts the body.
        let user_length = fields
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-length"));
        let length = length && !user_length;
        let mut head = Template::default();
        let origin = cfg.target.forward_origin().unwrap_or_default();
        head.parts
            .push(Part::Lit(format!("{} {origin}", entry.method).into_bytes()));
        head.parts.extend(entry.path.parts.iter().cloned());
        head.parts.push(Part::Lit(b" HTTP/1.1\r\n".to_vec()));
        for (n, v) in &fields {
            head.parts.push(Part::Lit(format!("{n}: ").into_bytes()));
            head.parts.extend(v.parts.iter().cloned());
            head.parts.push(Part::Lit(b"\r\n".to_vec()));
        }
        let head = merge_literals(head);
        let body_bytes: Arc<[u8]> = match &entry.body {
            Body::Bytes(b) => Arc::clone(b),
            _ => Arc::from(&[][..]),
        };
        let asks_close = !cfg.keepalive
            || fields.iter().any(|(n, v)| {
                n.eq_ignore_ascii_case("connection")
                    && v.literal_bytes()
                        .is_some_and(|b| b.eq_ignore_ascii_case(b"close"))
            });
        let m = entry.method.as_str();
        let own_cookie = fields.iter().any(|(n, _)| n.eq_ignore_ascii_case("cookie"));
        let mut r = MixRequest {
            fixed: None,
            head,
            body: entry.body.clone(),
            length,
            method: entry.method.clone(),
            path: entry.path.clone(),
            fields,
            h2_block: None,
            body_bytes,
            head_request: m == "HEAD",
            idempotent: matches!(m, "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"),
            asks_close,
            endpoint: entry.endpoint,
            checks: (!entry.checks.is_empty()).then(|| Arc::new(entry.checks.clone())),
            own_cookie,
        };
        let templated_body = matches!(r.body, Body::Template(ref t) if !t.is_literal());
        // A jar's cookies go into the head, so a journey with cookies renders every request.
        let jar = cfg.workload.as_ref().is_some_and(|w| w.journey.cookies);
        if r.head.is_literal() && !templated_body && (!jar || r.own_cookie) {
            let ctx = Context {
                index: 0,
                conn: 0,
                user: 0,
                seed: 0,
                row: None,
                vars: &[],
                cookie: None,
            };
            let mut out = Vec::new();
            r.render_http1(&ctx, &mut out, &mut Vec::new());
            r.fixed = Some(out.into());
        }
        r
    }

    /// Appends the whole HTTP/1.1 request for `ctx` to `out` (`scratch` holds a templated
    /// body while its length is counted).
    pub fn render_http1(&self, ctx: &Context, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
        if let Some(f) = &self.fixed {
            out.extend_from_slice(f);
            return;
        }
        scratch.clear();
        let body: &[u8] = match &self.body {
            Body::None => &[],
            Body::Bytes(b) => b,
            Body::Template(t) => {
                t.render(ctx, scratch);
                scratch
            }
        };
        self.head.render(ctx, out);
        if let Some(cookie) = ctx.cookie.filter(|_| !self.own_cookie) {
            out.extend_from_slice(b"Cookie: ");
            out.extend_from_slice(cookie);
            out.extend_from_slice(b"\r\n");
        }
        if self.length {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(body.len().to_string().as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
    }

    /// Appends the request's body for `ctx` to `out` (a WebSocket message).
    pub fn render_body(&self, ctx: &Context, out: &mut Vec<u8>) {
        match &self.body {
            Body::None => {}
            Body::Bytes(b) => out.extend_from_slice(b),
            Body::Template(t) => t.render(ctx, out),
        }
    }

    /// The request's body for `ctx` (HTTP/2 DATA frames).
    pub fn body_for(&self, ctx: &Context) -> Arc<[u8]> {
        match &self.body {
            Body::Template(t) => {
                let mut b = Vec::new();
                t.render(ctx, &mut b);
                b.into()
            }
            _ => Arc::clone(&self.body_bytes),
        }
    }
}

/// Adjacent literal parts as one (fewer copies per request).
fn merge_literals(t: Template) -> Template {
    let mut parts: Vec<Part> = Vec::with_capacity(t.parts.len());
    for p in t.parts {
        match (parts.last_mut(), p) {
            (Some(Part::Lit(a)), Part::Lit(b)) => a.extend_from_slice(&b),
            (_, p) => parts.push(p),
        }
    }
    Template { parts }
}

/// A workload compiled for the wire, with the run's seed.
#[derive(Debug, Clone)]
pub struct Mix {
    /// The workload (which request goes next, data rows).
    pub workload: Arc<Workload>,
    /// Its entries compiled, in the same order.
    pub requests: Vec<MixRequest>,
    /// The run's seed (`{rand}`, `{uuid}`, random rows).
    pub seed: u64,
}

impl Mix {
    /// Compiles `cfg`'s workload, when it has one.
    pub fn of(cfg: &LoadSpec, seed: u64) -> Option<Mix> {
        let w = cfg.workload.as_ref()?;
        Some(Mix {
            workload: Arc::clone(w),
            requests: w
                .entries
                .iter()
                .map(|e| MixRequest::compile(cfg, e))
                .collect(),
            seed,
        })
    }
}
