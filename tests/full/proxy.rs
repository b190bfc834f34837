//! Through a real proxy: tinyproxy (Debian's, `scripts/install-test-deps.sh`) on loopback in
//! front of nginx. Forwarded HTTP/1.1, and `CONNECT` tunnels carrying h2 over TLS and h2c:
//! every request volley completed is one nginx logged. tinyproxy's own refusals — a 407 for
//! missing credentials, a 403 for a port it does not allow — end the run before any request,
//! naming the status. The hostile proxies are in `tests/quick/proxy.rs`.

use crate::common;
use crate::common::nginx;
use crate::common::tls;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_invariant, volley, volley_json};

const LIMIT: Duration = Duration::from_secs(60);

/// A running tinyproxy; killed when dropped.
struct Tinyproxy {
    child: Child,
    port: u16,
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Tinyproxy {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// tinyproxy in the foreground on a free port, with `extra` configuration lines; `None` (a
/// counted skip) where it is not installed.
fn tinyproxy(dir: &Path, extra: &str) -> Option<Tinyproxy> {
    let bin = "/usr/bin/tinyproxy";
    if !Path::new(bin).exists() {
        common::skip("tinyproxy is not installed (scripts/install-test-deps.sh installs it)");
        return None;
    }
    let port = nginx::free_port();
    let conf = dir.join(format!("tinyproxy-{port}.conf"));
    let text = format!(
        "Port {port}\nListen 127.0.0.1\nTimeout 30\nAllow 127.0.0.1\nMaxClients 256\n\
         LogLevel Warning\nDisableViaHeader Yes\n{extra}\n"
    );
    std::fs::write(&conf, text).unwrap();
    let child = Command::new(bin)
        .arg("-d")
        .arg("-c")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tinyproxy starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "tinyproxy did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(Tinyproxy { child, port })
}

/// nginx answering `.` in HTTP/1.1, h2c, and h2 over TLS (a certificate for localhost).
struct Servers {
    nginx: nginx::Nginx,
    http: u16,
    h2c: u16,
    h2: u16,
    cert: String,
    dir: tempfile::TempDir,
}

fn servers() -> Servers {
    let dir = tempfile::tempdir().unwrap();
    let leaf = tls::self_signed(&["localhost"]);
    let cert = tls::write(dir.path(), "cert.pem", &leaf.pem);
    let key = tls::write(dir.path(), "key.pem", &leaf.key_pem);
    let (http, h2c, h2) = (nginx::free_port(), nginx::free_port(), nginx::free_port());
    let blocks = format!(
        "server {{ listen 127.0.0.1:{http}; location / {{ return 200 '.'; }} }}\n\
         server {{ listen 127.0.0.1:{h2c} http2; location / {{ return 200 '.'; }} }}\n\
         server {{ listen 127.0.0.1:{h2} ssl http2; ssl_certificate {cert};\n\
         ssl_certificate_key {key}; location / {{ return 200 '.'; }} }}"
    );
    let nginx = nginx::start(dir.path(), &blocks, &[http, h2c, h2]);
    Servers {
        nginx,
        http,
        h2c,
        h2,
        cert,
        dir,
    }
}

#[test]
fn every_request_through_tinyproxy_reaches_nginx_forwarded_or_tunnelled() {
    let s = servers();
    let Some(proxy) = tinyproxy(s.dir.path(), "") else {
        return;
    };
    let px = proxy.url();
    let http = format!("http://127.0.0.1:{}/", s.http);
    let h2c = format!("http://127.0.0.1:{}/", s.h2c);
    let h2 = format!("https://localhost:{}/", s.h2);
    let runs: [(&[&str], &str, &str); 3] = [
        (
            &["run", &http, "-x", &px, "-n", "300", "-c", "4"],
            "forward",
            "http/1.1",
        ),
        (
            &[
                "run",
                &h2c,
                "-x",
                &px,
                "--h2c",
                "--streams",
                "8",
                "-n",
                "600",
                "-c",
                "2",
            ],
            "tunnel",
            "h2c",
        ),
        (
            &[
                "run",
                &h2,
                "-x",
                &px,
                "--cacert",
                &s.cert,
                "--streams",
                "8",
                "-n",
                "600",
                "-c",
                "2",
            ],
            "tunnel",
            "h2",
        ),
    ];
    let mut logged = 0;
    for (args, mode, protocol) in runs {
        let (code, j, err) = volley_json(args, LIMIT);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_invariant(&j);
        let completed = j["requests"]["completed"].as_u64().unwrap();
        // tinyproxy ends each forwarded exchange without `Connection: close`: a request
        // written after it goes again on a new connection, and none is lost.
        assert_eq!(j["requests"]["errors"], 0, "{args:?}: {}", j["errors"]);
        logged += completed;
        assert_eq!(
            s.nginx.requests() as u64,
            logged,
            "{args:?}: nginx logged another count"
        );
        assert_eq!(j["target"]["proxy"]["mode"], mode, "{args:?}");
        assert_eq!(j["target"]["protocol"], protocol, "{args:?}");
        assert_eq!(j["target"]["addr"], format!("127.0.0.1:{}", proxy.port));
        if mode == "tunnel" {
            assert!(j["proxy_connect_us"]["p50"].as_u64().is_some(), "{args:?}");
        }
        if protocol == "h2" {
            assert!(j["tls_handshake_us"]["p50"].as_u64().is_some());
        }
    }
}

/// A run through `proxy` that must end before any request, exit 2, saying `says`.
fn refused_by(s: &Servers, proxy: &str, says: &str) {
    let h2 = format!("https://localhost:{}/", s.h2);
    let args = ["run", &h2, "-x", proxy, "--cacert", &s.cert, "-d", "2s"];
    let o = volley(&args, LIMIT);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(says), "{err}");
}

#[test]
fn tinyproxys_refusals_end_the_run_before_any_request_naming_the_status() {
    let s = servers();
    let dir = s.dir.path();
    let Some(auth) = tinyproxy(dir, "BasicAuth volley s3cret") else {
        return;
    };
    refused_by(&s, &auth.url(), "the proxy refused CONNECT: 407");
    // With its credentials in the URL the same run goes through.
    let h2 = format!("https://localhost:{}/", s.h2);
    let with = format!("http://volley:s3cret@127.0.0.1:{}", auth.port);
    let args = [
        "run", &h2, "-x", &with, "--cacert", &s.cert, "-n", "50", "-c", "1",
    ];
    let (code, j, err) = volley_json(&args, LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["requests"]["completed"], 50);
    assert!(!j.to_string().contains("s3cret"));
    // A proxy that allows CONNECT to port 443 only.
    let Some(strict) = tinyproxy(dir, "ConnectPort 443") else {
        return;
    };
    refused_by(&s, &strict.url(), "the proxy refused CONNECT: 403");
    assert_eq!(s.nginx.requests(), 50);
}
