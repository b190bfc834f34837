//! Waiting for a started server to be ready: `GET ready_path` every 50 ms until it answers
//! below 500, the server exits, the timeout passes, Ctrl-C, or the server's process tree is
//! seen listening on other ports than `$PORT` (docs/contract.md, "Suites").

use std::collections::BTreeSet;
use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::lifecycle::{describe, members, Running};
use crate::monitor::read::socket_inodes;
use crate::sys::listeners;

/// How often the process tree's listening sockets are looked at while waiting.
const LISTEN_CHECK_EVERY: Duration = Duration::from_millis(250);

/// How long the tree must listen elsewhere (and not on `$PORT`) before the cell fails: a
/// server may open an admin port a moment before its main one.
const WRONG_PORT_GRACE: Duration = Duration::from_secs(1);

/// Why a server never became ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// The started process exited (`exited with status 1`).
    Exited(String),
    /// Ctrl-C while waiting.
    Interrupted,
    /// `ready_timeout` passed; the last thing the probe saw.
    Timeout {
        /// `ready_timeout`.
        after: Duration,
        /// The last probe's outcome.
        last: String,
    },
    /// The server's processes listen on these ports, none of them `port`.
    WrongPort {
        /// Where they listen.
        listening: Vec<u16>,
        /// `$PORT`.
        port: u16,
    },
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotReady::Exited(how) => write!(f, "{how} before it was ready"),
            NotReady::Interrupted => {
                write!(f, "interrupted while waiting for the server to be ready")
            }
            NotReady::Timeout { after, last } => write!(
                f,
                "not ready after {} (ready_timeout; last: {last})",
                humantime::format_duration(Duration::from_millis(after.as_millis() as u64))
            ),
            NotReady::WrongPort { listening, port } => write!(
                f,
                "listening on {}, not on $PORT={port} — use $PORT or {{port}} in the start line",
                listening
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Polls `GET ready_path` until the server answers with a status below 500 (`Ok`: how long
/// that took). Fails as soon as the server exits or its process tree has listened for
/// [`WRONG_PORT_GRACE`] on other ports but not on `$PORT`.
pub fn wait_ready(
    r: &mut Running,
    ready_path: &str,
    timeout: Duration,
    interrupts: &AtomicUsize,
) -> Result<Duration, NotReady> {
    let t0 = Instant::now();
    let addr = SocketAddr::from(([127, 0, 0, 1], r.port));
    let mut next_check = t0;
    let mut elsewhere_since: Option<Instant> = None;
    loop {
        if let Ok(Some(status)) = r.child.try_wait() {
            return Err(NotReady::Exited(describe(status)));
        }
        if interrupts.load(Ordering::SeqCst) > 0 {
            return Err(NotReady::Interrupted);
        }
        let last = match probe(addr, ready_path) {
            Ok(code) if code < 500 => return Ok(t0.elapsed()),
            Ok(code) => format!("GET {ready_path} answered {code}"),
            Err(e) => format!("GET {ready_path} on {addr}: {e}"),
        };
        if Instant::now() >= next_check {
            next_check = Instant::now() + LISTEN_CHECK_EVERY;
            let ports = tree_ports(r.pgid());
            if ports.is_empty() || ports.contains(&r.port) {
                elsewhere_since = None;
            } else if elsewhere_since.get_or_insert_with(Instant::now).elapsed() >= WRONG_PORT_GRACE
            {
                return Err(NotReady::WrongPort {
                    listening: ports.into_iter().collect(),
                    port: r.port,
                });
            }
        }
        if t0.elapsed() >= timeout {
            return Err(NotReady::Timeout {
                after: timeout,
                last,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The TCP ports the processes of group `pgid` (and their descendants) listen on.
pub fn tree_ports(pgid: i32) -> BTreeSet<u16> {
    let inodes: BTreeSet<u64> = members(pgid, pgid)
        .into_iter()
        .flat_map(socket_inodes)
        .collect();
    if inodes.is_empty() {
        return BTreeSet::new();
    }
    listeners::sockets()
        .into_iter()
        .filter(|l| inodes.contains(&l.inode))
        .map(|l| l.addr.port())
        .collect()
}

/// Whether a start line puts its server in the background: it ends with `&` (not `&&`)
/// outside quotes, so `sh` exits at once and the server runs on without it.
pub fn backgrounds(line: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut last: Option<(usize, char)> = None;
    let chars: Vec<char> = line.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if c == '\\' && !single {
            escaped = true;
        } else if c == '\'' && !double {
            single = !single;
        } else if c == '"' && !single {
            double = !double;
        }
        if !c.is_whitespace() {
            last = Some((i, c));
        }
    }
    match last {
        Some((i, '&')) if !single && !double => {
            let before = if i > 0 { chars[i - 1] } else { ' ' };
            before != '&' && before != '\\'
        }
        _ => false,
    }
}

/// The hint added to a failure of a server whose start line [`backgrounds`] it.
pub fn background_hint(line: &str) -> String {
    let fg = line.trim_end().trim_end_matches('&').trim_end();
    format!(
        "the start line ends with `&`, so sh exits at once and the server runs in the background: keep it in the foreground (`exec {fg}`)"
    )
}

/// One readiness request: the status code of the answer.
pub fn probe(addr: SocketAddr, path: &str) -> std::io::Result<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.set_write_timeout(Some(Duration::from_secs(2)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: volley-ready\r\nConnection: close\r\n\r\n"
    )?;
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    while !buf.windows(2).any(|w| w == b"\r\n") && buf.len() < 4096 {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let line = String::from_utf8_lossy(&buf);
    let line = line.lines().next().unwrap_or("");
    let mut parts = line.split_whitespace();
    match (
        parts.next(),
        parts.next().and_then(|c| c.parse::<u16>().ok()),
    ) {
        (Some(v), Some(code)) if v.starts_with("HTTP/") => Ok(code),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            if line.is_empty() {
                "closed without an HTTP response".to_string()
            } else {
                format!(
                    "not an HTTP response: `{}`",
                    line.chars().take(60).collect::<String>()
                )
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_ampersand_outside_quotes_backgrounds() {
        assert!(backgrounds("node server.js &"));
        assert!(backgrounds("node server.js&  \n"));
        assert!(!backgrounds("exec node server.js"));
        assert!(!backgrounds("a && b"));
        assert!(!backgrounds("a &&"));
        assert!(!backgrounds("echo 'x &'"));
        assert!(!backgrounds("echo \"x &\""));
        assert!(!backgrounds("echo x \\&"));
        assert!(!backgrounds("a & b"));
        assert!(background_hint("node server.js &").ends_with("(`exec node server.js`)"));
    }

    #[test]
    fn reasons_read_well() {
        let w = NotReady::WrongPort {
            listening: vec![3000],
            port: 41213,
        };
        assert_eq!(
            w.to_string(),
            "listening on 3000, not on $PORT=41213 — use $PORT or {port} in the start line"
        );
        assert_eq!(
            NotReady::Exited("exited with status 0".into()).to_string(),
            "exited with status 0 before it was ready"
        );
    }

    #[test]
    fn a_listener_of_this_process_is_traced_to_it() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let inode = listeners::sockets()
            .into_iter()
            .find(|s| s.addr.port() == port)
            .expect("the listener is in /proc/net/tcp")
            .inode;
        assert!(socket_inodes(std::process::id() as i32).contains(&inode));
    }
}
