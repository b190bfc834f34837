//! `volley run --grpc SERVICE/METHOD --proto FILE` (docs/contract.md, "gRPC") against the
//! in-process HTTP/2 server answering as a gRPC server does (`common::h2`): each call counted
//! by its `grpc-status`, non-OK ones failed with their message in the summary; a server that
//! never sends its trailers costs timeouts, bounded; the flags' mistakes named. `--reflect`:
//! the definition asked of the server (v1, else v1alpha) makes the same calls; a server
//! without reflection, without the service, or whose answer is huge or never ends, exits 2.

use crate::common::{self, h2};
use h2::Reflection;

use std::time::{Duration, Instant};

use serde_json::Value;

const PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
  rpc SayHelloStream (HelloRequest) returns (stream HelloReply);
  rpc Chat (stream HelloRequest) returns (stream HelloReply);
}
message HelloRequest { string name = 1; }
message HelloReply { string message = 1; }
"#;

/// The proto in a scratch folder: its path.
fn proto(name: &str) -> String {
    let dir = common::scratch("grpc", name);
    let p = dir.join("hello.proto");
    std::fs::write(&p, PROTO).unwrap();
    p.display().to_string()
}

/// `volley run URL --grpc … EXTRA --json -` within 20 s: exit code, RunResult, output.
fn run(server: &h2::H2Server, name: &str, extra: &[&str]) -> (i32, Value, String) {
    let url = server.url("/");
    let p = proto(name);
    let mut args = vec![
        "run",
        &url,
        "--grpc",
        "helloworld.Greeter/SayHello",
        "--proto",
        &p,
    ];
    args.extend_from_slice(extra);
    let t = Instant::now();
    let (code, j, text) = common::volley_json(&args, Duration::from_secs(60));
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "took {:?}\n{text}",
        t.elapsed()
    );
    common::assert_invariant(&j);
    super::schema::assert_valid(&j, &format!("volley run --grpc {extra:?}"));
    (code, j, text)
}

fn n(j: &Value, ptr: &str) -> u64 {
    j.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr} in {j}"))
}

#[test]
fn each_call_is_counted_by_its_grpc_status() {
    let server = h2::serve(h2::Behaviour::Grpc { fail_every: 0 });
    let extra = [
        "--body",
        r#"{"name": "volley"}"#,
        "-n",
        "300",
        "-c",
        "2",
        "--streams",
        "4",
    ];
    let (code, j, text) = run(&server, "ok", &extra);
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, "/requests/completed"), 300, "{text}");
    assert_eq!(n(&j, "/requests/failed"), 0, "{text}");
    assert_eq!(server.requests(), 300);
    assert_eq!(j["target"]["protocol"], "h2c");
    assert_eq!(j["target"]["method"], "POST");
    let g = &j["target"]["grpc"];
    assert_eq!(g["method"], "helloworld.Greeter/SayHello");
    assert_eq!(g["message_bytes"], 8, "name (field 1) `volley`: {g}");
    assert_eq!(n(g, "/status_codes/0"), 300, "{g}");
    assert!(g["first_error"].is_null());
    assert_eq!(n(&j, "/checks/grpc_status"), 0);
    assert_eq!(
        n(&j, "/target/body_bytes"),
        13,
        "the message behind its 5-byte prefix"
    );
}

#[test]
fn calls_that_end_with_an_error_status_fail_with_their_message() {
    let server = h2::serve(h2::Behaviour::Grpc { fail_every: 4 });
    let (code, j, text) = run(&server, "fail", &["-n", "400", "-c", "1", "--streams", "8"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, "/requests/completed"), 400, "{text}");
    let g = &j["target"]["grpc"];
    assert_eq!(
        (n(g, "/status_codes/0"), n(g, "/status_codes/3")),
        (300, 100),
        "{g}"
    );
    assert_eq!(n(&j, "/requests/failed"), 100);
    assert_eq!(n(&j, "/checks/grpc_status"), 100);
    assert_eq!(g["first_error"], "3 INVALID_ARGUMENT: name refused");
    let out = common::volley(
        &[
            "run",
            &server.url("/"),
            "--grpc",
            "helloworld.Greeter/SayHello",
            "--proto",
            &proto("fail-text"),
            "-n",
            "40",
            "-c",
            "1",
        ],
        Duration::from_secs(20),
    );
    let text = common::output_text(&out);
    assert!(
        text.contains("gRPC helloworld.Greeter/SayHello (message 0 bytes): 0 OK ×30, 3 INVALID_ARGUMENT ×10 (first: 3 INVALID_ARGUMENT: name refused)"),
        "{text}"
    );
}

