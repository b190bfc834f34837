//! The cookie jar against RFC 6265's rules for one host, and hostile Set-Cookie lines.

use super::*;

const HOST: &str = "shop.example.com";
/// 2023-11-14T22:13:20Z.
const NOW: u64 = 1_700_000_000;

fn store(jar: &mut CookieJar, line: &str) -> Result<(), Refused> {
    jar.store(line.as_bytes(), HOST, b"/", true, NOW)
}

fn header(jar: &mut CookieJar, path: &str, secure: bool, now_s: u64) -> Option<String> {
    let mut out = Vec::new();
    let sent = jar.header_value(path.as_bytes(), secure, now_s, &mut out);
    assert_eq!(sent, !out.is_empty());
    sent.then(|| String::from_utf8(out).unwrap())
}

fn sent(jar: &mut CookieJar, path: &str) -> Option<String> {
    header(jar, path, true, NOW)
}

#[test]
fn stores_and_sends() {
    let mut jar = CookieJar::new();
    assert!(jar.is_empty());
    assert_eq!(sent(&mut jar, "/"), None);
    store(&mut jar, "sid=abc123; Path=/; HttpOnly; SameSite=Lax").unwrap();
    store(&mut jar, " lang = en ").unwrap();
    assert_eq!(jar.len(), 2);
    assert_eq!(
        sent(&mut jar, "/cart?x=1").as_deref(),
        Some("sid=abc123; lang=en")
    );

    // Appended to what `out` holds, nothing when no cookie applies.
    let mut out = b"Cookie: ".to_vec();
    assert!(jar.header_value(b"/", true, NOW, &mut out));
    assert_eq!(out, b"Cookie: sid=abc123; lang=en");
    let mut out = b"x".to_vec();
    jar.clear();
    assert!(jar.is_empty());
    assert!(!jar.header_value(b"/", true, NOW, &mut out));
    assert_eq!(out, b"x");
}

#[test]
fn same_name_domain_and_path_replaces_in_place() {
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1").unwrap();
    store(&mut jar, "b=2").unwrap();
    store(&mut jar, "a=3; Secure").unwrap();
    assert_eq!(jar.len(), 2);
    // Keeps a's creation order: still first.
    assert_eq!(sent(&mut jar, "/").as_deref(), Some("a=3; b=2"));
    assert_eq!(header(&mut jar, "/", false, NOW).as_deref(), Some("b=2"));

    // Another path or domain is another cookie.
    store(&mut jar, "a=4; Path=/x").unwrap();
    store(&mut jar, "a=5; Domain=example.com").unwrap();
    assert_eq!(jar.len(), 4);
    assert_eq!(sent(&mut jar, "/x").as_deref(), Some("a=4; a=3; b=2; a=5"));
    // Domain=<host> is the host-only cookie's domain: the same cookie.
    store(&mut jar, "b=6; Domain=SHOP.example.com").unwrap();
    assert_eq!(jar.len(), 4);
    assert_eq!(sent(&mut jar, "/").as_deref(), Some("a=3; b=6; a=5"));
}

#[test]
fn max_age_zero_and_a_past_expires_delete() {
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1").unwrap();
    store(&mut jar, "b=2").unwrap();
    store(&mut jar, "c=3").unwrap();
    store(&mut jar, "a=; Max-Age=0").unwrap();
    store(&mut jar, "b=deleted; Expires=Thu, 01 Jan 1970 00:00:00 GMT").unwrap();
    store(&mut jar, "c=x; Max-Age=-5").unwrap();
    assert!(jar.is_empty());
    // An expired cookie with nothing to delete is not stored either.
    store(&mut jar, "d=1; Max-Age=0").unwrap();
    assert!(jar.is_empty());
    // Other paths are other cookies: not deleted.
    store(&mut jar, "e=1; Path=/a").unwrap();
    store(&mut jar, "e=; Max-Age=0").unwrap();
    assert_eq!(jar.len(), 1);
}

