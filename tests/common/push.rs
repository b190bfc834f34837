//! What the tests of the metrics pushes (`--prometheus-remote-write`, `--otlp-endpoint`)
//! share: a receiver on loopback (plain or TLS) that keeps every POST as it came and answers
//! as told, and a run's result with when volley exited.

use super::{read_request, tls, Seen};

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::Value;

/// How the receiver answers each request.
#[derive(Clone, Copy, PartialEq)]
pub enum Answer {
    /// These bytes: a whole response.
    With(&'static [u8]),
    /// Nothing, for 30 s.
    Never,
    /// A 200 whose body never ends.
    Flood,
}

/// The requests received so far.
pub type Posts = Arc<Mutex<Vec<Seen>>>;

/// A receiver on loopback, plain or over TLS with `leaf`.
pub fn receiver(answer: Answer, leaf: Option<&tls::Leaf>) -> (SocketAddr, Posts) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let posts = Posts::default();
    let config = leaf.map(|l| {
        Arc::new(tls::config(
            vec![l.der.clone()],
            l.key(),
            tls::Versions::Both,
        ))
    });
    let got = posts.clone();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { continue };
            let (got, config) = (got.clone(), config.clone());
            std::thread::spawn(move || match config {
                Some(c) => {
                    let conn = rustls::ServerConnection::new(c).unwrap();
                    serve(rustls::StreamOwned::new(conn, s), answer, &got);
                }
                None => serve(s, answer, &got),
            });
        }
    });
    (addr, posts)
}

fn serve<S: Read + Write>(s: S, answer: Answer, got: &Mutex<Vec<Seen>>) {
    let mut r = BufReader::new(s);
    while let Some(post) = read_request(&mut r) {
        got.lock().unwrap().push(post);
        let s = r.get_mut();
        match answer {
            Answer::With(bytes) => {
                if s.write_all(bytes).is_err() {
                    return;
                }
            }
            Answer::Never => {
                std::thread::sleep(Duration::from_secs(30));
                return;
            }
            Answer::Flood => {
                let _ =
                    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n\r\n");
                // Until the client hangs up (or 1 GiB).
                let chunk = [0u8; 16 * 1024];
                for _ in 0..65_536 {
                    if s.write_all(&chunk).is_err() {
                        return;
                    }
                }
                return;
            }
        }
    }
}

/// A result's warnings, for assertions and their messages.
pub fn warnings(j: &Value) -> String {
    j["warnings"].to_string()
}

/// A run's exit code, result, and when it exited.
pub fn run_json(args: &[&str], env: &[(&str, &str)]) -> (i32, Value, SystemTime) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volley"));
    cmd.args(args)
        .args(["--quiet", "--json", json.to_str().unwrap()]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = super::limited(&mut cmd, args, Duration::from_secs(60));
    let exited = SystemTime::now();
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|_| panic!("no result: {}", super::output_text(&out)));
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&text).unwrap(),
        exited,
    )
}

/// How long volley went on after its load ended (its last response, or the end of its send
/// window: `started_at` + `elapsed_s`) until it exited.
pub fn after_the_load(j: &Value, exited: SystemTime) -> Duration {
    let t0 = humantime::parse_rfc3339(j["started_at"].as_str().unwrap()).unwrap();
    let end = t0 + Duration::from_secs_f64(j["elapsed_s"].as_f64().unwrap());
    exited.duration_since(end).unwrap_or_default()
}
