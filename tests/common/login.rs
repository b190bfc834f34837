//! A login-then-browse app for journey tests, on HTTP/1.1 with keep-alive: `POST /login`
//! (a JSON body `{"user": "…"}`) issues a new token per login in a JSON body and a session
//! cookie; `GET /me` needs `Authorization: Bearer TOKEN` and says whose token it is;
//! `GET /cart` needs the session cookie of the same login. It counts logins per user,
//! requests per token, requests whose token belongs to another user than their `X-User`
//! header says (cross-user mix-ups), unauthorized requests and cookies that round-tripped.
//! `POST /login-html` answers a login with HTML (a capture from it fails), `POST /login-empty`
//! with an empty token, and `POST /login-flaky` fails the first login of the run (503), then
//! answers as `/login`. `GET /home` needs nothing.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::sync::{Arc, Mutex};

use super::{read_request, spawn, TestServer};

/// What the app saw.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Logins per user name (from the login body).
    pub logins: HashMap<String, u64>,
    /// Requests per token (`/me` and `/cart`).
    pub per_token: HashMap<String, u64>,
    /// Token to its user.
    pub owner: HashMap<String, String>,
    /// Requests whose token belonged to another user than `X-User` named.
    pub mixups: u64,
    /// `/me` or `/cart` without a valid token or session.
    pub unauthorized: u64,
    /// `/cart` requests whose session cookie was the token's own login's.
    pub cookies_ok: u64,
    /// Requests of any path.
    pub requests: u64,
    /// Requests that carried a token that is empty (`Bearer ` and nothing).
    pub empty_tokens: u64,
}

/// A running app.
pub struct LoginApp {
    pub server: TestServer,
    pub tally: Arc<Mutex<Tally>>,
}

impl LoginApp {
    pub fn url(&self, path: &str) -> String {
        self.server.url(path)
    }
    pub fn tally(&self) -> Tally {
        self.tally.lock().unwrap().clone()
    }
}

/// Starts the app on an ephemeral port.
pub fn start() -> LoginApp {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let t = Arc::clone(&tally);
    let next = Arc::new(Mutex::new(0u64));
    let server = spawn(move |c, _| {
        let mut w = c.stream.try_clone().unwrap();
        let mut r = BufReader::new(c.stream);
        while let Some(req) = read_request(&mut r) {
            let (status, headers, body) = answer(&req, &t, &next);
            let mut out = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/json\r\n",
                body.len()
            );
            for h in headers {
                out.push_str(&h);
                out.push_str("\r\n");
            }
            out.push_str("\r\n");
            out.push_str(&body);
            if w.write_all(out.as_bytes()).is_err() {
                return;
            }
        }
    });
    LoginApp { server, tally }
}

fn answer(
    req: &super::Seen,
    tally: &Mutex<Tally>,
    next: &Mutex<u64>,
) -> (&'static str, Vec<String>, String) {
    let mut t = tally.lock().unwrap();
    t.requests += 1;
    let path = req.target.split('?').next().unwrap_or("");
    match (req.method.as_str(), path) {
        ("POST", "/login-empty") => ("200 OK", Vec::new(), r#"{"accessToken":""}"#.into()),
        ("POST", "/login-flaky") if t.logins.is_empty() => {
            t.logins.insert("(failed)".into(), 1);
            ("503 Service Unavailable", Vec::new(), "{}".into())
        }
        ("POST", "/login") | ("POST", "/login-html") | ("POST", "/login-flaky") => {
            let body = String::from_utf8_lossy(&req.body).to_string();
            let user = body
                .split("\"user\"")
                .nth(1)
                .and_then(|s| s.split('"').nth(1))
                .unwrap_or("?")
                .to_string();
            *t.logins.entry(user.clone()).or_default() += 1;
            if path == "/login-html" {
                return ("200 OK", Vec::new(), "<html>welcome</html>".into());
            }
            let n = {
                let mut n = next.lock().unwrap();
                *n += 1;
                *n
            };
            let token = format!("tok{n}");
            t.owner.insert(token.clone(), user.clone());
            (
                "200 OK",
                vec![format!("Set-Cookie: sid=s{n}; Path=/; HttpOnly")],
                format!("{{\"accessToken\":\"{token}\",\"user\":{{\"name\":\"{user}\"}}}}"),
            )
        }
        ("GET", "/me") | ("GET", "/cart") => {
            let token = req
                .header("authorization")
                .and_then(|a| a.strip_prefix("Bearer "))
                .unwrap_or("")
                .to_string();
            if req.header("authorization") == Some("Bearer")
                || req.header("authorization") == Some("Bearer ")
            {
                t.empty_tokens += 1;
            }
            let Some(owner) = t.owner.get(&token).cloned() else {
                t.unauthorized += 1;
                return ("401 Unauthorized", Vec::new(), "{}".into());
            };
            *t.per_token.entry(token.clone()).or_default() += 1;
            if req.header("x-user").is_some_and(|u| u != owner) {
                t.mixups += 1;
            }
            if path == "/cart" {
                let want = format!("sid=s{}", &token[3..]);
                let cookie = req.header("cookie").unwrap_or("");
                if cookie.split("; ").any(|c| c == want) {
                    t.cookies_ok += 1;
                } else {
                    t.unauthorized += 1;
                    return ("401 Unauthorized", Vec::new(), "{}".into());
                }
            }
            ("200 OK", Vec::new(), format!("{{\"name\":\"{owner}\"}}"))
        }
        _ => ("200 OK", Vec::new(), "{}".into()),
    }
}
