//! The HTTP version flags: `--http1.1`, `--http2`, `--h2c`, `--http3`, and the concurrent
//! `--streams` of HTTP/2 and HTTP/3 and HTTP/2's `--h2-window` (docs/contract.md, "HTTP/2",
//! "HTTP/3").

use super::{ConfigError, Flag, RunFlags};
use volley_plan::{H2Spec, HttpVersion, Scheme, DEFAULT_H2_WINDOW};

/// The most concurrent streams per connection volley keeps (h2load's `-m` has no limit; a
/// server's own limit is usually 100–250).
pub(crate) const MAX_STREAMS: u64 = 1024;

/// Which HTTP the flags ask for on a URL of `scheme` (the three flags exclude each other).
pub(super) fn http_version(a: &RunFlags, scheme: Scheme) -> Result<HttpVersion, ConfigError> {
    let chosen: Vec<Flag> = [
        (a.http1_1, Flag::Http1),
        (a.http2, Flag::Http2),
        (a.h2c, Flag::H2c),
        (a.http3, Flag::Http3),
    ]
    .into_iter()
    .filter_map(|(on, f)| on.then_some(f))
    .collect();
    if let [first, rest @ ..] = chosen.as_slice() {
        if !rest.is_empty() {
            return Err(ConfigError::conflict(
                *first,
                rest,
                "pick one HTTP version: --http1.1, --http2, --h2c or --http3",
            ));
        }
    }
    if a.zero_rtt && !a.http3 {
        return Err(ConfigError::flag(
            Flag::ZeroRtt,
            "needs --http3 (volley sends early data over QUIC only)",
        ));
    }
    if (a.grpc.is_some() || a.proto.is_some()) && !scheme.is_websocket() {
        // gRPC is HTTP/2 (`--http2` and `--h2c` may be given; the others are refused with
        // `--grpc`'s other conflicts).
        return Ok(super::grpc::http_version(scheme));
    }
    if scheme.is_websocket() {
        return super::ws::http_version(chosen.first().copied(), scheme);
    }
    let version = match (chosen.first(), scheme) {
        (None, Scheme::Http) | (Some(Flag::Http1), _) => HttpVersion::Http1,
        // Pipelining is HTTP/1.1's: a run that asks for it keeps HTTP/1.1 rather than
        // silently trading it for one HTTP/2 stream.
        (None, Scheme::Https) if a.pipeline > 1 => HttpVersion::Http1,
        (None, Scheme::Https) => HttpVersion::Negotiate,
        (Some(Flag::Http2), Scheme::Https) => HttpVersion::H2,
        (Some(Flag::Http3), Scheme::Https) => return h3_only(a),
        (Some(Flag::Http3), Scheme::Http) => {
            return Err(ConfigError::flag(
                Flag::Http3,
                "needs an https:// URL (QUIC is always encrypted)",
            ))
        }
        (Some(Flag::Http2), Scheme::Http) => {
            return Err(ConfigError::flag(
                Flag::Http2,
                "needs an https:// URL (HTTP/2 is chosen in the TLS handshake); for HTTP/2 in \
                 cleartext use --h2c",
            ))
        }
        (Some(_), Scheme::Http) => HttpVersion::H2c,
        (_, Scheme::Ws | Scheme::Wss) => HttpVersion::Http1,
        (Some(_), Scheme::Https) => {
            return Err(ConfigError::flag(
                Flag::H2c,
                "is HTTP/2 in cleartext and needs an http:// URL; over https:// use --http2",
            ))
        }
    };
    Ok(version)
}

