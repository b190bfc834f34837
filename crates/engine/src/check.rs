//! A response's checks while it is parsed (`--expect-*`, a requests file's `expect_*`): which
//! header fields were there, whether each body substring was seen, the first
//! [`REGEX_WINDOW_BYTES`] of the body for a regex, and at the end the names of the checks it
//! failed. Bounded: a substring is found across reads with a carry of its own length minus
//! one, never by keeping the body.

pub(crate) mod watch;

use memchr::memmem;

use super::response::ResponseObserver;
use volley_plan::workload::{Checks, REGEX_WINDOW_BYTES};

/// The names a failed check is counted under (`checks {name: count}`).
pub(crate) const STATUS: &str = "status";
/// `--expect-body-contains`.
pub(crate) const BODY_CONTAINS: &str = "body_contains";
/// `--expect-body-regex`.
pub(crate) const BODY_REGEX: &str = "body_regex";
/// `--expect-header`.
pub const HEADER: &str = "header";
/// `--expect-size`.
pub(crate) const SIZE: &str = "size";
/// A journey's capture found no value.
pub(crate) const CAPTURE: &str = "capture";
/// `--grpc`: the call's `grpc-status` was not 0 (OK), or missing.
pub(crate) const GRPC: &str = "grpc_status";
/// `--expect-json`: a field missing or of another value (or the body not JSON).
pub(crate) const JSON: &str = "json";

/// The most `Set-Cookie` fields one response hands a user's jar (RFC 6265 §6.1: 50 per
/// domain): its newest ones. A field longer than a jar takes is not kept but counted as the
/// jar would have refused it ([`CheckState::set_cookies_too_large`]).
const MAX_SET_COOKIES: usize = 50;

/// One response's check state.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CheckState {
    /// Each expected header: seen (with its value, when one is expected).
    headers_seen: Vec<bool>,
    /// Each substring: found.
    found: Vec<bool>,
    /// The end of the body so far, as long as the longest unfound substring needs.
    carry: Vec<u8>,
    /// The body's first bytes, for the regex and body captures.
    window: Vec<u8>,
    /// Header captures' values, by capture (the first field of the name).
    captured_headers: Vec<Option<Vec<u8>>>,
    /// The response's `Set-Cookie` fields, when a journey reads them.
    set_cookies: Vec<Vec<u8>>,
    /// `Set-Cookie` fields not kept that a jar refuses for their size (over
    /// [`CookieJar::MAX_COOKIE_BYTES`](crate::journey::cookies::CookieJar::MAX_COOKIE_BYTES)):
    /// never kept.
    set_cookies_too_large: u32,
    /// `--grpc`: the call's `grpc-status` (head or trailers), when one came.
    pub grpc_status: Option<u16>,
    /// `--grpc`: its `grpc-message`, when one came (at most 256 bytes kept).
    pub grpc_message: Option<Vec<u8>>,
}

/// A `CheckState` watching one response against `checks`.
pub struct Watch<'a> {
    /// The state.
    pub state: &'a mut CheckState,
    /// What is checked.
    pub checks: &'a Checks,
}

impl CheckState {
    /// Ready for a new response against `checks`.
    pub fn reset(&mut self, checks: &Checks) {
        self.headers_seen.clear();
        self.headers_seen.resize(checks.headers.len(), false);
        self.found.clear();
        self.found.resize(checks.body_contains.len(), false);
        self.carry.clear();
        self.window.clear();
        self.captured_headers.clear();
        self.captured_headers.resize(checks.captures.len(), None);
        self.set_cookies.clear();
        self.set_cookies_too_large = 0;
        self.grpc_status = None;
        self.grpc_message = None;
    }

