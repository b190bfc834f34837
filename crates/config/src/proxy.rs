//! `--proxy`, `--noproxy`, `--proxytunnel` and the proxy environment, as curl reads them
//! (docs/contract.md, "Proxies"): which proxy a target goes through, if any, and how.

use base64::Engine as _;

use super::{ConfigError, Flag, RunFlags};
use volley_model::result::redact;
use volley_plan::proxy::authority;
use volley_plan::{HttpVersion, Proxy, ProxyMode, ProxySource, Scheme, Target};

/// A proxy URL without a port means this one (curl's default).
pub const DEFAULT_PROXY_PORT: u16 = 1080;

/// The proxy variables of the environment `volley run` started in (suites and programs that
/// build flags themselves start from none: the harness's servers are never proxied).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    /// `http_proxy` (curl reads only the lower-case one; `HTTP_PROXY` too here, as Go does).
    pub http: Option<(String, String)>,
    /// `https_proxy` or `HTTPS_PROXY`.
    pub https: Option<(String, String)>,
    /// `all_proxy` or `ALL_PROXY`.
    pub all: Option<(String, String)>,
    /// `no_proxy` or `NO_PROXY`.
    pub no_proxy: Option<String>,
}

impl ProxyEnv {
    /// Reads the process environment (the lower-case spelling first); empty values count as
    /// unset.
    pub fn from_process() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the variables through `get`: (variable name, value).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let var = |lower: &'static str, upper: &'static str| {
            [lower, upper].into_iter().find_map(|n| {
                get(n)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (n.to_string(), v))
            })
        };
        ProxyEnv {
            http: var("http_proxy", "HTTP_PROXY"),
            https: var("https_proxy", "HTTPS_PROXY"),
            all: var("all_proxy", "ALL_PROXY"),
            no_proxy: var("no_proxy", "NO_PROXY").map(|(_, v)| v),
        }
    }

    /// The variable (name, value) naming the proxy for a URL of `scheme`.
    fn for_scheme(&self, scheme: Scheme) -> Option<&(String, String)> {
        match scheme {
            Scheme::Http | Scheme::Ws => self.http.as_ref(),
            Scheme::Https | Scheme::Wss => self.https.as_ref(),
        }
        .or(self.all.as_ref())
    }
}

/// The proxy `target` goes through, or `None`: `--proxy`, else the environment's for its
/// scheme — never for a loopback target, nor for a host `--noproxy` (or `NO_PROXY` without it)
/// lists.
pub(super) fn proxy_for(
    a: &RunFlags,
    target: &Target,
    http: HttpVersion,
) -> Result<Option<Proxy>, ConfigError> {
    if a.proxy.is_some() && a.unix_socket.is_some() {
        return Err(ConfigError::conflict(
            Flag::Proxy,
            &[Flag::UnixSocket],
            "cannot be used with --unix-socket (a Unix socket is not reached through a proxy)",
        ));
    }
    let (text, source, var) = match (&a.proxy, a.proxy_env.for_scheme(target.scheme)) {
        // curl's `-x ""`: no proxy at all, the environment's neither.
        (Some(p), _) if p.is_empty() => return Ok(None),
        (Some(p), _) => (p.clone(), ProxySource::Flag, ""),
        (None, Some((name, value)))
            if target.unix_socket.is_none() && !is_loopback(&target.host) =>
        {
            (value.clone(), ProxySource::Env, name.as_str())
        }
        _ => return Ok(None),
    };
    let skip = a.noproxy.as_deref().or(a.proxy_env.no_proxy.as_deref());
    if skip.is_some_and(|list| listed(list, &target.host)) {
        return Ok(None);
    }
    // A WebSocket goes through a tunnel too: its upgrade hands the connection over.
    let tunnel = target.scheme != Scheme::Http || http == HttpVersion::H2c || a.proxytunnel;
    let mode = if tunnel {
        ProxyMode::Tunnel
    } else {
        ProxyMode::Forward
    };
    parse_proxy(&text, mode, source)
        .map(Some)
        .map_err(|message| match source {
            ProxySource::Flag => ConfigError::flag(Flag::Proxy, message),
            ProxySource::Env => ConfigError::ProxyEnv {
                name: var.to_string(),
                message,
            },
        })
}

