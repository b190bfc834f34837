//! The WebSocket opening handshake over HTTP/1.1 (RFC 6455 §4): the client's upgrade request,
//! with a nonce of its own per connection, and the server's answer checked — `101`, `Upgrade:
//! websocket`, `Connection: upgrade` and the `Sec-WebSocket-Accept` the nonce calls for.

use base64::Engine as _;
use sha1::{Digest, Sha1};

/// The longest answer head read (a server that sends more is broken).
pub const MAX_ANSWER_HEAD: usize = 16 * 1024;

/// RFC 6455 §1.3's GUID, appended to the key before hashing.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The upgrade request up to its key: the request line, `Host`, the upgrade's own fields
/// and the user's headers (`-H`; a `Host` of theirs replaces volley's).
pub fn request_head(path: &str, host: &str, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!("GET {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        out.push_str(&format!("Host: {host}\r\n"));
    }
    out.push_str("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.into_bytes()
}

/// One connection's upgrade request: `head` ([`request_head`]) with the key of `nonce`; and
/// the `Sec-WebSocket-Accept` its answer must carry.
pub fn request(head: &[u8], nonce: [u8; 16]) -> (Vec<u8>, String) {
    let key = base64::engine::general_purpose::STANDARD.encode(nonce);
    let mut out = Vec::with_capacity(head.len() + 48);
    out.extend_from_slice(head);
    out.extend_from_slice(b"Sec-WebSocket-Key: ");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    (out, accept_of(&key))
}

/// The `Sec-WebSocket-Accept` of `key` (RFC 6455 §4.2.2).
pub fn accept_of(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.as_bytes());
    h.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

/// The server's answer to the upgrade, as far as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Its head has not ended yet.
    Incomplete,
    /// Upgraded: the head was `len` bytes (what follows is frames).
    Upgraded {
        /// The head's length.
        len: usize,
    },
    /// The server answered with another status: not a WebSocket endpoint (or not for this
    /// client).
    Refused {
        /// Its status.
        status: u16,
        /// Its status line, e.g. `HTTP/1.1 404 Not Found`.
        line: String,
    },
    /// A `101` that does not complete the handshake, or not HTTP at all.
    Broken(String),
}

/// Reads the server's answer from `buf` (all the bytes the connection received so far).
pub fn parse_answer(buf: &[u8], accept: &str) -> Answer {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut fields);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() < MAX_ANSWER_HEAD => return Answer::Incomplete,
        Ok(httparse::Status::Partial) => {
            return Answer::Broken(format!(
                "its answer to the upgrade has a head longer than {} KiB",
                MAX_ANSWER_HEAD / 1024
            ))
        }
        Err(e) => return Answer::Broken(format!("its answer to the upgrade is not HTTP ({e})")),
    };
    let status = resp.code.unwrap_or(0);
    if status != 101 {
        let line = format!("HTTP/1.1 {status} {}", resp.reason.unwrap_or(""));
        return Answer::Refused {
            status,
            line: line.trim_end().to_string(),
        };
    }
    let field = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let has_token = |name: &str, token: &str| {
        field(name).is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    if !has_token("upgrade", "websocket") {
        return Answer::Broken("its 101 has no `Upgrade: websocket`".into());
    }
    if !has_token("connection", "upgrade") {
        return Answer::Broken("its 101 has no `Connection: upgrade`".into());
    }
    match field("sec-websocket-accept") {
        Some(v) if v == accept => {}
        Some(v) => {
            return Answer::Broken(format!(
                "its 101's Sec-WebSocket-Accept `{v}` is not the key's `{accept}`"
            ))
        }
        None => return Answer::Broken("its 101 has no Sec-WebSocket-Accept".into()),
    }
    if let Some(ext) = field("sec-websocket-extensions") {
        // volley offered none: a server that uses one anyway (permessage-deflate) would send
        // frames volley cannot read.
        return Answer::Broken(format!(
            "its 101 chose the extension `{ext}`, which volley did not offer"
        ));
    }
    Answer::Upgraded { len }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_of_rfc_6455s_example_key() {
        // RFC 6455 §1.3.
        assert_eq!(
            accept_of("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn the_request_carries_the_upgrade_and_the_users_headers() {
        let head = request_head(
            "/ws?x=1",
            "127.0.0.1:9",
            &[("Origin".into(), "http://a".into())],
        );
        let (req, accept) = request(&head, *b"the sample nonce");
        let text = String::from_utf8(req).unwrap();
        assert!(
            text.starts_with("GET /ws?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"));
        assert!(text.contains("\r\nOrigin: http://a\r\n"));
        assert!(text.ends_with("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"));
        assert_eq!(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        let own_host = request_head("/", "a", &[("host".into(), "b".into())]);
        assert!(!String::from_utf8(own_host).unwrap().contains("Host: a"));
    }

    #[test]
    fn answers_are_upgraded_refused_or_broken() {
        let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
        let ok = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n\x01\x00"
        );
        let head_len = ok.len() - 2;
        assert_eq!(
            parse_answer(ok.as_bytes(), accept),
            Answer::Upgraded { len: head_len }
        );
        assert_eq!(
            parse_answer(&ok.as_bytes()[..20], accept),
            Answer::Incomplete
        );
        assert_eq!(
            parse_answer(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
                accept
            ),
            Answer::Refused {
                status: 404,
                line: "HTTP/1.1 404 Not Found".into()
            }
        );
        let wrong = ok.replace(accept, "AAAA");
        assert!(
            matches!(parse_answer(wrong.as_bytes(), accept), Answer::Broken(m) if m.contains("AAAA"))
        );
        let deflate = ok.replace(
            "\r\n\r\n",
            "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
        );
        assert!(
            matches!(parse_answer(deflate.as_bytes(), accept), Answer::Broken(m) if m.contains("permessage-deflate"))
        );
        assert!(matches!(
            parse_answer(b"\x16\x03\x01\x00", accept),
            Answer::Broken(_)
        ));
        let endless = vec![b'a'; MAX_ANSWER_HEAD + 1];
        assert!(matches!(parse_answer(&endless, accept), Answer::Broken(_)));
    }
}
