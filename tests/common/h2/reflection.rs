//! The gRPC test server's server reflection ([`Reflection`]): `ServerReflectionInfo` streams
//! of `grpc.reflection.v1` and `v1alpha` told apart from calls by their path, each question
//! (a gRPC message in the request's body) answered with one `ServerReflectionResponse`, the
//! stream then ended with `grpc-status` 0; calls answered as `Behaviour::Grpc` answers them.
//! Reflection streams are not counted as requests.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::{frame, grpc_answer, kind::*, literal, Peer, STATUS_200};

/// How a gRPC test server answers server reflection (docs/contract.md, "gRPC").
#[derive(Debug, Clone, Copy)]
pub enum Reflection {
    /// v1 answers: a question that names `service` gets the first of `files` (name, encoded
    /// `FileDescriptorProto`) alone, without its imports; a question that names a file gets
    /// that file; any other NOT_FOUND.
    Offered { service: &'static str, files: Files },
    /// As `Offered`, but v1 is UNIMPLEMENTED: v1alpha answers.
    AlphaOnly { service: &'static str, files: Files },
    /// No reflection: both versions UNIMPLEMENTED.
    Unimplemented,
    /// 5 MiB of answers, then the trailers.
    Huge,
    /// A head and an answer, and the stream never ends.
    Endless,
}

/// The files a server with reflection has: each name and the file encoded.
pub type Files = &'static [(&'static str, &'static [u8])];

/// A stream's request so far: whether it is reflection's (and which version), its body.
#[derive(Default)]
struct Asked {
    reflection: Option<bool>,
    body: Vec<u8>,
}

impl Peer {
    /// Answers calls as `Behaviour::Grpc { fail_every: 0 }` does, and reflection as `r` says.
    pub(super) fn reflection(&mut self, r: Reflection) {
        self.write(&super::settings(&[]));
        let mut asked: HashMap<u32, Asked> = HashMap::new();
        while self.fill() {
            while let Some(f) = self.take_frame() {
                let Some(f) = self.common(f) else { continue };
                let a = asked.entry(f.stream).or_default();
                match f.kind {
                    HEADERS if contains(&f.payload, b"ServerReflection/") => {
                        a.reflection = Some(contains(&f.payload, b"reflection.v1alpha."));
                    }
                    DATA => a.body.extend_from_slice(&f.payload),
                    _ => {}
                }
                self.track(&f, true);
            }
            let mut out = Vec::new();
            for s in std::mem::take(&mut self.done) {
                let a = asked.remove(&s).unwrap_or_default();
                match a.reflection {
                    Some(alpha) => out.extend(answer(r, s, alpha, &a.body)),
                    None => {
                        self.ctx.requests.fetch_add(1, Ordering::SeqCst);
                        out.extend(grpc_answer(s, None, true));
                    }
                }
            }
            if !out.is_empty() && !self.write(&out) {
                return;
            }
        }
    }
}

/// The answer on stream `s` to the questions in `body` (v1alpha's when `alpha`).
fn answer(r: Reflection, s: u32, alpha: bool, body: &[u8]) -> Vec<u8> {
    let (service, files) = match r {
        Reflection::Offered { service, files } => (service, files),
        Reflection::AlphaOnly { service, files } if alpha => (service, files),
        Reflection::AlphaOnly { .. } | Reflection::Unimplemented => {
            let mut head = vec![STATUS_200];
            head.extend(literal(b"content-type", b"application/grpc"));
            head.extend(literal(b"grpc-status", b"12"));
            head.extend(literal(b"grpc-message", b"unknown service"));
            return frame(HEADERS, END_HEADERS | END_STREAM, s, &head);
        }
        Reflection::Huge | Reflection::Endless => ("", &[][..]),
    };
    let mut head = vec![STATUS_200];
    head.extend(literal(b"content-type", b"application/grpc"));
    let mut out = frame(HEADERS, END_HEADERS, s, &head);
    let messages: Vec<Vec<u8>> = match r {
        // 5 MiB in answers of 16 000 bytes (more than the 4 MiB volley keeps).
        Reflection::Huge => vec![files_answer(&[0; 16_000]); 330],
        Reflection::Endless => vec![files_answer(&[])],
        _ => questions(body)
            .into_iter()
            .map(|q| {
                let named = files.iter().find(|(name, _)| contains(q, name.as_bytes()));
                match named {
                    _ if contains(q, service.as_bytes()) => files_answer(files[0].1),
                    Some((_, file)) => files_answer(file),
                    None => error_answer(5, "not found"),
                }
            })
            .collect(),
    };
    for m in messages {
        out.extend(frame(DATA, 0, s, &m));
    }
    if matches!(r, Reflection::Endless) {
        return out;
    }
    out.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        s,
        &literal(b"grpc-status", b"0"),
    ));
    out
}

/// The gRPC messages of a request's body.
fn questions(mut body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while body.len() >= 5 {
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        let end = (5 + len).min(body.len());
        out.push(&body[5..end]);
        body = &body[end..];
    }
    out
}

/// A `ServerReflectionResponse` holding `file` (field 4, `file_descriptor_response`, whose
/// field 1 is the file), behind gRPC's prefix.
fn files_answer(file: &[u8]) -> Vec<u8> {
    grpc_message(&field(4, &field(1, file)))
}

/// A `ServerReflectionResponse` holding an `error_response` (field 7: code, message).
fn error_answer(code: u8, message: &str) -> Vec<u8> {
    let mut e = vec![0x08, code];
    e.extend(field(2, message.as_bytes()));
    grpc_message(&field(7, &e))
}

/// A length-delimited protobuf field.
fn field(tag: u32, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, &mut out);
    prost::encoding::encode_varint(value.len() as u64, &mut out);
    out.extend_from_slice(value);
    out
}

/// `m` behind gRPC's 5-byte prefix.
fn grpc_message(m: &[u8]) -> Vec<u8> {
    [&[0][..], &(m.len() as u32).to_be_bytes(), m].concat()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
