//! A virtual user's cookies (RFC 6265) on a journey against one host: what a `Set-Cookie`
//! stores (§5.2, §5.3) and what a request's `Cookie` header carries (§5.4).
//!
//! One jar per user, and one host per run: every cookie in a jar came from that host (a
//! host-only cookie) or names a domain the host is in (a domain cookie), so the header is
//! built without a host to match. Bounded as §6.1 allows: [`CookieJar::MAX_COOKIES`] cookies
//! of at most [`CookieJar::MAX_COOKIE_BYTES`] each, the oldest evicted to make room for a new
//! one. A cookie's bytes live in one buffer that is reused when the cookie is replaced,
//! removed or cleared, so a user that keeps receiving the same cookies allocates nothing
//! after its first ones; a header allocates nothing but `out`'s growth.
//!
//! Left out, as nothing here needs them: the public suffix list (one host), `HttpOnly` and
//! `SameSite` (no scripts, no other sites), the `__Secure-` and `__Host-` name prefixes,
//! RFC 6265bis's rule that plain http may not overwrite a `Secure` cookie (a run's requests
//! all use one scheme), and last-access times (eviction takes the oldest created).

use std::fmt;
use std::net::IpAddr;

/// Why a Set-Cookie was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No `=` in the name-value pair, an empty name (§5.2 steps 2 and 5), or a control
    /// character in the name or value (RFC 6265bis): it would be sent back in a header.
    Syntax,
    /// Longer than [`CookieJar::MAX_COOKIE_BYTES`] (§6.1).
    TooLarge,
    /// A `Domain` attribute the request's host is not in (§5.3 step 6).
    OtherDomain,
    /// A `Secure` cookie received over plain http (RFC 6265bis ignores it).
    InsecureSecure,
}

impl Refused {
    /// Short human text: "Set-Cookie refused: {reason}".
    pub fn reason(self) -> &'static str {
        match self {
            Refused::Syntax => "not name=value with a non-empty name and no control characters",
            Refused::TooLarge => "larger than 4096 bytes",
            Refused::OtherDomain => "Domain attribute the host is not in",
            Refused::InsecureSecure => "Secure cookie over plain http",
        }
    }
}

/// One stored cookie: name, value, path and domain back to back in `bytes`.
#[derive(Clone)]
struct Cookie {
    bytes: Vec<u8>,
    name_len: usize,
    value_len: usize,
    path_len: usize,
    /// Unix seconds; `u64::MAX` for a session cookie (never expires within a run).
    expires: u64,
    /// Creation order within the jar (§5.3 step 11: a replacement keeps the old one's).
    created: u64,
    secure: bool,
    /// No `Domain` attribute: the domain is the host's.
    host_only: bool,
}

impl Cookie {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..self.name_len + self.value_len]
    }

    fn path(&self) -> &[u8] {
        let start = self.name_len + self.value_len;
        &self.bytes[start..start + self.path_len]
    }

    fn domain(&self) -> &[u8] {
        &self.bytes[self.name_len + self.value_len + self.path_len..]
    }

    /// Writes the fields into the buffer it has (no allocation once it is large enough).
    fn fill(&mut self, new: &Parsed<'_>, path: &[u8], domain: &[u8]) {
        self.bytes.clear();
        self.bytes.extend_from_slice(new.name);
        self.bytes.extend_from_slice(new.value);
        self.bytes.extend_from_slice(path);
        self.bytes
            .extend(domain.iter().map(|b| b.to_ascii_lowercase()));
        self.name_len = new.name.len();
        self.value_len = new.value.len();
        self.path_len = path.len();
        self.expires = new.expires;
        self.secure = new.secure;
        self.host_only = new.domain.is_none();
    }
}

impl fmt::Debug for Cookie {
    // The value is a credential more often than not: its length only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cookie")
            .field("name", &String::from_utf8_lossy(self.name()))
            .field("value_bytes", &self.value_len)
            .field("domain", &String::from_utf8_lossy(self.domain()))
            .field("host_only", &self.host_only)
            .field("path", &String::from_utf8_lossy(self.path()))
            .field(
                "expires",
                &(self.expires != u64::MAX).then_some(self.expires),
            )
            .field("secure", &self.secure)
            .finish()
    }
}

