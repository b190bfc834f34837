//! One request in HTTP/2 on a blocking connection (the readiness check of an h2 or h2c
//! suite cell): the client connection preface, an empty SETTINGS frame and one `GET path`
//! (HEADERS with END_STREAM on stream 1), then the frames the server sends until the HEADERS
//! that answer it, whose `:status` is the answer. The server's SETTINGS are acknowledged; other frames are read past. A server whose
//! first bytes are not a SETTINGS frame (the server's connection preface) does not speak
//! HTTP/2 on the port — an HTTP/1.x status line, an HTTP/0.9 body — and is told apart, so the
//! cell can fail at once saying so (docs/contract.md, "Suites").

use std::io::{Read, Write};

use crate::h2::frame::flags::{ACK, END_HEADERS, END_STREAM, PADDED, PRIORITY};
use crate::h2::frame::{self, Header, Kind, DEFAULT_MAX_FRAME, HEADER_LEN, PREFACE};

/// The stream of the readiness request.
const STREAM: u32 = 1;

/// The most frames read before giving up on an answer (a server sends a handful).
const MAX_FRAMES: usize = 64;

/// Why an HTTP/2 request got no status.
#[derive(Debug)]
pub enum H2ProbeError {
    /// The server's first bytes are not HTTP/2 (what they say: an HTTP/1.x status line, the
    /// start of a body): it does not speak HTTP/2 there.
    NotHttp2(String),
    /// Anything else (refused, closed, a GOAWAY, a reset, not HTTP at all).
    Io(std::io::Error),
}

impl From<std::io::Error> for H2ProbeError {
    fn from(e: std::io::Error) -> Self {
        H2ProbeError::Io(e)
    }
}

/// One frame: its header and payload.
struct Frame {
    head: Header,
    payload: Vec<u8>,
}

/// Sends `GET path` in HTTP/2 on `s` (a fresh connection; `scheme` and `authority` are the
/// pseudo-headers) and reads the `:status` of the answer.
pub fn request_status<S: Read + Write>(
    s: &mut S,
    scheme: &str,
    authority: &str,
    path: &str,
) -> Result<u16, H2ProbeError> {
    let block = loona_hpack::Encoder::new().encode([
        (&b":method"[..], &b"GET"[..]),
        (b":scheme", scheme.as_bytes()),
        (b":path", path.as_bytes()),
        (b":authority", authority.as_bytes()),
        (b"user-agent", b"volley-ready"),
    ]);
    let mut out = PREFACE.to_vec();
    frame::settings(&mut out, &[]);
    frame::write(
        &mut out,
        Kind::Headers,
        END_STREAM | END_HEADERS,
        STREAM,
        &block,
    );
    s.write_all(&out)?;
    s.flush()?;
    let block = response_headers(s)?;
    status_of(&block).map_err(H2ProbeError::Io)
}

/// Reads frames until the header block of the answer on [`STREAM`] is complete (HEADERS and
/// its CONTINUATIONs), acknowledging the server's SETTINGS on the way.
fn response_headers<S: Read + Write>(s: &mut S) -> Result<Vec<u8>, H2ProbeError> {
    let mut block: Option<Vec<u8>> = None;
    for i in 0..MAX_FRAMES {
        let f = read_frame(s, i == 0)?;
        match (f.head.kind, f.head.stream) {
            (Kind::Settings, 0) if !f.head.has(ACK) => {
                let mut ack = Vec::new();
                frame::write(&mut ack, Kind::Settings, ACK, 0, &[]);
                s.write_all(&ack)?;
                s.flush()?;
            }
            (Kind::GoAway, 0) => return Err(goaway(&f.payload).into()),
            (Kind::RstStream, STREAM) => return Err(other("the server reset the request").into()),
            (Kind::Headers, STREAM) if block.is_none() => {
                block = Some(headers_fragment(&f)?.to_vec())
            }
            (Kind::Continuation, STREAM) if block.is_some() => {
                block.get_or_insert_default().extend_from_slice(&f.payload)
            }
            (Kind::Data, STREAM) if block.is_none() => {
                return Err(other("DATA before the response's HEADERS").into())
            }
            _ => {}
        }
        let header_block_frame = matches!(f.head.kind, Kind::Headers | Kind::Continuation);
        if block.is_some() && header_block_frame && f.head.has(END_HEADERS) {
            return Ok(block.unwrap_or_default());
        }
    }
    Err(other(&format!("no response HEADERS in {MAX_FRAMES} frames")).into())
}

