//! `--reflect` (docs/contract.md, "gRPC"): before any load, a gRPC run's service definition is
//! asked of the server itself by gRPC server reflection, as grpcurl and ghz do: `POST
//! /grpc.reflection.v1.ServerReflection/ServerReflectionInfo` (`grpc.reflection.v1alpha` when
//! v1 answers UNIMPLEMENTED), the file that defines the service first, then each file it
//! imports that did not come along. Each round of questions is one stream on a connection of
//! its own, made as `--verify`'s are (TCP or Unix socket, the proxy's tunnel, TLS with the
//! run's settings, h2 or h2c), its questions sent at once and then the stream's end. The files
//! go to config ([`RunConfig::reflected`]), which makes the call from them. Bounded: all of it
//! within `--timeout`, at most [`KEPT_BYTES`] of answers.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use prost::Message;
use volley_config::{ConfigError, RunConfig};
use volley_engine::h2::request as h2_request;
use volley_engine::probe::session::{H2Answer, H2Request};
use volley_engine::Route;
use volley_model::stats::transport::code_name;
use volley_plan::workload::Checks;
use volley_plan::LoadSpec;

use crate::{prepare, MeasureError};

/// The most bytes of answers kept, over all of a run's reflection calls (4 MiB): a server
/// that sends more is refused.
pub const KEPT_BYTES: usize = 4 << 20;

/// Rounds of questions for imports, at most (each asks for every file still missing, so
/// this is the depth of the imports a server does not send along).
const MAX_ROUNDS: usize = 32;

/// The reflection service's method, v1.
const V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";

/// The same in the version before v1, which older servers offer only.
const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

/// gRPC's UNIMPLEMENTED: the server has no such service.
const UNIMPLEMENTED: u16 = 12;

/// Why the server's descriptors could not be had (exit 2: no load was sent).
#[derive(Debug, thiserror::Error)]
pub enum ReflectError {
    /// The server answered, but not as gRPC server reflection does.
    #[error("--reflect: {server} does not offer gRPC server reflection: {why} (give the service's definition with --proto FILE.proto)")]
    NotOffered {
        /// The URL.
        server: String,
        /// What it answered.
        why: String,
    },
    /// The server does not know what it was asked for.
    #[error("--reflect: the server has no {what} ({code} {}: {message})", code_name(*code as u16))]
    NotFound {
        /// The service or the file.
        what: String,
        /// Its error code (gRPC's).
        code: i32,
        /// Its message.
        message: String,
    },
    /// The reflection call ended with an error status other than UNIMPLEMENTED.
    #[error("--reflect: the server refused the reflection call: grpc-status {code} {}{}", code_name(*code), message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Refused {
        /// Its `grpc-status`.
        code: u16,
        /// Its `grpc-message`.
        message: Option<String>,
    },
    /// No answer: the server unreachable, the connection or the stream lost, or no complete
    /// answer within `--timeout`.
    #[error("--reflect: asking {server} for the service's descriptors failed (--timeout {timeout} for all of it): {reason}")]
    Failed {
        /// The URL.
        server: String,
        /// `--timeout`, as a duration.
        timeout: String,
        /// What happened.
        reason: String,
    },
    /// The answers passed [`KEPT_BYTES`].
    #[error("--reflect: the server's answers passed {limit} bytes, the most volley keeps of them (give the service's definition with --proto FILE.proto)")]
    TooBig {
        /// [`KEPT_BYTES`].
        limit: usize,
    },
    /// An answer is not what reflection sends.
    #[error("--reflect: the server's answer cannot be read: {0}")]
    Malformed(String),
    /// The run was about to start with its call still waiting for the server's descriptors.
    #[error("--reflect: the server was not asked for the service's descriptors")]
    NotAsked,
    /// The files came, and the call cannot be made from them (a malformed descriptor, no
    /// such method, a message that is not its input).
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Asks the server along `route` for the descriptors `cfg`'s `--reflect` call waits for, and
/// makes the call from them. Nothing to do without `--reflect`.
pub fn complete(cfg: &mut RunConfig, route: &Route) -> Result<(), ReflectError> {
    let Some(r) = &cfg.reflect else {
        return Ok(());
    };
    let files = Asker::new(route, &cfg.load).files(&r.service)?;
    cfg.reflected(&files)?;
    Ok(())
}

