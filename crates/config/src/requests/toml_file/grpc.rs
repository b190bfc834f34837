//! A `[[request]]` of a gRPC run (`--grpc` or `--proto` with `--requests-file`; docs/contract.md,
//! "gRPC"): a call of its `grpc = "pkg.Service/Method"` (else `--grpc`'s), its message the
//! `body` JSON (templated) or the JSON of `body_file`, encoded once by the method's input
//! descriptor. The method is the path and the call a POST: `path`, `url`, `method` and
//! `body_size` are refused.

use super::*;
use crate::grpc::EntryError;
use volley_plan::workload::ReplyDecoder;

/// Keys a call cannot have, and why.
const NOT_IN_A_CALL: &[(&str, &str)] = &[
    ("path", "a call's path is its method (`grpc`)"),
    (
        "url",
        "a call's path is its method (`grpc`); the URL names the server",
    ),
    ("method", "a call is a POST"),
    (
        "body_size",
        "a call's message is JSON: `body` or `body_file`",
    ),
];

impl Requests<'_, '_> {
    /// The request's call in a gRPC run: its method's `pkg.Service/Method` and its framed
    /// message; `None` outside a gRPC run, where a `grpc` key is an error.
    pub(super) fn grpc_call(
        &mut self,
        t: &DeTable,
        tv: &Val,
        at: &str,
        hash: &mut Sha256,
    ) -> Result<Option<(String, Body, ReplyDecoder)>, RequestsError> {
        let r = self.r;
        let Some(calls) = self.run.grpc else {
            if let Some(v) = t.get("grpc") {
                return Err(r.at(
                    v,
                    at,
                    "grpc",
                    "needs --proto FILE.proto on the command line (or `proto` in a suite), which defines the method".into(),
                ));
            }
            return Ok(None);
        };
        for (key, why) in NOT_IN_A_CALL {
            if let Some(v) = t.get(*key) {
                return Err(r.at(v, at, key, format!("not in a gRPC run: {why}")));
            }
        }
        let name = match t.get("grpc") {
            Some(v) => Some((r.str(v, at, "grpc")?, v)),
            None => None,
        };
        let (body, body_at) = match (t.get("body"), t.get("body_file")) {
            (Some(_), Some(f)) => {
                return Err(r.at(
                    f,
                    at,
                    "body_file",
                    "cannot be combined with `body` (one message per call)".into(),
                ))
            }
            (Some(v), None) => (
                Some(self.template(v, r.str(v, at, "body")?, at, "body")?),
                Some(("body", v)),
            ),
            (None, Some(v)) => {
                let bytes = r
                    .src
                    .read(r.str(v, at, "body_file")?, hash)
                    .map_err(|m| r.at(v, at, "body_file", m))?;
                (
                    Some(Template::literal(bytes.to_vec())),
                    Some(("body_file", v)),
                )
            }
            (None, None) => (None, None),
        };
        calls
            .entry(name.map(|(n, _)| n), body.as_ref())
            .map(Some)
            .map_err(|e| match e {
                EntryError::Method(m) => {
                    let v = name.expect("a method error names one").1;
                    r.at(v, at, "grpc", m)
                }
                EntryError::NoMethod => r.src.err(
                    tv.span().start,
                    Some("grpc"),
                    format!("{at}: missing `grpc = \"pkg.Service/Method\"` (there is no --grpc for it to default to)"),
                ),
                EntryError::Body(m) => {
                    let (key, v) = body_at.expect("a body error has a body");
                    r.at(v, at, key, m)
                }
            })
    }
}
