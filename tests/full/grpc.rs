//! `volley run --grpc` against the reference gRPC server (`servers/grpc`: grpc-go's Greeter),
//! in cleartext (h2c) and over TLS: every call answered OK, as many as the server's own count
//! says it answered; a refused name counted under grpc-go's INVALID_ARGUMENT with its message;
//! `--reflect` (the definition asked of the server, which registers reflection) the same; a
//! suite's cells, `proto` and `reflect = true`, call the method.

use crate::common::{self, tls};

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const METHOD: &str = "helloworld.Greeter/SayHello";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `go build` of servers/grpc, once for the tests that run together.
fn build() -> bool {
    static BUILT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *BUILT.get_or_init(build_once)
}

fn build_once() -> bool {
    if !common::on_path("go") {
        common::skip("go is missing (the reference gRPC server is Go: apt-get install golang, or scripts/install-test-deps.sh)");
        return false;
    }
    let dir = root().join("servers/grpc");
    let out = Command::new("go")
        .args(["build", "-o", "server", "."])
        .current_dir(&dir)
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// The reference server, killed when dropped: a test that fails before [`stop`] leaves no
/// server behind.
struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The server on a free port (with TLS from `cert` and `key` when given), up.
fn start(tls_files: Option<(&str, &str)>) -> (Server, u16) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = Command::new(root().join("servers/grpc/server"));
    cmd.env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some((cert, key)) = tls_files {
        cmd.env("TLS_CERT", cert).env("TLS_KEY", key);
    }
    let server = Server(Some(cmd.spawn().expect("the server starts")));
    let t = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the gRPC server is not up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, port)
}

