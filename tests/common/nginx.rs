//! nginx as a real HTTP/2 peer for tests: one process (`master_process off`, so stopping it
//! leaves no worker behind) on a free port, with the `server` blocks a test gives and an
//! access log whose lines count the requests nginx answered.

#![allow(dead_code)] // each test binary uses a part of it

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running nginx; killed when dropped.
pub struct Nginx {
    child: Child,
    /// Its access log (one line per answered request).
    pub access_log: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    /// Its process id (one process: `master_process off`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Requests nginx logged so far.
    pub fn requests(&self) -> usize {
        std::fs::read_to_string(&self.access_log)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

/// The nginx binary.
pub fn binary() -> String {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .find(|p| Path::new(p).exists())
        .map(|p| p.to_string())
        .expect("nginx is needed (servers/install.sh installs it)")
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts nginx in `dir` with `servers` (whole `server { … }` blocks) and waits until every
/// port in `ports` accepts connections.
pub fn start(dir: &Path, servers: &str, ports: &[u16]) -> Nginx {
    let d = dir.display();
    let access_log = dir.join("access.log");
    let conf = format!(
        "master_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 4096; }}\n\
         http {{ access_log {log}; client_body_temp_path {d}; proxy_temp_path {d};\n\
         fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
         keepalive_requests 1000000;\n{servers}\n}}\n",
        log = access_log.display()
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(binary())
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .args(["-g", "daemon off;"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let n = Nginx { child, access_log };
    let deadline = Instant::now() + Duration::from_secs(10);
    for port in ports {
        while TcpStream::connect(("127.0.0.1", *port)).is_err() {
            assert!(Instant::now() < deadline, "nginx did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    n
}
