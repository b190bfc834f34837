//! The URL argument: `http[s]://host[:port]/path?query` (or a WebSocket's `ws[s]://`), checked
//! and split into a [`Target`].

use super::{ConfigError, Flag};
use volley_plan::{Scheme, Target};

/// Parses an `http://` or `https://` URL (no Unix socket: `--unix-socket` is added by the
/// caller).
pub fn parse_url(url: &str) -> Result<Target, ConfigError> {
    let bad = |m: String| ConfigError::flag(Flag::Url, m);
    // Messages quote the URL without its user information (a password).
    let shown = volley_model::result::redact::url(url);
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        bad(format!(
            "`{shown}` is not a URL (expected http://host[:port]/path)"
        ))
    })?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        "ws" => Scheme::Ws,
        "wss" => Scheme::Wss,
        other => {
            return Err(bad(format!(
                "`{shown}`: unsupported scheme `{other}` (use http://, https://, or ws:// and wss:// for WebSocket)"
            )))
        }
    };
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    if authority.contains('@') {
        return Err(bad(format!(
            "`{shown}`: user information in URLs is not supported (send credentials with -H 'Authorization: …')"
        )));
    }
    let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
        let end = stripped
            .find(']')
            .ok_or_else(|| bad(format!("`{shown}`: unterminated IPv6 address")))?;
        let host = &stripped[..end];
        let after = &stripped[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => {
                return Err(bad(format!(
                    "`{shown}`: unexpected `{after}` after the address"
                )))
            }
        };
        (host.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad(format!("`{shown}` has no host")));
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(format!("`{shown}`: the host contains whitespace")));
    }
    let port = match port {
        None | Some("") => scheme.default_port(),
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad(format!("`{shown}`: `{p}` is not a port (1-65535)")))?,
    };
    let mut path = tail.split('#').next().unwrap_or("").to_string();
    if path.is_empty() || path.starts_with('?') {
        path.insert(0, '/');
    }
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad(format!(
            "`{shown}`: the path contains spaces or control characters (percent-encode them)"
        )));
    }
    let host_literal = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.clone()
    };
    let host_header = if port == scheme.default_port() {
        host_literal
    } else {
        format!("{host_literal}:{port}")
    };
    Ok(Target {
        url: url.to_string(),
        host,
        port,
        path,
        host_header,
        scheme,
        unix_socket: None,
        proxy: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("http://127.0.0.1:8080/a?b=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a?b=1")
        );
        assert_eq!(t.host_header, "127.0.0.1:8080");
        let t = parse_url("http://localhost").unwrap();
        assert_eq!(
            (t.port, t.path.as_str(), t.host_header.as_str()),
            (80, "/", "localhost")
        );
        let t = parse_url("http://[::1]:9000?x").unwrap();
        assert_eq!(
            (t.host.as_str(), t.path.as_str(), t.host_header.as_str()),
            ("::1", "/?x", "[::1]:9000")
        );
        let t = parse_url("https://example.com/x").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.host_header.as_str()),
            (Scheme::Https, 443, "example.com")
        );
        let t = parse_url("HTTPS://example.com:8443/").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.host_header.as_str()),
            (Scheme::Https, 8443, "example.com:8443")
        );
        assert_eq!(parse_url("http://h/").unwrap().scheme, Scheme::Http);
        let t = parse_url("wss://h/ws").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.path.as_str()),
            (Scheme::Wss, 443, "/ws")
        );
        assert_eq!(parse_url("WS://h:8080").unwrap().scheme, Scheme::Ws);
        assert!(parse_url("ftp://x/")
            .unwrap_err()
            .to_string()
            .contains("use http://, https://, or ws:// and wss://"));
        assert!(parse_url("127.0.0.1:8080").is_err());
        assert!(parse_url("http://:80/").is_err());
        assert!(parse_url("http://h:99999/").is_err());
        assert!(parse_url("http://h:0/").is_err());
        assert!(parse_url("http://h/a b").is_err());
    }
}
