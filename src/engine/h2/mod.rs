//! HTTP/2 for the engine, sans-IO like the rest of it: frames ([`frame`]), the request header
//! block encoded once per run ([`request`]). The connection state machine and the worker's
//! use of it come with `--http2`/`--h2c` (docs/contract.md will say so then).

pub mod conn;
pub mod frame;
pub mod request;
