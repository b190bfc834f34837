//! HTTP/3 (RFC 9114) for the engine, sans-IO like [`crate::h2`]: the bytes of QUIC streams
//! in, events out, no QUIC here. QUIC variable-length integers ([`varint`]), frames
//! ([`frame`]), QPACK with the static table only ([`qpack`], [`static_table`], [`huffman`]:
//! the client announces a dynamic table of capacity 0, so a request's field section is
//! encoded once and valid on every stream, [`request`]), a request stream's response
//! ([`response`]) and the server's control and QPACK streams ([`control`]). Errors carry the
//! RFCs' codes ([`error`]). Nothing user-facing yet (docs/contract.md will say what HTTP/3
//! runs count when a QUIC driver uses this).

pub mod control;
pub mod error;
pub mod frame;
pub mod huffman;
pub mod qpack;
pub mod request;
pub mod response;
pub mod session;
pub mod static_table;
pub mod varint;

pub use error::{Code, H3Error};