/// A virtual user's cookies for one host (RFC 6265 §5.3, §5.4), in the order a `Cookie`
/// header lists them: longer paths first, then earlier created first (§5.4 step 2).
#[derive(Default)]
pub struct CookieJar {
    /// Sorted by path length (longest first), then by creation.
    cookies: Vec<Cookie>,
    /// Buffers of removed cookies, for the next ones (at most [`CookieJar::MAX_COOKIES`]
    /// buffers exist at once, stored and spare together).
    spare: Vec<Vec<u8>>,
    /// The next cookie's creation number.
    next: u64,
}

impl fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CookieJar")
            .field("cookies", &self.cookies)
            .finish_non_exhaustive()
    }
}

impl Clone for CookieJar {
    // The spare buffers stay behind: a copy has none yet.
    fn clone(&self) -> Self {
        CookieJar {
            cookies: self.cookies.clone(),
            spare: Vec::new(),
            next: self.next,
        }
    }
}

impl CookieJar {
    /// Cookies a jar holds (RFC 6265 §6.1: at least 50 per domain); a new one past this
    /// evicts an expired one, else the oldest created.
    pub const MAX_COOKIES: usize = 50;
    /// The largest Set-Cookie stored: name, value and attributes (RFC 6265 §6.1).
    pub const MAX_COOKIE_BYTES: usize = 4096;

    /// An empty jar.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every cookie (a new user), keeping the buffers for the next ones.
    pub fn clear(&mut self) {
        for c in self.cookies.drain(..) {
            self.spare.push(c.bytes);
        }
        self.next = 0;
    }

    /// No cookie stored.
    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// Cookies stored, expired ones not dropped yet included.
    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    /// Stores one Set-Cookie field value (bytes as received) from a response to a request for
    /// `request_path` (path and query as sent, from '/') on `host` (the request's host name, no
    /// port, lower case), over TLS when `secure`; `now_s` is Unix time in seconds.
    ///
    /// A cookie with the name, domain and path of a stored one replaces it, in its place
    /// (§5.3 step 11); an expired one (`Max-Age=0`, an `Expires` in the past) removes it and is
    /// not stored, which is `Ok`. A full jar makes room (an expired cookie, else the oldest),
    /// so only the cookie itself can be refused.
    pub fn store(
        &mut self,
        set_cookie: &[u8],
        host: &str,
        request_path: &[u8],
        secure: bool,
        now_s: u64,
    ) -> Result<(), Refused> {
        if set_cookie.len() > Self::MAX_COOKIE_BYTES {
            return Err(Refused::TooLarge);
        }
        let new = parse(set_cookie, now_s)?;
        if new.secure && !secure {
            return Err(Refused::InsecureSecure);
        }
        let domain = match new.domain {
            Some(d) if domain_match(host.as_bytes(), d) => d,
            Some(_) => return Err(Refused::OtherDomain),
            None => host.as_bytes(),
        };
        let path = new.path.unwrap_or_else(|| default_path(request_path));
        let expired = new.expires <= now_s;

        let same = self.cookies.iter().position(|c| {
            c.name() == new.name && c.path() == path && c.domain().eq_ignore_ascii_case(domain)
        });
        if let Some(i) = same {
            if expired {
                let old = self.cookies.remove(i);
                self.spare.push(old.bytes);
            } else {
                // Same path, so the same place in the order; the creation number stays.
                self.cookies[i].fill(&new, path, domain);
            }
            return Ok(());
        }
        if expired {
            return Ok(());
        }
        if self.cookies.len() >= Self::MAX_COOKIES {
            self.drop_expired(now_s);
        }
        if self.cookies.len() >= Self::MAX_COOKIES {
            let oldest = (0..self.cookies.len())
                .min_by_key(|&i| self.cookies[i].created)
                .unwrap_or(0);
            let old = self.cookies.remove(oldest);
            self.spare.push(old.bytes);
        }
        let mut cookie = Cookie {
            bytes: self.spare.pop().unwrap_or_default(),
            name_len: 0,
            value_len: 0,
            path_len: 0,
            expires: 0,
            created: self.next,
            secure: false,
            host_only: true,
        };
        self.next += 1;
        cookie.fill(&new, path, domain);
        // Newest of its path length: after every cookie whose path is at least as long.
        let at = self.cookies.partition_point(|c| c.path_len >= path.len());
        self.cookies.insert(at, cookie);
        Ok(())
    }

