//! A response's captures evaluated once it is complete: a JSON pointer or a regex over the
//! body's first 64 KiB, a header's value, a cookie it sets. Runs only for requests that
//! capture, so the JSON is parsed only there (a login, not every request).

use volley_plan::journey::{CaptureFrom, MAX_VALUE_BYTES};

/// Why a capture found no value (the request's `capture` check failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// The body (its first 64 KiB) is not JSON.
    NotJson,
    /// The JSON has nothing at the pointer.
    NoValue,
    /// The regex did not match (or its group took no part).
    NoMatch,
    /// No header of that name.
    NoHeader,
    /// No `Set-Cookie` of that name.
    NoCookie,
}

impl Missed {
    /// Short text for the summary.
    pub fn reason(self) -> &'static str {
        match self {
            Missed::NotJson => "the body is not JSON (within its first 64 KiB)",
            Missed::NoValue => "the JSON has no value there",
            Missed::NoMatch => "the regex did not match",
            Missed::NoHeader => "no such header",
            Missed::NoCookie => "no such cookie set",
        }
    }
}

/// What a response offered its captures: its body's first bytes, the values of the headers
/// captured (in capture order; `None` where the capture is not a header's) and its
/// `Set-Cookie` fields.
pub struct Offered<'a> {
    /// The body's first bytes.
    pub body: &'a [u8],
    /// Header captures' values, by capture.
    pub headers: &'a [Option<Vec<u8>>],
    /// `Set-Cookie` field values.
    pub set_cookies: &'a [Vec<u8>],
    /// `Set-Cookie` fields too large for a jar that were not kept (not in `set_cookies`).
    pub set_cookies_too_large: u32,
}

/// The value `from` takes from `offered` (capture `k`), cut at [`MAX_VALUE_BYTES`]; `json` is
/// the body parsed once for every JSON capture of the response.
pub fn value(
    from: &CaptureFrom,
    k: usize,
    offered: &Offered,
    json: &mut Option<Option<serde_json::Value>>,
) -> Result<(Vec<u8>, bool), Missed> {
    let v = match from {
        CaptureFrom::Json(pointer) => {
            let doc = json.get_or_insert_with(|| serde_json::from_slice(offered.body).ok());
            let doc = doc.as_ref().ok_or(Missed::NotJson)?;
            match walk(doc, pointer).ok_or(Missed::NoValue)? {
                serde_json::Value::String(s) => s.as_bytes().to_vec(),
                other => other.to_string().into_bytes(),
            }
        }
        CaptureFrom::Regex { re, group } => re
            .captures(offered.body)
            .and_then(|c| c.get(*group))
            .ok_or(Missed::NoMatch)?
            .as_bytes()
            .to_vec(),
        CaptureFrom::Header(_) => offered
            .headers
            .get(k)
            .and_then(Option::as_ref)
            .ok_or(Missed::NoHeader)?
            .clone(),
        CaptureFrom::Cookie(name) => offered
            .set_cookies
            .iter()
            .find_map(|f| cookie_value(f, name.as_bytes()))
            .ok_or(Missed::NoCookie)?
            .to_vec(),
    };
    if v.is_empty() || (matches!(from, CaptureFrom::Json(_)) && v == b"null") {
        // An empty value (a deleted cookie, an empty header or group, JSON's "" or null) is
        // no value: a step needing it is not sent with nothing in its place.
        return Err(match from {
            CaptureFrom::Json(_) => Missed::NoValue,
            CaptureFrom::Regex { .. } => Missed::NoMatch,
            CaptureFrom::Header(_) => Missed::NoHeader,
            CaptureFrom::Cookie(_) => Missed::NoCookie,
        });
    }
    Ok(cut(v))
}

/// The value at JSON pointer `pointer` (RFC 6901) in `doc`. `serde_json::Value::pointer`
/// unescapes every token with two `str::replace` calls (about a thousand instructions a
/// response); a token without `~` is compared as it is here.
fn walk<'v>(doc: &'v serde_json::Value, pointer: &str) -> Option<&'v serde_json::Value> {
    if pointer.is_empty() {
        return Some(doc);
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/').try_fold(doc, |v, token| {
        let owned;
        let token = if token.contains('~') {
            owned = token.replace("~1", "/").replace("~0", "~");
            owned.as_str()
        } else {
            token
        };
        match v {
            serde_json::Value::Object(m) => m.get(token),
            serde_json::Value::Array(a) => {
                let leading_zero = token.len() > 1 && token.starts_with('0');
                a.get(token.parse::<usize>().ok().filter(|_| !leading_zero)?)
            }
            _ => None,
        }
    })
}

