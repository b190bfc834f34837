//! `volley bench` with `protocol = "https"`: a managed server gets a fresh certificate through
//! `TLS_CERT` and `TLS_KEY` in its private folder, readiness is checked over TLS, and the cell
//! verifies the server against that certificate (`--cacert`). The server is Python's
//! `http.server` wrapped in `ssl` when `TLS_CERT` is set, plain HTTP otherwise.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;

/// Serves `GET` with 200 `.` on 127.0.0.1:$PORT, over TLS when `TLS_CERT` is set; first says on
/// stderr what it was given.
const SERVER_PY: &str = r#"
import http.server, os, ssl, sys

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body are written apart: without this, Nagle and delayed ACKs add 40 ms.
    disable_nagle_algorithm = True

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "1")
        self.end_headers()
        self.wfile.write(b".")

    def log_message(self, *args):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H)
cert, key = os.environ.get("TLS_CERT"), os.environ.get("TLS_KEY")
print("given", cert or "-", key or "-", os.environ.get("TMPDIR", "-"), os.environ.get("H2C", "-"),
      file=sys.stderr, flush=True)
if cert:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
srv.serve_forever()
"#;

use common::output_text as text;

use common::checked_suite_index as index;

/// What the server of `row` said it was given: (TLS_CERT, TLS_KEY, TMPDIR).
fn given(out: &Path, row: &Value) -> (String, String, String) {
    let log = out.join(row["log"].as_str().expect("the row has a log"));
    let log = std::fs::read_to_string(&log).unwrap();
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix("given "))
        .unwrap_or_else(|| panic!("no `given` line in {log}"));
    let parts: Vec<&str> = line.split(' ').collect();
    (parts[0].into(), parts[1].into(), parts[2].into())
}

/// The folder `dir` holds the python server, and the suite runs from there.
fn with_server() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("server.py"), SERVER_PY).unwrap();
    dir
}

/// The cell got past readiness: it is ok, or (while the engine does not speak TLS) failed
/// for what the measurement saw, not for want of a ready server.
fn got_past_readiness(row: &Value) -> bool {
    let reason = row["reason"].as_str().unwrap_or("");
    row["status"] == "ok"
        || !(reason.contains("ready") || reason.contains("TLS_CERT") || reason.contains("TLS:"))
}

#[test]
fn an_https_cell_gives_its_server_a_certificate_in_a_private_folder() {
    let dir = with_server();
    let suite_tmp = dir.path().join("suite-tmp");
    std::fs::create_dir(&suite_tmp).unwrap();
    let suite = format!(
        "[suite]\nname = \"tls\"\nduration = \"300ms\"\n\
         [[server]]\nname = \"own\"\nstart = \"exec python3 server.py\"\nready_timeout = \"20s\"\n\
         [[server]]\nname = \"suite-tmp\"\nstart = \"exec python3 server.py\"\nready_timeout = \"20s\"\n\
         env = {{ TMPDIR = \"{}\" }}\n\
         [[scenario]]\nname = \"get\"\nprotocol = \"https\"\nconnections = 2\n",
        suite_tmp.display()
    );
    let (o, out) = common::bench_suite(dir.path(), &suite, &[]);
    let idx = index(&out);
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{}", text(&o));
    assert_eq!(idx["suite"]["scenario"][0]["protocol"], "https");
    for row in rows {
        assert!(got_past_readiness(row), "{row}\n{}", text(&o));
        let (cert, key, tmpdir) = given(&out, row);
        let (cert, key) = (PathBuf::from(cert), PathBuf::from(key));
        assert!(cert.is_absolute() && key.is_absolute(), "{row}");
        assert_eq!(cert.file_name().unwrap(), "cert.pem");
        assert_eq!(key.file_name().unwrap(), "key.pem");
        assert_eq!(cert.parent(), key.parent());
        // Removed with the server's private folder after the stop.
        assert!(!cert.exists() && !cert.parent().unwrap().exists(), "{row}");
        if row["server"] == "own" {
            assert_eq!(cert.parent().unwrap(), Path::new(&tmpdir), "in its TMPDIR");
        } else {
            assert_eq!(Path::new(&tmpdir), suite_tmp, "the suite's TMPDIR is kept");
            assert_ne!(
                cert.parent().unwrap(),
                suite_tmp,
                "not in the suite's TMPDIR"
            );
        }
    }
    assert!(suite_tmp.is_dir(), "the suite's own TMPDIR is not removed");
}

#[test]
fn a_server_answering_plain_http_on_an_https_cell_fails_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let suite = "[suite]\nname = \"tls\"\nduration = \"300ms\"\n\
         [[server]]\nname = \"plain\"\nstart = \"exec python3 -m http.server {port} --bind 127.0.0.1\"\n\
         [[scenario]]\nname = \"get\"\nprotocol = \"https\"\n";
    let (o, out) = common::bench_suite(dir.path(), suite, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let idx = index(&out);
    let row = &idx["rows"][0];
    assert_eq!(row["status"], "failed");
    let reason = row["reason"].as_str().unwrap();
    assert!(
        reason.contains("the server answered plain HTTP: does it read TLS_CERT/TLS_KEY?"),
        "{reason}"
    );
}

#[test]
fn an_unknown_protocol_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let suite = "[suite]\nname = \"tls\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n\
                 [[scenario]]\nname = \"get\"\nprotocol = [\"https\", \"spdy\"]\n";
    let (o, _) = common::bench_suite(dir.path(), suite, &["--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("suite.toml:8:22: [[scenario]] \"get\": protocol: unknown protocol `spdy`"),
        "{err}"
    );
}

