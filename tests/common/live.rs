//! Helpers of the live-view tests: a volley run in the background with the URLs it printed,
//! raw HTTP requests, and a reader of server-sent events.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A volley run in the background, with the URLs it printed.
pub struct Running {
    pub child: Child,
    pub dashboard: Option<String>,
    pub metrics: Option<String>,
    pub stderr: String,
    /// What volley wrote to stderr after its URLs, so far.
    rest: Arc<Mutex<String>>,
}

impl Running {
    pub fn start(args: &[&str]) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("volley starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let (mut dashboard, mut metrics, mut stderr) = (None, None, String::new());
        let wants_dashboard = args.iter().any(|a| a.starts_with("--dashboard"));
        let wants_metrics = args.contains(&"--metrics-addr");
        while (wants_dashboard && dashboard.is_none()) || (wants_metrics && metrics.is_none()) {
            let Some(Ok(line)) = lines.next() else { break };
            stderr.push_str(&line);
            stderr.push('\n');
            if let Some(u) = line.strip_prefix("volley: dashboard at ") {
                dashboard = Some(u.to_string());
            }
            if let Some(u) = line.strip_prefix("volley: metrics at ") {
                metrics = Some(u.to_string());
            }
        }
        // The rest of stderr is drained so that volley never blocks on it, and kept for a
        // failure's message.
        let rest = Arc::new(Mutex::new(String::new()));
        let kept = Arc::clone(&rest);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut k = kept.lock().unwrap_or_else(|e| e.into_inner());
                k.push_str(&line);
                k.push('\n');
            }
        });
        Running {
            child,
            dashboard,
            metrics,
            stderr,
            rest,
        }
    }

    /// Everything volley wrote to stderr so far.
    pub fn stderr_so_far(&self) -> String {
        let rest = self.rest.lock().unwrap_or_else(|e| e.into_inner());
        format!("{}{rest}", self.stderr)
    }

    /// (address, token) of the dashboard.
    pub fn door(&self) -> (SocketAddr, String) {
        let url = self
            .dashboard
            .as_deref()
            .unwrap_or_else(|| panic!("no dashboard URL in {}", self.stderr));
        let rest = url.strip_prefix("http://").unwrap();
        let (addr, query) = rest.split_once("/?token=").unwrap();
        (addr.parse().unwrap(), query.to_string())
    }

    /// The address of the metrics URL it printed.
    pub fn metrics_addr(&self) -> SocketAddr {
        let url = self
            .metrics
            .as_deref()
            .unwrap_or_else(|| panic!("no metrics URL in {}", self.stderr));
        let addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/metrics"));
        addr.and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("not a metrics URL: {url}"))
    }

    /// Waits for the exit (at most `limit`): the exit code.
    pub fn wait(&mut self, limit: Duration) -> i32 {
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code().unwrap_or(-1);
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                panic!("volley did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One raw HTTP/1.1 request: (status, head, body).
pub fn get(addr: SocketAddr, host: &str, target: &str, method: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

/// A server-sent event.
#[derive(Debug)]
pub struct Event {
    pub kind: String,
    pub id: Option<u64>,
    pub data: Value,
}

/// Reads events from `/events` (with `last_id` as `Last-Event-ID`) until `stop` says so.
pub fn events(
    addr: SocketAddr,
    token: &str,
    last_id: Option<u64>,
    mut stop: impl FnMut(&[Event]) -> bool,
) -> Vec<Event> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let last = last_id
        .map(|i| format!("Last-Event-ID: {i}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET /events?token={token} HTTP/1.1\r\nHost: {addr}\r\n{last}\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    // The head.
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut out = Vec::new();
    let (mut kind, mut id, mut data) = (String::new(), None, String::new());
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return out;
        }
        let l = line.trim_end_matches('\n');
        if l.is_empty() {
            if !kind.is_empty() {
                let data = serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}"));
                out.push(Event {
                    kind: std::mem::take(&mut kind),
                    id: id.take(),
                    data,
                });
                if stop(&out) {
                    return out;
                }
            }
            data.clear();
        } else if let Some(v) = l.strip_prefix("event: ") {
            kind = v.to_string();
        } else if let Some(v) = l.strip_prefix("id: ") {
            id = v.parse().ok();
        } else if let Some(v) = l.strip_prefix("data: ") {
            data.push_str(v);
        }
    }
}
