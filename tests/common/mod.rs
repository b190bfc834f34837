//! In-process test servers on ephemeral ports (normal, stalling, faulty) and a helper that
//! runs the real `volley` binary with a hard time limit.
#![allow(dead_code)]

pub mod caddy;
pub mod capacity;
pub mod cdp;
pub mod clock;
pub mod h2;
pub mod history;
pub mod live;
pub mod login;
pub mod nginx;
pub mod proxy;
pub mod push;
pub mod tls;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A test server: its address and how many requests it has read.
pub struct TestServer {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Per-connection context handed to a behaviour.
pub struct Ctx {
    pub stream: TcpStream,
    pub requests: Arc<AtomicU64>,
    pub started: Instant,
    buf: Vec<u8>,
}

impl Ctx {
    /// Reads one request (head + Content-Length body). False at end of stream.
    pub fn read_request(&mut self) -> bool {
        self.read_request_head().is_some()
    }

    /// Reads one request (head + Content-Length body): its request target (`/path?query`),
    /// or `None` at end of stream.
    pub fn read_request_path(&mut self) -> Option<String> {
        self.read_request_head()
            .and_then(|h| h.split(' ').nth(1).map(str::to_string))
    }

    /// Reads one request: its head as sent, or `None` at end of stream.
    pub fn read_request_head(&mut self) -> Option<String> {
        loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let sent = String::from_utf8_lossy(&self.buf[..end]).to_string();
                let head = sent.to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap_or(0))
                    })
                    .unwrap_or(0);
                let total = end + 4 + len;
                while self.buf.len() < total {
                    if !self.fill() {
                        return None;
                    }
                }
                self.buf.drain(..total);
                self.requests.fetch_add(1, Ordering::SeqCst);
                return Some(sent);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 16 * 1024];
        match self.stream.read(&mut tmp) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }

    /// Reads requests until the stream ends, answering each with `reply`.
    pub fn answer_each(&mut self, reply: &[u8]) {
        while self.read_request() {
            if !self.write(reply) {
                return;
            }
        }
    }

    pub fn write(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).is_ok()
    }

    /// Closes with a TCP reset (SO_LINGER 0).
    pub fn reset(self) {
        let _ = socket_linger_zero(&self.stream);
        drop(self.stream);
    }
}

fn socket_linger_zero(s: &TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt with a correctly sized linger struct.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Starts a server whose every connection runs `behaviour` on its own thread.
pub fn spawn<F>(behaviour: F) -> TestServer
where
    F: Fn(Ctx, u64) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&requests);
    let behaviour = Arc::new(behaviour);
    let started = Instant::now();
    std::thread::spawn(move || {
        let mut n = 0u64;
        for s in listener.incoming() {
            let Ok(stream) = s else { continue };
            let _ = stream.set_nodelay(true);
            let b = Arc::clone(&behaviour);
            let ctx = Ctx {
                stream,
                requests: Arc::clone(&counter),
                started,
                buf: Vec::new(),
            };
            let k = n;
            n += 1;
            std::thread::spawn(move || b(ctx, k));
        }
    });
    TestServer { addr, requests }
}

pub const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n.";

/// Answers every request with the same `reply` bytes.
pub fn answering(reply: &'static [u8]) -> TestServer {
    spawn(move |mut c, _| c.answer_each(reply))
}

/// Answers every request with 200 `.`.
pub fn normal() -> TestServer {
    answering(OK)
}

/// Global pauses: every `every`, the server stops answering for `pause` (like a GC pause);
/// requests arriving then are answered when it ends.
pub fn stalling(every: Duration, pause: Duration) -> TestServer {
    stalling_from(Duration::ZERO, every, pause)
}