/// The python server speaks HTTP/1.1 only: its h2 cell gets a certificate and `--http2` and
/// fails at readiness because ALPN chose no h2; its h2c cell gets `H2C=1` and `--h2c` and fails
/// because it answers the HTTP/2 preface in HTTP/1. A server whose `protocols` leave them out
/// gets no such cells, and a note.
#[test]
fn http2_cells_start_their_server_for_their_protocol_and_name_one_that_does_not_speak_it() {
    let dir = with_server();
    let suite = "[suite]\nname = \"h2\"\nduration = \"300ms\"\n\
         [[server]]\nname = \"py\"\nstart = \"exec python3 server.py\"\nready_timeout = \"20s\"\n\
         [[server]]\nname = \"old\"\nstart = \"exec python3 server.py\"\nprotocols = [\"http/1.1\"]\n\
         [[scenario]]\nname = \"get\"\nprotocol = [\"h2\", \"h2c\"]\n";
    let (o, out) = common::bench_suite(dir.path(), suite, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("old: its h2, h2c cells are not run (protocols = [\"http/1.1\"])"),
        "{stderr}"
    );
    let idx = index(&out);
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{}", text(&o));
    let (h2, h2c) = (&rows[0], &rows[1]);
    assert_eq!(
        (&h2["server"], &h2c["server"]),
        (&"py".into(), &"py".into())
    );
    let flags = |r: &Value| r["flags"].to_string();
    assert!(flags(h2).contains("--http2") && flags(h2c).contains("--h2c"));
    let reason = |r: &Value| r["reason"].as_str().unwrap_or("").to_string();
    assert!(
        reason(h2).contains("did not choose h2 by ALPN (it answered no ALPN protocol)"),
        "{h2}"
    );
    assert!(reason(h2c).contains("does it read H2C=1?"), "{h2c}");
    let log = |r: &Value| std::fs::read_to_string(out.join(r["log"].as_str().unwrap())).unwrap();
    let given_line = |r: &Value| {
        let log = log(r);
        let line = log
            .lines()
            .find(|l| l.starts_with("given "))
            .map(str::to_string);
        line.unwrap_or_else(|| panic!("no `given` line in {log}"))
    };
    let (h2_given, h2c_given) = (given_line(h2), given_line(h2c));
    assert!(
        h2_given.contains("cert.pem") && h2_given.ends_with(" -"),
        "{h2_given}"
    );
    assert!(
        h2c_given.starts_with("given - - ") && h2c_given.ends_with(" 1"),
        "{h2c_given}"
    );
}

#[test]
fn https_cells_pass_against_a_tls_server_verified_with_its_certificate() {
    let dir = with_server();
    let suite = "[suite]\nname = \"tls\"\nduration = \"500ms\"\n\
                 [[server]]\nname = \"py\"\nstart = \"exec python3 server.py\"\nready_timeout = \"20s\"\n\
                 [[scenario]]\nname = \"get\"\nprotocol = [\"http/1.1\", \"https\"]\nconnections = 2\n\
                 [[scenario]]\nname = \"trusting\"\nprotocol = \"https\"\ninsecure = true\n";
    let (o, out) = common::bench_suite(dir.path(), suite, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let idx = index(&out);
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["axes"]["protocol"], "http/1.1");
    assert_eq!(rows[1]["axes"]["protocol"], "https");
    for row in rows {
        assert_eq!(row["status"], "ok", "{row}\n{}", text(&o));
        assert!(row["headline"]["completed"].as_u64().unwrap() > 0, "{row}");
    }
    let run = |row: &Value| -> Value {
        let p = out.join(row["path"].as_str().unwrap());
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (plain, tls, trusting) = (run(&rows[0]), run(&rows[1]), run(&rows[2]));
    assert!(plain["target"]["url"]
        .as_str()
        .unwrap()
        .starts_with("http://"));
    assert!(tls["target"]["url"]
        .as_str()
        .unwrap()
        .starts_with("https://"));
    let argv = |r: &Value| -> Vec<String> {
        r["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    // Verified against the certificate the server was given, unless the scenario said not to.
    assert!(
        argv(&tls).iter().any(|a| a.starts_with("--cacert=")),
        "{tls}"
    );
    assert!(!argv(&plain).iter().any(|a| a.starts_with("--cacert")));
    assert!(!argv(&trusting).iter().any(|a| a.starts_with("--cacert")));
    assert!(argv(&trusting).contains(&"--insecure".to_string()));
    assert_ne!(plain["load_id"], tls["load_id"], "another load");
    // The final table tells the cells apart.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("protocol=https"), "{stdout}");
    assert!(stdout.contains("protocol=http/1.1"), "{stdout}");
}

#[test]
fn a_url_server_of_another_scheme_than_the_cell_fails_the_cell_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let suite = "[suite]\nname = \"tls\"\nduration = \"300ms\"\n\
                 [[server]]\nname = \"there\"\nurl = \"http://127.0.0.1:9/\"\n\
                 [[scenario]]\nname = \"get\"\nprotocol = \"https\"\n";
    let (o, out) = common::bench_suite(dir.path(), suite, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let idx = index(&out);
    let reason = idx["rows"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("the server's url is http:// but the cell's protocol is https"),
        "{reason}"
    );
}