    /// Appends the `Cookie` header's value for a request to `path` over TLS when `secure`
    /// ("a=1; b=2", no "Cookie: " prefix and no CRLF) to `out`; drops expired cookies; returns
    /// false (and appends nothing) when no cookie applies.
    ///
    /// `path` may carry its query: cookies match the path before the `?` (§5.1.4). Every
    /// cookie in the jar is taken to be for the request's host (one host per jar).
    pub fn header_value(
        &mut self,
        path: &[u8],
        secure: bool,
        now_s: u64,
        out: &mut Vec<u8>,
    ) -> bool {
        self.drop_expired(now_s);
        let path = match without_query(path) {
            b"" => b"/",
            p => p,
        };
        let start = out.len();
        for c in &self.cookies {
            if (c.secure && !secure) || !path_match(c.path(), path) {
                continue;
            }
            if out.len() > start {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(c.name());
            out.push(b'=');
            out.extend_from_slice(c.value());
        }
        out.len() > start
    }

    /// Removes the cookies expired at `now_s`, keeping their buffers.
    fn drop_expired(&mut self, now_s: u64) {
        let spare = &mut self.spare;
        self.cookies.retain_mut(|c| {
            let keep = c.expires > now_s;
            if !keep {
                spare.push(std::mem::take(&mut c.bytes));
            }
            keep
        });
    }
}

/// A Set-Cookie's fields (§5.2), borrowed from the line.
struct Parsed<'a> {
    name: &'a [u8],
    value: &'a [u8],
    /// Unix seconds (`u64::MAX`: a session cookie); `Max-Age` over `Expires` (§5.3 step 3).
    expires: u64,
    /// The last non-empty `Domain`, leading '.' dropped; `None` for none or "." (host-only).
    domain: Option<&'a [u8]>,
    /// The last `Path` if it starts with '/'; `None` for the default path.
    path: Option<&'a [u8]>,
    secure: bool,
}

/// §5.2: the name-value pair up to the first ';', then the attributes, names without case.
fn parse(line: &[u8], now_s: u64) -> Result<Parsed<'_>, Refused> {
    let (pair, attributes) = match line.iter().position(|&b| b == b';') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &b""[..]),
    };
    let eq = pair
        .iter()
        .position(|&b| b == b'=')
        .ok_or(Refused::Syntax)?;
    let name = trim(&pair[..eq]);
    let value = trim(&pair[eq + 1..]);
    if name.is_empty() || name.iter().chain(value).any(|&b| is_control(b)) {
        return Err(Refused::Syntax);
    }
    let mut parsed = Parsed {
        name,
        value,
        expires: u64::MAX,
        domain: None,
        path: None,
        secure: false,
    };
    let (mut max_age, mut expires) = (None, None);
    for av in attributes.split(|&b| b == b';') {
        let (key, value) = match av.iter().position(|&b| b == b'=') {
            Some(i) => (trim(&av[..i]), trim(&av[i + 1..])),
            None => (trim(av), &b""[..]),
        };
        if key.eq_ignore_ascii_case(b"expires") {
            // An Expires that is not a date is ignored (§5.2.1).
            expires = cookie_date(value).or(expires);
        } else if key.eq_ignore_ascii_case(b"max-age") {
            max_age = max_age_expiry(value, now_s).or(max_age);
        } else if key.eq_ignore_ascii_case(b"domain") {
            // An empty Domain is ignored; "." is one with nothing after the dot (§5.2.3).
            if !value.is_empty() {
                let d = value.strip_prefix(b".").unwrap_or(value);
                parsed.domain = (!d.is_empty()).then_some(d);
            }
        } else if key.eq_ignore_ascii_case(b"path") {
            parsed.path = (value.first() == Some(&b'/')).then_some(value);
        } else if key.eq_ignore_ascii_case(b"secure") {
            parsed.secure = true;
        }
        // HttpOnly, SameSite and unknown attributes: nothing to do for one host without scripts.
    }
    parsed.expires = max_age.or(expires).unwrap_or(u64::MAX);
    Ok(parsed)
}

