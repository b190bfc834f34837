//! Contract test for the reference servers in `servers/`: builds each one with its build line,
//! starts it with its start line on a free port, checks every endpoint of the contract
//! byte-exactly with a raw HTTP/1.1 client, and stops it (SIGTERM to its process group, SIGKILL
//! after 5 s) leaving no process behind. Then, when its `protocols` (in the suite) list https, it
//! starts the server again with `TLS_CERT` and `TLS_KEY` (a certificate made with the `openssl`
//! CLI) and checks it over HTTPS with `curl`: TLS 1.2 and 1.3, a GET, a POST and a second
//! request on the same connection (the JVM servers jetty and netty are cleartext HTTP/1.1 only,
//! and get the plain HTTP checks alone). A server whose
//! `protocols` (in the suite) list h2 and h2c is started twice more, with the certificate and
//! with `H2C=1`, and checked over HTTP/2 with `curl` (every endpoint, one connection for two
//! requests), `nghttp` (POST) and `h2load` (concurrent streams on a connection: `/delay`
//! blocks no other).
//!
//! `reference_servers_under_volleys_http2` runs volley's own HTTP/2 (`volley run --http2`,
//! `--h2c`) against the same servers, `reference_servers_under_volleys_http3` its HTTP/3
//! (`--http3`) against those whose `protocols` list h3, `reference_servers_under_volleys_websocket`
//! its WebSocket (upgraded, and over HTTP/2) against those with a `/ws` echo.
//!
//! It needs the toolchains (go, node, python3, javac/java, mvn, cargo, nginx with the echo
//! module; `servers/install.sh` installs what is missing, `scripts/install-test-deps.sh` Maven),
//! `openssl`, `curl` (with HTTP/2), `h2load` and `nghttp` (Debian: nghttp2-client), and PyPI,
//! crates.io and Maven Central for the first build. A missing
//! program fails the test with its name: nothing is skipped.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use volley::config::suite::{Managed, Protocol, ServerKind, ServerSpec, SuiteConfig};

/// One reference server: where it lives and the lines that build and start it.
struct RefServer {
    name: String,
    /// Folder, relative to the repository root; build and start run in it.
    dir: PathBuf,
    /// Programs that must be found on PATH (or in /usr/sbin) for the lines below: the
    /// server's `requires` in the suite.
    needs: Vec<String>,
    /// Run once with `sh -c`; empty when there is nothing to build.
    build: String,
    /// Run with `sh -c` in its own process group, `{port}` replaced by the port.
    start: String,
    /// Extra environment for build and start (PORT is always set).
    env: Vec<(String, String)>,
    /// The protocols it speaks (its `protocols` in the suite).
    protocols: Vec<Protocol>,
}

/// One start of a server and the checks it gets: how it is started and reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    /// Plain HTTP/1.1, checked byte-exactly with a raw client.
    Http,
    /// HTTP/1.1 over TLS (`TLS_CERT`, `TLS_KEY`).
    Https,
    /// HTTP/2 over TLS, h2 by ALPN (`TLS_CERT`, `TLS_KEY`).
    H2,
    /// Cleartext HTTP/2 with prior knowledge (`H2C=1`).
    H2c,
}

impl Run {
    /// The runs a server gets: HTTP always (every reference server speaks it), HTTPS, h2 and
    /// h2c when its `protocols` list them.
    fn all_for(s: &RefServer) -> Vec<Run> {
        let mut runs = vec![Run::Http];
        if s.protocols.contains(&Protocol::Https) {
            runs.push(Run::Https);
        }
        runs.extend(s.http2_runs());
        runs
    }

    /// In messages and log file names.
    fn name(self) -> &'static str {
        match self {
            Run::Http => "http",
            Run::Https => "https",
            Run::H2 => "h2",
            Run::H2c => "h2c",
        }
    }

    /// curl's flag for it and the HTTP version curl must report.
    fn curl_version(self) -> (&'static str, &'static str) {
        match self {
            Run::Http | Run::Https => ("--http1.1", "1.1"),
            Run::H2 => ("--http2", "2"),
            Run::H2c => ("--http2-prior-knowledge", "2"),
        }
    }

    /// The URL scheme.
    fn scheme(self) -> &'static str {
        match self {
            Run::Http | Run::H2c => "http",
            Run::Https | Run::H2 => "https",
        }
    }
}

impl RefServer {
    /// Its HTTP/2 runs (h2, h2c) by its `protocols`.
    fn http2_runs(&self) -> Vec<Run> {
        [(Protocol::H2, Run::H2), (Protocol::H2c, Run::H2c)]
            .into_iter()
            .filter(|(p, _)| self.protocols.contains(p))
            .map(|(_, r)| r)
            .collect()
    }
}

/// The reference servers: those of `suites/quick.toml` in its order, then the JVM servers
/// that only `suites/seeds.toml` lists (their Maven build and JVM start would slow `make quick`).
const NAMES: [&str; 8] = [
    "go", "node", "python", "java", "rust", "nginx", "jetty", "netty",
];