#[test]
fn a_server_that_never_sends_trailers_costs_timeouts_not_a_hang() {
    let server = h2::serve(h2::Behaviour::GrpcNoTrailers);
    let (_, j, text) = run(
        &server,
        "no-trailers",
        &[
            "-c",
            "1",
            "--streams",
            "4",
            "-d",
            "1s",
            "--timeout",
            "300ms",
        ],
    );
    assert_eq!(n(&j, "/requests/completed"), 0, "{text}");
    assert!(n(&j, "/errors/timeout") >= 4, "{}", j["errors"]);
    assert!(j["target"]["grpc"]["status_codes"]
        .as_object()
        .unwrap()
        .is_empty());
}

#[test]
fn the_flags_mistakes_are_named() {
    let p = proto("flags");
    let url = "http://127.0.0.1:9/";
    let m = "helloworld.Greeter/SayHello";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--grpc", m], "--grpc: needs --proto FILE.proto"),
        (vec!["--grpc", m], "or --reflect"),
        (vec!["--reflect"], "--reflect: needs --grpc SERVICE/METHOD"),
        (
            vec!["--grpc", m, "--reflect", "--proto", &p],
            "--reflect: cannot be combined with --proto",
        ),
        (
            vec!["--grpc", m, "--reflect", "--import-path", "/tmp"],
            "--reflect: cannot be combined with --import-path",
        ),
        (
            vec!["--grpc", m, "--reflect", "--requests-file", "/no/such.toml"],
            "--reflect: cannot be combined with --requests-file",
        ),
        (vec!["--proto", &p], "--proto: needs --grpc"),
        (
            vec!["--grpc", "helloworld.Greeter/Nope", "--proto", &p],
            "service `helloworld.Greeter` has no method `Nope`",
        ),
        (
            vec!["--grpc", "helloworld.Greeter/Chat", "--proto", &p],
            "streams from the client",
        ),
        (
            vec!["--grpc", m, "--proto", "/no/such.proto"],
            "--proto: /no/such.proto: no such file",
        ),
        (
            vec!["--grpc", m, "--proto", &p, "--data", "{\"nam\": 1}"],
            "is not a helloworld.HelloRequest in JSON",
        ),
        (
            vec!["--grpc", m, "--proto", &p, "--http1.1"],
            "--grpc: cannot be combined with --http1.1",
        ),
        (
            vec!["--call", m, "--proto", &p, "--pipeline", "2"],
            "--pipeline: is HTTP/1.1 pipelining; with HTTP/2 use --streams",
        ),
    ];
    for (args, says) in cases {
        let mut a = vec!["run", url];
        a.extend(args.iter());
        let o = common::volley(&a, Duration::from_secs(10));
        let text = common::output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
    }
    let o = common::volley(
        &["run", "http://127.0.0.1:9/x", "--grpc", m, "--proto", &p],
        Duration::from_secs(10),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("the URL names the server only"), "{text}");
}

/// A requests file of calls beside the proto: its path.
fn calls_file(name: &str, text: &str) -> (String, String) {
    let p = proto(name);
    let file = std::path::Path::new(&p).with_file_name("calls.toml");
    std::fs::write(&file, text).unwrap();
    (p, file.display().to_string())
}

