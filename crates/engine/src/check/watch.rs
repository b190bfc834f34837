//! A stream's header and body checks while its response arrives, for the multiplexed
//! protocols (HTTP/2's and HTTP/3's sessions): the fields of its final head, its body only as
//! far as the checks need, and what `--verify` shows of a lone request's response.

use std::sync::Arc;

use super::{CheckState, Watch};
use crate::response::ResponseObserver;
use volley_plan::workload::Checks;

/// A stream's header and body checks while its response arrives: the fields of its final
/// head, and its body only as far as the checks need (bounded like HTTP/1.1's,
/// [`crate::check`]).
#[derive(Debug)]
pub(crate) struct StreamWatch {
    pub(crate) checks: Arc<Checks>,
    pub(crate) state: CheckState,
    /// What a lone request shows of its response (`--verify`), when it is kept.
    pub(crate) record: Option<Recorded>,
}

/// The head's fields and the body's first bytes of a response, as `--verify` shows them
/// (`H2Conn::open_stream_recorded`, `H2Conn::take_recorded`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The final head's fields (not the pseudo-headers), as sent.
    pub fields: Vec<(String, Vec<u8>)>,
    /// The body's first bytes, at most the number asked for.
    pub body: Vec<u8>,
    /// The trailers' fields, as sent (a gRPC call's `grpc-status`, `grpc-message` and
    /// metadata).
    pub trailers: Vec<(String, Vec<u8>)>,
    pub(crate) keep: usize,
}

impl StreamWatch {
    /// A watch when `checks` read headers or the body (status and size need none).
    pub(crate) fn of(checks: Option<Arc<Checks>>) -> Option<Box<StreamWatch>> {
        let checks = checks.filter(|c| c.needs_headers() || c.needs_body())?;
        let mut state = CheckState::default();
        state.reset(&checks);
        Some(Box::new(StreamWatch {
            checks,
            state,
            record: None,
        }))
    }

    /// A watch that also records the head's fields and `keep` body bytes (`--verify`).
    pub(crate) fn recording(checks: Arc<Checks>, keep: usize) -> Box<StreamWatch> {
        let mut state = CheckState::default();
        state.reset(&checks);
        Box::new(StreamWatch {
            checks,
            state,
            record: Some(Recorded {
                keep,
                ..Recorded::default()
            }),
        })
    }

    /// Whether the fields of the head are read.
    pub(crate) fn reads_fields(&self) -> bool {
        self.checks.needs_headers() || self.record.is_some()
    }

    /// The final head's field `name: value`.
    pub(crate) fn field(&mut self, name: &str, value: &[u8]) {
        self.watch().header(name, value);
        if let Some(r) = self.record.as_mut() {
            r.fields.push((name.to_string(), value.to_vec()));
        }
    }

    /// A trailer field: read for a gRPC call's `grpc-status` and `grpc-message` only (header
    /// checks and captures read the head's fields).
    pub(crate) fn trailer(&mut self, name: &str, value: &[u8]) {
        self.watch().grpc_field(name, value);
        if let Some(r) = self.record.as_mut() {
            r.trailers.push((name.to_string(), value.to_vec()));
        }
    }

    /// Body bytes.
    pub(crate) fn body(&mut self, bytes: &[u8]) {
        if self.checks.needs_body() {
            self.watch().body(bytes);
        }
        if let Some(r) = self.record.as_mut() {
            let room = r.keep.saturating_sub(r.body.len());
            r.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    /// The response ended whole: the header and body checks it failed (`check::FAILED_*`
    /// bits), what it offers a journey's captures and cookie jar (`None`: the request
    /// captures nothing), and what `--verify` kept of it.
    pub(crate) fn finish(self) -> (u8, Option<Box<CheckState>>, Option<Recorded>) {
        let failed = self.state.content_failures(&self.checks);
        // A gRPC call's state goes too: its grpc-status is counted by code.
        let journey = !self.checks.captures.is_empty() || self.checks.set_cookies;
        let offered = (journey || self.checks.grpc).then(|| Box::new(self.state));
        (failed, offered, self.record)
    }

    fn watch(&mut self) -> Watch<'_> {
        Watch {
            state: &mut self.state,
            checks: &self.checks,
        }
    }
}