/// `--http3` and what it cannot be combined with yet: a proxy (QUIC is UDP; a CONNECT tunnel
/// carries TCP), a Unix socket, pipelining (HTTP/1.1's), HTTP/2's window and io_uring (HTTP/3
/// runs on epoll).
fn h3_only(a: &RunFlags) -> Result<HttpVersion, ConfigError> {
    // The message names the other flag: `--http3: cannot be combined with -x/--proxy: …`.
    let with = |on: bool, flag: Flag, why: &str| -> Result<(), ConfigError> {
        if on {
            let why = format!("cannot be combined with {}: {why}", flag.spelling());
            return Err(ConfigError::conflict(Flag::Http3, &[flag], why));
        }
        Ok(())
    };
    if a.zero_rtt && a.no_tls_resume {
        return Err(ConfigError::conflict(
            Flag::ZeroRtt,
            &[Flag::NoTlsResume],
            "cannot be combined with --no-tls-resume: early data goes only on a resumed session",
        ));
    }
    with(
        a.proxy.is_some(),
        Flag::Proxy,
        "QUIC is UDP, a proxy's CONNECT tunnel carries TCP",
    )?;
    with(
        a.unix_socket.is_some(),
        Flag::UnixSocket,
        "QUIC goes by UDP to the URL's address",
    )?;
    with(
        a.pipeline > 1,
        Flag::Pipeline,
        "pipelining is HTTP/1.1's (use --streams N)",
    )?;
    with(
        a.h2_window.is_some(),
        Flag::H2Window,
        "that is HTTP/2's receive window",
    )?;
    with(
        a.io == Some(super::flags::IoFlag::Uring),
        Flag::Io,
        "HTTP/3 runs on epoll in this version",
    )?;
    Ok(HttpVersion::H3)
}

/// `--streams` and `--h2-window`, checked against the HTTP version and `--pipeline`.
pub(super) fn h2_spec(
    a: &RunFlags,
    version: HttpVersion,
    scheme: Scheme,
) -> Result<H2Spec, ConfigError> {
    let streams = a.streams.unwrap_or(1);
    if streams == 0 {
        return Err(ConfigError::flag(Flag::Streams, "must be at least 1"));
    }
    if streams > MAX_STREAMS {
        return Err(ConfigError::flag(
            Flag::Streams,
            format!("more than {MAX_STREAMS} concurrent streams per connection"),
        ));
    }
    match version {
        // A WebSocket over HTTP/2 keeps --pipeline messages in flight on its one stream.
        HttpVersion::H2 | HttpVersion::H2c if a.pipeline > 1 && !scheme.is_websocket() => {
            let flag = if version == HttpVersion::H2 {
                Flag::Http2
            } else {
                Flag::H2c
            };
            return Err(ConfigError::conflict(
                Flag::Pipeline,
                &[flag],
                "is HTTP/1.1 pipelining; with HTTP/2 use --streams N (concurrent streams per \
                 connection)",
            ));
        }
        HttpVersion::Http1 if a.streams.is_some_and(|s| s > 1) && a.pipeline > 1 => {
            return Err(ConfigError::conflict(
                Flag::Pipeline,
                &[Flag::Streams],
                "cannot be combined with --streams: --pipeline is HTTP/1.1's, --streams \
                 HTTP/2's (pick one)",
            ));
        }
        HttpVersion::Http1 if a.streams.is_some_and(|s| s > 1) => {
            return Err(ConfigError::flag(
                Flag::Streams,
                "needs HTTP/2 or HTTP/3: an https:// URL (h2 by ALPN), --http2, --h2c or \
                 --http3; HTTP/1.1 keeps one request per connection in flight (or --pipeline)",
            ));
        }
        _ => {}
    }
    let multiplexed = version.multiplexed();
    if a.no_keepalive && multiplexed && streams > 1 {
        return Err(ConfigError::conflict(
            Flag::Streams,
            &[Flag::NoKeepalive],
            "needs keep-alive (drop --no-keepalive)",
        ));
    }
    let window = match a.h2_window {
        None => DEFAULT_H2_WINDOW,
        Some(w) if !version.may_be_h2() => {
            return Err(ConfigError::flag(
                Flag::H2Window,
                format!("{w} bytes: needs HTTP/2 (an https:// URL, --http2 or --h2c)"),
            ))
        }
        Some(w) if !(65_535..=u64::from(DEFAULT_H2_WINDOW)).contains(&w) => {
            return Err(ConfigError::flag(
                Flag::H2Window,
                format!("{w} bytes: must be from 65535 (64KiB-1) to 2147483647 (2GiB-1)"),
            ))
        }
        Some(w) => w as u32,
    };
    Ok(H2Spec {
        streams: streams as usize,
        window,
    })
}

#[cfg(test)]
mod tests {

    use crate::{RunConfig, RunFlags};
    use volley_plan::HttpVersion;

