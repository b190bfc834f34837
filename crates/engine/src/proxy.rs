//! A proxy's answer to `CONNECT` (docs/contract.md, "Proxies"): read by the worker and the
//! probe before the tunnel carries TLS or HTTP. Only the head is read — exactly its bytes, so
//! what the target sends first (an HTTP/2 server's SETTINGS) stays for the connection — and
//! at most [`MAX_REPLY_HEAD`] of it: a proxy that never ends its head fails the connect.

use std::sync::Arc;

/// The longest answer head to `CONNECT` read before the connect fails.
pub const MAX_REPLY_HEAD: usize = 8 * 1024;

/// How a run's connections open their tunnel.
#[derive(Debug, Clone)]
pub struct Tunnel {
    /// The `CONNECT` request, written on every new connection.
    pub request: Arc<[u8]>,
}

/// What the bytes read so far say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The head has not ended yet.
    Incomplete,
    /// A 2xx: the tunnel is open after the head's `len` bytes.
    Open {
        /// Bytes of the head, blank line included.
        len: usize,
    },
    /// The proxy refused (or failed) the tunnel: why, its status line in words.
    Refused {
        /// The status code.
        status: u16,
        /// `407 Proxy Authentication Required`, and what to do about it.
        reason: String,
    },
    /// Not an HTTP answer, or a head longer than [`MAX_REPLY_HEAD`].
    Broken(String),
}

/// Reads `bytes`, the start of the proxy's answer.
pub fn parse_reply(bytes: &[u8]) -> Reply {
    let Some(end) = find_head_end(bytes) else {
        if bytes.len() >= MAX_REPLY_HEAD {
            return Reply::Broken(format!(
                "the proxy's answer to CONNECT has no end of head within {MAX_REPLY_HEAD} bytes"
            ));
        }
        if !bytes.is_empty() && !b"HTTP/".starts_with(&bytes[..bytes.len().min(5)]) {
            return Reply::Broken(not_http(bytes));
        }
        return Reply::Incomplete;
    };
    let line_end = bytes.iter().position(|&b| b == b'\n').unwrap_or(end);
    let line = String::from_utf8_lossy(&bytes[..line_end]);
    let line = line.trim_end();
    let mut words = line.splitn(3, ' ');
    let (version, code) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let text = words.next().unwrap_or("").trim();
    let status = match code.parse::<u16>() {
        Ok(s) if version.starts_with("HTTP/1.") && (100..600).contains(&s) => s,
        _ => return Reply::Broken(not_http(bytes)),
    };
    if (200..300).contains(&status) {
        return Reply::Open { len: end };
    }
    Reply::Refused {
        status,
        reason: refusal(status, text),
    }
}

/// Where the head ends (after its blank line: `\r\n\r\n`, or `\n\n` from a proxy that ends
/// lines with LF only, whichever comes first), if it has.
fn find_head_end(bytes: &[u8]) -> Option<usize> {
    let within = &bytes[..bytes.len().min(MAX_REPLY_HEAD)];
    let crlf = within
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4);
    let lf = within.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether a refusal with `status` says the run's set-up is wrong (credentials, a port the
/// proxy does not allow: the run ends before any response) rather than that the proxy is
/// busy or cannot reach the target now (5xx, 408, 429: a `connect` error, as a refused
/// connect is).
pub fn refusal_is_setup(status: u16) -> bool {
    (400..500).contains(&status) && status != 408 && status != 429
}

fn not_http(bytes: &[u8]) -> String {
    let shown: String = String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
        .chars()
        .map(|c| if c.is_control() { '.' } else { c })
        .collect();
    format!("the proxy's answer to CONNECT is not HTTP (it began {shown:?})")
}

/// A refused tunnel in words a user can act on.
fn refusal(status: u16, text: &str) -> String {
    // The proxy's own words, without what a terminal would act on.
    let text: String = text.chars().take(80).filter(|c| !c.is_control()).collect();
    let said = if text.is_empty() {
        format!("{status}")
    } else {
        format!("{status} {text}")
    };
    let hint = match status {
        407 => "; give its credentials in the proxy URL (http://user:password@host:port)",
        403 => "; it does not allow CONNECT to this host and port",
        502 | 504 => "; it could not reach the target",
        _ => "",
    };
    format!("the proxy refused CONNECT: {said}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2xx_opens_the_tunnel_after_exactly_the_head() {
        let bytes = b"HTTP/1.1 200 Connection established\r\nVia: x\r\n\r\n\x00\x00\x12\x04";
        assert_eq!(
            parse_reply(bytes),
            Reply::Open {
                len: bytes.len() - 4
            }
        );
        assert_eq!(
            parse_reply(b"HTTP/1.0 200 OK\r\n\r\n"),
            Reply::Open { len: 19 }
        );
    }

    #[test]
    fn a_refusal_names_the_status_and_what_to_do() {
        let r =
            parse_reply(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 5\r\n\r\n");
        let Reply::Refused { status, reason } = r else {
            panic!("{r:?}")
        };
        assert_eq!(status, 407);
        assert!(
            reason.contains("407 Proxy Authentication Required"),
            "{reason}"
        );
        assert!(reason.contains("credentials"), "{reason}");
        let Reply::Refused { reason, .. } = parse_reply(b"HTTP/1.1 403\r\n\r\n") else {
            panic!()
        };
        assert!(reason.contains("403;"), "{reason}");
    }

    #[test]
    fn a_partial_head_waits_and_an_endless_or_foreign_one_fails() {
        assert_eq!(parse_reply(b""), Reply::Incomplete);
        assert_eq!(parse_reply(b"HTT"), Reply::Incomplete);
        assert_eq!(parse_reply(b"HTTP/1.1 200 OK\r\n"), Reply::Incomplete);
        let endless = [b'a'; MAX_REPLY_HEAD];
        let mut head = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        head.extend_from_slice(&endless);
        assert!(matches!(parse_reply(&head), Reply::Broken(m) if m.contains("8192")));
        assert!(
            matches!(parse_reply(b"\x16\x03\x01\x02"), Reply::Broken(m) if m.contains("not HTTP"))
        );
        assert!(matches!(
            parse_reply(b"SSH-2.0-x\r\n\r\n"),
            Reply::Broken(_)
        ));
    }

    #[test]
    fn the_head_ends_at_its_first_blank_line_and_its_words_are_cleaned() {
        // LF-only lines, then the target's bytes holding a CRLF blank line.
        let bytes = b"HTTP/1.1 200 OK\n\nGET / HTTP/1.1\r\n\r\n";
        assert_eq!(parse_reply(bytes), Reply::Open { len: 17 });
        let Reply::Refused { reason, .. } = parse_reply(b"HTTP/1.1 403 No\x1b[2J\r\n\r\n") else {
            panic!()
        };
        assert!(!reason.contains('\x1b'), "{reason:?}");
        assert!(refusal_is_setup(407) && refusal_is_setup(403) && refusal_is_setup(400));
        assert!(!refusal_is_setup(502) && !refusal_is_setup(503) && !refusal_is_setup(429));
    }
}