/// `http://[user[:password]@]host[:port][/]` (no scheme: `http://`).
fn parse_proxy(text: &str, mode: ProxyMode, source: ProxySource) -> Result<Proxy, String> {
    let text = text.trim();
    let shown = redact::proxy(text).into_owned();
    let rest = match text.split_once("://") {
        None => text,
        Some((s, rest)) if s.eq_ignore_ascii_case("http") => rest,
        Some((s, _)) => {
            return Err(format!(
                "`{shown}`: {s}:// proxies are not supported (give an HTTP proxy: http://host:port)"
            ))
        }
    };
    let authority_text = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (user_info, host_port) = match authority_text.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority_text),
    };
    let (host, port) = split_host_port(host_port).ok_or_else(|| {
        format!("`{shown}` is not a proxy URL (expected http://[user:password@]host[:port])")
    })?;
    let authorization = user_info.map(|u| {
        let (user, pass) = u.split_once(':').unwrap_or((u, ""));
        let plain = format!("{}:{}", percent_decode(user), percent_decode(pass));
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(plain)
        )
    });
    let shown = format!(
        "http://{}{}",
        if user_info.is_some() {
            "<redacted>@"
        } else {
            ""
        },
        authority(&host, port)
    );
    Ok(Proxy {
        host,
        port,
        shown,
        authorization,
        mode,
        source,
    })
}

/// `host[:port]` or `[v6][:port]`; `None` when the host is missing or the port is no port.
fn split_host_port(s: &str) -> Option<(String, u16)> {
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let port = match port {
        None | Some("") => DEFAULT_PROXY_PORT,
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0)?,
    };
    Some((host.to_string(), port))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A host on this machine: `localhost` (and its subdomains), 127.0.0.0/8, `::1` (also as
/// `::ffff:127.x.y.z`), and the unspecified `0.0.0.0` and `::`, which reach it too.
fn is_loopback(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost"
        || h.ends_with(".localhost")
        || h.parse::<std::net::IpAddr>().is_ok_and(|ip| {
            let ip = ip.to_canonical();
            ip.is_loopback() || ip.is_unspecified()
        })
}

/// Whether `host` is in a `NO_PROXY`-style list: names separated by commas, spaces or tabs
/// (a name matches itself and its subdomains; a leading `.` or `*.` is the same; a trailing
/// `.` is ignored), addresses, CIDR ranges (`[v6]/n` too), or `*` for every host. A `:port`
/// on an entry is ignored; a name entry matches names only.
pub fn listed(list: &str, host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let ip = host.parse::<std::net::IpAddr>().ok();
    list.split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            let e = entry.to_ascii_lowercase();
            if e == "*" {
                return true;
            }
            if let Some((net, bits)) = e.split_once('/') {
                let net = net.trim_start_matches('[').trim_end_matches(']');
                return match (ip, net.parse::<std::net::IpAddr>(), bits.parse::<u32>()) {
                    (Some(ip), Ok(net), Ok(bits)) => in_range(ip, net, bits),
                    _ => false,
                };
            }
            let e = strip_port(&e);
            if let (Some(ip), Ok(other)) = (ip, e.parse::<std::net::IpAddr>()) {
                return ip == other;
            }
            let name = e.trim_start_matches("*.").trim_start_matches('.');
            let name = name.trim_end_matches('.');
            ip.is_none() && (host == name || host.ends_with(&format!(".{name}")))
        })
}

/// An entry without its `:port` (`[::1]:80` → `::1`, `a.b:80` → `a.b`, `::1` kept).
fn strip_port(e: &str) -> &str {
    if let Some(v6) = e.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    match e.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.parse::<u16>().is_ok() => h,
        _ => e,
    }
}