/// Like `stalling`, with the first pause `first` after the server starts (so a run's window
/// can be placed between pauses: one that overlaps the window's end leaves requests unsent,
/// by design, and how many depends on the start-up time).
pub fn stalling_from(first: Duration, every: Duration, pause: Duration) -> TestServer {
    assert!(first <= every, "the first pause comes within one period");
    spawn(move |mut c, _| {
        while c.read_request() {
            let t = c.started.elapsed() + every - first;
            let phase = Duration::from_nanos((t.as_nanos() % every.as_nanos()) as u64);
            if phase < pause {
                std::thread::sleep(pause - phase);
            }
            if !c.write(OK) {
                return;
            }
        }
    })
}

/// The environment variables that name proxies.
pub const PROXY_VARIABLES: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// Runs volley with `args`, killing it after `limit` (a hang is a failure, not a stuck CI).
pub fn volley(args: &[&str], limit: Duration) -> Output {
    limited(Command::new(volley_bin()).args(args), args, limit)
}

/// The volley binary the tests run: this build, or `VOLLEY_BIN` (another build, e.g. an
/// older one, to compare what it does against the same servers).
pub fn volley_bin() -> String {
    std::env::var("VOLLEY_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_volley").to_string())
}

/// `volley bench` of `suite` (written to `dir/suite.toml`), run from `dir` with its results in
/// `dir/out` and `extra` flags, within 3 minutes: the output and the results folder.
pub fn bench_suite(
    dir: &std::path::Path,
    suite: &str,
    extra: &[&str],
) -> (Output, std::path::PathBuf) {
    let file = dir.join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let out = dir.join("out");
    let (f, o) = (file.display().to_string(), out.display().to_string());
    let mut args = vec!["bench", f.as_str(), "--out", o.as_str()];
    args.extend_from_slice(extra);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volley"));
    cmd.args(&args).current_dir(dir);
    (limited(&mut cmd, &args, Duration::from_secs(180)), out)
}

/// A results folder's `suite.json`.
pub fn suite_index(out: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("suite.json")).unwrap()).unwrap()
}

/// A results folder's `suite.json`, checked against `schema/suite.schema.json`.
pub fn checked_suite_index(out: &std::path::Path) -> serde_json::Value {
    let idx = suite_index(out);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/suite.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let errs: Vec<String> = v.iter_errors(&idx).map(|e| e.to_string()).collect();
    assert!(errs.is_empty(), "suite.json violates the schema: {errs:?}");
    idx
}

/// A finished command's exit code, stdout and stderr, for assertion messages.
pub fn output_text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// What a reader thread got, waiting at most 5 s for the end of the pipe once the process has
/// exited (a process it started may still hold the pipe open).
fn joined(h: std::thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !h.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if h.is_finished() {
        h.join().unwrap()
    } else {
        b"(the output pipe is still held open by another process)".to_vec()
    }
}

