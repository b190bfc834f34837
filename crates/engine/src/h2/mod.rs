//! HTTP/2 for the engine, sans-IO like the rest of it: frames ([`frame`]), the request header
//! block encoded once per run ([`request`]), the responses' blocks decoded ([`hpack`]), and one connection's state machine ([`conn`]:
//! bytes in, events out, frames to send collected in `H2Conn::out`). The worker drives it in
//! `worker/h2.rs`: streams take the place of the pipeline window, a request's `stream_pos` is
//! the byte count queued before its HEADERS (so `mark_written` and the lag work as on
//! HTTP/1.1), and events complete, fail or resend requests (docs/contract.md, "HTTP/2").

pub mod conn;
pub mod frame;
pub mod hpack;
pub mod request;
