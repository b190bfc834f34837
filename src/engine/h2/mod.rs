//! HTTP/2 for the engine, sans-IO like the rest of it: frames ([`frame`]), the request header
//! block encoded once per run ([`request`]), and one connection's state machine ([`conn`]:
//! bytes in, events out, frames to send collected in `H2Conn::out`).
//!
//! Not wired to the workers yet (`--http2`/`--h2c`/`--streams` come with that). The plan,
//! so the HTTP/1.1 hot path stays as it is:
//! - a `Conn` gets an optional `H2Conn`, created when the connection opens (h2c: after the
//!   TCP connect; https: when ALPN chose `h2`, which `engine::tls` offers then);
//! - capacity: `--streams` takes the place of `--pipeline` in the free-list test, capped by
//!   `H2Conn::can_open` (the server's SETTINGS_MAX_CONCURRENT_STREAMS, GOAWAY);
//! - writing: from `H2Conn::out` instead of the repeated template; a request's `stream_pos` is
//!   the byte count queued before its HEADERS, so `mark_written` and the lag keep working;
//! - reading: `H2Conn::feed` instead of the HTTP/1.1 parser; `Head` keeps the status on the
//!   in-flight entry of that stream, `End` completes it (out of order), `Reset` ends it as a
//!   `protocol` error, `GoAway` sends the streams above its last id again on a new
//!   connection and closes this one when the rest are done.
//! - open-loop requests that wait for a free stream are late like any other (their lag
//!   origin is when a stream became free).

pub mod conn;
pub mod frame;
pub mod request;
