//! Caddy (Debian's), a real HTTP/3 server: it serves `.` over HTTP/1.1, HTTP/2 and HTTP/3 on
//! one port of `https://localhost:PORT`, with a certificate of its own, and logs each request
//! as a JSON line. A missing `caddy` is a counted skip ([`super::skip`]; a failure under CI).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Caddy, killed when dropped.
pub struct Caddy {
    /// The process.
    pub child: Child,
    /// Its port (TCP and UDP).
    pub port: u16,
    /// Its folder: `cert.pem`, `key.pem`, `access.log`.
    pub dir: PathBuf,
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Caddy {
    /// Caddy in a scratch folder named `name`, answering `.` to every request; `None` (a
    /// counted skip) without `caddy`.
    pub fn start(name: &str) -> Option<Caddy> {
        Caddy::start_with(name, "respond \".\" 200")
    }

    /// [`Caddy::start`] with `handler` (a Caddyfile directive such as `reverse_proxy
    /// 127.0.0.1:8080`) for every request.
    pub fn start_with(name: &str, handler: &str) -> Option<Caddy> {
        if !super::on_path("caddy") {
            super::skip("caddy is not installed (scripts/install-test-deps.sh installs it)");
            return None;
        }
        let dir = super::scratch("h3", name);
        let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(dir.join("cert.pem"), key.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), key.signing_key.serialize_pem()).unwrap();
        let port = super::nginx::free_port();
        let d = dir.display();
        let conf = format!(
            "{{\n\tadmin off\n\tauto_https off\n\tstorage file_system {d}/storage\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n\
             https://localhost:{port} {{\n\tbind 127.0.0.1\n\ttls {d}/cert.pem {d}/key.pem\n\tlog {{\n\t\toutput file {d}/access.log\n\t}}\n\t{handler}\n}}\n"
        );
        std::fs::write(dir.join("Caddyfile"), conf).unwrap();
        let child = Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(dir.join("Caddyfile"))
            .env("HOME", &dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("caddy.err")).unwrap())
            .spawn()
            .unwrap();
        // Ready when its TCP side accepts (its UDP socket opens with it).
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "caddy did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Caddy { child, port, dir })
    }

    /// `https://localhost:PORT/`.
    pub fn url(&self) -> String {
        format!("https://localhost:{}/", self.port)
    }

    /// Its certificate (PEM), for `--cacert`.
    pub fn cacert(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    /// Requests Caddy logged over HTTP/3 so far.
    pub fn h3_logged(&self) -> usize {
        let log = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
        log.lines()
            .filter(|l| l.contains("\"proto\":\"HTTP/3.0\""))
            .count()
    }
}