/// Reads one frame; the first of a connection must be the server's SETTINGS (its connection
/// preface, RFC 9113, 3.4) or a GOAWAY, else the server answered with TLS or not in HTTP/2.
fn read_frame<S: Read>(s: &mut S, first: bool) -> Result<Frame, H2ProbeError> {
    let mut head = [0u8; HEADER_LEN];
    read_full(s, &mut head, first)?;
    if first && matches!(head[0], 0x15 | 0x16) && head[1] == 0x03 {
        return Err(
            other("the server answered with TLS (set protocol = \"h2\" in the scenario)").into(),
        );
    }
    let h = Header::parse(&head);
    // A GOAWAY first is an HTTP/2 server refusing the connection: said as such later.
    let preface = h.kind == Kind::Settings && !h.has(ACK) || h.kind == Kind::GoAway;
    if first && (!preface || head[5..9] != [0; 4]) {
        return Err(H2ProbeError::NotHttp2(first_line(s, &head)));
    }
    let len = h.len as usize;
    if len > DEFAULT_MAX_FRAME as usize {
        return Err(other(&format!("a frame of {len} bytes: not HTTP/2")).into());
    }
    let mut payload = vec![0u8; len];
    read_full(s, &mut payload, false)?;
    Ok(Frame { head: h, payload })
}

/// Fills `buf`; an end of the connection before any byte of the first frame is said as such.
fn read_full<S: Read>(s: &mut S, buf: &mut [u8], first: bool) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..])? {
            0 if first && got == 0 => return Err(other("closed without an HTTP/2 response")),
            0 => return Err(other("closed in the middle of an HTTP/2 frame")),
            n => got += n,
        }
    }
    Ok(())
}

/// The first line (at most 60 characters, escaped) of an answer that began with `head`.
fn first_line<S: Read>(s: &mut S, head: &[u8]) -> String {
    let mut line = head.to_vec();
    let mut b = [0u8; 1];
    while !line.contains(&b'\n') && line.len() < 200 && matches!(s.read(&mut b), Ok(1)) {
        line.push(b[0]);
    }
    let text = String::from_utf8_lossy(&line);
    let first = text.lines().next().unwrap_or("");
    first
        .chars()
        .take(60)
        .flat_map(char::escape_default)
        .collect()
}

/// The header block fragment of a HEADERS frame, without its padding and priority fields.
fn headers_fragment(f: &Frame) -> std::io::Result<&[u8]> {
    let p = &f.payload;
    let (start, pad) = if f.head.has(PADDED) {
        (1, usize::from(*p.first().unwrap_or(&0)))
    } else {
        (0, 0)
    };
    let start = start + if f.head.has(PRIORITY) { 5 } else { 0 };
    p.get(start..p.len().saturating_sub(pad))
        .ok_or_else(|| other("a HEADERS frame shorter than its padding"))
}

/// The `:status` of a response header block.
fn status_of(block: &[u8]) -> std::io::Result<u16> {
    let headers = loona_hpack::Decoder::new()
        .decode(block)
        .map_err(|e| other(&format!("undecodable response headers (HPACK: {e})")))?;
    headers
        .iter()
        .find(|(name, _)| name == b":status")
        .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse().ok())
        .ok_or_else(|| other("a response without :status"))
}

/// What a GOAWAY frame's payload says.
fn goaway(payload: &[u8]) -> std::io::Error {
    let code = payload
        .get(4..8)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    match code {
        Some(c) => other(&format!("the server sent GOAWAY (error code {c:#x})")),
        None => other("the server sent GOAWAY"),
    }
}

