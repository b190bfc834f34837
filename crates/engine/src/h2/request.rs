//! The request's header block, encoded once per run: every request of a run carries the same
//! headers, so the block is encoded without touching the HPACK dynamic table (indexed static
//! entries and literals "without indexing", RFC 7541 §6.2.2) and the same bytes are valid on
//! every stream of every connection — no encoder state per connection, no work per request.

use loona_hpack::encoder::encode_integer_into;

use volley_plan::workload::Context;
use volley_plan::{LoadSpec, MixRequest, RequestTemplate};

/// Encodes a request's header fields: method, scheme, authority, path, the other headers and
/// the body's length (HPACK's [`header_block`], or QPACK's `h3::qpack::encode_request`).
pub(crate) type Encode = fn(&str, &str, &str, &str, &[(String, String)], Option<usize>) -> Vec<u8>;

/// The header block of the run's request: the same fields as its HTTP/1.1 form
/// ([`RequestTemplate::header_fields`]), `Host` (the user's, or the URL's) as `:authority`.
pub fn for_spec(spec: &LoadSpec) -> Vec<u8> {
    spec_with(spec, header_block)
}

/// [`for_spec`] encoded by `encode`.
pub(crate) fn spec_with(spec: &LoadSpec, encode: Encode) -> Vec<u8> {
    let fields = RequestTemplate::header_fields(spec);
    let authority = fields
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(spec.target.host_header.as_str(), |(_, v)| v.as_str());
    encode(
        &spec.method,
        spec.target.scheme.as_str(),
        authority,
        &spec.target.path,
        &fields,
        None,
    )
}

/// The header block of one workload request for `ctx` (its path and header values rendered;
/// `Host` as `:authority`), with `content-length` for a body of `body_len` bytes where it sends
/// one.
pub fn for_mix(r: &MixRequest, ctx: &Context, https: bool, body_len: usize) -> Vec<u8> {
    mix_with(r, ctx, https, body_len, header_block)
}

/// [`for_mix`] encoded by `encode`.
pub(crate) fn mix_with(
    r: &MixRequest,
    ctx: &Context,
    https: bool,
    body_len: usize,
    encode: Encode,
) -> Vec<u8> {
    let text = |t: &volley_plan::workload::Template| {
        let mut b = Vec::new();
        t.render(ctx, &mut b);
        String::from_utf8_lossy(&b).into_owned()
    };
    let mut fields: Vec<(String, String)> =
        r.fields.iter().map(|(n, v)| (n.clone(), text(v))).collect();
    if let Some(cookie) = ctx.cookie.filter(|_| !r.own_cookie) {
        fields.push((
            "cookie".into(),
            String::from_utf8_lossy(cookie).into_owned(),
        ));
    }
    let authority = fields
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(String::new(), |(_, v)| v.clone());
    encode(
        &r.method,
        if https { "https" } else { "http" },
        &authority,
        &text(&r.path),
        &fields,
        r.length.then_some(body_len),
    )
}

/// Headers that belong to one HTTP/1.1 connection and are forbidden in HTTP/2 (RFC 9113
/// §8.2.2); `host` becomes `:authority`.
pub(crate) const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// The header block of `method scheme://authority path` with `headers` (names are lowered,
/// connection-specific ones left out) and, for a body of `body_len` bytes, `content-length`.
pub fn header_block(
    method: &str,
    scheme: &str,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
    body_len: Option<usize>,
) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + authority.len() + path.len());
    // Static table (RFC 7541 Appendix A): 2 `:method GET`, 3 `:method POST`, 4 `:path /`,
    // 6 `:scheme http`, 7 `:scheme https`; names 1 `:authority`, 2 `:method`, 4 `:path`.
    match method {
        "GET" => b.push(0x82),
        "POST" => b.push(0x83),
        m => literal_indexed_name(&mut b, 2, m),
    }
    b.push(if scheme == "https" { 0x87 } else { 0x86 });
    literal_indexed_name(&mut b, 1, authority);
    if path == "/" {
        b.push(0x84);
    } else {
        literal_indexed_name(&mut b, 4, path);
    }
    let mut has_length = false;
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&name.as_str()) {
            continue;
        }
        has_length |= name == "content-length";
        literal_new_name(&mut b, &name, value);
    }
    if let (Some(n), false) = (body_len, has_length) {
        literal_new_name(&mut b, "content-length", &n.to_string());
    }
    b
}

/// Fields of the HTTP/1.1 upgrade that an extended CONNECT must not carry (RFC 8441 §4: the
/// key and its accept belong to the upgrade; volley sends its own version).
const UPGRADE_ONLY: [&str; 3] = [
    "sec-websocket-key",
    "sec-websocket-accept",
    "sec-websocket-version",
];

