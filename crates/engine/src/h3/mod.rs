//! HTTP/3 (RFC 9114) for the engine, sans-IO like [`crate::h2`], being built: QUIC
//! variable-length integers ([`varint`]), frames ([`frame`]), QPACK with the static table
//! only ([`qpack`], [`static_table`], [`huffman`]), and a request stream's response
//! ([`response`]); errors carry the RFCs' codes ([`error`]).

pub mod error;
pub mod frame;
pub mod huffman;
pub mod qpack;
pub mod response;
pub mod static_table;
pub mod varint;

pub use error::{Code, H3Error};
