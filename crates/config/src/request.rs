//! The request of a run without a requests file: its method (`-m`), headers (`-H`) and body
//! (`--body`, `--body-file`, `--body-size`), checked; and the RFC 9110 token rule that the
//! requests file and the response checks share.

use super::{ConfigError, Flag, RunFlags};

/// Largest request body volley builds in memory.
pub const MAX_BODY_BYTES: u64 = 1 << 30;

/// What every request carries.
pub(super) struct Request {
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: std::sync::Arc<[u8]>,
}

/// Method, headers and body of the request.
pub(super) fn request(a: &RunFlags) -> Result<Request, ConfigError> {
    let body = if let Some(b) = &a.body {
        b.clone().into_bytes()
    } else if let Some(p) = &a.body_file {
        std::fs::read(p).map_err(|e| ConfigError::File {
            flag: Flag::BodyFile,
            path: p.display().to_string(),
            source: e,
        })?
    } else if let Some(n) = a.body_size {
        if n > MAX_BODY_BYTES {
            return Err(ConfigError::flag(
                Flag::BodySize,
                format!("{n} bytes is more than the 1 GiB volley holds in memory"),
            ));
        }
        generated_body(n as usize)
    } else {
        Vec::new()
    };
    let has_body = a.body.is_some() || a.body_file.is_some() || a.body_size.is_some();
    let method = match &a.method {
        Some(m) => method(m)?,
        None if has_body => "POST".to_string(),
        None => "GET".to_string(),
    };
    let headers = a
        .headers
        .iter()
        .map(|h| header(h))
        .collect::<Result<_, _>>()?;
    Ok(Request {
        method,
        headers,
        body: body.into(),
    })
}

/// The standard methods (RFC 9110 §9 and PATCH), which are case-sensitive: `get` is another
/// method, and almost always a typo for `GET`.
const STANDARD_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// `-m/--method`: any token, except an all-digit one (h2load's `-m N` is its streams per
/// connection) and a standard method in another case (`get`).
fn method(m: &str) -> Result<String, ConfigError> {
    let refuse = |why: String| Err(ConfigError::flag(Flag::Method, why));
    if m.is_empty() || !m.bytes().all(is_token_byte) {
        return refuse(format!("`{m}` is not an HTTP method"));
    }
    if m.bytes().all(|b| b.is_ascii_digit()) {
        return refuse(format!(
            "`{m}` is not an HTTP method (h2load's -m is volley's --streams {m})"
        ));
    }
    let upper = m.to_ascii_uppercase();
    if upper != m && STANDARD_METHODS.contains(&upper.as_str()) {
        return refuse(format!(
            "`{m}`: methods are case-sensitive; did you mean `{upper}`? (h2load's -m is \
             volley's --streams)"
        ));
    }
    Ok(m.to_string())
}

fn header(h: &str) -> Result<(String, String), ConfigError> {
    // Messages quote only what comes before the first space: the rest may be a credential.
    let start = h.split_whitespace().next().unwrap_or("");
    let shown = if start.len() < h.trim().len() {
        format!("{start} …")
    } else {
        start.to_string()
    };
    let (name, value) = h.split_once(':').ok_or_else(|| {
        ConfigError::flag(Flag::Header, format!("`{shown}` is not \"Name: value\""))
    })?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return Err(ConfigError::flag(
            Flag::Header,
            format!("`{shown}`: not a header name before the `:`"),
        ));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(ConfigError::flag(
            Flag::Header,
            format!("`{name}`: the value contains a line break"),
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

/// RFC 9110 token characters (method and header names).
pub(super) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A deterministic printable body for `--body-size` (a repeating alphabet, easy to spot in captures).
pub fn generated_body(n: usize) -> Vec<u8> {
    const PATTERN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    PATTERN.iter().copied().cycle().take(n).collect()
}
