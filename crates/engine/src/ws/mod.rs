//! WebSocket (RFC 6455) sans-IO: the HTTP/1.1 upgrade ([`handshake`]) and the frames
//! ([`frame`]); over HTTP/2 (RFC 8441) the WebSocket is a stream of the session instead
//! (`h2::conn`'s tunnel, opened by `h2::request::connect_block`). The worker's side of `ws://`
//! and `wss://` is `worker/ws.rs` (`worker/ws_h2.rs` for the tunnel): each request of the run
//! is one message, its response the server's next message (an echo); docs/contract.md,
//! "WebSocket", says what is counted.

pub mod frame;
pub mod handshake;

use std::sync::Arc;

use volley_plan::{LoadSpec, WsSpec};

/// The longest message volley reads from a server unless its own are longer: 16 MiB, as
/// common servers' default read limits (a longer one fails the connection at its header).
pub const MIN_MESSAGE_LIMIT: u64 = 16 << 20;

/// What every connection of a `ws://` or `wss://` run shares.
#[derive(Debug)]
pub struct WsRun {
    /// The upgrade request up to its key ([`handshake::request_head`]).
    pub upgrade_head: Vec<u8>,
    /// Over HTTP/2: the extended CONNECT's header block
    /// ([`crate::h2::request::connect_block`]).
    pub connect_block: Vec<u8>,
    /// Each message's payload (the run's body).
    pub message: Arc<[u8]>,
    /// [`frame::OP_TEXT`] or [`frame::OP_BINARY`].
    pub opcode: u8,
    /// The longest message read from the server.
    pub limit: u64,
}

impl WsRun {
    /// The run's upgrade and message.
    pub fn new(spec: &LoadSpec, ws: WsSpec) -> WsRun {
        let t = &spec.target;
        WsRun {
            upgrade_head: handshake::request_head(&t.path, &t.host_header, &spec.headers),
            connect_block: crate::h2::request::connect_block(
                t.scheme.http().as_str(),
                &t.host_header,
                &t.path,
                &spec.headers,
            ),
            message: Arc::clone(&spec.body),
            opcode: if ws.binary {
                frame::OP_BINARY
            } else {
                frame::OP_TEXT
            },
            limit: MIN_MESSAGE_LIMIT.max(longest_message(spec)),
        }
    }
}

/// The longest message the run sends: its body, or the longest body of its requests file
/// (an echo of it must be read).
fn longest_message(spec: &LoadSpec) -> u64 {
    let entries = spec.workload.as_deref().map_or(&[][..], |w| &w.entries[..]);
    entries
        .iter()
        .map(|e| match &e.body {
            volley_plan::workload::Body::Bytes(b) => b.len() as u64,
            _ => 0,
        })
        .fold(spec.body.len() as u64, u64::max)
}

/// One WebSocket connection: its upgrade, then its frames.
#[derive(Debug)]
pub struct WsConn {
    /// The answer to the upgrade as far as it arrived (emptied once upgraded).
    pub head: Vec<u8>,
    /// The `Sec-WebSocket-Accept` the answer must carry.
    pub accept: String,
    /// The server's frames.
    pub reader: frame::Reader,
    /// A close frame was written: nothing else goes.
    pub close_sent: bool,
    /// The latest ping's payload, while the writes it would wait behind are backed up.
    pub pending_pong: Option<Vec<u8>>,
    /// Over HTTP/2: where its tunnel is (`Http1` on an upgraded HTTP/1.1 connection).
    pub tunnel: Tunnel,
}

/// Where a WebSocket over HTTP/2 (RFC 8441) is on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tunnel {
    /// Not a tunnel: the connection was upgraded from HTTP/1.1.
    Http1,
    /// The session waits for the server's SETTINGS (SETTINGS_ENABLE_CONNECT_PROTOCOL).
    Settings,
    /// The extended CONNECT went at this time (run-clock ns); its answer is awaited.
    Asked {
        /// When it was queued.
        at_ns: u64,
    },
    /// The server answered 2xx: the stream carries the WebSocket.
    Open,
}

impl WsConn {
    /// A connection whose upgrade asked for `accept`, reading messages of at most `limit`.
    pub fn new(accept: String, limit: u64) -> WsConn {
        WsConn {
            head: Vec::new(),
            accept,
            reader: frame::Reader::new(limit),
            close_sent: false,
            pending_pong: None,
            tunnel: Tunnel::Http1,
        }
    }

    /// A WebSocket over HTTP/2 on a fresh session, reading messages of at most `limit`.
    pub fn tunnel(limit: u64) -> WsConn {
        WsConn {
            tunnel: Tunnel::Settings,
            ..WsConn::new(String::new(), limit)
        }
    }
}

/// A small, fast generator for the upgrade's keys and the frames' masks (RFC 6455 §5.3 asks
/// for masks a proxy cannot predict, not for cryptographic ones): xorshift64*.
#[derive(Debug, Clone)]
pub struct MaskRng(u64);

impl MaskRng {
    /// A generator seeded with `seed` (0 is replaced: xorshift would stay at 0).
    pub fn new(seed: u64) -> MaskRng {
        MaskRng(seed | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A frame's masking key.
    pub fn mask(&mut self) -> [u8; 4] {
        (self.next_u64() as u32).to_ne_bytes()
    }

    /// An upgrade's `Sec-WebSocket-Key` nonce (16 bytes).
    pub fn nonce(&mut self) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&self.next_u64().to_ne_bytes());
        k[8..].copy_from_slice(&self.next_u64().to_ne_bytes());
        k
    }
}
