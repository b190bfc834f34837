//! `--grpc SERVICE/METHOD --proto FILE` (docs/contract.md, "gRPC"): the method found in the
//! `.proto` (compiled in-process by protox, no protoc), the message encoded once from `--body`
//! JSON by its descriptor (prost-reflect), and the HTTP/2 request a unary call is: `POST
//! /pkg.Service/Method`, `content-type: application/grpc`, `te: trailers`, `grpc-timeout` from
//! `--timeout`, the message behind gRPC's 5-byte prefix. With `--reflect` the descriptors are
//! the server's: the call waits for them ([`Reflect`], [`RunConfig::reflected`]), which the
//! layer that talks to the server asks for (volley-measure's `reflect`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};

use super::request::Request;
use super::{ConfigError, Flag, RunConfig, RunFlags};
use volley_plan::{GrpcSpec, HttpVersion, Scheme, Target};

/// What `--grpc` makes of the run's request.
pub(super) struct GrpcCall {
    /// The method, its path and its settings.
    pub spec: GrpcSpec,
    /// The request's fields (before the user's `-H`).
    pub headers: Vec<(String, String)>,
    /// The framed message.
    pub body: Vec<u8>,
}

/// A `--reflect` run's gRPC call before the server sent its descriptors: the method's path and
/// the request's fields are set, its message is not (the run's body is an empty message until
/// [`RunConfig::reflected`]).
#[derive(Debug, Clone)]
pub struct Reflect {
    /// The service's full name (`helloworld.Greeter`): the symbol the server is asked for.
    pub service: String,
    /// `--grpc` as given.
    name: String,
    /// The message's JSON and the flag it came from.
    json: (Flag, String),
}

/// Where a method's definition came from, as messages name it.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// `--proto` (and its imports).
    Proto,
    /// The server, by `--reflect`.
    Reflect,
}

impl Source {
    fn files(self) -> &'static str {
        match self {
            Source::Proto => "the --proto files",
            Source::Reflect => "the server's descriptors (--reflect)",
        }
    }
}

/// The gRPC call the flags ask for, or `None` without `--grpc` (where `--proto`,
/// `--import-path` and `--reflect` are errors). With `--reflect`, the call waits for the
/// server's descriptors: its message is empty (see [`pending`]).
pub(super) fn call(a: &RunFlags, scheme: Scheme) -> Result<Option<GrpcCall>, ConfigError> {
    let Some(name) = a.grpc.as_deref() else {
        return without_grpc(a).map(|()| None);
    };
    conflicts(a, scheme)?;
    let Some(proto) = definition(a)? else {
        let (service, method) = split_name(name)?;
        return Ok(Some(GrpcCall::new(service, method, Vec::new(), a.timeout)));
    };
    let pool = compile(proto, &a.import_path)?;
    let method = find_method(&pool, name, Source::Proto)?;
    let json = message_json(a)?;
    let message = encode(&method, &json)?;
    Ok(Some(GrpcCall::new(
        method.parent_service().full_name(),
        method.name(),
        message,
        a.timeout,
    )))
}

/// `--reflect`'s call, waiting for the server's descriptors; `None` without it.
pub(super) fn pending(a: &RunFlags) -> Result<Option<Reflect>, ConfigError> {
    let Some(name) = a.grpc.as_deref().filter(|_| a.reflect) else {
        return Ok(None);
    };
    let (service, _) = split_name(name)?;
    Ok(Some(Reflect {
        service: service.to_string(),
        name: name.to_string(),
        json: message_json(a)?,
    }))
}

impl RunConfig {
    /// Makes a `--reflect` run's call from the server's `files` (each an encoded
    /// `FileDescriptorProto`, the service's and those it imports; the well-known types
    /// `google/protobuf/*.proto` are volley's own where they are missing): the method looked
    /// up and its message encoded from the JSON, as `--proto` does. Nothing to do without
    /// `--reflect`, or once done.
    pub fn reflected(&mut self, files: &[Vec<u8>]) -> Result<(), ConfigError> {
        let Some(r) = &self.reflect else {
            return Ok(());
        };
        let pool = reflected_pool(files)?;
        let method = find_method(&pool, &r.name, Source::Reflect)?;
        let message = encode(&method, &r.json)?;
        if let Some(g) = self.load.grpc.as_mut() {
            g.message_bytes = message.len() as u64;
        }
        self.load.body = frame(&message).into();
        self.reflect = None;
        Ok(())
    }
}