/// [`complete`] along a route of its own (the target resolved, TLS set up; no monitor
/// attached): for what prepares its runs later, or more than once (suite cells, capacity
/// searches).
pub fn complete_alone(cfg: &mut RunConfig) -> Result<(), MeasureError> {
    if cfg.reflect.is_none() {
        return Ok(());
    }
    let here = RunConfig {
        monitor: None,
        ..cfg.clone()
    };
    let prepared = prepare(&here)?;
    complete(cfg, &prepared.route)?;
    Ok(())
}

/// `ServerReflectionRequest`: one question (`host` left empty).
#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    /// The server's name, as the client knows it (unused by servers; empty).
    #[prost(string, tag = "1")]
    host: String,
    /// The question.
    #[prost(oneof = "Ask", tags = "3, 4")]
    ask: Option<Ask>,
}

/// The questions volley asks.
#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    /// `file_by_filename`: the file of that name (and, usually, its imports).
    #[prost(string, tag = "3")]
    FileByFilename(String),
    /// `file_containing_symbol`: the file that defines a service, a message… (and, usually,
    /// its imports).
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
}

/// `ServerReflectionResponse`: one answer (the other kinds, of questions volley does not
/// ask, read as none).
#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    /// The host the server answered for.
    #[prost(string, tag = "1")]
    valid_host: String,
    /// The question.
    #[prost(message, optional, tag = "2")]
    original_request: Option<ReflectionRequest>,
    /// The answer.
    #[prost(oneof = "Answer", tags = "4, 7")]
    answer: Option<Answer>,
}

/// What a question got.
#[derive(Clone, PartialEq, prost::Oneof)]
enum Answer {
    /// `file_descriptor_response`.
    #[prost(message, tag = "4")]
    Files(FileDescriptorResponse),
    /// `error_response`.
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

/// `FileDescriptorResponse`: encoded `FileDescriptorProto`s.
#[derive(Clone, PartialEq, Message)]
struct FileDescriptorResponse {
    /// Each file, encoded.
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

/// `ErrorResponse`.
#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    /// gRPC's status code (5: NOT_FOUND).
    #[prost(int32, tag = "1")]
    error_code: i32,
    /// What the server says.
    #[prost(string, tag = "2")]
    error_message: String,
}

/// What asking needs of a `FileDescriptorProto`: its name and its imports (the rest of it is
/// config's).
#[derive(Clone, PartialEq, Message)]
struct FileHead {
    /// `name`.
    #[prost(string, tag = "1")]
    name: String,
    /// `dependency`: the files it imports.
    #[prost(string, repeated, tag = "3")]
    dependency: Vec<String>,
}

/// What one round of questions got.
enum Asked {
    /// One answer per question, in their order.
    Answers(Vec<Answer>),
    /// The server has no such reflection service (grpc-status 12).
    Unimplemented,
}

/// The files received so far, and the imports they name.
#[derive(Default)]
struct Files {
    /// Each file, encoded, as it came.
    bytes: Vec<Vec<u8>>,
    /// Their names.
    names: BTreeSet<String>,
    /// The files they import.
    imports: BTreeSet<String>,
    /// Well-known types the server does not have (config has its own).
    left: BTreeSet<String>,
}

impl Files {
    /// Adds the files of an answer (those not here already).
    fn add(&mut self, answer: FileDescriptorResponse) -> Result<(), ReflectError> {
        for bytes in answer.file_descriptor_proto {
            let head = FileHead::decode(bytes.as_slice())
                .map_err(|e| ReflectError::Malformed(format!("a file descriptor: {e}")))?;
            if self.names.insert(head.name) {
                self.imports.extend(head.dependency);
                self.bytes.push(bytes);
            }
        }
        Ok(())
    }

    /// The answers to the questions for the files `asked`, in their order: each file, or a
    /// well-known type the server has not (left to config).
    fn add_asked(&mut self, asked: &[String], answers: Vec<Answer>) -> Result<(), ReflectError> {
        for (name, answer) in asked.iter().zip(answers) {
            match answer {
                Answer::Files(f) => self.add(f)?,
                Answer::Error(_) if name.starts_with("google/protobuf/") => {
                    self.left.insert(name.clone());
                }
                Answer::Error(e) => return Err(not_found(format!("file `{name}` (an import)"), e)),
            }
            if !self.names.contains(name) && !self.left.contains(name) {
                return Err(ReflectError::Malformed(format!(
                    "asked for the file `{name}`, it sent others"
                )));
            }
        }
        Ok(())
    }

