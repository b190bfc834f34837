//! `ws://` and `wss://` URLs (docs/contract.md, "WebSocket"): which HTTP a WebSocket run
//! speaks (an HTTP/1.1 upgrade, or RFC 8441's extended CONNECT over HTTP/2 with `--h2c` or
//! `--http2`), its message, and the flags it cannot be combined with yet.

use super::{ConfigError, Flag, RunFlags};
use volley_plan::{HttpVersion, Scheme, WsSpec};

/// The message a WebSocket run sends without `--body` (gcannon's default).
pub const DEFAULT_MESSAGE: &[u8] = b"hello";

/// The run's request as a WebSocket's: the upgrade is a GET, each message the body (`hello`
/// without one).
pub(super) fn apply(a: &RunFlags, req: &mut super::request::Request) {
    req.method = "GET".to_string();
    if a.body.is_none() && a.body_file.is_none() && a.body_size.is_none() {
        req.body = DEFAULT_MESSAGE.into();
    }
}

/// A WebSocket's HTTP: an HTTP/1.1 upgrade by default; over HTTP/2 (RFC 8441) with `--h2c`
/// on a `ws://` URL or `--http2` on a `wss://` one; `--http3` is refused.
pub(super) fn http_version(
    chosen: Option<Flag>,
    scheme: Scheme,
) -> Result<HttpVersion, ConfigError> {
    match (chosen, scheme) {
        (None | Some(Flag::Http1), _) => Ok(HttpVersion::Http1),
        (Some(Flag::H2c), Scheme::Ws) => Ok(HttpVersion::H2c),
        (Some(Flag::Http2), Scheme::Wss) => Ok(HttpVersion::H2),
        (Some(Flag::H2c), _) => Err(ConfigError::flag(
            Flag::H2c,
            "is HTTP/2 in cleartext and needs a ws:// URL; over wss:// use --http2",
        )),
        (Some(Flag::Http2), _) => Err(ConfigError::flag(
            Flag::Http2,
            "needs a wss:// URL (HTTP/2 is chosen in the TLS handshake); for WebSocket over \
             HTTP/2 in cleartext use --h2c",
        )),
        (Some(f), _) => Err(ConfigError::flag(
            f,
            "cannot be used with a ws:// or wss:// URL: volley speaks WebSocket over HTTP/1.1 \
             or HTTP/2 (--h2c, --http2); over HTTP/3 (RFC 9220) it is not supported",
        )),
    }
}

/// The WebSocket settings of a `ws://` or `wss://` URL; `None` for other URLs (where
/// `--ws-binary` is an error).
pub(super) fn ws_spec(a: &RunFlags, scheme: Scheme) -> Result<Option<WsSpec>, ConfigError> {
    if !scheme.is_websocket() {
        if a.ws_binary {
            return Err(ConfigError::flag(
                Flag::WsBinary,
                "needs a ws:// or wss:// URL",
            ));
        }
        return Ok(None);
    }
    // The check given, by its own flag.
    let check = [
        (a.expect_status.is_some(), Flag::ExpectStatus),
        (!a.expect_body_contains.is_empty(), Flag::ExpectBodyContains),
        (a.expect_body_regex.is_some(), Flag::ExpectBodyRegex),
        (!a.expect_header.is_empty(), Flag::ExpectHeader),
        (a.expect_size.is_some(), Flag::ExpectSize),
        (!a.expect_json.is_empty(), Flag::ExpectJson),
    ]
    .into_iter()
    .find_map(|(on, f)| on.then_some(f));
    let refused = [
        (
            a.method.is_some(),
            Flag::Method,
            "the upgrade is a GET; each message carries --body",
        ),
        (
            check.is_some(),
            check.unwrap_or(Flag::ExpectStatus),
            "--expect-* checks HTTP responses, not WebSocket messages",
        ),
        (
            a.verify,
            Flag::Verify,
            "not for WebSocket runs yet (the run's upgrade failing ends it with exit 2)",
        ),
        (
            a.streams.is_some(),
            Flag::Streams,
            "a connection carries one WebSocket (over HTTP/2, one stream); messages in flight \
             per connection are --pipeline",
        ),
        (
            a.h2_window.is_some() && !(a.h2c || a.http2),
            Flag::H2Window,
            "is HTTP/2's (WebSocket over HTTP/2: --h2c or --http2)",
        ),
    ];
    if let Some((_, flag, why)) = refused.iter().find(|(on, _, _)| *on) {
        let message = format!("cannot be used with a ws:// or wss:// URL: {why}");
        return Err(ConfigError::flag(*flag, message));
    }
    Ok(Some(WsSpec {
        binary: a.ws_binary,
    }))
}