#[test]
fn a_requests_file_of_calls_has_results_per_method() {
    let server = h2::serve(h2::Behaviour::Grpc { fail_every: 0 });
    let (p, file) = calls_file(
        "file",
        r#"
[[request]]
grpc = "helloworld.Greeter/SayHello"
body = '{{"name": "user-{seq}"}}'
weight = 3

[[request]]
grpc = "helloworld.Greeter.SayHelloStream"
body = '{{"name": "{uuid}"}}'

[[request]]
name = "plain"
body = '{{"name": "x"}}'
"#,
    );
    let url = server.url("/");
    let args = [
        "run",
        &url,
        "--proto",
        &p,
        "--grpc",
        "helloworld.Greeter/SayHello",
        "--requests-file",
        &file,
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
    super::schema::assert_valid(&j, "a requests file of gRPC calls");
    assert_eq!(n(&j, "/requests/completed"), 500, "{text}");
    assert_eq!(server.requests(), 500);
    let g = &j["target"]["grpc"];
    assert_eq!(
        g["method"], "helloworld.Greeter/SayHello, helloworld.Greeter/SayHelloStream",
        "{g}"
    );
    assert_eq!(n(g, "/status_codes/0"), 500, "{g}");
    let by_name: Vec<(String, u64)> = j["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                n(e, "/requests/completed"),
            )
        })
        .collect();
    assert_eq!(
        by_name,
        [
            ("helloworld.Greeter/SayHello".to_string(), 300),
            ("helloworld.Greeter/SayHelloStream".to_string(), 100),
            ("plain".to_string(), 100),
        ],
        "{text}"
    );
    assert_eq!(
        j["endpoints"][1]["path"],
        "/helloworld.Greeter/SayHelloStream"
    );
    assert_eq!(j["endpoints"][0]["method"], "POST");
}

#[test]
fn a_requests_file_of_calls_names_its_mistakes_by_line() {
    let url = "http://127.0.0.1:9/";
    let cases: &[(&str, bool, &str)] = &[
        (
            "[[request]]\ngrpc = \"helloworld.Greeter/Nope\"\n",
            true,
            "calls.toml:2:8: [[request]] 1: grpc: service `helloworld.Greeter` has no method `Nope`",
        ),
        (
            "[[request]]\nbody = '{{\"name\": \"a\"}}'\n",
            true,
            "missing `grpc = \"pkg.Service/Method\"`",
        ),
        (
            "[[request]]\ngrpc = \"helloworld.Greeter/SayHello\"\npath = \"/x\"\n",
            true,
            "path: not in a gRPC run: a call's path is its method",
        ),
        (
            "[[request]]\ngrpc = \"helloworld.Greeter/SayHello\"\nbody = '{{\"nam\": \"{seq}\"}}'\n",
            true,
            "body: is not a helloworld.HelloRequest in JSON",
        ),
        (
            "[[request]]\npath = \"/\"\ngrpc = \"helloworld.Greeter/SayHello\"\n",
            false,
            "grpc: needs --proto FILE.proto",
        ),
    ];
    for (k, (text, with_proto, says)) in cases.iter().enumerate() {
        let (p, file) = calls_file(&format!("mistake-{k}"), text);
        let mut args = vec!["run", url, "--requests-file", &file];
        if *with_proto {
            args.extend(["--proto", &p]);
        }
        let o = common::volley(&args, Duration::from_secs(10));
        let out = common::output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {out}");
        assert!(out.contains(says), "{text}: {out}");
    }
}