/// `v` cut at [`MAX_VALUE_BYTES`] (on a UTF-8 boundary when it is text), and whether it was.
fn cut(mut v: Vec<u8>) -> (Vec<u8>, bool) {
    if v.len() <= MAX_VALUE_BYTES {
        return (v, false);
    }
    let mut end = MAX_VALUE_BYTES;
    if std::str::from_utf8(&v).is_ok() {
        while end > 0 && (v[end] & 0xC0) == 0x80 {
            end -= 1;
        }
    }
    v.truncate(end);
    (v, true)
}

/// The value of cookie `name` in a `Set-Cookie` field (`NAME=value; Path=/`), trimmed.
fn cookie_value<'a>(field: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let pair = field.split(|&b| b == b';').next()?;
    let eq = pair.iter().position(|&b| b == b'=')?;
    (pair[..eq].trim_ascii() == name).then(|| pair[eq + 1..].trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered<'a>(
        body: &'a [u8],
        headers: &'a [Option<Vec<u8>>],
        cookies: &'a [Vec<u8>],
    ) -> Offered<'a> {
        Offered {
            body,
            headers,
            set_cookies: cookies,
            set_cookies_too_large: 0,
        }
    }

    #[test]
    fn each_kind_takes_its_value_or_says_why_not() {
        let body = br#"{"accessToken":"abc.def","user":{"id":42,"tags":["a","b"]},"ok":true}"#;
        let headers = [None, Some(b"W/\"7\"".to_vec())];
        let cookies = [
            b"sid=s%3A1; Path=/; HttpOnly".to_vec(),
            b" theme = dark ".to_vec(),
        ];
        let o = offered(body, &headers, &cookies);
        let mut json = None;
        let mut get = |from: CaptureFrom, k| value(&from, k, &o, &mut json).map(|v| v.0);
        assert_eq!(
            get(CaptureFrom::Json("/accessToken".into()), 0).unwrap(),
            b"abc.def"
        );
        assert_eq!(get(CaptureFrom::Json("/user/id".into()), 0).unwrap(), b"42");
        assert_eq!(
            get(CaptureFrom::Json("/user/tags".into()), 0).unwrap(),
            br#"["a","b"]"#
        );
        assert_eq!(get(CaptureFrom::Json("/ok".into()), 0).unwrap(), b"true");
        assert_eq!(
            get(CaptureFrom::Json("/nope".into()), 0),
            Err(Missed::NoValue)
        );
        let re = regex::bytes::Regex::new(r#""id":(\d+)"#).unwrap();
        assert_eq!(
            get(
                CaptureFrom::Regex {
                    re: re.clone(),
                    group: 1
                },
                0
            )
            .unwrap(),
            b"42"
        );
        assert_eq!(
            get(CaptureFrom::Regex { re, group: 0 }, 0).unwrap(),
            br#""id":42"#
        );
        let re = regex::bytes::Regex::new("zzz").unwrap();
        assert_eq!(
            get(CaptureFrom::Regex { re, group: 0 }, 0),
            Err(Missed::NoMatch)
        );
        assert_eq!(
            get(CaptureFrom::Header("etag".into()), 1).unwrap(),
            b"W/\"7\""
        );
        assert_eq!(
            get(CaptureFrom::Header("x".into()), 0),
            Err(Missed::NoHeader)
        );
        assert_eq!(get(CaptureFrom::Cookie("sid".into()), 0).unwrap(), b"s%3A1");
        assert_eq!(
            get(CaptureFrom::Cookie("theme".into()), 0).unwrap(),
            b"dark"
        );
        assert_eq!(
            get(CaptureFrom::Cookie("si".into()), 0),
            Err(Missed::NoCookie)
        );
        let html = offered(b"<html>", &[], &[]);
        let mut json = None;
        assert_eq!(
            value(&CaptureFrom::Json("/a".into()), 0, &html, &mut json),
            Err(Missed::NotJson)
        );
    }

    #[test]
    fn pointers_walk_as_rfc_6901_says() {
        let doc: serde_json::Value =
            serde_json::from_str(r#"{"a/b":1,"m~n":2,"":3,"l":[10,11],"o":{"p":{"q":"x"}}}"#)
                .unwrap();
        for p in [
            "", "/a~1b", "/m~0n", "/", "/l/1", "/l/0", "/o/p/q", "/l/01", "/l/2", "/x", "o",
        ] {
            assert_eq!(walk(&doc, p), doc.pointer(p), "{p}");
        }
    }

    #[test]
    fn a_long_value_is_cut_on_a_character_boundary() {
        let long = format!("{{\"t\":\"{}\"}}", "é".repeat(MAX_VALUE_BYTES));
        let o = offered(long.as_bytes(), &[], &[]);
        let (v, was_cut) = value(&CaptureFrom::Json("/t".into()), 0, &o, &mut None).unwrap();
        assert!(was_cut);
        assert!(v.len() <= MAX_VALUE_BYTES && v.len() > MAX_VALUE_BYTES - 2);
        assert!(std::str::from_utf8(&v).is_ok());
    }
}
