//! `--grpc SERVICE/METHOD --proto FILE` (docs/contract.md, "gRPC"): the method found in the
//! `.proto` (compiled in-process by protox, no protoc), the message encoded once from `--body`
//! JSON by its descriptor (prost-reflect), and the HTTP/2 request a unary call is: `POST
//! /pkg.Service/Method`, `content-type: application/grpc`, `te: trailers`, `grpc-timeout` from
//! `--timeout`, the message behind gRPC's 5-byte prefix; a requests file's calls are encoded
//! per request of the file ([`Calls::entry`], `template`). With `--reflect` the descriptors are
//! the server's: the call waits for them ([`Reflect`], [`RunConfig::reflected`]), which the
//! layer that talks to the server asks for (volley-measure's `reflect`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};

use super::request::Request;
use super::{ConfigError, Flag, RunConfig, RunFlags};
use volley_plan::workload::{Body, ReplyDecoder, Template};
use volley_plan::{GrpcSpec, HttpVersion, Scheme, Target};

mod template;

/// The gRPC of a run: the compiled `.proto` files, the method `--grpc` names, and the fields
/// every call carries. A requests file's calls are encoded from it ([`Calls::entry`]).
#[derive(Debug)]
pub(crate) struct Calls {
    pool: DescriptorPool,
    /// `--grpc`: the run's method, and the default of a requests file's calls.
    default: Option<MethodDescriptor>,
    /// `--reflect`: `--grpc`'s service and method, whose definition the server sends later.
    pending: Option<(String, String)>,
    /// `content-type`, `te` and `grpc-timeout`.
    headers: Vec<(String, String)>,
}

/// What `--grpc` makes of the run's request (without `--requests-file`).
pub(super) struct GrpcCall {
    /// The method, its path and its settings.
    pub spec: GrpcSpec,
    /// The framed message.
    pub body: Vec<u8>,
}

/// The run's gRPC, or `None` without `--grpc` and `--proto` (where `--import-path` and
/// `--reflect` are errors). `--proto` alone goes with a requests file whose calls name their
/// methods; `--reflect` leaves the definition to the server (see [`pending`]).
pub(super) fn calls(a: &RunFlags, scheme: Scheme) -> Result<Option<Calls>, ConfigError> {
    if a.grpc.is_none() && a.proto.is_none() {
        return without_grpc(a).map(|()| None);
    }
    let proto = definition(a)?;
    if a.grpc.is_none() && a.requests_file.is_none() {
        return Err(ConfigError::flag(
            Flag::Proto,
            "needs --grpc SERVICE/METHOD (or a --requests-file whose requests name theirs: grpc = \"SERVICE/METHOD\")",
        ));
    }
    conflicts(a, scheme)?;
    let headers = vec![
        ("content-type".to_string(), "application/grpc".to_string()),
        ("te".to_string(), "trailers".to_string()),
        ("grpc-timeout".to_string(), timeout_value(a.timeout)),
    ];
    let Some(proto) = proto else {
        if a.requests_file.is_some() {
            return Err(ConfigError::conflict(
                Flag::Reflect,
                &[Flag::RequestsFile],
                "cannot be combined with --requests-file: a file's calls are encoded when it is \
                 read, before the server is asked (give its --proto)"
                    .to_string(),
            ));
        }
        let name = a
            .grpc
            .as_deref()
            .expect("--reflect without --grpc is refused above");
        let (service, method) = split_name(name).map_err(|m| ConfigError::flag(Flag::Grpc, m))?;
        return Ok(Some(Calls {
            pool: DescriptorPool::new(),
            default: None,
            pending: Some((service.to_string(), method.to_string())),
            headers,
        }));
    };
    let pool = compile(proto, &a.import_path)?;
    let default = match a.grpc.as_deref() {
        Some(name) => Some(
            find_method(&pool, name, Source::Proto)
                .map_err(|m| ConfigError::flag(Flag::Grpc, m))?,
        ),
        None => None,
    };
    Ok(Some(Calls {
        pool,
        default,
        pending: None,
        headers,
    }))
}

