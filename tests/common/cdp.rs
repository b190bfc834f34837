//! Headless Chromium. Driven over the DevTools protocol: a page is loaded, scripts are
//! evaluated in it and their values read back, as a person's browser would run them while a
//! run is live (tests/full/live_browser.rs). Or run once on a page file, its DOM dumped after the
//! scripts ran, and the page's self-test read from it (tests/full/html.rs, tests/slow/history.rs).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{stream::MaybeTlsStream, Message, WebSocket};

/// Chromium: `$CHROMIUM`, or Debian's.
pub fn chromium() -> PathBuf {
    let from_env = std::env::var_os("CHROMIUM").map(PathBuf::from);
    let candidates = from_env
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(PathBuf::from));
    for c in candidates {
        if c.is_file() {
            return c;
        }
    }
    panic!(
        "the browser tests need headless Chromium at /usr/bin/chromium (or $CHROMIUM) and found \
         none: run `make test-deps` (scripts/install-test-deps.sh), which on Debian runs \
         `apt-get update && apt-get install -y chromium`"
    );
}

/// A headless Chromium with one page, killed when dropped.
pub struct Browser {
    child: Child,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium on `url` and attaches to its page.
    pub fn open(url: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--remote-debugging-port=0",
                "--window-size=1450,1800",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let port = loop {
            let Some(Ok(line)) = lines.next() else {
                panic!("chromium printed no DevTools address")
            };
            if let Some(rest) = line.split("DevTools listening on ws://127.0.0.1:").nth(1) {
                break rest.split('/').next().unwrap().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        let page = page_socket(&port);
        let (ws, _) = tungstenite::connect(page).expect("the DevTools socket opens");
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        Browser {
            child,
            ws,
            next_id: 1,
            _profile: profile,
        }
    }

    /// The value of `expr` in the page (a promise is awaited).
    pub fn eval(&mut self, expr: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"id": id, "method": "Runtime.evaluate",
            "params": {"expression": expr, "returnByValue": true, "awaitPromise": true}});
        self.ws.send(Message::text(msg.to_string())).unwrap();
        loop {
            let m = self.ws.read().expect("DevTools answers");
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if v["id"] == id {
                if let Some(ex) = v["result"].get("exceptionDetails") {
                    panic!("{expr} threw: {ex}");
                }
                return v["result"]["result"]["value"].clone();
            }
        }
    }

    /// Waits until `expr` is true (at most `limit`).
    pub fn wait_for(&mut self, expr: &str, limit: Duration) {
        assert!(
            self.becomes_true(expr, limit),
            "{expr} still false after {limit:?}"
        );
    }

    /// Whether `expr` became true within `limit`.
    pub fn becomes_true(&mut self, expr: &str, limit: Duration) -> bool {
        let t = Instant::now();
        while self.eval(&format!("!!({expr})")) != Value::Bool(true) {
            if t.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        true
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The WebSocket URL of the browser's first page, from its `/json/list`.
fn page_socket(port: &str) -> String {
    let t = Instant::now();
    loop {
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        let (_, _, body) =
            super::live::get(addr, &format!("127.0.0.1:{port}"), "/json/list", "GET");
        let pages: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if let Some(ws) = pages
            .as_array()
            .and_then(|a| a.iter().find(|p| p["type"] == "page"))
            .and_then(|p| p["webSocketDebuggerUrl"].as_str())
        {
            return ws.to_string();
        }
        assert!(t.elapsed() < Duration::from_secs(20), "no page in {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs Chromium headless on the file `page` with a fresh profile, `extra` flags (e.g.
/// `--dump-dom`) and a 90 s limit: what it printed.
pub fn headless(page: &Path, extra: &[&str]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let limit = Duration::from_secs(90);
    let deadline = Instant::now() + limit;
    // Drain stdout on a thread: a large DOM would fill the pipe and stall the browser.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut buf).ok();
        buf
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stdout = reader.join().unwrap();
            let mut stderr = Vec::new();
            if let Some(mut e) = child.stderr.take() {
                std::io::Read::read_to_end(&mut e, &mut stderr).ok();
            }
            return Output {
                status,
                stdout,
                stderr,
            };
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish within {limit:?} on {}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The attributes (`data-*`, without the prefix) and text of a page's self-test element
/// (`<div id="selftest">`, which every page's first script fills) in a DOM dump.
pub fn selftest(dom: &str) -> (Vec<(String, String)>, String) {
    let start = dom
        .find("<div id=\"selftest\"")
        .unwrap_or_else(|| panic!("no #selftest in the DOM:\n{}", tail(dom)));
    let tag_end = start + dom[start..].find('>').unwrap();
    let tag = &dom[start..tag_end];
    let text_end = tag_end + dom[tag_end..].find("</div>").unwrap();
    let text = dom[tag_end + 1..text_end].to_string();
    let mut attrs = Vec::new();
    for part in tag.split(" data-").skip(1) {
        if let Some((k, v)) = part.split_once("=\"") {
            attrs.push((k.to_string(), v.trim_end_matches('"').to_string()));
        }
    }
    (attrs, text)
}

/// The last 2,000 bytes of a DOM dump, for messages.
pub fn tail(s: &str) -> &str {
    &s[s.len().saturating_sub(2000)..]
}