#[test]
fn json_checks_read_the_decoded_reply() {
    let server = h2::serve(h2::Behaviour::Grpc { fail_every: 0 });
    let (code, j, text) = run(
        &server,
        "json-ok",
        &["-n", "60", "-c", "1", "--expect-json", "/message=hi"],
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, "/checks/json"), 0, "{}", j["checks"]);
    let (code, j, text) = run(
        &server,
        "json-wrong",
        &["-n", "60", "-c", "1", "--expect-json", "$.message=bye"],
    );
    assert_eq!(code, 1, "{text}");
    assert_eq!(n(&j, "/checks/json"), 60, "{}", j["checks"]);
    assert_eq!(n(&j, "/checks/grpc_status"), 0, "{}", j["checks"]);
    // Per call in a requests file: its own method's reply.
    let (p, file) = calls_file(
        "json-file",
        "[[request]]\ngrpc = \"helloworld.Greeter/SayHelloStream\"\nexpect_json = \"/message=hi\"\n\n[[request]]\nname = \"wrong\"\ngrpc = \"helloworld.Greeter/SayHello\"\nexpect_json = [\"/message=hi\", \"/other\"]\n",
    );
    let url = server.url("/");
    let args = [
        "run",
        &url,
        "--proto",
        &p,
        "--requests-file",
        &file,
        "-n",
        "100",
        "-c",
        "1",
        "--threshold",
        "checks<=60%",
    ];
    let (code, j, text) = common::volley_json(&args, Duration::from_secs(60));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, "/checks/json"), 50, "{}", j["checks"]);
    assert_eq!(n(&j, "/endpoints/1/checks/json"), 50, "{}", j["endpoints"]);
}

#[test]
fn verify_shows_the_decoded_reply_and_the_trailers() {
    let server = h2::serve(h2::Behaviour::Grpc { fail_every: 0 });
    let (code, _, text) = run(
        &server,
        "verify",
        &[
            "--verify",
            "-n",
            "5",
            "-c",
            "1",
            "-H",
            "authorization: Bearer s3cret",
        ],
    );
    assert_eq!(code, 0, "{text}");
    for says in [
        "verify POST /helloworld.Greeter/SayHello: POST /helloworld.Greeter/SayHello HTTP/2",
        r#"reply: {"message":"hi"}"#,
        "trailer grpc-status: 0",
        "checks passed",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
    assert!(
        !text.contains("s3cret"),
        "metadata is redacted as headers are: {text}"
    );
}

#[test]
fn a_huge_reply_is_counted_not_held_and_an_endless_one_times_out() {
    let rss = |j: &Value| n(j, "/client/rss_max_bytes");
    let server = h2::serve(h2::Behaviour::GrpcHuge);
    let extra = [
        "-n",
        "3",
        "-c",
        "1",
        "--timeout",
        "15s",
        "--expect-json",
        "/message",
        "--threshold",
        "checks<=100%",
    ];
    let (code, j, text) = run(&server, "huge", &extra);
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, "/target/grpc/status_codes/0"), 3, "{text}");
    assert!(
        n(&j, "/bytes/received") >= 3 * h2::HUGE_MESSAGE as u64,
        "{text}"
    );
    // The checks read the first 64 KiB: a 64 MiB message is not decoded, and fails.
    assert_eq!(n(&j, "/checks/json"), 3, "{}", j["checks"]);
    assert!(rss(&j) < 64 << 20, "volley grew to {} bytes", rss(&j));

    let server = h2::serve(h2::Behaviour::GrpcEndless);
    let extra = ["-n", "1", "-c", "1", "--timeout", "1s"];
    let (_, j, text) = run(&server, "endless", &extra);
    assert_eq!(n(&j, "/requests/completed"), 0, "{text}");
    assert_eq!(n(&j, "/errors/timeout"), 1, "{}", j["errors"]);
    assert!(rss(&j) < 64 << 20, "volley grew to {} bytes", rss(&j));
}