impl Calls {
    /// The run's one call: `--grpc`'s method with the `--body` message (`None` for a requests
    /// file, whose calls are its own).
    pub(super) fn call(&self, a: &RunFlags) -> Result<Option<GrpcCall>, ConfigError> {
        if let Some((service, method)) = &self.pending {
            // Its message comes with the server's descriptors ([`RunConfig::reflected`]).
            return Ok(Some(GrpcCall {
                spec: spec_for(service, method, 0),
                body: frame(&[]),
            }));
        }
        let Some(method) = self.default.as_ref().filter(|_| a.requests_file.is_none()) else {
            return Ok(None);
        };
        let json = message_json(a)?;
        let message = encode(method, &json)?;
        Ok(Some(GrpcCall {
            spec: spec_of(method, message.len() as u64),
            body: frame(&message),
        }))
    }

    /// Makes the run's request a call: gRPC's fields before the user's (metadata); with
    /// `call`, `POST` to its method's path (the URL must name the server only) and its message.
    pub(super) fn apply(
        &self,
        call: Option<&GrpcCall>,
        target: &mut Target,
        req: &mut Request,
    ) -> Result<(), ConfigError> {
        if target.path != "/" {
            let what = call.map_or("the requests file's", |c| c.spec.path.as_str());
            return Err(ConfigError::conflict(
                Flag::Grpc,
                &[Flag::Url],
                format!(
                    "the URL names the server only (its path is {}): the method is the path ({what})",
                    target.path
                ),
            ));
        }
        req.headers.splice(0..0, self.headers.iter().cloned());
        if let Some(call) = call {
            req.method = "POST".to_string();
            target.path = call.spec.path.clone();
            req.body = call.body.clone().into();
        }
        Ok(())
    }

    /// A requests file's call: `name` (its `grpc` key, else `--grpc`'s) and its body template
    /// (JSON; `{}` without one). Returns the method's `pkg.Service/Method` and the body.
    pub(crate) fn entry(
        &self,
        name: Option<&str>,
        body: Option<&Template>,
    ) -> Result<(String, Body, ReplyDecoder), EntryError> {
        let method = match name {
            Some(n) => find_method(&self.pool, n, Source::Proto).map_err(EntryError::Method)?,
            None => self.default.clone().ok_or(EntryError::NoMethod)?,
        };
        let full = format!("{}/{}", method.parent_service().full_name(), method.name());
        let input = method.input();
        let literal = body.map_or(Some(b"{}".to_vec()), Template::literal_bytes);
        let body = match literal {
            Some(json) => {
                let json = String::from_utf8(json)
                    .map_err(|_| EntryError::Body("is not UTF-8 text (JSON is)".into()))?;
                let message = encode_json(&input, &json).map_err(EntryError::Body)?;
                Body::Bytes(frame(&message).into())
            }
            None => {
                let tpl = body.expect("a template when not literal");
                Body::Template(Template {
                    parts: template::encode(&input, tpl).map_err(EntryError::Body)?,
                })
            }
        };
        Ok((full, body, decoder(method.output())))
    }

    /// How `--grpc`'s replies become JSON for `--expect-json` (`None` without `--grpc`).
    pub(super) fn reply_decoder(&self) -> Option<ReplyDecoder> {
        self.default.as_ref().map(|m| decoder(m.output()))
    }
}

/// A reply's first message (after gRPC's prefix) decoded by `output`, as protobuf's JSON
/// mapping writes it (lowerCamelCase names, 64-bit integers as strings).
fn decoder(output: MessageDescriptor) -> ReplyDecoder {
    ReplyDecoder(std::sync::Arc::new(move |body: &[u8]| {
        let [flag, a, b, c, d, rest @ ..] = body else {
            return Err("no gRPC message in the reply".to_string());
        };
        if *flag != 0 {
            return Err("a compressed reply (volley asks for none)".to_string());
        }
        let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
        let message = rest.get(..len).ok_or_else(|| {
            format!("a reply of {len} bytes, past the first 64 KiB that checks read")
        })?;
        let m = DynamicMessage::decode(output.clone(), message)
            .map_err(|e| format!("not a {}: {e}", output.full_name()))?;
        serde_json::to_value(&m).map_err(|e| e.to_string())
    }))
}