    /// What the complete response offers its captures.
    pub fn offered(&self) -> crate::journey::capture::Offered<'_> {
        crate::journey::capture::Offered {
            body: &self.window,
            headers: &self.captured_headers,
            set_cookies: &self.set_cookies,
            set_cookies_too_large: self.set_cookies_too_large,
        }
    }

    /// The checks a complete response of `status` with `body_bytes` bytes failed, in a fixed
    /// order (empty when it passed).
    pub fn failed(&self, checks: &Checks, status: u16, body_bytes: u64) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !checks.status_ok(status) {
            out.push(STATUS);
        }
        if checks
            .headers
            .iter()
            .enumerate()
            .any(|(k, _)| !self.headers_seen.get(k).copied().unwrap_or(false))
        {
            out.push(HEADER);
        }
        if checks.size.is_some_and(|n| n != body_bytes) {
            out.push(SIZE);
        }
        if checks
            .body_contains
            .iter()
            .enumerate()
            .any(|(k, _)| !self.found.get(k).copied().unwrap_or(false))
        {
            out.push(BODY_CONTAINS);
        }
        if let Some(re) = &checks.body_regex {
            if !re.is_match(&self.window) {
                out.push(BODY_REGEX);
            }
        }
        if checks.grpc && self.grpc_status != Some(0) {
            out.push(GRPC);
        }
        if !checks.json_passes(&self.window) {
            out.push(JSON);
        }
        out
    }
}

/// [`CheckState::content_failures`]: a header check failed.
pub const FAILED_HEADER: u8 = 1;
/// A body substring was not found.
pub const FAILED_BODY_CONTAINS: u8 = 2;
/// The body regex did not match.
pub const FAILED_BODY_REGEX: u8 = 4;
/// A journey's capture found no value.
pub const FAILED_CAPTURE: u8 = 8;
/// `--grpc`: the call's `grpc-status` was not OK.
pub const FAILED_GRPC: u8 = 16;
/// `--expect-json`: a field missing or of another value.
pub const FAILED_JSON: u8 = 32;

impl CheckState {
    /// The header and body checks a complete response failed, as [`FAILED_HEADER`]-style
    /// bits: what an HTTP/2 stream's session reports (the session's `Event::Checked`),
    /// its status and size being the worker's to judge ([`failed_with`]).
    pub fn content_failures(&self, checks: &Checks) -> u8 {
        let failed = self.failed(checks, 0, 0);
        let mut bits = 0;
        for (name, bit) in [
            (HEADER, FAILED_HEADER),
            (BODY_CONTAINS, FAILED_BODY_CONTAINS),
            (BODY_REGEX, FAILED_BODY_REGEX),
            (GRPC, FAILED_GRPC),
            (JSON, FAILED_JSON),
        ] {
            if failed.contains(&name) {
                bits |= bit;
            }
        }
        bits
    }
}

/// The checks a response of `status` with `body_bytes` failed, its header and body checks
/// having failed as `content` says ([`CheckState::content_failures`]), in
/// [`CheckState::failed`]'s order.
pub fn failed_with(
    checks: &Checks,
    status: u16,
    body_bytes: u64,
    content: u8,
) -> Vec<&'static str> {
    let mut out = Vec::new();
    if !checks.status_ok(status) {
        out.push(STATUS);
    }
    if content & FAILED_HEADER != 0 {
        out.push(HEADER);
    }
    if checks.size.is_some_and(|n| n != body_bytes) {
        out.push(SIZE);
    }
    if content & FAILED_BODY_CONTAINS != 0 {
        out.push(BODY_CONTAINS);
    }
    if content & FAILED_BODY_REGEX != 0 {
        out.push(BODY_REGEX);
    }
    if content & FAILED_CAPTURE != 0 {
        out.push(CAPTURE);
    }
    if content & FAILED_GRPC != 0 {
        out.push(GRPC);
    }
    if content & FAILED_JSON != 0 {
        out.push(JSON);
    }
    out
}