/// `--proto`, `--import-path` or `--reflect` without `--grpc`.
fn without_grpc(a: &RunFlags) -> Result<(), ConfigError> {
    if a.proto.is_some() {
        return Err(ConfigError::flag(
            Flag::Proto,
            "needs --grpc SERVICE/METHOD",
        ));
    }
    if !a.import_path.is_empty() {
        return Err(ConfigError::flag(
            Flag::ImportPath,
            "needs --grpc and --proto",
        ));
    }
    if a.reflect {
        return Err(ConfigError::flag(
            Flag::Reflect,
            "needs --grpc SERVICE/METHOD",
        ));
    }
    Ok(())
}

/// Where the method is defined: `Some(file)` for `--proto`, `None` for `--reflect` (the
/// server); one of them, not both.
fn definition(a: &RunFlags) -> Result<Option<&Path>, ConfigError> {
    let both = |other: Flag, why: &str| {
        ConfigError::conflict(
            Flag::Reflect,
            &[other],
            format!("cannot be combined with {}: {why}", other.spelling()),
        )
    };
    match (a.reflect, a.proto.as_deref()) {
        (true, Some(_)) => Err(both(
            Flag::Proto,
            "the definition comes from the server or from the file, not both",
        )),
        (true, None) if !a.import_path.is_empty() => Err(both(
            Flag::ImportPath,
            "the server sends the files the service imports",
        )),
        (true, None) => Ok(None),
        (false, Some(p)) => Ok(Some(p)),
        (false, None) => Err(ConfigError::flag(
            Flag::Grpc,
            "needs --proto FILE.proto (the service's definition) or --reflect (ask the server for \
             it, by gRPC server reflection)",
        )),
    }
}

impl GrpcCall {
    /// The call of `service`'s `method` with `message`: `POST /service/method`, gRPC's fields.
    fn new(service: &str, method: &str, message: Vec<u8>, timeout: Duration) -> Self {
        let path = format!("/{service}/{method}");
        let headers = vec![
            ("content-type".to_string(), "application/grpc".to_string()),
            ("te".to_string(), "trailers".to_string()),
            ("grpc-timeout".to_string(), timeout_value(timeout)),
        ];
        GrpcCall {
            spec: GrpcSpec {
                method: path.trim_start_matches('/').to_string(),
                path,
                message_bytes: message.len() as u64,
            },
            headers,
            body: frame(&message),
        }
    }
}

impl GrpcCall {
    /// Makes the run's request the call: `POST` to the method's path (the URL must name the
    /// server only), gRPC's fields before the user's, the framed message.
    pub(super) fn apply(&self, target: &mut Target, req: &mut Request) -> Result<(), ConfigError> {
        if target.path != "/" {
            return Err(ConfigError::conflict(
                Flag::Grpc,
                &[Flag::Url],
                format!(
                    "the URL names the server only (its path is {}): the method is the path",
                    self.spec.path
                ),
            ));
        }
        req.method = "POST".to_string();
        target.path = self.spec.path.clone();
        req.body = self.body.clone().into();
        req.headers.splice(0..0, self.headers.iter().cloned());
        Ok(())
    }
}

/// The HTTP of a gRPC run: HTTP/2, over TLS for `https://` (`--http2`), in cleartext with
/// prior knowledge for `http://` (`--h2c`) — whether or not those flags are given.
pub(super) fn http_version(scheme: Scheme) -> HttpVersion {
    if scheme.is_tls() {
        HttpVersion::H2
    } else {
        HttpVersion::H2c
    }
}

/// The flags a gRPC run cannot have.
fn conflicts(a: &RunFlags, scheme: Scheme) -> Result<(), ConfigError> {
    let refused = [
        (
            scheme.is_websocket(),
            Flag::Url,
            "a ws:// URL: gRPC goes over http:// (h2c) or https:// (h2)",
        ),
        (a.http1_1, Flag::Http1, "gRPC needs HTTP/2"),
        (a.http3, Flag::Http3, "gRPC over HTTP/3 is not supported"),
        (
            a.method.is_some(),
            Flag::Method,
            "a gRPC call is a POST (volley's -m is the method; metadata, ghz's -m, is -H 'name: value')",
        ),
        (
            a.requests_file.is_some(),
            Flag::RequestsFile,
            "a gRPC run makes one call, --body",
        ),
        (
            a.pipeline > 1,
            Flag::Pipeline,
            "gRPC calls go as HTTP/2 streams: --streams",
        ),
        (
            a.body_size.is_some(),
            Flag::BodySize,
            "the message is JSON: --body or --body-file",
        ),
    ];
    if let Some((_, flag, why)) = refused.iter().find(|(on, _, _)| *on) {
        return Err(ConfigError::conflict(
            Flag::Grpc,
            &[*flag],
            format!("cannot be combined with {}: {why}", flag.spelling()),
        ));
    }
    Ok(())
}