/// Without leading and trailing spaces and tabs (WSP).
fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// A control character other than HTAB.
fn is_control(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// §5.2.2: `-`? DIGIT+; zero or negative expires now, else `now_s` + seconds (saturating).
fn max_age_expiry(value: &[u8], now_s: u64) -> Option<u64> {
    let (negative, digits) = match value {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, value),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let seconds = digits.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    Some(if negative || seconds == 0 {
        0
    } else {
        now_s.saturating_add(seconds)
    })
}

/// §5.1.1's cookie date, as Unix seconds (0 for a date before 1970). The RFC's tokenizer,
/// not HTTP's date formats: servers send `Thu, 01-Jan-1970 00:00:01 GMT` (the Netscape
/// format, PHP and Tomcat among others) and two-digit years, and such an `Expires` that
/// went unread would leave the cookie it deletes in place.
fn cookie_date(value: &[u8]) -> Option<u64> {
    let (mut time, mut day, mut month, mut year) = (None, None, None, None);
    for token in value.split(|&b| is_date_delimiter(b)) {
        if token.is_empty() {
            continue;
        }
        if time.is_none() {
            if let Some(t) = hms(token) {
                time = Some(t);
                continue;
            }
        }
        if day.is_none() {
            if let Some(d) = leading_number(token, 1, 2) {
                day = Some(d);
                continue;
            }
        }
        if month.is_none() {
            if let Some(m) = month_of(token) {
                month = Some(m);
                continue;
            }
        }
        if year.is_none() {
            if let Some(y) = leading_number(token, 2, 4) {
                year = Some(y);
            }
        }
    }
    let ((hour, minute, second), day, month, mut year) = (time?, day?, month?, year?);
    match year {
        70..=99 => year += 1900,
        0..=69 => year += 2000,
        _ => {}
    }
    if year < 1601 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(i64::from(year), month, day);
    let seconds =
        days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second);
    Some(u64::try_from(seconds).unwrap_or(0))
}

/// §5.1.1's delimiter: %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E.
fn is_date_delimiter(b: u8) -> bool {
    matches!(b, 0x09 | 0x20..=0x2f | 0x3b..=0x40 | 0x5b..=0x60 | 0x7b..=0x7e)
}

/// `min` to `max` leading digits, then nothing or a non-digit (§5.1.1's time-field,
/// day-of-month and year).
fn leading_number(token: &[u8], min: usize, max: usize) -> Option<u32> {
    let n = token.iter().take_while(|b| b.is_ascii_digit()).count();
    if n < min || n > max {
        return None;
    }
    Some(
        token[..n]
            .iter()
            .fold(0, |v, &d| v * 10 + u32::from(d - b'0')),
    )
}

/// §5.1.1's time: 1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT, then nothing or a non-digit.
fn hms(token: &[u8]) -> Option<(u32, u32, u32)> {
    let mut fields = [0; 3];
    let mut rest = token;
    for (i, field) in fields.iter_mut().enumerate() {
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        *field = leading_number(rest, 1, 2)?;
        rest = &rest[n..];
        if i < 2 {
            rest = rest.strip_prefix(b":")?;
        }
    }
    Some((fields[0], fields[1], fields[2]))
}

/// §5.1.1's month: a token starting with a month's first three letters, any case.
fn month_of(token: &[u8]) -> Option<u32> {
    const MONTHS: [&[u8; 3]; 12] = [
        b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov",
        b"dec",
    ];
    let head = token.get(..3)?;
    let i = MONTHS.iter().position(|m| head.eq_ignore_ascii_case(*m))?;
    Some(i as u32 + 1)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// §5.1.3: the domain is the host, or the host ends with '.' and the domain and is a name,
/// not an IP address. Without case: the host is lower case, the attribute as sent.
fn domain_match(host: &[u8], domain: &[u8]) -> bool {
    if host.eq_ignore_ascii_case(domain) {
        return true;
    }
    if is_ip(host) || host.len() <= domain.len() {
        return false;
    }
    let dot = host.len() - domain.len() - 1;
    host[dot] == b'.' && host[dot + 1..].eq_ignore_ascii_case(domain)
}

/// An IPv4 or IPv6 address, bracketed or not.
fn is_ip(host: &[u8]) -> bool {
    let host = match host {
        [b'[', inner @ .., b']'] => inner,
        _ => host,
    };
    std::str::from_utf8(host).is_ok_and(|h| h.parse::<IpAddr>().is_ok())
}

/// The path of a request target, before any query.
fn without_query(path: &[u8]) -> &[u8] {
    match path.iter().position(|&b| b == b'?') {
        Some(i) => &path[..i],
        None => path,
    }
}

/// §5.1.4's default path: the request path's directory, "/" when it has none.
fn default_path(request_path: &[u8]) -> &[u8] {
    let path = without_query(request_path);
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) if i > 0 && path[0] == b'/' => &path[..i],
        _ => b"/",
    }
}

/// §5.1.4's path-match: equal, or a prefix ending at a '/' of either path.
fn path_match(cookie_path: &[u8], request_path: &[u8]) -> bool {
    request_path.starts_with(cookie_path)
        && (request_path.len() == cookie_path.len()
            || cookie_path.ends_with(b"/")
            || request_path[cookie_path.len()] == b'/')
}

#[cfg(test)]
mod tests;