/// Why a requests file's call cannot be made.
#[derive(Debug)]
pub(crate) enum EntryError {
    /// Its `grpc` names no method of the files (why).
    Method(String),
    /// No `grpc` key and no `--grpc`.
    NoMethod,
    /// Its body is not the method's input in JSON (why).
    Body(String),
}

/// The gRPC settings of a run of `method`.
fn spec_of(method: &MethodDescriptor, message_bytes: u64) -> GrpcSpec {
    spec_for(
        method.parent_service().full_name(),
        method.name(),
        message_bytes,
    )
}

/// The gRPC settings of a run of `service`'s `method`.
fn spec_for(service: &str, method: &str, message_bytes: u64) -> GrpcSpec {
    let path = format!("/{service}/{method}");
    GrpcSpec {
        method: path.trim_start_matches('/').to_string(),
        path,
        message_bytes,
    }
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

/// `--reflect`'s call, waiting for the server's descriptors; `None` without it.
pub(super) fn pending(a: &RunFlags) -> Result<Option<Reflect>, ConfigError> {
    let Some(name) = a.grpc.as_deref().filter(|_| a.reflect) else {
        return Ok(None);
    };
    let (service, _) = split_name(name).map_err(|m| ConfigError::flag(Flag::Grpc, m))?;
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
        let method = find_method(&pool, &r.name, Source::Reflect)
            .map_err(|m| ConfigError::flag(Flag::Grpc, m))?;
        let message = encode(&method, &r.json)?;
        if let Some(g) = self.load.grpc.as_mut() {
            g.message_bytes = message.len() as u64;
        }
        self.load.body = frame(&message).into();
        self.load.checks.reply = Some(decoder(method.output()));
        self.reflect = None;
        Ok(())
    }
}

/// `--import-path` or `--reflect` without `--grpc` or `--proto`.
fn without_grpc(a: &RunFlags) -> Result<(), ConfigError> {
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

/// A requests file's gRPC settings: its methods (`a/B, c/D` when several) and the first
/// call's message length (0 when templated: its length varies).
pub(crate) fn file_spec(w: &volley_plan::workload::Workload) -> GrpcSpec {
    let mut methods: Vec<String> = Vec::new();
    for e in &w.entries {
        let Some(path) = e.path.literal_bytes() else {
            continue;
        };
        let m = String::from_utf8_lossy(&path)
            .trim_start_matches('/')
            .to_string();
        if !methods.contains(&m) {
            methods.push(m);
        }
    }
    let message_bytes = match w.entries.first().map(|e| &e.body) {
        Some(Body::Bytes(b)) => b.len().saturating_sub(5) as u64,
        _ => 0,
    };
    GrpcSpec {
        method: methods.join(", "),
        path: String::new(),
        message_bytes,
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
fn split_name(name: &str) -> Result<(&str, &str), String> {
    name.trim_start_matches('/')
        .rsplit_once(['/', '.'])
        .filter(|(s, m)| !s.is_empty() && !m.is_empty())
        .ok_or_else(|| format!("`{name}` is not SERVICE/METHOD (e.g. helloworld.Greeter/SayHello)"))
}

/// `pkg.Service/Method` (or ghz's `pkg.Service.Method`) in the files of `pool`.
fn find_method(
    pool: &DescriptorPool,
    name: &str,
    from: Source,
) -> Result<MethodDescriptor, String> {
    let bad = |m: String| m;
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
    encode_json(&method.input(), json).map_err(|m| ConfigError::flag(*flag, m))
}

/// `json` as `input` encodes it, or why it is not one.
fn encode_json(input: &MessageDescriptor, json: &str) -> Result<Vec<u8>, String> {
    let mut de = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(input.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| format!("is not a {} in JSON: {e}", input.full_name()))?;
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