/// Stops the server (SIGTERM): the calls it says it answered.
fn stop(mut server: Server) -> u64 {
    let mut child = server.0.take().expect("a running server");
    // SAFETY: kill(2) on the pid of a child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err.lines()
        .find_map(|l| l.strip_prefix("calls ").and_then(|n| n.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no `calls N` line: {err}"))
}

/// `volley run URL --grpc METHOD … EXTRA --json -`: its RunResult.
fn call(url: &str, extra: &[&str]) -> Value {
    call_method(url, METHOD, extra)
}

fn call_method(url: &str, method: &str, extra: &[&str]) -> Value {
    let proto = root().join("servers/grpc/helloworld.proto");
    let p = proto.display().to_string();
    let mut args = vec!["run", url, "--grpc", method, "--proto", &p];
    args.extend_from_slice(extra);
    let (code, j, text) = common::volley_json(&args, Duration::from_secs(60));
    assert_eq!(code, 0, "{text}");
    common::assert_invariant(&j);
    j
}

fn n(j: &Value, ptr: &str) -> u64 {
    j.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr} in {j}"))
}

#[test]
fn grpc_go_answers_every_call_as_the_server_counts() {
    if !build() {
        return;
    }
    let (server, port) = start(None);
    let url = format!("http://127.0.0.1:{port}/");
    let ok = call(
        &url,
        &[
            "--body",
            r#"{"name":"volley"}"#,
            "-n",
            "2000",
            "-c",
            "4",
            "--streams",
            "8",
        ],
    );
    assert_eq!(ok["target"]["protocol"], "h2c");
    assert_eq!(n(&ok, "/requests/completed"), 2000);
    assert_eq!(n(&ok, "/requests/failed"), 0);
    assert_eq!(
        n(&ok, "/target/grpc/status_codes/0"),
        2000,
        "{}",
        ok["target"]["grpc"]
    );
    let refused = call(
        &url,
        &["--data", r#"{"name":"fail"}"#, "-n", "100", "-c", "1"],
    );
    assert_eq!(
        n(&refused, "/target/grpc/status_codes/3"),
        100,
        "{}",
        refused["target"]["grpc"]
    );
    assert_eq!(n(&refused, "/requests/failed"), 100);
    assert_eq!(
        refused["target"]["grpc"]["first_error"],
        "3 INVALID_ARGUMENT: name fail refused"
    );
    // A server-streaming call: complete with its last message and the trailers.
    let stream = call_method(
        &url,
        "helloworld.Greeter/SayHelloStream",
        &["-n", "50", "-c", "1"],
    );
    assert_eq!(
        n(&stream, "/target/grpc/status_codes/0"),
        50,
        "{}",
        stream["target"]["grpc"]
    );
    let per_call = n(&stream, "/bytes/received") / 50;
    assert!(
        per_call > 3 * 17,
        "three replies of `Hello ` per call: {per_call} bytes each"
    );
    assert_eq!(stop(server), 2150, "the server's count");
}

#[test]
fn grpc_over_tls_to_grpc_go() {
    if !build() {
        return;
    }
    let dir = common::scratch("grpc-tls", "go");
    let leaf = tls::self_signed(&["localhost"]);
    let cert = tls::write(&dir, "cert.pem", &leaf.pem);
    let key = tls::write(&dir, "key.pem", &leaf.key_pem);
    let (server, port) = start(Some((&cert, &key)));
    let url = format!("https://localhost:{port}/");
    let j = call(
        &url,
        &["--cacert", &cert, "-n", "500", "-c", "2", "--streams", "4"],
    );
    assert_eq!(j["target"]["protocol"], "h2");
    assert_eq!(j["target"]["tls"]["alpn"], "h2");
    assert_eq!(
        n(&j, "/target/grpc/status_codes/0"),
        500,
        "{}",
        j["target"]["grpc"]
    );
    // The definition asked over TLS too, with the run's TLS settings.
    let args = [
        "run",
        &url,
        "--grpc",
        METHOD,
        "--reflect",
        "--cacert",
        &cert,
        "-n",
        "100",
    ];
    let (code, r, text) = common::volley_json(&args, Duration::from_secs(60));
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        n(&r, "/target/grpc/status_codes/0"),
        100,
        "{}",
        r["target"]["grpc"]
    );
    assert_eq!(stop(server), 600);
}

#[test]
fn reflect_asks_grpc_go_for_the_greeter() {
    if !build() {
        return;
    }
    let (server, port) = start(None);
    let url = format!("http://127.0.0.1:{port}/");
    let args = [
        "run",
        &url,
        "--grpc",
        METHOD,
        "--reflect",
        "--body",
        r#"{"name":"volley"}"#,
        "-n",
        "500",
        "-c",
        "2",
        "--streams",
        "4",
    ];
    let (code, j, text) = common::volley_json(&args, Duration::from_secs(60));
    assert_eq!(code, 0, "{text}");
    common::assert_invariant(&j);
    assert_eq!(n(&j, "/requests/completed"), 500);
    assert_eq!(
        n(&j, "/target/grpc/status_codes/0"),
        500,
        "{}",
        j["target"]["grpc"]
    );
    assert_eq!(j["target"]["grpc"]["message_bytes"], 8);
    let o = common::volley(
        &[
            "run",
            &url,
            "--grpc",
            "helloworld.Nope/SayHello",
            "--reflect",
            "-n",
            "5",
        ],
        Duration::from_secs(30),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--reflect: the server has no service `helloworld.Nope` (5 NOT_FOUND"),
        "{text}"
    );
    assert_eq!(
        stop(server),
        500,
        "the server's count: the calls, not the reflection"
    );
}

#[test]
fn suite_cells_call_the_method_from_a_proto_or_by_reflection() {
    if !build() {
        return;
    }
    let (server, port) = start(None);
    let dir = common::scratch("grpc-suite", "reflect");
    let proto = root().join("servers/grpc/helloworld.proto");
    let suite = format!(
        r#"[suite]
name = "grpc-reflect"
repetitions = 1
warmup = "0s"
duration = "1s"

[[server]]
name = "grpc"
url = "http://127.0.0.1:{port}/"

[[scenario]]
name = "proto"
protocol = "h2c"
grpc = "{METHOD}"
proto = "{}"
connections = 2

[[scenario]]
name = "reflect"
protocol = "h2c"
grpc = "{METHOD}"
reflect = true
connections = 2
"#,
        proto.display()
    );
    let file = dir.join("grpc.toml");
    std::fs::write(&file, suite).unwrap();
    let out = dir.join("out");
    let o = common::volley(
        &[
            "bench",
            &file.display().to_string(),
            "--out",
            &out.display().to_string(),
        ],
        Duration::from_secs(120),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let mut calls = 0;
    for cell in ["proto", "reflect"] {
        let path = out.join(format!("runs/grpc__{cell}__r1.json"));
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let codes = j["target"]["grpc"]["status_codes"].as_object().unwrap();
        assert_eq!(
            codes.keys().collect::<Vec<_>>(),
            ["0"],
            "{cell}: every call OK: {codes:?}"
        );
        // Warm-up calls included, as the server counts them.
        calls += n(&j, "/target/grpc/status_codes/0");
    }
    assert_eq!(stop(server), calls, "the server's count");
}

#[test]
fn templated_calls_from_a_requests_file_reach_grpc_go_whole() {
    if !build() {
        return;
    }
    let (server, port) = start(None);
    let url = format!("http://127.0.0.1:{port}/");
    let dir = common::scratch("grpc-file", "go");
    let file = dir.join("calls.toml");
    // grpc-go decodes each message: one whose lengths were wrong would be INTERNAL, and the
    // reply carries the name it read.
    std::fs::write(
        &file,
        r#"
[[request]]
grpc = "helloworld.Greeter/SayHello"
body = '{{"name": "user-{seq}-{rand:1..100000}"}}'
expect_body_contains = "Hello user-"
weight = 3

[[request]]
grpc = "helloworld.Greeter/SayHelloStream"
body = '{{"name": "{uuid}"}}'

[[request]]
name = "refused"
grpc = "helloworld.Greeter/SayHello"
body = '{{"name": "fail"}}'
"#,
    )
    .unwrap();
    let proto = root().join("servers/grpc/helloworld.proto");
    let (p, f) = (proto.display().to_string(), file.display().to_string());
    let args = [
        "run",
        &url,
        "--proto",
        &p,
        "--requests-file",
        &f,
        "-n",
        "1000",
        "-c",
        "2",
        "--streams",
        "8",
        "--threshold",
        "checks<=25%",
    ];
    let (code, j, text) = common::volley_json(&args, Duration::from_secs(60));
    assert_eq!(code, 0, "{text}");
    common::assert_invariant(&j);
    let g = &j["target"]["grpc"];
    assert_eq!(
        (n(g, "/status_codes/0"), n(g, "/status_codes/3")),
        (800, 200),
        "{g}"
    );
    assert_eq!(n(&j, "/checks/body_contains"), 0, "{}", j["checks"]);
    let names: Vec<&str> = j["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "helloworld.Greeter/SayHello",
            "helloworld.Greeter/SayHelloStream",
            "refused"
        ]
    );
    assert_eq!(n(&j, "/endpoints/2/requests/failed"), 200);
    assert_eq!(stop(server), 1000, "the server's count");
}
