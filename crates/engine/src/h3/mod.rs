//! HTTP/3 (RFC 9114) for the engine, sans-IO like [`crate::h2`], being built: so far QUIC
//! variable-length integers ([`varint`]), the RFCs' error codes ([`error`]), and QPACK
//! with the static table only ([`qpack`], [`static_table`], [`huffman`]).

pub mod error;
pub mod huffman;
pub mod qpack;
pub mod static_table;
pub mod varint;

pub use error::{Code, H3Error};