    /// Imports neither received nor left to config.
    fn missing(&self) -> Vec<String> {
        self.imports
            .iter()
            .filter(|n| !self.names.contains(*n) && !self.left.contains(*n))
            .cloned()
            .collect()
    }
}

/// One run's reflection calls.
struct Asker<'a> {
    route: &'a Route,
    load: &'a LoadSpec,
    /// The reflection method: v1 until it is UNIMPLEMENTED.
    path: &'static str,
    /// `--timeout` after the first question: the end of all of them.
    deadline: Instant,
    /// Answer bytes kept so far.
    kept: usize,
}

impl<'a> Asker<'a> {
    fn new(route: &'a Route, load: &'a LoadSpec) -> Self {
        Asker {
            route,
            load,
            path: V1,
            deadline: Instant::now() + load.timeout,
            kept: 0,
        }
    }

    /// The file that defines `symbol` and every file it imports, as far as the server has
    /// them (a well-known type it has not is left to config).
    fn files(&mut self, symbol: &str) -> Result<Vec<Vec<u8>>, ReflectError> {
        let mut files = Files::default();
        match self.first(symbol)? {
            Answer::Files(f) => files.add(f)?,
            Answer::Error(e) => return Err(not_found(format!("service `{symbol}`"), e)),
        }
        for _ in 0..MAX_ROUNDS {
            let missing = files.missing();
            if missing.is_empty() {
                return Ok(files.bytes);
            }
            let asks = missing.iter().cloned().map(Ask::FileByFilename).collect();
            let Asked::Answers(answers) = self.ask(asks)? else {
                return Err(self.not_offered("UNIMPLEMENTED after it answered"));
            };
            files.add_asked(&missing, answers)?;
        }
        Err(ReflectError::Malformed(format!(
            "imports still missing after {MAX_ROUNDS} rounds of questions"
        )))
    }

    /// The answer to `file_containing_symbol`: by v1, or by v1alpha when v1 is UNIMPLEMENTED.
    fn first(&mut self, symbol: &str) -> Result<Answer, ReflectError> {
        for path in [V1, V1ALPHA] {
            self.path = path;
            let ask = vec![Ask::FileContainingSymbol(symbol.to_string())];
            if let Asked::Answers(mut a) = self.ask(ask)? {
                return Ok(a.remove(0));
            }
        }
        Err(self.not_offered(
            "grpc-status 12 UNIMPLEMENTED for grpc.reflection.v1 and v1alpha".to_string(),
        ))
    }

    /// One round: `asks` on a stream of their own, then its end; the answers in their order.
    fn ask(&mut self, asks: Vec<Ask>) -> Result<Asked, ReflectError> {
        let count = asks.len();
        let timeout = self.deadline.saturating_duration_since(Instant::now());
        if timeout.is_zero() {
            return Err(self.failed("no time left for the imports".into()));
        }
        let mut load = self.load.clone();
        load.target.path = self.path.to_string();
        load.body = questions(asks).into();
        load.timeout = timeout;
        let block = h2_request::for_spec(&load);
        let (mut probe, h2) =
            crate::verify::connect(self.route, &load).map_err(|e| self.failed(e))?;
        if !h2 {
            return Err(self.failed("the connection does not speak HTTP/2".into()));
        }
        let req = H2Request {
            block: &block,
            body: Arc::clone(&load.body),
            head: false,
        };
        let checks = Arc::new(Checks {
            grpc: true,
            ..Checks::default()
        });
        let keep = KEPT_BYTES - self.kept;
        let answer =
            probe
                .exchange_h2(&req, checks, keep, timeout)
                .map_err(|e| match Instant::now() >= self.deadline {
                    true => self.failed("no complete answer in time".into()),
                    false => self.failed(e),
                })?;
        self.kept += answer.recorded.body.len();
        self.read(&answer, count, keep)
    }