    fn load(args: &[&str]) -> Result<volley_plan::LoadSpec, String> {
        let flags = crate::args_from::<RunFlags, _, _>(args).map_err(|e| e.to_string())?;
        RunConfig::from_flags(&flags, 2)
            .map(|c| c.load)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_url_and_the_flags_choose_the_http_version() {
        let cases: [(&[&str], HttpVersion); 6] = [
            (&["http://a/"], HttpVersion::Http1),
            (&["https://a/"], HttpVersion::Negotiate),
            (&["https://a/", "--http1.1"], HttpVersion::Http1),
            (&["https://a/", "--http2"], HttpVersion::H2),
            (&["http://a/", "--h2c"], HttpVersion::H2c),
            (&["https://a/", "--pipeline", "4"], HttpVersion::Http1),
        ];
        for (args, want) in cases {
            assert_eq!(load(args).unwrap().http, want, "{args:?}");
        }
        let l = load(&["http://a/", "--http2-prior-knowledge", "--streams", "32"]).unwrap();
        assert_eq!((l.http, l.h2.streams), (HttpVersion::H2c, 32));
        assert_eq!(l.h2.window, volley_plan::DEFAULT_H2_WINDOW);
        let l = load(&["https://a/", "--h2-window", "1MiB"]).unwrap();
        assert_eq!(l.h2.window, 1 << 20);
        let l = load(&["https://a/", "--http3", "--streams", "16"]).unwrap();
        assert_eq!((l.http, l.h2.streams), (HttpVersion::H3, 16));
        assert_eq!(
            load(&["https://a/", "--http3-only"]).unwrap().http,
            HttpVersion::H3
        );
    }

    #[test]
    fn http3_names_what_it_cannot_be_combined_with() {
        let cases: [(&[&str], &str); 9] = [
            (&["http://a/", "--http3"], "--http3: needs an https:// URL"),
            (&["https://a/", "--0rtt"], "--0rtt: needs --http3"),
            (
                &["https://a/", "--http3", "--0rtt", "--no-tls-resume"],
                "--0rtt: cannot be combined with --no-tls-resume",
            ),
            (
                &["https://a/", "--http3", "--http2"],
                "pick one HTTP version",
            ),
            (
                &["https://a/", "--http3", "-x", "http://p:3128"],
                "--http3: cannot be combined with -x/--proxy",
            ),
            (
                &["https://a/", "--http3", "--pipeline", "2"],
                "cannot be combined with --pipeline",
            ),
            (
                &["https://a/", "--http3", "--h2-window", "1MiB"],
                "cannot be combined with --h2-window",
            ),
            (
                &["https://a/", "--http3", "--io", "uring"],
                "cannot be combined with --io",
            ),
            (
                &["https://a/", "--http3", "--no-keepalive", "--streams", "2"],
                "needs keep-alive",
            ),
        ];
        for (args, says) in cases {
            let e = load(args).unwrap_err();
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }

    #[test]
    fn conflicting_or_pointless_http_flags_name_the_flag() {
        let cases: [(&[&str], &str); 9] = [
            (&["http://a/", "--http2"], "--http2: needs an https:// URL"),
            (&["https://a/", "--h2c"], "--h2c: is HTTP/2 in cleartext"),
            (
                &["https://a/", "--http2", "--http1.1"],
                "pick one HTTP version",
            ),
            (
                &["http://a/", "--h2c", "--pipeline", "2"],
                "use --streams N",
            ),
            (&["http://a/", "--streams", "2"], "--streams: needs HTTP/2"),
            (
                &["https://a/", "--pipeline", "2", "--streams", "2"],
                "pick one",
            ),
            (
                &["http://a/", "--h2c", "--streams", "0"],
                "--streams: must be at least 1",
            ),
            (
                &["http://a/", "--h2c", "--streams", "2000"],
                "more than 1024",
            ),
            (
                &["http://a/", "--h2-window", "1MiB"],
                "--h2-window: 1048576 bytes: needs HTTP/2",
            ),
        ];
        for (args, says) in cases {
            let e = load(args).unwrap_err();
            assert!(e.contains(says), "{args:?}: {e}");
        }
        let e = load(&["http://a/", "--h2c", "--h2-window", "1KiB"]).unwrap_err();
        assert!(e.contains("must be from 65535"), "{e}");
    }
}