fn in_range(ip: std::net::IpAddr, net: std::net::IpAddr, bits: u32) -> bool {
    use std::net::IpAddr::{V4, V6};
    match (ip, net) {
        (V4(a), V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (V6(a), V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{args_from, RunConfig};

    fn config(args: &[&str], env: &[(&str, &str)]) -> Result<RunConfig, String> {
        let mut flags: RunFlags = args_from(args.iter().copied()).map_err(|e| e.to_string())?;
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        flags.proxy_env =
            ProxyEnv::from_lookup(|n| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()));
        RunConfig::from_flags(&flags, 2).map_err(|e| e.to_string())
    }

    fn proxy(args: &[&str], env: &[(&str, &str)]) -> Option<Proxy> {
        config(args, env).unwrap().load.target.proxy
    }

    #[test]
    fn the_flag_tunnels_https_and_h2c_and_forwards_http() {
        let p = proxy(
            &[
                "https://example.org/",
                "--proxy",
                "http://u:p%40ss@127.0.0.1:3128",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            (p.host.as_str(), p.port, p.mode),
            ("127.0.0.1", 3128, ProxyMode::Tunnel)
        );
        // "u:p@ss" in base64.
        assert_eq!(p.authorization.as_deref(), Some("Basic dTpwQHNz"));
        assert_eq!(p.shown, "http://<redacted>@127.0.0.1:3128");
        let p = proxy(&["http://127.0.0.1:8080/", "-x", "[::1]"], &[]).unwrap();
        assert_eq!(
            (p.host.as_str(), p.port, p.mode),
            ("::1", 1080, ProxyMode::Forward)
        );
        assert_eq!(p.shown, "http://[::1]:1080");
        let p = proxy(&["http://127.0.0.1:8080/", "-x", "h:1", "--h2c"], &[]).unwrap();
        assert_eq!(p.mode, ProxyMode::Tunnel);
        let p = proxy(
            &["http://127.0.0.1:8080/", "-x", "h:1", "--proxytunnel"],
            &[],
        )
        .unwrap();
        assert_eq!(p.mode, ProxyMode::Tunnel);
    }

    #[test]
    fn forwarded_requests_name_the_absolute_url_and_carry_the_credentials() {
        let c = config(
            &["http://example.org:8080/a?b", "-x", "http://u:p@h:1"],
            &[],
        )
        .unwrap();
        let t = volley_plan::RequestTemplate::build(&c.load);
        let text = String::from_utf8_lossy(&t.bytes).into_owned();
        assert!(
            text.starts_with("GET http://example.org:8080/a?b HTTP/1.1\r\n"),
            "{text}"
        );
        assert!(
            text.contains("\r\nProxy-Authorization: Basic dTpw\r\n"),
            "{text}"
        );
        let c = config(&["https://example.org/", "-x", "http://u:p@h:1"], &[]).unwrap();
        let t = volley_plan::RequestTemplate::build(&c.load);
        let text = String::from_utf8_lossy(&t.bytes).into_owned();
        assert!(
            text.starts_with("GET / HTTP/1.1\r\n") && !text.contains("Proxy-"),
            "{text}"
        );
    }

    #[test]
    fn the_environment_names_a_proxy_per_scheme_except_for_loopback_and_no_proxy() {
        let env = [("HTTPS_PROXY", "http://p:3128"), ("http_proxy", "p:8080")];
        let p = proxy(&["https://example.org/"], &env).unwrap();
        assert_eq!((p.port, p.source), (3128, ProxySource::Env));
        assert_eq!(proxy(&["http://example.org/"], &env).unwrap().port, 8080);
        assert_eq!(proxy(&["http://127.0.0.1:8080/"], &env), None);
        assert_eq!(proxy(&["http://localhost:8080/"], &env), None);
        assert_eq!(proxy(&["http://[::1]:8080/"], &env), None);
        let no = [
            ("HTTPS_PROXY", "p:1"),
            ("NO_PROXY", "internal.example, 10.0.0.0/8"),
        ];
        assert_eq!(proxy(&["https://api.internal.example/"], &no), None);
        assert_eq!(proxy(&["https://10.1.2.3/"], &no), None);
        assert!(proxy(&["https://example.org/"], &no).is_some());
        // --noproxy replaces NO_PROXY, and applies to --proxy too.
        assert!(proxy(&["https://10.1.2.3/", "--noproxy", "x"], &no).is_some());
        assert_eq!(
            proxy(
                &["https://example.org/", "-x", "p:1", "--noproxy", "*"],
                &[]
            ),
            None
        );
        // The flag proxies loopback targets too (that is how a proxy on this host is tested).
        assert!(proxy(&["http://127.0.0.1:8080/", "-x", "p:1"], &[]).is_some());
        let env = [("http_proxy", "p:8080")];
        for host in ["0.0.0.0", "[::]", "[::ffff:127.0.0.2]", "localhost."] {
            let url = format!("http://{host}:8080/");
            assert_eq!(proxy(&[&url], &env), None, "{host}");
        }
        // curl's -x "": no proxy, the environment's neither.
        assert_eq!(proxy(&["http://example.org/", "-x", ""], &env), None);
        assert_eq!(
            proxy(&["https://example.org/"], &[("ALL_PROXY", "a:2")])
                .unwrap()
                .port,
            2
        );
    }

    #[test]
    fn bad_proxies_name_the_flag_or_the_variable() {
        let e = config(&["http://a/", "-x", "socks5://h:1"], &[]).unwrap_err();
        assert!(
            e.starts_with("-x/--proxy: `socks5://h:1`: socks5:// proxies"),
            "{e}"
        );
        let e = config(&["http://a/", "-x", "http://u:secret@h:99999"], &[]).unwrap_err();
        assert!(
            e.contains("http://<redacted>@h:99999") && !e.contains("secret"),
            "{e}"
        );
        let e = config(&["http://a/", "-x", "u:se/cret@h:99999"], &[]).unwrap_err();
        assert!(
            e.contains("`<redacted>@h:99999`") && !e.contains("cret"),
            "{e}"
        );
        let e = config(&["https://a/"], &[("HTTPS_PROXY", "http://:1")]).unwrap_err();
        assert!(
            e.starts_with("the HTTPS_PROXY variable: `http://:1`"),
            "{e}"
        );
        let e = config(&["http://a/", "-x", "h:1", "--unix-socket", "/s"], &[]).unwrap_err();
        assert!(e.contains("--proxy") && e.contains("--unix-socket"), "{e}");
        let e = config(&["http://a/", "--proxytunnel"], &[]).unwrap_err();
        assert!(e.contains("--proxy"), "{e}");
    }

    #[test]
    fn no_proxy_lists_match_names_domains_addresses_and_ranges() {
        assert!(listed("example.org", "example.org"));
        assert!(listed(".example.org", "a.example.org"));
        assert!(listed("*.example.org", "a.b.example.org"));
        assert!(!listed("example.org", "badexample.org"));
        assert!(listed("a, b ,c.d", "c.d"));
        assert!(listed("example.org:443", "example.org"));
        assert!(listed("192.168.0.0/16", "192.168.4.4"));
        assert!(!listed("192.168.0.0/16", "192.169.0.1"));
        assert!(listed("::1", "::1"));
        assert!(listed("[fd00::]/8", "fd12::1") && listed("fd00::/8", "fd12::1"));
        assert!(listed("example.org", "example.org."));
        assert!(!listed("0.1", "10.0.0.1"));
        assert!(listed("a\tb", "b"));
        assert!(listed("0.0.0.0/0", "1.2.3.4"));
        assert!(!listed("", "a"));
    }
}