    /// The answers of one round's response, `count` of them expected.
    fn read(&self, a: &H2Answer, count: usize, keep: usize) -> Result<Asked, ReflectError> {
        self.is_grpc(a)?;
        let state = a.offered.as_deref();
        match state.and_then(|s| s.grpc_status) {
            Some(0) => {}
            Some(UNIMPLEMENTED) => return Ok(Asked::Unimplemented),
            Some(code) => {
                let message = state
                    .and_then(|s| s.grpc_message.as_deref())
                    .map(|m| String::from_utf8_lossy(m).into_owned());
                return Err(ReflectError::Refused { code, message });
            }
            None => {
                let e = "it ended without a grpc-status".into();
                return Err(ReflectError::Malformed(e));
            }
        }
        if a.body_bytes > keep as u64 {
            return Err(ReflectError::TooBig { limit: KEPT_BYTES });
        }
        let answers = answers(&a.recorded.body)?;
        if answers.len() != count {
            let e = format!("{} answers to {count} questions", answers.len());
            return Err(ReflectError::Malformed(e));
        }
        Ok(Asked::Answers(answers))
    }

    /// Whether the response is gRPC's: 200 and `application/grpc` (a 404 or a 415, another
    /// content-type: no reflection there).
    fn is_grpc(&self, a: &H2Answer) -> Result<(), ReflectError> {
        if a.status != 200 {
            return Err(self.not_offered(format!("it answered HTTP {}", a.status)));
        }
        let content_type = a
            .recorded
            .fields
            .iter()
            .find(|(n, _)| n == "content-type")
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
        if content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/grpc"))
        {
            return Ok(());
        }
        let what = content_type.map_or("no content-type".into(), |c| format!("`{c}`"));
        Err(self.not_offered(format!("its answer has {what}, not gRPC's")))
    }

    fn not_offered(&self, why: impl Into<String>) -> ReflectError {
        ReflectError::NotOffered {
            server: self.load.target.url.clone(),
            why: why.into(),
        }
    }

    fn failed(&self, reason: String) -> ReflectError {
        ReflectError::Failed {
            server: self.load.target.url.clone(),
            timeout: humantime::format_duration(self.load.timeout).to_string(),
            reason,
        }
    }
}

/// The error answer to a question about `what`.
fn not_found(what: String, e: ErrorResponse) -> ReflectError {
    ReflectError::NotFound {
        what,
        code: e.error_code,
        message: e.error_message,
    }
}

/// A request's body: each question a `ServerReflectionRequest` behind gRPC's 5-byte prefix
/// (uncompressed).
fn questions(asks: Vec<Ask>) -> Vec<u8> {
    let mut body = Vec::new();
    for ask in asks {
        let message = ReflectionRequest {
            host: String::new(),
            ask: Some(ask),
        }
        .encode_to_vec();
        body.push(0);
        body.extend_from_slice(&(message.len() as u32).to_be_bytes());
        body.extend_from_slice(&message);
    }
    body
}

