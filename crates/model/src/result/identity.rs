//! Load identity: which runs are repetitions of one test. A run's `load_id` is a hash of its
//! normalised load — what was sent and how — and never of where it went (host, port, address):
//! the harness gives every suite cell a new port, and v1 and v2 of a server must share an id.
//! `report`, `compare` and `merge` treat runs as repetitions only when their ids are equal
//! (docs/contract.md, "Load identity").

use sha2::{Digest, Sha256};

use super::{RunResult, DEFAULT_H2_WINDOW};

/// The normalised load as ordered `name = value` fields; its hash is the `load_id`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadKey {
    fields: Vec<(&'static str, String)>,
}

impl LoadKey {
    /// An empty key.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field (fields of the first version: always part of the hash).
    pub fn push(&mut self, name: &'static str, value: impl ToString) -> &mut Self {
        self.fields.push((name, value.to_string()));
        self
    }

    /// Adds a field added after the first version: only when it is not at its default, so
    /// the ids of older runs stay valid.
    pub fn push_unless(
        &mut self,
        name: &'static str,
        value: impl ToString,
        default: &str,
    ) -> &mut Self {
        let value = value.to_string();
        if value != default {
            self.fields.push((name, value));
        }
        self
    }

    /// The fields in order.
    pub fn fields(&self) -> &[(&'static str, String)] {
        &self.fields
    }

    /// The value of field `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `load_id`: the first 16 hex digits of the SHA-256 of the fields, one
    /// `name=value` line each (a value's newlines escaped so that lines cannot run together).
    pub fn id(&self) -> String {
        let mut h = Sha256::new();
        for (name, value) in &self.fields {
            h.update(name.as_bytes());
            h.update(b"=");
            h.update(value.replace('\\', "\\\\").replace('\n', "\\n").as_bytes());
            h.update(b"\n");
        }
        h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The key as far as a RunResult's recorded keys tell it: the fields a person reads
    /// (labels of different loads) and the id of results written before `load_id` existed
    /// (their headers and body content are not recorded, only the body's size).
    pub fn of_result(r: &RunResult) -> Self {
        let (scheme, path) = scheme_and_path(&r.target.url);
        let scheme = scheme.to_ascii_lowercase();
        let l = &r.load;
        let mut k = LoadKey::new();
        k.push("scheme", scheme)
            .push("path", path)
            .push("method", &r.target.method)
            .push("body_bytes", r.target.body_bytes)
            .push("mode", l.mode)
            .push("rate_rps", opt(l.rate_rps))
            .push("arrivals", opt(l.arrivals))
            .push("connections", l.connections)
            .push("users", opt(l.users))
            .push("spawn_rate", opt(l.spawn_rate))
            .push(
                "stages",
                l.stages.as_ref().map_or(String::new(), |s| {
                    s.iter()
                        .map(|s| format!("{}s:{}", s.duration_s, s.users))
                        .collect::<Vec<_>>()
                        .join(",")
                }),
            )
            .push("think_time_s", l.think_time_s)
            .push("pipeline", l.pipeline)
            .push_unless("streams", l.streams, "1")
            .push_unless(
                "protocol",
                r.target.protocol.as_deref().unwrap_or("http/1.1"),
                "http/1.1",
            )
            // A WebSocket upgraded from HTTP/1.1 or carried on an HTTP/2 stream.
            .push_unless(
                "websocket_over",
                r.target
                    .websocket
                    .as_ref()
                    .map_or("http/1.1", |w| w.over.as_str()),
                "http/1.1",
            )
            .push_unless(
                "h2_window",
                r.target
                    .h2
                    .as_ref()
                    .map_or(u64::from(DEFAULT_H2_WINDOW), |h| h.window),
                &DEFAULT_H2_WINDOW.to_string(),
            )
            .push("duration_s", opt(l.duration_s))
            .push("requests", opt(l.requests))
            .push("warmup_s", l.warmup_s)
            .push("keepalive", l.keepalive)
            .push("timeout_s", l.timeout_s)
            .push_unless("max_connections", opt(l.max_connections), "")
            .push_unless(
                "tls_resume",
                r.target.tls.as_ref().is_none_or(|t| t.resumption),
                "true",
            )
            .push_unless(
                "zero_rtt",
                r.target.quic.as_ref().is_some_and(|q| q.zero_rtt.is_some()),
                "false",
            )
            // Mutual TLS costs the server a certificate check per full handshake.
            .push_unless(
                "client_cert",
                r.target.tls.as_ref().is_some_and(|t| t.client_cert),
                "false",
            );
        k
    }
}

/// The run's `load_id`, or for a result written before it existed, the id of what its keys
/// record.
pub fn load_id(r: &RunResult) -> String {
    r.load_id
        .clone()
        .unwrap_or_else(|| LoadKey::of_result(r).id())
}

/// For each load in `keys`, a label naming only the fields in which the loads differ, e.g.
/// `path /delay?ms=1, mode open, connections 10`; empty when all are alike.
pub fn labels(keys: &[LoadKey]) -> Vec<String> {
    let Some(first) = keys.first() else {
        return Vec::new();
    };
    let differing: Vec<&'static str> = first
        .fields
        .iter()
        .map(|(n, _)| *n)
        .chain(keys.iter().flat_map(|k| k.fields.iter().map(|(n, _)| *n)))
        .fold(Vec::new(), |mut names, n| {
            if !names.contains(&n) && keys.iter().any(|k| k.get(n) != first.get(n)) {
                names.push(n);
            }
            names
        });
    keys.iter()
        .map(|k| {
            differing
                .iter()
                .filter_map(|n| k.get(n).filter(|v| !v.is_empty()).map(|v| spell(n, v)))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect()
}

/// A field as people who ran it would write it: `-c 8`, `-d 3s`, `open loop`.
fn spell(name: &str, value: &str) -> String {
    let flag = match name {
        "path" | "method" | "arrivals" | "scheme" => return value.to_string(),
        "mode" if value == "ramp" => return "users".to_string(),
        "mode" => return format!("{value} loop"),
        "keepalive" if value == "true" => return "keep-alive".to_string(),
        "keepalive" => return "no keep-alive".to_string(),
        "headers" => return "headers".to_string(),
        "tls_resume" => return "--no-tls-resume".to_string(),
        "client_cert" => return "--cert".to_string(),
        "zero_rtt" => return "--0rtt".to_string(),
        "body_sha256" => return format!("body {}…", &value[..value.len().min(8)]),
        "requests_sha256" => return format!("requests file {}…", &value[..value.len().min(8)]),
        "body_bytes" => return format!("body {value} B"),
        "duration_s" => return format!("-d {value}s"),
        "warmup_s" => return format!("--warmup {value}s"),
        "timeout_s" => return format!("--timeout {value}s"),
        "think_time_s" => return format!("--think-time {value}s"),
        "rate_rps" => "-R",
        "connections" => "-c",
        "requests" => "-n",
        "pipeline" => "--pipeline",
        "streams" => "--streams",
        "h2_window" => "--h2-window",
        "protocol" => "--http1.1/--http2/--h2c",
        "websocket_over" => return format!("WebSocket over {value}"),
        "users" => "--users",
        "spawn_rate" => "--spawn-rate",
        "stages" => "--stages",
        "max_connections" => "--max-connections",
        other => other,
    };
    format!("{flag} {value}")
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// Scheme and path-with-query of a URL as given (`/` when it has no path), without the
/// `#fragment`, which is never sent.
pub fn scheme_and_path(url: &str) -> (&str, &str) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let rest = rest.split('#').next().unwrap_or("");
    let path = rest.find(['/', '?']).map_or("/", |i| &rest[i..]);
    (scheme, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_stable_and_depends_on_every_field() {
        let mut a = LoadKey::new();
        a.push("path", "/").push("connections", 10);
        // Pinned: a change of the hashing would split history into unrelated loads.
        assert_eq!(a.id(), "81ec32e71e5301f5");
        let mut b = a.clone();
        b.push_unless("streams", 1, "1");
        assert_eq!(a.id(), b.id(), "a later field at its default keeps the id");
        b.push_unless("streams", 8, "1");
        assert_ne!(a.id(), b.id());
        let mut c = LoadKey::new();
        c.push("path", "/\nconnections=10");
        assert_ne!(c.id(), a.id(), "values cannot forge other fields");
    }

    #[test]
    fn labels_name_what_differs() {
        let key = |path: &str, mode: &str, c: u64| {
            let mut k = LoadKey::new();
            k.push("path", path)
                .push("mode", mode)
                .push("connections", c);
            k
        };
        let keys = [
            key("/", "closed", 10),
            key("/", "open", 10),
            key("/d", "open", 5),
        ];
        assert_eq!(
            labels(&keys),
            [
                "/, closed loop, -c 10",
                "/, open loop, -c 10",
                "/d, open loop, -c 5"
            ]
        );
        assert_eq!(
            labels(&[key("/", "open", 1), key("/", "open", 1)]),
            ["", ""]
        );
    }

    #[test]
    fn paths_come_from_the_url_without_host_or_port() {
        assert_eq!(
            scheme_and_path("http://127.0.0.1:8080/a?b=1"),
            ("http", "/a?b=1")
        );
        assert_eq!(scheme_and_path("http://[::1]:80"), ("http", "/"));
        assert_eq!(scheme_and_path("http://h?x"), ("http", "?x"));
        assert_eq!(scheme_and_path("http://h/a#frag"), ("http", "/a"));
        assert_eq!(scheme_and_path("http://h#frag"), ("http", "/"));
    }
}