/// The header block of the extended CONNECT that opens a WebSocket over HTTP/2 (RFC 8441 §4):
/// `:method CONNECT`, `:protocol websocket`, `:scheme`, `:authority`, `:path`,
/// `sec-websocket-version: 13` and `headers` (names lowered; connection-specific ones and the
/// upgrade's own left out; a `host` of theirs is the `:authority`).
pub fn connect_block(
    scheme: &str,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
) -> Vec<u8> {
    let authority = headers
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(authority, |(_, v)| v.as_str());
    let mut b = Vec::with_capacity(96 + authority.len() + path.len());
    literal_indexed_name(&mut b, 2, "CONNECT");
    b.push(if scheme == "https" { 0x87 } else { 0x86 });
    literal_indexed_name(&mut b, 1, authority);
    if path == "/" {
        b.push(0x84);
    } else {
        literal_indexed_name(&mut b, 4, path);
    }
    literal_new_name(&mut b, ":protocol", "websocket");
    literal_new_name(&mut b, "sec-websocket-version", "13");
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&name.as_str()) || UPGRADE_ONLY.contains(&name.as_str()) {
            continue;
        }
        literal_new_name(&mut b, &name, value);
    }
    b
}

/// Literal header field without indexing, name from the static table (4-bit prefix).
fn literal_indexed_name(b: &mut Vec<u8>, index: usize, value: &str) {
    let _ = encode_integer_into(index, 4, 0x00, b);
    string(b, value.as_bytes());
}

/// Literal header field without indexing, new name.
fn literal_new_name(b: &mut Vec<u8>, name: &str, value: &str) {
    b.push(0x00);
    string(b, name.as_bytes());
    string(b, value.as_bytes());
}

/// A string literal without Huffman coding (7-bit length prefix).
fn string(b: &mut Vec<u8>, s: &[u8]) {
    let _ = encode_integer_into(s.len(), 7, 0x00, b);
    b.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(block: &[u8]) -> Vec<(String, String)> {
        let mut d = loona_hpack::Decoder::new();
        let mut out = Vec::new();
        d.decode_with_cb(block, |n, v| {
            out.push((
                String::from_utf8_lossy(&n).into_owned(),
                String::from_utf8_lossy(&v).into_owned(),
            ))
        })
        .unwrap();
        out
    }

    #[test]
    fn the_extended_connect_names_the_websocket_protocol_and_the_users_headers() {
        let headers = vec![
            ("Origin".to_string(), "http://a".to_string()),
            ("Connection".to_string(), "Upgrade".to_string()),
            ("Sec-WebSocket-Key".to_string(), "x".to_string()),
            ("Sec-WebSocket-Protocol".to_string(), "chat".to_string()),
        ];
        let got = decoded(&connect_block("https", "h:8443", "/ws?a=1", &headers));
        let want: Vec<(String, String)> = [
            (":method", "CONNECT"),
            (":scheme", "https"),
            (":authority", "h:8443"),
            (":path", "/ws?a=1"),
            (":protocol", "websocket"),
            ("sec-websocket-version", "13"),
            ("origin", "http://a"),
            ("sec-websocket-protocol", "chat"),
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .into();
        assert_eq!(got, want);
        // A Host of the user's is the authority; the root path is the static entry.
        let own = decoded(&connect_block(
            "http",
            "h",
            "/",
            &[("Host".into(), "other".into())],
        ));
        assert_eq!(own[1], (":scheme".into(), "http".into()));
        assert_eq!(own[2], (":authority".into(), "other".into()));
        assert_eq!(own[3], (":path".into(), "/".into()));
        assert_eq!(own.len(), 6, "{own:?}");
    }

    #[test]
    fn a_block_decodes_to_the_request_and_leaves_the_table_alone() {
        let headers = vec![
            ("X-Trace".to_string(), "abc".to_string()),
            ("Connection".to_string(), "close".to_string()),
            ("Host".to_string(), "ignored".to_string()),
        ];
        let block = header_block(
            "POST",
            "https",
            "localhost:8443",
            "/a?b=1",
            &headers,
            Some(5),
        );
        let mut d = loona_hpack::Decoder::new();
        for _ in 0..2 {
            // The same bytes decode the same way on the same connection: no table entries.
            let mut got = Vec::new();
            d.decode_with_cb(&block, |n, v| got.push((n.into_owned(), v.into_owned())))
                .unwrap();
            let got: Vec<(String, String)> = got
                .into_iter()
                .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
                .collect();
            assert_eq!(
                got,
                [
                    (":method", "POST"),
                    (":scheme", "https"),
                    (":authority", "localhost:8443"),
                    (":path", "/a?b=1"),
                    ("x-trace", "abc"),
                    ("content-length", "5"),
                ]
                .map(|(n, v)| (n.to_string(), v.to_string()))
            );
        }
        let get = decoded(&header_block("GET", "http", "h", "/", &[], None));
        assert_eq!(get[0], (":method".into(), "GET".into()));
        assert_eq!(get[3], (":path".into(), "/".into()));
        let long = "/".to_string() + &"x".repeat(300);
        let put = decoded(&header_block("PUT", "http", "h", &long, &[], None));
        assert_eq!(put[0].1, "PUT");
        assert_eq!(put[3].1, long);
    }
}