/// Runs `cmd` (volley with `args`, perhaps behind a wrapper such as `ip netns exec`), killing
/// it after `limit`. Its stdout and stderr are read while it runs: a pipe left unread fills at
/// 64 KiB and would stall a large `--json -`.
pub fn limited(cmd: &mut Command, args: &[&str], limit: Duration) -> Output {
    use std::io::Read;
    // The machine's proxy variables would change what a run does (docs/contract.md,
    // "Proxies"): a test sees only the ones it sets.
    for var in PROXY_VARIABLES {
        if !cmd.get_envs().any(|(k, _)| k == var) {
            cmd.env_remove(var);
        }
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("volley binary runs");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Output {
                status,
                stdout: joined(stdout),
                stderr: joined(stderr),
            };
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "volley {:?} did not finish within {limit:?}\nstderr: {}",
                args,
                String::from_utf8_lossy(&joined(stderr))
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs volley with `--json -` and returns (exit code, parsed JSON, stderr).
pub fn volley_json(args: &[&str], limit: Duration) -> (i32, serde_json::Value, String) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--json", "-", "--quiet"]);
    let out = volley(&all, limit);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON on stdout ({e}); stderr:\n{stderr}"));
    (out.status.code().unwrap_or(-1), json, stderr)
}

/// Checks the counter invariant (docs/contract.md, "Counters"): sent = completed + (errors − errors.connect) + unfinished.
pub fn assert_invariant(j: &serde_json::Value) {
    let r = &j["requests"];
    let g = |v: &serde_json::Value| v.as_u64().unwrap();
    let (sent, completed, errors, unfinished) = (
        g(&r["sent"]),
        g(&r["completed"]),
        g(&r["errors"]),
        g(&r["unfinished"]),
    );
    let connect = g(&j["errors"]["connect"]);
    assert_eq!(
        sent,
        completed + (errors - connect) + unfinished,
        "invariant broken: requests {r} errors {}",
        j["errors"]
    );
}

/// A context for a connection accepted outside `spawn`.
pub fn ctx(stream: TcpStream) -> Ctx {
    Ctx {
        stream,
        requests: Arc::new(AtomicU64::new(0)),
        started: Instant::now(),
        buf: Vec::new(),
    }
}

/// A folder under target/tmp for this test process, `<prefix>-<pid>/<name>` (runs shared by
/// several tests outlive any one tempdir); folders of earlier test processes that have ended
/// are removed first.
pub fn scratch(prefix: &str, name: &str) -> std::path::PathBuf {
    use std::path::Path;
    use std::sync::OnceLock;
    static SWEPT: OnceLock<()> = OnceLock::new();
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    SWEPT.get_or_init(|| {
        for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            let pid = file
                .strip_prefix(&format!("{prefix}-"))
                .and_then(|p| p.parse::<u32>().ok());
            if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
    let d = root
        .join(format!("{prefix}-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compares `actual` with `tests/golden/NAME`, or rewrites it under `UPDATE_GOLDEN=1` (review
/// the diff before committing it); a difference names the first line that differs.
pub fn assert_golden(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from the golden file at line {}:\n  golden: {:?}\n  actual: {:?}\n(UPDATE_GOLDEN=1 rewrites it after a deliberate change)",
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

/// The C server `tests/fixtures/profile/NAME.c` built with every frame pointer (`-O0`: gcc
/// drops them in leaf functions otherwise) into `dir/bin`; `None` (a counted skip) without gcc.
pub fn build_profile_fixture(
    name: &str,
    dir: &std::path::Path,
    bin: &str,
) -> Option<std::path::PathBuf> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/profile/{name}.c"));
    let bin = dir.join(bin);
    let built = Command::new("gcc")
        .args(["-Wall", "-Werror", "-O0", "-o"])
        .arg(&bin)
        .arg(&src)
        .status();
    match built {
        Ok(s) if s.success() => Some(bin),
        Ok(s) => panic!("gcc failed on {}: {s}", src.display()),
        Err(e) => {
            skip(&format!("gcc: {e} (apt-get install gcc)"));
            None
        }
    }
}

/// Whether `program` is a file in a folder of the PATH.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// Skips the calling test because something it needs is missing here (`reason` names it and
/// how to install it). Under `CI=true` that fails the test instead: CI installs everything
/// (`make test-deps`), so a skip there would hide a test that never ran. Elsewhere the skip is
/// printed and counted: one line per skip in `target/tmp/skipped`, which `scripts/tests.sh`
/// clears before a run and sums up after it.
pub fn skip(reason: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI=true and this test would be skipped: {reason}"
    );
    eprintln!("skipped: {reason}");
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped");
    let line = format!("{test}: {reason}\n");
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = appended {
        panic!("cannot count the skip in {}: {e}", path.display());
    }
}

/// One request as a recording server saw it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    pub method: String,
    pub target: String,
    /// Header fields in order, names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request: head, then a `Content-Length` body. `None` at the end of the stream.
pub fn read_request<R: std::io::BufRead>(r: &mut R) -> Option<Seen> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut words = line.trim_end().split(' ');
    let (method, target) = (words.next()?.to_string(), words.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':')?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        target,
        headers,
        body,
    })
}
