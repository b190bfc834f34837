//! An HTTP proxy between volley and the target (docs/contract.md, "Proxies"): where sockets
//! connect instead of the target, and how requests go through it — a tunnel opened with
//! `CONNECT` (https, HTTP/2, `--proxytunnel`), or plain HTTP/1.1 forwarding, where each request
//! names its absolute URL.

use volley_model::words;

/// `--proxy`, or the proxy the environment names for the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    /// Host name or address literal (without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The proxy's URL for output: its user information replaced by `<redacted>`.
    pub shown: String,
    /// The `Proxy-Authorization` value (`Basic …`) from the URL's user information.
    pub authorization: Option<String>,
    /// How requests go through it.
    pub mode: ProxyMode,
    /// Where the proxy came from.
    pub source: ProxySource,
}

words! {
    /// How requests go through a proxy.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ProxyMode {
        /// A `CONNECT` tunnel per connection; the connection then speaks to the target as if
        /// connected to it (TLS, HTTP/2 and HTTP/1.1 unchanged).
        Tunnel = "tunnel",
        /// HTTP/1.1 requests to the proxy in absolute form (`GET http://host/path`).
        Forward = "forward",
    }
}

words! {
    /// Where a run's proxy came from.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ProxySource {
        /// `--proxy`.
        Flag = "flag",
        /// `HTTPS_PROXY`, `HTTP_PROXY` or `ALL_PROXY` (either case).
        Env = "env",
    }
}

impl Proxy {
    /// The `CONNECT` request that opens a tunnel to `authority` (`host:port`, an IPv6 address
    /// in brackets).
    pub fn connect_request(&self, authority: &str) -> Vec<u8> {
        let mut head = format!(
            "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: volley/{}\r\n",
            env!("CARGO_PKG_VERSION")
        );
        if let Some(auth) = &self.authorization {
            head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
        }
        head.push_str("\r\n");
        head.into_bytes()
    }

    /// `host:port` of the proxy, an IPv6 address in brackets.
    pub fn authority(&self) -> String {
        authority(&self.host, self.port)
    }
}

/// `host:port`, an IPv6 address in brackets.
pub fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy(auth: Option<&str>) -> Proxy {
        Proxy {
            host: "::1".into(),
            port: 3128,
            shown: "http://[::1]:3128".into(),
            authorization: auth.map(str::to_string),
            mode: ProxyMode::Tunnel,
            source: ProxySource::Flag,
        }
    }

    #[test]
    fn connect_names_the_target_with_its_port_and_the_credentials() {
        let req = proxy(Some("Basic dTpw")).connect_request("example.org:443");
        let text = String::from_utf8(req).unwrap();
        assert!(text.starts_with("CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n"));
        assert!(text.contains("\r\nProxy-Authorization: Basic dTpw\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
        let plain = String::from_utf8(proxy(None).connect_request("a:1")).unwrap();
        assert!(!plain.contains("Proxy-Authorization"));
        assert_eq!(proxy(None).authority(), "[::1]:3128");
    }
}
