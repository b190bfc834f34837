//! `--dashboard`: the page at `/` and its server-sent events at `/events`, both behind the
//! run's token (a random 128-bit value printed in the URL; any local process or page could
//! otherwise read the run). The page is one self-contained document, like the HTML report;
//! the events are the [`Feed`]'s.

use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use super::feed::{Feed, Next};
use super::http::{self, Handler, Request};

/// A comment line keeps an idle stream open through proxies and tells a gone page apart.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The page's policy: inline script and style only, and requests back to this origin (the
/// event stream); nothing else, nowhere else.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// Serves the page and the events.
pub(crate) struct DashboardHandler {
    /// The run's token.
    pub token: String,
    /// The page.
    pub page: String,
    /// What the run said so far.
    pub feed: Arc<Feed>,
}

impl Handler for DashboardHandler {
    fn respond(&self, req: &Request, out: &mut TcpStream) -> io::Result<()> {
        if !token_matches(req.param("token").unwrap_or(""), &self.token) {
            return http::status(
                out,
                401,
                "this dashboard needs the token of the URL volley printed",
            );
        }
        match req.path.as_str() {
            "/" => {
                let extra = format!(
                    "Content-Security-Policy: {CSP}\r\nReferrer-Policy: no-referrer\r\n\
                     X-Frame-Options: DENY\r\n"
                );
                http::ok(
                    out,
                    req,
                    "text/html; charset=utf-8",
                    &extra,
                    self.page.as_bytes(),
                )
            }
            "/events" => self.events(req, out),
            _ => http::status(out, 404, "not found"),
        }
    }
}

impl DashboardHandler {
    fn events(&self, req: &Request, out: &mut TcpStream) -> io::Result<()> {
        write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
             X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
        )?;
        if req.head_only {
            return Ok(());
        }
        // A stalled page must not hold its thread: a write that cannot go within this ends it.
        out.set_write_timeout(Some(Duration::from_secs(10)))?;
        let mut after = req
            .last_event_id
            .as_deref()
            .and_then(|id| id.trim().parse::<u64>().ok());
        self.feed.join();
        let result = (|| loop {
            match self.feed.next(after, KEEPALIVE) {
                Next::Frames(frames) => {
                    // Frame by frame through one buffer: a replay is never copied whole.
                    let mut w = io::BufWriter::with_capacity(64 * 1024, &mut *out);
                    for f in &frames {
                        w.write_all(f.text.as_bytes())?;
                        after = Some(after.map_or(f.id, |a| a.max(f.id)));
                    }
                    w.flush()?;
                    if after == Some(u64::MAX) {
                        return Ok(());
                    }
                }
                Next::Idle => out.write_all(b": still running\n\n")?,
                Next::Done => return Ok(()),
            }
        })();
        self.feed.leave();
        result
    }
}

/// Compares in time independent of where the first difference is.
fn token_matches(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_exactly() {
        assert!(token_matches("ab12", "ab12"));
        assert!(!token_matches("ab13", "ab12"));
        assert!(!token_matches("ab1", "ab12"));
        assert!(!token_matches("", "ab12"));
    }
}