/// The reference servers, with the build and start lines of `suites/quick.toml`, and of
/// `suites/seeds.toml` for the servers (folders) quick.toml lacks (read through volley's own
/// suite parser), so the suites and this test cannot drift apart.
fn servers() -> Vec<RefServer> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut listed: Vec<(&str, ServerSpec, Managed)> = Vec::new();
    for file in ["suites/quick.toml", "suites/seeds.toml"] {
        let suite =
            SuiteConfig::load(&root.join(file), 2).unwrap_or_else(|e| panic!("{file}: {e}"));
        for s in suite.servers {
            let ServerKind::Managed(m) = &s.kind else {
                // seeds.toml has a control (a closed port) besides the reference servers.
                assert!(
                    file != "suites/quick.toml",
                    "quick.toml server {} is not a managed server",
                    s.name
                );
                continue;
            };
            let m = m.clone();
            if !listed.iter().any(|(_, _, l)| l.dir == m.dir) {
                listed.push((file, s, m));
            }
        }
    }
    let out: Vec<RefServer> = listed
        .iter()
        .map(|(file, s, m)| {
            // The suite skips a server whose `requires` are missing: each must name its tools.
            assert!(
                !m.requires.is_empty(),
                "{file} server {} has no `requires`",
                s.name
            );
            let mut env = m.env.clone();
            env.push(("PIP_DISABLE_PIP_VERSION_CHECK".into(), "1".into()));
            RefServer {
                name: s.name.clone(),
                dir: m.dir.clone(),
                needs: m.requires.clone(),
                build: m.build.clone().unwrap_or_default(),
                start: m.start.clone(),
                env,
                protocols: s.protocols.clone(),
            }
        })
        .collect();
    let names: Vec<&str> = out.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names, NAMES,
        "quick.toml and seeds.toml hold every reference server"
    );
    out
}

const BUILD_TIMEOUT: Duration = Duration::from_secs(900);
const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_GRACE: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// curl's `--max-time` for one HTTPS request, in seconds.
const CURL_MAX_TIME: &str = "10";

/// What the HTTPS and HTTP/2 checks need: the programs and the certificate files.
struct Tls {
    curl: PathBuf,
    /// nghttp2's load tool, for concurrent streams (found when it is needed).
    h2load: Option<PathBuf>,
    /// nghttp2's client, for POST over HTTP/2 (found when it is needed).
    nghttp: Option<PathBuf>,
    cert: PathBuf,
    key: PathBuf,
    /// A 1 KiB request body for `curl --data-binary @FILE`.
    body_1k: PathBuf,
}

#[test]
fn reference_servers_meet_the_contract() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let servers: &'static [RefServer] = Box::leak(servers().into_boxed_slice());
    let missing: Vec<String> = servers
        .iter()
        .flat_map(|s| {
            s.needs
                .iter()
                .map(move |p| (format!("the {} server", s.name), p.as_str()))
        })
        .chain(["openssl", "curl"].map(|p| ("the HTTPS checks".to_string(), p)))
        .chain(["h2load", "nghttp"].map(|p| ("the HTTP/2 checks".to_string(), p)))
        .filter(|(_, program)| find_program(program).is_none())
        .map(|(what, program)| format!("{program} (for {what})"))
        .collect();
    assert!(
        missing.is_empty(),
        "toolchains missing: {}; servers/install.sh names and installs what the reference \
         servers need",
        missing.join(", ")
    );

    let logs = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let tls = make_tls(logs.path());

    // Builds in parallel (network-bound pip next to CPU-bound cargo); servers one by one.
    let builds: Vec<_> = servers
        .iter()
        .map(|s| {
            let dir = root.join(&s.dir);
            let log = logs.path().join(format!("{}-build.log", s.name));
            thread::spawn(move || build(s, &dir, &log))
        })
        .collect();
    let built: Vec<Result<Duration, String>> = builds
        .into_iter()
        .map(|b| {
            b.join()
                .unwrap_or_else(|_| Err("build thread panicked".into()))
        })
        .collect();

    let mut failures = Vec::new();
    for (s, built) in servers.iter().zip(built) {
        let outcome = built.and_then(|took| {
            eprintln!("[{}] built in {:.1?}", s.name, took);
            for run in Run::all_for(s) {
                let t = Instant::now();
                check_server(s, &root.join(&s.dir), logs.path(), &tls, run, &|port| {
                    contract_for(run, port, &tls)
                })
                .map_err(|e| format!("over {}: {e}", run.name()))?;
                eprintln!(
                    "[{}] {} contract met, stopped cleanly ({:.1?})",
                    s.name,
                    run.name(),
                    t.elapsed()
                );
            }
            Ok(())
        });
        if let Err(e) = outcome {
            eprintln!("[{}] FAILED: {e}", s.name);
            failures.push(format!("{}: {e}", s.name));
        }
    }
    eprintln!("reference servers checked in {:.1?}", started.elapsed());
    assert!(
        failures.is_empty(),
        "{} of {} reference servers failed:\n\n{}",
        failures.len(),
        servers.len(),
        failures.join("\n\n")
    );
}