impl Watch<'_> {
    /// `--grpc`: a field of the head or the trailers, read for `grpc-status` and
    /// `grpc-message` only.
    pub(crate) fn grpc_field(&mut self, name: &str, value: &[u8]) {
        if !self.checks.grpc {
            return;
        }
        let s = &mut *self.state;
        if name.eq_ignore_ascii_case("grpc-status") {
            s.grpc_status = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.trim().parse().ok());
        } else if name.eq_ignore_ascii_case("grpc-message") {
            s.grpc_message = Some(value[..value.len().min(256)].to_vec());
        }
    }
}

impl ResponseObserver for Watch<'_> {
    fn header(&mut self, name: &str, value: &[u8]) {
        self.grpc_field(name, value);
        for (k, (want, v)) in self.checks.headers.iter().enumerate() {
            if name.eq_ignore_ascii_case(want)
                && v.as_ref()
                    .is_none_or(|v| value.trim_ascii() == v.as_bytes())
            {
                if let Some(seen) = self.state.headers_seen.get_mut(k) {
                    *seen = true;
                }
            }
        }
        if self.checks.captures.is_empty() && !self.checks.set_cookies {
            return;
        }
        let s = &mut *self.state;
        for (k, c) in self.checks.captures.iter().enumerate() {
            if let volley_plan::journey::CaptureFrom::Header(want) = &c.from {
                if name.eq_ignore_ascii_case(want) && s.captured_headers[k].is_none() {
                    s.captured_headers[k] = Some(value.trim_ascii().to_vec());
                }
            }
        }
        if name.eq_ignore_ascii_case("set-cookie") {
            if value.len() > crate::journey::cookies::CookieJar::MAX_COOKIE_BYTES {
                // The jar would refuse it: counted as refused, not kept.
                s.set_cookies_too_large = s.set_cookies_too_large.saturating_add(1);
            } else {
                // The newest fields are kept, as a jar storing every one would keep its
                // newest cookies.
                if s.set_cookies.len() == MAX_SET_COOKIES {
                    s.set_cookies.remove(0);
                }
                s.set_cookies.push(value.to_vec());
            }
        }
    }

    fn body(&mut self, bytes: &[u8]) {
        let s = &mut *self.state;
        if self.checks.body_window() && s.window.len() < REGEX_WINDOW_BYTES {
            let room = REGEX_WINDOW_BYTES - s.window.len();
            s.window.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        if self.checks.body_contains.is_empty() || s.found.iter().all(|f| *f) {
            return;
        }
        // Each needle is looked for in the carried end of the body so far joined to the new
        // bytes, so one split across reads (or chunks) is found too.
        let mut joined = std::mem::take(&mut s.carry);
        joined.extend_from_slice(bytes);
        let mut keep = 0;
        for (k, needle) in self.checks.body_contains.iter().enumerate() {
            if s.found[k] {
                continue;
            }
            if memmem::find(&joined, needle).is_some() {
                s.found[k] = true;
            } else {
                keep = keep.max(needle.len().saturating_sub(1));
            }
        }
        let from = joined.len().saturating_sub(keep);
        joined.drain(..from);
        s.carry = joined;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::ResponseParser;

    fn checks() -> Checks {
        Checks {
            status: vec![(200, 299)],
            body_contains: vec![b"needle".to_vec(), b"ok".to_vec()],
            body_regex: Some(regex::bytes::Regex::new(r"^HEAD\d+").unwrap()),
            headers: vec![
                ("content-type".into(), Some("text/plain".into())),
                ("x-id".into(), None),
            ],
            size: None,
            ..Default::default()
        }
    }

    /// Parses `wire` in reads of `step` bytes and returns the failed checks.
    fn run(wire: &[u8], step: usize, c: &Checks) -> Vec<&'static str> {
        let mut p = ResponseParser::new(false);
        let mut st = CheckState::default();
        st.reset(c);
        let mut off = 0;
        while off < wire.len() {
            let end = (off + step).min(wire.len());
            let mut chunk = &wire[off..end];
            while !chunk.is_empty() {
                let mut w = Watch {
                    state: &mut st,
                    checks: c,
                };
                let (used, done) = p.feed_with(chunk, &mut w).unwrap();
                if let Some(r) = done {
                    return st.failed(c, r.status, r.body_bytes);
                }
                chunk = &chunk[used..];
            }
            off = end;
        }
        panic!("incomplete");
    }

    #[test]
    fn a_passing_response_passes_however_it_is_split() {
        let c = checks();
        let body = b"HEAD42 ... a needle in the middle ... ok";
        let wire = [
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type:  text/plain \r\nX-Id: 7\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
            body,
        ]
        .concat();
        for step in [1, 2, 3, 7, 1000] {
            assert_eq!(run(&wire, step, &c), Vec::<&str>::new(), "step {step}");
        }
        // Chunked: the needle split across chunks is found too.
        let chunked = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-id: 1\r\nTransfer-Encoding: chunked\r\n\r\n8\r\nHEAD1 ne\r\n9\r\nedle, ok.\r\n0\r\n\r\n";
        for step in [1, 5, 1000] {
            assert_eq!(run(chunked, step, &c), Vec::<&str>::new(), "step {step}");
        }
    }

    #[test]
    fn each_failed_check_is_named() {
        let c = checks();
        let wire =
            b"HTTP/1.1 503 No\r\nContent-Type: text/html\r\nContent-Length: 9\r\n\r\nneedle...";
        assert_eq!(
            run(wire, 4, &c),
            [STATUS, HEADER, BODY_CONTAINS, BODY_REGEX]
        );
        let sized = Checks {
            size: Some(10),
            ..Default::default()
        };
        assert_eq!(run(wire, 4, &sized), [SIZE]);
        assert!(run(wire, 4, &Checks::default()).is_empty());
    }

    #[test]
    fn the_regex_sees_only_the_first_window_and_memory_stays_bounded() {
        let c = Checks {
            body_regex: Some(regex::bytes::Regex::new("TAIL").unwrap()),
            body_contains: vec![b"TAIL".to_vec()],
            ..Default::default()
        };
        let n = REGEX_WINDOW_BYTES + 10;
        let mut body = vec![b'x'; n];
        body[n - 4..].copy_from_slice(b"TAIL");
        let wire = [
            format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").as_bytes(),
            &body,
        ]
        .concat();
        // Past the window: the regex does not see it (documented), the substring does.
        assert_eq!(run(&wire, 4096, &c), [BODY_REGEX]);
    }

    #[test]
    fn set_cookie_fields_not_kept_are_counted_when_a_jar_would_refuse_them() {
        let c = Checks {
            set_cookies: true,
            ..Default::default()
        };
        let mut st = CheckState::default();
        st.reset(&c);
        let mut w = Watch {
            state: &mut st,
            checks: &c,
        };
        let large = |n| [b"big=".as_slice(), &vec![b'b'; n]].concat();
        w.header("set-cookie", &large(5000));
        w.header("set-cookie", &large(40 << 10));
        for i in 0..MAX_SET_COOKIES + 10 {
            w.header("Set-Cookie", format!("c{i}=v").as_bytes());
        }
        w.header("set-cookie", &large(5000));
        w.header("set-cookie", b"late=1");
        let o = st.offered();
        // The newest 50 that a jar takes, as a jar storing each would keep; the large ones
        // counted as it would refuse them.
        assert_eq!(o.set_cookies.len(), MAX_SET_COOKIES);
        assert_eq!(o.set_cookies[0], b"c11=v");
        assert_eq!(o.set_cookies[MAX_SET_COOKIES - 1], b"late=1");
        assert_eq!(o.set_cookies_too_large, 3, "5000 bytes twice and 40 KiB");
        st.reset(&c);
        assert_eq!(st.offered().set_cookies_too_large, 0);
    }
}