/// An error with `message`.
fn other(message: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A connection whose reads come from `input` and whose writes are kept.
    struct Duplex {
        input: Cursor<Vec<u8>>,
        written: Vec<u8>,
    }

    impl Read for Duplex {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Duplex {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn duplex(input: Vec<u8>) -> Duplex {
        Duplex {
            input: Cursor::new(input),
            written: Vec::new(),
        }
    }

    /// The server side of a readiness exchange: SETTINGS, then the answer's header block
    /// split over HEADERS (padded) and a CONTINUATION.
    fn answer(status: &[u8]) -> Vec<u8> {
        let block = loona_hpack::Encoder::new()
            .encode([(&b":status"[..], status), (b"content-length", b"1")]);
        let (a, b) = block.split_at(2);
        let mut out = Vec::new();
        frame::write(&mut out, Kind::Settings, 0, 0, &[0, 3, 0, 0, 0, 100]);
        let mut padded = vec![3u8];
        padded.extend_from_slice(a);
        padded.extend_from_slice(&[0, 0, 0]);
        frame::write(&mut out, Kind::Headers, PADDED, STREAM, &padded);
        frame::write(&mut out, Kind::Continuation, END_HEADERS, STREAM, b);
        frame::write(&mut out, Kind::Data, END_STREAM, STREAM, b".");
        out
    }

    #[test]
    fn the_status_comes_from_the_answers_headers() {
        let mut s = duplex(answer(b"204"));
        let code = request_status(&mut s, "http", "127.0.0.1:1", "/ready").unwrap();
        assert_eq!(code, 204);
        assert!(s.written.starts_with(PREFACE));
        // Preface, SETTINGS, HEADERS, then the SETTINGS ACK.
        assert!(s.written.ends_with(&[0, 0, 0, 0x4, ACK, 0, 0, 0, 0]));
        let headers_at = PREFACE.len() + 9;
        assert_eq!(s.written[headers_at + 3], 0x1, "HEADERS");
        assert_eq!(s.written[headers_at + 4], END_STREAM | END_HEADERS);
        let code = request_status(&mut duplex(answer(b"503")), "http", "a", "/").unwrap();
        assert_eq!(code, 503);
    }

    #[test]
    fn an_http1_answer_a_goaway_and_a_close_are_named() {
        let mut s = duplex(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec());
        match request_status(&mut s, "http", "a", "/") {
            Err(H2ProbeError::NotHttp2(line)) => assert_eq!(line, "HTTP/1.1 400 Bad Request"),
            other => panic!("{other:?}"),
        }
        let mut goaway = Vec::new();
        frame::write(&mut goaway, Kind::GoAway, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 1]);
        match request_status(&mut duplex(goaway), "http", "a", "/") {
            Err(H2ProbeError::Io(e)) => assert!(e.to_string().contains("GOAWAY (error code 0x1)")),
            other => panic!("{other:?}"),
        }
        // An HTTP/0.9 answer (Python's http.server to `PRI * HTTP/2.0`): a body, no status.
        let mut s = duplex(b"<!DOCTYPE HTML>\n<html>".to_vec());
        match request_status(&mut s, "http", "a", "/") {
            Err(H2ProbeError::NotHttp2(line)) => assert_eq!(line, "<!DOCTYPE HTML>"),
            other => panic!("{other:?}"),
        }
        match request_status(&mut duplex(Vec::new()), "http", "a", "/") {
            Err(H2ProbeError::Io(e)) => assert!(e.to_string().contains("closed without")),
            other => panic!("{other:?}"),
        }
        match request_status(
            &mut duplex(vec![0x16, 0x03, 0x03, 0, 2, 2, 0, 0, 0]),
            "http",
            "a",
            "/",
        ) {
            Err(H2ProbeError::Io(e)) => assert!(e.to_string().contains("protocol = \"h2\"")),
            other => panic!("{other:?}"),
        }
    }
}