/// Compiles `proto` with its imports from `import_paths` and the file's own folder.
fn compile(proto: &Path, import_paths: &[PathBuf]) -> Result<DescriptorPool, ConfigError> {
    let bad = |m: String| ConfigError::flag(Flag::Proto, m);
    if !proto.is_file() {
        return Err(bad(format!("{}: no such file", proto.display())));
    }
    let mut includes: Vec<PathBuf> = import_paths.to_vec();
    includes.push(
        proto
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    );
    let mut compiler = protox::Compiler::new(&includes).map_err(|e| bad(e.to_string()))?;
    compiler.include_imports(true);
    compiler
        .open_file(proto)
        .map_err(|e| bad(format!("{}: {e}", proto.display())))?;
    Ok(compiler.descriptor_pool())
}

/// `pkg.Service/Method` (or ghz's `pkg.Service.Method`): the service's full name and the
/// method's.
fn split_name(name: &str) -> Result<(&str, &str), ConfigError> {
    name.trim_start_matches('/')
        .rsplit_once(['/', '.'])
        .filter(|(s, m)| !s.is_empty() && !m.is_empty())
        .ok_or_else(|| {
            ConfigError::flag(
                Flag::Grpc,
                format!("`{name}` is not SERVICE/METHOD (e.g. helloworld.Greeter/SayHello)"),
            )
        })
}