/// The files of `protos` (name, text) as a server with reflection has them, encoded, the
/// first one's first (its imports that protox knows, the well-known types, left out).
fn descriptors(protos: &[(&str, &str)]) -> h2::Files {
    use prost::Message as _;
    let dir = common::scratch("grpc", &format!("descriptors-{}", protos.len()));
    for (name, text) in protos {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let set = protox::compile([protos[0].0], [&dir]).unwrap();
    let mut files: Vec<(&'static str, &'static [u8])> = set
        .file
        .iter()
        .filter(|f| protos.iter().any(|(n, _)| *n == f.name()))
        .map(|f| {
            let name: &'static str = String::leak(f.name().to_string());
            let bytes: &'static [u8] = Vec::leak(f.encode_to_vec());
            (name, bytes)
        })
        .collect();
    files.sort_by_key(|(n, _)| *n != protos[0].0);
    Vec::leak(files)
}

/// PROTO's file, as a server with reflection has it.
fn descriptor() -> h2::Files {
    static FILES: std::sync::OnceLock<h2::Files> = std::sync::OnceLock::new();
    FILES.get_or_init(|| descriptors(&[("hello.proto", PROTO)]))
}

fn offered() -> Reflection {
    Reflection::Offered {
        service: "helloworld.Greeter",
        files: descriptor(),
    }
}

/// `volley run URL --grpc METHOD --reflect EXTRA` within 20 s: exit code and output.
fn reflect(server: &h2::H2Server, method: &str, extra: &[&str]) -> (i32, String) {
    let url = server.url("/");
    let mut args = vec!["run", &url, "--grpc", method, "--reflect", "-q"];
    args.extend_from_slice(extra);
    let t = Instant::now();
    let out = common::volley(&args, Duration::from_secs(30));
    let text = common::output_text(&out);
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "took {:?}\n{text}",
        t.elapsed()
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn reflect_asks_the_server_and_makes_the_same_calls_as_a_proto() {
    let body = r#"{"name": "volley"}"#;
    let extra = ["--body", body, "-n", "300", "-c", "2", "--streams", "4"];
    for r in [
        offered(),
        Reflection::AlphaOnly {
            service: "helloworld.Greeter",
            files: descriptor(),
        },
    ] {
        let server = h2::serve(h2::Behaviour::GrpcReflection(r));
        let url = server.url("/");
        let mut args = vec![
            "run",
            &url,
            "--grpc",
            "helloworld.Greeter/SayHello",
            "--reflect",
            "--expect-json",
            "/message=hi",
        ];
        args.extend_from_slice(&extra);
        let (code, j, text) = common::volley_json(&args, Duration::from_secs(60));
        assert_eq!(code, 0, "{r:?}: {text}");
        assert_eq!(
            n(&j, "/checks/json"),
            0,
            "the reply decoded by the server's descriptors"
        );
        common::assert_invariant(&j);
        assert_eq!(n(&j, "/requests/completed"), 300, "{text}");
        assert_eq!(server.requests(), 300, "the calls, not the reflection");
        let g = &j["target"]["grpc"];
        assert_eq!(g["method"], "helloworld.Greeter/SayHello");
        assert_eq!(g["message_bytes"], 8, "{g}");
        assert_eq!(n(g, "/status_codes/0"), 300, "{g}");
        assert_eq!(n(&j, "/target/body_bytes"), 13);
        // The same run from the .proto: the same calls.
        let (code, p, text) = run(&server, "same", &extra);
        assert_eq!(code, 0, "{text}");
        assert_eq!(p["target"]["grpc"], j["target"]["grpc"]);
        assert_eq!(p["target"]["body_bytes"], j["target"]["body_bytes"]);
        assert_eq!(server.requests(), 600);
    }
}

#[test]
fn reflect_asks_for_the_imports_the_server_did_not_send_along() {
    let types = "syntax = \"proto3\";\npackage helloworld;\n\
                 message HelloRequest { string name = 1; }\n\
                 message HelloReply { string message = 1; }\n";
    let hello = "syntax = \"proto3\";\npackage helloworld;\n\
                 import \"types.proto\";\nimport \"google/protobuf/empty.proto\";\n\
                 service Greeter {\n\
                   rpc SayHello (HelloRequest) returns (HelloReply);\n\
                   rpc Ping (google.protobuf.Empty) returns (HelloReply);\n\
                 }\n";
    let files = descriptors(&[("hello.proto", hello), ("types.proto", types)]);
    assert_eq!(files.len(), 2, "the well-known type is not the server's");
    let server = h2::serve(h2::Behaviour::GrpcReflection(Reflection::Offered {
        service: "helloworld.Greeter",
        files,
    }));
    for (method, body, bytes) in [
        ("helloworld.Greeter/SayHello", r#"{"name": "volley"}"#, 8),
        ("helloworld.Greeter/Ping", "{}", 0),
    ] {
        let url = server.url("/");
        let args = [
            "run",
            &url,
            "--grpc",
            method,
            "--reflect",
            "--body",
            body,
            "-n",
            "20",
        ];
        let (code, j, text) = common::volley_json(&args, Duration::from_secs(60));
        assert_eq!(code, 0, "{method}: {text}");
        assert_eq!(j["target"]["grpc"]["message_bytes"], bytes, "{method}");
        assert_eq!(n(&j, "/target/grpc/status_codes/0"), 20, "{method}");
    }
    assert_eq!(server.requests(), 40);
    // A server without one of them.
    let lacking = h2::serve(h2::Behaviour::GrpcReflection(Reflection::Offered {
        service: "helloworld.Greeter",
        files: &files[..1],
    }));
    let (code, text) = reflect(&lacking, "helloworld.Greeter/SayHello", &["-n", "10"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(
            "--reflect: the server has no file `types.proto` (an import) (5 NOT_FOUND: not found)"
        ),
        "{text}"
    );
    assert_eq!(lacking.requests(), 0);
}

#[test]
fn reflect_without_reflection_or_without_the_service_exits_2_naming_it() {
    let m = "helloworld.Greeter/SayHello";
    let none = h2::serve(h2::Behaviour::GrpcReflection(Reflection::Unimplemented));
    let (code, text) = reflect(&none, m, &["-n", "10"]);
    assert_eq!(code, 2, "{text}");
    let url = none.url("/");
    assert!(
        text.contains(&format!("--reflect: {url} does not offer gRPC server reflection: grpc-status 12 UNIMPLEMENTED for grpc.reflection.v1 and v1alpha (give the service's definition with --proto FILE.proto)")),
        "{text}"
    );
    assert_eq!(none.requests(), 0, "no call was made");
    let server = h2::serve(h2::Behaviour::GrpcReflection(offered()));
    let (code, text) = reflect(&server, "helloworld.Nope/SayHello", &["-n", "10"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(
            "--reflect: the server has no service `helloworld.Nope` (5 NOT_FOUND: not found)"
        ),
        "{text}"
    );
    let (code, text) = reflect(&server, "helloworld.Greeter/Nope", &["-n", "10"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("--grpc: service `helloworld.Greeter` has no method `Nope` (it has SayHello, SayHelloStream, Chat)"),
        "{text}"
    );
    assert_eq!(server.requests(), 0);
    // An HTTP/2 server that is not gRPC's: a 200 without gRPC's content-type.
    let plain = h2::serve(h2::Behaviour::Normal {
        max_streams: None,
        hold: Duration::ZERO,
    });
    let (code, text) = reflect(&plain, m, &["-n", "10"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(
            "does not offer gRPC server reflection: its answer has no content-type, not gRPC's"
        ),
        "{text}"
    );
}

#[test]
fn a_huge_or_endless_reflection_answer_is_bounded() {
    let m = "helloworld.Greeter/SayHello";
    let huge = h2::serve(h2::Behaviour::GrpcReflection(Reflection::Huge));
    let (code, text) = reflect(&huge, m, &["-n", "10"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(
            "--reflect: the server's answers passed 4194304 bytes, the most volley keeps of them"
        ),
        "{text}"
    );
    let endless = h2::serve(h2::Behaviour::GrpcReflection(Reflection::Endless));
    let t = Instant::now();
    let (code, text) = reflect(&endless, m, &["-n", "10", "--timeout", "500ms"]);
    assert_eq!(code, 2, "{text}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(
        text.contains("--reflect: asking")
            && text.contains("(--timeout 500ms for all of it): no complete answer in time"),
        "{text}"
    );
}