/// The answers in a response's body: gRPC messages (5-byte prefix, uncompressed — volley
/// offers no compression) each a `ServerReflectionResponse`.
fn answers(mut body: &[u8]) -> Result<Vec<Answer>, ReflectError> {
    let bad = |m: String| ReflectError::Malformed(m);
    let mut out = Vec::new();
    while !body.is_empty() {
        let Some((prefix, rest)) = body.split_first_chunk::<5>() else {
            return Err(bad("a message cut short".into()));
        };
        if prefix[0] != 0 {
            return Err(bad("a compressed message (volley asks for none)".into()));
        }
        let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        if rest.len() < len {
            return Err(bad("a message cut short".into()));
        }
        let (message, rest) = rest.split_at(len);
        let r = ReflectionResponse::decode(message)
            .map_err(|e| bad(format!("not a ServerReflectionResponse: {e}")))?;
        let answer = r
            .answer
            .ok_or_else(|| bad("an answer that is neither files nor an error".into()))?;
        out.push(answer);
        body = rest;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response message: `answer` behind gRPC's prefix.
    fn framed(answer: Answer) -> Vec<u8> {
        let m = ReflectionResponse {
            valid_host: String::new(),
            original_request: None,
            answer: Some(answer),
        }
        .encode_to_vec();
        [&[0][..], &(m.len() as u32).to_be_bytes(), &m].concat()
    }

    fn file(name: &str, imports: &[&str]) -> Vec<u8> {
        FileHead {
            name: name.into(),
            dependency: imports.iter().map(|s| s.to_string()).collect(),
        }
        .encode_to_vec()
    }

    #[test]
    fn a_question_is_encoded_as_servers_read_it() {
        let q = ReflectionRequest {
            host: String::new(),
            ask: Some(Ask::FileContainingSymbol("a.S".into())),
        };
        // Field 4 (a string) "a.S".
        assert_eq!(q.encode_to_vec(), [0x22, 3, b'a', b'.', b'S']);
        let q = ReflectionRequest {
            host: String::new(),
            ask: Some(Ask::FileByFilename("b.proto".into())),
        };
        assert_eq!(q.encode_to_vec()[..2], [0x1a, 7]);
    }

    #[test]
    fn answers_are_read_in_their_order_and_their_files_walked_for_imports() {
        let body = [
            framed(Answer::Files(FileDescriptorResponse {
                file_descriptor_proto: vec![
                    file("a.proto", &["b.proto", "google/protobuf/empty.proto"]),
                    file("a.proto", &[]),
                ],
            })),
            framed(Answer::Error(ErrorResponse {
                error_code: 5,
                error_message: "not found".into(),
            })),
        ]
        .concat();
        let mut a = answers(&body).unwrap();
        assert_eq!(a.len(), 2);
        let Answer::Error(e) = a.remove(1) else {
            panic!("an error second")
        };
        let e = not_found("service `x.Y`".into(), e).to_string();
        assert_eq!(
            e,
            "--reflect: the server has no service `x.Y` (5 NOT_FOUND: not found)"
        );
        let Answer::Files(f) = a.remove(0) else {
            panic!("files first")
        };
        let mut files = Files::default();
        files.add(f).unwrap();
        assert_eq!(files.bytes.len(), 1, "a file sent twice is kept once");
        assert_eq!(files.missing(), ["b.proto", "google/protobuf/empty.proto"]);
        files.left.insert("google/protobuf/empty.proto".into());
        files
            .add(FileDescriptorResponse {
                file_descriptor_proto: vec![file("b.proto", &["a.proto"])],
            })
            .unwrap();
        assert!(files.missing().is_empty());
    }

    #[test]
    fn an_import_asked_for_is_a_file_a_missing_well_known_type_or_an_error() {
        let mut files = Files::default();
        let asked = [
            "b.proto".to_string(),
            "google/protobuf/empty.proto".to_string(),
        ];
        let missing = || {
            Answer::Error(ErrorResponse {
                error_code: 5,
                error_message: "not found".into(),
            })
        };
        let b = FileDescriptorResponse {
            file_descriptor_proto: vec![file("b.proto", &[])],
        };
        files
            .add_asked(&asked, vec![Answer::Files(b.clone()), missing()])
            .unwrap();
        assert!(files.left.contains("google/protobuf/empty.proto"));
        let e = Files::default()
            .add_asked(&asked[..1], vec![missing()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no file `b.proto` (an import)"), "{e}");
        let other = FileDescriptorResponse {
            file_descriptor_proto: vec![file("c.proto", &[])],
        };
        let e = Files::default()
            .add_asked(&asked[..1], vec![Answer::Files(other)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("asked for the file `b.proto`, it sent others"),
            "{e}"
        );
        // The request of two questions: two prefixed messages.
        let body = questions(vec![
            Ask::FileByFilename("b.proto".into()),
            Ask::FileContainingSymbol("a.S".into()),
        ]);
        assert_eq!(body[..5], [0, 0, 0, 0, 9]);
        assert_eq!(body.len(), 5 + 9 + 5 + 5);
    }

    #[test]
    fn what_is_not_a_reflection_answer_is_named() {
        let one = framed(Answer::Files(FileDescriptorResponse::default()));
        let cases: [(&[u8], &str); 4] = [
            (&one[..one.len() - 1], "a message cut short"),
            (&[1, 0, 0, 0, 0], "a compressed message"),
            (
                &[0, 0, 0, 0, 2, 0xff, 0xff],
                "not a ServerReflectionResponse",
            ),
            // Field 6 (list_services_response), a kind volley does not ask for.
            (&[0, 0, 0, 0, 2, 0x32, 0], "neither files nor an error"),
        ];
        for (body, says) in cases {
            let e = answers(body).unwrap_err().to_string();
            assert!(e.contains(says), "{body:?}: {e}");
        }
        let e = Files::default()
            .add(FileDescriptorResponse {
                file_descriptor_proto: vec![vec![0xff]],
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("a file descriptor"), "{e}");
    }
}
