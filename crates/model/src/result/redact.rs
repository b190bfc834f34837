//! Secrets never reach an output: the values of `Authorization`, `Proxy-Authorization` and
//! `Cookie` headers, and the user information of URLs, are written as `<redacted>` in every
//! file and report (the RunResult's `argv` and `target.url`, suite.json, the HDR log's header);
//! the requests on the wire are unchanged (docs/contract.md, "Secrets").

use std::borrow::Cow;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "<redacted>";

/// Headers whose values are secrets (compared without regard to case).
const SECRET_HEADERS: &[&str] = &["authorization", "proxy-authorization", "cookie"];

/// Header fields of a response whose values are a client's secrets (a session).
const SECRET_RESPONSE_HEADERS: &[&str] = &["set-cookie"];

/// Raw bytes of an HTTP head (a sample of what a server sent, in a warning) with the values of
/// `Set-Cookie`, `Cookie`, `Authorization` and `Proxy-Authorization` lines written as
/// `<redacted>`; the rest as it was.
pub fn head_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for (k, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if k > 0 {
            out.push(b'\n');
        }
        let secret = line.iter().position(|&b| b == b':').filter(|&c| {
            let name = String::from_utf8_lossy(&line[..c])
                .trim()
                .to_ascii_lowercase();
            SECRET_HEADERS.contains(&name.as_str())
                || SECRET_RESPONSE_HEADERS.contains(&name.as_str())
        });
        match secret {
            Some(c) => {
                out.extend_from_slice(&line[..=c]);
                out.extend_from_slice(b" ");
                out.extend_from_slice(REDACTED.as_bytes());
                if line.ends_with(b"\r") {
                    out.push(b'\r');
                }
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// Prefixes under which a command line carries a header: `-H`, `--header=`, `-H=`, or the
/// whole argument after `-H` / `--header`, and a suite's `--header=` flags.
const HEADER_PREFIXES: &[&str] = &["--header=", "-H=", "-H", ""];

/// One command-line argument (or any string that may hold a header line or a URL) with its
/// secrets redacted.
pub fn arg(s: &str) -> Cow<'_, str> {
    for prefix in HEADER_PREFIXES {
        if let Some(line) = s.strip_prefix(prefix) {
            if let Some((name, _)) = line.split_once(':') {
                let n = name.trim();
                if SECRET_HEADERS.iter().any(|h| n.eq_ignore_ascii_case(h)) {
                    return Cow::Owned(format!("{prefix}{name}: {REDACTED}"));
                }
            }
        }
    }
    url(s)
}

/// A command line with its secrets redacted: headers, URLs, and the proxy's credentials
/// (`-x`/`--proxy`'s value, which may leave out its `http://`).
pub fn argv(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(args.len());
    for a in args {
        let after_flag = out.last().is_some_and(|p| p == "-x" || p == "--proxy");
        let shown = if after_flag {
            proxy(a).into_owned()
        } else if let Some(v) = a.strip_prefix("--proxy=") {
            format!("--proxy={}", proxy(v))
        } else if let Some(v) = a.strip_prefix("-x").filter(|v| !v.is_empty()) {
            format!("-x{}", proxy(v))
        } else {
            arg(a).into_owned()
        };
        out.push(shown);
    }
    out
}

/// A proxy URL without its user information, with or without a scheme:
/// `user:pw@host:3128` becomes `<redacted>@host:3128`. A host holds no `@`, so everything
/// before the last one is the user information (a password may hold `/` or `#`).
pub fn proxy(s: &str) -> Cow<'_, str> {
    let Some(at) = s.rfind('@') else {
        return Cow::Borrowed(s);
    };
    let start = s.find("://").map_or(0, |i| i + 3).min(at);
    Cow::Owned(format!("{}{REDACTED}{}", &s[..start], &s[at..]))
}

/// A URL (anywhere in `s`) without its user information: `http://user:pw@host/` becomes
/// `http://<redacted>@host/`.
pub fn url(s: &str) -> Cow<'_, str> {
    let Some(start) = s.find("://").map(|i| i + 3) else {
        return Cow::Borrowed(s);
    };
    let rest = &s[start..];
    let authority_end = rest.find(['/', '?', '#', ' ']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => Cow::Owned(format!("{}{REDACTED}{}", &s[..start], &rest[at..])),
        None => Cow::Borrowed(s),
    }
}

