//! The request's field section, encoded once per run as HTTP/2's header block is
//! ([`crate::h2::request`], whose choice of fields this shares): QPACK with static references
//! and literals only ([`super::qpack::encode_request`]), so the same bytes are valid on every
//! stream of every connection. A request stream carries it in a HEADERS frame
//! ([`super::frame::headers`]), then the body in DATA frames.

use volley_plan::workload::Context;
use volley_plan::{LoadSpec, MixRequest};

use super::qpack::encode_request;
use crate::h2::request::{mix_with, spec_with};

/// The field section of the run's request: the fields of its HTTP/2 header block.
pub fn for_spec(spec: &LoadSpec) -> Vec<u8> {
    spec_with(spec, encode_request)
}

/// The frames of every request of the run, built once and shared by every stream: HEADERS
/// with [`for_spec`]'s field section and, for a body, one DATA frame.
pub fn frames_for_spec(spec: &LoadSpec) -> Vec<u8> {
    let section = for_spec(spec);
    let body = &spec.body[..];
    let mut out = Vec::with_capacity(section.len() + body.len() + 16);
    super::frame::headers(&section, &mut out);
    if !body.is_empty() {
        super::frame::data(body, &mut out);
    }
    out
}

/// The field section of one workload request for `ctx`, as [`crate::h2::request::for_mix`]
/// chooses its fields.
pub fn for_mix(r: &MixRequest, ctx: &Context, https: bool, body_len: usize) -> Vec<u8> {
    mix_with(r, ctx, https, body_len, encode_request)
}

/// The frames of one workload request for `ctx` with its rendered `body`: HEADERS with
/// [`for_mix`]'s field section and, for a body, one DATA frame.
pub fn frames_for_mix(r: &MixRequest, ctx: &Context, body: &[u8]) -> bytes::Bytes {
    let section = for_mix(r, ctx, true, body.len());
    let mut out = Vec::with_capacity(section.len() + body.len() + 16);
    super::frame::headers(&section, &mut out);
    if !body.is_empty() {
        super::frame::data(body, &mut out);
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use volley_plan::Target;

    /// The fields of a QPACK field section.
    fn qpack_fields(section: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        super::super::qpack::decode(section, 1 << 20, |n, v| {
            out.push((n.to_vec(), v.to_vec()));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn the_run_request_has_the_fields_of_its_http2_header_block() {
        let target = Target::http("127.0.0.1:8080".parse().unwrap(), "/a?b=1");
        let mut spec = LoadSpec::closed_loop(target, 1, Duration::from_secs(1));
        spec.method = "POST".into();
        let mut h2 = Vec::new();
        loona_hpack::Decoder::new()
            .decode_with_cb(&crate::h2::request::for_spec(&spec), |n, v| {
                h2.push((n.into_owned(), v.into_owned()))
            })
            .unwrap();
        let h3 = qpack_fields(&for_spec(&spec));
        assert_eq!(h3, h2);
        assert_eq!(h3[0], (b":method".to_vec(), b"POST".to_vec()));
        assert_eq!(h3[3], (b":path".to_vec(), b"/a?b=1".to_vec()));
    }
}
