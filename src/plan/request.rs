//! Request templates: the bytes of a request are serialized once and written as-is.

use super::LoadSpec;

/// One pre-serialized request.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    /// Full request bytes (head + body), shared: a 100 MiB body exists once per run, not once
    /// per copy of the template.
    pub bytes: std::sync::Arc<[u8]>,
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
        let mut head = format!("{} {} HTTP/1.1\r\n", cfg.method, cfg.target.path);
        for (name, value) in Self::header_fields(cfg) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        // Collected straight into the shared allocation (the iterator's exact length lets the
        // Arc allocate once): a Vec first would briefly hold the body a second time.
        let bytes: std::sync::Arc<[u8]> = head.bytes().chain(cfg.body.iter().copied()).collect();
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