/// `pkg.Service/Method` (or ghz's `pkg.Service.Method`) in the files of `pool`.
fn find_method(
    pool: &DescriptorPool,
    name: &str,
    from: Source,
) -> Result<MethodDescriptor, ConfigError> {
    let bad = |m: String| ConfigError::flag(Flag::Grpc, m);
    let (service, method) = split_name(name)?;
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(bad(format!(
            "no service `{service}` in {} (they define {})",
            from.files(),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let Some(m) = svc.methods().find(|m| m.name() == method) else {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        return Err(bad(format!(
            "service `{service}` has no method `{method}` (it has {})",
            known.join(", ")
        )));
    };
    if m.is_client_streaming() {
        return Err(bad(format!(
            "`{service}/{method}` streams from the client: volley sends one message per call \
             (unary and server-streaming methods)"
        )));
    }
    Ok(m)
}

/// The pool of the files a server sent (`--reflect`), over the well-known types, which a
/// server may leave out (prost-reflect's; a server's own copy of one is not read).
fn reflected_pool(files: &[Vec<u8>]) -> Result<DescriptorPool, ConfigError> {
    // A FileDescriptorSet is its files as field 1, one after the other.
    let mut set = Vec::with_capacity(files.iter().map(|f| f.len() + 8).sum());
    for f in files {
        prost::encoding::bytes::encode(1, f, &mut set);
    }
    let mut pool = DescriptorPool::global();
    pool.decode_file_descriptor_set(set.as_slice())
        .map_err(|e| {
            ConfigError::flag(
                Flag::Reflect,
                format!("the server's descriptors cannot be used: {e}"),
            )
        })?;
    Ok(pool)
}

/// The message as JSON: `--body`, `--body-file`, else `{}` (every field at its default).
fn message_json(a: &RunFlags) -> Result<(Flag, String), ConfigError> {
    if let Some(b) = &a.body {
        return Ok((Flag::Body, b.clone()));
    }
    if let Some(p) = &a.body_file {
        let text = std::fs::read_to_string(p).map_err(|e| ConfigError::File {
            flag: Flag::BodyFile,
            path: p.display().to_string(),
            source: e,
        })?;
        return Ok((Flag::BodyFile, text));
    }
    Ok((Flag::Body, "{}".to_string()))
}

/// The message encoded by its descriptor from protobuf's JSON mapping.
fn encode(
    method: &MethodDescriptor,
    (flag, json): &(Flag, String),
) -> Result<Vec<u8>, ConfigError> {
    let input = method.input();
    let mut de = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(input.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| {
            ConfigError::flag(
                *flag,
                format!("is not a {} in JSON: {e}", input.full_name()),
            )
        })?;
    Ok(message.encode_to_vec())
}

/// A message behind gRPC's prefix: not compressed (0), its length (big-endian u32).
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// `grpc-timeout` for `--timeout`: milliseconds (at most 8 digits: hours beyond them).
fn timeout_value(t: Duration) -> String {
    let ms = t.as_millis().max(1);
    if ms < 100_000_000 {
        format!("{ms}m")
    } else {
        format!("{}H", (t.as_secs() / 3600).clamp(1, 99_999_999))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
  rpc SayHelloStream (HelloRequest) returns (stream HelloReply);
  rpc Chat (stream HelloRequest) returns (stream HelloReply);
}
message HelloRequest { string name = 1; int32 times = 2; }
message HelloReply { string message = 1; }
"#;

    fn pool() -> (tempfile::TempDir, DescriptorPool) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hello.proto");
        std::fs::write(&p, PROTO).unwrap();
        let pool = compile(&p, &[]).unwrap();
        (dir, pool)
    }

    #[test]
    fn a_method_is_found_by_either_spelling_and_its_message_encoded_from_json() {
        let (_dir, pool) = pool();
        for name in [
            "helloworld.Greeter/SayHello",
            "helloworld.Greeter.SayHello",
            "/helloworld.Greeter/SayHello",
        ] {
            assert_eq!(
                find_method(&pool, name, Source::Proto).unwrap().name(),
                "SayHello",
                "{name}"
            );
        }
        let m = find_method(&pool, "helloworld.Greeter/SayHello", Source::Proto).unwrap();
        let bytes = encode(
            &m,
            &(Flag::Body, r#"{"name": "volley", "times": 3}"#.into()),
        )
        .unwrap();
        // Field 1 (string, wire type 2) "volley", field 2 (varint) 3.
        assert_eq!(bytes, [&[0x0a, 6][..], b"volley", &[0x10, 3]].concat());
        assert_eq!(frame(&bytes)[..5], [0, 0, 0, 0, 10]);
    }

    #[test]
    fn wrong_methods_and_messages_are_named() {
        let (_dir, pool) = pool();
        let e = find_method(&pool, "helloworld.Nope/SayHello", Source::Proto)
            .unwrap_err()
            .to_string();
        assert!(e.contains("they define helloworld.Greeter"), "{e}");
        let e = find_method(&pool, "helloworld.Greeter/Nope", Source::Proto)
            .unwrap_err()
            .to_string();
        assert!(e.contains("it has SayHello, SayHelloStream, Chat"), "{e}");
        let m = find_method(&pool, "helloworld.Greeter/SayHelloStream", Source::Proto).unwrap();
        assert!(m.is_server_streaming());
        let e = find_method(&pool, "helloworld.Greeter/Chat", Source::Proto)
            .unwrap_err()
            .to_string();
        assert!(e.contains("streams from the client"), "{e}");
        let m = find_method(&pool, "helloworld.Greeter/SayHello", Source::Proto).unwrap();
        let e = encode(&m, &(Flag::Body, r#"{"nam": 1}"#.into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is not a helloworld.HelloRequest in JSON"),
            "{e}"
        );
    }

    #[test]
    fn the_timeout_goes_in_milliseconds() {
        assert_eq!(timeout_value(Duration::from_secs(2)), "2000m");
        assert_eq!(timeout_value(Duration::from_secs(200_000)), "55H");
    }

    /// `volley run http://127.0.0.1:9/ ARGS` checked.
    fn config(args: &[&str]) -> Result<RunConfig, String> {
        let argv = ["http://127.0.0.1:9/"].iter().chain(args);
        let flags = crate::args_from::<RunFlags, _, _>(argv).unwrap();
        RunConfig::from_flags(&flags, 2).map_err(|e| e.to_string())
    }

    /// What a server sends for `helloworld.Greeter`: each file encoded, the well-known types
    /// left out when `wkt` is false.
    fn served(proto: &str, wkt: bool) -> Vec<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hello.proto"), proto).unwrap();
        let set = protox::compile(["hello.proto"], [dir.path()]).unwrap();
        set.file
            .iter()
            .filter(|f| wkt || !f.name().starts_with("google/protobuf/"))
            .map(|f| f.encode_to_vec())
            .collect()
    }

    #[test]
    fn a_reflect_call_waits_for_the_servers_files_then_is_the_same_as_protos() {
        let json = r#"{"name": "volley", "times": 3}"#;
        let mut cfg = config(&[
            "--grpc",
            "helloworld.Greeter.SayHello",
            "--reflect",
            "--body",
            json,
        ])
        .unwrap();
        let r = cfg.reflect.as_ref().expect("waits for the server");
        assert_eq!(r.service, "helloworld.Greeter");
        assert_eq!(cfg.load.target.path, "/helloworld.Greeter/SayHello");
        assert_eq!(cfg.load.method, "POST");
        cfg.reflected(&served(PROTO, false)).unwrap();
        assert!(cfg.reflect.is_none());
        let (dir, _) = pool();
        let p = dir.path().join("hello.proto").display().to_string();
        let from_proto = config(&[
            "--grpc",
            "helloworld.Greeter/SayHello",
            "--proto",
            &p,
            "--body",
            json,
        ])
        .unwrap();
        assert!(from_proto.reflect.is_none());
        assert_eq!(cfg.load.body, from_proto.load.body);
        assert_eq!(cfg.load.grpc, from_proto.load.grpc);
        assert_eq!(cfg.load.headers, from_proto.load.headers);
    }

    #[test]
    fn reflected_files_may_leave_the_well_known_types_out() {
        let proto =
            "syntax = \"proto3\";\npackage t;\nimport \"google/protobuf/timestamp.proto\";\n\
                     service S { rpc M (R) returns (R); }\n\
                     message R { google.protobuf.Timestamp at = 1; }\n";
        for wkt in [false, true] {
            let mut cfg = config(&[
                "--grpc",
                "t.S/M",
                "--reflect",
                "--body",
                r#"{"at": "1970-01-01T00:00:01Z"}"#,
            ])
            .unwrap();
            cfg.reflected(&served(proto, wkt)).unwrap();
            // Field 1 (a message) holding field 1 (seconds) 1.
            assert_eq!(&cfg.load.body[5..], [0x0a, 2, 0x08, 1], "wkt {wkt}");
        }
    }

    #[test]
    fn what_the_server_sent_is_checked_as_a_proto_is() {
        let run =
            |name: &str| config(&["--grpc", name, "--reflect", "--body", "{\"nam\": 1}"]).unwrap();
        let e = run("helloworld.Nope/SayHello")
            .reflected(&served(PROTO, false))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no service `helloworld.Nope` in the server's descriptors (--reflect) (they define helloworld.Greeter)"), "{e}");
        let e = run("helloworld.Greeter/SayHello")
            .reflected(&served(PROTO, false))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--body: is not a helloworld.HelloRequest in JSON"),
            "{e}"
        );
        let e = run("helloworld.Greeter/SayHello")
            .reflected(&[b"\xff\xff not a descriptor".to_vec()])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--reflect: the server's descriptors cannot be used"),
            "{e}"
        );
        // A file whose import did not come.
        let importing = "syntax = \"proto3\";\npackage a;\nimport \"b.proto\";\n\
                         service S { rpc M (b.R) returns (b.R); }\n";
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.proto"), importing).unwrap();
        std::fs::write(
            dir.path().join("b.proto"),
            "syntax = \"proto3\";\npackage b;\nmessage R {}\n",
        )
        .unwrap();
        let set = protox::compile(["a.proto"], [dir.path()]).unwrap();
        let only_a: Vec<Vec<u8>> = set
            .file
            .iter()
            .filter(|f| f.name() == "a.proto")
            .map(|f| f.encode_to_vec())
            .collect();
        let e = config(&["--grpc", "a.S/M", "--reflect"])
            .unwrap()
            .reflected(&only_a)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the server's descriptors cannot be used") && e.contains("b.proto"),
            "{e}"
        );
    }

    #[test]
    fn reflect_and_a_proto_are_one_or_the_other() {
        let (dir, _) = pool();
        let p = dir.path().join("hello.proto").display().to_string();
        let m = "helloworld.Greeter/SayHello";
        let cases: [(&[&str], &str); 5] = [
            (
                &["--grpc", m, "--reflect", "--proto", &p],
                "--reflect: cannot be combined with --proto",
            ),
            (
                &["--grpc", m, "--reflect", "--import-path", "/tmp"],
                "--reflect: cannot be combined with --import-path",
            ),
            (&["--reflect"], "--reflect: needs --grpc SERVICE/METHOD"),
            (
                &["--grpc", m],
                "--grpc: needs --proto FILE.proto (the service's definition) or --reflect",
            ),
            (
                &["--grpc", "Greeter", "--reflect"],
                "--grpc: `Greeter` is not SERVICE/METHOD",
            ),
        ];
        for (args, says) in cases {
            let e = config(args).unwrap_err();
            assert!(e.contains(says), "{args:?}: {e}");
        }
        let flags = crate::args_from::<RunFlags, _, _>([
            "http://127.0.0.1:9/",
            "--grpc",
            m,
            "--reflect",
            "--proto",
            &p,
        ])
        .unwrap();
        let e = RunConfig::from_flags(&flags, 2).unwrap_err();
        assert_eq!(e.flags(), [Flag::Reflect, Flag::Proto]);
    }
}
