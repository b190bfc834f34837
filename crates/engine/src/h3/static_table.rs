//! The QPACK static table (RFC 9204 Appendix A): 99 field lines, indexed from 0 (HPACK's
//! starts at 1, and its entries differ). Written out from the RFC's table.

/// The static table: `(name, value)` at each index.
pub const STATIC_TABLE: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// The entry at `index`, if there is one.
pub fn get(index: u64) -> Option<(&'static str, &'static str)> {
    usize::try_from(index)
        .ok()
        .and_then(|i| STATIC_TABLE.get(i))
        .copied()
}

/// The index of the entry `name: value`, and failing that of the first entry named `name`:
/// `(index, true)` for the whole line, `(index, false)` for the name alone.
pub fn find(name: &str, value: &str) -> Option<(u64, bool)> {
    let mut by_name = None;
    for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
        if *n == name {
            if *v == value {
                return Some((i as u64, true));
            }
            by_name = by_name.or(Some((i as u64, false)));
        }
    }
    by_name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_indices() {
        assert_eq!(get(0), Some((":authority", "")));
        assert_eq!(get(1), Some((":path", "/")));
        assert_eq!(get(17), Some((":method", "GET")));
        assert_eq!(get(20), Some((":method", "POST")));
        assert_eq!(get(23), Some((":scheme", "https")));
        assert_eq!(get(25), Some((":status", "200")));
        assert_eq!(get(31), Some(("accept-encoding", "gzip, deflate, br")));
        assert_eq!(get(46), Some(("content-type", "application/json")));
        assert_eq!(get(63), Some((":status", "100")));
        assert_eq!(
            get(85),
            Some((
                "content-security-policy",
                "script-src 'none'; object-src 'none'; base-uri 'none'"
            ))
        );
        assert_eq!(get(98), Some(("x-frame-options", "sameorigin")));
        assert_eq!(get(99), None);
        assert_eq!(get(u64::MAX), None);
    }

    #[test]
    fn lookups_prefer_the_whole_line() {
        assert_eq!(find(":method", "GET"), Some((17, true)));
        assert_eq!(find(":method", "PATCH"), Some((15, false)));
        assert_eq!(find("accept", "*/*"), Some((29, true)));
        assert_eq!(find("user-agent", "volley"), Some((95, false)));
        assert_eq!(find("x-trace", "1"), None);
        // Names are lowercase, no entry has an empty name.
        for (n, _) in STATIC_TABLE {
            assert!(!n.is_empty() && n.bytes().all(|b| !b.is_ascii_uppercase()));
        }
    }
}