/// Every string in a JSON value with its secrets redacted (a suite file's copy in
/// suite.json: scenario headers, server URLs).
pub fn json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            if let Cow::Owned(r) = arg(s) {
                *s = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(json),
        serde_json::Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                // `headers = { Authorization = "Bearer x" }`: the key names the header.
                if v.is_string() && SECRET_HEADERS.iter().any(|h| k.eq_ignore_ascii_case(h)) {
                    *v = REDACTED.into();
                } else {
                    json(v);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_lines_of_a_sample_are_redacted() {
        let head = b"HTTP/1.1 200 OK\r\nSet-Cookie: sid=SECRET42; Path=/\r\nX-Id: 7\r\nbad line\r\nauthorization:Bearer x";
        assert_eq!(
            String::from_utf8(head_bytes(head)).unwrap(),
            "HTTP/1.1 200 OK\r\nSet-Cookie: <redacted>\r\nX-Id: 7\r\nbad line\r\nauthorization: <redacted>"
        );
    }

    #[test]
    fn proxy_credentials_are_redacted_with_or_without_a_scheme() {
        let given: Vec<String> = [
            "-x",
            "u:secret@proxy:3128",
            "--proxy",
            "http://u:pa/ss#x@p:1",
            "--proxy=u:s@p",
            "-xu:s@p:1",
            "-x",
            "proxy:3128",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            argv(&given),
            [
                "-x",
                "<redacted>@proxy:3128",
                "--proxy",
                "http://<redacted>@p:1",
                "--proxy=<redacted>@p",
                "-x<redacted>@p:1",
                "-x",
                "proxy:3128",
            ]
        );
    }

    #[test]
    fn header_values_are_redacted_in_every_spelling() {
        let given: Vec<String> = [
            "volley",
            "run",
            "http://127.0.0.1:8080/",
            "-H",
            "Authorization: Bearer abc",
            "-Hcookie: a=b",
            "--header=Proxy-Authorization:Basic x",
            "-H=COOKIE : c",
            "-H",
            "X-Trace: keep",
            "--body",
            "Authorization is a word",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            argv(&given)[3..],
            [
                "-H",
                "Authorization: <redacted>",
                "-Hcookie: <redacted>",
                "--header=Proxy-Authorization: <redacted>",
                "-H=COOKIE : <redacted>",
                "-H",
                "X-Trace: keep",
                "--body",
                "Authorization is a word",
            ]
        );
    }

    #[test]
    fn user_information_leaves_urls() {
        assert_eq!(url("http://u:pw@h:80/a@b"), "http://<redacted>@h:80/a@b");
        assert_eq!(url("http://h/a@b"), "http://h/a@b");
        assert_eq!(
            url("`https://tok@h/`: unsupported"),
            "`https://<redacted>@h/`: unsupported"
        );
        let mut v = serde_json::json!({"scenario": [{"headers": ["Cookie: s=1", "A: b"]},
            {"headers": {"authorization": "Bearer t", "X-A": "b"}}],
            "server": [{"url": "http://a:b@127.0.0.1:1/"}]});
        json(&mut v);
        assert_eq!(v["scenario"][1]["headers"]["authorization"], "<redacted>");
        assert_eq!(v["scenario"][1]["headers"]["X-A"], "b");
        assert_eq!(v["scenario"][0]["headers"][0], "Cookie: <redacted>");
        assert_eq!(v["scenario"][0]["headers"][1], "A: b");
        assert_eq!(v["server"][0]["url"], "http://<redacted>@127.0.0.1:1/");
    }
}