/// volley's own HTTP/2 against every reference server that speaks it: `volley run --http2`
/// (h2 by ALPN, trusting the test certificate) and `--h2c`, 10 streams on each of 2
/// connections, GET / and POST / with 1 KiB: every response a 200 in the protocol asked for,
/// no error.
#[test]
fn reference_servers_under_volleys_http2() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let logs = tempfile::tempdir().expect("tempdir");
    let tls = make_tls(logs.path());
    let mut failures = Vec::new();
    for s in servers().iter().filter(|s| !s.http2_runs().is_empty()) {
        let dir = root.join(&s.dir);
        let log = logs.path().join(format!("{}-build.log", s.name));
        let outcome = build(s, &dir, &log).and_then(|_| {
            for run in s.http2_runs() {
                check_server(s, &dir, logs.path(), &tls, run, &|port| {
                    volley_h2(port, &tls, run)
                })
                .map_err(|e| format!("volley over {}: {e}", run.name()))?;
                eprintln!(
                    "[{}] volley over {}: every response 200",
                    s.name,
                    run.name()
                );
            }
            Ok(())
        });
        if let Err(e) = outcome {
            eprintln!("[{}] FAILED: {e}", s.name);
            failures.push(format!("{}: {e}", s.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// volley's HTTP/3 against every reference server whose `protocols` list h3 (rust's): started
/// as for an h3 cell (with the certificate, up once it answers over HTTPS), then `volley run
/// --http3` on each endpoint of the contract over the same port's UDP side.
#[test]
fn reference_servers_under_volleys_http3() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let logs = tempfile::tempdir().expect("tempdir");
    let tls = make_tls(logs.path());
    let h3: Vec<RefServer> = servers()
        .into_iter()
        .filter(|s| s.protocols.contains(&Protocol::H3))
        .collect();
    let names: Vec<&str> = h3.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["rust"], "the reference servers that speak HTTP/3");
    let mut failures = Vec::new();
    for s in &h3 {
        let dir = root.join(&s.dir);
        let log = logs.path().join(format!("{}-build.log", s.name));
        let outcome = build(s, &dir, &log).and_then(|_| {
            check_server(s, &dir, logs.path(), &tls, Run::Https, &|port| {
                volley_h3(port, &tls)
            })
            .map_err(|e| format!("volley over h3: {e}"))
        });
        match outcome {
            Ok(()) => eprintln!("[{}] volley over h3: the contract's answers", s.name),
            Err(e) => {
                eprintln!("[{}] FAILED: {e}", s.name);
                failures.push(format!("{}: {e}", s.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The servers with a WebSocket echo at `/ws` (servers/README.md): `volley run ws://…/ws`
/// over HTTP and `wss://` over HTTPS, and over HTTP/2 (RFC 8441: `ws://` with `--h2c` against
/// `H2C=1`, `wss://` with `--http2`), each message echoed, as the server's `/ws/count` counts.
#[test]
fn reference_servers_under_volleys_websocket() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let logs = tempfile::tempdir().expect("tempdir");
    let tls = make_tls(logs.path());
    let mut with_ws: Vec<RefServer> = servers().into_iter().filter(|s| s.name == "go").collect();
    for s in &mut with_ws {
        // Go's HTTP/2 offers extended CONNECT only when asked at start-up.
        s.env.push(("GODEBUG".into(), "http2xconnect=1".into()));
    }
    let mut failures = Vec::new();
    for s in &with_ws {
        let dir = root.join(&s.dir);
        let log = logs.path().join(format!("{}-build.log", s.name));
        let outcome = build(s, &dir, &log).and_then(|_| {
            for run in [Run::Http, Run::Https, Run::H2c, Run::H2] {
                check_server(s, &dir, logs.path(), &tls, run, &|port| {
                    volley_ws(port, &tls, run)
                })
                .map_err(|e| format!("volley over {}: {e}", run.name()))?;
            }
            Ok(())
        });
        match outcome {
            Ok(()) => eprintln!(
                "[{}] volley over ws and wss, upgraded and over HTTP/2: every message echoed",
                s.name
            ),
            Err(e) => {
                eprintln!("[{}] FAILED: {e}", s.name);
                failures.push(format!("{}: {e}", s.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// 1,000 messages over 4 connections, 4 in flight each (text, then binary of 1 KiB): each
/// answered, without errors, over the transport `run` asks for (`--h2c` and `--http2`: a
/// stream of an HTTP/2 connection); in cleartext the server's `/ws/count` went up by as many.
fn volley_ws(port: u16, tls: &Tls, run: Run) -> Result<(), String> {
    let count = || -> Result<u64, String> {
        let r = one_request(port, "GET", "/ws/count", b"")?;
        String::from_utf8_lossy(&r.body)
            .trim()
            .parse()
            .map_err(|e| format!("/ws/count: {e}"))
    };
    let (scheme, flags, over): (_, &[&str], _) = match run {
        Run::Http => ("ws", &[], "http/1.1"),
        Run::Https => ("wss", &[], "http/1.1"),
        Run::H2c => ("ws", &["--h2c"], "h2c"),
        Run::H2 => ("wss", &["--http2"], "h2"),
    };
    let cleartext = scheme == "ws";
    let url = format!("{scheme}://127.0.0.1:{port}/ws");
    for extra in [&[][..], &["--ws-binary", "--body-size", "1KiB"][..]] {
        let before = if cleartext { count()? } else { 0 };
        let out = Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(["run", &url, "-n", "1000", "-c", "4", "--pipeline", "4"])
            .args(flags)
            .arg("--cacert")
            .arg(&tls.cert)
            .args(["--json", "-", "--quiet"])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run volley: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let what = format!("volley run {url} {} {}", flags.join(" "), extra.join(" "));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("{what}: {} ({e}); stderr: {stderr}", out.status))?;
        let (done, errors) = (
            r["requests"]["completed"].as_u64(),
            r["requests"]["errors"].as_u64(),
        );
        if r["target"]["protocol"] != "websocket" || done != Some(1000) || errors != Some(0) {
            return Err(format!(
                "{what}: protocol {}, {done:?} completed, {errors:?} errors ({}); stderr: {stderr}",
                r["target"]["protocol"], r["errors"]
            ));
        }
        if r["target"]["websocket"]["over"] != over {
            return Err(format!(
                "{what}: carried over {}, want {over}",
                r["target"]["websocket"]["over"]
            ));
        }
        if cleartext {
            let echoed = count()? - before;
            if echoed != 1000 {
                return Err(format!(
                    "{what}: the server counted {echoed} echoes, want 1000"
                ));
            }
        }
    }
    Ok(())
}

/// `volley run URL --http3 EXTRA…` against `127.0.0.1:port`: its RunResult and how long it took.
fn volley_h3_run(
    port: u16,
    tls: &Tls,
    path: &str,
    extra: &[&str],
) -> Result<(serde_json::Value, Duration), String> {
    let url = format!("https://127.0.0.1:{port}{path}");
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["run", &url, "--http3"])
        .arg("--cacert")
        .arg(&tls.cert)
        .args(["--json", "-", "--quiet"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run volley: {e}"))?;
    let took = t.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let what = format!("volley run {url} --http3 {}", extra.join(" "));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{what}: {} ({e}); stderr: {stderr}", out.status))?;
    let errors = r["requests"]["errors"].as_u64();
    if r["target"]["protocol"] != "h3" || errors != Some(0) {
        return Err(format!(
            "{what}: protocol {}, {:?} errors ({}); stderr: {stderr}",
            r["target"]["protocol"], errors, r["errors"]
        ));
    }
    Ok((r, took))
}

/// The contract over HTTP/3, as far as volley's RunResult shows it: every endpoint's status
/// (GET /, /hello, /bytes, /delay; POST / with 1 KiB; 404 for an unknown path), a response's
/// size for `/bytes?n=65536`, and `/delay` on 20 streams of one connection at once.
fn volley_h3(port: u16, tls: &Tls) -> Result<(), String> {
    let n = ["-n", "100", "-c", "2", "--streams", "5"];
    let cases: [(&str, &[&str], &str); 5] = [
        ("/", &[], "200"),
        ("/hello", &[], "200"),
        ("/bytes?n=1024", &[], "200"),
        ("/", &["--body-size", "1KiB"], "200"),
        ("/no-such-path", &[], "404"),
    ];
    for (path, extra, status) in cases {
        let (r, _) = volley_h3_run(port, tls, path, &[&n[..], extra].concat())?;
        if r["status_codes"][status].as_u64() != Some(100) {
            return Err(format!(
                "{path} {extra:?}: status codes {}, want 100 × {status}",
                r["status_codes"]
            ));
        }
    }
    // 10 responses of 64 KiB: each within its body and HTTP/3's frame and field bytes.
    let (r, _) = volley_h3_run(port, tls, "/bytes?n=65536", &["-n", "10", "-c", "1"])?;
    let per = r["bytes"]["received"].as_u64().unwrap_or(0) / 10;
    if !(65536..65536 + 256).contains(&per) {
        return Err(format!("/bytes?n=65536: {per} bytes received per response"));
    }
    // 20 requests of /delay?ms=300 on 20 streams of one connection: together, not one by one
    // (6 s).
    let (r, took) = volley_h3_run(
        port,
        tls,
        "/delay?ms=300",
        &["-n", "20", "-c", "1", "--streams", "20"],
    )?;
    if r["status_codes"]["200"].as_u64() != Some(20) || took > Duration::from_secs(3) {
        return Err(format!(
            "/delay?ms=300 on 20 streams: {} in {took:.1?}, want 20 × 200 well under 6 s",
            r["status_codes"]
        ));
    }
    Ok(())
}

/// `volley run` in HTTP/2 (`run` is h2 or h2c) against the server on `port`: 400 requests of
/// GET / and of POST / with 1 KiB, each answered 200 in that protocol, without errors.
fn volley_h2(port: u16, tls: &Tls, run: Run) -> Result<(), String> {
    let url = format!("{}://127.0.0.1:{port}/", run.scheme());
    let flag = if run == Run::H2 { "--http2" } else { "--h2c" };
    for extra in [&[][..], &["--body-size", "1KiB"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(["run", &url, flag, "-n", "400", "-c", "2", "--streams", "10"])
            .arg("--cacert")
            .arg(&tls.cert)
            .args(["--json", "-", "--quiet"])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run volley: {e}"))?;
        let what = format!("volley run {url} {flag} {}", extra.join(" "));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let result: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("{what}: {} ({e}); stderr: {stderr}", out.status))?;
        let got = (
            result["target"]["protocol"].as_str(),
            result["requests"]["completed"].as_u64(),
            result["requests"]["errors"].as_u64(),
            result["status_codes"]["200"].as_u64(),
        );
        if got != (Some(run.name()), Some(400), Some(0), Some(400)) {
            return Err(format!(
                "{what}: (protocol, completed, errors, 200s) = {got:?}, want ({:?}, 400, 0, 400); stderr: {stderr}",
                run.name()
            ));
        }
    }
    Ok(())
}

/// `program` on PATH, or in /usr/sbin and /sbin (nginx lives there and ordinary users'
/// PATH may lack them).
fn find_program(program: &str) -> Option<PathBuf> {
    // The harness's own lookup: PATH, then the system folders where Debian puts nginx.
    volley::harness::tools::find(program, std::env::var_os("PATH").as_deref())
}

/// A `sh -c LINE` command in `dir`, in a process group of its own, output to `log`.
fn shell(s: &RefServer, line: &str, dir: &Path, log: &Path) -> Command {
    let out = File::create(log).expect("log file");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(line)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("log file"))
        .stderr(out)
        .process_group(0)
        // Set by whoever runs `cargo test`; it would move the Rust server's target/.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")]);
    cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
    for (k, v) in &s.env {
        cmd.env(k, v);
    }
    cmd
}

fn build(s: &RefServer, dir: &Path, log: &Path) -> Result<Duration, String> {
    let t = Instant::now();
    if s.build.is_empty() {
        return Ok(t.elapsed());
    }
    let child = shell(s, &s.build, dir, log)
        .spawn()
        .map_err(|e| format!("cannot run the build line `{}`: {e}", s.build))?;
    let mut group = Group::new(child);
    let status = loop {
        if let Some(status) = group.child.try_wait().expect("wait for build") {
            break status;
        }
        if t.elapsed() > BUILD_TIMEOUT {
            let _ = group.stop(Duration::ZERO);
            return Err(format!(
                "build line `{}` still running after {BUILD_TIMEOUT:?}:\n{}",
                s.build,
                tail(log)
            ));
        }
        thread::sleep(Duration::from_millis(100));
    };
    // Nothing of a build should outlive it.
    let _ = group.stop(Duration::ZERO);
    if status.success() {
        Ok(t.elapsed())
    } else {
        Err(format!(
            "build line `{}` failed ({status}):\n{}",
            s.build,
            tail(log)
        ))
    }
}

/// The checks of `run` on a server answering on `port`.
fn contract_for(run: Run, port: u16, tls: &Tls) -> Result<(), String> {
    match run {
        Run::Http => check_contract(port),
        Run::Https => check_tls(port, tls),
        Run::H2 | Run::H2c => check_h2(port, tls, run),
    }
}

/// Starts the server for `run` (with TLS_CERT and TLS_KEY over TLS, H2C=1 for h2c), waits
/// until it answers, runs `check` on its port, stops it.
fn check_server(
    s: &RefServer,
    dir: &Path,
    logs: &Path,
    tls: &Tls,
    run: Run,
    check: &dyn Fn(u16) -> Result<(), String>,
) -> Result<(), String> {
    let port = free_port();
    let stdout = logs.join(format!("{}-{}-stdout.log", s.name, run.name()));
    let stderr = logs.join(format!("{}-{}-stderr.log", s.name, run.name()));
    let line = s.start.replace("{port}", &port.to_string());
    let mut cmd = shell(s, &line, dir, &stderr);
    // TMPDIR inside the test's temp dir, so run dirs (nginx's) go away with it.
    cmd.env("PORT", port.to_string())
        .env("TMPDIR", logs)
        .stdout(File::create(&stdout).expect("log file"));
    match run {
        Run::Https | Run::H2 => {
            cmd.env("TLS_CERT", &tls.cert).env("TLS_KEY", &tls.key);
        }
        Run::H2c => {
            cmd.env("H2C", "1");
        }
        Run::Http => {}
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run the start line `{line}`: {e}"))?;
    let mut group = Group::new(child);

    let result = match run {
        Run::Http => wait_until_up(&mut group.child, port),
        _ => wait_until_up_curl(&mut group.child, port, tls, run),
    }
    .map(|took| eprintln!("[{}] answering on port {port} after {took:.1?}", s.name))
    .and_then(|()| check(port))
    .map_err(|e| format!("{e}\n--- stderr tail ---\n{}", tail(&stderr)));

    let t = Instant::now();
    let stopped = group.stop(STOP_GRACE);
    eprintln!("[{}] stopped in {:.1?}", s.name, t.elapsed());
    result?;
    stopped?;
    let printed = std::fs::read(&stdout).unwrap_or_default();
    if !printed.is_empty() {
        return Err(format!(
            "wrote {} bytes to stdout while serving (no access log on stdout, please):\n{}",
            printed.len(),
            tail(&stdout)
        ));
    }
    Ok(())
}

/// A self-signed ECDSA P-256 certificate for localhost and 127.0.0.1, made with the openssl
/// CLI in `dir`, as volley's harness makes one, and a 1 KiB body file.
fn make_tls(dir: &Path) -> Tls {
    let openssl = find_program("openssl").expect("openssl (for the HTTPS checks) not found");
    let curl = find_program("curl").expect("curl (for the HTTPS checks) not found");
    let h2load = find_program("h2load");
    let nghttp = find_program("nghttp");
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    let out = Command::new(&openssl)
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-addext"])
        .arg("subjectAltName=DNS:localhost,IP:127.0.0.1")
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run openssl ({}): {e}", openssl.display()));
    assert!(
        out.status.success(),
        "openssl req (making the test certificate) failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let body_1k = dir.join("body-1k");
    std::fs::write(&body_1k, [b'p'; 1024]).expect("write the 1 KiB body");
    Tls {
        curl,
        h2load,
        nghttp,
        cert,
        key,
        body_1k,
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn wait_until_up(child: &mut Child, port: u16) -> Result<Duration, String> {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for server") {
            return Err(format!("exited before answering ({status})"));
        }
        let answered = Conn::open(port)
            .ok()
            .and_then(|mut c| c.request("GET", "/", b"").ok())
            .is_some_and(|r| r.status == 200 && r.body == b".");
        if answered {
            return Ok(t.elapsed());
        }
        if t.elapsed() > START_TIMEOUT {
            return Err(format!(
                "no `200 .` answer to GET / on port {port} within {START_TIMEOUT:?}"
            ));
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// Like `wait_until_up`, with curl speaking what `run` is.
fn wait_until_up_curl(
    child: &mut Child,
    port: u16,
    tls: &Tls,
    run: Run,
) -> Result<Duration, String> {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for server") {
            return Err(format!("exited before answering ({status})"));
        }
        let last = match curl(tls, run, port, &[], &["/"]) {
            Ok(r) if r.status == 200 && r.body == b"." => return Ok(t.elapsed()),
            Ok(r) => format!("status {}, body {:?}", r.status, r.text()),
            Err(e) => e,
        };
        if t.elapsed() > START_TIMEOUT {
            return Err(format!(
                "no `200 .` answer to GET {}://127.0.0.1:{port}/ in {} within \
                 {START_TIMEOUT:?}; last try: {last}",
                run.scheme(),
                run.name()
            ));
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// The HTTPS part of the contract, with curl trusting the test certificate: GET / and POST /
/// (1 KiB) over HTTP/1.1, TLS 1.2 and TLS 1.3 each, and a second request reusing the connection.
fn check_tls(port: u16, tls: &Tls) -> Result<(), String> {
    let post = format!("@{}", tls.body_1k.display());
    let post_args = [
        "--data-binary",
        post.as_str(),
        "-H",
        "Content-Type: application/octet-stream",
        // No `Expect: 100-continue` round trip.
        "-H",
        "Expect:",
    ];
    for (version, flags) in [
        ("TLS 1.2", &["--tlsv1.2", "--tls-max", "1.2"][..]),
        ("TLS 1.3", &["--tlsv1.3"][..]),
    ] {
        curl(tls, Run::Https, port, flags, &["/"])
            .and_then(|r| r.want(&format!("{version} GET /"), b"."))?;
        let args: Vec<&str> = flags.iter().chain(&post_args).copied().collect();
        curl(tls, Run::Https, port, &args, &["/"])
            .and_then(|r| r.want(&format!("{version} POST / (1024 bytes)"), b"length:1024"))?;
    }
    // Two URLs in one curl run share the connection when the server keeps it alive.
    let r = curl(tls, Run::Https, port, &[], &["/", "/hello"])?;
    r.want("GET / then /hello on one connection", b".Hello, World!")?;
    if r.connects != 1 {
        return Err(format!(
            "GET / then /hello: {} TLS connections, want 1 (keep-alive over TLS)",
            r.connects
        ));
    }
    Ok(())
}

/// The HTTP/2 part of the contract (`run` is h2 or h2c), with curl: every endpoint and a 404
/// in HTTP/2, for h2 also two requests on one connection and TLS 1.2; POST with nghttp; then
/// concurrent streams with h2load.
fn check_h2(port: u16, tls: &Tls, run: Run) -> Result<(), String> {
    let what = |w: &str| format!("{} {w}", run.name());
    let get = |path: &str, body: &[u8]| {
        curl(tls, run, port, &[], &[path]).and_then(|r| r.want(&what(&format!("GET {path}")), body))
    };
    get("/", b".")?;
    get("/hello", b"Hello, World!")?;
    get("/delay?ms=20", b".")?;
    get("/bytes?n=10000", &[b'x'; 10000])?;
    get("/bytes?n=0", b"")?;
    nghttp_post(port, tls, run)?;
    let r = curl(tls, run, port, &[], &["/no-such-path"])?;
    if r.status != 404 {
        return Err(format!(
            "{}: status {}, want 404",
            what("GET /no-such-path"),
            r.status
        ));
    }
    if run == Run::H2 {
        // h2c is left out: curl 7.88 (Debian 12) fails its second request on a reused
        // prior-knowledge connection (`Error in the HTTP2 framing layer`) whatever the server.
        // h2load below sends 200 requests over 2 connections, so h2c reuse is checked there.
        let r = curl(tls, run, port, &[], &["/", "/hello"])?;
        r.want(
            &what("GET / then /hello on one connection"),
            b".Hello, World!",
        )?;
        if r.connects != 1 {
            return Err(format!(
                "{}: {} connections, want 1",
                what("GET / then /hello"),
                r.connects
            ));
        }
        curl(tls, run, port, &["--tlsv1.2", "--tls-max", "1.2"], &["/"])
            .and_then(|r| r.want(&what("TLS 1.2 GET /"), b"."))?;
    }
    h2load_streams(port, tls, run)
}

/// POST / with 1 KiB in HTTP/2 through nghttp, which prints the body. Not curl: nginx answers
/// a POST before it has read the body and then resets the stream with NO_ERROR, as RFC 9113
/// (8.1) allows, and curl 7.88 then fails the request now and then (`Stream error in the
/// HTTP/2 framing layer`).
fn nghttp_post(port: u16, tls: &Tls, run: Run) -> Result<(), String> {
    let nghttp = tls
        .nghttp
        .as_ref()
        .ok_or("nghttp (nghttp2-client) not found")?;
    let url = format!("{}://127.0.0.1:{port}/", run.scheme());
    let out = Command::new(nghttp)
        .arg("-d")
        .arg(&tls.body_1k)
        .args(["-t", CURL_MAX_TIME, &url])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run nghttp ({}): {e}", nghttp.display()))?;
    if out.status.success() && out.stdout == b"length:1024" {
        return Ok(());
    }
    Err(format!(
        "{} POST / (1024 bytes) with nghttp: {}, body {:?}, want \"length:1024\"; {}",
        run.name(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Requests of the concurrency check, their delay, connections and streams per connection:
/// 200 requests of 50 ms over 2 × 10 streams take about 0.5 s; one stream at a time per
/// connection would take 5 s.
const H2LOAD_REQUESTS: u32 = 200;
const H2LOAD_DELAY_MS: u32 = 50;
const H2LOAD_MAX: Duration = Duration::from_millis(2500);

/// `h2load -n 200 -c 2 -m 10 .../delay?ms=50`: every request answered 2xx, in the protocol of
/// `run`, and soon enough that the streams of a connection were served side by side.
fn h2load_streams(port: u16, tls: &Tls, run: Run) -> Result<(), String> {
    let h2load = tls
        .h2load
        .as_ref()
        .ok_or("h2load (nghttp2-client) not found")?;
    let url = format!(
        "{}://127.0.0.1:{port}/delay?ms={H2LOAD_DELAY_MS}",
        run.scheme()
    );
    let n = H2LOAD_REQUESTS.to_string();
    let t = Instant::now();
    let out = Command::new(h2load)
        .args(["-n", &n, "-c", "2", "-m", "10", "-T", CURL_MAX_TIME, &url])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run h2load ({}): {e}", h2load.display()))?;
    let took = t.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    let wanted = [
        format!("Application protocol: {}", run.name()),
        format!("{n} succeeded, 0 failed"),
        format!("status codes: {n} 2xx"),
    ];
    if let Some(missing) = wanted.iter().find(|w| !text.contains(w.as_str())) {
        return Err(format!(
            "h2load {url}: no `{missing}` in its output:\n{text}"
        ));
    }
    if took > H2LOAD_MAX {
        return Err(format!(
            "h2load {url}: {n} requests over 2 connections × 10 streams took {took:.1?} \
             (over {H2LOAD_MAX:?}): the streams of a connection were not served concurrently"
        ));
    }
    Ok(())
}

/// What `curl` reports for its requests: the last status, the bodies one after the other, and
/// how many connections it opened.
struct CurlReply {
    status: u16,
    body: Vec<u8>,
    connects: u32,
}

impl CurlReply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn want(&self, what: &str, body: &[u8]) -> Result<(), String> {
        if self.status == 200 && self.body == body {
            Ok(())
        } else {
            Err(format!(
                "{what}: status {}, body {:?}, want 200 {:?}",
                self.status,
                self.text(),
                String::from_utf8_lossy(body)
            ))
        }
    }
}

/// `curl --cacert CERT --http1.1 -sS [args] https://127.0.0.1:PORT/PATH...` (the version flag
/// and scheme of `run`), bounded by `--max-time`. Each request's write-out line (status, HTTP
/// version, new connections) goes to stderr, so the body on stdout stays byte-exact; a
/// response in another HTTP version than `run`'s is an error.
fn curl(
    tls: &Tls,
    run: Run,
    port: u16,
    args: &[&str],
    paths: &[&str],
) -> Result<CurlReply, String> {
    let (flag, want_version) = run.curl_version();
    let mut cmd = Command::new(&tls.curl);
    cmd.arg("--cacert")
        .arg(&tls.cert)
        .args([flag, "-sS", "--max-time", CURL_MAX_TIME])
        .args([
            "-w",
            "%{stderr}@@ %{http_code} %{http_version} %{num_connects}\n",
        ])
        .args(args)
        .args(
            paths
                .iter()
                .map(|p| format!("{}://127.0.0.1:{port}{p}", run.scheme())),
        )
        .stdin(Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run curl ({}): {e}", tls.curl.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let what = format!("curl {} {paths:?}", args.join(" "));
    if !out.status.success() {
        return Err(format!("{what}: {} {}", out.status, stderr.trim()));
    }
    let mut reply = CurlReply {
        status: 0,
        body: out.stdout,
        connects: 0,
    };
    let mut seen = 0;
    for line in stderr.lines().filter_map(|l| l.strip_prefix("@@ ")) {
        let fields: Vec<&str> = line.split(' ').collect();
        let [code, version, connects] = fields[..] else {
            return Err(format!("{what}: unexpected write-out {line:?}"));
        };
        if version != want_version {
            return Err(format!(
                "{what}: HTTP version {version}, want {want_version}"
            ));
        }
        // The first status other than 200, if any.
        if reply.status == 0 || reply.status == 200 {
            reply.status = code.parse().unwrap_or(0);
        }
        reply.connects += connects.parse::<u32>().unwrap_or(0);
        seen += 1;
    }
    if seen != paths.len() {
        return Err(format!(
            "{what}: {seen} responses, want {}: {stderr}",
            paths.len()
        ));
    }
    Ok(reply)
}

/// Every endpoint of the contract, byte-exactly.
fn check_contract(port: u16) -> Result<(), String> {
    let one = |method: &str, path: &str, body: &[u8]| one_request(port, method, path, body);

    let r = one("GET", "/", b"")?;
    r.want("GET /", b".")?;
    let ct = r.header("content-type").unwrap_or_default();
    if !ct.starts_with("text/plain") {
        return Err(format!("GET /: Content-Type {ct:?}, want text/plain"));
    }
    one("POST", "/", &[b'p'; 1024])?.want("POST / (1024 bytes)", b"length:1024")?;
    one("POST", "/", b"")?.want("POST / (0 bytes)", b"length:0")?;
    one("POST", "/", &vec![b'p'; 2 << 20])?.want("POST / (2 MiB)", b"length:2097152")?;
    one("GET", "/hello", b"")?.want("GET /hello", b"Hello, World!")?;

    let t = Instant::now();
    let r = one("GET", "/delay?ms=200", b"")?;
    let took = t.elapsed();
    r.want("GET /delay?ms=200", b".")?;
    if took < Duration::from_millis(200) {
        return Err(format!("GET /delay?ms=200 answered after {took:?}"));
    }

    let r = one("GET", "/bytes?n=10000", b"")?;
    r.want_status("GET /bytes?n=10000", 200)?;
    if r.body.len() != 10000 {
        return Err(format!(
            "GET /bytes?n=10000: {} body bytes, want 10000",
            r.body.len()
        ));
    }
    let r = one("GET", "/bytes?n=0", b"")?;
    r.want("GET /bytes?n=0", b"")?;

    // A delay holds up no other request.
    let slow = thread::spawn(move || -> Result<Duration, String> {
        let t = Instant::now();
        one_request(port, "GET", "/delay?ms=1500", b"")?.want("GET /delay?ms=1500", b".")?;
        Ok(t.elapsed())
    });
    thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    one("GET", "/hello", b"")?.want("GET /hello during a delay", b"Hello, World!")?;
    let quick = t.elapsed();
    let slow = slow.join().map_err(|_| "delay thread panicked")??;
    if slow < Duration::from_millis(1500) {
        return Err(format!("GET /delay?ms=1500 answered after {slow:?}"));
    }
    if quick > Duration::from_millis(1000) {
        return Err(format!(
            "GET /hello took {quick:?} while a /delay was waiting: the delay blocks other requests"
        ));
    }

    // Keep-alive: one connection, bodies in between.
    let mut c = Conn::open(port).map_err(|e| format!("connect: {e}"))?;
    let big = vec![b'k'; 65536];
    let steps: [(&str, &str, &[u8], &[u8]); 8] = [
        ("GET", "/", b"", b"."),
        ("POST", "/", &[b'p'; 1024], b"length:1024"),
        ("GET", "/hello", b"", b"Hello, World!"),
        ("POST", "/", b"", b"length:0"),
        ("GET", "/", b"", b"."),
        ("POST", "/", &big, b"length:65536"),
        ("GET", "/delay?ms=10", b"", b"."),
        ("GET", "/hello", b"", b"Hello, World!"),
    ];
    for (i, (method, path, body, want)) in steps.iter().enumerate() {
        let what = format!("keep-alive request {} ({method} {path})", i + 1);
        let r = c
            .request(method, path, body)
            .map_err(|e| format!("{what}: {e}"))?;
        r.want(&what, want)?;
        if r.closes() {
            return Err(format!("{what}: the server closed the connection"));
        }
    }
    let r = c
        .request("GET", "/bytes?n=10000", b"")
        .map_err(|e| format!("keep-alive GET /bytes: {e}"))?;
    if r.status != 200 || r.body.len() != 10000 {
        return Err(format!(
            "keep-alive GET /bytes?n=10000: status {}, {} bytes",
            r.status,
            r.body.len()
        ));
    }
    c.request("GET", "/", b"")
        .map_err(|e| format!("keep-alive GET / after /bytes: {e}"))?
        .want("keep-alive GET / after /bytes", b".")?;
    Ok(())
}

/// One request on a connection of its own.
fn one_request(port: u16, method: &str, path: &str, body: &[u8]) -> Result<Response, String> {
    let mut c = Conn::open(port).map_err(|e| format!("connect: {e}"))?;
    c.request(method, path, body)
        .map_err(|e| format!("{method} {path}: {e}"))
}

/// A response as read off the wire.
struct Response {
    status: u16,
    /// Names lower-cased.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }

    fn want_status(&self, what: &str, status: u16) -> Result<(), String> {
        if self.status == status {
            Ok(())
        } else {
            Err(format!(
                "{what}: status {}, want {status}; body {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            ))
        }
    }

    fn want(&self, what: &str, body: &[u8]) -> Result<(), String> {
        self.want_status(what, 200)?;
        if self.body == body {
            Ok(())
        } else {
            Err(format!(
                "{what}: body {:?}, want {:?}",
                String::from_utf8_lossy(&self.body),
                String::from_utf8_lossy(body)
            ))
        }
    }
}

/// A minimal HTTP/1.1 client connection: Content-Length and chunked response bodies.
struct Conn {
    stream: TcpStream,
    port: u16,
    buf: Vec<u8>,
}

impl Conn {
    fn open(port: u16) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            port,
            buf: Vec::new(),
        })
    }

    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> Result<Response, String> {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n",
            self.port
        );
        if method == "POST" {
            req.push_str("Content-Type: application/octet-stream\r\n");
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        self.stream
            .write_all(&bytes)
            .map_err(|e| format!("write: {e}"))?;
        self.read_response(method == "HEAD")
    }

    fn read_response(&mut self, head_only: bool) -> Result<Response, String> {
        let end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            self.fill()?;
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        self.buf.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default();
        if version != "HTTP/1.1" {
            return Err(format!("status line {status_line:?}: want HTTP/1.1"));
        }
        let status: u16 = parts
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {status_line:?}"))?;
        let mut headers = Vec::new();
        for line in lines {
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| format!("bad header line {line:?}"))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
        let mut r = Response {
            status,
            headers,
            body: Vec::new(),
        };
        if (100..200).contains(&status) {
            return Err(format!("unexpected interim response {status}"));
        }
        if head_only || status == 204 || status == 304 {
            return Ok(r);
        }
        let chunked = r
            .header("transfer-encoding")
            .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
        if chunked {
            r.body = self.read_chunked()?;
        } else if let Some(len) = r.header("content-length") {
            let len: usize = len
                .parse()
                .map_err(|_| format!("bad Content-Length {len:?}"))?;
            r.body = self.take(len)?;
        } else {
            // Neither: the body runs to the end of the connection.
            loop {
                match self.fill() {
                    Ok(()) => {}
                    Err(e) if e == "connection closed" => break,
                    Err(e) => return Err(e),
                }
            }
            r.body = std::mem::take(&mut self.buf);
            r.headers.push(("connection".into(), "close".into()));
        }
        Ok(r)
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        loop {
            let line = self.line()?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| format!("bad chunk size line {line:?}"))?;
            if size == 0 {
                // Trailer fields, then the empty line.
                while !self.line()?.is_empty() {}
                return Ok(body);
            }
            body.extend(self.take(size)?);
            if !self.line()?.is_empty() {
                return Err("chunk data not followed by CRLF".into());
            }
        }
    }

    fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = find(&self.buf, b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            self.fill()?;
        }
    }

    fn take(&mut self, n: usize) -> Result<Vec<u8>, String> {
        while self.buf.len() < n {
            self.fill()?;
        }
        Ok(self.buf.drain(..n).collect())
    }

    fn fill(&mut self) -> Result<(), String> {
        let mut tmp = [0u8; 16 * 1024];
        match self.stream.read(&mut tmp) {
            Ok(0) => Err("connection closed".into()),
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                Ok(())
            }
            Err(e) => Err(format!("read: {e}")),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The last lines of a log file.
fn tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(30);
    if lines.is_empty() {
        "(empty)".into()
    } else {
        lines[from..].join("\n")
    }
}

/// A child we started as the leader of its own process group (its pid is the group id).
/// Dropping it kills whatever is left of the group, so a failing check leaves nothing behind.
struct Group {
    child: Child,
    pgid: libc::pid_t,
    done: bool,
}

impl Group {
    fn new(child: Child) -> Group {
        let pgid = child.id() as libc::pid_t;
        Group {
            child,
            pgid,
            done: false,
        }
    }

    /// Whether any process of the group exists (a leader not yet reaped counts).
    fn alive(&self) -> bool {
        // SAFETY: signal 0 only checks that some process of the group exists.
        unsafe { libc::kill(-self.pgid, 0) == 0 }
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: the group is ours; a group that is gone gives ESRCH, which is fine.
        unsafe {
            libc::kill(-self.pgid, sig);
        }
    }

    /// SIGTERM to the group, SIGKILL after `grace` (at once when zero), reaps the leader, and
    /// errors if any process of the group is left. Members other than the leader are reaped by
    /// init once orphaned, so the last check polls for a moment.
    fn stop(&mut self, grace: Duration) -> Result<(), String> {
        self.done = true;
        let t = Instant::now();
        if grace > Duration::ZERO {
            self.signal(libc::SIGTERM);
            while t.elapsed() < grace {
                if matches!(self.child.try_wait(), Ok(Some(_))) && !self.alive() {
                    return Ok(());
                }
                thread::sleep(Duration::from_millis(20));
            }
            eprintln!(
                "  (group {} still there {grace:?} after SIGTERM: SIGKILL)",
                self.pgid
            );
        }
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.alive() {
            if Instant::now() > deadline {
                return Err(format!(
                    "processes of group {} still exist after SIGKILL",
                    self.pgid
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.done {
            self.signal(libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}