#[test]
fn max_age_wins_over_expires_in_either_order() {
    let mut jar = CookieJar::new();
    store(
        &mut jar,
        "a=1; Max-Age=60; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
    )
    .unwrap();
    store(
        &mut jar,
        "b=2; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=60",
    )
    .unwrap();
    store(
        &mut jar,
        "c=3; Expires=Fri, 01 Jan 2100 00:00:00 GMT; Max-Age=0",
    )
    .unwrap();
    assert_eq!(sent(&mut jar, "/").as_deref(), Some("a=1; b=2"));
    assert_eq!(
        header(&mut jar, "/", true, NOW + 59).as_deref(),
        Some("a=1; b=2")
    );
    assert_eq!(header(&mut jar, "/", true, NOW + 60), None);
}

#[test]
fn cookies_expire_as_time_passes() {
    let mut jar = CookieJar::new();
    store(&mut jar, "short=1; Max-Age=10").unwrap();
    store(&mut jar, "session=2").unwrap();
    // A day after NOW.
    store(&mut jar, "dated=3; Expires=Wed, 15 Nov 2023 22:13:20 GMT").unwrap();
    assert_eq!(jar.len(), 3);
    assert_eq!(
        header(&mut jar, "/", true, NOW + 9).as_deref(),
        Some("short=1; session=2; dated=3")
    );
    assert_eq!(
        header(&mut jar, "/", true, NOW + 10).as_deref(),
        Some("session=2; dated=3")
    );
    assert_eq!(jar.len(), 2);
    assert_eq!(
        header(&mut jar, "/", true, NOW + 86_399).as_deref(),
        Some("session=2; dated=3")
    );
    assert_eq!(
        header(&mut jar, "/", true, NOW + 86_400).as_deref(),
        Some("session=2")
    );
    assert_eq!(
        header(&mut jar, "/", true, u64::MAX - 1).as_deref(),
        Some("session=2")
    );
    assert_eq!(jar.len(), 1);
}

#[test]
fn huge_and_odd_max_ages() {
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1; Max-Age=1000000000000000000000000000000").unwrap();
    store(&mut jar, "b=1; Max-Age=-1000000000000000000000000000000").unwrap();
    // Not an integer: ignored, a session cookie.
    store(&mut jar, "c=1; Max-Age=10s").unwrap();
    store(&mut jar, "d=1; Max-Age=").unwrap();
    store(&mut jar, "e=1; Max-Age=-").unwrap();
    store(&mut jar, "f=1; Max-Age=+5").unwrap();
    assert_eq!(
        header(&mut jar, "/", true, u64::MAX - 1).as_deref(),
        Some("a=1; c=1; d=1; e=1; f=1")
    );
    let mut jar = CookieJar::new();
    jar.store(b"a=1; Max-Age=5", HOST, b"/", true, u64::MAX - 1)
        .unwrap();
    assert_eq!(jar.len(), 1);
}

#[test]
fn cookie_dates() {
    let at = |s: &str| cookie_date(s.as_bytes());
    assert_eq!(at("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
    assert_eq!(at("Sunday, 06-Nov-94 08:49:37 GMT"), Some(784_111_777));
    assert_eq!(at("Sun Nov  6 08:49:37 1994"), Some(784_111_777));
    assert_eq!(at("Sun, 06-Nov-1994 08:49:37 GMT"), Some(784_111_777));
    assert_eq!(at("6 november 1994 8:49:37"), Some(784_111_777));
    assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(at("Thu, 31-Dec-37 23:55:55 GMT"), Some(2_145_916_555));
    assert_eq!(at("Tue, 29 Feb 2000 00:00:00 GMT"), Some(951_782_400));
    assert_eq!(at("Fri, 31 Dec 9999 23:59:59 GMT"), Some(253_402_300_799));
    // Before 1970: expired.
    assert_eq!(at("Mon, 01 Jan 1601 00:00:00 GMT"), Some(0));
    for bad in [
        "",
        "tomorrow",
        "Sun, 06 Nov 1994",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 32 Nov 1994 08:49:37 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Mon, 29 Feb 1900 00:00:00 GMT",
        "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1600 08:49:37 GMT",
        "Sun, 06 Nov 19945 08:49:37 GMT",
        "Sun, 06 Xyz 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 108:49:37 GMT",
    ] {
        assert_eq!(at(bad), None, "{bad:?}");
    }
    // An Expires that is not a date is ignored: a session cookie.
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1; Expires=soon").unwrap();
    assert_eq!(
        header(&mut jar, "/", true, u64::MAX - 1).as_deref(),
        Some("a=1")
    );
}

#[test]
fn default_path_is_the_request_directory() {
    assert_eq!(default_path(b"/a/b/c?x=1"), b"/a/b");
    assert_eq!(default_path(b"/a/b/c?x=/y/z"), b"/a/b");
    assert_eq!(default_path(b"/a/"), b"/a");
    assert_eq!(default_path(b"/a"), b"/");
    assert_eq!(default_path(b"/"), b"/");
    assert_eq!(default_path(b""), b"/");
    assert_eq!(default_path(b"*"), b"/");
    assert_eq!(default_path(b"a/b"), b"/");
    assert_eq!(default_path(b"?/x/y"), b"/");

    let mut jar = CookieJar::new();
    jar.store(b"d=1", HOST, b"/a/b/c?x=1", true, NOW).unwrap();
    // A Path not starting with '/' is the default path.
    jar.store(b"e=1; Path=x/y", HOST, b"/a/b/c", true, NOW)
        .unwrap();
    // The last Path counts.
    jar.store(b"f=1; Path=/; Path=/q", HOST, b"/a/b/c", true, NOW)
        .unwrap();
    assert_eq!(sent(&mut jar, "/a/b").as_deref(), Some("d=1; e=1"));
    assert_eq!(sent(&mut jar, "/a/b/zz?k=v").as_deref(), Some("d=1; e=1"));
    assert_eq!(sent(&mut jar, "/a/bc"), None);
    assert_eq!(sent(&mut jar, "/q/r").as_deref(), Some("f=1"));
}

#[test]
fn path_match_table() {
    let cases: [(&str, &str, bool); 14] = [
        ("/", "/", true),
        ("/", "/a", true),
        ("/", "/a/b", true),
        ("/a", "/a", true),
        ("/a", "/a/", true),
        ("/a", "/a/b", true),
        ("/a", "/ab", false),
        ("/a", "/", false),
        ("/a", "/b", false),
        ("/a/", "/a/", true),
        ("/a/", "/a/b", true),
        ("/a/", "/a", false),
        ("/a/b", "/a", false),
        ("/a/b", "/a/b", true),
    ];
    for (cookie, request, matches) in cases {
        assert_eq!(
            path_match(cookie.as_bytes(), request.as_bytes()),
            matches,
            "{cookie} on {request}"
        );
    }
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1; Path=/a").unwrap();
    assert_eq!(sent(&mut jar, "/a?q=/b").as_deref(), Some("a=1"));
    assert_eq!(sent(&mut jar, "/ab"), None);
    assert_eq!(sent(&mut jar, "/?/a"), None);
    // An empty path is "/".
    store(&mut jar, "b=1").unwrap();
    assert_eq!(sent(&mut jar, "").as_deref(), Some("b=1"));
}

#[test]
fn domain_attribute() {
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1; Domain=shop.example.com").unwrap();
    store(&mut jar, "b=1; Domain=.Example.COM").unwrap();
    store(&mut jar, "c=1; Domain=com").unwrap();
    store(&mut jar, "d=1; Domain=").unwrap();
    store(&mut jar, "e=1; Domain=.").unwrap();
    assert_eq!(jar.len(), 5);
    for other in [
        "x=1; Domain=other.com",
        "x=1; Domain=op.example.com",
        "x=1; Domain=hop.example.com",
        "x=1; Domain=www.shop.example.com",
        "x=1; Domain=example.com.",
        "x=1; Domain=example.com; Domain=other.com",
    ] {
        assert_eq!(store(&mut jar, other), Err(Refused::OtherDomain), "{other}");
    }
    assert_eq!(jar.len(), 5);
    let debug = format!("{jar:?}");
    assert!(
        debug.contains("domain: \"example.com\", host_only: false"),
        "{debug}"
    );
    assert!(
        debug
            .contains("name: \"d\", value_bytes: 1, domain: \"shop.example.com\", host_only: true"),
        "{debug}"
    );
}

#[test]
fn ip_hosts_take_only_their_own_address() {
    let mut jar = CookieJar::new();
    jar.store(b"a=1", "10.0.0.1", b"/", false, NOW).unwrap();
    jar.store(b"b=1; Domain=10.0.0.1", "10.0.0.1", b"/", false, NOW)
        .unwrap();
    for domain in ["0.0.1", "0.1", "1", "10.0.0.2"] {
        let line = format!("c=1; Domain={domain}");
        assert_eq!(
            jar.store(line.as_bytes(), "10.0.0.1", b"/", false, NOW),
            Err(Refused::OtherDomain),
            "{domain}"
        );
    }
    assert_eq!(
        jar.store(b"c=1; Domain=1", "[::1]", b"/", false, NOW),
        Err(Refused::OtherDomain)
    );
    assert_eq!(
        jar.store(b"c=1; Domain=0:1", "::0:1", b"/", false, NOW),
        Err(Refused::OtherDomain)
    );
    jar.store(b"c=1; Domain=[::1]", "[::1]", b"/", false, NOW)
        .unwrap();
    assert_eq!(
        header(&mut jar, "/", false, NOW).as_deref(),
        Some("a=1; b=1; c=1")
    );
    // A name ending in digits is not an address.
    let mut jar = CookieJar::new();
    jar.store(b"a=1; Domain=1.2", "host.1.2", b"/", false, NOW)
        .unwrap();
    assert_eq!(jar.len(), 1);
}

#[test]
fn secure_cookies_need_tls() {
    let mut jar = CookieJar::new();
    jar.store(b"s=1; Secure", HOST, b"/", true, NOW).unwrap();
    jar.store(b"p=1", HOST, b"/", false, NOW).unwrap();
    assert_eq!(
        header(&mut jar, "/", true, NOW).as_deref(),
        Some("s=1; p=1")
    );
    assert_eq!(header(&mut jar, "/", false, NOW).as_deref(), Some("p=1"));
    assert_eq!(
        jar.store(b"t=1; secure", HOST, b"/", false, NOW),
        Err(Refused::InsecureSecure)
    );
    assert_eq!(jar.len(), 2);
    let mut jar = CookieJar::new();
    jar.store(b"s=1; Secure", HOST, b"/", true, NOW).unwrap();
    assert_eq!(header(&mut jar, "/", false, NOW), None);
}

#[test]
fn too_large_is_refused() {
    let mut jar = CookieJar::new();
    let fits = format!("a={}", "v".repeat(CookieJar::MAX_COOKIE_BYTES - 2));
    jar.store(fits.as_bytes(), HOST, b"/", true, NOW).unwrap();
    let over = format!("b={}", "v".repeat(CookieJar::MAX_COOKIE_BYTES - 1));
    assert_eq!(
        jar.store(over.as_bytes(), HOST, b"/", true, NOW),
        Err(Refused::TooLarge)
    );
    assert_eq!(Refused::TooLarge.reason(), "larger than 4096 bytes");
    assert_eq!(jar.len(), 1);
}

#[test]
fn a_full_jar_keeps_the_newest() {
    let mut jar = CookieJar::new();
    for i in 0..=CookieJar::MAX_COOKIES {
        store(&mut jar, &format!("c{i}={i}")).unwrap();
    }
    assert_eq!(jar.len(), CookieJar::MAX_COOKIES);
    let all = sent(&mut jar, "/").unwrap();
    let names: Vec<&str> = all
        .split("; ")
        .map(|c| c.split('=').next().unwrap())
        .collect();
    let newest: Vec<String> = (1..=CookieJar::MAX_COOKIES)
        .map(|i| format!("c{i}"))
        .collect();
    assert_eq!(names, newest);

    // Replacing does not evict; an expired cookie goes before the oldest.
    store(&mut jar, "c1=again").unwrap();
    assert_eq!(jar.len(), CookieJar::MAX_COOKIES);
    store(&mut jar, "c25=short; Max-Age=5").unwrap();
    jar.store(b"late=1", HOST, b"/", true, NOW + 5).unwrap();
    let header = header(&mut jar, "/", true, NOW + 5).unwrap();
    assert!(header.starts_with("c1=again; c2=2;"), "{header}");
    assert!(!header.contains("c25="), "{header}");
    assert!(header.ends_with("; late=1"), "{header}");
    assert_eq!(jar.len(), CookieJar::MAX_COOKIES);
}

#[test]
fn buffers_are_reused() {
    let mut jar = CookieJar::new();
    for i in 0..3 {
        store(&mut jar, &format!("c{i}=value-{i}; Path=/p/{i}")).unwrap();
    }
    jar.clear();
    assert_eq!(jar.spare.len(), 3);
    store(&mut jar, "x=1").unwrap();
    assert_eq!(jar.spare.len(), 2);
    store(&mut jar, "x=; Max-Age=0").unwrap();
    assert_eq!(jar.spare.len(), 3);
    // A copy holds the cookies, not the spare buffers.
    store(&mut jar, "y=1").unwrap();
    let copy = jar.clone();
    assert!(copy.spare.is_empty());
    assert_eq!(copy.cookies.len(), 1);
}

#[test]
fn header_order_is_longer_path_then_older() {
    let mut jar = CookieJar::new();
    jar.store(b"root1=1", HOST, b"/", true, NOW).unwrap();
    jar.store(b"deep1=1; Path=/a/b", HOST, b"/", true, NOW)
        .unwrap();
    jar.store(b"mid1=1; Path=/a", HOST, b"/", true, NOW)
        .unwrap();
    jar.store(b"root2=1; Path=/", HOST, b"/", true, NOW)
        .unwrap();
    jar.store(b"deep2=1", HOST, b"/a/b/page", true, NOW)
        .unwrap();
    jar.store(b"mid2=1; Path=/a/", HOST, b"/", true, NOW)
        .unwrap();
    assert_eq!(
        sent(&mut jar, "/a/b/c").as_deref(),
        Some("deep1=1; deep2=1; mid2=1; mid1=1; root1=1; root2=1")
    );
    assert_eq!(
        sent(&mut jar, "/a").as_deref(),
        Some("mid1=1; root1=1; root2=1")
    );
    assert_eq!(sent(&mut jar, "/b").as_deref(), Some("root1=1; root2=1"));
}

#[test]
fn values_are_kept_as_sent() {
    let mut jar = CookieJar::new();
    store(&mut jar, "q=\"a b,c\"").unwrap();
    store(&mut jar, "empty=").unwrap();
    store(&mut jar, "eq=a=b==").unwrap();
    store(&mut jar, "t=\tin\tside\t").unwrap();
    jar.store("u=caf\u{e9}".as_bytes(), HOST, b"/", true, NOW)
        .unwrap();
    jar.store(b"raw=\xff\xfe", HOST, b"/", true, NOW).unwrap();
    let mut out = Vec::new();
    assert!(jar.header_value(b"/", true, NOW, &mut out));
    let mut want = b"q=\"a b,c\"; empty=; eq=a=b==; t=in\tside; u=caf".to_vec();
    want.extend_from_slice("\u{e9}".as_bytes());
    want.extend_from_slice(b"; raw=\xff\xfe");
    assert_eq!(out, want);
}

#[test]
fn garbage_is_refused() {
    let mut jar = CookieJar::new();
    for bad in [
        &b""[..],
        b"noequals",
        b"noequals; Path=/",
        b"=value",
        b"  =value",
        b"; a=1",
        b"a\r\nInjected: 1=2",
        b"a=1\n2",
        b"a=\x00",
        b"a\x7f=1",
    ] {
        assert_eq!(
            jar.store(bad, HOST, b"/", true, NOW),
            Err(Refused::Syntax),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    assert!(jar.is_empty());
    for r in [
        Refused::Syntax,
        Refused::TooLarge,
        Refused::OtherDomain,
        Refused::InsecureSecure,
    ] {
        assert!(!r.reason().is_empty());
    }
    // Attributes that are odd but harmless do not refuse the cookie.
    store(
        &mut jar,
        "a=1;;; ;Path;Domain;=;Secure=no;Unknown=x;Max-Age",
    )
    .unwrap();
    assert_eq!(sent(&mut jar, "/").as_deref(), Some("a=1"));
}

/// A fixed-seed linear congruential generator (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }

    fn below(&mut self, n: usize) -> usize {
        self.next() as usize % n
    }
}

#[test]
fn random_lines_never_panic_and_keep_the_bounds() {
    const PIECES: [&[u8]; 24] = [
        b"=",
        b";",
        b" ",
        b"\t",
        b"a",
        b"b=",
        b"/",
        b".",
        b"-",
        b"0",
        b"9",
        b"\"",
        b"Path=/",
        b"Path=/a",
        b"Domain=",
        b"example.com",
        b"Max-Age=",
        b"Expires=",
        b"Secure",
        b",",
        b"01-Jan-70 ",
        b"12:34:56",
        b"\xff",
        b"\r",
    ];
    let hosts = ["shop.example.com", "example.com", "127.0.0.1", "[::1]", "a"];
    let paths: [&[u8]; 5] = [b"/", b"/a/b?c=/d", b"", b"/a/", b"?"];
    let mut rng = Lcg(0x5eed);
    let mut jar = CookieJar::new();
    let mut line = Vec::new();
    let mut out = Vec::new();
    for round in 0..20_000u64 {
        line.clear();
        for _ in 0..rng.below(24) {
            if rng.below(2) == 0 {
                line.extend_from_slice(PIECES[rng.below(PIECES.len())]);
            } else {
                line.push(rng.next() as u8);
            }
        }
        if rng.below(200) == 0 {
            line.resize(CookieJar::MAX_COOKIE_BYTES + rng.below(3), b'x');
        }
        let now = NOW + round / 10;
        let host = hosts[rng.below(hosts.len())];
        let path = paths[rng.below(paths.len())];
        let _ = jar.store(&line, host, path, rng.below(2) == 0, now);
        assert!(jar.len() <= CookieJar::MAX_COOKIES);
        assert!(jar.spare.len() + jar.len() <= CookieJar::MAX_COOKIES);
        if rng.below(4) == 0 {
            out.clear();
            jar.header_value(
                paths[rng.below(paths.len())],
                rng.below(2) == 0,
                now,
                &mut out,
            );
            assert!(!out.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0));
            assert!(jar.cookies.windows(2).all(|w| {
                w[0].path_len > w[1].path_len
                    || (w[0].path_len == w[1].path_len && w[0].created < w[1].created)
            }));
        }
        if rng.below(5_000) == 0 {
            jar.clear();
        }
    }
}
